#include "runtime/optimizer.h"

#include <vector>

namespace trt {

AdamW::AdamW(Backend& backend, const ParamTable& table, const OptimConfig& config,
             bool dynamic_loss_scale, bool fused)
    : be_(backend), table_(table), config_(config), fused_(fused) {
    const size_t n = table_.total();
    m_ = static_cast<float*>(be_.alloc(n * sizeof(float), "AdamW first moments"));
    v_ = static_cast<float*>(be_.alloc(n * sizeof(float), "AdamW second moments"));
    policy_.dynamic = dynamic_loss_scale;
    // Decay only tensors with >= 2 dims (the table interleaves them with biases/LN params):
    // one segment per tensor, so the fused update is one pass over the flat buffer. A vocab
    // matrix's padding rows are a segment of their own without decay (zero gradient, so they
    // stay 0).
    for (const ParamTensor& t : table_.tensors()) {
        ranges_.push_back({t.offset, t.numel, t.decay ? static_cast<float>(config_.weight_decay)
                                                      : 0.0f});
        if (t.padding > 0) ranges_.push_back({t.offset + t.numel, t.padding, 0.0f});
    }
    std::vector<int64_t> ends, numel;
    std::vector<float> decay;
    for (const Range& r : ranges_) {
        ends.push_back(static_cast<int64_t>(r.offset + r.numel));
        numel.push_back(static_cast<int64_t>(r.numel));
        decay.push_back(r.decay);
    }
    segment_ends_ = be_.alloc(ends.size() * sizeof(int64_t), "AdamW segment table");
    segment_decay_ = be_.alloc(decay.size() * sizeof(float), "AdamW segment table");
    be_.copy_to_device(segment_ends_, ends.data(), ends.size() * sizeof(int64_t));
    be_.copy_to_device(segment_decay_, decay.data(), decay.size() * sizeof(float));
    segments_.ends = static_cast<const int64_t*>(segment_ends_);
    segments_.weight_decay = static_cast<const float*>(segment_decay_);
    segments_.count = static_cast<int32_t>(ends.size());
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
    const size_t n = table_.total();
    be_.grad_norm_clip(s, grads, n, static_cast<float>(config_.grad_clip));
    AdamWConfig hp;
    hp.beta1 = static_cast<float>(config_.beta1);
    hp.beta2 = static_cast<float>(config_.beta2);
    hp.eps = static_cast<float>(config_.eps);
    if (fused_) {
        be_.adamw_step(params, grads, m_, v_, n, segments_, hp, s);
    } else {
        const auto* numel = static_cast<const int64_t*>(tensor_numel_);
        for (size_t i = 0; i < ranges_.size(); ++i) {
            const size_t off = ranges_[i].offset;
            ParamSegments one;
            one.ends = numel + i;
            one.weight_decay = segments_.weight_decay + i;
            one.count = 1;
            be_.adamw_step(params + off, grads + off, m_ + off, v_ + off, ranges_[i].numel, one,
                           hp, s);
        }
    }
    be_.end_step(s, policy_);
}

}  // namespace trt
