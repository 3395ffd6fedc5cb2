// RMSNorm CUDA kernels (HF LlamaRMSNorm: rstd = 1/sqrt(mean(x²) + eps), out = x·rstd·w), its
// fusion with the preceding residual add, and the backward with a deterministic dw column sum.
// The layout mirrors layernorm.cu: one warp per row, the row in registers (K values per lane
// at c = lane + 32*i) or re-read (K == 0, any C), per-lane sums in c order then a warp
// butterfly, so the flavour changes speed, not bits; dw goes through colred (reduce.cuh):
// per-chunk partials in scratch, then one ordered pass. No atomics. Activations are stored as
// T (float, bf16 or fp16: ctx.act), read exactly into fp32 math and rounded once where
// stored; rstd, w and dw stay float.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/lowp.cuh"
#include "backend/cuda/kernels/reduce.cuh"
#include "backend/cuda/kernels/row_kernels.cuh"
#include "core/error.h"

namespace trt::cuda {
namespace {

using rows::kThreads;
using rows::kWarps;

// r = 1/sqrt(sum(x²)/C + eps); o = x * r * w.
template <int K, typename T>
__device__ __forceinline__ float rmsnorm_row_regs(const float (&v)[K], T* o, const float* w,
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
        if (c < C) o[c] = from_f32<T>(v[i] * r * w[c]);
    }
    return r;
}

// The generic flavour: x(c) is the row's fp32 value at column c, re-read for each pass;
// store(c, v, y) stores y, the normalised value of v = x(c), in the last pass.
template <class X, class Store>
__device__ __forceinline__ float rmsnorm_row_generic(X x, Store store, const float* w, int C,
                                                     int lane, float eps) {
    float q = 0.0f;
    for (int c = lane; c < C; c += 32) q += x(c) * x(c);
    const float ms = warp_sum(q) / static_cast<float>(C);
    const float r = 1.0f / sqrtf(ms + eps);
    for (int c = lane; c < C; c += 32) {
        const float v = x(c);
        store(c, v, v * r * w[c]);
    }
    return r;
}

template <int K, typename T>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_forward_kernel(T* __restrict__ out, float* __restrict__ rstd,
                           const T* __restrict__ inp, const float* __restrict__ w, int N, int C,
                           float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;  // the whole warp leaves together: its shuffles stay full
    const T* x = inp + static_cast<size_t>(row) * C;
    T* o = out + static_cast<size_t>(row) * C;
    float r;
    if constexpr (K > 0) {
        float v[K];
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            v[i] = c < C ? to_f32(x[c]) : 0.0f;
        }
        r = rmsnorm_row_regs<K>(v, o, w, C, lane, eps);
    } else {
        r = rmsnorm_row_generic([&](int c) { return to_f32(x[c]); },
                                [&](int c, float, float y) { o[c] = from_f32<T>(y); }, w, C,
                                lane, eps);
    }
    if (lane == 0) rstd[row] = r;
}

// res = a + b, stored rounded to T; the fp32 sum is what is normalised (the CPU twin's
// rounding point), never the rounded res. res_out may alias a or b (each element is read
// before it is written, by the same lane): no __restrict__ on those.
template <int K, typename T>
__global__ void __launch_bounds__(kThreads)
    residual_rmsnorm_forward_kernel(T* res_out, T* __restrict__ out, float* __restrict__ rstd,
                                    const T* a, const T* b, const float* __restrict__ w, int N,
                                    int C, float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;
    const size_t off = static_cast<size_t>(row) * C;
    const T* x = a + off;
    const T* y = b + off;
    T* res = res_out + off;
    T* o = out + off;
    const auto sum = [&](int c) { return to_f32(x[c]) + to_f32(y[c]); };
    float r;
    if constexpr (K > 0) {
        float v[K];
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            v[i] = 0.0f;
            if (c < C) {
                v[i] = sum(c);
                res[c] = from_f32<T>(v[i]);
            }
        }
        r = rmsnorm_row_regs<K>(v, o, w, C, lane, eps);
    } else if constexpr (std::is_same_v<T, float>) {
        // fp32 res holds the sum exactly: write it once, re-read it in each pass.
        for (int c = lane; c < C; c += 32) res[c] = sum(c);
        __syncwarp();  // each lane re-reads its own writes; the fence keeps that explicit
        r = rmsnorm_row_generic([&](int c) { return res[c]; },
                                [&](int c, float, float yv) { o[c] = yv; }, w, C, lane, eps);
    } else {
        // A rounded res is not the sum: recompute it from a and b in each pass, and store res
        // only in the last pass, after this lane's last read of a[c] and b[c] (aliasing).
        r = rmsnorm_row_generic(sum,
                                [&](int c, float v, float yv) {
                                    res[c] = from_f32<T>(v);
                                    o[c] = from_f32<T>(yv);
                                },
                                w, C, lane, eps);
    }
    if (lane == 0) rstd[row] = r;
}

// dinp += rstd (g − xhat·mean(g·xhat)), g = dout·w, xhat = x·rstd; dinp is read into fp32,
// added to and rounded to T once.
template <int K, typename T>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_backward_dinp_kernel(T* __restrict__ dinp, const T* __restrict__ dout,
                                 const T* __restrict__ inp, const float* __restrict__ w,
                                 const float* __restrict__ rstd, int N, int C) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;
    const size_t off = static_cast<size_t>(row) * C;
    const T* go = dout + off;
    const T* x = inp + off;
    T* di = dinp + off;
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
                g[i] = to_f32(go[c]) * w[c];
                xh[i] = to_f32(x[c]) * r;
                sgx += g[i] * xh[i];
            }
        }
        const float mgx = warp_sum(sgx) / static_cast<float>(C);
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            if (c < C) {
                const float d = r * (g[i] - xh[i] * mgx);
                di[c] = from_f32<T>(to_f32(di[c]) + d);
            }
        }
    } else {
        for (int c = lane; c < C; c += 32)
            sgx += (to_f32(go[c]) * w[c]) * (to_f32(x[c]) * r);
        const float mgx = warp_sum(sgx) / static_cast<float>(C);
        for (int c = lane; c < C; c += 32) {
            const float gc = to_f32(go[c]) * w[c];
            const float xhc = to_f32(x[c]) * r;
            const float d = r * (gc - xhc * mgx);
            di[c] = from_f32<T>(to_f32(di[c]) + d);
        }
    }
}

// dw[c] += sum_n dout·xhat: a float accumulator as layernorm's dw, in the fixed order of
// colred (reduce.cuh).
template <typename T>
struct RmsnormParamOp {
    const T* dout;
    const T* inp;
    const float* rstd;
    int C;
    __device__ void operator()(int n, int c, float (&acc)[1]) const {
        const size_t i = static_cast<size_t>(n) * C + c;
        acc[0] += to_f32(dout[i]) * (to_f32(inp[i]) * rstd[n]);
    }
};


}  // namespace

size_t rmsnorm_scratch_bytes(const ModelDims& d) {
    // dw partials: one float output over C columns.
    return colred::partial_bytes_bound(d.C, 1, sizeof(float));
}

// out [N, C], rstd [N], inp [N, C], w [C]
void rmsnorm_forward(const CudaCtx& ctx, Act out, float* rstd, ConstAct inp, const float* w,
                     int N, int C, float eps) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    with_storage(act_storage(ctx, {out, inp}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        rows::for_forward_k(C, [&](auto k) {
            rmsnorm_forward_kernel<decltype(k)::value, T><<<blocks, kThreads, 0, ctx.stream>>>(
                typed<T>(out), rstd, typed<T>(inp), w, N, C, eps);
        });
    });
    TRT_CUDA_LAUNCH_CHECK();
}

// dinp [N, C] +=, dw [C] +=, dout/inp [N, C], w [C], rstd [N]
void rmsnorm_backward(const CudaCtx& ctx, Act dinp, float* dw, ConstAct dout, ConstAct inp,
                      const float* w, const float* rstd, int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    with_storage(act_storage(ctx, {dinp, dout, inp}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        rows::for_backward_k(C, [&](auto k) {
            rmsnorm_backward_dinp_kernel<decltype(k)::value, T>
                <<<blocks, kThreads, 0, ctx.stream>>>(typed<T>(dinp), typed<T>(dout),
                                                      typed<T>(inp), w, rstd, N, C);
        });
        TRT_CUDA_LAUNCH_CHECK();
        if (!dw) return;
        // Reads only dout/inp/rstd, never dinp: independent of the kernel above.
        colred::run<float, 1>(ctx, "rmsnorm_backward", colred::Dsts<1>{{dw}}, N, C,
                              RmsnormParamOp<T>{typed<T>(dout), typed<T>(inp), rstd, C});
    });
}

// res_out/out [N, C], rstd [N], a/b [N, C], w [C]
void residual_rmsnorm_forward(const CudaCtx& ctx, Act res_out, Act out, float* rstd,
                              ConstAct a, ConstAct b, const float* w, int N, int C, float eps) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    with_storage(act_storage(ctx, {res_out, out, a, b}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        rows::for_forward_k(C, [&](auto k) {
            residual_rmsnorm_forward_kernel<decltype(k)::value, T>
                <<<blocks, kThreads, 0, ctx.stream>>>(typed<T>(res_out), typed<T>(out), rstd,
                                                      typed<T>(a), typed<T>(b), w, N, C, eps);
        });
    });
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace trt::cuda
