// Learning-rate schedule: linear warmup, then constant / cosine / linear decay to min_lr
// over the remaining steps of train.steps.
#pragma once
#include <cstdint>

#include "config/run_config.h"

namespace trt {

// lr for optimizer step `step` (1-based) of `total_steps`.
//   step <= warmup:  lr * step / warmup
//   after:           p = (step - warmup) / (total - warmup) in [0, 1]
//     constant: lr;  cosine: min_lr + (lr - min_lr) * (1 + cos(pi p)) / 2;
//     linear:   lr - (lr - min_lr) * p
double scheduled_lr(const OptimConfig& optim, int64_t total_steps, int64_t step);

}  // namespace trt
