// The CPU optimizer kernels under adamw_step and grad_norm_clip (cpu_ops.h: sum_squares and
// the one-tensor AdamW) against closed-form double computations, and run-to-run bitwise
// determinism of the reductions (attention backward, sum_squares, layernorm/matmul backward).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "cpu/reference_ops.h"

namespace {

using ref::Vec;

TEST(CpuOptim, SumSquares) {
    for (int threads : {1, 2, 3}) {
        for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(7), size_t(100003)}) {
            auto x = ref::random_floats(n, 901 + (uint32_t)n, -3, 3);
            long double want = 0;  // extended precision: a truer sum than the kernel's
            for (float f : x) want += (long double)f * (long double)f;
            const double got = trt::cpu::sum_squares(x.data(), n, threads);
            if (n == 0) {
                EXPECT_EQ(got, 0.0);
                continue;
            }
            const double e = (double)(std::fabs((long double)got - want) / want);
            ref::report("sum_squares n=" + std::to_string(n) + " threads=" + std::to_string(threads), e);
            EXPECT_LE(e, 1e-13);  // double accumulation, 8 accumulators per part
        }
    }
}

// Closed form of torch.optim.AdamW in double, one step.
void adamw_double(Vec& p, const Vec& g_raw, Vec& m, Vec& v, const trt::cpu::AdamWParams& h) {
    const double bc1 = 1 - std::pow((double)h.beta1, (double)h.step);
    const double bc2 = 1 - std::pow((double)h.beta2, (double)h.step);
    for (size_t i = 0; i < p.size(); i++) {
        const double g = g_raw[i] * h.grad_scale;
        p[i] *= 1 - (double)h.lr * h.weight_decay;
        m[i] = h.beta1 * m[i] + (1 - (double)h.beta1) * g;
        v[i] = h.beta2 * v[i] + (1 - (double)h.beta2) * g * g;
        const double mhat = m[i] / bc1, vhat = v[i] / bc2;
        // torch: denom = sqrt(v)/sqrt(bc2) + eps = sqrt(vhat) + eps
        p[i] -= (double)h.lr * mhat / (std::sqrt(vhat) + h.eps);
    }
}

TEST(CpuOptim, AdamWThreeStepsClosedForm) {
    const size_t n = 1003;
    auto p = ref::random_floats(n, 1001), m(std::vector<float>(n, 0.0f)), v = m;
    Vec P = ref::to_double(p), Mv(n, 0.0), Vv(n, 0.0);
    trt::cpu::AdamWParams h{};
    h.lr = 3e-3f;
    h.beta1 = 0.9f;
    h.beta2 = 0.95f;
    h.eps = 1e-8f;
    h.weight_decay = 0.1f;
    h.grad_scale = 0.37f;
    double worst = 0;
    for (int step = 1; step <= 3; step++) {
        h.step = step;
        auto g = ref::random_floats(n, 1100 + step, -2, 2);
        trt::cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), n, h, 2);
        adamw_double(P, ref::to_double(g), Mv, Vv, h);
        worst = std::max({worst, ref::rel_error(p, P), ref::rel_error(m, Mv), ref::rel_error(v, Vv)});
    }
    ref::report("adamw 3 steps (params, m, v)", worst);
    EXPECT_LE(worst, 1e-6);
}

TEST(CpuOptim, AdamWFirstStepIsSignStep) {
    // At step 1 from m = v = 0: mhat = g, vhat = g², so the update is lr·g/(|g| + eps), a
    // signed step of size ~lr, after decoupled decay p·(1 − lr·wd).
    std::vector<float> p = {1.0f, -2.0f, 0.5f}, g = {4.0f, -0.25f, 1e-3f}, m(3, 0.f), v(3, 0.f);
    trt::cpu::AdamWParams h{0.01f, 0.9f, 0.999f, 1e-8f, 0.5f, 1, 2.0f};
    trt::cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), 3, h, 1);
    const double decay = 1 - 0.01 * 0.5;
    const double want[3] = {1.0 * decay - 0.01 * 8.0 / (8.0 + 1e-8),
                            -2.0 * decay + 0.01 * 0.5 / (0.5 + 1e-8),
                            0.5 * decay - 0.01 * 2e-3 / (2e-3 + 1e-8)};
    for (int i = 0; i < 3; i++) EXPECT_NEAR(p[i], want[i], 2e-7) << i;
    // The betas arrive as float: 1 − 0.999f is 0.00099998713 (not 0.001), as in the kernel.
    EXPECT_NEAR(m[0], (1.0 - (double)0.9f) * 8.0, 1e-7);
    EXPECT_NEAR(v[0], (1.0 - (double)0.999f) * 64.0, 1e-9);
}

TEST(CpuDeterminism, BitwiseRunToRun) {
    for (int threads : {2, 3}) {
        auto be = trt::make_cpu_backend(threads);
        const int B = 3, T = 41, C = 48, NH = 4;
        auto qkv = ref::random_floats((size_t)B * T * 3 * C, 1201, -2, 2);
        auto dout = ref::random_floats((size_t)B * T * C, 1202);
        std::vector<float> out((size_t)B * T * C),
            saved(be->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)));
        std::vector<float> scratch(
            be->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)));
        be->attention_forward(out.data(), saved.data(), qkv.data(),
                              trt::AttentionShape::from_width(B, T, C, NH, NH));
        std::vector<float> d1(qkv.size()), d2(qkv.size(), 7.0f);
        be->attention_backward(d1.data(), scratch.data(), dout.data(), qkv.data(), saved.data(),
                               trt::AttentionShape::from_width(B, T, C, NH, NH));
        be->attention_backward(d2.data(), scratch.data(), dout.data(), qkv.data(), saved.data(),
                               trt::AttentionShape::from_width(B, T, C, NH, NH));
        EXPECT_EQ(0, std::memcmp(d1.data(), d2.data(), d1.size() * sizeof(float)));

        auto x = ref::random_floats(1000003, 1203);
        const double s1 = trt::cpu::sum_squares(x.data(), x.size(), threads);
        const double s2 = trt::cpu::sum_squares(x.data(), x.size(), threads);
        EXPECT_EQ(0, std::memcmp(&s1, &s2, sizeof s1));

        // Layernorm and matmul backward parameter-gradient reductions.
        const int N = B * T;
        auto w = ref::random_floats(C, 1204), ln_out = out;
        std::vector<float> mean(N), rstd(N);
        be->layernorm_forward(ln_out.data(), mean.data(), rstd.data(), out.data(), w.data(), w.data(), N, C);
        std::vector<float> dx1(N * C, 0.f), dw1(C, 0.f), db1(C, 0.f), dx2 = dx1, dw2 = dw1, db2 = db1;
        be->layernorm_backward(dx1.data(), dw1.data(), db1.data(), dout.data(), out.data(), w.data(), mean.data(), rstd.data(), N, C);
        be->layernorm_backward(dx2.data(), dw2.data(), db2.data(), dout.data(), out.data(), w.data(), mean.data(), rstd.data(), N, C);
        EXPECT_EQ(dx1, dx2);
        EXPECT_EQ(dw1, dw2);
        EXPECT_EQ(db1, db2);
        auto W = ref::random_floats(C * 3 * C, 1205);
        std::vector<float> mdx1(N * C), mdW1(C * 3 * C, 0.f), mdb1(3 * C, 0.f), mdx2 = mdx1, mdW2 = mdW1, mdb2 = mdb1;
        be->matmul_backward(mdx1.data(), mdW1.data(), mdb1.data(), qkv.data(), out.data(), W.data(), N, C, 3 * C, trt::WeightLayout::InOut);
        be->matmul_backward(mdx2.data(), mdW2.data(), mdb2.data(), qkv.data(), out.data(), W.data(), N, C, 3 * C, trt::WeightLayout::InOut);
        EXPECT_EQ(mdx1, mdx2);
        EXPECT_EQ(mdW1, mdW2);
        EXPECT_EQ(mdb1, mdb2);
    }
}

}  // namespace
