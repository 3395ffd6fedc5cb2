// Each CPU op, forward and backward, against the double reference (reference_ops.h), at
// fp32 tolerance ‖got − ref‖/‖ref‖ <= 1e-5, on seeded random inputs and shapes that are
// multiples of nothing. Accumulate-vs-overwrite conventions of backend.h are checked by
// pre-filling outputs with random values. Runs for 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend/backend.h"
#include "core/error.h"
#include "cpu/reference_ops.h"

namespace {

using ref::Vec;
using trt::WeightLayout;
constexpr double kTol = 1e-5;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

class CpuOps : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override { be = trt::make_cpu_backend(GetParam()); }
    std::string tag(const std::string& op) const {
        return op + " (threads=" + std::to_string(GetParam()) + ")";
    }
    std::unique_ptr<trt::Backend> be;
};

// got - pre, element by element (what an accumulating op added).
Vec added(const std::vector<float>& got, const std::vector<float>& pre) {
    Vec d(got.size());
    for (size_t i = 0; i < got.size(); i++) d[i] = (double)got[i] - (double)pre[i];
    return d;
}

// ‖got − (pre + want)‖ / ‖want‖: the accumulated result, judged against the increment.
double accum_error(const std::vector<float>& got, const std::vector<float>& pre, const Vec& want) {
    Vec expect(want.size());
    for (size_t i = 0; i < want.size(); i++) expect[i] = (double)pre[i] + want[i];
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); i++) {
        if (std::isnan(got[i])) return INFINITY;
        num += (got[i] - expect[i]) * (got[i] - expect[i]);
        den += want[i] * want[i];
    }
    return std::sqrt(num / den);
}

TEST_P(CpuOps, Encoder) {
    const int B = 2, T = 7, C = 12, V = 5;  // V < B*T: tokens repeat
    auto in = ref::random_ints(B * T, 101, V);
    auto wte = ref::random_floats(V * C, 102), wpe = ref::random_floats(9 * C, 103);  // wpe has >= T rows
    std::vector<float> out(B * T * C, kNaN);
    be->encoder_forward(out.data(), in.data(), wte.data(), wpe.data(), B, T, C);
    Vec want = ref::encoder_forward(in, ref::to_double(wte), ref::to_double(wpe), B, T, C);
    double ef = ref::rel_error(out, want);
    EXPECT_LE(ef, 1e-7);  // one float add: exact up to rounding

    auto dout = ref::random_floats(B * T * C, 104);
    auto dwte = ref::random_floats(V * C, 105), dwpe = ref::random_floats(9 * C, 106);
    const auto dwte0 = dwte, dwpe0 = dwpe;
    be->encoder_backward(dwte.data(), dwpe.data(), dout.data(), in.data(), B, T, C);
    Vec rdwte, rdwpe;
    ref::encoder_backward(ref::to_double(dout), in, B, T, C, V, rdwte, rdwpe);
    rdwpe.resize(9 * C, 0.0);  // rows >= T untouched
    double eb = std::max(accum_error(dwte, dwte0, rdwte), accum_error(dwpe, dwpe0, rdwpe));
    for (int i = T * C; i < 9 * C; i++) EXPECT_EQ(dwpe[i], dwpe0[i]);
    ref::report(tag("encoder fwd"), ef);
    ref::report(tag("encoder bwd (+=)"), eb);
    EXPECT_LE(eb, kTol);
}

TEST_P(CpuOps, LayerNorm) {
    for (auto [N, C] : {std::pair{14, 12}, std::pair{33, 385}}) {
        auto x = ref::random_floats(N * C, 201, -2, 3), w = ref::random_floats(C, 202, 0.5f, 1.5f),
             b = ref::random_floats(C, 203);
        std::vector<float> out(N * C, kNaN), mean(N, kNaN), rstd(N, kNaN);
        be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
        Vec rmean, rrstd;
        Vec want = ref::layernorm_forward(ref::to_double(x), ref::to_double(w), ref::to_double(b), N,
                                          C, &rmean, &rrstd);
        double ef = std::max({ref::rel_error(out, want), ref::rel_error(mean, rmean),
                              ref::rel_error(rstd, rrstd)});
        EXPECT_LE(ef, kTol);

        auto dout = ref::random_floats(N * C, 204);
        auto dx = ref::random_floats(N * C, 205), dw = ref::random_floats(C, 206),
             db = ref::random_floats(C, 207);
        const auto dx0 = dx, dw0 = dw, db0 = db;
        be->layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                               mean.data(), rstd.data(), N, C);
        Vec rdx, rdw, rdb;
        ref::layernorm_backward(ref::to_double(dout), ref::to_double(x), ref::to_double(w), N, C,
                                rdx, rdw, rdb);
        double eb = std::max({accum_error(dx, dx0, rdx), accum_error(dw, dw0, rdw),
                              accum_error(db, db0, rdb)});
        std::string shape = " N" + std::to_string(N) + " C" + std::to_string(C);
        ref::report(tag("layernorm fwd" + shape), ef);
        ref::report(tag("layernorm bwd (all +=)" + shape), eb);
        EXPECT_LE(eb, kTol);
    }
}

struct MatmulCase {
    int N, K, M;
};

TEST_P(CpuOps, Matmul) {
    for (auto c : {MatmulCase{14, 12, 36}, MatmulCase{37, 29, 19}, MatmulCase{130, 67, 201}})
        for (auto layout : {WeightLayout::InOut, WeightLayout::OutIn})
            for (bool with_bias : {true, false}) {
                const int N = c.N, K = c.K, M = c.M;
                std::string name = std::string(layout == WeightLayout::InOut ? "InOut" : "OutIn") +
                                   (with_bias ? "+bias" : "") + " " + std::to_string(N) + "x" +
                                   std::to_string(K) + "x" + std::to_string(M);
                auto x = ref::random_floats(N * K, 301), W = ref::random_floats(K * M, 302),
                     bias = ref::random_floats(M, 303);
                std::vector<float> out(N * M, kNaN);
                be->matmul_forward(out.data(), x.data(), W.data(), with_bias ? bias.data() : nullptr,
                                   N, K, M, layout);
                Vec rbias = ref::to_double(bias);
                Vec want = ref::matmul_forward(ref::to_double(x), ref::to_double(W),
                                               with_bias ? &rbias : nullptr, N, K, M, layout);
                double ef = ref::rel_error(out, want);
                EXPECT_LE(ef, kTol) << name;

                auto dout = ref::random_floats(N * M, 304);
                std::vector<float> dx(N * K, kNaN);  // overwritten: NaN must not survive
                auto dW = ref::random_floats(K * M, 305), db = ref::random_floats(M, 306);
                const auto dW0 = dW, db0 = db;
                be->matmul_backward(dx.data(), dW.data(), with_bias ? db.data() : nullptr,
                                    dout.data(), x.data(), W.data(), N, K, M, layout);
                Vec rdx, rdW, rdb;
                ref::matmul_backward(ref::to_double(dout), ref::to_double(x), ref::to_double(W), N,
                                     K, M, layout, rdx, rdW, rdb);
                double eb = std::max(ref::rel_error(dx, rdx), accum_error(dW, dW0, rdW));
                if (with_bias) eb = std::max(eb, accum_error(db, db0, rdb));
                else for (int i = 0; i < M; i++) EXPECT_EQ(db[i], db0[i]);
                ref::report(tag("matmul fwd " + name), ef);
                ref::report(tag("matmul bwd " + name), eb);
                EXPECT_LE(eb, kTol) << name;

                // dinp == nullptr: only the parameter gradients, same values as before.
                auto dW2 = dW0;
                be->matmul_backward(nullptr, dW2.data(), nullptr, dout.data(), x.data(), W.data(),
                                    N, K, M, layout);
                EXPECT_LE(accum_error(dW2, dW0, rdW), kTol) << name;
            }
}

struct AttnCase {
    int B, T, C, NH;
};

TEST_P(CpuOps, Attention) {
    for (auto c : {AttnCase{2, 7, 12, 3}, AttnCase{1, 1, 8, 2}, AttnCase{3, 45, 40, 5}}) {
        const int B = c.B, T = c.T, C = c.C, NH = c.NH;
        std::string shape = " B" + std::to_string(B) + " T" + std::to_string(T) + " C" +
                            std::to_string(C) + " NH" + std::to_string(NH);
        auto qkv = ref::random_floats((size_t)B * T * 3 * C, 401, -2, 2);
        std::vector<float> out((size_t)B * T * C, kNaN);
        std::vector<float> saved(be->attention_saved_floats(B, T, C, NH, NH), kNaN);
        be->attention_forward(out.data(), saved.data(), qkv.data(), B, T, C, NH, NH);
        Vec att;
        Vec want = ref::attention_forward(ref::to_double(qkv), B, T, C, NH, NH, &att);
        double ef = ref::rel_error(out, want);
        EXPECT_LE(ef, kTol) << shape;
        if (saved.size() == att.size()) {  // the CPU backend saves the probabilities
            EXPECT_LE(ref::rel_error(saved, att), kTol) << shape;
        }

        auto dout = ref::random_floats((size_t)B * T * C, 402);
        std::vector<float> dqkv(qkv.size(), kNaN);  // overwritten: NaN must not survive
        std::vector<float> scratch(be->attention_scratch_floats(B, T, C, NH, NH), kNaN);
        be->attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), saved.data(),
                               B, T, C, NH, NH);
        Vec rdqkv = ref::attention_backward(ref::to_double(dout), ref::to_double(qkv), B, T, C, NH, NH);
        double eb = ref::rel_error(dqkv, rdqkv);
        ref::report(tag("attention fwd" + shape), ef);
        ref::report(tag("attention bwd" + shape), eb);
        EXPECT_LE(eb, kTol) << shape;
    }
}

TEST_P(CpuOps, Gelu) {
    const size_t n = 1237;
    auto x = ref::random_floats(n, 501, -5, 5), dout = ref::random_floats(n, 502);
    std::vector<float> out(n, kNaN), dx(n, kNaN);
    be->gelu_forward(out.data(), x.data(), n);
    be->gelu_backward(dx.data(), x.data(), dout.data(), n);
    Vec want(n), rdx(n);
    for (size_t i = 0; i < n; i++) {
        want[i] = ref::gelu(x[i]);
        rdx[i] = ref::gelu_grad(x[i]) * dout[i];
    }
    double ef = ref::rel_error(out, want), eb = ref::rel_error(dx, rdx);
    ref::report(tag("gelu fwd"), ef);
    ref::report(tag("gelu bwd (overwrite)"), eb);
    EXPECT_LE(ef, kTol);
    EXPECT_LE(eb, kTol);
}

TEST_P(CpuOps, ResidualAndAddInplace) {
    const size_t n = 1001;
    auto a = ref::random_floats(n, 601), b = ref::random_floats(n, 602);
    std::vector<float> out(n, kNaN), dst = a;
    be->residual_forward(out.data(), a.data(), b.data(), n);
    be->add_inplace(dst.data(), b.data(), n);
    for (size_t i = 0; i < n; i++) {
        EXPECT_EQ(out[i], a[i] + b[i]);  // a single float add is exact-by-definition
        EXPECT_EQ(dst[i], a[i] + b[i]);
    }
}

TEST_P(CpuOps, Classifier) {
    for (auto [N, V, Vp] : {std::tuple{14, 11, 16}, std::tuple{9, 257, 320}}) {
        auto logits = ref::random_floats((size_t)N * Vp, 701, -4, 4);
        for (int n = 0; n < N; n++)  // padded columns hold garbage that must be ignored
            for (int i = V; i < Vp; i++) logits[(size_t)n * Vp + i] = 1e4f;
        auto tg = ref::random_ints(N, 702, V);
        const float dloss = 1.0f / N;
        Vec rl, rd;
        ref::classifier(ref::to_double(logits), tg, N, V, Vp, dloss, rl, rd);

        // Loss only: logits untouched.
        auto lg = logits;
        std::vector<float> losses(N, kNaN);
        be->classifier_forward_backward(lg.data(), losses.data(), tg.data(), N, V, Vp, dloss, false);
        EXPECT_EQ(lg, logits);
        double el = ref::rel_error(losses, rl);
        EXPECT_LE(el, kTol);

        // With the gradient: logits overwritten, padded columns exactly 0.
        std::fill(losses.begin(), losses.end(), kNaN);
        be->classifier_forward_backward(lg.data(), losses.data(), tg.data(), N, V, Vp, dloss, true);
        double el2 = ref::rel_error(losses, rl), eg = ref::rel_error(lg, rd);
        for (int n = 0; n < N; n++)
            for (int i = V; i < Vp; i++) EXPECT_EQ(lg[(size_t)n * Vp + i], 0.0f);
        std::string shape = " V" + std::to_string(V) + " Vp" + std::to_string(Vp);
        ref::report(tag("classifier loss" + shape), std::max(el, el2));
        ref::report(tag("classifier dlogits" + shape), eg);
        EXPECT_LE(el2, kTol);
        EXPECT_LE(eg, kTol);
    }
}

TEST_P(CpuOps, ClassifierStableForHugeLogits) {
    const int N = 2, V = 3, Vp = 4;
    std::vector<float> lg = {1000.f, 999.f, 998.f, 0.f, -1000.f, -1001.f, -999.f, 0.f};
    std::vector<int32_t> tg = {0, 2};
    std::vector<float> losses(N);
    be->classifier_forward_backward(lg.data(), losses.data(), tg.data(), N, V, Vp, 1.0f, true);
    const double l0 = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
    EXPECT_NEAR(losses[0], l0, 1e-6);
    EXPECT_NEAR(losses[1], l0, 1e-6);
    for (float g : lg) EXPECT_TRUE(std::isfinite(g));
}

TEST_P(CpuOps, ClassifierRejectsOutOfRangeTargets) {
    const int N = 2, V = 5, Vp = 8;
    auto lg = ref::random_floats(N * Vp, 801);
    std::vector<float> losses(N);
    for (int32_t bad : {5, -1, 7}) {
        std::vector<int32_t> tg = {1, bad};
        try {
            be->classifier_forward_backward(lg.data(), losses.data(), tg.data(), N, V, Vp, 1.0f, true);
            ADD_FAILURE() << "target " << bad << " accepted";
        } catch (const trt::Error& e) {
            EXPECT_EQ(e.status(), trt::Status::Internal);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuOps, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "t" + std::to_string(info.param); });

}  // namespace
