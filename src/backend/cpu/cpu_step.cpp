// The optimizer step on backend-resident StepScalars (backend.h): on the CPU "backend memory"
// is host memory, so these are plain functions; they are the twins the CUDA kernels in
// src/backend/cuda/kernels/optimizer.cu are tested against.
#include <cmath>

#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

namespace trt::cpu {

void begin_step(StepScalars* s, float lr, int64_t step) {
    s->lr = lr;
    s->step = step;
    s->loss_sum = 0.0;
    s->grad_norm = 0.0;
    s->clip_scale = 1.0f;
    s->nonfinite = 0;
}

void accumulate_loss(StepScalars* s, const float* losses, size_t n) {
    double sum = 0.0;  // in order: a few thousand values per micro-batch
    for (size_t i = 0; i < n; ++i) sum += losses[i];
    s->loss_sum += sum;
}

void grad_norm_clip(StepScalars* s, const float* grads, size_t n, float max_norm, int threads) {
    set_grad_norm(s, sum_squares(grads, n, threads), max_norm);
}

// The step's AdamW parameters from the scalars (weight_decay: per segment).
static AdamWParams step_params(const AdamWConfig& hp, const StepScalars* s) {
    AdamWParams p;
    p.lr = s->lr;
    p.beta1 = hp.beta1;
    p.beta2 = hp.beta2;
    p.eps = hp.eps;
    p.weight_decay = 0.0f;
    p.step = s->step;
    p.grad_scale = s->clip_scale / s->loss_scale;
    return p;
}

void adamw_step(float* params, const float* grads, float* m, float* v, size_t n,
                const ParamSegments& seg, const AdamWConfig& hp, const StepScalars* s,
                int threads) {
    if (s->nonfinite) return;  // GradScaler: a bad gradient never reaches the weights
    AdamWParams p = step_params(hp, s);
    int64_t begin = 0;
    for (int32_t i = 0; i < seg.count; ++i) {
        const int64_t end = seg.ends[i];
        TRT_CHECK(end > begin && static_cast<size_t>(end) <= n, "AdamW segment ", i, " [",
                  begin, ", ", end, ") is not inside the ", n, "-element buffer");
        p.weight_decay = seg.weight_decay[i];
        adamw_update(params + begin, grads + begin, m + begin, v + begin,
                     static_cast<size_t>(end - begin), p, threads);
        begin = end;
    }
    TRT_CHECK(static_cast<size_t>(begin) == n, "AdamW segments cover ", begin, " of ", n,
              " elements");
}

void adamw_step_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8, float* m_scale,
                   float* v_scale, const Q8Tables& tables, size_t n, const ParamSegments& seg,
                   const AdamWConfig& hp, const StepScalars* s, int threads) {
    if (s->nonfinite || n == 0) return;
    TRT_CHECK(seg.count > 0 && static_cast<size_t>(seg.ends[seg.count - 1]) == n,
              "AdamW segments do not cover the ", n, "-element buffer");
    adamw_update_q8(params, grads, m8, v8, m_scale, v_scale, tables, n, seg,
                    step_params(hp, s), threads);
}

void end_step(StepScalars* s, const LossScalePolicy& policy) {
    if (s->nonfinite) {
        s->skipped_steps += 1;
        s->good_steps = 0;
        if (policy.dynamic) s->loss_scale *= policy.backoff_factor;
        return;
    }
    s->good_steps += 1;
    if (policy.dynamic && s->good_steps >= policy.growth_interval) {
        // GradScaler: a growth that would overflow to inf is not taken.
        const float grown = s->loss_scale * policy.growth_factor;
        if (std::isfinite(grown)) s->loss_scale = grown;
        s->good_steps = 0;
    }
}

}  // namespace trt::cpu
