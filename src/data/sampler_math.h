// The random sampler's index math, shared by the host sampler (sampler.cpp), the CPU
// backend's resident sampler, the CUDA kernel (kernels/sampler.cu) and a host
// unit test (tests/unit/data/test_sampler_math.cpp) that checks it against the CPU
// sample_random (src/data/sampler.h) without a GPU. Plain integer math: host and device agree
// bit for bit.
#pragma once
#include <cstdint>

#include "core/philox.h"

#if defined(__CUDA_ARCH__)
#define TRT_SAMPLER_UNROLL _Pragma("unroll")
#else
#define TRT_SAMPLER_UNROLL
#endif

namespace trt::sampler_math {

// Shards whose start offsets are fetched together in random_window_offset: the loads of one
// group are independent, so a device thread has them in flight at once instead of paying one
// memory round trip per shard (datasets can have ~1000 shards).
constexpr int kShardGroup = 8;

// Row `row`'s draw in [0, W): Philox4x32-10, key = (seed lo, seed hi),
// counter = (step, micro_step, row, 0) each truncated to 32 bits as the CPU sampler does;
// u = x0 | x1 << 32; idx = u mod W. W == 0 has no valid draw: returns 0 (callers reject it).
TRT_HOST_DEVICE inline uint64_t random_window_index(uint64_t seed, int64_t step,
                                                    int64_t micro_step, int64_t row,
                                                    uint64_t W) {
    if (W == 0) return 0;
    const Philox4x32 x =
        philox4x32_10(static_cast<uint32_t>(step), static_cast<uint32_t>(micro_step),
                      static_cast<uint32_t>(row), 0u, static_cast<uint32_t>(seed),
                      static_cast<uint32_t>(seed >> 32));
    const uint64_t u = static_cast<uint64_t>(x.v[0]) | (static_cast<uint64_t>(x.v[1]) << 32);
    return u % W;
}

// idx → offset of the window's first token in the concatenated tokens. shard_starts holds
// num_shards + 1 cumulative offsets; shard s contributes max(0, n_s - T) valid starts, taken
// in shard order. Returns -1 when idx is past the last valid start (W inconsistent with the
// shards).
TRT_HOST_DEVICE inline int64_t random_window_offset(const int64_t* shard_starts,
                                                    int32_t num_shards, int64_t T,
                                                    uint64_t idx) {
    for (int32_t s0 = 0; s0 < num_shards; s0 += kShardGroup) {
        int64_t st[kShardGroup + 1];
        // Clamped to shard_starts[num_shards] (in bounds); the clamped tail is never used.
        TRT_SAMPLER_UNROLL
        for (int j = 0; j <= kShardGroup; ++j)
            st[j] = shard_starts[s0 + j < num_shards ? s0 + j : num_shards];
        TRT_SAMPLER_UNROLL
        for (int j = 0; j < kShardGroup; ++j) {
            if (s0 + j >= num_shards) break;
            const int64_t n = st[j + 1] - st[j];
            const uint64_t count = n > T ? static_cast<uint64_t>(n - T) : 0;
            if (idx < count) return st[j] + static_cast<int64_t>(idx);
            idx -= count;
        }
    }
    return -1;
}

// Both steps: the global token offset p of row `row`'s window tokens[p, p + T + 1), or -1.
// W must equal the sum of max(0, n_s - T) over the shards (DeviceTokens::random_windows).
TRT_HOST_DEVICE inline int64_t random_row_offset(const int64_t* shard_starts,
                                                 int32_t num_shards, int64_t T, uint64_t W,
                                                 uint64_t seed, int64_t step,
                                                 int64_t micro_step, int64_t row) {
    if (W == 0) return -1;
    return random_window_offset(shard_starts, num_shards, T,
                                random_window_index(seed, step, micro_step, row, W));
}

}  // namespace trt::sampler_math
