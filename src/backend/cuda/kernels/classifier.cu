// Fused softmax cross-entropy CUDA kernel: online softmax per row (no probability tensor),
// then the logit gradient written in place.
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
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
// A target outside [0, V) (the host cannot check device targets) gives a NaN loss, which
// surfaces in the step's loss_sum, and no onehot term; nothing is read out of bounds.
template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    classifier_kernel(float* __restrict__ logits, float* __restrict__ losses,
                      const int32_t* __restrict__ targets, int V, int Vp, float dloss,
                      bool write_grad, const StepScalars* __restrict__ scalars) {
    constexpr int kWarps = kThreads / 32;
    __shared__ float sh_m[kWarps], sh_s[kWarps];
    __shared__ MaxSum sh_total;

    const int n = blockIdx.x;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float* row = logits + static_cast<size_t>(n) * Vp;
    const int tgt = targets[n];
    const bool tgt_ok = tgt >= 0 && tgt < V;
    // Read before any thread overwrites the row (pass 2 comes after the block barriers).
    const float tgt_logit = tgt_ok ? row[tgt] : NAN;

    MaxSum st{-FLT_MAX, 0.0f};
    int i = tid;
    for (; i + 3 * kThreads < V; i += 4 * kThreads) {  // four independent loads per step
        const float x0 = row[i], x1 = row[i + kThreads];
        const float x2 = row[i + 2 * kThreads], x3 = row[i + 3 * kThreads];
        const float mx = fmaxf(fmaxf(x0, x1), fmaxf(x2, x3));
        if (mx > st.m) {
            st.s *= expf(st.m - mx);  // empty: 0 * e^(..)
            st.m = mx;
        }
        st.s += (expf(x0 - st.m) + expf(x1 - st.m)) + (expf(x2 - st.m) + expf(x3 - st.m));
    }
    for (; i < V; i += kThreads) {
        const float x = row[i];
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
        float g = expf(row[j] - tot.m) * k;
        if (j == tgt) g -= d;  // the onehot term (never true for an invalid tgt)
        row[j] = g;
    }
    for (int j = V + tid; j < Vp; j += kThreads) row[j] = 0.0f;  // padding: no gradient
}

}  // namespace

size_t classifier_scratch_bytes(const ModelDims&) { return 0; }  // one block per row, no scratch

// logits [N, Vp] in/out (gradient when write_grad), losses [N], targets [N] in [0, V)
void classifier_forward_backward(const CudaCtx& ctx, float* logits, float* losses,
                                 const int32_t* targets, int N, int V, int Vp, float dloss,
                                 bool write_grad, const StepScalars* scalars) {
    TRT_CHECK(V > 0 && V <= Vp, "classifier_forward_backward: V=", V, " Vp=", Vp);
    if (N <= 0) return;
    // Block size depends on V only (not on the GPU), so the reduction tree is fixed.
    if (V >= 4096) {
        classifier_kernel<512><<<N, 512, 0, ctx.stream>>>(logits, losses, targets, V, Vp, dloss,
                                                          write_grad, scalars);
    } else {
        classifier_kernel<128><<<N, 128, 0, ctx.stream>>>(logits, losses, targets, V, Vp, dloss,
                                                          write_grad, scalars);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace trt::cuda
