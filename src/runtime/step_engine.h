// How a step's work reaches the backend and how its figures come back, apart from what the
// step computes (Session):
//   GraphRunner   accel.cuda_graphs' state machine: run work eagerly, or once eagerly, then
//                 capture it as a graph and replay the recording from then on;
//   ReadbackRing  the asynchronous read-back of each step's StepScalars through the backend's
//                 ring of kScalarSlots host slots, at most max_inflight - 1 steps late.
// Neither knows models, data or schedules.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>

#include "backend/backend.h"
#include "core/log.h"

namespace trt {

class GraphRunner {
public:
    // Off: eager. Warmup: the next run is eager (first-use work settles: cuBLASLt algorithms,
    // cuDNN plans), then Capture records one. Ready: replay.
    enum class State { Off, Warmup, Capture, Ready };

    GraphRunner(Backend& backend, Logger& log, int graph_id, const char* what)
        : be_(backend), log_(log), id_(graph_id), what_(what) {}

    State state() const { return state_; }
    void set_state(State s) { state_ = s; }
    // Graphs stay off, and why (shown where the session reports its switches).
    void disable(std::string why) {
        state_ = State::Off;
        note_ = std::move(why);
    }
    // Why graphs are off although asked for: disable()'s reason, or a failed capture's
    // error ("" otherwise).
    const std::string& note() const { return note_; }
    // Log a capture at debug level, not info (a graph captured again and again).
    void set_quiet(bool quiet) { quiet_ = quiet; }

    // Runs `work` as the state says. A capture that throws is ended and discarded; an Error
    // is logged and the work runs eagerly from then on (its message becomes note()),
    // anything else is rethrown after the cleanup, so the stream is never left capturing.
    void run(const std::function<void()>& work);

private:
    Backend& be_;
    Logger& log_;
    int id_;
    const char* what_;
    State state_ = State::Off;
    std::string note_;
    bool quiet_ = false;
};

// Milliseconds on the steady clock: step times are differences of these.
inline double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// One enqueued step whose figures have not come back yet.
struct PendingStep {
    int64_t step;
    int slot;  // read-back ring slot
    double t0_ms, lr;
    int64_t tokens_total;
    // The targets its loss is the mean over (every rank's), when some were ignored
    // (Session::step_examples); 0: every token the step processed.
    int64_t counted = 0;
};

class ReadbackRing {
public:
    explicit ReadbackRing(Backend& backend) : be_(backend) {}

    void set_max_inflight(int64_t n) { max_inflight_ = n; }
    // Starts the asynchronous copy of *scalars for `step` (its slot is step % kScalarSlots).
    void push(int64_t step, const StepScalars* scalars, double t0_ms, double lr,
              int64_t tokens_total, int64_t counted = 0);
    // Hands completed steps, oldest first, to `done`: all of them (wait_all), else those
    // ready plus as many as keep at most max_inflight - 1 in flight.
    void collect(bool wait_all, const std::function<void(const PendingStep&, const StepScalars&)>& done);
    bool empty() const { return pending_.empty(); }
    void clear() { pending_.clear(); }

private:
    Backend& be_;
    int64_t max_inflight_ = 1;
    std::deque<PendingStep> pending_;
};

}  // namespace trt
