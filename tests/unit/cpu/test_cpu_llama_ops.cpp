// Properties of the Llama-family CPU ops (backend.h "Llama-family ops": RMSNorm, its residual
// fusion, RoPE, SwiGLU; grouped-query attention) beyond what the op-case table
// (test_op_cases.cpp) checks against the reference: RMSNorm at C = 1 and accumulated twice,
// each fused op giving the bits of the unfused op, RoPE leaving V alone and its backward
// undoing the forward, saturated SwiGLU gates, GQA saving the probabilities and being the MHA
// kernel on repeated heads, refused shapes, and every result bitwise the same run to run and
// for 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backend/backend.h"
#include "core/error.h"
#include "cpu/reference_ops.h"

namespace {

using ref::Vec;
constexpr double kTol = 1e-5;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

class CpuLlamaOps : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override { be = trt::make_cpu_backend(GetParam()); }
    std::string tag(const std::string& op) const {
        return op + " (threads=" + std::to_string(GetParam()) + ")";
    }
    std::unique_ptr<trt::Backend> be;
};

// ‖got − (pre + want)‖ / ‖want‖: the accumulated result, judged against the increment.
double accum_error(const std::vector<float>& got, const std::vector<float>& pre, const Vec& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); i++) {
        if (std::isnan(got[i])) return INFINITY;
        const double e = (double)pre[i] + want[i];
        num += (got[i] - e) * (got[i] - e);
        den += want[i] * want[i];
    }
    return std::sqrt(num / den);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// HF Llama rope tables as the model builds them (fp32 values of the double angles).
void float_tables(int max_pos, int hs, std::vector<float>& cs, std::vector<float>& sn) {
    Vec c, s;
    ref::rope_tables(max_pos, hs, 10000.0, c, s);
    cs.assign(c.begin(), c.end());
    sn.assign(s.begin(), s.end());
}

TEST_P(CpuLlamaOps, RmsNorm) {
    for (auto [N, C] : {std::pair{1, 1}, std::pair{14, 12}, std::pair{33, 385},
                        std::pair{19, 600}}) {
        for (float eps : {1e-5f, 1e-6f}) {
            const std::string shape = " N" + std::to_string(N) + " C" + std::to_string(C) +
                                      " eps" + (eps == 1e-5f ? "1e-5" : "1e-6");
            auto x = ref::random_floats(N * C, 1401, -2, 3),
                 w = ref::random_floats(C, 1402, 0.5f, 1.5f);
            std::vector<float> out(N * C, kNaN), rstd(N, kNaN);
            be->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, eps);
            Vec rrstd;
            Vec want = ref::rmsnorm_forward(ref::to_double(x), ref::to_double(w), N, C, eps,
                                            &rrstd);
            const double ef = std::max(ref::rel_error(out, want), ref::rel_error(rstd, rrstd));
            EXPECT_LE(ef, kTol) << shape;

            // Both gradients accumulate: pre-filled with random values.
            auto dout = ref::random_floats(N * C, 1403);
            auto dx = ref::random_floats(N * C, 1404), dw = ref::random_floats(C, 1405);
            const auto dx0 = dx, dw0 = dw;
            be->rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(),
                                 rstd.data(), N, C);
            Vec rdx, rdw;
            ref::rmsnorm_backward(ref::to_double(dout), ref::to_double(x), ref::to_double(w), N,
                                  C, eps, rdx, rdw);
            // C = 1: dinp = dout·w·rstd·(1 − xhat²) with xhat² = x²/(x² + eps) ≈ 1, an
            // ill-conditioned difference in fp32 (as layernorm at C = 1); only dw is judged.
            const double edx = accum_error(dx, dx0, rdx), edw = accum_error(dw, dw0, rdw);
            const double eb = C > 1 ? std::max(edx, edw) : edw;
            ref::report(tag("rmsnorm fwd" + shape), ef);
            ref::report(tag("rmsnorm bwd (all +=)" + shape), eb);
            EXPECT_LE(eb, kTol) << shape;

            // A second call adds the same increment again (grad accumulation).
            auto dx2 = dx, dw2 = dw;
            be->rmsnorm_backward(dx2.data(), dw2.data(), dout.data(), x.data(), w.data(),
                                 rstd.data(), N, C);
            Vec rdx2(rdx.size()), rdw2(rdw.size());
            for (size_t i = 0; i < rdx.size(); i++) rdx2[i] = 2 * rdx[i];
            for (size_t i = 0; i < rdw.size(); i++) rdw2[i] = 2 * rdw[i];
            EXPECT_LE(accum_error(dw2, dw0, rdw2), kTol) << shape;
            if (C > 1) EXPECT_LE(accum_error(dx2, dx0, rdx2), kTol) << shape;
        }
    }
}

TEST_P(CpuLlamaOps, ResidualRmsNorm) {
    for (auto [N, C] : {std::pair{1, 1}, std::pair{13, 12}, std::pair{37, 385}}) {
        const float eps = 1e-5f;
        auto a = ref::random_floats(N * C, 1501, -2, 2), b = ref::random_floats(N * C, 1502),
             w = ref::random_floats(C, 1503, 0.5f, 1.5f);
        std::vector<float> res(N * C, kNaN), out(N * C, kNaN), rstd(N, kNaN);
        be->residual_rmsnorm_forward(res.data(), out.data(), rstd.data(), a.data(), b.data(),
                                     w.data(), N, C, eps);
        Vec rres(N * C);
        for (int i = 0; i < N * C; i++) {
            EXPECT_EQ(res[i], a[i] + b[i]);  // one float add
            rres[i] = (double)a[i] + b[i];
        }
        Vec rrstd;
        Vec want = ref::rmsnorm_forward(rres, ref::to_double(w), N, C, eps, &rrstd);
        const double ef = std::max(ref::rel_error(out, want), ref::rel_error(rstd, rrstd));
        const std::string shape = " N" + std::to_string(N) + " C" + std::to_string(C);
        ref::report(tag("residual+rmsnorm" + shape), ef);
        EXPECT_LE(ef, kTol) << shape;

        // Same bits as one IEEE addition per element, then rmsnorm_forward.
        std::vector<float> res2(N * C), out2(N * C), rstd2(N);
        for (size_t i = 0; i < res2.size(); i++) res2[i] = a[i] + b[i];
        be->rmsnorm_forward(out2.data(), rstd2.data(), res2.data(), w.data(), N, C, eps);
        EXPECT_TRUE(same_bits(res, res2)) << shape;
        EXPECT_TRUE(same_bits(out, out2)) << shape;
        EXPECT_TRUE(same_bits(rstd, rstd2)) << shape;
    }
}

// The fused q/k norm (cpu_rmsnorm.cpp) gives the bits of its composed default
// (backend_composed.h: copy, rmsnorm_forward, x - x + y), which the bf16/fp16 modes and every
// backend without the fusion run; V stays untouched.
TEST_P(CpuLlamaOps, QkNormFusedGivesTheComposedBits) {
    struct S {
        int N, NH, NKV, hs;
    };
    for (S s : {S{1, 1, 1, 4}, S{7, 4, 2, 8}, S{33, 8, 1, 64}, S{65, 16, 4, 128}}) {
        const int W = (s.NH + 2 * s.NKV) * s.hs;
        const size_t rows = (size_t)s.N * (s.NH + s.NKV);
        const auto qkv = ref::random_floats((size_t)s.N * W, 1601, -2, 3);
        const auto wq = ref::random_floats(s.hs, 1602, 0.5f, 1.5f),
                   wk = ref::random_floats(s.hs, 1603, 0.5f, 1.5f);
        const auto shape = trt::AttentionShape::from_heads(1, s.N, s.NH, s.NKV, s.hs);
        std::vector<float> fused = qkv, composed = qkv, pre(rows * s.hs, kNaN), pre2 = pre,
                           rstd(rows, kNaN), rstd2 = rstd, scratch(rows * s.hs, kNaN);
        be->qk_norm_forward(fused.data(), pre.data(), rstd.data(), wq.data(), wk.data(),
                            scratch.data(), 1e-6f, shape);
        be->trt::Backend::qk_norm_forward(composed.data(), pre2.data(), rstd2.data(), wq.data(),
                                          wk.data(), scratch.data(), 1e-6f, shape);
        const std::string sh = " N" + std::to_string(s.N) + " NH" + std::to_string(s.NH);
        EXPECT_TRUE(same_bits(fused, composed)) << sh;
        EXPECT_TRUE(same_bits(pre, pre2)) << sh;
        EXPECT_TRUE(same_bits(rstd, rstd2)) << sh;
        for (int n = 0; n < s.N; n++)  // V
            for (int c = (s.NH + s.NKV) * s.hs; c < W; c++)
                ASSERT_EQ(fused[(size_t)n * W + c], qkv[(size_t)n * W + c]) << sh;
    }
}

struct RopeCase {
    int B, T, NH, NKV, hs, pos0;
};

TEST_P(CpuLlamaOps, Rope) {
    for (auto c : {RopeCase{2, 7, 4, 4, 8, 0}, RopeCase{2, 7, 4, 2, 6, 3},
                   RopeCase{1, 5, 6, 1, 10, 11}, RopeCase{3, 33, 8, 2, 2, 0},
                   RopeCase{1, 70, 2, 1, 34, 1000}}) {
        const int B = c.B, T = c.T, NH = c.NH, NKV = c.NKV, hs = c.hs, pos0 = c.pos0;
        const int W = (NH + 2 * NKV) * hs, max_pos = pos0 + T + 3;
        const std::string shape = " B" + std::to_string(B) + " T" + std::to_string(T) + " NH" +
                                  std::to_string(NH) + " NKV" + std::to_string(NKV) + " hs" +
                                  std::to_string(hs) + " pos0 " + std::to_string(pos0);
        std::vector<float> cs, sn;
        float_tables(max_pos, hs, cs, sn);
        const Vec rcs = ref::to_double(cs), rsn = ref::to_double(sn);

        const auto x0 = ref::random_floats((size_t)B * T * W, 1601, -2, 2);
        auto x = x0;
        be->rope_forward(x.data(), cs.data(), sn.data(), pos0,
                         trt::AttentionShape::from_heads(B, T, NH, NKV, hs));
        const Vec want =
            ref::rope_forward(ref::to_double(x0), rcs, rsn, B, T, NH, NKV, hs, pos0);
        const double ef = ref::rel_error(x, want);
        EXPECT_LE(ef, kTol) << shape;

        const auto d0 = ref::random_floats((size_t)B * T * W, 1602);
        auto d = d0;
        be->rope_backward(d.data(), cs.data(), sn.data(), pos0,
                          trt::AttentionShape::from_heads(B, T, NH, NKV, hs));
        const Vec rd = ref::rope_backward(ref::to_double(d0), rcs, rsn, B, T, NH, NKV, hs, pos0);
        const double eb = ref::rel_error(d, rd);
        ref::report(tag("rope fwd" + shape), ef);
        ref::report(tag("rope bwd" + shape), eb);
        EXPECT_LE(eb, kTol) << shape;

        // The V heads are not touched, forward or backward.
        for (int n = 0; n < B * T; n++)
            for (int col = (NH + NKV) * hs; col < W; col++) {
                EXPECT_EQ(x[(size_t)n * W + col], x0[(size_t)n * W + col]);
                EXPECT_EQ(d[(size_t)n * W + col], d0[(size_t)n * W + col]);
            }
        // The backward undoes the forward (a rotation): x0 back up to rounding.
        be->rope_backward(x.data(), cs.data(), sn.data(), pos0,
                          trt::AttentionShape::from_heads(B, T, NH, NKV, hs));
        EXPECT_LE(ref::rel_error(x, ref::to_double(x0)), kTol) << shape;
    }
}

TEST_P(CpuLlamaOps, RopeRejectsOddHeadSize) {
    std::vector<float> qkv(3 * 5, 1.0f), cs(10, 1.0f), sn(10, 0.0f);
    try {
        be->rope_forward(qkv.data(), cs.data(), sn.data(), 0,
                         trt::AttentionShape::from_heads(1, 1, 1, 1, 5));
        ADD_FAILURE() << "hs = 5 accepted";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::Internal);
    }
}

TEST_P(CpuLlamaOps, SwigluExtremeGates) {
    // Gates far outside fast_expf's clamp: finite, and silu ≈ 0 (very negative) or x (large).
    const int F = 6;
    std::vector<float> x = {-1e4f, -200.f, -88.f, 88.f, 200.f, 1e4f, 1, 1, 1, 1, 1, 1};
    std::vector<float> out(F), dx(2 * F), dout(F, 1.0f);
    be->swiglu_forward(out.data(), x.data(), 1, F);
    be->swiglu_backward(dx.data(), x.data(), dout.data(), 1, F);
    for (int j = 0; j < F; j++) {
        const double want = ref::silu(x[j]), dwant = ref::silu_grad(x[j]);
        EXPECT_TRUE(std::isfinite(out[j]) && std::isfinite(dx[j]) && std::isfinite(dx[F + j]))
            << x[j];
        EXPECT_NEAR(out[j], want, 1e-6 * std::max(1.0, std::fabs(want))) << x[j];
        EXPECT_NEAR(dx[j], dwant, 1e-6) << x[j];
    }
}

struct GqaCase {
    int B, T, NH, NKV, hs;
};

TEST_P(CpuLlamaOps, GroupedQueryAttention) {
    for (auto c : {GqaCase{2, 7, 4, 4, 3}, GqaCase{2, 7, 4, 2, 3}, GqaCase{2, 7, 4, 1, 3},
                   GqaCase{1, 1, 2, 1, 4}, GqaCase{3, 45, 6, 3, 5}, GqaCase{2, 65, 6, 2, 8},
                   GqaCase{1, 130, 8, 1, 7}, GqaCase{1, 130, 8, 4, 7}}) {
        const int B = c.B, T = c.T, NH = c.NH, NKV = c.NKV, hs = c.hs, C = NH * hs;
        const int W = C + 2 * NKV * hs;
        const std::string shape = " B" + std::to_string(B) + " T" + std::to_string(T) + " NH" +
                                  std::to_string(NH) + " NKV" + std::to_string(NKV) + " hs" +
                                  std::to_string(hs);
        auto qkv = ref::random_floats((size_t)B * T * W, 1801, -2, 2);
        std::vector<float> out((size_t)B * T * C, kNaN);
        std::vector<float> saved(
            be->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)), kNaN);
        be->attention_forward(out.data(), saved.data(), qkv.data(),
                              trt::AttentionShape::from_width(B, T, C, NH, NKV));
        Vec lse;
        const Vec want = ref::attention_forward(ref::to_double(qkv), B, T, C, NH, NKV, nullptr,
                                                nullptr, 0, &lse);
        const double ef = ref::rel_error(out, want);
        EXPECT_LE(ef, kTol) << shape;
        // The backward's state is each row's max and 1/sum [B,NH,T,2] (no T×T matrix): the
        // row's log-sum-exp, max - log(1/sum).
        ASSERT_EQ(saved.size(), 2 * lse.size()) << shape;
        std::vector<float> got_lse(lse.size());
        for (size_t r = 0; r < lse.size(); r++)
            got_lse[r] = saved[2 * r] - std::log(saved[2 * r + 1]);
        EXPECT_LE(ref::rel_error(got_lse, lse), kTol) << shape;

        auto dout = ref::random_floats((size_t)B * T * C, 1802);
        std::vector<float> dqkv(qkv.size(), kNaN);  // overwritten: NaN must not survive
        std::vector<float> scratch(
            be->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)), kNaN);
        be->attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), saved.data(),
                               trt::AttentionShape::from_width(B, T, C, NH, NKV));
        const Vec rd =
            ref::attention_backward(ref::to_double(dout), ref::to_double(qkv), B, T, C, NH, NKV);
        const double eb = ref::rel_error(dqkv, rd);
        ref::report(tag("gqa attention fwd" + shape), ef);
        ref::report(tag("gqa attention bwd" + shape), eb);
        EXPECT_LE(eb, kTol) << shape;

        // Bitwise run to run, fresh NaN buffers.
        std::vector<float> out2(out.size(), kNaN), saved2(saved.size(), kNaN),
            dqkv2(dqkv.size(), kNaN), scratch2(scratch.size(), kNaN);
        be->attention_forward(out2.data(), saved2.data(), qkv.data(),
                              trt::AttentionShape::from_width(B, T, C, NH, NKV));
        be->attention_backward(dqkv2.data(), scratch2.data(), dout.data(), qkv.data(),
                               saved2.data(), trt::AttentionShape::from_width(B, T, C, NH, NKV));
        EXPECT_TRUE(same_bits(out, out2)) << shape;
        EXPECT_TRUE(same_bits(dqkv, dqkv2)) << shape;
    }
}

// GQA is MHA on K/V heads repeated per query head (HF repeat_kv): the GQA kernel's output and
// dq have the MHA kernel's bits on the widened qkv (same per-head products), and a kv head's
// dk, dv is its group's MHA dk, dv summed in head order.
TEST_P(CpuLlamaOps, GqaIsMhaOnRepeatedHeads) {
    const int B = 2, T = 70, NH = 6, hs = 8, C = NH * hs;
    for (int NKV : {6, 3, 2, 1}) {
        const int G = NH / NKV, W = C + 2 * NKV * hs;
        auto qkv = ref::random_floats((size_t)B * T * W, 1901, -2, 2);
        auto dout = ref::random_floats((size_t)B * T * C, 1902);
        std::vector<float> wide((size_t)B * T * 3 * C);
        for (int n = 0; n < B * T; n++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < hs; i++) {
                    const size_t s = (size_t)n * W, d = (size_t)n * 3 * C;
                    wide[d + h * hs + i] = qkv[s + h * hs + i];
                    wide[d + C + h * hs + i] = qkv[s + C + (h / G) * hs + i];
                    wide[d + 2 * C + h * hs + i] = qkv[s + C + (NKV + h / G) * hs + i];
                }
        auto run = [&](const std::vector<float>& in, int nkv, std::vector<float>& out,
                       std::vector<float>& dqkv) {
            std::vector<float> saved(
                be->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, nkv)));
            std::vector<float> scratch(
                be->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, nkv)));
            out.assign((size_t)B * T * C, kNaN);
            dqkv.assign(in.size(), kNaN);
            be->attention_forward(out.data(), saved.data(), in.data(),
                                  trt::AttentionShape::from_width(B, T, C, NH, nkv));
            be->attention_backward(dqkv.data(), scratch.data(), dout.data(), in.data(),
                                   saved.data(), trt::AttentionShape::from_width(B, T, C, NH, nkv));
        };
        std::vector<float> og, dg, om, dm;
        run(qkv, NKV, og, dg);
        run(wide, NH, om, dm);
        EXPECT_TRUE(same_bits(og, om)) << NKV;
        std::vector<float> folded(qkv.size());
        for (int n = 0; n < B * T; n++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < hs; i++) {
                    const size_t s = (size_t)n * 3 * C, d = (size_t)n * W;
                    const bool first = h % G == 0;
                    float& k = folded[d + C + (h / G) * hs + i];
                    float& v = folded[d + C + (NKV + h / G) * hs + i];
                    folded[d + h * hs + i] = dm[s + h * hs + i];
                    k = first ? dm[s + C + h * hs + i] : k + dm[s + C + h * hs + i];
                    v = first ? dm[s + 2 * C + h * hs + i] : v + dm[s + 2 * C + h * hs + i];
                }
        EXPECT_TRUE(same_bits(dg, folded)) << NKV;
    }
}

TEST_P(CpuLlamaOps, AttentionRejectsBadHeadCounts) {
    const int B = 1, T = 2, C = 12, NH = 4;
    std::vector<float> qkv(B * T * 3 * C), out(B * T * C), saved(B * NH * T * T);
    for (int NKV : {3, 0, 8}) {
        try {
            be->attention_forward(out.data(), saved.data(), qkv.data(),
                                  trt::AttentionShape::from_width(B, T, C, NH, NKV));
            ADD_FAILURE() << "NKV " << NKV << " accepted";
        } catch (const trt::Error& e) {
            EXPECT_EQ(e.status(), trt::Status::Internal);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuLlamaOps, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "t" + std::to_string(info.param); });

// Every Llama-family op and GQA attention gives the same bits for 1, 2 and 3 threads: row
// kernels split rows statically, rmsnorm's dw sums each column over the rows in order on
// one thread, and attention works per (b, h) (GQA partials summed in head order).
TEST(CpuLlamaThreads, BitwiseAcrossThreadCounts) {
    const int B = 3, T = 67, NH = 6, NKV = 2, hs = 8, C = NH * hs, W = C + 2 * NKV * hs;
    const int N = B * T, F = 131, pos0 = 4;
    const float eps = 1e-6f;
    auto x = ref::random_floats((size_t)N * C, 2001, -2, 2),
         y = ref::random_floats((size_t)N * C, 2002),
         w = ref::random_floats(C, 2003, 0.5f, 1.5f), dy = ref::random_floats((size_t)N * C, 2004),
         qkv = ref::random_floats((size_t)N * W, 2005, -2, 2),
         dqkv_in = ref::random_floats((size_t)N * W, 2006),
         datt = ref::random_floats((size_t)N * C, 2007),
         gu = ref::random_floats((size_t)N * 2 * F, 2008, -5, 5),
         dact = ref::random_floats((size_t)N * F, 2009);
    const auto tok = ref::random_ints(N, 2010, 5);
    const auto wte = ref::random_floats((size_t)5 * C, 2011);
    std::vector<float> cs, sn;
    float_tables(pos0 + T, hs, cs, sn);
    using Outs = std::vector<std::vector<float>>;
    auto run = [&](int threads) {
        auto be = trt::make_cpu_backend(threads);
        Outs o;
        std::vector<float> out((size_t)N * C), rstd(N), res((size_t)N * C), out2((size_t)N * C),
            rstd2(N), dx((size_t)N * C, 0.5f), dw(C, 0.25f);
        be->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, eps);
        be->residual_rmsnorm_forward(res.data(), out2.data(), rstd2.data(), x.data(), y.data(),
                                     w.data(), N, C, eps);
        be->rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(),
                             N, C);
        std::vector<float> q = qkv, dq = dqkv_in;
        be->rope_forward(q.data(), cs.data(), sn.data(), pos0,
                         trt::AttentionShape::from_heads(B, T, NH, NKV, hs));
        be->rope_backward(dq.data(), cs.data(), sn.data(), pos0,
                          trt::AttentionShape::from_heads(B, T, NH, NKV, hs));
        std::vector<float> act((size_t)N * F), dgu((size_t)N * 2 * F);
        be->swiglu_forward(act.data(), gu.data(), N, F);
        be->swiglu_backward(dgu.data(), gu.data(), dact.data(), N, F);
        std::vector<float> atty((size_t)N * C),
            saved(be->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV))),
            scratch(
                be->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV))),
            dattqkv((size_t)N * W);
        be->attention_forward(atty.data(), saved.data(), q.data(),
                              trt::AttentionShape::from_width(B, T, C, NH, NKV));
        be->attention_backward(dattqkv.data(), scratch.data(), datt.data(), q.data(), saved.data(),
                               trt::AttentionShape::from_width(B, T, C, NH, NKV));
        std::vector<float> enc((size_t)N * C), dwte((size_t)5 * C, 0.0f);
        be->encoder_forward(enc.data(), tok.data(), wte.data(), nullptr, B, T, C);
        be->encoder_backward(dwte.data(), nullptr, dy.data(), tok.data(), B, T, C);
        return Outs{out, rstd, res,  out2,  rstd2, dx,      dw,  q,
                    dq,  act,  dgu, atty, saved, dattqkv, enc, dwte};
    };
    const Outs one = run(1);
    for (int threads : {2, 3}) {
        const Outs other = run(threads);
        for (size_t i = 0; i < one.size(); i++)
            EXPECT_TRUE(same_bits(one[i], other[i])) << "output " << i << ", threads " << threads;
    }
}

}  // namespace
