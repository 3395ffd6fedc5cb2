// OpProfiler: the per-op profile of a step (issue 42). An OpDispatch wrapper (op_dispatch.h):
// every op the model and the optimizer issue passes through dispatch(), where it is timed —
// on the device where the inner backend has an OpTimer (CUDA: events stamped before and after
// the op, read once at stop(); nothing waits between the ops), else as wall time from before
// the op to after it, the inner backend synchronized first (an eager profiling step; never a
// captured graph) — and filed under a label:
// the op's name, or for the products its shape ("matmul fwd 384x1152") — with its FLOPs and
// bytes (op_costs.h), and the layer the model said it is in (Backend::annotate_layer).
// Only ops between start() and stop() are counted; the rest run untimed.
//
// The clock is a parameter so tests can drive it: a fake clock that advances by a known amount
// per op makes every sum exact (tests never assert on real time).
//
// parallel_fraction() and amdahl_seconds() (core/amdahl.h) turn two profiles of the same step (1
// and n threads) into each op's parallel fraction and its projected time at more threads.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/op_costs.h"
#include "backend/op_dispatch.h"
#include "core/amdahl.h"

namespace trt {

// One row of a profile: every timed call with the same label (and, in layer_rows(), the same
// layer).
struct OpTiming {
    std::string label;  // "layernorm_forward", "matmul fwd 384x1152", "attention bwd", ...
    OpKind op = OpKind::zero;
    int layer = Backend::kNoLayer;  // layer_rows(): the block; rows(): kNoLayer (all summed)
    int64_t calls = 0;
    double seconds = 0;  // summed over the calls
    double flops = 0;    // summed (op_costs.h: the products only)
    double bytes = 0;    // summed (op_costs.h: the least traffic)
};

class OpProfiler : public OpDispatch {
public:
    using Clock = std::function<double()>;  // seconds, monotonic
    static double steady_seconds();         // the default: std::chrono::steady_clock

    explicit OpProfiler(std::unique_ptr<Backend> inner, Clock clock = steady_seconds);

    // Ops dispatched from start() to stop() are timed (again after another start()); the
    // time between the two is the profile's wall time.
    void start();
    void stop();
    bool running() const { return on_; }
    void reset();  // forgets every row and the wall time
    // The rows and wall time as they are, to put back (a step that failed half-way is not
    // profiled: Session::ProfiledStep).
    struct Snapshot {
        std::map<std::pair<int, std::string>, OpTiming> rows;
        double wall = 0;
    };
    Snapshot snapshot() const;
    void restore(Snapshot s);
    // The rows by label, summed over the layers, the most time first; the same by (layer,
    // label), in layer order (kNoLayer first), the most time first within a layer; the
    // seconds of all timed ops; the wall time counted.
    std::vector<OpTiming> rows() const;
    std::vector<OpTiming> layer_rows() const;
    double op_seconds() const;
    double wall_seconds() const { return wall_; }
    // Whether the op times are the device's (an OpTimer) rather than the host clock's: what the
    // time between the ops means (the device idle, waiting for launches; or the host's own work).
    bool device_timed() const { return inner().op_timer() != nullptr; }

    void annotate_layer(int layer) override;

    // ---- every op: its cost (op_costs.h) noted for dispatch() when timed, then forwarded
#define TRT_OP(name, params, args)           \
    void name params override {              \
        if (on_) next_ = op_cost::name args; \
        OpDispatch::name args;               \
    }
#include "backend/backend_ops.def"
#include "backend/step_ops.def"
#undef TRT_OP

protected:
    void dispatch(OpKind op, std::function<void()> run) override;

private:
    Clock clock_;
    bool on_ = false;
    double started_ = 0, wall_ = 0;
    int layer_ = Backend::kNoLayer;
    OpCost next_;  // the cost of the op about to be dispatched
    std::map<std::pair<int, std::string>, OpTiming> rows_;  // by (layer, label)
    // With an OpTimer: the ops stamped since start(), their seconds still on the device
    // (map nodes are stable; reset() and restore() drop these first).
    struct Stamped {
        OpTiming* row;
        int begin, end;
    };
    OpTimer* timer_ = nullptr;  // the inner backend's, from start() to stop()
    std::vector<Stamped> stamped_;
    void drop_stamps() noexcept;
};

}  // namespace trt
