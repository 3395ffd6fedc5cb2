#include "runtime/optimizer.h"

#include <cmath>

namespace trt {

AdamW::AdamW(Backend& backend, const ParamTable& table, const OptimConfig& config)
    : be_(backend), table_(table), config_(config) {
    m_ = static_cast<float*>(be_.alloc(table_.total() * sizeof(float)));
    v_ = static_cast<float*>(be_.alloc(table_.total() * sizeof(float)));
}

AdamW::~AdamW() {
    be_.free(m_);
    be_.free(v_);
}

AdamW::StepFigures AdamW::update(float* params, const float* grads, double lr, int64_t step) {
    StepFigures f;
    f.grad_norm = std::sqrt(be_.sum_squares(grads, table_.total()));
    f.clip_scale = 1.0;
    if (config_.grad_clip > 0.0) {
        // clip_grad_norm_: coef = max_norm / (norm + 1e-6), applied only when < 1.
        const double coef = config_.grad_clip / (f.grad_norm + 1e-6);
        if (coef < 1.0) f.clip_scale = coef;
    }
    AdamWParams p;
    p.lr = static_cast<float>(lr);
    p.beta1 = static_cast<float>(config_.beta1);
    p.beta2 = static_cast<float>(config_.beta2);
    p.eps = static_cast<float>(config_.eps);
    p.step = step;
    p.grad_scale = static_cast<float>(f.clip_scale);
    // Decay only tensors with >= 2 dims; the table keeps them interleaved with the
    // biases/LN params, so update tensor by tensor (cheap on the CPU; the CUDA backend
    // will do one multi-tensor launch).
    for (const ParamTensor& t : table_.tensors()) {
        p.weight_decay = t.decay ? static_cast<float>(config_.weight_decay) : 0.0f;
        be_.adamw_update(params + t.offset, grads + t.offset, m_ + t.offset, v_ + t.offset,
                         t.numel, p);
    }
    return f;
}

}  // namespace trt
