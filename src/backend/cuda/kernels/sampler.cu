// Batch kernels (the CUDA twins of load_rows' split, the sequential window and the random
// sampler of src/data/sampler.h). Pure gathers: every output element is written by exactly
// one thread, so the results are exact and reproducible; the random sampler's index math is
// shared with the host (sampler_math.h) and tested there against the CPU sampler.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "data/sampler_math.h"
#include "core/error.h"

namespace trt::cuda {

namespace {

constexpr int kThreads = 256;
// Grid-stride kernels need no more blocks than this to fill any current device.
constexpr int64_t kMaxCopyBlocks = 65536;
// sample_random: columns of one row per block (kThreads threads, 4 columns each).
constexpr int kRowChunk = 1024;

int copy_blocks(int64_t n) {
    const int64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<int>(b < kMaxCopyBlocks ? b : kMaxCopyBlocks);
}

// rows [B, T+1] → inputs/targets [B, T]; i = b*T + t over the n = B*T outputs.
__global__ void split_rows_kernel(int32_t* __restrict__ inputs, int32_t* __restrict__ targets,
                                  const int32_t* __restrict__ rows, int64_t n, int64_t T) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t b = i / T, t = i - b * T;
        const int32_t* row = rows + b * (T + 1);
        inputs[i] = row[t];
        targets[i] = row[t + 1];
    }
}

// Row b = tokens[start + b*T, +T+1): consecutive rows overlap by one token, so output i =
// b*T + t reads tokens[start + i] (input) and tokens[start + i + 1] (target): a flat copy.
// start is read from device memory (the step's uploaded window, so a graph replays it); a
// window outside the token set writes token 0 instead of reading out of bounds (the host
// validated it before the upload, so this is a host bug, not a data error).
__global__ void sample_window_kernel(int32_t* __restrict__ inputs,
                                     int32_t* __restrict__ targets,
                                     const uint16_t* __restrict__ tokens,
                                     const int64_t* __restrict__ start_ptr, int64_t total,
                                     int64_t n) {
    const int64_t start = *start_ptr;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    if (start < 0 || start > total - n - 1) {
        for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
             i += stride)
            inputs[i] = targets[i] = 0;
        return;
    }
    const uint16_t* src = tokens + start;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        inputs[i] = src[i];
        targets[i] = src[i + 1];
    }
}

// One block per (row, chunk of kRowChunk columns): blockIdx.x = row * chunks + chunk.
// Thread 0 draws the row's window (cheap: one Philox and a walk over the shard starts; each
// chunk of the row repeats it rather than synchronising with the others), then the block
// copies tokens[p + c] → inputs[row, c] and tokens[p + c + 1] → targets[row, c].
__global__ void sample_random_kernel(int32_t* __restrict__ inputs,
                                     int32_t* __restrict__ targets,
                                     const uint16_t* __restrict__ tokens,
                                     const int64_t* __restrict__ shard_starts,
                                     int32_t num_shards, uint64_t W, uint64_t seed,
                                     const StepScalars* __restrict__ s, int64_t micro_step,
                                     int64_t T, int chunks, int64_t row0) {
    __shared__ int64_t window;
    const int64_t step = s->step;
    const int64_t row = blockIdx.x / chunks;
    const int64_t c0 = static_cast<int64_t>(blockIdx.x % chunks) * kRowChunk;
    const int64_t c1 = c0 + kRowChunk < T ? c0 + kRowChunk : T;
    if (threadIdx.x == 0)
        window = sampler_math::random_row_offset(shard_starts, num_shards, T, W, seed, step,
                                                 micro_step, row0 + row);
    __syncthreads();
    const int64_t p = window;
    int32_t* in = inputs + row * T;
    int32_t* tg = targets + row * T;
    if (p < 0) {
        // random_windows disagrees with shard_starts (a host bug): write token 0 rather than
        // read outside the token set.
        for (int64_t c = c0 + threadIdx.x; c < c1; c += blockDim.x) in[c] = tg[c] = 0;
        return;
    }
    const uint16_t* src = tokens + p;
    for (int64_t c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
        in[c] = src[c];
        tg[c] = src[c + 1];
    }
}

}  // namespace

size_t sampler_scratch_bytes(const ModelDims& d) {
    (void)d;
    return 0;  // gathers only: no partials
}

void split_rows(const CudaCtx& ctx, int32_t* inputs, int32_t* targets, const int32_t* rows,
                int B, int T) {
    TRT_CHECK(B >= 0 && T > 0, "split_rows: B=", B, ", T=", T);
    if (B == 0) return;
    TRT_CHECK(inputs && targets && rows, "split_rows: null pointer");
    const int64_t n = static_cast<int64_t>(B) * T;
    split_rows_kernel<<<copy_blocks(n), kThreads, 0, ctx.stream>>>(inputs, targets, rows, n, T);
    TRT_CUDA_LAUNCH_CHECK();
}

void sample_window(const CudaCtx& ctx, int32_t* inputs, int32_t* targets,
                   const DeviceTokens& data, const int64_t* start, int B, int T) {
    TRT_CHECK(B >= 0 && T > 0, "sample_window: B=", B, ", T=", T);
    if (B == 0) return;
    TRT_CHECK(inputs && targets && data.tokens && start, "sample_window: null pointer");
    const int64_t n = static_cast<int64_t>(B) * T;
    TRT_CHECK(n + 1 <= data.total, "sample_window: ", B, "x", T, " rows need ", n + 1,
              " tokens; the resident set holds ", data.total);
    sample_window_kernel<<<copy_blocks(n), kThreads, 0, ctx.stream>>>(
        inputs, targets, data.tokens, start, data.total, n);
    TRT_CUDA_LAUNCH_CHECK();
}

void sample_random(const CudaCtx& ctx, int32_t* inputs, int32_t* targets,
                   const DeviceTokens& data, uint64_t seed, const StepScalars* s,
                   int64_t micro_step, int B, int T, int64_t row0) {
    TRT_CHECK(B >= 0 && T > 0, "sample_random: B=", B, ", T=", T);
    if (B == 0) return;
    TRT_CHECK(inputs && targets && data.tokens && data.shard_starts && s,
              "sample_random: null pointer");
    // W == 0 means no shard holds T+1 tokens; the host rejects that before it gets here
    // (the CPU sampler throws Error(Config)).
    TRT_CHECK(data.windows_T == T, "sample_random: the resident tokens' window count was "
              "computed for T = ", data.windows_T, ", not T = ", T);
    TRT_CHECK(data.num_shards > 0 && data.random_windows > 0,
              "sample_random: no valid window (num_shards=", data.num_shards,
              ", random_windows=", data.random_windows, ")");
    const int chunks = (T + kRowChunk - 1) / kRowChunk;
    const int64_t blocks = static_cast<int64_t>(B) * chunks;
    TRT_CHECK(blocks <= INT_MAX, "sample_random: grid of ", blocks, " blocks");
    sample_random_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, ctx.stream>>>(
        inputs, targets, data.tokens, data.shard_starts, data.num_shards, data.random_windows,
        seed, s, micro_step, T, chunks, row0);
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace trt::cuda
