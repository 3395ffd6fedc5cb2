#include "runtime/schedule.h"

#include <algorithm>
#include <cmath>

namespace trt {

double scheduled_lr(const OptimConfig& o, int64_t total_steps, int64_t step) {
    if (o.warmup_steps > 0 && step <= o.warmup_steps)
        return o.lr * static_cast<double>(step) / static_cast<double>(o.warmup_steps);
    if (o.schedule == Schedule::Constant) return o.lr;
    const int64_t decay_steps = total_steps - o.warmup_steps;
    const double progress =
        decay_steps <= 0 ? 1.0
                         : std::clamp(static_cast<double>(step - o.warmup_steps) /
                                          static_cast<double>(decay_steps), 0.0, 1.0);
    if (o.schedule == Schedule::Cosine)
        return o.min_lr + 0.5 * (o.lr - o.min_lr) * (1.0 + std::cos(M_PI * progress));
    return o.lr - (o.lr - o.min_lr) * progress;  // Linear
}

}  // namespace trt
