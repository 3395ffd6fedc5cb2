// LayerNorm CUDA kernels (eps 1e-5, biased variance, two-pass per row), its fusion with the
// preceding residual add, and the backward with deterministic dw/db column sums. Activations
// are stored as T (float, bf16 or fp16: ctx.act), read exactly into fp32 math and rounded once
// where stored; mean/rstd, w/b and dw/db stay float.
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

constexpr float kEps = 1e-5f;
using rows::kThreads;
using rows::kWarps;

// Row kernels come in two flavours, picked by K (row_kernels.cuh): the row in registers, or
// re-read; same sums in the same order, so the flavour changes speed, not bits.
//
// Row accesses stay one element per lane, lane-strided, on purpose. They are already fully
// coalesced (one 128-byte segment per warp instruction for fp32, 64 for 16-bit T, K of them in
// flight per lane). A float4 per lane would give each lane four adjacent columns instead of
// c = lane + 32i, i.e. other per-lane partial sums: other bits than today and than the scalar
// path that misaligned rows and C % 4 != 0 need. Keeping the order with 128-bit loads means
// staging each 512-byte segment through shared memory, which adds as many shared-memory
// wavefronts as it saves global ones on the same L1 datapath, so it is not done. The same
// order for every T also makes a bf16/fp16 row compute exactly what the fp32 kernel computes
// on its widened values.

// mean = sum(x)/C; var = sum((x - mean)²)/C (two passes, as the CPU); rstd = 1/sqrt(var+eps);
// o = (x - mean) * rstd * w + b.
template <int K, typename T>
__device__ __forceinline__ void layernorm_row_regs(float (&v)[K], T* o, const float* w,
                                                   const float* b, int C, int lane,
                                                   float& mean_out, float& rstd_out) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < K; i++)
        if (lane + 32 * i < C) s += v[i];
    const float m = warp_sum(s) / static_cast<float>(C);
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < K; i++) {
        if (lane + 32 * i < C) {
            const float d = v[i] - m;
            q += d * d;
        }
    }
    const float var = warp_sum(q) / static_cast<float>(C);
    const float r = 1.0f / sqrtf(var + kEps);
#pragma unroll
    for (int i = 0; i < K; i++) {
        const int c = lane + 32 * i;
        if (c < C) o[c] = from_f32<T>((v[i] - m) * r * w[c] + b[c]);
    }
    mean_out = m;
    rstd_out = r;
}

// The generic flavour: x(c) is the row's fp32 value at column c, re-read for each pass;
// store(c, v, y) stores y, the normalised value of v = x(c), in the last pass.
template <class X, class Store>
__device__ __forceinline__ void layernorm_row_generic(X x, Store store, const float* w,
                                                      const float* b, int C, int lane,
                                                      float& mean_out, float& rstd_out) {
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += x(c);
    const float m = warp_sum(s) / static_cast<float>(C);
    float q = 0.0f;
    for (int c = lane; c < C; c += 32) {
        const float d = x(c) - m;
        q += d * d;
    }
    const float var = warp_sum(q) / static_cast<float>(C);
    const float r = 1.0f / sqrtf(var + kEps);
    for (int c = lane; c < C; c += 32) {
        const float v = x(c);
        store(c, v, (v - m) * r * w[c] + b[c]);
    }
    mean_out = m;
    rstd_out = r;
}

template <int K, typename T>
__global__ void __launch_bounds__(kThreads)
    layernorm_forward_kernel(T* __restrict__ out, float* __restrict__ mean,
                             float* __restrict__ rstd, const T* __restrict__ inp,
                             const float* __restrict__ w, const float* __restrict__ b, int N,
                             int C) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;  // the whole warp leaves together: its shuffles stay full
    const T* x = inp + static_cast<size_t>(row) * C;
    T* o = out + static_cast<size_t>(row) * C;
    float m, r;
    if constexpr (K > 0) {
        float v[K];
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            v[i] = c < C ? to_f32(x[c]) : 0.0f;
        }
        layernorm_row_regs<K>(v, o, w, b, C, lane, m, r);
    } else {
        layernorm_row_generic([&](int c) { return to_f32(x[c]); },
                              [&](int c, float, float y) { o[c] = from_f32<T>(y); }, w, b, C,
                              lane, m, r);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

// res = a + b (+ bb, added to b first as on the CPU), stored rounded to T; the fp32 sum is
// what is normalised (the CPU twin's rounding point), never the rounded res. res_out may alias
// a or b (each element is read before it is written, by the same lane): no __restrict__.
template <int K, typename T>
__global__ void __launch_bounds__(kThreads)
    residual_layernorm_forward_kernel(T* res_out, T* __restrict__ out,
                                      float* __restrict__ mean, float* __restrict__ rstd,
                                      const T* a, const T* b, const float* __restrict__ bb,
                                      const float* __restrict__ w,
                                      const float* __restrict__ bias, int N, int C) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;
    const size_t off = static_cast<size_t>(row) * C;
    const T* x = a + off;
    const T* y = b + off;
    T* res = res_out + off;
    T* o = out + off;
    const auto sum = [&](int c) {
        return bb ? to_f32(x[c]) + (to_f32(y[c]) + bb[c]) : to_f32(x[c]) + to_f32(y[c]);
    };
    float m, r;
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
        layernorm_row_regs<K>(v, o, w, bias, C, lane, m, r);
    } else if constexpr (std::is_same_v<T, float>) {
        // fp32 res holds the sum exactly: write it once, re-read it in each pass.
        for (int c = lane; c < C; c += 32) res[c] = sum(c);
        __syncwarp();  // each lane re-reads its own writes; the fence keeps that explicit
        layernorm_row_generic([&](int c) { return res[c]; },
                              [&](int c, float, float yv) { o[c] = yv; }, w, bias, C, lane, m,
                              r);
    } else {
        // A rounded res is not the sum: recompute it from a and b in each pass, and store res
        // only in the last pass, after this lane's last read of a[c] and b[c] (aliasing).
        layernorm_row_generic(sum,
                              [&](int c, float v, float yv) {
                                  res[c] = from_f32<T>(v);
                                  o[c] = from_f32<T>(yv);
                              },
                              w, bias, C, lane, m, r);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

// dinp += rstd (g − mean(g) − xhat·mean(g·xhat)), g = dout·w, xhat = (x − mean)·rstd; dinp is
// read into fp32, added to and rounded to T once.
template <int K, typename T>
__global__ void __launch_bounds__(kThreads)
    layernorm_backward_dinp_kernel(T* __restrict__ dinp, const T* __restrict__ dout,
                                   const T* __restrict__ inp, const float* __restrict__ w,
                                   const float* __restrict__ mean,
                                   const float* __restrict__ rstd, int N, int C) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (row >= N) return;
    const size_t off = static_cast<size_t>(row) * C;
    const T* go = dout + off;
    const T* x = inp + off;
    T* di = dinp + off;
    const float m = mean[row], r = rstd[row];
    float sg = 0.0f, sgx = 0.0f;
    if constexpr (K > 0) {
        float g[K], xh[K];
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            g[i] = 0.0f;
            xh[i] = 0.0f;
            if (c < C) {
                g[i] = to_f32(go[c]) * w[c];
                xh[i] = (to_f32(x[c]) - m) * r;
                sg += g[i];
                sgx += g[i] * xh[i];
            }
        }
        const float mg = warp_sum(sg) / static_cast<float>(C);
        const float mgx = warp_sum(sgx) / static_cast<float>(C);
#pragma unroll
        for (int i = 0; i < K; i++) {
            const int c = lane + 32 * i;
            if (c < C) {
                const float d = r * (g[i] - mg - xh[i] * mgx);
                di[c] = from_f32<T>(to_f32(di[c]) + d);
            }
        }
    } else {
        for (int c = lane; c < C; c += 32) {
            const float gc = to_f32(go[c]) * w[c];
            sg += gc;
            sgx += gc * ((to_f32(x[c]) - m) * r);
        }
        const float mg = warp_sum(sg) / static_cast<float>(C);
        const float mgx = warp_sum(sgx) / static_cast<float>(C);
        for (int c = lane; c < C; c += 32) {
            const float gc = to_f32(go[c]) * w[c];
            const float xhc = (to_f32(x[c]) - m) * r;
            const float d = r * (gc - mg - xhc * mgx);
            di[c] = from_f32<T>(to_f32(di[c]) + d);
        }
    }
}

// dw[c] += sum_n dout·xhat, db[c] += sum_n dout: float accumulators as on the CPU, in the
// fixed order of colred (reduce.cuh).
template <typename T>
struct LayernormParamOp {
    const T* dout;
    const T* inp;
    const float* mean;
    const float* rstd;
    int C;
    __device__ void operator()(int n, int c, float (&acc)[2]) const {
        const size_t i = static_cast<size_t>(n) * C + c;
        const float g = to_f32(dout[i]);
        acc[0] += g * ((to_f32(inp[i]) - mean[n]) * rstd[n]);
        acc[1] += g;
    }
};


}  // namespace

size_t layernorm_scratch_bytes(const ModelDims& d) {
    // dw/db partials: two float outputs over C columns.
    return colred::partial_bytes_bound(d.C, 2, sizeof(float));
}

// out [N, C], mean/rstd [N], inp [N, C], w/b [C]
void layernorm_forward(const CudaCtx& ctx, Act out, float* mean, float* rstd, ConstAct inp,
                       const float* w, const float* b, int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    with_storage(act_storage(ctx, {out, inp}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        rows::for_forward_k(C, [&](auto k) {
            layernorm_forward_kernel<decltype(k)::value, T><<<blocks, kThreads, 0, ctx.stream>>>(
                typed<T>(out), mean, rstd, typed<T>(inp), w, b, N, C);
        });
    });
    TRT_CUDA_LAUNCH_CHECK();
}

// dinp [N, C] +=, dw/db [C] +=, dout/inp [N, C], w [C], mean/rstd [N]
void layernorm_backward(const CudaCtx& ctx, Act dinp, float* dw, float* db, ConstAct dout,
                        ConstAct inp, const float* w, const float* mean, const float* rstd,
                        int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    with_storage(act_storage(ctx, {dinp, dout, inp}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        rows::for_backward_k(C, [&](auto k) {
            layernorm_backward_dinp_kernel<decltype(k)::value, T>
                <<<blocks, kThreads, 0, ctx.stream>>>(typed<T>(dinp), typed<T>(dout),
                                                      typed<T>(inp), w, mean, rstd, N, C);
        });
        TRT_CUDA_LAUNCH_CHECK();
        if (!dw && !db) return;
        // Reads only dout/inp/mean/rstd, never dinp: independent of the kernel above.
        colred::run<float, 2>(ctx, "layernorm_backward", colred::Dsts<2>{{dw, db}}, N, C,
                              LayernormParamOp<T>{typed<T>(dout), typed<T>(inp), mean, rstd, C});
    });
}

// res_out/out [N, C], mean/rstd [N], a/b [N, C], bb [C] or null, w/bias [C]
void residual_layernorm_forward(const CudaCtx& ctx, Act res_out, Act out, float* mean,
                                float* rstd, ConstAct a, ConstAct b, const float* bb,
                                const float* w, const float* bias, int N, int C) {
    if (N <= 0 || C <= 0) return;
    const int blocks = rows::blocks(N);
    with_storage(act_storage(ctx, {res_out, out, a, b}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        rows::for_forward_k(C, [&](auto k) {
            residual_layernorm_forward_kernel<decltype(k)::value, T>
                <<<blocks, kThreads, 0, ctx.stream>>>(typed<T>(res_out), typed<T>(out), mean,
                                                      rstd, typed<T>(a), typed<T>(b), bb, w,
                                                      bias, N, C);
        });
    });
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace trt::cuda
