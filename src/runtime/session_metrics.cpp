// Session: what a run reports of itself — metrics() (step, throughput, step-time
// percentiles, memory, loss scale) and the throughput figures train()'s reports share
// (runtime/perf.h holds the arithmetic).
#include <limits>
#include <vector>

#include "runtime/perf.h"
#include "runtime/session.h"

namespace trt {

SessionMetrics Session::metrics() const {
    SessionMetrics m;
    m.rank = static_cast<int32_t>(rank_);
    m.world_size = static_cast<int32_t>(world_size_);
    m.step = last_.step;  // completed (step_ counts enqueued ones)
    m.tokens_total = last_.tokens_total;
    m.tokens_per_s = recent_tokens_per_s();
    if (!recent_ms_.empty()) {
        const std::vector<double> ms(recent_ms_.begin(), recent_ms_.end());
        m.step_ms_p50 = percentile(ms, 0.50);
        m.step_ms_p95 = percentile(ms, 0.95);
    }
    m.model_flops_per_token = model_flops_per_token();
    m.peak_flops = peak_flops_per_s();
    m.mfu = mfu(m.tokens_per_s, m.model_flops_per_token, m.peak_flops);
    m.bytes_in_use = static_cast<int64_t>(backend_->bytes_in_use());
    m.bytes_reserved = static_cast<int64_t>(backend_->bytes_reserved());
    m.skipped_steps = skipped_steps_;
    m.loss_scale = loss_scale_;
    // last_.tokens is set only by a completed step (not by load()).
    m.last_loss = last_.tokens > 0 ? last_.loss : std::numeric_limits<double>::quiet_NaN();
    m.last_val_loss = last_val_loss_;
    return m;
}

double Session::recent_tokens_per_s() const {
    if (recent_ms_.empty()) return 0.0;
    double total = 0.0;
    for (double ms : recent_ms_) total += ms;
    const double tokens = static_cast<double>(tokens_per_step());
    return total > 0 ? tokens * recent_ms_.size() / (total / 1000.0) : 0.0;
}

double Session::model_flops_per_token() const {
    return flops_per_token(static_cast<int64_t>(model_->table().num_params()), run_.model.n_layer,
                           run_.model.d_model, run_.train.seq_len);
}

double Session::peak_flops_per_s() const {
    // Looked up once: the device's name can take a file read (/proc/cpuinfo), and metrics()
    // is called per step by hosts that poll it.
    if (peak_flops_ < 0)
        peak_flops_ = run_.runtime.peak_tflops > 0 ? run_.runtime.peak_tflops * 1e12
                                                   : peak_flops(backend_->device_name(), precision_);
    return peak_flops_;
}

double Session::peak_bytes_per_s() const {
    return run_.runtime.peak_gbs > 0 ? run_.runtime.peak_gbs * 1e9
                                     : trt::peak_bytes_per_s(backend_->device_name());
}

}  // namespace trt
