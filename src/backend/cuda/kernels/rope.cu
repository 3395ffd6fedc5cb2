// Rotary position embedding (HF Llama rotate_half convention), in place on the Q and K heads of
// qkv [B,T,(NH+2NKV)hs] (backend.h: rope_forward / rope_backward). The Q and K blocks are
// adjacent at the start of each row, so the rotated heads are heads 0 .. NH+NKV-1 of the row;
// V is never touched. One thread per (row, head, i < hs/2) pair: it reads x[i] and
// x[i + hs/2] and writes both, so the update in place needs no synchronization, and every
// output element is one thread's arithmetic (nothing to reduce; bitwise reproducible).
// Consecutive threads take consecutive i: the accesses of a warp are contiguous runs of the
// half-head and of the cos/sin row. qkv is stored as S (float, bf16 or fp16: ctx.act; T is the
// sequence length here): each pair is read with to_f32, rotated in fp32 (the cos/sin tables are
// float) and stored rounded once with from_f32<S>. Documents: a row's position is pos[row]
// (backend.h) instead of pos0 + t.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/lowp.cuh"
#include "core/error.h"

namespace trt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;  // grid-stride beyond this

int grid_for(int64_t n) { return grid_blocks(n, kThreads, kMaxBlocks); }

// n = N * heads * half pairs; heads = NH + NKV (the rotated ones), W = (NH + 2NKV) * 2 * half
// elements per row. Forward:  x[i] <- x[i]c - x[i+h]s,  x[i+h] <- x[i+h]c + x[i]s.
// Backward (the transpose, rotation by -θ): d[i] <- d[i]c + d[i+h]s, d[i+h] <- d[i+h]c - d[i]s.
template <typename S, bool kBackward>
__global__ void __launch_bounds__(kThreads)
    rope_kernel(S* __restrict__ x, const float* __restrict__ cos_t,
                const float* __restrict__ sin_t, int64_t n, int T, int heads, int half, int64_t W,
                int pos0, const int32_t* __restrict__ pos) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
         idx += stride) {
        const int64_t r = idx / half;
        const int i = static_cast<int>(idx - r * half);
        const int64_t row = r / heads;
        const int h = static_cast<int>(r - row * heads);
        const int p = pos != nullptr ? pos[row] : pos0 + static_cast<int>(row % T);
        const size_t tab = static_cast<size_t>(p) * half + i;
        const float c = cos_t[tab], s = sin_t[tab];
        S* v = x + row * W + static_cast<int64_t>(h) * 2 * half;
        const float x0 = to_f32(v[i]), x1 = to_f32(v[i + half]);
        if constexpr (!kBackward) {
            v[i] = from_f32<S>(x0 * c - x1 * s);
            v[i + half] = from_f32<S>(x1 * c + x0 * s);
        } else {
            v[i] = from_f32<S>(x0 * c + x1 * s);
            v[i + half] = from_f32<S>(x1 * c - x0 * s);
        }
    }
}

template <bool kBackward>
void launch_rope(const CudaCtx& ctx, const char* what, Act x, const float* cos_t,
                 const float* sin_t, int B, int T, int NH, int NKV, int hs, int pos0,
                 const int32_t* pos) {
    if (B <= 0 || T <= 0 || NH <= 0 || hs <= 0) return;
    if (hs % 2 != 0)
        fail(Status::InvalidArgument, what, ": head size ", hs, " is odd (rotary pairs i, i+hs/2)");
    if (NKV < 1 || NH % NKV != 0)
        fail(Status::InvalidArgument, what, ": NKV = ", NKV, " does not divide NH = ", NH);
    if (pos == nullptr && pos0 < 0)
        fail(Status::InvalidArgument, what, ": pos0 = ", pos0, " is negative");
    const int half = hs / 2;
    const int heads = NH + NKV;
    const int64_t W = static_cast<int64_t>(NH + 2 * NKV) * hs;
    const int64_t n = static_cast<int64_t>(B) * T * heads * half;
    with_storage(act_storage(ctx, {x}), [&](auto tag) {
        using S = typename decltype(tag)::type;
        rope_kernel<S, kBackward><<<grid_for(n), kThreads, 0, ctx.stream>>>(
            typed<S>(x), cos_t, sin_t, n, T, heads, half, W, pos0, pos);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

}  // namespace

// qkv [B,T,(NH+2NKV)hs] in place; cos/sin [max_pos, hs/2], pos0 + T <= max_pos
void rope_forward(const CudaCtx& ctx, Act qkv, const float* cos, const float* sin, int B,
                  int T, int NH, int NKV, int hs, int pos0, const int32_t* pos) {
    launch_rope<false>(ctx, "rope_forward", qkv, cos, sin, B, T, NH, NKV, hs, pos0, pos);
}

// dqkv [B,T,(NH+2NKV)hs] in place (the gradient w.r.t. the rotated q and k)
void rope_backward(const CudaCtx& ctx, Act dqkv, const float* cos, const float* sin, int B,
                   int T, int NH, int NKV, int hs, int pos0, const int32_t* pos) {
    launch_rope<true>(ctx, "rope_backward", dqkv, cos, sin, B, T, NH, NKV, hs, pos0, pos);
}

}  // namespace trt::cuda
