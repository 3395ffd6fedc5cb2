// The CPU backend's optimizer-step ops on backend-resident scalars (backend.h "the optimizer
// step on backend-resident scalars") and its batch ops, against what backend.h documents:
//   begin_step        sets lr/step, clears the outputs, keeps loss_scale/skipped/good;
//   accumulate_loss   a double sum (rel <= 1e-12 against a long double sum), two calls add;
//   grad_norm_clip    norm against a long double reference (rel <= 1e-12), clip_scale =
//                     max_norm/(norm + 1e-6) (rel <= 1e-6, it is a float), the loss scale
//                     divides, max_norm 0 never clips, inf/nan -> nonfinite;
//   adamw_step        bitwise equal to cpu::adamw_update called per segment with the same
//                     hyper-parameters (grad_scale = clip_scale / loss_scale); does nothing
//                     when nonfinite (params/m/v bit-identical);
//   end_step          skipped/good counters, dynamic loss scale growth and backoff;
//   read_scalars_*    round trip through the slots, snapshot semantics;
//   load_rows, sample_window, sample_random (against an independent Philox reference;
//   tests/unit/model/test_device_sampler.cpp holds the comparison with src/data/sampler.h).
// Runs for 1, 2 and 3 threads where the op is parallel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "core/philox.h"
#include "cpu/reference_ops.h"

namespace {

using trt::StepScalars;

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A buffer in backend memory (host memory on the CPU backend, but only reached through the
// Backend interface, as the model does).
struct Mem {
    trt::Backend* be;
    void* p;
    size_t bytes;
    Mem(trt::Backend& b, size_t n_bytes) : be(&b), p(b.alloc(n_bytes, "test")), bytes(n_bytes) {}
    ~Mem() { be->free(p); }
    Mem(const Mem&) = delete;
    Mem& operator=(const Mem&) = delete;
    template <typename T>
    T* as() const { return static_cast<T*>(p); }
};

template <typename T>
void put(trt::Backend& be, const Mem& m, const std::vector<T>& v) {
    ASSERT_LE(v.size() * sizeof(T), m.bytes);
    be.copy_to_device(m.p, v.data(), v.size() * sizeof(T));
}

template <typename T>
std::vector<T> get(trt::Backend& be, const Mem& m, size_t n) {
    std::vector<T> v(n);
    be.synchronize();
    be.copy_to_host(v.data(), m.p, n * sizeof(T));
    return v;
}

StepScalars get_scalars(trt::Backend& be, const Mem& s) {
    StepScalars out;
    be.synchronize();
    be.copy_to_host(&out, s.p, sizeof out);
    return out;
}

void put_scalars(trt::Backend& be, const Mem& s, const StepScalars& v) {
    be.copy_to_device(s.p, &v, sizeof v);
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

long double sum_sq_ld(const std::vector<float>& x) {
    long double s = 0;
    for (float f : x) s += (long double)f * (long double)f;
    return s;
}

// Random values in [lo, hi) that are never exactly zero.
std::vector<float> nonzero(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    auto v = ref::random_floats(n, seed, lo, hi);
    for (auto& x : v)
        if (x == 0.0f) x = 0.5f * hi;
    return v;
}

class CpuStepOps : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override { be = trt::make_cpu_backend(GetParam()); }
    std::string tag(const std::string& what) const {
        return what + " (threads=" + std::to_string(GetParam()) + ")";
    }
    std::unique_ptr<trt::Backend> be;
};

// ------------------------------------------------------------------ begin_step

TEST_P(CpuStepOps, BeginStepSetsClearsAndKeeps) {
    Mem s(*be, sizeof(StepScalars));
    StepScalars dirty;
    dirty.lr = 9.0f;
    dirty.loss_scale = 8.0f;
    dirty.step = 77;
    dirty.loss_sum = 3.5;
    dirty.grad_norm = 2.5;
    dirty.clip_scale = 0.25f;
    dirty.nonfinite = 1;
    dirty.skipped_steps = 5;
    dirty.good_steps = 3;
    put_scalars(*be, s, dirty);
    trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 1.5e-3f, 12);
    const StepScalars got = get_scalars(*be, s);
    // Set.
    EXPECT_EQ(got.lr, 1.5e-3f);
    EXPECT_EQ(got.step, 12);
    // Cleared.
    EXPECT_EQ(got.loss_sum, 0.0);
    EXPECT_EQ(got.grad_norm, 0.0);
    EXPECT_EQ(got.clip_scale, 1.0f);
    EXPECT_EQ(got.nonfinite, 0);
    // Kept.
    EXPECT_EQ(got.loss_scale, 8.0f);
    EXPECT_EQ(got.skipped_steps, 5);
    EXPECT_EQ(got.good_steps, 3);
}

// ------------------------------------------------------------------ accumulate_loss

TEST_P(CpuStepOps, AccumulateLossIsADoubleSumAndAdds) {
    const size_t n1 = 10007, n2 = 3;
    auto l1 = nonzero(n1, 1301, 0.5f, 8.0f), l2 = nonzero(n2, 1302, 0.5f, 8.0f);
    Mem s(*be, sizeof(StepScalars)), d1(*be, n1 * 4), d2(*be, n2 * 4);
    put(*be, d1, l1);
    put(*be, d2, l2);
    put_scalars(*be, s, StepScalars{});
    trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 1e-3f, 1);
    trt::optimizer_step_of(*be).accumulate_loss(s.as<StepScalars>(), d1.as<float>(), n1);
    long double want = 0;
    for (float x : l1) want += x;
    const double got1 = get_scalars(*be, s).loss_sum;
    const double e1 = (double)(std::fabs((long double)got1 - want) / want);
    trt::optimizer_step_of(*be).accumulate_loss(s.as<StepScalars>(), d2.as<float>(), n2);
    trt::optimizer_step_of(*be).accumulate_loss(s.as<StepScalars>(), d2.as<float>(),
                                                0);  // n = 0 adds nothing
    for (float x : l2) want += x;
    const double got2 = get_scalars(*be, s).loss_sum;
    const double e2 = (double)(std::fabs((long double)got2 - want) / want);
    ref::report(tag("accumulate_loss one call"), e1);
    ref::report(tag("accumulate_loss two calls"), e2);
    EXPECT_LE(e1, 1e-12);  // double accumulation (a float sum would be ~1e-7 off)
    EXPECT_LE(e2, 1e-12);

    // Fixed order: the same call again gives the same bits.
    trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 1e-3f, 2);
    trt::optimizer_step_of(*be).accumulate_loss(s.as<StepScalars>(), d1.as<float>(), n1);
    trt::optimizer_step_of(*be).accumulate_loss(s.as<StepScalars>(), d2.as<float>(), n2);
    const double again = get_scalars(*be, s).loss_sum;
    EXPECT_EQ(0, std::memcmp(&again, &got2, sizeof again));
}

// ------------------------------------------------------------------ grad_norm_clip

TEST_P(CpuStepOps, GradNormClipAgainstDoubleReference) {
    const size_t n = 100003;
    auto g = nonzero(n, 1401, -1.0f, 1.0f);
    const double norm = (double)std::sqrt(sum_sq_ld(g));
    Mem s(*be, sizeof(StepScalars)), dg(*be, n * 4);
    put(*be, dg, g);
    put_scalars(*be, s, StepScalars{});

    struct Case {
        float max_norm;
        bool clips;
    };
    for (Case c : {Case{(float)(0.5 * norm), true}, Case{(float)(10 * norm), false},
                   Case{0.0f, false}}) {
        trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 1e-3f, 1);
        trt::optimizer_step_of(*be).grad_norm_clip(s.as<StepScalars>(), dg.as<float>(), n,
                                                   c.max_norm);
        const StepScalars r = get_scalars(*be, s);
        const double en = std::fabs(r.grad_norm - norm) / norm;
        ref::report(tag("grad_norm max_norm=" + std::to_string(c.max_norm)), en);
        EXPECT_LE(en, 1e-12) << c.max_norm;
        EXPECT_EQ(r.nonfinite, 0);
        if (c.clips) {
            const double want = c.max_norm / (norm + 1e-6);
            EXPECT_LT(r.clip_scale, 1.0f);
            EXPECT_LE(std::fabs(r.clip_scale - want) / want, 1e-6)
                << r.clip_scale << " vs " << want;
        } else {
            EXPECT_EQ(r.clip_scale, 1.0f) << "max_norm " << c.max_norm;
        }
    }
    // max_norm 0 with a huge norm still never clips.
    auto big = g;
    for (auto& x : big) x *= 1000.0f;
    put(*be, dg, big);
    trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 1e-3f, 1);
    trt::optimizer_step_of(*be).grad_norm_clip(s.as<StepScalars>(), dg.as<float>(), n, 0.0f);
    EXPECT_EQ(get_scalars(*be, s).clip_scale, 1.0f);
}

TEST_P(CpuStepOps, GradNormClipDividesByLossScale) {
    const size_t n = 4099;
    auto g = nonzero(n, 1501);
    const double norm = (double)std::sqrt(sum_sq_ld(g));
    auto scaled = g;
    for (auto& x : scaled) x *= 1024.0f;  // exact: a power of two
    Mem s(*be, sizeof(StepScalars)), dg(*be, n * 4);
    put(*be, dg, scaled);
    StepScalars init;
    init.loss_scale = 1024.0f;
    put_scalars(*be, s, init);
    trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 1e-3f, 1);
    const float max_norm = (float)(0.25 * norm);
    trt::optimizer_step_of(*be).grad_norm_clip(s.as<StepScalars>(), dg.as<float>(), n, max_norm);
    const StepScalars r = get_scalars(*be, s);
    EXPECT_LE(std::fabs(r.grad_norm - norm) / norm, 1e-12) << r.grad_norm << " vs " << norm;
    const double want = max_norm / (norm + 1e-6);
    EXPECT_LE(std::fabs(r.clip_scale - want) / want, 1e-6) << r.clip_scale << " vs " << want;
    EXPECT_EQ(r.loss_scale, 1024.0f);  // grad_norm_clip does not touch the scale
}

TEST_P(CpuStepOps, GradNormClipFlagsNonFinite) {
    const size_t n = 1000;
    Mem s(*be, sizeof(StepScalars)), dg(*be, n * 4);
    put_scalars(*be, s, StepScalars{});
    for (float bad : {kInf, -kInf, kNaN}) {
        for (size_t at : {size_t(0), size_t(537), n - 1}) {
            auto g = nonzero(n, 1601);
            g[at] = bad;
            put(*be, dg, g);
            trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 1e-3f, 1);
            trt::optimizer_step_of(*be).grad_norm_clip(s.as<StepScalars>(), dg.as<float>(), n,
                                                       1.0f);
            EXPECT_EQ(get_scalars(*be, s).nonfinite, 1) << bad << " at " << at;
        }
    }
    // Finite values whose squares overflow float but not double: the sum is in double, so
    // the gradient is finite (norm = 1e30 * sqrt(3)).
    auto g = nonzero(n, 1602, -1e-3f, 1e-3f);
    g[10] = g[20] = g[30] = 1e30f;
    put(*be, dg, g);
    trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 1e-3f, 1);
    trt::optimizer_step_of(*be).grad_norm_clip(s.as<StepScalars>(), dg.as<float>(), n, 1.0f);
    const StepScalars r = get_scalars(*be, s);
    EXPECT_EQ(r.nonfinite, 0) << "squares of 1e30 overflow float, not double";
    EXPECT_NEAR(r.grad_norm / (1e30 * std::sqrt(3.0)), 1.0, 1e-6);
}

// ------------------------------------------------------------------ adamw_step

struct Segments {
    std::vector<int64_t> ends;
    std::vector<float> decay;
};

class AdamWStepCase {
public:
    AdamWStepCase(trt::Backend& be, const Segments& seg, uint32_t seed)
        : be_(be), n_(static_cast<size_t>(seg.ends.back())), seg_(seg),
          params(be, n_ * 4), grads(be, n_ * 4), m(be, n_ * 4), v(be, n_ * 4),
          ends(be, seg.ends.size() * 8), decay(be, seg.decay.size() * 4),
          s(be, sizeof(StepScalars)) {
        p0 = nonzero(n_, seed);
        g0 = nonzero(n_, seed + 1, -2.0f, 2.0f);
        m0 = nonzero(n_, seed + 2, -0.1f, 0.1f);
        v0 = nonzero(n_, seed + 3, 1e-4f, 1e-2f);
        put(be, params, p0);
        put(be, grads, g0);
        put(be, m, m0);
        put(be, v, v0);
        put(be, ends, seg.ends);
        put(be, decay, seg.decay);
    }
    trt::ParamSegments segments() const {
        trt::ParamSegments ps;
        ps.ends = ends.as<int64_t>();
        ps.weight_decay = decay.as<float>();
        ps.count = static_cast<int32_t>(seg_.ends.size());
        return ps;
    }
    size_t n() const { return n_; }

    trt::Backend& be_;
    size_t n_;
    Segments seg_;
    Mem params, grads, m, v, ends, decay, s;
    std::vector<float> p0, g0, m0, v0;
};

const trt::AdamWConfig kHp{0.9f, 0.95f, 1e-8f};

TEST_P(CpuStepOps, AdamWStepEqualsAdamWUpdatePerSegmentBitwise) {
    const Segments seg{{7, 1000, 1001, 5003}, {0.1f, 0.0f, 0.05f, 0.2f}};
    for (float loss_scale : {1.0f, 4.0f}) {
        AdamWStepCase a(*be, seg, 1700);
        AdamWStepCase b(*be, seg, 1700);  // same values, for the per-segment updates
        if (loss_scale != 1.0f) {
            auto g = a.g0;
            for (auto& x : g) x *= loss_scale;  // exact: a power of two
            put(*be, a.grads, g);
            put(*be, b.grads, g);
        }
        StepScalars init;
        init.loss_scale = loss_scale;
        put_scalars(*be, a.s, init);
        trt::optimizer_step_of(*be).begin_step(a.s.as<StepScalars>(), 3e-3f, 4);
        const double norm = std::sqrt((double)sum_sq_ld(a.g0));
        trt::optimizer_step_of(*be).grad_norm_clip(a.s.as<StepScalars>(), a.grads.as<float>(),
                                                   a.n(),
                                                   (float)(0.3 * norm));  // clipping active
        const StepScalars sc = get_scalars(*be, a.s);
        ASSERT_LT(sc.clip_scale, 1.0f);
        ASSERT_EQ(sc.nonfinite, 0);
        const auto g_before = get<float>(*be, a.grads, a.n());
        trt::optimizer_step_of(*be).adamw_step(a.params.as<float>(), a.grads.as<float>(),
                                               a.m.as<float>(), a.v.as<float>(), a.n(),
                                               a.segments(), kHp, a.s.as<StepScalars>());

        int64_t begin = 0;
        for (size_t i = 0; i < seg.ends.size(); i++) {
            trt::cpu::AdamWParams p{};
            p.lr = sc.lr;
            p.beta1 = kHp.beta1;
            p.beta2 = kHp.beta2;
            p.eps = kHp.eps;
            p.weight_decay = seg.decay[i];
            p.step = sc.step;
            p.grad_scale = sc.clip_scale / sc.loss_scale;
            const size_t len = static_cast<size_t>(seg.ends[i] - begin);
            trt::cpu::adamw_update(b.params.as<float>() + begin, b.grads.as<float>() + begin,
                                   b.m.as<float>() + begin, b.v.as<float>() + begin, len, p,
                                   GetParam());
            begin = seg.ends[i];
        }
        const std::string what = " loss_scale=" + std::to_string((int)loss_scale);
        EXPECT_TRUE(same_bytes(get<float>(*be, a.params, a.n()), get<float>(*be, b.params, b.n())))
            << "params" << what;
        EXPECT_TRUE(same_bytes(get<float>(*be, a.m, a.n()), get<float>(*be, b.m, b.n())))
            << "m" << what;
        EXPECT_TRUE(same_bytes(get<float>(*be, a.v, a.n()), get<float>(*be, b.v, b.n())))
            << "v" << what;
        EXPECT_TRUE(same_bytes(get<float>(*be, a.grads, a.n()), g_before))
            << "adamw_step wrote its grads" << what;
        // It really updated (the test would pass vacuously otherwise).
        const auto p_after = get<float>(*be, a.params, a.n());
        size_t changed = 0;
        for (size_t i = 0; i < a.n(); i++) changed += p_after[i] != a.p0[i];
        EXPECT_GT(changed, a.n() * 9 / 10) << what;
    }
}

TEST_P(CpuStepOps, AdamWStepDoesNothingWhenNonFinite) {
    const Segments seg{{100, 2000}, {0.0f, 0.1f}};
    AdamWStepCase a(*be, seg, 1800);
    auto g = a.g0;
    g[1234] = kInf;
    put(*be, a.grads, g);
    put_scalars(*be, a.s, StepScalars{});
    trt::optimizer_step_of(*be).begin_step(a.s.as<StepScalars>(), 1e-2f, 3);
    trt::optimizer_step_of(*be).grad_norm_clip(a.s.as<StepScalars>(), a.grads.as<float>(), a.n(),
                                               1.0f);
    trt::optimizer_step_of(*be).adamw_step(a.params.as<float>(), a.grads.as<float>(),
                                           a.m.as<float>(), a.v.as<float>(), a.n(), a.segments(),
                                           kHp, a.s.as<StepScalars>());
    trt::optimizer_step_of(*be).end_step(a.s.as<StepScalars>(), trt::LossScalePolicy{});
    EXPECT_TRUE(same_bytes(get<float>(*be, a.params, a.n()), a.p0));
    EXPECT_TRUE(same_bytes(get<float>(*be, a.m, a.n()), a.m0));
    EXPECT_TRUE(same_bytes(get<float>(*be, a.v, a.n()), a.v0));
    const StepScalars r = get_scalars(*be, a.s);
    EXPECT_EQ(r.nonfinite, 1);
    EXPECT_EQ(r.skipped_steps, 1);
    EXPECT_EQ(r.good_steps, 0);

    // The flag alone (finite grads) is enough: adamw_step reads s->nonfinite.
    AdamWStepCase b(*be, seg, 1900);
    StepScalars flagged;
    flagged.lr = 1e-2f;
    flagged.step = 3;
    flagged.nonfinite = 1;
    put_scalars(*be, b.s, flagged);
    trt::optimizer_step_of(*be).adamw_step(b.params.as<float>(), b.grads.as<float>(),
                                           b.m.as<float>(), b.v.as<float>(), b.n(), b.segments(),
                                           kHp, b.s.as<StepScalars>());
    EXPECT_TRUE(same_bytes(get<float>(*be, b.params, b.n()), b.p0));
    EXPECT_TRUE(same_bytes(get<float>(*be, b.m, b.n()), b.m0));
    EXPECT_TRUE(same_bytes(get<float>(*be, b.v, b.n()), b.v0));
}

// ------------------------------------------------------------------ end_step

// One step whose gradient is finite or not, ended with `policy`; returns the scalars.
StepScalars run_step(trt::Backend& be, const Mem& s, const Mem& finite, const Mem& bad, size_t n,
                     bool ok, const trt::LossScalePolicy& policy, int64_t step) {
    trt::optimizer_step_of(be).begin_step(s.as<StepScalars>(), 1e-3f, step);
    trt::optimizer_step_of(be).grad_norm_clip(s.as<StepScalars>(), (ok ? finite : bad).as<float>(),
                                              n, 1.0f);
    trt::optimizer_step_of(be).end_step(s.as<StepScalars>(), policy);
    return get_scalars(be, s);
}

TEST_P(CpuStepOps, EndStepCountersWithStaticScale) {
    const size_t n = 257;
    Mem s(*be, sizeof(StepScalars)), fin(*be, n * 4), bad(*be, n * 4);
    auto g = nonzero(n, 2001);
    put(*be, fin, g);
    g[100] = kNaN;
    put(*be, bad, g);
    StepScalars init;
    init.loss_scale = 8.0f;
    put_scalars(*be, s, init);
    const trt::LossScalePolicy fixed{};  // dynamic = false
    const bool seq[] = {true, true, true, false, true, false, false, true};
    int64_t skipped = 0;
    int32_t good = 0;
    for (int i = 0; i < 8; i++) {
        const StepScalars r = run_step(*be, s, fin, bad, n, seq[i], fixed, i + 1);
        if (seq[i]) {
            good++;
        } else {
            skipped++;
            good = 0;
        }
        EXPECT_EQ(r.nonfinite, seq[i] ? 0 : 1) << "step " << i + 1;
        EXPECT_EQ(r.skipped_steps, skipped) << "step " << i + 1;
        EXPECT_EQ(r.good_steps, good) << "step " << i + 1;
        EXPECT_EQ(r.loss_scale, 8.0f) << "static scale changed at step " << i + 1;
    }
}

TEST_P(CpuStepOps, EndStepDynamicLossScaleGrowsAndBacksOff) {
    const size_t n = 257;
    Mem s(*be, sizeof(StepScalars)), fin(*be, n * 4), bad(*be, n * 4);
    auto g = nonzero(n, 2101);
    put(*be, fin, g);
    g[0] = kInf;
    put(*be, bad, g);
    StepScalars init;
    init.loss_scale = 1024.0f;
    put_scalars(*be, s, init);
    trt::LossScalePolicy dyn;
    dyn.dynamic = true;
    dyn.growth_factor = 2.0f;
    dyn.backoff_factor = 0.5f;
    dyn.growth_interval = 3;
    // GradScaler: every growth_interval consecutive finite steps the scale grows and the
    // counter restarts; a non-finite step backs off and restarts it.
    struct Want {
        bool ok;
        float scale;
        int32_t good;
        int64_t skipped;
    };
    const Want seq[] = {
        {true, 1024, 1, 0}, {true, 1024, 2, 0}, {true, 2048, 0, 0},  // grows on the 3rd
        {true, 2048, 1, 0}, {false, 1024, 0, 1},                     // backs off
        {false, 512, 0, 2}, {true, 512, 1, 2},  {true, 512, 2, 2},
        {true, 1024, 0, 2}, {true, 1024, 1, 2},
    };
    int64_t step = 1;
    for (const Want& w : seq) {
        const StepScalars r = run_step(*be, s, fin, bad, n, w.ok, dyn, step);
        EXPECT_EQ(r.loss_scale, w.scale) << "step " << step;
        EXPECT_EQ(r.good_steps, w.good) << "step " << step;
        EXPECT_EQ(r.skipped_steps, w.skipped) << "step " << step;
        step++;
    }
}

// ------------------------------------------------------------------ read_scalars

TEST_P(CpuStepOps, ReadScalarsRoundTripAndSnapshot) {
    ASSERT_EQ(trt::OptimizerStep::kScalarSlots, 8);
    Mem s(*be, sizeof(StepScalars)), losses(*be, 64 * 4);
    put(*be, losses, nonzero(64, 2201, 1.0f, 2.0f));
    StepScalars init;
    init.loss_scale = 2.0f;
    init.skipped_steps = 4;
    put_scalars(*be, s, init);
    trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 0.25f, 5);
    trt::optimizer_step_of(*be).accumulate_loss(s.as<StepScalars>(), losses.as<float>(), 64);
    const StepScalars first = get_scalars(*be, s);
    trt::optimizer_step_of(*be).read_scalars_async(0, s.as<StepScalars>());
    // Change s: the slot keeps the value it had when read_scalars_async was enqueued.
    trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 0.5f, 6);
    trt::optimizer_step_of(*be).read_scalars_async(7, s.as<StepScalars>());
    be->synchronize();
    EXPECT_TRUE(trt::optimizer_step_of(*be).scalars_ready(0));
    EXPECT_TRUE(trt::optimizer_step_of(*be).scalars_ready(7));
    const StepScalars r0 = trt::optimizer_step_of(*be).read_scalars(0);
    const StepScalars r7 = trt::optimizer_step_of(*be).read_scalars(7);
    EXPECT_EQ(0, std::memcmp(&r0, &first, sizeof r0)) << "slot 0 is not the snapshot";
    EXPECT_EQ(r0.lr, 0.25f);
    EXPECT_EQ(r0.step, 5);
    EXPECT_GT(r0.loss_sum, 64.0);
    EXPECT_EQ(r0.loss_scale, 2.0f);
    EXPECT_EQ(r0.skipped_steps, 4);
    EXPECT_EQ(r7.lr, 0.5f);
    EXPECT_EQ(r7.step, 6);
    EXPECT_EQ(r7.loss_sum, 0.0);
    // Reading again gives the same values (a slot holds until overwritten).
    const StepScalars again = trt::optimizer_step_of(*be).read_scalars(0);
    EXPECT_EQ(0, std::memcmp(&again, &first, sizeof again));
    // Every slot works.
    for (int slot = 0; slot < trt::OptimizerStep::kScalarSlots; slot++) {
        trt::optimizer_step_of(*be).begin_step(s.as<StepScalars>(), 0.125f * (slot + 1),
                                               100 + slot);
        trt::optimizer_step_of(*be).read_scalars_async(slot, s.as<StepScalars>());
    }
    for (int slot = 0; slot < trt::OptimizerStep::kScalarSlots; slot++) {
        const StepScalars r = trt::optimizer_step_of(*be).read_scalars(slot);
        EXPECT_EQ(r.step, 100 + slot);
        EXPECT_EQ(r.lr, 0.125f * (slot + 1));
    }
}

// ------------------------------------------------------------------ batches

TEST_P(CpuStepOps, LoadRowsSplitsInputsAndTargets) {
    const int B = 3, T = 5;
    Mem in(*be, B * T * 4), tg(*be, B * T * 4);
    std::vector<int32_t> rows(B * (T + 1));
    for (size_t i = 0; i < rows.size(); i++) rows[i] = 1000 + (int32_t)(i * 7919 % 50000);
    const auto want_rows = rows;
    be->load_rows(in.as<int32_t>(), tg.as<int32_t>(), rows.data(), B, T);
    std::fill(rows.begin(), rows.end(), -1);  // the caller may reuse its buffer at once
    const auto gi = get<int32_t>(*be, in, B * T), gt = get<int32_t>(*be, tg, B * T);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            EXPECT_EQ(gi[b * T + t], want_rows[b * (T + 1) + t]) << b << "," << t;
            EXPECT_EQ(gt[b * T + t], want_rows[b * (T + 1) + t + 1]) << b << "," << t;
        }
}

// Three shards; the middle one is too short for any window at the test's T.
struct Tokens {
    std::vector<uint16_t> ids;          // concatenated
    std::vector<int64_t> starts;        // [shards + 1]
    uint64_t windows(int T) const {
        uint64_t w = 0;
        for (size_t i = 0; i + 1 < starts.size(); i++)
            w += (uint64_t)std::max<int64_t>(0, starts[i + 1] - starts[i] - T);
        return w;
    }
};

Tokens make_tokens(const std::vector<int64_t>& lengths, uint32_t seed) {
    Tokens t;
    t.starts.push_back(0);
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> dist(0, 65535);  // ids >= 32768: no sign mix-ups
    for (int64_t len : lengths) {
        for (int64_t i = 0; i < len; i++) t.ids.push_back((uint16_t)dist(gen));
        t.starts.push_back((int64_t)t.ids.size());
    }
    return t;
}

TEST_P(CpuStepOps, SampleWindowTakesConsecutiveRows) {
    const int B = 4, T = 9;
    const Tokens tok = make_tokens({300, T - 2, 257}, 2301);
    Mem ids(*be, tok.ids.size() * 2), starts(*be, tok.starts.size() * 8);
    put(*be, ids, tok.ids);
    put(*be, starts, tok.starts);
    trt::DeviceTokens dt;
    dt.tokens = ids.as<uint16_t>();
    dt.shard_starts = starts.as<int64_t>();
    dt.num_shards = 3;
    dt.total = (int64_t)tok.ids.size();
    dt.random_windows = tok.windows(T);
    dt.windows_T = T;
    Mem in(*be, B * T * 4), tg(*be, B * T * 4);
    const int64_t span = (int64_t)B * T + 1;
    for (int64_t start : {int64_t(0), int64_t(300) - span, tok.starts[2], dt.total - span}) {
        be->load_rows(in.as<int32_t>(), tg.as<int32_t>(),
                      std::vector<int32_t>(B * (T + 1), -7).data(), B, T);  // dirty
        be->sample_window(in.as<int32_t>(), tg.as<int32_t>(), dt, &start, B, T);
        const auto gi = get<int32_t>(*be, in, B * T), gt = get<int32_t>(*be, tg, B * T);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const size_t at = (size_t)(start + (int64_t)b * T + t);
                ASSERT_EQ(gi[b * T + t], (int32_t)tok.ids[at]) << "start " << start;
                ASSERT_EQ(gt[b * T + t], (int32_t)tok.ids[at + 1]) << "start " << start;
            }
    }
}

// Independent reference of FORMATS.md §1's random sampler (src/data/sampler.h).
void reference_random(const Tokens& tok, uint64_t seed, int64_t step, int64_t micro, int B,
                      int T, std::vector<int32_t>& in, std::vector<int32_t>& tg) {
    in.assign(B * T, 0);
    tg.assign(B * T, 0);
    const uint64_t W = tok.windows(T);
    for (int r = 0; r < B; r++) {
        const trt::Philox4x32 x = trt::philox4x32_10((uint32_t)step, (uint32_t)micro,
                                                     (uint32_t)r, 0u, (uint32_t)seed,
                                                     (uint32_t)(seed >> 32));
        uint64_t idx = ((uint64_t)x.v[0] | ((uint64_t)x.v[1] << 32)) % W;
        size_t s = 0;
        for (;; s++) {
            const uint64_t c =
                (uint64_t)std::max<int64_t>(0, tok.starts[s + 1] - tok.starts[s] - T);
            if (idx < c) break;
            idx -= c;
        }
        const int64_t at = tok.starts[s] + (int64_t)idx;
        for (int t = 0; t < T; t++) {
            in[r * T + t] = tok.ids[at + t];
            tg[r * T + t] = tok.ids[at + t + 1];
        }
    }
}

TEST_P(CpuStepOps, SampleRandomMatchesPhiloxReference) {
    const int B = 5, T = 33;
    // Shard 1 holds exactly T tokens (0 windows), shard 3 exactly T + 1 (1 window).
    const Tokens tok = make_tokens({1000, T, 777, T + 1}, 2401);
    Mem ids(*be, tok.ids.size() * 2), starts(*be, tok.starts.size() * 8);
    put(*be, ids, tok.ids);
    put(*be, starts, tok.starts);
    trt::DeviceTokens dt;
    dt.tokens = ids.as<uint16_t>();
    dt.shard_starts = starts.as<int64_t>();
    dt.num_shards = 4;
    dt.total = (int64_t)tok.ids.size();
    dt.random_windows = tok.windows(T);
    dt.windows_T = T;
    ASSERT_EQ(dt.random_windows, uint64_t(1000 - T + 777 - T + 1));
    Mem in(*be, B * T * 4), tg(*be, B * T * 4);
    for (uint64_t seed : {uint64_t(1), uint64_t(0xDEADBEEFCAFEF00Dull)})
        for (int64_t step : {int64_t(1), int64_t(2), int64_t(977), (int64_t(1) << 32) + 3})
            for (int64_t micro : {0, 1, 3}) {
                trt::StepScalars sc;  // the step comes from backend (here host) memory
                trt::optimizer_step_of(*be).begin_step(&sc, 1e-3f, step);
                be->sample_random(in.as<int32_t>(), tg.as<int32_t>(), dt, seed, &sc, micro, B, T);
                std::vector<int32_t> wi, wt;
                reference_random(tok, seed, step, micro, B, T, wi, wt);
                EXPECT_EQ(get<int32_t>(*be, in, B * T), wi)
                    << "seed " << seed << " step " << step << " micro " << micro;
                EXPECT_EQ(get<int32_t>(*be, tg, B * T), wt)
                    << "seed " << seed << " step " << step << " micro " << micro;
            }
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuStepOps, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "t" + std::to_string(info.param); });

}  // namespace
