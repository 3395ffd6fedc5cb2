// The arithmetic of drawing the next token from a row of logits, written once for the host
// (runtime/token_sampling.h's sample_token) and the CUDA kernel (backend op draw_token), so
// both pick the same token from the same logits:
//   order   every logit gets a 64-bit key whose ascending order is: larger logit first, then
//           smaller id (descending_key); the top k are the k smallest keys, a total order, so
//           both sides see the same sequence whatever sort they use;
//   weights w_i = exp((logit_i - top) / temperature) in double (top = the largest logit);
//   sums    in chunks of kDrawChunk consecutive kept entries: each chunk summed in order, the
//           chunks' sums added in order (the total); the draw u = uniform * total walks the
//           chunks, then the entries of the chunk it falls in (draw_from_sorted), so a kernel
//           can sum the chunks in parallel and still add exactly what the host adds;
//   uniform draw `index` of stream `seed`: Philox4x32-10, key = seed, counter = (index, 0, 0,
//           0), 53 bits (draw_uniform).
// The one difference left is exp itself: the host's libm and CUDA's double exp may differ in
// the last bit, which moves a draw only when u lands within ~1e-16 (relative) of a boundary
// between two tokens.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/float_bits.h"
#include "core/philox.h"

namespace trt {

constexpr int kDrawChunk = 64;

// What to draw: temperature > 0 scales the logits by 1/temperature, 0 = greedy (the largest
// logit, ties to the lowest id); top_k keeps the k largest (0 or >= V: all); draw `index` of
// stream `seed` — or, when index_at is set (backend memory), the index read there when the
// draw runs (a decode step a graph replays; index is then ignored).
struct TokenDraw {
    double temperature = 1.0;
    int top_k = 0;
    uint64_t seed = 1337;
    uint64_t index = 0;
    const uint64_t* index_at = nullptr;
};

TRT_HOST_DEVICE inline double draw_uniform(uint64_t seed, uint64_t index) {
    const Philox4x32 r =
        philox4x32_10(static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0,
                      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32 | r.v[1]) >> 11;  // 53 bits
    return static_cast<double>(bits) * 0x1.0p-53;
}

// A key whose unsigned order is: larger logit first, then smaller id. The float's bits are
// mapped to an unsigned integer increasing with the value (-0 taken as +0, which compares
// equal to it), then flipped. For finite logits.
TRT_HOST_DEVICE inline uint64_t descending_key(float logit, int32_t id) {
    if (logit == 0.0f) logit = 0.0f;
    uint32_t u = float_bits(logit);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending with the value
    return static_cast<uint64_t>(~u) << 32 | static_cast<uint32_t>(id);
}
TRT_HOST_DEVICE inline int32_t key_id(uint64_t key) {
    return static_cast<int32_t>(key & 0xffffffffu);
}
// The logit a key was made from (+0 for -0).
TRT_HOST_DEVICE inline float key_logit(uint64_t key) {
    uint32_t u = ~static_cast<uint32_t>(key >> 32);
    u = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
    return bits_float(u);
}

TRT_HOST_DEVICE inline double draw_weight(uint64_t key, double top, double inv_t) {
    return exp((static_cast<double>(key_logit(key)) - top) * inv_t);
}

// The sum of chunk c's weights (keys[c·kDrawChunk, min(k, (c+1)·kDrawChunk)), in order.
TRT_HOST_DEVICE inline double draw_chunk_sum(const uint64_t* keys, int k, int c, double top,
                                             double inv_t) {
    const int end = (c + 1) * kDrawChunk < k ? (c + 1) * kDrawChunk : k;
    double s = 0.0;
    for (int i = c * kDrawChunk; i < end; ++i) s += draw_weight(keys[i], top, inv_t);
    return s;
}

// The drawn id, from the k kept keys in ascending order and their chunks' sums (chunk_sums[c]
// = draw_chunk_sum(keys, k, c, ...), ceil(k / kDrawChunk) of them).
TRT_HOST_DEVICE inline int32_t draw_from_sorted(const uint64_t* keys, int k,
                                                const double* chunk_sums, double inv_t,
                                                double uniform) {
    const int chunks = (k + kDrawChunk - 1) / kDrawChunk;
    const double top = static_cast<double>(key_logit(keys[0]));
    double total = 0.0;
    for (int c = 0; c < chunks; ++c) total += chunk_sums[c];
    const double u = uniform * total;
    double acc = 0.0;
    for (int c = 0; c < chunks; ++c) {
        if (u < acc + chunk_sums[c]) {
            const int end = (c + 1) * kDrawChunk < k ? (c + 1) * kDrawChunk : k;
            double a = acc;
            for (int i = c * kDrawChunk; i < end; ++i) {
                a += draw_weight(keys[i], top, inv_t);
                if (u < a) return key_id(keys[i]);
            }
        }
        acc += chunk_sums[c];
    }
    return key_id(keys[k - 1]);  // u rounded up to the total
}

// The draw on the host, for logits[V] (finite): greedy, or the sorted keys, the chunked sums
// and draw_from_sorted (token_draw.cpp). Thread-local scratch, reused between calls.
int32_t draw_token_on_host(const float* logits, int V, const TokenDraw& d);

}  // namespace trt
