// Session: what train() reports as it goes — the progress callback (trainrt_progress: step,
// loss, throughput, elapsed and remaining time), and metrics.jsonl (FORMATS.md §5): its run
// header once per session or load, a line per logged step and per eval (rank 0 writes for
// the whole world).
#include <algorithm>

#include "core/version.h"
#include "runtime/perf.h"
#include "runtime/session.h"

namespace trt {

std::unique_ptr<MetricsLog> Session::open_metrics_log(int64_t target) {
    std::unique_ptr<MetricsLog> metrics;
    if (!run_.train.out_dir.empty() && rank_ == 0) {  // rank 0 writes for the whole world
        lock_out_dir();
        metrics = std::make_unique<MetricsLog>(run_.train.out_dir);
    }
    if (metrics && step_ < target && !run_header_written_) {
        // The run header (FORMATS.md §5): what this run is and runs on, for reports. Once per
        // session (and again after a load): a host training in chunks is one run, not resumes.
        metrics->write_run(step_, run_id_, resumed_from_, kVersionString, acceleration_line(),
                           model_line());
        run_header_written_ = true;
        // A fresh session in a folder that already holds history: its lines are a run of
        // their own (trainrt report keeps the earlier ones), which may not be what was meant.
        if (resumed_from_ < 0 && metrics->had_history())
            log_.info("metrics: appending a new run (", run_id_, ") to ", metrics->path(),
                      "; earlier runs are kept; load a checkpoint to continue one");
    }
    return metrics;
}

bool Session::report_progress(const TrainRun& run, int32_t kind, const StepResult& r,
                              double loss) {
    trainrt_progress p{};
    p.struct_size = sizeof p;
    p.version = TRAINRT_PROGRESS_VERSION;
    p.kind = kind;
    p.step = r.step;
    p.steps_total = std::max(run.total, run.target);  // `--steps N` may run past train.steps
    p.loss = loss;
    p.lr = r.lr;
    p.grad_norm = r.grad_norm;
    p.tokens_total = r.tokens_total;
    p.ms = r.ms;
    p.tokens_per_s = recent_tokens_per_s();
    p.elapsed_s = (now_ms() - run.t_start_ms) / 1000.0;
    const double tps = p.tokens_per_s;
    const double tokens_left = static_cast<double>(std::max<int64_t>(0, run.total - r.step)) *
                               static_cast<double>(r.tokens);
    p.eta_s = tps > 0 ? tokens_left / tps : 0.0;
    return run.callback ? run.callback(p) : true;
}

// The steps whose figures have come back (they lag the enqueued step_ by up to
// max_inflight - 1 on an asynchronous backend).
bool Session::report_completed(TrainRun& run) {
    bool go_on = true;
    std::vector<StepResult> done;
    done.swap(completed_);
    for (const StepResult& r : done) {
        if (r.step % run_.runtime.log_every != 0 && r.step != run.target) continue;
        if (run.metrics) {
            const double tps = recent_tokens_per_s();
            const double peak = peak_flops_per_s();
            run.metrics->write_train({r.step, r.loss, r.lr, r.grad_norm, r.tokens,
                                      r.tokens_total, r.ms, tps,
                                      peak > 0 ? mfu(tps, model_flops_per_token(), peak) : -1});
        }
        go_on = report_progress(run, TRAINRT_PROGRESS_STEP, r, r.loss) && go_on;
    }
    return go_on;
}

}  // namespace trt
