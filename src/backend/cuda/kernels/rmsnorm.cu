// RMSNorm CUDA kernels (HF LlamaRMSNorm: rstd = 1/sqrt(mean(x²) + eps), out = x·rstd·w), its
// fusion with the preceding residual add, and the backward with a deterministic dw column sum.
// The layout mirrors layernorm.cu: one warp per row, the row in registers (K values per lane
// at c = lane + 32*i) or re-read (K == 0, any C), per-lane sums in c order then a warp
// butterfly, so the flavour changes speed, not bits; dw goes through colred (reduce.cuh):
// per-chunk partials in scratch, then one ordered pass. No atomics.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/reduce.cuh"
#include "backend/cuda/kernels/row_kernels.cuh"
#include "core/error.h"

namespace trt::cuda {
namespace {

using rows::kThreads;
using rows::kWarps;

// r = 1/sqrt(sum(x²)/C + eps); o = x * r * w.
template <int K>
__device__ __forceinline__ float rmsnorm_row_regs(const float (&v)[K], float* o, const float* w,
                                                  int C, int lane, float eps) {
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < K; i++)
        if (lane + 32 * i < C) q += v[i] * v[i];
    const float ms = warp_sum(q) / static_cast<float>(C);
    const float r = 1.0f / sqrtf(ms + eps);
#pragma unroll
    for (int i = 0; i < K; i++) {
        const int c = lane + 32 * i;
        if (c < C) o[c] = v[i] * r * w[c];
    }
    return r;
}

__device__ __forceinline__ float rmsnorm_row_generic(const float* x, float* o, const float* w,
                                                     int C, int lane, float eps) {
    float q = 0.0f;
    for (int c = lane; c < C; c += 32) q += x[c] * x[c];
    const float ms = warp_sum(q) / static_cast<float>(C);
    const float r = 1.0f / sqrtf(ms + eps);
    for (int c = lane; c < C; c += 32) o[c] = x[c] * r * w[c];
    return r;
}

template <int K>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_forward_kernel(float* __restrict__ out, float* __restrict__ rstd,
                           const float* __restrict__ inp, const float* __restrict__ w, int N, int C,
                           float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;  // the whole warp leaves together: its shuffles stay full
    const float* x = inp + static_cast<size_t>(row) * C;
    float* o = out + static_cast<size_t>(row) * C;
    float r;
    if constexpr (K > 0) {
        float v[K];
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            v[i] = c < C ? x[c] : 0.0f;
        }
        r = rmsnorm_row_regs<K>(v, o, w, C, lane, eps);
    } else {
        r = rmsnorm_row_generic(x, o, w, C, lane, eps);
    }
    if (lane == 0) rstd[row] = r;
}

// res = a + b, written, then normalised. res_out may alias a or b (each element is read before
// it is written, by the same lane): no __restrict__ on those.
template <int K>
__global__ void __launch_bounds__(kThreads)
    residual_rmsnorm_forward_kernel(float* res_out, float* __restrict__ out,
                                    float* __restrict__ rstd, const float* a, const float* b,
                                    const float* __restrict__ w, int N, int C, float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;
    const size_t off = static_cast<size_t>(row) * C;
    const float* x = a + off;
    const float* y = b + off;
    float* res = res_out + off;
    float* o = out + off;
    float r;
    if constexpr (K > 0) {
        float v[K];
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            v[i] = 0.0f;
            if (c < C) {
                v[i] = x[c] + y[c];
                res[c] = v[i];
            }
        }
        r = rmsnorm_row_regs<K>(v, o, w, C, lane, eps);
    } else {
        for (int c = lane; c < C; c += 32) res[c] = x[c] + y[c];
        __syncwarp();  // each lane re-reads its own writes; the fence keeps that explicit
        r = rmsnorm_row_generic(res, o, w, C, lane, eps);
    }
    if (lane == 0) rstd[row] = r;
}

// dinp += rstd (g − xhat·mean(g·xhat)), g = dout·w, xhat = x·rstd.
template <int K>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_backward_dinp_kernel(float* __restrict__ dinp, const float* __restrict__ dout,
                                 const float* __restrict__ inp, const float* __restrict__ w,
                                 const float* __restrict__ rstd, int N, int C) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;
    const size_t off = static_cast<size_t>(row) * C;
    const float* go = dout + off;
    const float* x = inp + off;
    float* di = dinp + off;
    const float r = rstd[row];
    float sgx = 0.0f;
    if constexpr (K > 0) {
        float g[K], xh[K];
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            g[i] = 0.0f;
            xh[i] = 0.0f;
            if (c < C) {
                g[i] = go[c] * w[c];
                xh[i] = x[c] * r;
                sgx += g[i] * xh[i];
            }
        }
        const float mgx = warp_sum(sgx) / static_cast<float>(C);
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            if (c < C) di[c] += r * (g[i] - xh[i] * mgx);
        }
    } else {
        for (int c = lane; c < C; c += 32) sgx += (go[c] * w[c]) * (x[c] * r);
        const float mgx = warp_sum(sgx) / static_cast<float>(C);
        for (int c = lane; c < C; c += 32) {
            const float gc = go[c] * w[c];
            const float xhc = x[c] * r;
            di[c] += r * (gc - xhc * mgx);
        }
    }
}

// dw[c] += sum_n dout·xhat: a float accumulator as layernorm's dw, in the fixed order of
// colred (reduce.cuh).
struct RmsnormParamOp {
    const float* dout;
    const float* inp;
    const float* rstd;
    int C;
    __device__ void operator()(int n, int c, float (&acc)[1]) const {
        const size_t i = static_cast<size_t>(n) * C + c;
        acc[0] += dout[i] * (inp[i] * rstd[n]);
    }
};


}  // namespace

size_t rmsnorm_scratch_bytes(const ModelDims& d) {
    // dw partials: one float output over C columns.
    return colred::partial_bytes_bound(d.C, 1, sizeof(float));
}

// out [N, C], rstd [N], inp [N, C], w [C]
void rmsnorm_forward(const CudaCtx& ctx, float* out, float* rstd, const float* inp,
                     const float* w, int N, int C, float eps) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    rows::for_forward_k(C, [&](auto k) {
        rmsnorm_forward_kernel<decltype(k)::value><<<blocks, kThreads, 0, ctx.stream>>>(
            out, rstd, inp, w, N, C, eps);
    });
    TRT_CUDA_LAUNCH_CHECK();
}

// dinp [N, C] +=, dw [C] +=, dout/inp [N, C], w [C], rstd [N]
void rmsnorm_backward(const CudaCtx& ctx, float* dinp, float* dw, const float* dout,
                      const float* inp, const float* w, const float* rstd, int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    rows::for_backward_k(C, [&](auto k) {
        rmsnorm_backward_dinp_kernel<decltype(k)::value><<<blocks, kThreads, 0, ctx.stream>>>(
            dinp, dout, inp, w, rstd, N, C);
    });
    TRT_CUDA_LAUNCH_CHECK();
    if (!dw) return;
    // Reads only dout/inp/rstd, never dinp: independent of the kernel above.
    colred::run<float, 1>(ctx, "rmsnorm_backward", colred::Dsts<1>{{dw}}, N, C,
                          RmsnormParamOp{dout, inp, rstd, C});
}

// res_out/out [N, C], rstd [N], a/b [N, C], w [C]
void residual_rmsnorm_forward(const CudaCtx& ctx, float* res_out, float* out, float* rstd,
                              const float* a, const float* b, const float* w, int N, int C,
                              float eps) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    rows::for_forward_k(C, [&](auto k) {
        residual_rmsnorm_forward_kernel<decltype(k)::value><<<blocks, kThreads, 0, ctx.stream>>>(
            res_out, out, rstd, a, b, w, N, C, eps);
    });
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace trt::cuda
