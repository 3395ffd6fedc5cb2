// Drawing the next token from a row of logits (temperature, top-k, greedy), deterministic for
// a seed: draw i of a generation uses Philox4x32-10 with key = seed and counter = (i, 0, 0, 0),
// so the same seed, model and prompt give the same tokens on every machine and backend. The
// arithmetic is core/token_draw.h's, which the CUDA backend's draw_token shares.
#pragma once
#include <cstdint>
#include <vector>

#include "core/token_draw.h"

namespace trt {

struct TokenSamplingOptions {
    double temperature = 1.0;  // > 0 scales logits by 1/temperature; 0 = greedy (argmax)
    int top_k = 0;             // keep the k largest logits; 0 (or >= V) = all
    uint64_t seed = 1337;
    // Keep the window's keys and values between tokens (where the backend's
    // attention_cached_forward is verified: BackendCaps::cached_attention). false: run the
    // whole window per token, the reference the cached path is tested against.
    bool kv_cache = true;
    // Draw each token with the backend's draw_token even where the host holds the logits
    // (BackendCaps::device_draw decides otherwise): what tests use to hold that path to the
    // host's.
    bool backend_draw = false;
    // Generation ends after one of these ids (a chat model's end-of-turn tokens); empty: it
    // runs to the count asked for.
    std::vector<int32_t> stop_ids;
};

// Uniform double in [0, 1) from draw `index` of stream `seed` (53 random bits).
double philox_uniform(uint64_t seed, uint64_t index);

// Picks a token id in [0, V) from logits[V] (finite). Ties in greedy mode go to the lowest id.
// Thread-local scratch, reused between calls.
int32_t sample_token(const float* logits, int V, const TokenSamplingOptions& options,
                     uint64_t index);

// The draw of TokenSamplingOptions for draw `index` (core/token_draw.h), for draw_token.
inline TokenDraw token_draw(const TokenSamplingOptions& o, uint64_t index) {
    TokenDraw d;
    d.temperature = o.temperature;
    d.top_k = o.top_k;
    d.seed = o.seed;
    d.index = index;
    return d;
}

}  // namespace trt
