// Session: the train() loop — steps up to train.steps (or n more), and after each the eval
// and checkpoint its number calls for, and the report; stopping on request (between steps,
// inside an eagerly run step, during an eval) or when the progress callback says so, with
// the ranks of a world agreeing on where.
#include <algorithm>
#include <atomic>

#include "config/size_limits.h"
#include "runtime/session.h"
#include "runtime/session_dist.h"

namespace trt {

TrainOutcome Session::train_on_this_rank(int64_t n_steps, const ProgressCallback& callback) {
    const int64_t total = run_.train.steps;
    // step_ <= limits::kMaxSteps (config and checkpoint bounds), so this cannot overflow;
    // more than kMaxSteps at once (INT64_MAX = "until stopped") counts as kMaxSteps.
    const int64_t target = n_steps > 0 ? step_ + std::min(n_steps, limits::kMaxSteps) : total;
    if (step_ < target) refuse_empty_train_split();  // before the run leaves any trace
    TrainRun run{callback, total, target, open_metrics_log(target), now_ms(),
                 val_data_.has_value() && run_.train.eval_every > 0, std::nullopt};

    // However train() ends, a stop request made during it was for it: do not let it stop
    // the next one. (A request made while no train() runs is seen by train_step.)
    struct ClearStopOnExit {
        std::atomic<bool>& flag;
        ~ClearStopOnExit() { flag.store(false); }
    } clear_stop{stop_requested_};

    if (step_ >= target) {
        const int64_t at = std::max(step_, total);
        log_.info("train: already at step ", step_, " of train.steps = ", total,
                  "; nothing to do (to go on: raise train.steps, e.g. --set train.steps=",
                  at + std::max<int64_t>(1, at / 2), ", or run n more steps with "
                  "--steps N / trainrt_session_train(n); to start over: --fresh)");
        return TrainOutcome::Completed;
    }
    warn_resume_differences();
    log_.info("train: steps ", step_ + 1, " to ", target, " of ", std::max(total, target));
    if (target > total)
        log_.warn("train: steps ", std::max(step_, total) + 1, " to ", target, " go past "
                  "train.steps = ", total, ", where the learning-rate schedule ends: they run "
                  "at its final lr (optim.min_lr for a decaying schedule); raise train.steps "
                  "to stretch the schedule instead");
    completed_.clear();
    while (step_ < target)
        if (const std::optional<TrainOutcome> stopped = train_step(run))
            return end_train(run, *stopped);
    return end_train(run, TrainOutcome::Completed);
}

std::optional<TrainOutcome> Session::train_step(TrainRun& run) {
    // Ranks stop at the same step, or the others would wait at its all-reduce.
    bool stop = stop_requested_.exchange(false);
    if (world_size_ > 1) stop = any_rank(*world_, stop);
    if (stop) return stop_train(run, true, cat("train: stopped on request after step ", step_));
    try {
        step_on_this_rank(true);
    } catch (const StepAbandoned& a) {
        return stop_train(run, true,
                          cat("train: stopped on request during step ", step_ + 1,
                              " (before micro-batch ", a.next + 1, " of train.grad_accum = ",
                              run_.train.grad_accum, "); that step was abandoned: the weights, "
                              "optimizer state and sampler are as after step ", step_));
    } catch (const Error& e) {
        if (e.status() == Status::NonFinite) report_completed(run);  // the steps up to it
        throw;
    }
    const bool last = step_ == run.target;
    const bool eval_now = run.can_eval && (step_ % run_.train.eval_every == 0 || last);
    const bool checkpoint_now = checkpoint_due();
    // Evals, checkpoints and the end need this step's figures first.
    if (last || eval_now || checkpoint_now) sync();
    bool go_on = report_completed(run);
    throw_if_diverged();  // a divergence the sync just brought in
    if (eval_now) {
        double val = 0.0;
        try {
            val = run_eval(true);
        } catch (const Error& e) {
            if (e.status() != Status::Cancelled) throw;
            return stop_train(run, false,
                              cat("train: stopped on request during the eval after step ", step_));
        }
        if (run.metrics) run.metrics->write_val(step_, val);
        go_on = report_progress(run, TRAINRT_PROGRESS_EVAL, last_, val) && go_on;
    }
    if (checkpoint_now) checkpoint_in_train(run.failed_checkpoint);
    if (world_size_ > 1) go_on = !any_rank(*world_, !go_on);
    if (!go_on)
        return stop_train(run, true,
                          cat("train: stopped by the progress callback after step ", step_));
    return std::nullopt;
}

TrainOutcome Session::stop_train(TrainRun& run, bool wait, const std::string& why) {
    if (wait) sync();
    report_completed(run);
    log_.info(why);
    return TrainOutcome::Stopped;
}

// However the loop ends: a periodic checkpoint that failed is retried (train() fails only
// if that attempt still does).
TrainOutcome Session::end_train(const TrainRun& run, TrainOutcome outcome) {
    retry_failed_checkpoint(run.failed_checkpoint);
    return outcome;
}

}  // namespace trt
