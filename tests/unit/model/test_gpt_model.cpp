// The GPT orchestration: backward agrees with finite differences of forward (through every
// op and the residual stream), and gradients accumulate across micro-batches.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/gpt.h"
#include "model/gpt_weights.h"
#include "runtime/optimizer.h"

using namespace trt;

namespace {

struct Fixture {
    GptShape shape{9, 6, 2, 2, 8};
    int B = 2, T = 5;
    std::unique_ptr<Backend> be = make_cpu_backend(1);
    Gpt model{*be, shape, B, T};
    std::vector<int32_t> inputs, targets;

    Fixture() {
        std::mt19937 rng(3);
        std::vector<float> p(model.table().total());
        init_gpt2_random(model.table(), 11, p.data());
        // Non-trivial LayerNorm params and biases so every gradient path is exercised.
        std::normal_distribution<float> n(0.0f, 0.1f);
        for (const ParamTensor& t : model.table().tensors())
            if (t.shape.size() == 1)
                for (size_t i = 0; i < t.numel; ++i) p[t.offset + i] += n(rng);
        for (float& x : p) x *= 5.0f;  // larger weights: less softmax saturation noise
        std::copy(p.begin(), p.end(), model.params());
        std::uniform_int_distribution<int> tok(0, shape.V - 1);
        for (int i = 0; i < B * T; ++i) {
            inputs.push_back(tok(rng));
            targets.push_back(tok(rng));
        }
    }
    double loss() {
        model.forward(inputs.data(), targets.data(), B, T);
        return model.mean_loss(B, T);
    }
};

}  // namespace

TEST(GptModel, BackwardMatchesDirectionalFiniteDifferences) {
    Fixture f;
    const size_t n = f.model.table().total();
    f.model.zero_grads();
    f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T,
                             1.0f / static_cast<float>(f.B * f.T));
    const std::vector<float> grad(f.model.grads(), f.model.grads() + n);
    const std::vector<float> base(f.model.params(), f.model.params() + n);
    std::mt19937 rng(5);
    std::normal_distribution<double> dist(0.0, 1.0);
    for (int trial = 0; trial < 4; ++trial) {
        std::vector<double> d(n);
        double dn = 0;
        for (double& x : d) { x = dist(rng); dn += x * x; }
        dn = std::sqrt(dn);
        double analytic = 0;
        for (size_t i = 0; i < n; ++i) { d[i] /= dn; analytic += d[i] * grad[i]; }
        const double h = 1e-2;
        auto at = [&](double s) {
            for (size_t i = 0; i < n; ++i) f.model.params()[i] = float(base[i] + s * d[i]);
            return f.loss();
        };
        const double numeric = (at(h) - at(-h)) / (2 * h);
        EXPECT_NEAR(analytic, numeric, 2e-3 * std::fabs(numeric) + 2e-4)
            << "trial " << trial << ": analytic " << analytic << " numeric " << numeric;
    }
    std::copy(base.begin(), base.end(), f.model.params());
}

TEST(GptModel, GradientsAccumulateOverMicroBatches) {
    Fixture f;
    const size_t n = f.model.table().total();
    const float scale = 0.5f / static_cast<float>(f.B * f.T);
    f.model.zero_grads();
    f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T, scale);
    const std::vector<float> once(f.model.grads(), f.model.grads() + n);
    f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T, scale);
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(f.model.grads()[i], 2 * once[i], 1e-6f + 1e-5f * std::fabs(once[i]));
    f.model.zero_grads();
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(f.model.grads()[i], 0.0f);
}

TEST(GptModel, SmallerMicroBatchThanAllocatedIsConsistent) {
    Fixture f;
    // Row 0 alone must give the same per-row loss as row 0 inside the full batch.
    f.model.forward(f.inputs.data(), f.targets.data(), 1, f.T);
    const double one = f.model.mean_loss(1, f.T);
    std::vector<int32_t> in2(f.inputs), tg2(f.targets);
    f.model.forward(in2.data(), tg2.data(), f.B, f.T);
    const int Vp = f.model.table().padded_vocab();  // logits rows are Vp wide
    std::vector<float> logits(f.model.logits(), f.model.logits() + f.B * f.T * Vp);
    double row0 = 0;
    for (int t = 0; t < f.T; ++t) {
        const float* l = logits.data() + t * Vp;
        double mx = l[0];
        for (int v = 1; v < f.shape.V; ++v) mx = std::max(mx, double(l[v]));
        double z = 0;
        for (int v = 0; v < f.shape.V; ++v) z += std::exp(l[v] - mx);
        row0 += std::log(z) + mx - l[f.targets[t]];
    }
    EXPECT_NEAR(one, row0 / f.T, 1e-5);
}

// The vocabulary is padded (9 -> 128 here, 50257 -> 50304 for GPT-2) for aligned classifier
// matmuls: the padding rows of wte get no gradient, so AdamW leaves them at exactly 0, and the
// padding logits carry no gradient.
TEST(GptModel, VocabPaddingRowsStayZero) {
    Fixture f;
    const ParamTable& t = f.model.table();
    ASSERT_EQ(t.padded_vocab(), 128);
    ASSERT_GT(t.padding_size(), 0u);
    const size_t p0 = t.padding_begin(), p1 = p0 + t.padding_size();
    for (size_t i = p0; i < p1; ++i) ASSERT_EQ(f.model.params()[i], 0.0f) << i;
    OptimConfig o;
    o.lr = 0.1;
    o.weight_decay = 0.5;
    AdamW adam(*f.be, t, o, false);
    StepScalars sc;
    for (int64_t step = 1; step <= 3; ++step) {
        f.model.zero_grads();
        f.model.forward_backward(f.inputs.data(), f.targets.data(), f.B, f.T,
                                 1.0f / static_cast<float>(f.B * f.T));
        for (size_t i = p0; i < p1; ++i) ASSERT_EQ(f.model.grads()[i], 0.0f) << i;
        // dlogits: the padding columns of every row are 0.
        const int V = f.shape.V, Vp = t.padded_vocab();
        for (int n = 0; n < f.B * f.T; ++n)
            for (int v = V; v < Vp; ++v) ASSERT_EQ(f.model.logits()[n * Vp + v], 0.0f);
        f.be->begin_step(&sc, 0.1f, step);
        adam.update(f.model.params(), f.model.grads(), &sc);
        ASSERT_EQ(sc.nonfinite, 0);
    }
    for (size_t i = p0; i < p1; ++i) ASSERT_EQ(f.model.params()[i], 0.0f) << i;
    // The real parameters did move.
    EXPECT_NE(f.model.params()[0], 0.0f);
}
