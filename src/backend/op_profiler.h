// OpProfiler: the per-op profile of a step (issue 42). An OpDispatch wrapper (op_dispatch.h):
// every op the model and the optimizer issue passes through dispatch(), where it is timed —
// wall time from before the op to after it, the inner backend synchronized first on a backend
// that runs ahead (an eager profiling step; never a captured graph) — and filed under a label:
// the op's name, or for the products its shape ("matmul fwd 384x1152") with their FLOPs.
// Only ops between start() and stop() are counted; the rest run untimed.
//
// The clock is a parameter so tests can drive it: a fake clock that advances by a known amount
// per op makes every sum exact (tests never assert on real time).
//
// parallel_fraction() and amdahl_seconds() turn two profiles of the same step (1 and n
// threads) into each op's parallel fraction and its projected time at more threads.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/op_dispatch.h"

namespace trt {

// One row of a profile: every timed call with the same label.
struct OpTiming {
    std::string label;  // "layernorm_forward", "matmul fwd 384x1152", "attention bwd", ...
    OpKind op = OpKind::zero;
    int64_t calls = 0;
    double seconds = 0;  // summed over the calls
    double flops = 0;    // summed; 0 where the op's arithmetic is not counted
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
    void reset();  // forgets every row and the wall time
    // The rows, the most time first; the seconds of all timed ops; the wall time counted.
    std::vector<OpTiming> rows() const;
    double op_seconds() const;
    double wall_seconds() const { return wall_; }

    // ---- the products, labelled by shape and counted in FLOPs
    void matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias, int N, int K,
                        int M, WeightLayout layout) override;
    void matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout, ConstAct inp,
                         const float* weight, int N, int K, int M, WeightLayout layout) override;
    void matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight, const float* bias,
                             int N, int K, int M) override;
    void attention_forward(Act out, float* saved, ConstAct qkv, const AttentionShape& a) override;
    void attention_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                            const float* saved, const AttentionShape& a) override;

protected:
    void dispatch(OpKind op, std::function<void()> run) override;

private:
    // The label and FLOPs of the op about to be dispatched (set by the overrides above).
    void label_next(std::string label, double flops);

    Clock clock_;
    bool on_ = false;
    double started_ = 0, wall_ = 0;
    std::string next_label_;
    double next_flops_ = 0;
    std::map<std::string, OpTiming> rows_;
};

// FLOPs of causal attention as counted here: each query's keys (the lower triangle with its
// diagonal, cut by a sliding window; documents' shorter spans are not counted), 2 products
// forward (Q·Kᵀ, P·V) and 4 backward, 2·hs FLOPs per (query, key) pair and product, per head.
double attention_flops(const AttentionShape& a, bool backward);

// Amdahl's law from two timings of the same work: t1 at 1 thread, tn at n threads (n > 1).
// p = (1 - tn/t1) / (1 - 1/n), clamped to [0, 1] (noise can push it past either end).
double parallel_fraction(double t1, double tn, int n);
// The time at m threads of work taking t1 at 1 thread with parallel fraction p.
double amdahl_seconds(double t1, double p, int m);

}  // namespace trt
