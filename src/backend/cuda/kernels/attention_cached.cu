// KV-cached attention for generation (backend.h: attention_cached_forward): n new rows of qkv
// [n,(NH+2NKV)hs] at positions pos0 .. pos0+n-1 of one sequence. Kernel 1 stores the rows' K
// and V heads into the fp32 caches [NKV, max_T, hs] (one thread per element). Kernel 2: one
// block per (row, query head); its threads compute the scaled scores over cache rows
// 0 .. t (t = pos0 + row) into shared memory, the block reduces their max and the sum of
// the exponentials in a fixed order (warp butterflies, then warp 0 over the warps), and each
// thread then owns output dimensions d = tid, tid + blockDim, ...: o[d] = Σ_s p_s v[s, d],
// summed over s in order. Every output is one thread's fixed-order sum: bitwise
// reproducible. qkv and out are stored as S (ctx.act); the scores, softmax and sums are fp32.
// Shared memory holds one row of scores: max_T up to kMaxKeys; longer caches are refused
// (BackendCaps::cached_attention_max_positions: sampling then takes the whole-window path).
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/lowp.cuh"
#include "backend/cuda/kernels/reduce.cuh"
#include "core/error.h"

namespace trt::cuda {
namespace {

constexpr int kThreads = 128;  // 4 warps per (row, head)
constexpr int kWarps = kThreads / 32;
constexpr int kMaxKeys = kCachedAttentionMaxKeys;  // cuda_ops.h
static_assert(((kMaxKeys + 3) / 4 + 1) * 16 + kWarps * 4 <= 48 * 1024,
              "padded scores + reduction scratch fit 48 KiB");

template <typename S>
__global__ void store_kv_kernel(const S* __restrict__ qkv, float* __restrict__ k_cache,
                                float* __restrict__ v_cache, int64_t total, int pos0,
                                const int32_t* __restrict__ pos_at, int n, int NKV, int hs,
                                int max_T, int64_t W, int64_t C) {
    if (pos_at != nullptr) pos0 = *pos_at;
    if (pos0 < 0 || pos0 + n > max_T) return;  // the host checked a host pos0
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
         idx += stride) {
        const int d = static_cast<int>(idx % hs);
        const int64_t r = idx / hs;
        const int g = static_cast<int>(r % NKV);
        const int64_t i = r / NKV;
        const S* row = qkv + i * W + C;
        const size_t at = (static_cast<size_t>(g) * max_T + pos0 + i) * hs + d;
        k_cache[at] = to_f32(row[static_cast<int64_t>(g) * hs + d]);
        v_cache[at] = to_f32(row[static_cast<int64_t>(NKV + g) * hs + d]);
    }
}

// Block-wide reduction of one value per thread, in a fixed order; every thread gets it.
template <bool kMax>
__device__ float block_reduce(float v, float* scratch /*[kWarps]*/) {
    v = kMax ? warp_max(v) : warp_sum(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < kWarps ? scratch[lane] : (kMax ? -INFINITY : 0.0f);
        w = kMax ? warp_max(w) : warp_sum(w);
        if (lane == 0) scratch[0] = w;
    }
    __syncthreads();
    const float out = scratch[0];
    __syncthreads();  // scratch is reused by the next reduction
    return out;
}

template <typename S>
__global__ void __launch_bounds__(kThreads)
    attend_kernel(S* __restrict__ out, const S* __restrict__ qkv, const float* __restrict__ k_cache,
                  const float* __restrict__ v_cache, int pos0, const int32_t* __restrict__ pos_at,
                  int n, int NH, int NKV, int hs, int max_T, int64_t W, float scale, int window) {
    extern __shared__ float scores[];  // [t + 1]
    __shared__ float red[kWarps];
    if (pos_at != nullptr) pos0 = *pos_at;
    if (pos0 < 0 || pos0 + n > max_T) return;  // the host checked a host pos0
    const int i = blockIdx.x / NH, h = blockIdx.x % NH, g = h / (NH / NKV);
    const int t = pos0 + i;
    const int lo = window > 0 && t >= window ? t - window + 1 : 0;  // a sliding window's start
    const S* q = qkv + static_cast<int64_t>(i) * W + static_cast<int64_t>(h) * hs;
    const float* k = k_cache + static_cast<size_t>(g) * max_T * hs;
    const float* v = v_cache + static_cast<size_t>(g) * max_T * hs;
    float mx = -INFINITY;
    for (int s = lo + threadIdx.x; s <= t; s += blockDim.x) {
        const float* ks = k + static_cast<size_t>(s) * hs;
        float dot = 0.0f;
        for (int d = 0; d < hs; d++) dot += to_f32(q[d]) * ks[d];
        scores[s] = scale * dot;
        mx = fmaxf(mx, scores[s]);
    }
    mx = block_reduce<true>(mx, red);
    float sum = 0.0f;
    for (int s = lo + threadIdx.x; s <= t; s += blockDim.x) {
        const float e = __expf(scores[s] - mx);
        scores[s] = e;
        sum += e;
    }
    sum = block_reduce<false>(sum, red);  // also orders the scores' writes before the reads
    const float inv = 1.0f / sum;
    S* o = out + static_cast<int64_t>(i) * NH * hs + static_cast<int64_t>(h) * hs;
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        float acc = 0.0f;
        for (int s = lo; s <= t; s++) acc += scores[s] * v[static_cast<size_t>(s) * hs + d];
        o[d] = from_f32<S>(acc * inv);
    }
}

}  // namespace

void attention_cached_forward(const CudaCtx& ctx, Act out, ConstAct qkv, float* k_cache,
                              float* v_cache, int pos0, int n, int NH, int NKV, int hs, int max_T,
                              int window, const int32_t* pos_at) {
    if (n <= 0) return;
    if (NH <= 0 || NKV <= 0 || NH % NKV != 0 || hs <= 0)
        fail(Status::InvalidArgument, "attention_cached_forward: NH = ", NH, ", NKV = ", NKV,
             ", hs = ", hs, " (NKV must divide NH)");
    if (n > max_T)
        fail(Status::InvalidArgument, "attention_cached_forward: ", n,
             " rows do not fit a cache of ", max_T);
    if (pos_at == nullptr && (pos0 < 0 || pos0 + n > max_T))
        fail(Status::InvalidArgument, "attention_cached_forward: rows ", pos0, " .. ", pos0 + n,
             " do not fit a cache of ", max_T);
    if (max_T > kMaxKeys)
        fail(Status::Unsupported, "attention_cached_forward: a cache of ", max_T,
             " positions is beyond this kernel's ", kMaxKeys);
    const int64_t C = static_cast<int64_t>(NH) * hs;
    const int64_t W = C + 2 * static_cast<int64_t>(NKV) * hs;
    const int64_t total = static_cast<int64_t>(n) * NKV * hs;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    // Scores for keys 0 .. pos0+n-1, padded to whole 16-byte groups plus one: the summing
    // loop's unrolled shared loads may reach up to 3 floats past key t (compute-sanitizer
    // memcheck saw a 12-byte read at t = 0 on an H200); the extra floats are never used.
    // A position read on the device: sized for the whole cache.
    const int keys = pos_at != nullptr ? max_T : pos0 + n;
    const size_t smem = (static_cast<size_t>(keys + 3) / 4 + 1) * 4 * sizeof(float);
    with_storage(act_storage(ctx, {out, qkv}), [&](auto tag) {
        using S = typename decltype(tag)::type;
        store_kv_kernel<S><<<grid_blocks(total, 256, 65536), 256, 0, ctx.stream>>>(
            typed<S>(qkv), k_cache, v_cache, total, pos0, pos_at, n, NKV, hs, max_T, W, C);
        TRT_CUDA_LAUNCH_CHECK();
        attend_kernel<S><<<static_cast<unsigned>(n) * NH, kThreads, smem, ctx.stream>>>(
            typed<S>(out), typed<S>(qkv), k_cache, v_cache, pos0, pos_at, n, NH, NKV, hs, max_T, W,
            scale, window);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

}  // namespace trt::cuda
