#include "backend/op_profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

namespace trt {

double OpProfiler::steady_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

OpProfiler::OpProfiler(std::unique_ptr<Backend> inner, Clock clock)
    : OpDispatch(std::move(inner)), clock_(std::move(clock)) {}

void OpProfiler::start() {
    if (on_) return;
    inner().synchronize();
    on_ = true;
    started_ = clock_();
}

void OpProfiler::stop() {
    if (!on_) return;
    inner().synchronize();
    wall_ += clock_() - started_;
    on_ = false;
}

void OpProfiler::reset() {
    rows_.clear();
    wall_ = 0;
    if (on_) started_ = clock_();
}

std::vector<OpTiming> OpProfiler::rows() const {
    std::vector<OpTiming> out;
    out.reserve(rows_.size());
    for (const auto& kv : rows_) out.push_back(kv.second);
    std::stable_sort(out.begin(), out.end(),
                     [](const OpTiming& a, const OpTiming& b) { return a.seconds > b.seconds; });
    return out;
}

double OpProfiler::op_seconds() const {
    double s = 0;
    for (const auto& kv : rows_) s += kv.second.seconds;
    return s;
}

void OpProfiler::label_next(std::string label, double flops) {
    next_label_ = std::move(label);
    next_flops_ = flops;
}

// A label the override gave, else the op's name. The inner backend is synchronized before the
// clock starts and before it stops, so an asynchronous backend's op is all inside the interval.
void OpProfiler::dispatch(OpKind op, std::function<void()> run) {
    if (!on_) {  // untimed: no label built, no row touched
        next_label_.clear();
        next_flops_ = 0;
        run();
        return;
    }
    std::string label = next_label_.empty() ? std::string(op_name(op)) : std::move(next_label_);
    const double flops = next_flops_;
    next_label_.clear();
    next_flops_ = 0;
    inner().synchronize();
    const double t0 = clock_();
    run();
    inner().synchronize();
    const double dt = clock_() - t0;
    OpTiming& row = rows_[label];
    if (row.calls == 0) {
        row.label = label;
        row.op = op;
    }
    row.calls += 1;
    row.seconds += dt;
    row.flops += flops;
}

namespace {
std::string matmul_label(const char* pass, int K, int M, WeightLayout layout) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "matmul %s %dx%d%s", pass, K, M,
                  layout == WeightLayout::OutIn ? " (OutIn)" : "");
    return buf;
}
}  // namespace

void OpProfiler::matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias,
                                int N, int K, int M, WeightLayout layout) {
    label_next(matmul_label("fwd", K, M, layout), 2.0 * N * K * M);
    OpDispatch::matmul_forward(out, inp, weight, bias, N, K, M, layout);
}

// The input gradient and the weight gradient are one product each, when asked for.
void OpProfiler::matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout,
                                 ConstAct inp, const float* weight, int N, int K, int M,
                                 WeightLayout layout) {
    const int products = (dinp ? 1 : 0) + (dweight ? 1 : 0);
    label_next(matmul_label("bwd", K, M, layout), 2.0 * N * K * M * products);
    OpDispatch::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, K, M, layout);
}

void OpProfiler::matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight,
                                     const float* bias, int N, int K, int M) {
    label_next(matmul_label("fwd+gelu", K, M, WeightLayout::InOut), 2.0 * N * K * M);
    OpDispatch::matmul_gelu_forward(pre, out, inp, weight, bias, N, K, M);
}

void OpProfiler::attention_forward(Act out, float* saved, ConstAct qkv, const AttentionShape& a) {
    label_next(a.drops() ? "attention fwd (dropout)" : "attention fwd", attention_flops(a, false));
    OpDispatch::attention_forward(out, saved, qkv, a);
}

void OpProfiler::attention_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                                    const float* saved, const AttentionShape& a) {
    label_next(a.drops() ? "attention bwd (dropout)" : "attention bwd", attention_flops(a, true));
    OpDispatch::attention_backward(dqkv, scratch, dout, qkv, saved, a);
}

double attention_flops(const AttentionShape& a, bool backward) {
    // (query, key) pairs: query t sees min(t + 1, window) keys (documents not counted).
    const double T = a.T, w = a.window > 0 && a.window < a.T ? a.window : T;
    const double pairs = w * (w + 1) / 2.0 + (T - w) * w;
    const double products = backward ? 4.0 : 2.0;
    return products * 2.0 * a.B * pairs * a.width();
}

double parallel_fraction(double t1, double tn, int n) {
    if (!(t1 > 0) || n <= 1) return 0.0;
    const double p = (1.0 - tn / t1) / (1.0 - 1.0 / n);
    return std::min(1.0, std::max(0.0, p));
}

double amdahl_seconds(double t1, double p, int m) { return m <= 0 ? t1 : t1 * ((1.0 - p) + p / m); }

}  // namespace trt
