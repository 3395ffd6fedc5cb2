// AdamW over the flat parameter buffer, torch.optim.AdamW semantics, with global-norm
// gradient clipping as torch.nn.utils.clip_grad_norm_ and the GPT-2 decay convention.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "config/run_config.h"
#include "model/param_table.h"

namespace trt {

class AdamW {
public:
    AdamW(Backend& backend, const ParamTable& table, const OptimConfig& config);
    ~AdamW();
    AdamW(const AdamW&) = delete;
    AdamW& operator=(const AdamW&) = delete;

    struct StepFigures {
        double grad_norm;  // before clipping
        double clip_scale; // factor applied to the grads (1 = not clipped)
    };
    // One update of params from grads at learning rate lr; `step` is 1-based.
    StepFigures update(float* params, const float* grads, double lr, int64_t step);

    float* m() { return m_; }
    float* v() { return v_; }

private:
    Backend& be_;
    const ParamTable& table_;
    OptimConfig config_;
    float* m_ = nullptr;  // first moments, table.total() floats
    float* v_ = nullptr;  // second moments
};

}  // namespace trt
