// Softmax cross-entropy CUDA kernels. The default (ctx.fused_classifier) is one fused kernel:
// online softmax per row (no probability tensor), then the logit gradient written in place.
// The fallback is the textbook sequence of separate kernels (row statistics, loss gather,
// then the gradient from the statistics), slower but simple to reason about when the fused
// one is in doubt.
//
// The logits (and the gradient written over them) are stored as T (ctx.act: float, bf16 or
// fp16) and read exactly; max, sum, loss and gradient are fp32 (the loss via double), and
// each gradient element is rounded once when stored, as in the CPU twin. Statistics and
// losses stay float.
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/lowp.cuh"
#include "backend/cuda/kernels/reduce.cuh"
#include "core/error.h"

namespace trt::cuda {
namespace {

// Running (max, sum of e^(x - max)) of a set of logits. An empty set is (-FLT_MAX, 0), not
// (-inf, 0): a -inf logit then adds e^(-inf) = 0 as on the CPU, where -inf - (-inf) would
// make the whole row's loss NaN.
struct MaxSum {
    float m;
    float s;
};

// Merge two (max, sum) states. Symmetric in its arguments bit for bit (fmaxf and + are
// commutative), so the xor butterfly below gives every lane the same state.
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.m, b.m);  // maxima are never -inf or NaN: no -inf - -inf here
    // __fadd_rn: never contracted into an fma, which would round the two sides differently.
    return {m, __fadd_rn(a.s * expf(a.m - m), b.s * expf(b.m - m))};
}

__device__ __forceinline__ MaxSum warp_merge(MaxSum v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        MaxSum u;
        u.m = __shfl_xor_sync(kFullWarpMask, v.m, o);
        u.s = __shfl_xor_sync(kFullWarpMask, v.s, o);
        v = merge(v, u);
    }
    return v;
}

// One block per row n of logits [N, Vp]:
//   pass 1: each thread keeps (max, sum) over its strided columns of [0, V), rescaling the
//           sum when the max grows (online softmax); merged across the block in a fixed tree.
//   loss:   losses[n] = max + log(sum) - logits[n, tgt] (double, as the CPU).
//   pass 2 (write_grad): logits[n, i] = e^(x - max) * (d / sum) - (i == tgt ? d : 0) for
//           i < V and 0 for V <= i < Vp, d = dloss (* scalars->loss_scale, read here).
// An ignored target (kIgnoredTarget, -1) gives loss 0 and a gradient row of 0, without
// reading the row. Any other target outside [0, V) (the host cannot check device targets)
// gives a NaN loss, which surfaces in the step's loss_sum, and no onehot term; nothing is
// read out of bounds.
template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    classifier_kernel(T* __restrict__ logits, float* __restrict__ losses,
                      const int32_t* __restrict__ targets, int V, int Vp, float dloss,
                      bool write_grad, const StepScalars* __restrict__ scalars) {
    constexpr int kWarps = kThreads / 32;
    __shared__ float sh_m[kWarps], sh_s[kWarps];
    __shared__ MaxSum sh_total;

    const int n = blockIdx.x;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    T* row = logits + static_cast<size_t>(n) * Vp;
    const int tgt = targets[n];
    if (tgt == kIgnoredTarget) {  // uniform across the block: no barrier is skipped by some
        if (tid == 0) losses[n] = 0.0f;
        if (write_grad)
            for (int j = tid; j < Vp; j += kThreads) row[j] = from_f32<T>(0.0f);
        return;
    }
    const bool tgt_ok = tgt >= 0 && tgt < V;
    // Read before any thread overwrites the row (pass 2 comes after the block barriers).
    const float tgt_logit = tgt_ok ? to_f32(row[tgt]) : NAN;

    MaxSum st{-FLT_MAX, 0.0f};
    int i = tid;
    for (; i + 3 * kThreads < V; i += 4 * kThreads) {  // four independent loads per step
        const float x0 = to_f32(row[i]), x1 = to_f32(row[i + kThreads]);
        const float x2 = to_f32(row[i + 2 * kThreads]), x3 = to_f32(row[i + 3 * kThreads]);
        const float mx = fmaxf(fmaxf(x0, x1), fmaxf(x2, x3));
        if (mx > st.m) {
            st.s *= expf(st.m - mx);  // empty: 0 * e^(..)
            st.m = mx;
        }
        st.s += (expf(x0 - st.m) + expf(x1 - st.m)) + (expf(x2 - st.m) + expf(x3 - st.m));
    }
    for (; i < V; i += kThreads) {
        const float x = to_f32(row[i]);
        if (x > st.m) {
            st.s = st.s * expf(st.m - x) + 1.0f;
            st.m = x;
        } else {
            st.s += expf(x - st.m);
        }
    }

    st = warp_merge(st);
    if (lane == 0) {
        sh_m[warp] = st.m;
        sh_s[warp] = st.s;
    }
    __syncthreads();
    if (warp == 0) {
        MaxSum w{-FLT_MAX, 0.0f};
        if (lane < kWarps) w = MaxSum{sh_m[lane], sh_s[lane]};
        w = warp_merge(w);
        if (lane == 0) sh_total = w;
    }
    __syncthreads();
    const MaxSum tot = sh_total;

    if (tid == 0) {
        losses[n] = tgt_ok ? static_cast<float>(static_cast<double>(tot.m) +
                                                log(static_cast<double>(tot.s)) -
                                                static_cast<double>(tgt_logit))
                           : NAN;
    }
    if (!write_grad) return;

    const float d = scalars ? dloss * scalars->loss_scale : dloss;
    const float k = d / tot.s;
    for (int j = tid; j < V; j += kThreads) {
        float g = expf(to_f32(row[j]) - tot.m) * k;
        if (j == tgt) g -= d;  // the onehot term (never true for an invalid tgt)
        row[j] = from_f32<T>(g);  // the only rounding of the gradient
    }
    for (int j = V + tid; j < Vp; j += kThreads) row[j] = from_f32<T>(0.0f);  // padding
}

// ---- the unfused fallback (ctx.fused_classifier == false)

// Block-wide max / sum of one value per thread, in a fixed tree (warp butterflies, then every
// warp reduces the per-warp results the same way): every thread gets the same bits, run after
// run. Uses sh[kThreads / 32] floats of shared memory; all threads of the block must call it.
template <int kThreads>
__device__ __forceinline__ float block_max(float v, float* sh) {
    constexpr int kWarps = kThreads / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = lane < kWarps ? sh[lane] : -FLT_MAX;
    r = warp_max(r);
    __syncthreads();  // sh may be reused by the next call
    return r;
}

template <int kThreads>
__device__ __forceinline__ float block_sum(float v, float* sh) {
    constexpr int kWarps = kThreads / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = lane < kWarps ? sh[lane] : 0.0f;
    r = warp_sum(r);
    __syncthreads();
    return r;
}

// Pass 1, one block per row n of logits [N, Vp]: stats[n] = (max, sum of e^(x - max)) over
// [0, V), two passes over the row. The max starts at -FLT_MAX as in the fused kernel, so -inf
// logits add e^(-inf) = 0 and a row that is all -inf gives a NaN loss in both.
template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    softmax_stats_kernel(float2* __restrict__ stats, const T* __restrict__ logits, int V,
                         int Vp) {
    __shared__ float sh[kThreads / 32];
    const T* row = logits + static_cast<size_t>(blockIdx.x) * Vp;
    float m = -FLT_MAX;
    for (int i = threadIdx.x; i < V; i += kThreads) m = fmaxf(m, to_f32(row[i]));
    m = block_max<kThreads>(m, sh);
    float s = 0.0f;
    for (int i = threadIdx.x; i < V; i += kThreads) s += expf(to_f32(row[i]) - m);
    s = block_sum<kThreads>(s, sh);
    if (threadIdx.x == 0) stats[blockIdx.x] = make_float2(m, s);
}

// Pass 2, one thread per row: losses[n] = max + log(sum) - logits[n, tgt] (double, as the
// CPU), read before pass 3 overwrites the row. An ignored target gives 0, any other invalid
// one NaN (fused kernel).
template <typename T>
__global__ void loss_gather_kernel(float* __restrict__ losses, const float2* __restrict__ stats,
                                   const T* __restrict__ logits,
                                   const int32_t* __restrict__ targets, int N, int V, int Vp) {
    for (int n = blockIdx.x * blockDim.x + threadIdx.x; n < N; n += gridDim.x * blockDim.x) {
        const int tgt = targets[n];
        if (tgt == kIgnoredTarget) {
            losses[n] = 0.0f;
            continue;
        }
        if (tgt < 0 || tgt >= V) {
            losses[n] = NAN;
            continue;
        }
        const float2 st = stats[n];
        const float x = to_f32(logits[static_cast<size_t>(n) * Vp + tgt]);
        losses[n] = static_cast<float>(static_cast<double>(st.x) +
                                       log(static_cast<double>(st.y)) - static_cast<double>(x));
    }
}

// Pass 3: logits[n, i] = d * (prob - onehot(tgt)) with prob = e^(x - max) / sum for i < V,
// 0 for V <= i < Vp and for every column of an ignored target's row; d = dloss
// (* scalars->loss_scale, read on the device). The probability
// is formed in fp32 from the row statistics, never stored: with T = bf16/fp16 the gradient is
// rounded once (the CPU twin), and with T = float the arithmetic is that of the former
// separate probability and gradient passes (prob rounded to fp32, then d * (prob - onehot)).
// Grid (column blocks, row blocks), both grid-strided.
template <typename T>
__global__ void dlogits_kernel(T* __restrict__ logits, const float2* __restrict__ stats,
                               const int32_t* __restrict__ targets, int N, int V, int Vp,
                               float dloss, const StepScalars* __restrict__ scalars) {
    const float d = scalars ? dloss * scalars->loss_scale : dloss;
    for (int n = blockIdx.y; n < N; n += gridDim.y) {
        const float2 st = stats[n];
        const int tgt = targets[n];
        const bool counted = tgt != kIgnoredTarget;
        T* row = logits + static_cast<size_t>(n) * Vp;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < Vp;
             i += gridDim.x * blockDim.x) {
            float g = 0.0f;  // padding, or an ignored row: no gradient
            if (i < V && counted) {
                const float p = expf(to_f32(row[i]) - st.x) / st.y;
                g = d * (p - (i == tgt ? 1.0f : 0.0f));
            }
            row[i] = from_f32<T>(g);
        }
    }
}

constexpr int kElemThreads = 256;

// Grid of the two elementwise passes over [N, cols]: column blocks x row blocks (capped).
dim3 row_grid(int N, int cols) {
    const int x = (cols + kElemThreads - 1) / kElemThreads;
    return dim3(static_cast<unsigned>(x < 1 ? 1 : x), static_cast<unsigned>(N < 65535 ? N : 65535));
}

template <typename T, int kThreads>
void classifier_unfused(const CudaCtx& ctx, T* logits, float* losses,
                        const int32_t* targets, int N, int V, int Vp, float dloss,
                        bool write_grad, const StepScalars* scalars) {
    const size_t need = static_cast<size_t>(N) * sizeof(float2);
    TRT_CHECK(need <= ctx.scratch_bytes, "classifier (unfused) needs ", need,
              " bytes of CUDA scratch for N=", N, ", have ", ctx.scratch_bytes,
              " (sized by reserve(ModelDims))");
    float2* stats = static_cast<float2*>(ctx.scratch);  // [N]
    softmax_stats_kernel<T, kThreads><<<N, kThreads, 0, ctx.stream>>>(stats, logits, V, Vp);
    TRT_CUDA_LAUNCH_CHECK();
    const int gather_blocks = (N + kElemThreads - 1) / kElemThreads;
    loss_gather_kernel<T><<<gather_blocks, kElemThreads, 0, ctx.stream>>>(losses, stats, logits,
                                                                         targets, N, V, Vp);
    TRT_CUDA_LAUNCH_CHECK();
    if (!write_grad) return;
    dlogits_kernel<T><<<row_grid(N, Vp), kElemThreads, 0, ctx.stream>>>(
        logits, stats, targets, N, V, Vp, dloss, scalars);
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace

// The fused kernel needs none; the unfused fallback keeps (max, sum) per row.
size_t classifier_scratch_bytes(const ModelDims& d) {
    const size_t N = d.B > 0 && d.T > 0 ? static_cast<size_t>(d.B) * d.T : 0;
    return align_up_256(N * sizeof(float2));
}

// logits [N, Vp] in/out (gradient when write_grad), losses [N], targets [N] in [0, V) or
// kIgnoredTarget
void classifier_forward_backward(const CudaCtx& ctx, Act logits, float* losses,
                                 const int32_t* targets, int N, int V, int Vp, float dloss,
                                 bool write_grad, const StepScalars* scalars) {
    TRT_CHECK(V > 0 && V <= Vp, "classifier_forward_backward: V=", V, " Vp=", Vp);
    if (N <= 0) return;
    // Block size depends on V only (not on the GPU), so the reduction tree is fixed.
    const bool wide = V >= 4096;
    with_storage(act_storage(ctx, {logits}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* x = typed<T>(logits);
        if (!ctx.fused_classifier) {
            if (wide) {
                classifier_unfused<T, 512>(ctx, x, losses, targets, N, V, Vp, dloss, write_grad,
                                           scalars);
            } else {
                classifier_unfused<T, 128>(ctx, x, losses, targets, N, V, Vp, dloss, write_grad,
                                           scalars);
            }
            return;
        }
        if (wide) {
            classifier_kernel<T, 512><<<N, 512, 0, ctx.stream>>>(x, losses, targets, V, Vp,
                                                                 dloss, write_grad, scalars);
        } else {
            classifier_kernel<T, 128><<<N, 128, 0, ctx.stream>>>(x, losses, targets, V, Vp,
                                                                 dloss, write_grad, scalars);
        }
        TRT_CUDA_LAUNCH_CHECK();
    });
}

}  // namespace trt::cuda
