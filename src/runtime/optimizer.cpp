#include "runtime/optimizer.h"

#include <vector>

namespace trt {

AdamW::AdamW(Backend& backend, const ParamTable& table, const OptimConfig& config,
             bool dynamic_loss_scale)
    : be_(backend), table_(table), config_(config) {
    const size_t n = table_.total();
    m_ = static_cast<float*>(be_.alloc(n * sizeof(float), "AdamW first moments"));
    v_ = static_cast<float*>(be_.alloc(n * sizeof(float), "AdamW second moments"));
    policy_.dynamic = dynamic_loss_scale;
    // Decay only tensors with >= 2 dims (the table interleaves them with biases/LN params):
    // one segment per tensor, so the fused update is one pass over the flat buffer.
    std::vector<int64_t> ends;
    std::vector<float> decay;
    for (const ParamTensor& t : table_.tensors()) {
        ends.push_back(static_cast<int64_t>(t.offset + t.numel));
        decay.push_back(t.decay ? static_cast<float>(config_.weight_decay) : 0.0f);
    }
    segment_ends_ = be_.alloc(ends.size() * sizeof(int64_t), "AdamW segment table");
    segment_decay_ = be_.alloc(decay.size() * sizeof(float), "AdamW segment table");
    be_.copy_to_device(segment_ends_, ends.data(), ends.size() * sizeof(int64_t));
    be_.copy_to_device(segment_decay_, decay.data(), decay.size() * sizeof(float));
    segments_.ends = static_cast<const int64_t*>(segment_ends_);
    segments_.weight_decay = static_cast<const float*>(segment_decay_);
    segments_.count = static_cast<int32_t>(ends.size());
}

AdamW::~AdamW() {
    be_.free(m_);
    be_.free(v_);
    be_.free(segment_ends_);
    be_.free(segment_decay_);
}

void AdamW::update(float* params, const float* grads, StepScalars* s) {
    const size_t n = table_.total();
    be_.grad_norm_clip(s, grads, n, static_cast<float>(config_.grad_clip));
    AdamWConfig hp;
    hp.beta1 = static_cast<float>(config_.beta1);
    hp.beta2 = static_cast<float>(config_.beta2);
    hp.eps = static_cast<float>(config_.eps);
    be_.adamw_step(params, grads, m_, v_, n, segments_, hp, s);
    be_.end_step(s, policy_);
}

}  // namespace trt
