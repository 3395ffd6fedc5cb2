#include "runtime/token_sampling.h"

#include "core/token_draw.h"

namespace trt {

double philox_uniform(uint64_t seed, uint64_t index) { return draw_uniform(seed, index); }

int32_t sample_token(const float* logits, int V, const TokenSamplingOptions& options,
                     uint64_t index) {
    return draw_token_on_host(logits, V, token_draw(options, index));
}

}  // namespace trt
