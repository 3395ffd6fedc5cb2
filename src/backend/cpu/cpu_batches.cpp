// Micro-batches into backend memory: host rows (the "host" placement) and the samplers on a
// resident token set (the "device" placement). These are the CPU twins of
// src/backend/cuda/kernels/sampler.cu; the window arithmetic is shared with it.
#include <algorithm>

#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "data/sampler_math.h"

namespace trt::cpu {

void load_rows(int32_t* inputs, int32_t* targets, const int32_t* rows, int B, int T) {
    for (int b = 0; b < B; ++b) {
        const int32_t* row = rows + static_cast<size_t>(b) * (T + 1);
        std::copy(row, row + T, inputs + static_cast<size_t>(b) * T);
        std::copy(row + 1, row + T + 1, targets + static_cast<size_t>(b) * T);
    }
}

void load_batch(int32_t* inputs, int32_t* targets, int32_t* positions,
                const int32_t* host_inputs, const int32_t* host_targets,
                const int32_t* host_positions, int B, int T) {
    const size_t n = static_cast<size_t>(B) * T;
    std::copy(host_inputs, host_inputs + n, inputs);
    std::copy(host_targets, host_targets + n, targets);  // -1: an ignored target, as it is
    if (host_positions != nullptr) {
        TRT_CHECK(positions != nullptr, "load_batch: positions given but no buffer for them");
#ifndef NDEBUG
        // The caller validates (backend.h): each row starts an example, then counts up or
        // starts another.
        for (size_t i = 0; i < n; ++i)
            TRT_CHECK(host_positions[i] == 0 ||
                          (i % T != 0 && host_positions[i] == host_positions[i - 1] + 1),
                      "load_batch: position ", host_positions[i], " at row ", i / T, ", column ",
                      i % T, " neither starts an example nor follows its predecessor");
#endif
        std::copy(host_positions, host_positions + n, positions);
    }
}

static void window_to_row(int32_t* inputs, int32_t* targets, const uint16_t* src, int T) {
    for (int t = 0; t < T; ++t) {
        inputs[t] = src[t];
        targets[t] = src[t + 1];
    }
}

void sample_window(int32_t* inputs, int32_t* targets, const DeviceTokens& data, int64_t start,
                   int B, int T) {
    TRT_CHECK(start >= 0 && start + static_cast<int64_t>(B) * T + 1 <= data.total,
              "sequential window [", start, ", +", static_cast<int64_t>(B) * T + 1,
              ") outside the ", data.total, " resident tokens");
    for (int b = 0; b < B; ++b)
        window_to_row(inputs + static_cast<size_t>(b) * T, targets + static_cast<size_t>(b) * T,
                      data.tokens + start + static_cast<int64_t>(b) * T, T);
}

void sample_random(int32_t* inputs, int32_t* targets, const DeviceTokens& data, uint64_t seed,
                   int64_t step, int64_t micro_step, int B, int T, int64_t row0) {
    TRT_CHECK(data.random_windows > 0, "random sampler: no shard holds T+1 tokens");
    TRT_CHECK(data.windows_T == T, "random sampler: the resident tokens' window count was "
              "computed for T = ", data.windows_T, ", not T = ", T);
    for (int r = 0; r < B; ++r) {
        const int64_t p = sampler_math::random_row_offset(
            data.shard_starts, data.num_shards, T, data.random_windows, seed, step, micro_step,
            row0 + r);
        TRT_CHECK(p >= 0, "random sampler: windows count ", data.random_windows,
                  " does not match the shards for T = ", T);
        window_to_row(inputs + static_cast<size_t>(r) * T, targets + static_cast<size_t>(r) * T,
                      data.tokens + p, T);
    }
}

}  // namespace trt::cpu
