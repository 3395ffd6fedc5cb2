// Proves the double-precision references: each analytic backward in reference_ops.h against
// central finite differences of its own forward, in double (rel <= 1e-6). The CPU kernels
// are then only ever compared against these proven references.
#include <gtest/gtest.h>

#include "cpu/reference_ops.h"

namespace {

using ref::Vec;
constexpr double kFdTol = 1e-6;

// Scalar probe: L = <out, R> for a fixed random R, so dL/dout = R.
TEST(ReferenceFD, LayerNorm) {
    const int N = 5, C = 7;
    Vec x = ref::to_double(ref::random_floats(N * C, 11, -2, 2));
    Vec w = ref::to_double(ref::random_floats(C, 12, 0.5f, 1.5f));
    Vec b = ref::to_double(ref::random_floats(C, 13));
    Vec R = ref::to_double(ref::random_floats(N * C, 14));
    Vec dx, dw, db;
    ref::layernorm_backward(R, x, w, N, C, dx, dw, db);
    auto fx = [&](const Vec& v) { return ref::dot(ref::layernorm_forward(v, w, b, N, C), R); };
    auto fw = [&](const Vec& v) { return ref::dot(ref::layernorm_forward(x, v, b, N, C), R); };
    auto fb = [&](const Vec& v) { return ref::dot(ref::layernorm_forward(x, w, v, N, C), R); };
    double ex = ref::rel_error(dx, ref::finite_diff(fx, x));
    double ew = ref::rel_error(dw, ref::finite_diff(fw, w));
    double eb = ref::rel_error(db, ref::finite_diff(fb, b));
    ref::report("fd layernorm dinp/dw/db", std::max({ex, ew, eb}));
    EXPECT_LE(ex, kFdTol);
    EXPECT_LE(ew, kFdTol);
    EXPECT_LE(eb, kFdTol);
}

TEST(ReferenceFD, Attention) {
    const int B = 2, T = 5, C = 6, NH = 2;
    Vec qkv = ref::to_double(ref::random_floats((size_t)B * T * 3 * C, 21, -1.5f, 1.5f));
    Vec R = ref::to_double(ref::random_floats((size_t)B * T * C, 22));
    Vec dqkv = ref::attention_backward(R, qkv, B, T, C, NH);
    auto f = [&](const Vec& v) { return ref::dot(ref::attention_forward(v, B, T, C, NH), R); };
    double e = ref::rel_error(dqkv, ref::finite_diff(f, qkv));
    ref::report("fd attention dqkv", e);
    EXPECT_LE(e, kFdTol);
    // The saved probabilities are causal: rows sum to 1, zeros above the diagonal.
    Vec att;
    ref::attention_forward(qkv, B, T, C, NH, &att);
    for (int r = 0; r < B * NH * T; r++) {
        const int t = r % T;
        double s = 0;
        for (int c = 0; c < T; c++) {
            s += att[(size_t)r * T + c];
            if (c > t) {
                EXPECT_EQ(att[(size_t)r * T + c], 0.0);
            }
        }
        EXPECT_NEAR(s, 1.0, 1e-12);
    }
}

TEST(ReferenceFD, Gelu) {
    Vec x = ref::to_double(ref::random_floats(64, 31, -4, 4));
    Vec an(x.size()), fd(x.size());
    for (size_t i = 0; i < x.size(); i++) {
        an[i] = ref::gelu_grad(x[i]);
        const double h = 1e-5;
        fd[i] = (ref::gelu(x[i] + h) - ref::gelu(x[i] - h)) / (2 * h);
    }
    double e = ref::rel_error(an, fd);
    ref::report("fd gelu", e);
    EXPECT_LE(e, kFdTol);
    // Spot values of the tanh approximation (independent of the formula above).
    EXPECT_NEAR(ref::gelu(1.0), 0.8411919906082768, 1e-12);
    EXPECT_NEAR(ref::gelu(-2.0), -0.04540230591222494, 1e-12);
}

TEST(ReferenceFD, Classifier) {
    const int N = 4, V = 11, Vp = 16;
    Vec logits = ref::to_double(ref::random_floats((size_t)N * Vp, 41, -3, 3));
    std::vector<int32_t> tg = ref::random_ints(N, 42, V);
    const double dloss = 0.37;
    Vec losses, dlogits;
    ref::classifier(logits, tg, N, V, Vp, dloss, losses, dlogits);
    auto f = [&](const Vec& v) {
        Vec l, d;
        ref::classifier(v, tg, N, V, Vp, dloss, l, d);
        double s = 0;
        for (double x : l) s += dloss * x;
        return s;
    };
    double e = ref::rel_error(dlogits, ref::finite_diff(f, logits));
    ref::report("fd classifier dlogits", e);
    EXPECT_LE(e, kFdTol);
    // Uniform logits: loss is log V exactly.
    Vec flat((size_t)Vp, 0.25);
    Vec l, d;
    ref::classifier(flat, {3}, 1, V, Vp, 1.0, l, d);
    EXPECT_NEAR(l[0], std::log((double)V), 1e-14);
}

TEST(ReferenceFD, Matmul) {
    const int N = 4, K = 5, M = 3;
    for (auto layout : {trt::WeightLayout::InOut, trt::WeightLayout::OutIn}) {
        Vec x = ref::to_double(ref::random_floats(N * K, 51));
        Vec W = ref::to_double(ref::random_floats(K * M, 52));
        Vec bias = ref::to_double(ref::random_floats(M, 53));
        Vec R = ref::to_double(ref::random_floats(N * M, 54));
        Vec dx, dW, db;
        ref::matmul_backward(R, x, W, N, K, M, layout, dx, dW, db);
        auto fx = [&](const Vec& v) { return ref::dot(ref::matmul_forward(v, W, &bias, N, K, M, layout), R); };
        auto fW = [&](const Vec& v) { return ref::dot(ref::matmul_forward(x, v, &bias, N, K, M, layout), R); };
        auto fb = [&](const Vec& v) { return ref::dot(ref::matmul_forward(x, W, &v, N, K, M, layout), R); };
        double e = std::max({ref::rel_error(dx, ref::finite_diff(fx, x)),
                             ref::rel_error(dW, ref::finite_diff(fW, W)),
                             ref::rel_error(db, ref::finite_diff(fb, bias))});
        ref::report(layout == trt::WeightLayout::InOut ? "fd matmul InOut" : "fd matmul OutIn", e);
        EXPECT_LE(e, kFdTol);
    }
}

TEST(ReferenceFD, Encoder) {
    const int B = 2, T = 3, C = 4, V = 3;  // V < B*T: tokens repeat
    std::vector<int32_t> in = ref::random_ints(B * T, 61, V);
    Vec wte = ref::to_double(ref::random_floats(V * C, 62));
    Vec wpe = ref::to_double(ref::random_floats(T * C, 63));
    Vec R = ref::to_double(ref::random_floats(B * T * C, 64));
    Vec dwte, dwpe;
    ref::encoder_backward(R, in, B, T, C, V, dwte, dwpe);
    auto fe = [&](const Vec& v) { return ref::dot(ref::encoder_forward(in, v, wpe, B, T, C), R); };
    auto fp = [&](const Vec& v) { return ref::dot(ref::encoder_forward(in, wte, v, B, T, C), R); };
    double e = std::max(ref::rel_error(dwte, ref::finite_diff(fe, wte)),
                        ref::rel_error(dwpe, ref::finite_diff(fp, wpe)));
    ref::report("fd encoder", e);
    EXPECT_LE(e, kFdTol);
}

}  // namespace
