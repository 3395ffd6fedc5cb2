#include "runtime/step_engine.h"

#include "core/error.h"

namespace trt {

void GraphRunner::run(const std::function<void()>& work) {
    switch (state_) {
        case State::Off:
            work();
            return;
        case State::Warmup:
            work();
            state_ = State::Capture;
            return;
        case State::Capture: {
            auto discard = [&] {
                try {
                    be_.end_capture(-1);
                } catch (...) {
                    // the capture had already ended (end_capture itself failed)
                }
            };
            try {
                be_.begin_capture();
                work();
                be_.end_capture(id_);
            } catch (const Error& e) {
                discard();
                state_ = State::Off;
                note_ = e.what();
                log_.warn("accel.cuda_graphs: capturing the ", what_, " failed (", e.what(),
                          "); running it eagerly from now on");
                work();
                return;
            } catch (...) {
                discard();
                state_ = State::Off;
                throw;
            }
            state_ = State::Ready;
            if (quiet_)
                log_.debug("accel.cuda_graphs: the ", what_, " is captured");
            else
                log_.info("accel.cuda_graphs: the ", what_,
                          " is captured; replaying it from now on");
            be_.replay_graph(id_);
            return;
        }
        case State::Ready:
            be_.replay_graph(id_);
            return;
    }
}

void ReadbackRing::push(int64_t step, const StepScalars* scalars, double t0_ms, double lr,
                        int64_t tokens_total, int64_t counted) {
    const int slot = static_cast<int>(step % OptimizerStep::kScalarSlots);
    optimizer_step_of(be_).read_scalars_async(slot, scalars);
    pending_.push_back(PendingStep{step, slot, t0_ms, lr, tokens_total, counted});
}

void ReadbackRing::collect(bool wait_all,
                           const std::function<void(const PendingStep&, const StepScalars&)>& done) {
    // pending_ never exceeds max_inflight_ <= kScalarSlots, so a ring slot is read before
    // a later step reuses it.
    while (!pending_.empty()) {
        const PendingStep p = pending_.front();
        const bool must = wait_all || static_cast<int64_t>(pending_.size()) > max_inflight_ - 1;
        if (!must && !optimizer_step_of(be_).scalars_ready(p.slot)) break;
        const StepScalars r = optimizer_step_of(be_).read_scalars(p.slot);
        pending_.pop_front();
        done(p, r);
    }
}

}  // namespace trt
