// SwiGLU (backend.h: swiglu_forward / swiglu_backward): inp [N, 2F] = [gate | up] along the
// last dim, out[n,j] = silu(gate[n,j]) * up[n,j], silu(x) = x / (1 + e^-x).
//
// Activations (inp, out, dinp, dout) are stored as T (float, bf16 or fp16: ctx.act): loaded
// with to_f32, computed in fp32, each stored value rounded once with from_f32<T>.
//
// Elementwise, one thread per (n, j) (grid-stride over N*F); consecutive threads take
// consecutive j, so the gate, up, out and dout accesses of a warp are contiguous. No reduction:
// every output element is one thread's arithmetic, bitwise reproducible.
//
// The exp argument is clamped to [-87, 88] as GELU's is (elementwise.cu, the CPU's fast_expf):
// e stays finite, so the gradient never forms inf * 0 for very negative gates, and
// 1 - sigmoid = e * sigmoid avoids the cancellation of 1 - s.
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
constexpr int64_t kMaxBlocks = 65536;

int grid_for(int64_t n) { return grid_blocks(n, kThreads, kMaxBlocks); }

// Ternaries, not fminf/fmaxf, so a NaN input stays NaN.
__device__ __forceinline__ float clamped_exp(float a) {
    a = a < -87.0f ? -87.0f : a;
    a = a > 88.0f ? 88.0f : a;
    return expf(a);
}

// out [N, F], inp [N, 2F]
template <typename T>
__global__ void __launch_bounds__(kThreads)
    swiglu_forward_kernel(T* __restrict__ out, const T* __restrict__ inp, int64_t n, int F) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t row = i / F;
        const int64_t g_at = i + row * F;  // row * 2F + j
        const float g = to_f32(inp[g_at]), u = to_f32(inp[g_at + F]);
        out[i] = from_f32<T>(g / (1.0f + clamped_exp(-g)) * u);
    }
}

// dinp [N, 2F] overwritten, inp [N, 2F], dout [N, F]:
//   d gate = dout * up * silu'(gate), silu'(x) = s (1 + x (1 - s)), 1 - s = e s;
//   d up   = dout * silu(gate).
// Each thread reads gate/up at exactly the two places it writes, so dinp may alias inp (no
// __restrict__ on those two).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    swiglu_backward_kernel(T* dinp, const T* inp, const T* __restrict__ dout, int64_t n, int F) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t row = i / F;
        const int64_t g_at = i + row * F;
        const float g = to_f32(inp[g_at]), u = to_f32(inp[g_at + F]), d = to_f32(dout[i]);
        const float e = clamped_exp(-g);
        const float s = 1.0f / (1.0f + e);
        const float dsilu = s * (1.0f + g * (e * s));
        dinp[g_at] = from_f32<T>(d * u * dsilu);
        dinp[g_at + F] = from_f32<T>(d * (g / (1.0f + e)));
    }
}

}  // namespace

// out [N, F], inp [N, 2F]
void swiglu_forward(const CudaCtx& ctx, Act out, ConstAct inp, int N, int F) {
    if (N <= 0 || F <= 0) return;
    const int64_t n = static_cast<int64_t>(N) * F;
    with_storage(act_storage(ctx, {out, inp}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        swiglu_forward_kernel<T>
            <<<grid_for(n), kThreads, 0, ctx.stream>>>(typed<T>(out), typed<T>(inp), n, F);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

// dinp [N, 2F] overwritten, inp [N, 2F], dout [N, F]
void swiglu_backward(const CudaCtx& ctx, Act dinp, ConstAct inp, ConstAct dout, int N, int F) {
    if (N <= 0 || F <= 0) return;
    const int64_t n = static_cast<int64_t>(N) * F;
    with_storage(act_storage(ctx, {dinp, inp, dout}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        swiglu_backward_kernel<T><<<grid_for(n), kThreads, 0, ctx.stream>>>(
            typed<T>(dinp), typed<T>(inp), typed<T>(dout), n, F);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

}  // namespace trt::cuda
