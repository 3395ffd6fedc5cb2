// The optimizer step on backend-resident StepScalars and the batch ops, CUDA against the CPU
// backend (tests/unit/cpu/test_cpu_step_ops.cpp holds the CPU against backend.h):
//   begin_step / accumulate_loss / grad_norm_clip / adamw_step (5 segments, different
//   decays, clipping on, loss scale 4) / end_step, two steps, read back through
//   read_scalars_async + read_scalars: lr, step, counters, loss scale equal; loss_sum and
//   grad_norm within 1e-12 (double reductions); clip_scale within 1e-6 (a float);
//   params/m/v within 1e-5 (fp32 in every precision);
//   a non-finite gradient (inf, nan) leaves params/m/v bit-identical, sets nonfinite and
//   skipped_steps, and halves a dynamic loss scale; the dynamic scale's growth schedule;
//   load_rows (double-buffered staging, the host buffer reused at once), sample_window and
//   sample_random: integer-identical to the CPU backend (and to an independent reference).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/philox.h"
#include "gpu/gpu_test_util.h"

namespace {

using gpu::Cover;
using gpu::kCpu;
using gpu::kCuda;
using gpu::Twin;
using trt::Backend;
using trt::Precision;
using trt::StepScalars;

const float kInf = std::numeric_limits<float>::infinity();

double rel(double got, double want) {
    return want == 0 ? std::fabs(got) : std::fabs(got - want) / std::fabs(want);
}

// Flat parameters with per-tensor segments, on both backends, registered like the model's.
struct Flat {
    size_t n;
    std::vector<int64_t> ends;
    std::vector<float> decay;
    std::vector<float> p0, m0, v0;
    Twin params, grads, m, v, seg_ends, seg_decay, s;

    trt::ParamSegments segments(int side) const {
        trt::ParamSegments ps;
        ps.ends = seg_ends.as<int64_t>(side);
        ps.weight_decay = seg_decay.f(side);
        ps.count = static_cast<int32_t>(ends.size());
        return ps;
    }
    StepScalars* sc(int side) const { return s.as<StepScalars>(side); }
};

const trt::AdamWConfig kHp{0.9f, 0.95f, 1e-8f};

class CudaStep : public gpu::CudaOpsP {
protected:
    Flat make_flat(const std::vector<int64_t>& ends, const std::vector<float>& decay,
                   uint32_t seed, float loss_scale) {
        Flat f;
        f.n = static_cast<size_t>(ends.back());
        f.ends = ends;
        f.decay = decay;
        f.p0 = gpu::rnd(f.n, seed);
        f.m0 = gpu::rnd(f.n, seed + 1, -0.1f, 0.1f);
        f.v0 = gpu::rnd(f.n, seed + 2, 1e-4f, 1e-2f);
        f.params = up(f.p0);
        f.grads = alloc(f.n * 4);
        f.m = up(f.m0);
        f.v = up(f.v0);
        f.seg_ends = up(ends);
        f.seg_decay = up(decay);
        f.s = alloc(sizeof(StepScalars));
        StepScalars init;
        init.loss_scale = loss_scale;
        f.s.set(&init, sizeof init);
        both([&](Backend& be, int side) { be.register_params(f.params.f(side), f.n); });
        return f;
    }
    StepScalars read(int side, const Flat& f, int slot) {
        trt::optimizer_step_of(be(side)).read_scalars_async(slot, f.sc(side));
        const StepScalars r = trt::optimizer_step_of(be(side)).read_scalars(slot);
        EXPECT_TRUE(trt::optimizer_step_of(be(side)).scalars_ready(slot)) << "ready after read_scalars waited";
        return r;
    }
};

void expect_same_scalars(const StepScalars& g, const StepScalars& c, const std::string& what) {
    EXPECT_EQ(g.lr, c.lr) << what;
    EXPECT_EQ(g.step, c.step) << what;
    EXPECT_EQ(g.loss_scale, c.loss_scale) << what;
    EXPECT_EQ(g.nonfinite, c.nonfinite) << what;
    EXPECT_EQ(g.skipped_steps, c.skipped_steps) << what;
    EXPECT_EQ(g.good_steps, c.good_steps) << what;
    EXPECT_LE(rel(g.loss_sum, c.loss_sum), gpu::kTolDoubleSum)
        << what << ": loss_sum " << g.loss_sum << " vs " << c.loss_sum;
    EXPECT_LE(rel(g.grad_norm, c.grad_norm), gpu::kTolDoubleSum)
        << what << ": grad_norm " << g.grad_norm << " vs " << c.grad_norm;
    EXPECT_LE(rel(g.clip_scale, c.clip_scale), 1e-6)
        << what << ": clip_scale " << g.clip_scale << " vs " << c.clip_scale;
    ref::report(what + " loss_sum", rel(g.loss_sum, c.loss_sum));
    ref::report(what + " grad_norm", rel(g.grad_norm, c.grad_norm));
    ref::report(what + " clip_scale", rel(g.clip_scale, c.clip_scale));
}

// ------------------------------------------------------------------ a full step, twice

TEST_P(CudaStep, TwoStepsMatchTheCpu) {
    reserve(Cover().add(4, 256, 64, 1, 256));
    const float kScale = 4.0f;
    Flat f = make_flat({100, 1100, 1133, 40000, 50021}, {0.0f, 0.1f, 0.0f, 0.05f, 0.2f}, 1200,
                       kScale);
    Twin loss_a = up(gpu::rnd(51, 1210, 0.5f, 8.0f)), loss_b = up(gpu::rnd(1000, 1211, 0.5f, 8.0f));
    StepScalars got[2][2];  // [step][side]
    for (int step = 1; step <= 2; step++) {
        auto g = gpu::rnd(f.n, 1220 + step, -1.0f, 1.0f);
        double norm = 0;
        for (float x : g) norm += (double)x * x;
        norm = std::sqrt(norm);
        for (auto& x : g) x *= kScale;  // the gradients carry the loss scale (exact: 2^2)
        f.grads.set(g);
        // Step 1 clips (max_norm = half the norm), step 2 does not (max_norm = 0).
        const float max_norm = step == 1 ? (float)(0.5 * norm) : 0.0f;
        both([&](Backend& be, int s) {
            trt::optimizer_step_of(be).begin_step(f.sc(s), 1e-3f * step, step);
            trt::optimizer_step_of(be).accumulate_loss(f.sc(s), loss_a.f(s), 51);
            trt::optimizer_step_of(be).accumulate_loss(f.sc(s), loss_b.f(s), 1000);
            trt::optimizer_step_of(be).grad_norm_clip(f.sc(s), f.grads.f(s), f.n, max_norm);
            trt::optimizer_step_of(be).adamw_step(f.params.f(s), f.grads.f(s), f.m.f(s), f.v.f(s),
                                                  f.n, f.segments(s), kHp, f.sc(s));
            trt::optimizer_step_of(be).end_step(f.sc(s), trt::LossScalePolicy{});
            trt::optimizer_step_of(be).read_scalars_async(
                step, f.sc(s));  // slots 1, 2: read after both steps
        });
    }
    for (int step = 1; step <= 2; step++)
        for (int s = 0; s < 2; s++) got[step - 1][s] = trt::optimizer_step_of(be(s)).read_scalars(step);
    for (int step = 1; step <= 2; step++) {
        const StepScalars& g = got[step - 1][kCuda];
        const StepScalars& c = got[step - 1][kCpu];
        expect_same_scalars(g, c, tag("step " + std::to_string(step)));
        EXPECT_EQ(g.step, step) << "slot " << step << " is not that step's snapshot";
        EXPECT_EQ(g.nonfinite, 0);
        EXPECT_EQ(g.good_steps, step);
    }
    EXPECT_LT(got[0][kCuda].clip_scale, 1.0f) << "step 1 should clip";
    EXPECT_EQ(got[1][kCuda].clip_scale, 1.0f) << "max_norm 0 never clips";
    expect_close_accum("adamw_step params (2 steps)", f.params, f.p0, gpu::kTolFp32);
    expect_close_accum("adamw_step m", f.m, f.m0, gpu::kTolFp32);
    expect_close_accum("adamw_step v", f.v, f.v0, gpu::kTolFp32);
    const bool bitwise = gpu::same_bits(f.params.get<float>(kCpu, f.n),
                                        f.params.get<float>(kCuda, f.n));
    std::printf("[  info    ] adamw_step params bitwise equal to the CPU: %s\n",
                bitwise ? "yes" : "no");
}

// ------------------------------------------------------------------ non-finite gradients

TEST_P(CudaStep, NonFiniteGradientSkipsTheUpdate) {
    reserve(Cover().add(4, 256, 64, 1, 256));
    // Every Flat stays alive to the end: a registered buffer is never freed while the
    // backend may still refresh its working copy from it.
    std::vector<Flat> flats;
    flats.reserve(6);
    for (float bad : {kInf, -kInf, std::numeric_limits<float>::quiet_NaN()})
        for (bool dynamic : {false, true}) {
            const std::string what = std::string("bad=") + std::to_string(bad) +
                                     (dynamic ? " dynamic" : " static");
            flats.push_back(make_flat({300, 7001}, {0.1f, 0.0f}, 1300, 65536.0f));
            Flat& f = flats.back();
            auto g = gpu::rnd(f.n, 1301);
            g[4321] = bad;
            f.grads.set(g);
            trt::LossScalePolicy policy;
            policy.dynamic = dynamic;
            Backend& c = *cuda_;
            trt::optimizer_step_of(c).begin_step(f.sc(kCuda), 1e-2f, 1);
            trt::optimizer_step_of(c).grad_norm_clip(f.sc(kCuda), f.grads.f(kCuda), f.n, 1.0f);
            trt::optimizer_step_of(c).adamw_step(f.params.f(kCuda), f.grads.f(kCuda), f.m.f(kCuda),
                                                 f.v.f(kCuda), f.n, f.segments(kCuda), kHp,
                                                 f.sc(kCuda));
            trt::optimizer_step_of(c).end_step(f.sc(kCuda), policy);
            const StepScalars r = read(kCuda, f, 0);
            EXPECT_EQ(r.nonfinite, 1) << what;
            EXPECT_EQ(r.skipped_steps, 1) << what;
            EXPECT_EQ(r.good_steps, 0) << what;
            EXPECT_EQ(r.loss_scale, dynamic ? 32768.0f : 65536.0f) << what;
            EXPECT_TRUE(gpu::same_bits(f.params.get<float>(kCuda, f.n), f.p0)) << what;
            EXPECT_TRUE(gpu::same_bits(f.m.get<float>(kCuda, f.n), f.m0)) << what;
            EXPECT_TRUE(gpu::same_bits(f.v.get<float>(kCuda, f.n), f.v0)) << what;

            // The next, finite step runs normally: begin_step clears the flag.
            auto ok = gpu::rnd(f.n, 1302);
            f.grads.set(ok);
            trt::optimizer_step_of(c).begin_step(f.sc(kCuda), 1e-2f, 2);
            trt::optimizer_step_of(c).grad_norm_clip(f.sc(kCuda), f.grads.f(kCuda), f.n, 1.0f);
            trt::optimizer_step_of(c).adamw_step(f.params.f(kCuda), f.grads.f(kCuda), f.m.f(kCuda),
                                                 f.v.f(kCuda), f.n, f.segments(kCuda), kHp,
                                                 f.sc(kCuda));
            trt::optimizer_step_of(c).end_step(f.sc(kCuda), policy);
            const StepScalars r2 = read(kCuda, f, 1);
            EXPECT_EQ(r2.nonfinite, 0) << what;
            EXPECT_EQ(r2.skipped_steps, 1) << what;  // never reset
            EXPECT_EQ(r2.good_steps, 1) << what;
            const auto p = f.params.get<float>(kCuda, f.n);
            size_t moved = 0;
            for (size_t i = 0; i < f.n; i++) moved += p[i] != f.p0[i];
            EXPECT_GT(moved, f.n * 9 / 10) << what << ": the finite step did not update";
        }
}

// Squares that overflow float but not double: the documented sum is in double.
TEST_P(CudaStep, HugeFiniteGradientIsFinite) {
    reserve(Cover().add(4, 256, 64, 1, 256));
    Flat f = make_flat({5000}, {0.0f}, 1350, 1.0f);
    auto g = gpu::rnd(f.n, 1351, -1e-3f, 1e-3f);
    g[10] = g[20] = g[30] = 1e30f;
    f.grads.set(g);
    both([&](Backend& be, int s) {
        trt::optimizer_step_of(be).begin_step(f.sc(s), 1e-3f, 1);
        trt::optimizer_step_of(be).grad_norm_clip(f.sc(s), f.grads.f(s), f.n, 1.0f);
    });
    const StepScalars r = read(kCuda, f, 0), rc = read(kCpu, f, 0);
    EXPECT_EQ(r.nonfinite, 0);
    EXPECT_EQ(rc.nonfinite, 0);
    EXPECT_LE(rel(r.grad_norm, 1e30 * std::sqrt(3.0)), 1e-6) << r.grad_norm;
}

TEST_P(CudaStep, DynamicLossScaleSchedule) {
    reserve(Cover().add(4, 256, 64, 1, 256));
    Flat f = make_flat({257}, {0.0f}, 1400, 1024.0f);
    Twin fin = up(gpu::rnd(257, 1401)), bad = up([&] {
                  auto b = gpu::rnd(257, 1402);
                  b[3] = kInf;
                  return b;
              }());
    trt::LossScalePolicy dyn;
    dyn.dynamic = true;
    dyn.growth_factor = 2.0f;
    dyn.backoff_factor = 0.5f;
    dyn.growth_interval = 3;
    struct Want {
        bool ok;
        float scale;
        int32_t good;
        int64_t skipped;
    };
    const Want seq[] = {{true, 1024, 1, 0},  {true, 1024, 2, 0}, {true, 2048, 0, 0},
                        {true, 2048, 1, 0},  {false, 1024, 0, 1}, {false, 512, 0, 2},
                        {true, 512, 1, 2},   {true, 512, 2, 2},  {true, 1024, 0, 2}};
    int64_t step = 1;
    for (const Want& w : seq) {
        both([&](Backend& be, int s) {
            trt::optimizer_step_of(be).begin_step(f.sc(s), 1e-3f, step);
            trt::optimizer_step_of(be).grad_norm_clip(f.sc(s), (w.ok ? fin : bad).f(s), 257, 1.0f);
            trt::optimizer_step_of(be).end_step(f.sc(s), dyn);
        });
        const StepScalars g = read(kCuda, f, (int)(step % 8)), c = read(kCpu, f, (int)(step % 8));
        EXPECT_EQ(g.loss_scale, w.scale) << "step " << step;
        EXPECT_EQ(g.good_steps, w.good) << "step " << step;
        EXPECT_EQ(g.skipped_steps, w.skipped) << "step " << step;
        EXPECT_EQ(g.loss_scale, c.loss_scale) << "step " << step;
        step++;
    }
}

TEST_P(CudaStep, ReadScalarsRing) {
    reserve(Cover().add(4, 256, 64, 1, 256));
    Flat f = make_flat({64}, {0.0f}, 1500, 2.0f);
    Backend& c = *cuda_;
    // Enqueue all 8 slots, each a different step, without waiting in between.
    for (int slot = 0; slot < trt::OptimizerStep::kScalarSlots; slot++) {
        trt::optimizer_step_of(c).begin_step(f.sc(kCuda), 0.125f * (slot + 1), 100 + slot);
        trt::optimizer_step_of(c).read_scalars_async(slot, f.sc(kCuda));
    }
    c.synchronize();
    for (int slot = 0; slot < trt::OptimizerStep::kScalarSlots; slot++) {
        EXPECT_TRUE(trt::optimizer_step_of(c).scalars_ready(slot)) << slot;
        const StepScalars r = trt::optimizer_step_of(c).read_scalars(slot);
        EXPECT_EQ(r.step, 100 + slot) << slot;
        EXPECT_EQ(r.lr, 0.125f * (slot + 1)) << slot;
        EXPECT_EQ(r.loss_scale, 2.0f) << slot;
        EXPECT_EQ(r.clip_scale, 1.0f) << slot;
    }
}

// ------------------------------------------------------------------ batches

TEST_P(CudaStep, LoadRowsDoubleBuffered) {
    const int B = 5, T = 33;
    reserve(Cover().add(B, T, 64, 1, 256));
    std::vector<Twin> in, tg;
    std::vector<std::vector<int32_t>> want;
    for (int k = 0; k < 3; k++) {
        in.push_back(nan_floats(B * T));  // int32 buffers, NaN bit pattern as poison
        tg.push_back(nan_floats(B * T));
    }
    for (int s = 0; s < 2; s++) {
        std::vector<int32_t> rows(B * (T + 1));
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; i < rows.size(); i++) rows[i] = (int32_t)(k * 100000 + i * 7 + 1);
            if (s == 0) want.push_back(rows);
            be(s).load_rows(in[k].i(s), tg[k].i(s), rows.data(), B, T);
            std::fill(rows.begin(), rows.end(), -5);  // the caller reuses its buffer at once
        }
    }
    for (int k = 0; k < 3; k++) {
        expect_equal<int32_t>("load_rows inputs " + std::to_string(k), in[k], B * T);
        expect_equal<int32_t>("load_rows targets " + std::to_string(k), tg[k], B * T);
        const auto gi = in[k].get<int32_t>(kCuda, B * T), gt = tg[k].get<int32_t>(kCuda, B * T);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                ASSERT_EQ(gi[b * T + t], want[k][b * (T + 1) + t]) << k << " " << b << " " << t;
                ASSERT_EQ(gt[b * T + t], want[k][b * (T + 1) + t + 1]) << k << " " << b << " " << t;
            }
    }
}

// Three shards of different lengths (the middle one too short for a window), ids >= 32768
// included (uint16 -> int32 without sign extension).
struct Resident {
    std::vector<uint16_t> ids;
    std::vector<int64_t> starts;
    Twin d_ids, d_starts;
    uint64_t windows(int T) const {
        uint64_t w = 0;
        for (size_t i = 0; i + 1 < starts.size(); i++)
            w += (uint64_t)std::max<int64_t>(0, starts[i + 1] - starts[i] - T);
        return w;
    }
    trt::DeviceTokens tokens(int side, int T) const {
        trt::DeviceTokens dt;
        dt.tokens = d_ids.as<uint16_t>(side);
        dt.shard_starts = d_starts.as<int64_t>(side);
        dt.num_shards = (int32_t)starts.size() - 1;
        dt.total = (int64_t)ids.size();
        dt.random_windows = windows(T);
        dt.windows_T = T;
        return dt;
    }
};

class CudaSampler : public CudaStep {
protected:
    Resident make(const std::vector<int64_t>& lengths, uint32_t seed) {
        Resident r;
        r.starts.push_back(0);
        std::mt19937 gen(seed);
        std::uniform_int_distribution<int> dist(0, 65535);
        for (int64_t len : lengths) {
            for (int64_t i = 0; i < len; i++) r.ids.push_back((uint16_t)dist(gen));
            r.starts.push_back((int64_t)r.ids.size());
        }
        r.d_ids = up(r.ids);
        r.d_starts = up(r.starts);
        return r;
    }
};

TEST_P(CudaSampler, SampleWindowIdenticalToCpu) {
    const int B = 4, T = 31;
    reserve(Cover().add(B, T, 64, 1, 256));
    Resident r = make({1000, T - 2, 777}, 1601);
    const int64_t span = (int64_t)B * T + 1, total = (int64_t)r.ids.size();
    Twin in = nan_floats(B * T), tg = nan_floats(B * T);
    Twin start_dev = alloc(sizeof(int64_t));  // the window start is read from backend memory
    for (int64_t start : {int64_t(0), int64_t(1000) - span, r.starts[2], total - span}) {
        in.poison();
        tg.poison();
        both([&](Backend& be, int s) {
            be.upload_step_inputs(start_dev.raw(s), &start, sizeof start);
            be.sample_window(in.i(s), tg.i(s), r.tokens(s, T), start_dev.as<int64_t>(s), B, T);
        });
        expect_equal<int32_t>("sample_window inputs start " + std::to_string(start), in, B * T);
        expect_equal<int32_t>("sample_window targets start " + std::to_string(start), tg, B * T);
        const auto gi = in.get<int32_t>(kCuda, B * T);
        for (int b = 0; b < B; b++)
            ASSERT_EQ(gi[b * T], (int32_t)r.ids[start + (int64_t)b * T]) << start << " " << b;
    }
}

TEST_P(CudaSampler, SampleRandomIdenticalToCpu) {
    const int B = 7, T = 33;
    reserve(Cover().add(B, T, 64, 1, 256));
    // Shard 1 holds exactly T tokens (no window), shard 3 exactly T + 1 (one window).
    Resident r = make({1000, T, 777, T + 1}, 1701);
    Twin in = nan_floats(B * T), tg = nan_floats(B * T);
    Twin sc = alloc(sizeof(StepScalars));  // the step is read from backend memory
    sc.set(std::vector<StepScalars>(1));
    int compared = 0;
    for (uint64_t seed : {uint64_t(1), uint64_t(0xDEADBEEFCAFEF00Dull)})
        for (int64_t step : {int64_t(1), int64_t(2), int64_t(977), (int64_t(1) << 32) + 3})
            for (int64_t micro : {0, 1, 3}) {
                in.poison();
                tg.poison();
                both([&](Backend& be, int s) {
                    trt::optimizer_step_of(be).begin_step(sc.as<StepScalars>(s), 1e-3f, step);
                    be.sample_random(in.i(s), tg.i(s), r.tokens(s, T), seed,
                                     sc.as<StepScalars>(s), micro, B, T);
                });
                const std::string what = "sample_random seed " + std::to_string(seed) +
                                         " step " + std::to_string(step) + " micro " +
                                         std::to_string(micro);
                expect_equal<int32_t>(what + " inputs", in, B * T);
                expect_equal<int32_t>(what + " targets", tg, B * T);
                // Independent reference (FORMATS.md §1): row 0.
                const trt::Philox4x32 x = trt::philox4x32_10(
                    (uint32_t)step, (uint32_t)micro, 0u, 0u, (uint32_t)seed, (uint32_t)(seed >> 32));
                uint64_t idx = ((uint64_t)x.v[0] | ((uint64_t)x.v[1] << 32)) % r.windows(T);
                size_t sh = 0;
                for (;; sh++) {
                    const uint64_t c =
                        (uint64_t)std::max<int64_t>(0, r.starts[sh + 1] - r.starts[sh] - T);
                    if (idx < c) break;
                    idx -= c;
                }
                const auto gi = in.get<int32_t>(kCuda, B * T);
                EXPECT_EQ(gi[0], (int32_t)r.ids[r.starts[sh] + idx]) << what;
                // Data parallel: a rank's rows start at global row row0 (rank x B).
                in.poison();
                tg.poison();
                both([&](Backend& be, int s) {
                    be.sample_random(in.i(s), tg.i(s), r.tokens(s, T), seed,
                                     sc.as<StepScalars>(s), micro, B, T, 3 * B);
                });
                expect_equal<int32_t>(what + " row0 inputs", in, B * T);
                expect_equal<int32_t>(what + " row0 targets", tg, B * T);
                ++compared;
            }
    EXPECT_EQ(compared, 24);
}

const auto kAllPrecisions = ::testing::Values(Precision::Fp32, Precision::Tf32, Precision::Bf16,
                                              Precision::Fp16);
INSTANTIATE_TEST_SUITE_P(Precision, CudaStep, kAllPrecisions, gpu::precision_param_name);
// The samplers do not depend on the precision.
INSTANTIATE_TEST_SUITE_P(Precision, CudaSampler, ::testing::Values(Precision::Fp32),
                         gpu::precision_param_name);

}  // namespace
