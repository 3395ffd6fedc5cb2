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
    drop_stamps();
    timer_ = inner().op_timer();
    on_ = true;
    started_ = clock_();
}

void OpProfiler::stop() {
    if (!on_) return;
    on_ = false;  // first: a synchronize that throws (a lost device) must not leave it on
    struct Drop {  // the stamps go on every way out: a throw below leaves them unread
        OpProfiler* p;
        ~Drop() { p->drop_stamps(); }
    } drop{this};
    inner().synchronize();
    wall_ += clock_() - started_;
    for (const Stamped& s : stamped_) s.row->seconds += timer_->seconds_between(s.begin, s.end);
}

void OpProfiler::drop_stamps() noexcept {
    stamped_.clear();
    if (timer_) timer_->clear();
    timer_ = nullptr;
}

OpProfiler::Snapshot OpProfiler::snapshot() const { return {rows_, wall_}; }

void OpProfiler::restore(Snapshot s) {
    stamped_.clear();  // they point into the rows replaced here
    rows_ = std::move(s.rows);
    wall_ = s.wall;
}

void OpProfiler::reset() {
    stamped_.clear();  // they point into the rows dropped here
    rows_.clear();
    wall_ = 0;
    if (on_) started_ = clock_();
}

std::vector<OpTiming> OpProfiler::layer_rows() const {
    std::vector<OpTiming> out;
    out.reserve(rows_.size());
    for (const auto& kv : rows_) out.push_back(kv.second);
    std::stable_sort(out.begin(), out.end(), [](const OpTiming& a, const OpTiming& b) {
        return a.layer != b.layer ? a.layer < b.layer : a.seconds > b.seconds;
    });
    return out;
}

std::vector<OpTiming> OpProfiler::rows() const {
    std::map<std::string, OpTiming> by_label;
    for (const auto& kv : rows_) {
        const OpTiming& r = kv.second;
        OpTiming& sum = by_label[r.label];
        if (sum.calls == 0) {
            sum.label = r.label;
            sum.op = r.op;
        }
        sum.calls += r.calls;
        sum.seconds += r.seconds;
        sum.flops += r.flops;
        sum.bytes += r.bytes;
    }
    std::vector<OpTiming> out;
    out.reserve(by_label.size());
    for (const auto& kv : by_label) out.push_back(kv.second);
    std::stable_sort(out.begin(), out.end(),
                     [](const OpTiming& a, const OpTiming& b) { return a.seconds > b.seconds; });
    return out;
}

double OpProfiler::op_seconds() const {
    double s = 0;
    for (const auto& kv : rows_) s += kv.second.seconds;
    return s;
}

void OpProfiler::annotate_layer(int layer) {
    layer_ = layer;
    OpDispatch::annotate_layer(layer);
}

// The label the op's cost gave, else its name. With an OpTimer the op is stamped before and
// after on the device, its seconds read at stop(); without one, the inner backend is
// synchronized before the clock starts and before it stops, so an asynchronous backend's op
// is all inside the interval.
void OpProfiler::dispatch(OpKind op, std::function<void()> run) {
    if (!on_) {  // untimed: no cost computed, no row touched
        run();
        return;
    }
    OpCost cost = std::move(next_);
    next_ = OpCost{};
    if (cost.label.empty()) cost.label = op_name(op);
    double dt = 0;
    int begin = -1, end = -1;
    if (timer_) {
        begin = timer_->mark();
        run();
        end = timer_->mark();
    } else {
        inner().synchronize();
        const double t0 = clock_();
        run();
        inner().synchronize();
        dt = clock_() - t0;
    }
    OpTiming& row = rows_[{layer_, cost.label}];
    if (row.calls == 0) {
        row.label = std::move(cost.label);
        row.op = op;
        row.layer = layer_;
    }
    row.calls += 1;
    row.seconds += dt;
    row.flops += cost.flops;
    row.bytes += cost.bytes;
    if (timer_) stamped_.push_back({&row, begin, end});
}

}  // namespace trt
