// Proves the double-precision references: each analytic backward in reference_ops.h against
// central finite differences of its own forward, in double (rel <= 1e-6), plus properties
// and spot values that pin the conventions (GQA = MHA on repeated K/V heads, RoPE's
// rotate_half pairing and relative-position property, SiLU values). The CPU kernels are then
// only ever compared against these proven references.
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
    Vec dqkv = ref::attention_backward(R, qkv, B, T, C, NH, NH);
    auto f = [&](const Vec& v) { return ref::dot(ref::attention_forward(v, B, T, C, NH, NH), R); };
    double e = ref::rel_error(dqkv, ref::finite_diff(f, qkv));
    ref::report("fd attention dqkv", e);
    EXPECT_LE(e, kFdTol);
    // The saved probabilities are causal: rows sum to 1, zeros above the diagonal.
    Vec att;
    ref::attention_forward(qkv, B, T, C, NH, NH, &att);
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

TEST(ReferenceFD, AttentionGqa) {
    // NKV in {NH, NH/2, 1}: FD of dqkv, and GQA equals MHA on the qkv whose K/V heads are
    // repeated per query head (HF repeat_kv), with each kv head's gradient the sum of its
    // group's.
    const int B = 2, T = 5, NH = 4, hs = 3, C = NH * hs;
    for (int NKV : {4, 2, 1}) {
        const int G = NH / NKV, W = C + 2 * NKV * hs;
        Vec qkv = ref::to_double(ref::random_floats((size_t)B * T * W, 23, -1.5f, 1.5f));
        Vec R = ref::to_double(ref::random_floats((size_t)B * T * C, 24));
        Vec dqkv = ref::attention_backward(R, qkv, B, T, C, NH, NKV);
        auto f = [&](const Vec& v) { return ref::dot(ref::attention_forward(v, B, T, C, NH, NKV), R); };
        double e = ref::rel_error(dqkv, ref::finite_diff(f, qkv));
        ref::report("fd attention gqa dqkv NKV" + std::to_string(NKV), e);
        EXPECT_LE(e, kFdTol) << NKV;

        Vec wide((size_t)B * T * 3 * C);  // [B,T,3C]: kv head h/G copied to head h
        for (int n = 0; n < B * T; n++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < hs; i++) {
                    const size_t src = (size_t)n * W, dst = (size_t)n * 3 * C;
                    wide[dst + h * hs + i] = qkv[src + h * hs + i];
                    wide[dst + C + h * hs + i] = qkv[src + C + (h / G) * hs + i];
                    wide[dst + 2 * C + h * hs + i] = qkv[src + C + (NKV + h / G) * hs + i];
                }
        Vec att_g, att_m;
        Vec out_g = ref::attention_forward(qkv, B, T, C, NH, NKV, &att_g);
        Vec out_m = ref::attention_forward(wide, B, T, C, NH, NH, &att_m);
        EXPECT_LE(ref::rel_error(out_g, out_m), 1e-15) << NKV;
        EXPECT_LE(ref::rel_error(att_g, att_m), 1e-15) << NKV;
        Vec dwide = ref::attention_backward(R, wide, B, T, C, NH, NH);
        Vec folded(qkv.size(), 0.0);
        for (int n = 0; n < B * T; n++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < hs; i++) {
                    const size_t src = (size_t)n * 3 * C, dst = (size_t)n * W;
                    folded[dst + h * hs + i] = dwide[src + h * hs + i];
                    folded[dst + C + (h / G) * hs + i] += dwide[src + C + h * hs + i];
                    folded[dst + C + (NKV + h / G) * hs + i] += dwide[src + 2 * C + h * hs + i];
                }
        EXPECT_LE(ref::rel_error(dqkv, folded), 1e-13) << NKV;
    }
}

TEST(ReferenceFD, RmsNorm) {
    const int N = 5, C = 7;
    for (double eps : {1e-5, 1e-6, 0.3}) {
        Vec x = ref::to_double(ref::random_floats(N * C, 71, -2, 2));
        Vec w = ref::to_double(ref::random_floats(C, 72, 0.5f, 1.5f));
        Vec R = ref::to_double(ref::random_floats(N * C, 73));
        Vec dx, dw;
        ref::rmsnorm_backward(R, x, w, N, C, eps, dx, dw);
        auto fx = [&](const Vec& v) { return ref::dot(ref::rmsnorm_forward(v, w, N, C, eps), R); };
        auto fw = [&](const Vec& v) { return ref::dot(ref::rmsnorm_forward(x, v, N, C, eps), R); };
        double ex = ref::rel_error(dx, ref::finite_diff(fx, x));
        double ew = ref::rel_error(dw, ref::finite_diff(fw, w));
        ref::report("fd rmsnorm dinp/dw eps " + std::to_string(eps), std::max(ex, ew));
        EXPECT_LE(ex, kFdTol);
        EXPECT_LE(ew, kFdTol);
        // With w = 1 each output row's mean square is ms / (ms + eps).
        Vec ones(C, 1.0), rstd;
        Vec y = ref::rmsnorm_forward(x, ones, N, C, eps, &rstd);
        for (int n = 0; n < N; n++) {
            double ms = 0, my = 0;
            for (int c = 0; c < C; c++) {
                ms += x[n * C + c] * x[n * C + c] / C;
                my += y[n * C + c] * y[n * C + c] / C;
            }
            EXPECT_NEAR(my, ms / (ms + eps), 1e-12);
            EXPECT_NEAR(rstd[n], 1.0 / std::sqrt(ms + eps), 1e-12);
        }
    }
}

TEST(ReferenceFD, Rope) {
    const int B = 2, T = 3, NH = 4, NKV = 2, hs = 6, pos0 = 5, max_pos = 9;
    const int W = (NH + 2 * NKV) * hs;
    Vec cs, sn;
    ref::rope_tables(max_pos, hs, 10000.0, cs, sn);
    Vec x = ref::to_double(ref::random_floats((size_t)B * T * W, 81, -2, 2));
    Vec R = ref::to_double(ref::random_floats((size_t)B * T * W, 82));
    Vec dx = ref::rope_backward(R, cs, sn, B, T, NH, NKV, hs, pos0);
    auto f = [&](const Vec& v) {
        return ref::dot(ref::rope_forward(v, cs, sn, B, T, NH, NKV, hs, pos0), R);
    };
    double e = ref::rel_error(dx, ref::finite_diff(f, x));
    ref::report("fd rope dqkv", e);
    EXPECT_LE(e, kFdTol);
    // V passes through, forward and backward.
    Vec y = ref::rope_forward(x, cs, sn, B, T, NH, NKV, hs, pos0);
    for (int n = 0; n < B * T; n++)
        for (int c = (NH + NKV) * hs; c < W; c++) {
            EXPECT_EQ(y[(size_t)n * W + c], x[(size_t)n * W + c]);
            EXPECT_EQ(dx[(size_t)n * W + c], R[(size_t)n * W + c]);
        }
    // Position 0 is the identity; the rotation keeps each head's norm.
    Vec y0 = ref::rope_forward(x, cs, sn, B, 1, NH, NKV, hs, 0);
    for (int c = 0; c < W; c++) EXPECT_NEAR(y0[c], x[c], 1e-15);
    for (int hd = 0; hd < NH + NKV; hd++) {
        double a = 0, b = 0;
        for (int i = 0; i < hs; i++) {
            a += x[hd * hs + i] * x[hd * hs + i];
            b += y[hd * hs + i] * y[hd * hs + i];
        }
        EXPECT_NEAR(a, b, 1e-12);
    }
    // What makes it a *relative* position encoding: <rope(q, p1), rope(k, p2)> depends on
    // p1 − p2 only.
    Vec q(x.begin(), x.begin() + hs), k(x.begin() + hs, x.begin() + 2 * hs);
    const int half = hs / 2;
    auto score = [&](int p1, int p2) {
        return ref::dot(ref::rope_head(q, &cs[p1 * half], &sn[p1 * half], hs),
                        ref::rope_head(k, &cs[p2 * half], &sn[p2 * half], hs));
    };
    EXPECT_NEAR(score(3, 1), score(8, 6), 1e-12);
    EXPECT_NEAR(score(2, 2), score(7, 7), 1e-12);
    // Spot values: HF apply_rotary_pos_emb (rotate_half, inv_freq = 1/10000^(2i/hs)) on
    // x = [1, 2, 3, 4] at position 3, computed with torch in double.
    Vec c4, s4;
    ref::rope_tables(4, 4, 10000.0, c4, s4);
    Vec spot = ref::rope_head({1, 2, 3, 4}, &c4[3 * 2], &s4[3 * 2], 4);
    const double want[4] = {-1.413352520780047, 1.8791180666879925, -2.828857481741469,
                            4.058191135400942};
    for (int i = 0; i < 4; i++) EXPECT_NEAR(spot[i], want[i], 1e-14) << i;
}

TEST(ReferenceFD, Swiglu) {
    const int N = 3, F = 5;
    Vec x = ref::to_double(ref::random_floats((size_t)N * 2 * F, 91, -4, 4));
    Vec R = ref::to_double(ref::random_floats((size_t)N * F, 92));
    Vec dx = ref::swiglu_backward(R, x, N, F);
    auto f = [&](const Vec& v) { return ref::dot(ref::swiglu_forward(v, N, F), R); };
    double e = ref::rel_error(dx, ref::finite_diff(f, x));
    ref::report("fd swiglu dinp", e);
    EXPECT_LE(e, kFdTol);
    // silu(1) = 1/(1 + e^-1), silu(-2) = -2/(1 + e^2); out = silu(gate) * up.
    EXPECT_NEAR(ref::silu(1.0), 0.7310585786300049, 1e-15);
    EXPECT_NEAR(ref::silu(-2.0), -0.2384058440442351, 1e-15);
    Vec out = ref::swiglu_forward({1.0, -2.0, 3.0, 0.5}, 1, 2);
    EXPECT_NEAR(out[0], 0.7310585786300049 * 3.0, 1e-15);
    EXPECT_NEAR(out[1], -0.2384058440442351 * 0.5, 1e-15);
}

TEST(ReferenceFD, EncoderWithoutPositions) {
    const int B = 2, T = 3, C = 4, V = 3;
    std::vector<int32_t> in = ref::random_ints(B * T, 65, V);
    Vec wte = ref::to_double(ref::random_floats(V * C, 66));
    Vec out = ref::encoder_forward(in, wte, Vec{}, B, T, C);
    for (int n = 0; n < B * T; n++)
        for (int c = 0; c < C; c++) EXPECT_EQ(out[(size_t)n * C + c], wte[(size_t)in[n] * C + c]);
}

}  // namespace
