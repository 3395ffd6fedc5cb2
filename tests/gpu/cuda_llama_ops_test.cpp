// The Llama-family ops of the Backend interface (issue 16) on the CUDA backend against the CPU
// backend, for each CUDA precision (fp32, tf32, bf16, fp16), in the manner of
// cuda_ops_test.cpp: seeded random inputs (never zeros), shapes that are multiples of nothing,
// outputs poisoned with NaN first, += gradients pre-filled and judged on the increment.
//   rmsnorm forward/backward, residual+rmsnorm, rope forward/backward, swiglu forward/backward,
//   encoder without position embedding (wpe / dwpe null), grouped-query attention (NKV in
//   {NH, NH/2, 1}) and scratch sized from ModelDims{NKV, F} alone.
//
// Tolerances (gpu_test_util.h): ops without a matrix product compute in fp32 in every
// precision: 1e-5; attention is a matrix product: fp32 1e-5, tf32 2e-3, bf16/fp16 forward
// 1e-2 / backward 2e-2 on bf16/fp16-rounded inputs (both backends see the same operands).
// Besides the CPU twin, small fp32 cases are also held against the double-precision
// references of tests/unit/cpu/reference_ops.h, and grouped-query attention against the CUDA
// backend's own multi-head attention on K/V heads replicated per query group (an oracle that
// does not depend on the CPU side).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace {

using gpu::Cover;
using gpu::kCpu;
using gpu::kCuda;
using gpu::Twin;
using trt::Backend;
using trt::Precision;
using trt::WeightLayout;

class LlamaOps : public gpu::CudaOpsP {
protected:
    bool fp32() const { return precision_ == Precision::Fp32; }
    // ‖cuda − reference‖ / ‖reference‖ (double reference), printed, expected <= tol.
    void expect_near_ref(const std::string& what, const Twin& t, const ref::Vec& want,
                         double tolerance) {
        const auto g = t.get<float>(kCuda, want.size());
        const double e = ref::rel_error(g, want);
        ref::report(tag(what + " vs double ref"), e);
        EXPECT_LE(e, tolerance) << tag(what) << " vs the double reference";
    }
};

std::string shape(std::initializer_list<std::pair<const char*, int>> dims) {
    std::string s;
    for (const auto& d : dims) s += std::string(" ") + d.first + std::to_string(d.second);
    return s;
}

// ------------------------------------------------------------------ rmsnorm

// C = 40, 385 and 768 take the register rows (8, 16, 32 values per lane), 1600 the 64-value
// forward and the generic backward, 2100 the generic forward; C = 3 is a partial warp.
TEST_P(LlamaOps, RmsNormForwardBackward) {
    struct Case { int N, C; float eps; };
    const Case cases[] = {{51, 40, 1e-5f},  {33, 385, 1e-6f}, {1030, 768, 1e-5f},
                          {7, 1600, 1e-6f}, {5, 3, 1e-5f},    {9, 2100, 1e-5f}};
    Cover cov;
    for (auto c : cases) cov.add(1, c.N, c.C);
    reserve(cov);
    for (auto c : cases) {
        const int N = c.N, C = c.C;
        const float eps = c.eps;
        const std::string sh = shape({{"N", N}, {"C", C}});
        const auto xv = gpu::rnd(N * C, 3201, -2, 3), wv = gpu::rnd(C, 3202, 0.5f, 1.5f);
        Twin x = up(xv), w = up(wv);
        Twin out = nan_floats(N * C), rstd = nan_floats(N);
        both([&](Backend& be, int s) {
            be.rmsnorm_forward(out.f(s), rstd.f(s), x.f(s), w.f(s), N, C, eps);
        });
        expect_close("rmsnorm fwd out" + sh, out, N * C, gpu::kTolFp32);
        expect_close("rmsnorm fwd rstd" + sh, rstd, N, gpu::kTolFp32);

        const auto dx0 = gpu::rnd(N * C, 3205), dw0 = gpu::rnd(C, 3206);
        const auto dyv = gpu::rnd(N * C, 3204);
        Twin dout = up(dyv), dx = up(dx0), dw = up(dw0);
        both([&](Backend& be, int s) {
            // Both sides use their own saved rstd, as in a real step.
            be.rmsnorm_backward(dx.f(s), dw.f(s), dout.f(s), x.f(s), w.f(s), rstd.f(s), N, C);
        });
        expect_close_accum("rmsnorm bwd dinp" + sh, dx, dx0, gpu::kTolFp32);
        expect_close_accum("rmsnorm bwd dw" + sh, dw, dw0, gpu::kTolFp32);

        if (fp32() && N * C <= 40000) {
            ref::Vec rs;
            const ref::Vec want = ref::rmsnorm_forward(ref::to_double(xv), ref::to_double(wv), N,
                                                       C, eps, &rs);
            expect_near_ref("rmsnorm fwd out" + sh, out, want, gpu::kTolFp32);
            expect_near_ref("rmsnorm fwd rstd" + sh, rstd, rs, gpu::kTolFp32);
            ref::Vec rdx, rdw;
            ref::rmsnorm_backward(ref::to_double(dyv), ref::to_double(xv), ref::to_double(wv), N,
                                  C, eps, rdx, rdw);
            for (size_t i = 0; i < rdx.size(); i++) rdx[i] += dx0[i];
            for (size_t i = 0; i < rdw.size(); i++) rdw[i] += dw0[i];
            const auto gdx = dx.get<float>(kCuda, rdx.size());
            const auto gdw = dw.get<float>(kCuda, rdw.size());
            const double edx = gpu::accum_error(gdx, std::vector<float>(rdx.begin(), rdx.end()),
                                                dx0);
            const double edw = gpu::accum_error(gdw, std::vector<float>(rdw.begin(), rdw.end()),
                                                dw0);
            ref::report(tag("rmsnorm bwd dinp vs double ref" + sh), edx);
            ref::report(tag("rmsnorm bwd dw vs double ref" + sh), edw);
            EXPECT_LE(edx, gpu::kTolFp32) << sh;
            EXPECT_LE(edw, gpu::kTolFp32) << sh;
        }

        // Deterministic: the same inputs give the same bits (dw through the fixed-order
        // column reduction, no atomics).
        Twin dx2 = up(dx0), dw2 = up(dw0);
        cuda_->rmsnorm_backward(dx2.f(kCuda), dw2.f(kCuda), dout.f(kCuda), x.f(kCuda),
                                w.f(kCuda), rstd.f(kCuda), N, C);
        EXPECT_TRUE(gpu::same_bits(dx2.get<float>(kCuda, N * C), dx.get<float>(kCuda, N * C)))
            << "rmsnorm bwd dinp not reproducible" << sh;
        EXPECT_TRUE(gpu::same_bits(dw2.get<float>(kCuda, C), dw.get<float>(kCuda, C)))
            << "rmsnorm bwd dw not reproducible" << sh;
    }
}

TEST_P(LlamaOps, ResidualRmsNormForward) {
    const std::pair<int, int> cases[] = {{51, 40}, {33, 385}, {1030, 768}, {9, 2100}};
    Cover cov;
    for (auto [N, C] : cases) cov.add(1, N, C);
    reserve(cov);
    const float eps = 1e-5f;
    for (auto [N, C] : cases) {
        const std::string sh = shape({{"N", N}, {"C", C}});
        Twin a = up(gpu::rnd(N * C, 3301, -2, 2)), b = up(gpu::rnd(N * C, 3302)),
             w = up(gpu::rnd(C, 3304, 0.5f, 1.5f));
        Twin res = nan_floats(N * C), out = nan_floats(N * C), rstd = nan_floats(N);
        both([&](Backend& be, int s) {
            be.residual_rmsnorm_forward(res.f(s), out.f(s), rstd.f(s), a.f(s), b.f(s), w.f(s),
                                        N, C, eps);
        });
        expect_equal<float>("residual+rmsnorm res_out (bitwise: one add)" + sh, res, N * C);
        expect_close("residual+rmsnorm out" + sh, out, N * C, gpu::kTolFp32);
        expect_close("residual+rmsnorm rstd" + sh, rstd, N, gpu::kTolFp32);
        // The fused op is exactly residual then rmsnorm on the CUDA side (same row code).
        Twin out2 = nan_floats(N * C), rstd2 = nan_floats(N);
        cuda_->rmsnorm_forward(out2.f(kCuda), rstd2.f(kCuda), res.f(kCuda), w.f(kCuda), N, C, eps);
        EXPECT_TRUE(gpu::same_bits(out2.get<float>(kCuda, N * C), out.get<float>(kCuda, N * C)))
            << "residual_rmsnorm out != rmsnorm(res_out)" << sh;
        EXPECT_TRUE(gpu::same_bits(rstd2.get<float>(kCuda, N), rstd.get<float>(kCuda, N)))
            << "residual_rmsnorm rstd != rmsnorm(res_out)" << sh;
    }
}

// ------------------------------------------------------------------ rope

TEST_P(LlamaOps, RopeForwardBackward) {
    struct Case { int B, T, NH, NKV, hs, pos0; };
    const Case cases[] = {{2, 17, 4, 4, 8, 0},   {2, 17, 4, 2, 10, 5}, {1, 33, 6, 1, 16, 3},
                          {3, 7, 2, 1, 2, 0},    {2, 64, 12, 4, 64, 100},
                          {1, 5, 3, 3, 128, 7}};
    reserve(Cover().add(3, 64, 64 * 12, 12));
    for (auto c : cases) {
        const int B = c.B, T = c.T, NH = c.NH, NKV = c.NKV, hs = c.hs, pos0 = c.pos0;
        const std::string sh = shape({{"B", B}, {"T", T}, {"NH", NH}, {"NKV", NKV}, {"hs", hs},
                                      {"pos0", pos0}});
        const int max_pos = pos0 + T + 2, half = hs / 2;
        ref::Vec cd, sd;
        ref::rope_tables(max_pos, hs, 10000.0, cd, sd);
        const std::vector<float> cf(cd.begin(), cd.end()), sf(sd.begin(), sd.end());
        Twin cos_t = up(cf), sin_t = up(sf);
        ASSERT_EQ(cf.size(), static_cast<size_t>(max_pos) * half);
        const size_t W = static_cast<size_t>(NH + 2 * NKV) * hs, n = (size_t)B * T * W;
        const auto xv = gpu::rnd(n, 3401, -2, 2);
        Twin x = up(xv);
        both([&](Backend& be, int s) {
            be.rope_forward(x.f(s), cos_t.f(s), sin_t.f(s), B, T, NH, NKV, hs, pos0);
        });
        expect_close("rope fwd" + sh, x, n, gpu::kTolFp32);
        // V untouched (bitwise).
        const auto gx = x.get<float>(kCuda, n);
        for (size_t row = 0; row < (size_t)B * T; row++)
            for (size_t k = (size_t)(NH + NKV) * hs; k < W; k++)
                ASSERT_EQ(gx[row * W + k], xv[row * W + k]) << "V changed at row " << row << sh;
        if (fp32()) {
            expect_near_ref("rope fwd" + sh, x,
                            ref::rope_forward(ref::to_double(xv), cd, sd, B, T, NH, NKV, hs, pos0),
                            gpu::kTolFp32);
        }

        const auto dv = gpu::rnd(n, 3402);
        Twin d = up(dv);
        both([&](Backend& be, int s) {
            be.rope_backward(d.f(s), cos_t.f(s), sin_t.f(s), B, T, NH, NKV, hs, pos0);
        });
        expect_close("rope bwd" + sh, d, n, gpu::kTolFp32);
        if (fp32()) {
            expect_near_ref("rope bwd" + sh, d,
                            ref::rope_backward(ref::to_double(dv), cd, sd, B, T, NH, NKV, hs,
                                               pos0),
                            gpu::kTolFp32);
        }
        // The backward is the transpose of an orthogonal map: it undoes the forward.
        cuda_->rope_backward(x.f(kCuda), cos_t.f(kCuda), sin_t.f(kCuda), B, T, NH, NKV, hs, pos0);
        const double e = ref::rel_error(x.get<float>(kCuda, n), xv);
        ref::report(tag("rope bwd(fwd(x)) vs x" + sh), e);
        EXPECT_LE(e, gpu::kTolFp32) << sh;
    }
}

// ------------------------------------------------------------------ swiglu

TEST_P(LlamaOps, SwigluForwardBackward) {
    const std::pair<int, int> cases[] = {{51, 40}, {1, 1}, {130, 1037}, {1024, 2816}, {3, 5}};
    reserve(Cover().add(1, 1024, 64));
    for (auto [N, F] : cases) {
        const std::string sh = shape({{"N", N}, {"F", F}});
        const size_t n2 = (size_t)N * 2 * F, n1 = (size_t)N * F;
        auto iv = gpu::rnd(n2, 3501, -8, 8);
        // A few saturated gates: e^-x beyond float range on either side.
        const float extremes[] = {-100.0f, -90.0f, 90.0f, 100.0f, -20.0f, 20.0f};
        for (size_t k = 0; k < sizeof extremes / sizeof *extremes && k < (size_t)F; k++)
            iv[k] = extremes[k];
        Twin inp = up(iv), out = nan_floats(n1);
        both([&](Backend& be, int s) { be.swiglu_forward(out.f(s), inp.f(s), N, F); });
        expect_close("swiglu fwd" + sh, out, n1, gpu::kTolFp32);

        const auto dyv = gpu::rnd(n1, 3502);
        Twin dout = up(dyv), dinp = nan_floats(n2);
        both([&](Backend& be, int s) {
            be.swiglu_backward(dinp.f(s), inp.f(s), dout.f(s), N, F);
        });
        expect_close("swiglu bwd" + sh, dinp, n2, gpu::kTolFp32);
        const auto g = dinp.get<float>(kCuda, n2);
        for (size_t k = 0; k < n2; k++) ASSERT_TRUE(std::isfinite(g[k])) << "dinp " << k << sh;
        if (fp32() && n2 <= 300000) {
            expect_near_ref("swiglu fwd" + sh, out,
                            ref::swiglu_forward(ref::to_double(iv), N, F), gpu::kTolFp32);
            expect_near_ref("swiglu bwd" + sh, dinp,
                            ref::swiglu_backward(ref::to_double(dyv), ref::to_double(iv), N, F),
                            gpu::kTolFp32);
        }
    }
}

// ------------------------------------------------------------------ encoder without wpe

TEST_P(LlamaOps, EncoderWithoutPositionEmbedding) {
    struct Case { int B, T, C, V; };
    const Case cases[] = {{3, 17, 40, 67}, {2, 5, 3, 2}, {4, 64, 768, 50}};
    Cover cov;
    for (auto c : cases) cov.add(c.B, c.T, c.C, 1, c.V);
    reserve(cov);
    for (auto c : cases) {
        const int B = c.B, T = c.T, C = c.C, V = c.V;
        const std::string sh = shape({{"B", B}, {"T", T}, {"C", C}, {"V", V}});
        auto ids = gpu::rnd_ids(B * T, 3601, V);
        ids[0] = V - 1;
        const auto wv = gpu::rnd(V * C, 3602);
        Twin in = up(ids), wte = up(wv), out = nan_floats(B * T * C);
        both([&](Backend& be, int s) {
            be.encoder_forward(out.f(s), in.i(s), wte.f(s), nullptr, B, T, C);
        });
        expect_equal<float>("encoder fwd wpe=null (bitwise: a copy)" + sh, out, B * T * C);
        const auto g = out.get<float>(kCuda, B * T * C);
        for (int n = 0; n < B * T; n++)
            for (int k = 0; k < C; k++)
                ASSERT_EQ(g[(size_t)n * C + k], wv[(size_t)ids[n] * C + k]) << sh;

        const auto dwte0 = gpu::rnd(V * C, 3604);
        Twin dout = up(gpu::rnd(B * T * C, 3603)), dwte = up(dwte0);
        both([&](Backend& be, int s) {
            be.encoder_backward(dwte.f(s), nullptr, dout.f(s), in.i(s), B, T, C);
        });
        expect_close_accum("encoder bwd dwpe=null dwte" + sh, dwte, dwte0, gpu::kTolFp32);
    }
}

// ------------------------------------------------------------------ grouped-query attention

struct AttnCase {
    int B, T, C, NH;
};
const AttnCase kAttnCases[] = {{2, 17, 40, 4}, {1, 1, 8, 2},    {2, 7, 12, 2},
                               {2, 64, 64, 4}, {1, 130, 96, 6}, {2, 256, 768, 12}};

std::vector<int> kv_counts(int NH) {
    std::vector<int> v = {NH};
    if (NH % 2 == 0 && NH / 2 != NH) v.push_back(NH / 2);
    if (NH > 1 && v.back() != 1) v.push_back(1);
    return v;
}

TEST_P(LlamaOps, GroupedQueryAttentionForwardBackward) {
    Cover cov;
    for (auto c : kAttnCases) cov.add(c.B, c.T, c.C, c.NH);
    reserve(cov);
    for (auto c : kAttnCases)
        for (int NKV : kv_counts(c.NH)) {
            const int B = c.B, T = c.T, C = c.C, NH = c.NH, hs = C / NH;
            const std::string sh =
                shape({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}, {"NKV", NKV}});
            const size_t W = static_cast<size_t>(NH + 2 * NKV) * hs;
            const size_t nq = (size_t)B * T * W, no = (size_t)B * T * C;
            const auto qv = in(nq, 3701, -2, 2), dov = in(no, 3702);
            Twin qkv = up(qv), out = nan_floats(no);
            const size_t n_saved = std::max(cpu_->attention_saved_floats(B, T, C, NH, NKV),
                                            cuda_->attention_saved_floats(B, T, C, NH, NKV));
            const size_t n_scratch = std::max(cpu_->attention_scratch_floats(B, T, C, NH, NKV),
                                              cuda_->attention_scratch_floats(B, T, C, NH, NKV));
            Twin saved = nan_floats(n_saved), scratch = nan_floats(n_scratch);
            both([&](Backend& be, int s) {
                be.attention_forward(out.f(s), saved.f(s), qkv.f(s), B, T, C, NH, NKV);
            });
            expect_close("gqa attention fwd" + sh, out, no, tol(false));

            Twin dout = up(dov), dqkv = nan_floats(nq);
            both([&](Backend& be, int s) {
                be.attention_backward(dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s),
                                      B, T, C, NH, NKV);
            });
            expect_close("gqa attention bwd dqkv" + sh, dqkv, nq, tol(true));

            if (fp32() && (size_t)B * NH * T * T * hs <= 4000000) {
                expect_near_ref("gqa attention fwd" + sh, out,
                                ref::attention_forward(ref::to_double(qv), B, T, C, NH, NKV),
                                gpu::kTolFp32);
                expect_near_ref("gqa attention bwd dqkv" + sh, dqkv,
                                ref::attention_backward(ref::to_double(dov), ref::to_double(qv),
                                                        B, T, C, NH, NKV),
                                gpu::kTolFp32);
            }

            // Deterministic: a second run gives the same bits.
            const auto out1 = out.get<float>(kCuda, no), dqkv1 = dqkv.get<float>(kCuda, nq);
            cuda_->attention_forward(out.f(kCuda), saved.f(kCuda), qkv.f(kCuda), B, T, C, NH,
                                     NKV);
            cuda_->attention_backward(dqkv.f(kCuda), scratch.f(kCuda), dout.f(kCuda),
                                      qkv.f(kCuda), saved.f(kCuda), B, T, C, NH, NKV);
            EXPECT_TRUE(gpu::same_bits(out.get<float>(kCuda, no), out1)) << "fwd rerun" << sh;
            EXPECT_TRUE(gpu::same_bits(dqkv.get<float>(kCuda, nq), dqkv1)) << "bwd rerun" << sh;
        }
}

// GQA on the CUDA backend equals its own multi-head attention with each K/V head repeated for
// the G query heads that read it; the K/V gradients are the sums of the repeated heads'.
TEST_P(LlamaOps, GroupedQueryAttentionEqualsReplicatedMultiHead) {
    const AttnCase cases[] = {{2, 17, 40, 4}, {1, 130, 96, 6}, {2, 64, 256, 8}};
    Cover cov;
    for (auto c : cases) cov.add(c.B, c.T, c.C, c.NH);
    reserve(cov);
    for (auto c : cases)
        for (int NKV : kv_counts(c.NH)) {
            if (NKV == c.NH) continue;
            const int B = c.B, T = c.T, C = c.C, NH = c.NH, hs = C / NH, G = NH / NKV;
            const std::string sh =
                shape({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}, {"NKV", NKV}});
            const size_t W = static_cast<size_t>(NH + 2 * NKV) * hs, BT = (size_t)B * T;
            const size_t nq = BT * W, nm = BT * 3 * C, no = BT * C;
            const auto qv = in(nq, 3801, -2, 2), dov = in(no, 3802);
            std::vector<float> mv(nm);
            for (size_t r = 0; r < BT; r++) {
                const float* src = &qv[r * W];
                float* dst = &mv[r * 3 * C];
                std::copy(src, src + C, dst);  // Q
                for (int h = 0; h < NH; h++)
                    for (int i = 0; i < hs; i++) {
                        dst[C + h * hs + i] = src[C + (h / G) * hs + i];              // K
                        dst[2 * C + h * hs + i] = src[C + (NKV + h / G) * hs + i];    // V
                    }
            }
            Backend& g = *cuda_;
            Twin qkv = up(qv), mqkv = up(mv), dout = up(dov);
            Twin out = nan_floats(no), mout = nan_floats(no), dqkv = nan_floats(nq),
                 mdqkv = nan_floats(nm);
            Twin saved = nan_floats(g.attention_saved_floats(B, T, C, NH, NKV));
            Twin msaved = nan_floats(g.attention_saved_floats(B, T, C, NH, NH));
            Twin scratch = nan_floats(std::max(g.attention_scratch_floats(B, T, C, NH, NKV),
                                               g.attention_scratch_floats(B, T, C, NH, NH)));
            g.attention_forward(out.f(kCuda), saved.f(kCuda), qkv.f(kCuda), B, T, C, NH, NKV);
            g.attention_backward(dqkv.f(kCuda), scratch.f(kCuda), dout.f(kCuda), qkv.f(kCuda),
                                 saved.f(kCuda), B, T, C, NH, NKV);
            g.attention_forward(mout.f(kCuda), msaved.f(kCuda), mqkv.f(kCuda), B, T, C, NH, NH);
            g.attention_backward(mdqkv.f(kCuda), scratch.f(kCuda), dout.f(kCuda), mqkv.f(kCuda),
                                 msaved.f(kCuda), B, T, C, NH, NH);
            const auto go = out.get<float>(kCuda, no), mo = mout.get<float>(kCuda, no);
            const double eo = ref::rel_error(go, mo);
            ref::report(tag("gqa fwd vs replicated mha" + sh), eo);
            EXPECT_LE(eo, tol(false)) << sh;
            // Expected dqkv: dQ as is, dK/dV of kv head j = sum over its query group.
            const auto md = mdqkv.get<float>(kCuda, nm);
            std::vector<double> want(nq, 0.0);
            for (size_t r = 0; r < BT; r++) {
                const float* src = &md[r * 3 * C];
                double* dst = &want[r * W];
                for (int k = 0; k < C; k++) dst[k] = src[k];
                for (int h = 0; h < NH; h++)
                    for (int i = 0; i < hs; i++) {
                        dst[C + (h / G) * hs + i] += src[C + h * hs + i];
                        dst[C + (NKV + h / G) * hs + i] += src[2 * C + h * hs + i];
                    }
            }
            const double ed = ref::rel_error(dqkv.get<float>(kCuda, nq), want);
            ref::report(tag("gqa bwd vs replicated mha" + sh), ed);
            EXPECT_LE(ed, tol(true)) << sh;
        }
}

// ------------------------------------------------------------------ scratch from ModelDims

// A Llama-shaped model reserves through ModelDims{NKV, F} alone (C stays the model's width,
// not the widest matrix): every matmul of its layer — qkv (NH+2NKV)·hs wide, the stacked
// gate|up 2F, down F -> C, the classifier — and its GQA attention run without a scratch
// error and match the CPU. bf16/fp16 need the operand casts' scratch, the part sized from F.
TEST_P(LlamaOps, ScratchSizedFromLlamaDims) {
    const int B = 2, T = 33, C = 96, NH = 6, NKV = 2, F = 344, V = 301, hs = C / NH;
    const int N = B * T, QKV = (NH + 2 * NKV) * hs;
    trt::ModelDims d{B, T, C, NH, V, 1, NKV, F};
    cpu_->reserve(d);
    cuda_->reserve(d);
    struct Mm { int K, M; const char* what; };
    const Mm mms[] = {{C, QKV, "qkv"}, {C, C, "o_proj"}, {C, 2 * F, "gate|up"},
                      {F, C, "down"}, {C, V, "lm_head"}};
    for (const Mm& m : mms) {
        const std::string sh = std::string(" ") + m.what + shape({{"K", m.K}, {"M", m.M}});
        Twin x = up(in((size_t)N * m.K, 3901)), w = up(in((size_t)m.K * m.M, 3902));
        Twin out = nan_floats((size_t)N * m.M);
        both([&](Backend& be, int s) {
            be.matmul_forward(out.f(s), x.f(s), w.f(s), nullptr, N, m.K, m.M,
                              WeightLayout::InOut);
        });
        expect_close("llama dims matmul fwd" + sh, out, (size_t)N * m.M, tol(false));
        const auto dW0 = gpu::rnd((size_t)m.K * m.M, 3904);
        Twin dout = up(in((size_t)N * m.M, 3903)), dx = nan_floats((size_t)N * m.K),
             dW = up(dW0);
        both([&](Backend& be, int s) {
            be.matmul_backward(dx.f(s), dW.f(s), nullptr, dout.f(s), x.f(s), w.f(s), N, m.K,
                               m.M, WeightLayout::InOut);
        });
        expect_close("llama dims matmul bwd dinp" + sh, dx, (size_t)N * m.K, tol(true));
        expect_close_accum("llama dims matmul bwd dweight" + sh, dW, dW0, tol(true));
    }
    // The attention of that model, and its norm / MLP ops.
    const size_t nq = (size_t)N * QKV, no = (size_t)N * C;
    Twin qkv = up(in(nq, 3905, -2, 2)), out = nan_floats(no), dqkv = nan_floats(nq);
    Twin saved = nan_floats(std::max(cpu_->attention_saved_floats(B, T, C, NH, NKV),
                                     cuda_->attention_saved_floats(B, T, C, NH, NKV)));
    Twin scratch = nan_floats(std::max(cpu_->attention_scratch_floats(B, T, C, NH, NKV),
                                       cuda_->attention_scratch_floats(B, T, C, NH, NKV)));
    Twin dout = up(in(no, 3906));
    both([&](Backend& be, int s) {
        be.attention_forward(out.f(s), saved.f(s), qkv.f(s), B, T, C, NH, NKV);
        be.attention_backward(dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s), B, T, C,
                              NH, NKV);
    });
    expect_close("llama dims attention fwd", out, no, tol(false));
    expect_close("llama dims attention bwd", dqkv, nq, tol(true));
    const auto dw0 = gpu::rnd(C, 3908), dx0 = gpu::rnd(no, 3909);
    Twin x = up(gpu::rnd(no, 3907)), w = up(gpu::rnd(C, 3910, 0.5f, 1.5f)),
         rstd = nan_floats(N), y = nan_floats(no), dx = up(dx0), dw = up(dw0);
    both([&](Backend& be, int s) {
        be.rmsnorm_forward(y.f(s), rstd.f(s), x.f(s), w.f(s), N, C, 1e-5f);
        be.rmsnorm_backward(dx.f(s), dw.f(s), dout.f(s), x.f(s), w.f(s), rstd.f(s), N, C);
    });
    expect_close("llama dims rmsnorm fwd", y, no, gpu::kTolFp32);
    expect_close_accum("llama dims rmsnorm bwd dw", dw, dw0, gpu::kTolFp32);
}

INSTANTIATE_TEST_SUITE_P(Precision, LlamaOps,
                         ::testing::Values(Precision::Fp32, Precision::Tf32, Precision::Bf16,
                                           Precision::Fp16),
                         gpu::precision_param_name);

}  // namespace
