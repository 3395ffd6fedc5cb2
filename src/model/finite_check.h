// Finite checks on whole parameter-shaped buffers (weights, AdamW moments), naming the first
// tensor and element that is NaN or infinite. Used where weights enter the runtime (files)
// and where they leave it (checkpoints, exports): a NaN must never be loaded silently nor
// written where a later run would trust it.
#pragma once
#include <string>

#include "model/param_table.h"

namespace trt {

// Throws Error(NonFinite): "<source>: tensor 'NAME' holds nan at element I of N; <advice>"
// for the first non-finite value of `host` (laid out by `table`, padding rows skipped).
void require_finite(const ParamTable& table, const float* host, const std::string& source,
                    const std::string& advice);
// The same for a compact buffer of the trainable tensors (AdamW moments: table.grad_total()
// floats, each trainable tensor at its grad_offset).
void require_finite_trainable(const ParamTable& table, const float* host,
                              const std::string& source, const std::string& advice);

}  // namespace trt
