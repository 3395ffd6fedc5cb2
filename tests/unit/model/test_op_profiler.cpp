// OpProfiler (backend/op_profiler.h) on a real decoder step: every op is filed once per call
// under its label and layer, the products with their FLOPs, every op with its bytes, and — with a
// clock that only the ops advance — the op times add up to the profiled wall time exactly; the
// Amdahl helpers. No assertion on real time: the fake clock makes every number exact.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/op_dispatch.h"
#include "backend/op_profiler.h"
#include "model/decoder.h"

using namespace trt;

namespace {

// A clock only the ops move: each op, as it runs, advances it by 1 + its kind's number, so
// every op's time is known and nothing outside the ops counts.
struct FakeTime {
    double now = 0;
};
double ticks(OpKind op) { return 1.0 + static_cast<int>(op); }

class Ticking final : public OpDispatch {
public:
    Ticking(std::unique_ptr<Backend> inner, FakeTime* t) : OpDispatch(std::move(inner)), t_(t) {}

protected:
    void dispatch(OpKind op, std::function<void()> run) override {
        run();
        t_->now += ticks(op);
    }

private:
    FakeTime* t_;
};

struct Step {
    FakeTime time;
    OpProfiler* prof = nullptr;  // owned by be
    std::unique_ptr<Backend> be;
    std::unique_ptr<Decoder> model;
    int B = 2, T = 8;

    explicit Step(const ModelSpec& spec, Precision precision = Precision::Fp32) {
        auto ticking = std::make_unique<Ticking>(make_cpu_backend(1, precision), &time);
        auto profiler =
            std::make_unique<OpProfiler>(std::move(ticking), [this] { return time.now; });
        prof = profiler.get();
        be = std::move(profiler);
        model = std::make_unique<Decoder>(*be, spec, B, T);
        std::mt19937 gen(7);
        std::uniform_int_distribution<int32_t> tok(0, spec.V - 1);
        for (int i = 0; i < B * T; i++) {
            model->inputs_buffer()[i] = tok(gen);
            model->targets_buffer()[i] = tok(gen);
        }
    }
    void run() {
        model->zero_grads();
        model->forward_backward(model->inputs_buffer(), model->targets_buffer(), B, T,
                                1.0f / (B * T));
    }
};

std::map<std::string, OpTiming> by_label(const OpProfiler& p) {
    std::map<std::string, OpTiming> m;
    for (const OpTiming& r : p.rows()) m[r.label] = r;
    return m;
}

TEST(OpProfiler, OpTimesAddUpToTheProfiledStep) {
    Step s(gpt2_spec(32, 8, 2, 2, 16));
    s.run();  // untimed: nothing is filed before start()
    EXPECT_TRUE(s.prof->rows().empty());
    s.prof->start();
    s.run();
    s.prof->stop();
    const std::vector<OpTiming> rows = s.prof->rows();
    ASSERT_FALSE(rows.empty());
    double sum = 0;
    for (const OpTiming& r : rows) {
        EXPECT_EQ(r.seconds, r.calls * ticks(r.op)) << r.label;  // each call timed once, whole
        sum += r.seconds;
    }
    EXPECT_EQ(sum, s.prof->op_seconds());
    EXPECT_EQ(s.prof->op_seconds(), s.prof->wall_seconds());  // only the ops moved the clock
    for (size_t i = 1; i < rows.size(); i++) EXPECT_GE(rows[i - 1].seconds, rows[i].seconds);

    // A second profiled step doubles every row; reset() forgets them.
    const std::map<std::string, OpTiming> one = by_label(*s.prof);
    s.prof->start();
    s.run();
    s.prof->stop();
    for (const auto& [label, r] : by_label(*s.prof)) {
        EXPECT_EQ(r.calls, 2 * one.at(label).calls) << label;
        EXPECT_EQ(r.flops, 2 * one.at(label).flops) << label;
    }
    s.prof->reset();
    EXPECT_TRUE(s.prof->rows().empty());
    EXPECT_EQ(s.prof->wall_seconds(), 0.0);
}

// GPT-2, L 2, C 16, V 32 (Vp 128), B·T = 16: the labels and FLOPs of every product.
TEST(OpProfiler, LabelsTheProductsWithTheirFlops) {
    const int L = 2, C = 16, N = 16, Vp = 128, T = 8, B = 2;
    Step s(gpt2_spec(32, T, L, 2, C));
    s.prof->start();
    s.run();
    s.prof->stop();
    const std::map<std::string, OpTiming> m = by_label(*s.prof);
    // calls < 0: as many as the op's chunks of rows (the head), at least one.
    auto expect = [&](const std::string& label, int64_t calls, double flops) {
        ASSERT_TRUE(m.count(label)) << label;
        if (calls >= 0)
            EXPECT_EQ(m.at(label).calls, calls) << label;
        else
            EXPECT_GE(m.at(label).calls, 1) << label;
        EXPECT_DOUBLE_EQ(m.at(label).flops, flops) << label;
    };
    const double fwd = 2.0 * N;                          // FLOPs per (K·M) of one forward product
    expect("matmul fwd 16x48", L, L * fwd * C * 3 * C);  // qkv
    expect("matmul fwd 16x16", L, L * fwd * C * C);      // attention projection
    expect("matmul fwd 64x16", L, L * fwd * 4 * C * C);  // MLP down
    expect("matmul fwd+gelu 16x64", L, L * fwd * C * 4 * C);
    expect("matmul fwd 16x128 (OutIn)", -1, fwd * C * Vp);  // the tied head
    // Backward: both gradients of every product.
    expect("matmul bwd 16x48", L, L * 2 * fwd * C * 3 * C);
    expect("matmul bwd 16x16", L, L * 2 * fwd * C * C);
    expect("matmul bwd 64x16", L, L * 2 * fwd * 4 * C * C);
    expect("matmul bwd 16x64", L, L * 2 * fwd * C * 4 * C);
    expect("matmul bwd 16x128 (OutIn)", -1, 2 * fwd * C * Vp);
    const AttentionShape a = AttentionShape::from_heads(B, T, 2, 2, C / 2);
    expect("attention fwd", L, L * attention_flops(a, false));
    expect("attention bwd", L, L * attention_flops(a, true));
    expect("layernorm_forward", 1, 0);  // ln1 of block 0; the others fuse with the residual
}

// Bytes: each tensor read or written once (op_costs.h), activations at their dtype.
TEST(OpProfiler, CountsTheLeastBytesAtTheActivationsDtype) {
    const int L = 2, C = 16, N = 16, T = 8, B = 2;
    for (Precision precision : {Precision::Fp32, Precision::Bf16}) {
        Step s(gpt2_spec(32, T, L, 2, C), precision);
        s.prof->start();
        s.run();
        s.prof->stop();
        const std::map<std::string, OpTiming> m = by_label(*s.prof);
        const double act = precision == Precision::Fp32 ? 4 : 2, f32 = 4;
        SCOPED_TRACE(to_string(precision));
        // qkv: inp [N,C], W [C,3C] and bias [3C] read, out [N,3C] written; per layer.
        EXPECT_DOUBLE_EQ(m.at("matmul fwd 16x48").bytes,
                         L * (act * N * C + f32 * (C * 3 * C + 3 * C) + act * N * 3 * C));
        // attention: qkv [N,3C] read, out [N,C] written.
        EXPECT_DOUBLE_EQ(m.at("attention fwd").bytes, L * (act * N * 3 * C + act * N * C));
        // block 0's ln1: inp and out [N,C], w and b [C], mean and rstd [N].
        EXPECT_DOUBLE_EQ(m.at("layernorm_forward").bytes,
                         2 * act * N * C + f32 * 2 * C + f32 * 2 * N);
        for (const OpTiming& r : s.prof->rows())
            if (r.op != OpKind::begin_step && r.op != OpKind::end_step)
                EXPECT_GT(r.bytes, 0) << r.label;  // every op that moves data counts it
    }
}

// The model annotates its blocks (Backend::annotate_layer): the ops of block i are filed under
// layer i, the rest (embeddings, the last norm, the head) under kNoLayer; the per-layer rows
// add up to the same profile.
TEST(OpProfiler, FilesTheOpsUnderTheirLayer) {
    Step s(gpt2_spec(32, 8, 2, 2, 16));
    s.prof->start();
    s.run();
    s.prof->stop();
    std::map<int, std::map<std::string, int64_t>> calls;  // layer -> label -> calls
    double seconds = 0;
    int last_layer = Backend::kNoLayer;
    for (const OpTiming& r : s.prof->layer_rows()) {
        EXPECT_GE(r.layer, last_layer) << "layer order";
        last_layer = r.layer;
        calls[r.layer][r.label] = r.calls;
        seconds += r.seconds;
    }
    EXPECT_EQ(seconds, s.prof->op_seconds());
    ASSERT_EQ(calls.size(), 3u);    // kNoLayer, 0, 1
    EXPECT_EQ(calls[0], calls[1]);  // two identical blocks
    EXPECT_TRUE(calls[0].count("attention fwd") && calls[0].count("attention bwd"));
    const std::map<std::string, int64_t>& outside = calls[Backend::kNoLayer];
    for (const char* op : {"encoder_forward", "encoder_backward", "classifier_forward_backward",
                           "layernorm_forward", "layernorm_backward"})
        EXPECT_TRUE(outside.count(op)) << op;
    EXPECT_FALSE(outside.count("attention fwd"));
}

// A backend whose synchronize fails (a lost device): stop() reports it and still leaves the
// profiler off, so later ops are not filed into a profile nobody is taking.
class FailingSync final : public OpDispatch {
public:
    explicit FailingSync(std::unique_ptr<Backend> inner) : OpDispatch(std::move(inner)) {}
    void synchronize() override {
        if (fail) throw std::runtime_error("device lost");
    }
    bool fail = false;
};

TEST(OpProfiler, StopThatThrowsLeavesItOff) {
    auto failing = std::make_unique<FailingSync>(make_cpu_backend(1));
    FailingSync* f = failing.get();
    OpProfiler prof(std::move(failing));
    prof.start();
    ASSERT_TRUE(prof.running());
    f->fail = true;
    EXPECT_THROW(prof.stop(), std::runtime_error);
    EXPECT_FALSE(prof.running());
    f->fail = false;
    std::vector<float> x(4, 1.0f);
    prof.zero(x.data(), x.size() * sizeof(float));
    EXPECT_TRUE(prof.rows().empty());  // not filed: the profiler is off
    // A snapshot puts rows and wall time back.
    prof.start();
    prof.zero(x.data(), x.size() * sizeof(float));
    prof.stop();
    const OpProfiler::Snapshot one = prof.snapshot();
    prof.start();
    prof.zero(x.data(), x.size() * sizeof(float));
    prof.stop();
    EXPECT_EQ(prof.rows().at(0).calls, 2);
    prof.restore(one);
    EXPECT_EQ(prof.rows().at(0).calls, 1);
    EXPECT_EQ(prof.wall_seconds(), one.wall);
}

// A device clock as the CUDA backend's (Backend::op_timer): stamps read only after a
// synchronize, each op moving the "device" by its ticks while the host clock stays still —
// so op times that come out right can only have come from the stamps.
class FakeDeviceTimer final : public OpTimer {
public:
    explicit FakeDeviceTimer(const double* device_now) : now_(device_now) {}
    int mark() override {
        stamps_.push_back(*now_);
        ++marks;
        return static_cast<int>(stamps_.size()) - 1;
    }
    double seconds_between(int a, int b) override {
        EXPECT_TRUE(synchronized) << "a stamp read before the device was synchronized";
        EXPECT_LT(static_cast<size_t>(b), stamps_.size());
        ++reads;
        return stamps_.at(b) - stamps_.at(a);
    }
    void clear() noexcept override {
        stamps_.clear();
        ++clears;
    }
    bool synchronized = false;
    int marks = 0, reads = 0, clears = 0;

private:
    const double* now_;
    std::vector<double> stamps_;
};

// Runs ahead as a device would: ops move `device`, synchronize() marks the timer readable and
// can be told to fail (a lost device); the host clock (`host`) never moves.
class DeviceTimed final : public OpDispatch {
public:
    explicit DeviceTimed(std::unique_ptr<Backend> inner)
        : OpDispatch(std::move(inner)), timer(&device) {}
    OpTimer* op_timer() override { return &timer; }
    void synchronize() override {
        if (fail_sync) throw std::runtime_error("device lost");
        timer.synchronized = true;
    }
    double device = 0, host = 0;
    bool fail_sync = false;
    FakeDeviceTimer timer;

protected:
    void dispatch(OpKind op, std::function<void()> run) override {
        timer.synchronized = false;  // an op in flight: stamps unreadable until synchronize()
        run();
        device += ticks(op);
    }
};

TEST(OpProfiler, WithADeviceTimerTheOpsAreStampedAndReadAtStop) {
    auto timed = std::make_unique<DeviceTimed>(make_cpu_backend(1));
    DeviceTimed* d = timed.get();
    OpProfiler prof(std::move(timed), [d] { return d->host; });
    EXPECT_TRUE(prof.device_timed());
    std::vector<float> x(4, 1.0f);
    prof.start();
    prof.zero(x.data(), x.size() * sizeof(float));
    prof.zero(x.data(), x.size() * sizeof(float));
    EXPECT_EQ(d->timer.marks, 4);  // before and after each op, no synchronize between them
    EXPECT_EQ(d->timer.reads, 0);
    EXPECT_EQ(prof.rows().at(0).seconds, 0.0);  // still on the device
    prof.stop();
    ASSERT_EQ(prof.rows().size(), 1u);
    EXPECT_EQ(prof.rows().at(0).calls, 2);
    EXPECT_EQ(prof.rows().at(0).seconds, 2 * ticks(OpKind::zero));
    EXPECT_EQ(d->timer.reads, 2);
    EXPECT_GE(d->timer.clears, 1);        // the stamps are let go at stop()
    EXPECT_EQ(prof.wall_seconds(), 0.0);  // the host clock did not move

    // A stop whose synchronize throws reads nothing, lets the stamps go, leaves it off; the
    // next profiled step starts clean.
    const int clears = d->timer.clears;
    prof.start();
    prof.zero(x.data(), x.size() * sizeof(float));
    d->fail_sync = true;
    EXPECT_THROW(prof.stop(), std::runtime_error);
    d->fail_sync = false;
    EXPECT_FALSE(prof.running());
    EXPECT_GT(d->timer.clears, clears);
    EXPECT_EQ(prof.rows().at(0).seconds, 2 * ticks(OpKind::zero));  // that op was never read

    // reset() while running drops the stamps of the rows it forgets.
    prof.start();
    prof.zero(x.data(), x.size() * sizeof(float));
    prof.reset();
    prof.zero(x.data(), x.size() * sizeof(float));
    prof.stop();
    ASSERT_EQ(prof.rows().size(), 1u);
    EXPECT_EQ(prof.rows().at(0).calls, 1);
    EXPECT_EQ(prof.rows().at(0).seconds, ticks(OpKind::zero));
}

// A whole decoder step on the device clock: every row is its calls' ticks, as on the host clock.
TEST(OpProfiler, DeviceTimedStepFilesEveryOpWithItsOwnTime) {
    auto timed = std::make_unique<DeviceTimed>(make_cpu_backend(1));
    DeviceTimed* d = timed.get();
    auto profiler = std::make_unique<OpProfiler>(std::move(timed), [d] { return d->host; });
    OpProfiler* prof = profiler.get();
    std::unique_ptr<Backend> be = std::move(profiler);
    const ModelSpec spec = gpt2_spec(32, 8, 2, 2, 16);
    Decoder model(*be, spec, 2, 8);
    for (int i = 0; i < 16; i++) {
        model.inputs_buffer()[i] = i % spec.V;
        model.targets_buffer()[i] = (i + 1) % spec.V;
    }
    prof->start();
    model.zero_grads();
    model.forward_backward(model.inputs_buffer(), model.targets_buffer(), 2, 8, 1.0f / 16);
    prof->stop();
    const std::vector<OpTiming> rows = prof->rows();
    ASSERT_GT(rows.size(), 5u);
    double sum = 0;
    for (const OpTiming& r : rows) {
        EXPECT_EQ(r.seconds, r.calls * ticks(r.op)) << r.label;
        sum += r.seconds;
    }
    EXPECT_EQ(sum, d->device);  // every device tick is inside exactly one op
    EXPECT_EQ(d->timer.reads * 2, d->timer.marks);
}

TEST(OpProfiler, AttentionFlopsCountTheCausalPairsInTheWindow) {
    // T 4: 1 + 2 + 3 + 4 = 10 pairs; window 2: 1 + 2 + 2 + 2 = 7; hs 3, 2 heads, B 1.
    const AttentionShape a = AttentionShape::from_heads(1, 4, 2, 2, 3);
    EXPECT_DOUBLE_EQ(attention_flops(a, false), 2 * 2.0 * 10 * 6);
    EXPECT_DOUBLE_EQ(attention_flops(a, true), 4 * 2.0 * 10 * 6);
    EXPECT_DOUBLE_EQ(attention_flops(a.with_window(2), false), 2 * 2.0 * 7 * 6);
    EXPECT_DOUBLE_EQ(attention_flops(a.with_window(9), false), 2 * 2.0 * 10 * 6);
}

TEST(OpProfiler, DrawTokenCostsTheRowReadOnce) {
    std::vector<uint16_t> row(1000);
    const OpCost c = op_cost::draw_token(nullptr, ConstAct(row.data(), DType::BF16), 1000, {});
    EXPECT_EQ(c.label, "");
    EXPECT_EQ(c.flops, 0.0);
    EXPECT_EQ(c.bytes, 2000.0 + 8.0);  // the bf16 row, the id and the flag
}

TEST(OpProfiler, AmdahlFractionAndProjection) {
    EXPECT_DOUBLE_EQ(parallel_fraction(8.0, 4.0, 2), 1.0);  // perfect halving
    EXPECT_DOUBLE_EQ(parallel_fraction(8.0, 8.0, 2), 0.0);  // no gain
    EXPECT_DOUBLE_EQ(parallel_fraction(8.0, 6.0, 2), 0.5);  // 8 = 4 serial + 4 parallel
    EXPECT_DOUBLE_EQ(parallel_fraction(8.0, 9.0, 2), 0.0);  // slower: clamped
    EXPECT_DOUBLE_EQ(parallel_fraction(8.0, 3.0, 2), 1.0);  // super-linear: clamped
    EXPECT_DOUBLE_EQ(parallel_fraction(0.0, 1.0, 2), 0.0);
    EXPECT_DOUBLE_EQ(parallel_fraction(8.0, 2.0, 4), 1.0);
    EXPECT_DOUBLE_EQ(amdahl_seconds(8.0, 0.5, 1), 8.0);
    EXPECT_DOUBLE_EQ(amdahl_seconds(8.0, 0.5, 2), 6.0);
    EXPECT_DOUBLE_EQ(amdahl_seconds(8.0, 0.5, 16), 4.25);
    EXPECT_DOUBLE_EQ(amdahl_seconds(8.0, 1.0, 16), 0.5);
    // The 2-thread time of a profile projects back to itself.
    const double p = parallel_fraction(10.0, 6.5, 2);
    EXPECT_DOUBLE_EQ(amdahl_seconds(10.0, p, 2), 6.5);
}

}  // namespace
