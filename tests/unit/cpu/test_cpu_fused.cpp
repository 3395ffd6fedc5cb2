// The fused CPU ops (backend.h "fused ops") and the blocked causal attention, against the
// double reference (reference_ops.h) at the same fp32 tolerance as test_cpu_ops.cpp, on
// shapes that exercise the vector tails (sizes not multiples of 8), the column chunks of the
// reductions (> 256 columns) and the attention's query blocks (T > 64, T not a multiple of
// 64). Also: each fused op gives exactly the bits of the unfused kernels it shares code with,
// and is bitwise reproducible run to run. Runs for 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "cpu/reference_ops.h"

namespace {

using ref::Vec;
using trt::WeightLayout;
constexpr double kTol = 1e-5;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

class CpuFused : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override { be = trt::make_cpu_backend(GetParam()); }
    std::string tag(const std::string& op) const {
        return op + " (threads=" + std::to_string(GetParam()) + ")";
    }
    std::unique_ptr<trt::Backend> be;
};

TEST_P(CpuFused, ResidualLayerNorm) {
    for (auto [N, C] : {std::pair{1, 1}, std::pair{13, 12}, std::pair{37, 385}}) {
        for (bool with_bb : {false, true}) {
            auto a = ref::random_floats(N * C, 601, -2, 2), b = ref::random_floats(N * C, 602),
                 bb = ref::random_floats(C, 603), w = ref::random_floats(C, 604, 0.5f, 1.5f),
                 bias = ref::random_floats(C, 605);
            std::vector<float> res(N * C, kNaN), out(N * C, kNaN), mean(N, kNaN), rstd(N, kNaN);
            be->residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(),
                                           a.data(), b.data(), with_bb ? bb.data() : nullptr,
                                           w.data(), bias.data(), N, C);
            Vec rres(N * C);
            for (int n = 0; n < N; n++)
                for (int c = 0; c < C; c++)
                    rres[n * C + c] = (double)a[n * C + c] + b[n * C + c] + (with_bb ? bb[c] : 0.0);
            Vec rmean, rrstd;
            Vec want = ref::layernorm_forward(rres, ref::to_double(w), ref::to_double(bias), N, C,
                                              &rmean, &rrstd);
            const double er = ref::rel_error(res, rres);
            const double ef = std::max({ref::rel_error(out, want), ref::rel_error(mean, rmean),
                                        ref::rel_error(rstd, rrstd)});
            const std::string shape = " N" + std::to_string(N) + " C" + std::to_string(C) +
                                      (with_bb ? " +bb" : "");
            ref::report(tag("residual+layernorm res" + shape), er);
            ref::report(tag("residual+layernorm ln" + shape), ef);
            EXPECT_LE(er, 1e-7) << shape;  // one or two float adds
            if (C > 1) EXPECT_LE(ef, kTol) << shape;  // C = 1: out = bias, variance 0

            // Same bits as the unfused layernorm on the fused op's residual.
            std::vector<float> out2(N * C), mean2(N), rstd2(N);
            be->layernorm_forward(out2.data(), mean2.data(), rstd2.data(), res.data(), w.data(),
                                  bias.data(), N, C);
            EXPECT_EQ(out, out2) << shape;
            EXPECT_EQ(mean, mean2) << shape;
            EXPECT_EQ(rstd, rstd2) << shape;
        }
    }
}

TEST_P(CpuFused, MatmulGelu) {
    struct Case { int N, K, M; };
    for (auto c : {Case{1, 1, 1}, Case{37, 29, 43}, Case{130, 67, 301}}) {
        for (bool with_bias : {false, true}) {
            const int N = c.N, K = c.K, M = c.M;
            auto x = ref::random_floats(N * K, 611, -2, 2), W = ref::random_floats(K * M, 612),
                 bias = ref::random_floats(M, 613);
            std::vector<float> pre(N * M, kNaN), out(N * M, kNaN);
            be->matmul_gelu_forward(pre.data(), out.data(), x.data(), W.data(),
                                    with_bias ? bias.data() : nullptr, N, K, M);
            Vec rbias = ref::to_double(bias);
            Vec rpre = ref::matmul_forward(ref::to_double(x), ref::to_double(W),
                                           with_bias ? &rbias : nullptr, N, K, M,
                                           WeightLayout::InOut);
            Vec rout(rpre.size());
            for (size_t i = 0; i < rpre.size(); i++) rout[i] = ref::gelu(rpre[i]);
            const double ep = ref::rel_error(pre, rpre), eo = ref::rel_error(out, rout);
            const std::string shape = " " + std::to_string(N) + "x" + std::to_string(K) + "x" +
                                      std::to_string(M) + (with_bias ? "+bias" : "");
            ref::report(tag("matmul+gelu pre" + shape), ep);
            ref::report(tag("matmul+gelu out" + shape), eo);
            EXPECT_LE(ep, kTol) << shape;
            EXPECT_LE(eo, kTol) << shape;
            // out is exactly the elementwise GELU kernel of pre.
            std::vector<float> out2(N * M);
            trt::cpu::gelu_forward(out2.data(), pre.data(), out2.size(), GetParam());
            EXPECT_EQ(out, out2) << shape;
        }
    }
}

TEST_P(CpuFused, GeluBackwardBias) {
    for (auto [N, M] : {std::pair{1, 1}, std::pair{67, 13}, std::pair{67, 300},
                        std::pair{29, 1037}}) {
        auto x = ref::random_floats(N * M, 621, -5, 5), dout = ref::random_floats(N * M, 622);
        auto db = ref::random_floats(M, 623);
        const auto db0 = db;
        std::vector<float> dx(N * M, kNaN);
        be->gelu_backward_bias(dx.data(), db.data(), x.data(), dout.data(), N, M);
        Vec rdx(N * M), rdb(M, 0.0);
        for (int n = 0; n < N; n++)
            for (int m = 0; m < M; m++) {
                const size_t i = (size_t)n * M + m;
                rdx[i] = ref::gelu_grad(x[i]) * dout[i];
                rdb[m] += rdx[i];
            }
        Vec got_db(M);
        for (int m = 0; m < M; m++) got_db[m] = (double)db[m] - db0[m];
        const double ex = ref::rel_error(dx, rdx), eb = ref::rel_error(got_db, rdb);
        const std::string shape = " N" + std::to_string(N) + " M" + std::to_string(M);
        ref::report(tag("gelu bwd+bias dinp" + shape), ex);
        ref::report(tag("gelu bwd+bias dbias (+=)" + shape), eb);
        EXPECT_LE(ex, kTol) << shape;
        EXPECT_LE(eb, kTol) << shape;
        // dinp has the bits of the elementwise GELU gradient kernel; with dbias == nullptr
        // only dinp is written.
        std::vector<float> dx2(N * M, kNaN), dx3(N * M, kNaN);
        trt::cpu::gelu_backward(dx2.data(), x.data(), dout.data(), dx2.size(), GetParam());
        be->gelu_backward_bias(dx3.data(), nullptr, x.data(), dout.data(), N, M);
        EXPECT_EQ(dx, dx2) << shape;
        EXPECT_EQ(dx, dx3) << shape;
    }
}

// Wide layernorm backward and matmul dbias: more than one 256-column chunk per thread.
TEST_P(CpuFused, WideColumnReductions) {
    const int N = 19, C = 600;
    auto x = ref::random_floats(N * C, 631, -2, 3), w = ref::random_floats(C, 632, 0.5f, 1.5f),
         b = ref::random_floats(C, 633), dout = ref::random_floats(N * C, 634);
    std::vector<float> out(N * C), mean(N), rstd(N);
    be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
    be->layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                           mean.data(), rstd.data(), N, C);
    Vec rdx, rdw, rdb;
    ref::layernorm_backward(ref::to_double(dout), ref::to_double(x), ref::to_double(w), N, C, rdx,
                            rdw, rdb);
    const double el = std::max({ref::rel_error(dx, rdx), ref::rel_error(dw, rdw),
                                ref::rel_error(db, rdb)});
    ref::report(tag("layernorm bwd N19 C600"), el);
    EXPECT_LE(el, kTol);

    const int K = 7, M = 531;
    auto xm = ref::random_floats(N * K, 635), W = ref::random_floats(K * M, 636),
         dy = ref::random_floats(N * M, 637);
    std::vector<float> dW(K * M, 0.0f), dbias(M, 0.0f), dxm(N * K, kNaN);
    be->matmul_backward(dxm.data(), dW.data(), dbias.data(), dy.data(), xm.data(), W.data(), N, K,
                        M, WeightLayout::InOut);
    Vec rdxm, rdW, rdbias;
    ref::matmul_backward(ref::to_double(dy), ref::to_double(xm), ref::to_double(W), N, K, M,
                         WeightLayout::InOut, rdxm, rdW, rdbias);
    const double em = std::max({ref::rel_error(dxm, rdxm), ref::rel_error(dW, rdW),
                                ref::rel_error(dbias, rdbias)});
    ref::report(tag("matmul bwd 19x7x531"), em);
    EXPECT_LE(em, kTol);
}

struct AttnCase {
    int B, T, C, NH;
};

// Query blocks of 64: one full block, a partial second block, several with a ragged tail.
TEST_P(CpuFused, BlockedCausalAttention) {
    for (auto c : {AttnCase{1, 64, 16, 2}, AttnCase{2, 65, 24, 3}, AttnCase{1, 130, 40, 2},
                   AttnCase{1, 200, 36, 3}}) {
        const int B = c.B, T = c.T, C = c.C, NH = c.NH;
        const std::string shape = " B" + std::to_string(B) + " T" + std::to_string(T) + " C" +
                                  std::to_string(C) + " NH" + std::to_string(NH);
        auto qkv = ref::random_floats((size_t)B * T * 3 * C, 641, -2, 2);
        std::vector<float> out((size_t)B * T * C, kNaN);
        std::vector<float> saved(
            be->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)), kNaN);
        be->attention_forward(out.data(), saved.data(), qkv.data(),
                              trt::AttentionShape::from_width(B, T, C, NH, NH));
        Vec att;
        Vec want = ref::attention_forward(ref::to_double(qkv), B, T, C, NH, NH, &att);
        const double ef = ref::rel_error(out, want);
        EXPECT_LE(ef, kTol) << shape;
        if (saved.size() == att.size()) EXPECT_LE(ref::rel_error(saved, att), kTol) << shape;

        auto dout = ref::random_floats((size_t)B * T * C, 642);
        std::vector<float> dqkv(qkv.size(), kNaN);
        std::vector<float> scratch(
            be->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)), kNaN);
        be->attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), saved.data(),
                               trt::AttentionShape::from_width(B, T, C, NH, NH));
        Vec rdqkv =
            ref::attention_backward(ref::to_double(dout), ref::to_double(qkv), B, T, C, NH, NH);
        const double eb = ref::rel_error(dqkv, rdqkv);
        ref::report(tag("blocked attention fwd" + shape), ef);
        ref::report(tag("blocked attention bwd" + shape), eb);
        EXPECT_LE(eb, kTol) << shape;

        // Bitwise run to run (fresh NaN scratch each time).
        std::vector<float> out2(out.size()), saved2(saved.size(), kNaN), dqkv2(dqkv.size(), kNaN);
        std::vector<float> scratch2(scratch.size(), kNaN);
        be->attention_forward(out2.data(), saved2.data(), qkv.data(),
                              trt::AttentionShape::from_width(B, T, C, NH, NH));
        be->attention_backward(dqkv2.data(), scratch2.data(), dout.data(), qkv.data(),
                               saved2.data(), trt::AttentionShape::from_width(B, T, C, NH, NH));
        EXPECT_EQ(0, std::memcmp(out.data(), out2.data(), out.size() * sizeof(float))) << shape;
        EXPECT_EQ(0, std::memcmp(dqkv.data(), dqkv2.data(), dqkv.size() * sizeof(float)))
            << shape;
    }
}

TEST_P(CpuFused, BitwiseRunToRun) {
    const int N = 53, C = 300, M = 4 * C;
    auto a = ref::random_floats(N * C, 651), b = ref::random_floats(N * C, 652),
         w = ref::random_floats(C, 653), bias = ref::random_floats(C, 654),
         W = ref::random_floats(C * M, 655), fb = ref::random_floats(M, 656),
         dout = ref::random_floats(N * M, 657);
    auto run = [&](std::vector<float>& res, std::vector<float>& ln, std::vector<float>& pre,
                   std::vector<float>& act, std::vector<float>& dpre, std::vector<float>& dfb) {
        std::vector<float> mean(N), rstd(N);
        be->residual_layernorm_forward(res.data(), ln.data(), mean.data(), rstd.data(), a.data(),
                                       b.data(), bias.data(), w.data(), bias.data(), N, C);
        be->matmul_gelu_forward(pre.data(), act.data(), ln.data(), W.data(), fb.data(), N, C, M);
        be->gelu_backward_bias(dpre.data(), dfb.data(), pre.data(), dout.data(), N, M);
    };
    std::vector<float> r1(N * C), l1(N * C), p1(N * M), a1(N * M), d1(N * M), f1(M, 0.0f);
    std::vector<float> r2(N * C), l2(N * C), p2(N * M), a2(N * M), d2(N * M), f2(M, 0.0f);
    run(r1, l1, p1, a1, d1, f1);
    run(r2, l2, p2, a2, d2, f2);
    EXPECT_EQ(r1, r2);
    EXPECT_EQ(l1, l2);
    EXPECT_EQ(p1, p2);
    EXPECT_EQ(a1, a2);
    EXPECT_EQ(d1, d2);
    EXPECT_EQ(f1, f2);
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuFused, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "t" + std::to_string(info.param); });

}  // namespace
