#include "runtime/optimizer.h"

#include <vector>

namespace trt {

AdamW::AdamW(Backend& backend, const ParamTable& table, const OptimConfig& config,
             bool dynamic_loss_scale, bool fused)
    : be_(backend), table_(table), config_(config), fused_(fused) {
    const size_t n = table_.grad_total();
    m_ = static_cast<float*>(be_.alloc(n * sizeof(float), "AdamW first moments"));
    v_ = static_cast<float*>(be_.alloc(n * sizeof(float), "AdamW second moments"));
    policy_.dynamic = dynamic_loss_scale;
    // Decay only tensors with >= 2 dims (the table interleaves them with biases/LN params):
    // one segment per tensor, so the fused update is one pass over a run. A vocab matrix's
    // padding rows are a segment of their own without decay (zero gradient, so they stay 0).
    const float wd = static_cast<float>(config_.weight_decay);
    for (const ParamTensor& t : table_.tensors()) {
        if (!t.trainable) continue;
        ranges_.push_back({t.offset, t.grad_offset, t.numel, t.decay ? wd : 0.0f});
        if (t.padding > 0)
            ranges_.push_back({t.offset + t.numel, t.grad_offset + t.numel, t.padding, 0.0f});
    }
    // Runs: a range continues the run when it follows it in both buffers.
    std::vector<int64_t> ends, numel;
    std::vector<float> decay;
    std::vector<size_t> run_first;  // index of each run's first range
    for (size_t i = 0; i < ranges_.size(); ++i) {
        const Range& r = ranges_[i];
        const bool joins = !runs_.empty() &&
                           runs_.back().offset + runs_.back().numel == r.offset &&
                           runs_.back().grad_offset + runs_.back().numel == r.grad_offset;
        if (!joins) {
            runs_.push_back({r.offset, r.grad_offset, 0, ParamSegments{}});
            run_first.push_back(i);
        }
        runs_.back().numel += r.numel;
        ends.push_back(static_cast<int64_t>(runs_.back().numel));
        numel.push_back(static_cast<int64_t>(r.numel));
        decay.push_back(r.decay);
    }
    segment_ends_ = be_.alloc(ends.size() * sizeof(int64_t), "AdamW segment table");
    segment_decay_ = be_.alloc(decay.size() * sizeof(float), "AdamW segment table");
    be_.copy_to_device(segment_ends_, ends.data(), ends.size() * sizeof(int64_t));
    be_.copy_to_device(segment_decay_, decay.data(), decay.size() * sizeof(float));
    for (size_t k = 0; k < runs_.size(); ++k) {
        const size_t first = run_first[k];
        const size_t last = k + 1 < runs_.size() ? run_first[k + 1] : ranges_.size();
        runs_[k].segments.ends = static_cast<const int64_t*>(segment_ends_) + first;
        runs_[k].segments.weight_decay = static_cast<const float*>(segment_decay_) + first;
        runs_[k].segments.count = static_cast<int32_t>(last - first);
    }
    tensor_numel_ = be_.alloc(numel.size() * sizeof(int64_t), "AdamW segment table");
    be_.copy_to_device(tensor_numel_, numel.data(), numel.size() * sizeof(int64_t));
}

AdamW::~AdamW() {
    be_.free(m_);
    be_.free(v_);
    be_.free(segment_ends_);
    be_.free(segment_decay_);
    be_.free(tensor_numel_);
}

void AdamW::update(float* params, const float* grads, StepScalars* s) {
    be_.grad_norm_clip(s, grads, table_.grad_total(), static_cast<float>(config_.grad_clip));
    AdamWConfig hp;
    hp.beta1 = static_cast<float>(config_.beta1);
    hp.beta2 = static_cast<float>(config_.beta2);
    hp.eps = static_cast<float>(config_.eps);
    if (fused_) {
        for (const Run& r : runs_)
            be_.adamw_step(params + r.offset, grads + r.grad_offset, m_ + r.grad_offset,
                           v_ + r.grad_offset, r.numel, r.segments, hp, s);
    } else {
        const auto* numel = static_cast<const int64_t*>(tensor_numel_);
        const auto* decay = static_cast<const float*>(segment_decay_);
        for (size_t i = 0; i < ranges_.size(); ++i) {
            const Range& r = ranges_[i];
            ParamSegments one;
            one.ends = numel + i;
            one.weight_decay = decay + i;
            one.count = 1;
            be_.adamw_step(params + r.offset, grads + r.grad_offset, m_ + r.grad_offset,
                           v_ + r.grad_offset, r.numel, one, hp, s);
        }
    }
    be_.end_step(s, policy_);
}

}  // namespace trt
