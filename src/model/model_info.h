// What a model costs, computed from its shape without allocating it: `trainrt info` and
// trainrt_config_model_info. The activation figure mirrors Gpt's layout (a test checks it
// against a real session's bytes_in_use).
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "model/param_table.h"

namespace trt {

struct ModelInfo {
    int64_t parameters = 0;
    double flops_per_token = 0;  // training: 6N + 6·L·C·T (forward + backward, attention incl.)
    int64_t bytes_parameters = 0;
    int64_t bytes_optimizer = 0;    // grads + AdamW m, v
    int64_t bytes_activations = 0;  // one micro-batch B x T, forward + backward scratch
    int64_t bytes_total = 0;
};

ModelInfo model_info(const GptShape& shape, int B, int T, const Backend& backend);

}  // namespace trt
