// Learning-rate schedules and the AdamW optimizer (clip, decay convention) vs closed form.
#include <cstring>
#include <limits>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "model/param_table.h"
#include "runtime/optimizer.h"
#include "runtime/schedule.h"

using namespace trt;

namespace {
OptimConfig optim(Schedule s, int64_t warmup, double lr = 1e-3, double min_lr = 1e-4) {
    OptimConfig o;
    o.schedule = s;
    o.warmup_steps = warmup;
    o.lr = lr;
    o.min_lr = min_lr;
    return o;
}
}  // namespace

TEST(Schedule, WarmupIsLinearFromLrOverWarmup) {
    const OptimConfig o = optim(Schedule::Cosine, 4);
    EXPECT_DOUBLE_EQ(scheduled_lr(o, 100, 1), 0.25e-3);
    EXPECT_DOUBLE_EQ(scheduled_lr(o, 100, 2), 0.5e-3);
    EXPECT_DOUBLE_EQ(scheduled_lr(o, 100, 4), 1e-3);
}

TEST(Schedule, CosineDecaysFromLrToMinLr) {
    const OptimConfig o = optim(Schedule::Cosine, 10);
    // step 10 ends warmup at lr; p = (s - 10) / 90.
    EXPECT_DOUBLE_EQ(scheduled_lr(o, 100, 55), 1e-4 + 0.5 * 9e-4 * (1 + std::cos(M_PI * 0.5)));
    EXPECT_NEAR(scheduled_lr(o, 100, 55), 5.5e-4, 1e-15);
    EXPECT_NEAR(scheduled_lr(o, 100, 100), 1e-4, 1e-15);
    EXPECT_NEAR(scheduled_lr(o, 100, 250), 1e-4, 1e-15);  // past the end: clamped
    EXPECT_NEAR(scheduled_lr(o, 100, 11), 1e-4 + 0.5 * 9e-4 * (1 + std::cos(M_PI / 90)), 1e-15);
}

TEST(Schedule, LinearAndConstant) {
    EXPECT_NEAR(scheduled_lr(optim(Schedule::Linear, 0), 10, 5), 1e-3 - 9e-4 * 0.5, 1e-15);
    EXPECT_NEAR(scheduled_lr(optim(Schedule::Linear, 0), 10, 10), 1e-4, 1e-15);
    EXPECT_DOUBLE_EQ(scheduled_lr(optim(Schedule::Constant, 0), 10, 7), 1e-3);
    EXPECT_DOUBLE_EQ(scheduled_lr(optim(Schedule::Constant, 2), 10, 1), 0.5e-3);
}

// Closed-form torch.optim.AdamW step in double for one element.
struct RefAdam {
    double p, m = 0, v = 0;
};

void ref_step(RefAdam& r, double g, double lr, double b1, double b2, double eps, double wd,
              int64_t t) {
    r.p *= 1 - lr * wd;
    r.m = b1 * r.m + (1 - b1) * g;
    r.v = b2 * r.v + (1 - b2) * g * g;
    const double denom = std::sqrt(r.v) / std::sqrt(1 - std::pow(b2, t)) + eps;
    r.p -= lr / (1 - std::pow(b1, t)) * r.m / denom;
}

void check_adamw(double grad_clip, bool expect_clipped, bool fused = true) {
    auto be = make_cpu_backend(1);
    ParamTable table(gpt2_spec(5, 3, 1, 1, 4));
    OptimConfig o;
    o.lr = 1e-2;
    o.beta1 = 0.8;
    o.beta2 = 0.9;
    o.eps = 1e-6;
    o.weight_decay = 0.3;
    o.grad_clip = grad_clip;
    AdamW adam(*be, table, o, false, fused);
    const size_t n = table.total();
    auto* sc = static_cast<StepScalars*>(be->alloc(sizeof(StepScalars)));
    *sc = StepScalars{};
    float* params = static_cast<float*>(be->alloc(n * 4));
    float* grads = static_cast<float*>(be->alloc(n * 4));
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<RefAdam> ref(n);
    for (size_t i = 0; i < n; ++i) ref[i].p = params[i] = dist(rng);
    for (int64_t t = 1; t <= 3; ++t) {
        double sq = 0;
        for (size_t i = 0; i < n; ++i) {
            grads[i] = 0.1f * dist(rng);
            sq += double(grads[i]) * grads[i];
        }
        const double norm = std::sqrt(sq);
        const double lr = 1e-2 * t;
        trt::optimizer_step_of(*be).begin_step(sc, static_cast<float>(lr), t);
        adam.update(params, grads, sc);
        EXPECT_NEAR(sc->grad_norm, norm, 1e-6 * norm);
        const double scale = grad_clip > 0 && grad_clip / (norm + 1e-6) < 1
                                 ? grad_clip / (norm + 1e-6) : 1.0;
        EXPECT_NEAR(sc->clip_scale, scale, 1e-6 * scale);  // applied as a float
        EXPECT_EQ(sc->clip_scale < 1.0f, expect_clipped);
        EXPECT_EQ(sc->nonfinite, 0);
        for (const ParamTensor& pt : table.tensors())
            for (size_t i = pt.offset; i < pt.offset + pt.numel; ++i)
                ref_step(ref[i], grads[i] * scale, lr, 0.8, 0.9, 1e-6, pt.decay ? 0.3 : 0.0, t);
        // wte's padding rows are optimised like a bias (no decay). In a model their gradient
        // is 0, so they stay 0; here they get random gradients to show they are covered.
        const ParamTensor& wte = table.at(Slot::TokenEmbedding);
        for (size_t i = wte.offset + wte.numel; i < wte.offset + wte.numel + wte.padding; ++i)
            ref_step(ref[i], grads[i] * scale, lr, 0.8, 0.9, 1e-6, 0.0, t);
    }
    double err = 0, norm = 0;
    for (size_t i = 0; i < n; ++i) {
        err += (params[i] - ref[i].p) * (params[i] - ref[i].p);
        norm += ref[i].p * ref[i].p;
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-6);
    be->free(params);
    be->free(grads);
    be->free(sc);
}

TEST(AdamW, MatchesClosedFormWithClipping) { check_adamw(0.5, true); }
TEST(AdamW, MatchesClosedFormBelowClipThreshold) { check_adamw(100.0, false); }
TEST(AdamW, ClipZeroDisablesClipping) { check_adamw(0.0, false); }
TEST(AdamW, UnfusedMatchesClosedFormWithClipping) { check_adamw(0.5, true, false); }

// accel.fused_adamw = false: one adamw_step per tensor gives the fused pass's bits, and a
// non-finite gradient skips every tensor's update.
TEST(AdamW, UnfusedIsBitwiseTheFusedPass) {
    auto be = make_cpu_backend(2);
    ParamTable table(gpt2_spec(7, 5, 2, 1, 6));
    OptimConfig o;
    o.weight_decay = 0.2;
    o.grad_clip = 0.3;
    AdamW fused(*be, table, o, false, true), unfused(*be, table, o, false, false);
    const size_t n = table.total();
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> p1(n), p2, grads(n);
    for (float& x : p1) x = dist(rng);
    p2 = p1;
    StepScalars s1, s2;
    for (int64_t t = 1; t <= 4; ++t) {
        for (float& g : grads) g = 0.05f * dist(rng);
        if (t == 3) grads[n - 1] = std::numeric_limits<float>::quiet_NaN();
        trt::optimizer_step_of(*be).begin_step(&s1, 1e-2f * t, t);
        trt::optimizer_step_of(*be).begin_step(&s2, 1e-2f * t, t);
        fused.update(p1.data(), grads.data(), &s1);
        unfused.update(p2.data(), grads.data(), &s2);
        EXPECT_EQ(s1.nonfinite, s2.nonfinite);
        EXPECT_EQ(std::memcmp(p1.data(), p2.data(), n * 4), 0) << "step " << t;
        EXPECT_EQ(std::memcmp(fused.m(), unfused.m(), n * 4), 0) << "step " << t;
        EXPECT_EQ(std::memcmp(fused.v(), unfused.v(), n * 4), 0) << "step " << t;
    }
    EXPECT_EQ(s2.skipped_steps, 1);
}

// GradScaler semantics on every backend: a non-finite gradient leaves the weights and the
// moments bit-identical, and is counted.
TEST(AdamW, NonFiniteGradientSkipsTheUpdate) {
    auto be = make_cpu_backend(1);
    ParamTable table(gpt2_spec(5, 3, 1, 1, 4));
    OptimConfig o;
    AdamW adam(*be, table, o, false);
    const size_t n = table.total();
    std::vector<float> params(n), grads(n, 0.01f);
    for (size_t i = 0; i < n; ++i) params[i] = 0.001f * static_cast<float>(i);
    StepScalars sc;
    trt::optimizer_step_of(*be).begin_step(&sc, 0.1f, 1);
    adam.update(params.data(), grads.data(), &sc);  // one good step: moments non-zero
    const std::vector<float> p0 = params;
    std::vector<float> m0(adam.m(), adam.m() + n), v0(adam.v(), adam.v() + n);
    grads[n / 2] = std::numeric_limits<float>::infinity();
    trt::optimizer_step_of(*be).begin_step(&sc, 0.1f, 2);
    adam.update(params.data(), grads.data(), &sc);
    EXPECT_EQ(sc.nonfinite, 1);
    EXPECT_EQ(sc.skipped_steps, 1);
    EXPECT_EQ(std::memcmp(params.data(), p0.data(), n * 4), 0);
    EXPECT_EQ(std::memcmp(adam.m(), m0.data(), n * 4), 0);
    EXPECT_EQ(std::memcmp(adam.v(), v0.data(), n * 4), 0);
}

TEST(AdamW, BiasesAndLayerNormAreNotDecayed) {
    auto be = make_cpu_backend(1);
    ParamTable table(gpt2_spec(5, 3, 1, 1, 4));
    OptimConfig o;
    o.weight_decay = 0.5;
    o.lr = 0.1;
    o.grad_clip = 0;
    AdamW adam(*be, table, o, false);
    std::vector<float> params(table.total(), 1.0f), grads(table.total(), 0.0f);
    StepScalars sc;
    trt::optimizer_step_of(*be).begin_step(&sc, 0.1f, 1);
    adam.update(params.data(), grads.data(), &sc);  // zero grads: only decay moves params
    for (const ParamTensor& pt : table.tensors())
        EXPECT_FLOAT_EQ(params[pt.offset], pt.decay ? 1.0f - 0.1f * 0.5f : 1.0f) << pt.name;
}
