// Session: the per-op profile (runtime.profile_ops). The backend is an OpProfiler
// (backend/op_profiler.h) from the start; each train step switches it on for its own ops, and
// profile_json() hands the rows to the C API (trainrt_session_profile; the layout is in
// docs/C_API.md, "Per-op profile").
#include <cmath>
#include <cstdio>
#include <exception>

#include "io/json_min.h"
#include "runtime/session.h"

namespace trt {
namespace {

void refuse_without_profiler(const OpProfiler* profiler, const char* what) {
    if (profiler == nullptr)
        fail(Status::Config, what,
             ": the session was created with runtime.profile_ops = false; "
             "set it to true to time every op of the train steps (they then run eagerly, "
             "without CUDA graphs)");
}

// JSON has no NaN or infinity: null. Otherwise enough digits to read the double back.
std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

}  // namespace

Session::ProfiledStep::ProfiledStep(Session& s) : s_(s) {
    if (s_.profiler_ == nullptr || s_.profiler_->running()) return;
    before_ = s_.profiler_->snapshot();
    s_.profiler_->start();
    started_ = true;
    exceptions_ = std::uncaught_exceptions();
}

Session::ProfiledStep::~ProfiledStep() {
    if (!started_) return;
    const bool failed = std::uncaught_exceptions() != exceptions_;
    try {
        s_.profiler_->stop();  // synchronizes: a lost device throws here (the profiler is off)
    } catch (...) {
        // the step's own error (or the next call on the device) reports it
        s_.profiler_->restore(std::move(before_));
        return;
    }
    if (failed)
        s_.profiler_->restore(std::move(before_));
    else
        s_.profiled_steps_ += 1;
}

void Session::reset_profile() {
    refuse_without_profiler(profiler_, "reset_profile");
    profiler_->reset();
    profiled_steps_ = 0;
}

std::string Session::profile_json() const {
    refuse_without_profiler(profiler_, "profile");
    std::string out = cat(
        "{\n  \"schema\": \"trainrt-op-profile/1\",\n  \"device\": ", json::quote(backend_->name()),
        ",\n  \"device_name\": ", json::quote(backend_->device_name()),
        ",\n  \"precision\": ", json::quote(to_string(precision_)),
        ",\n  \"threads\": ", backend_->num_threads(), ",\n  \"steps\": ", profiled_steps_,
        ",\n  \"tokens_per_step\": ", tokens_per_step(),
        ",\n  \"timing\": ", json::quote(profiler_->device_timed() ? "device" : "host"),
        ",\n  \"peak_flops\": ", number(peak_flops_per_s()),
        ",\n  \"peak_bytes_per_s\": ", number(peak_bytes_per_s()),
        ",\n  \"wall_s\": ", number(profiler_->wall_seconds()),
        ",\n  \"op_s\": ", number(profiler_->op_seconds()), ",\n  \"ops\": [");
    const std::vector<OpTiming> rows = profiler_->layer_rows();
    for (size_t i = 0; i < rows.size(); ++i) {
        const OpTiming& r = rows[i];
        out += cat(i ? "," : "", "\n    {\"layer\": ", r.layer,
                   ", \"label\": ", json::quote(r.label), ", \"op\": ", json::quote(op_name(r.op)),
                   ", \"calls\": ", r.calls, ", \"seconds\": ", number(r.seconds),
                   ", \"flops\": ", number(r.flops), ", \"bytes\": ", number(r.bytes), "}");
    }
    out += rows.empty() ? "],\n  \"choices\": [" : "\n  ],\n  \"choices\": [";
    const std::vector<OpChoice> choices = backend_->op_choices();
    for (size_t i = 0; i < choices.size(); ++i) {
        const OpChoice& c = choices[i];
        out += cat(i ? "," : "", "\n    {\"op\": ", json::quote(c.op),
                   ", \"shape\": ", json::quote(c.shape), ", \"choice\": ", json::quote(c.choice),
                   ", \"workspace_bytes\": ", c.workspace_bytes, "}");
    }
    return out + (choices.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

}  // namespace trt
