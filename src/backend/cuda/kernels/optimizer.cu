// The optimizer step on device-resident StepScalars (backend.h): begin/end of step, the loss
// and gradient-norm reductions, fused multi-tensor AdamW.
//
// Determinism: no floating-point atomics. Every reduction is two-pass: a grid whose size
// depends only on n writes one double partial per block to ctx.scratch (each thread sums a
// fixed grid-stride set of elements, then a fixed shuffle tree), and one block sums the
// partials in index order. Same n, same data → same bits, on any device.
//
// AdamW matches cpu::adamw_update operation for operation: the same double-precision scalar
// setup (bias corrections: see pow_int), then single float operations with explicit
// round-to-nearest intrinsics so nvcc cannot contract them into FMAs (the CPU library is
// built with -std=c++17, i.e. GCC's -ffp-contract=off). IEEE division and square root, as on
// the CPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace trt::cuda {

namespace {

// ---------------------------------------------------------------- reductions

constexpr int kReduceThreads = 256;
constexpr int kReduceWarps = kReduceThreads / 32;
// Upper bound on the reduction grid (and so on the partials): about one wave of 256-thread
// blocks on an H100, and plenty of memory parallelism on any device. A constant, so the
// summation order never depends on the device the run happens to use.
constexpr int kMaxReduceBlocks = 1024;
// Elements per thread below which a reduction uses fewer blocks (small n: fewer partials).
constexpr size_t kReduceItemsPerThread = 8;

size_t round_up_256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Blocks of the first pass: a function of n only.
int reduce_blocks(size_t n) {
    const size_t per_block = static_cast<size_t>(kReduceThreads) * kReduceItemsPerThread;
    const size_t b = (n + per_block - 1) / per_block;
    return static_cast<int>(b < static_cast<size_t>(kMaxReduceBlocks) ? b : kMaxReduceBlocks);
}

double* reduce_partials(const CudaCtx& ctx, int blocks, const char* who) {
    const size_t need = static_cast<size_t>(blocks) * sizeof(double);
    TRT_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= need, who, ": scratch of ",
              ctx.scratch_bytes, " bytes, need ", need, " (optimizer_scratch_bytes)");
    return static_cast<double*>(ctx.scratch);
}

// Sum over the block in a fixed order (shuffle tree per warp, then warp 0 over the warp
// sums). blockDim.x == kReduceThreads. The total is valid in thread 0 only.
__device__ double block_sum(double x) {
    __shared__ double warp_sums[kReduceWarps];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x += __shfl_down_sync(0xffffffffu, x, off);
    if (lane == 0) warp_sums[warp] = x;
    __syncthreads();
    x = 0.0;
    if (warp == 0) {
        if (lane < kReduceWarps) x = warp_sums[lane];
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) x += __shfl_down_sync(0xffffffffu, x, off);
    }
    return x;
}

// First pass: partials[block] = sum over this block's grid-stride elements of x[i] (kSquare:
// x[i]², the square taken in double as the CPU does). Four independent accumulators keep
// four loads in flight per thread; their assignment depends only on (n, grid).
template <bool kSquare>
__global__ void __launch_bounds__(kReduceThreads)
    partial_sums_kernel(const float* __restrict__ x, size_t n, double* __restrict__ partials) {
    const size_t stride = static_cast<size_t>(gridDim.x) * kReduceThreads;
    size_t i = static_cast<size_t>(blockIdx.x) * kReduceThreads + threadIdx.x;
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    for (; i + 3 * stride < n; i += 4 * stride) {
        double d[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) d[k] = static_cast<double>(x[i + k * stride]);
#pragma unroll
        for (int k = 0; k < 4; ++k) acc[k] += kSquare ? d[k] * d[k] : d[k];
    }
    for (; i < n; i += stride) {
        const double d = static_cast<double>(x[i]);
        acc[0] += kSquare ? d * d : d;
    }
    const double total = block_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Second pass (one block): partials[0..count) in a fixed order; valid in thread 0.
__device__ double sum_partials(const double* __restrict__ partials, int count) {
    double acc = 0.0;
    for (int j = threadIdx.x; j < count; j += kReduceThreads) acc += partials[j];
    return block_sum(acc);
}

__global__ void __launch_bounds__(kReduceThreads)
    finish_loss_kernel(StepScalars* s, const double* __restrict__ partials, int count) {
    const double total = sum_partials(partials, count);
    if (threadIdx.x == 0) s->loss_sum += total;
}

__global__ void __launch_bounds__(kReduceThreads)
    finish_grad_norm_kernel(StepScalars* s, const double* __restrict__ partials, int count,
                            float max_norm) {
    const double ss = sum_partials(partials, count);
    if (threadIdx.x != 0) return;
    // The gradients carry loss_scale: the norm of the true gradient is sqrt(ss) / scale.
    const double norm = sqrt(ss) / static_cast<double>(s->loss_scale);
    s->grad_norm = norm;
    s->nonfinite = isfinite(ss) ? 0 : 1;
    // torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), applied when < 1;
    // in double, as AdamW::update does on the host, stored as float.
    float clip = 1.0f;
    if (max_norm > 0.0f) {
        const double coef = static_cast<double>(max_norm) / (norm + 1e-6);
        if (coef < 1.0) clip = static_cast<float>(coef);
    }
    s->clip_scale = clip;
}

// ---------------------------------------------------------------- step scalars

__global__ void begin_step_kernel(StepScalars* s, float lr, int64_t step) {
    s->lr = lr;
    s->step = step;
    s->loss_sum = 0.0;
    s->grad_norm = 0.0;
    s->clip_scale = 1.0f;
    s->nonfinite = 0;
    // loss_scale, skipped_steps, good_steps carry over.
}

// GradScaler.update (torch _amp_update_scale_): back off on a bad step, grow after
// growth_interval good ones. Like torch, a growth that would overflow to inf is not applied.
__global__ void end_step_kernel(StepScalars* s, LossScalePolicy policy) {
    if (s->nonfinite) {
        s->skipped_steps += 1;
        s->good_steps = 0;
        if (policy.dynamic) s->loss_scale *= policy.backoff_factor;
        return;
    }
    s->good_steps += 1;
    if (policy.dynamic && s->good_steps >= policy.growth_interval) {
        const float grown = s->loss_scale * policy.growth_factor;
        if (isfinite(grown)) s->loss_scale = grown;
        s->good_steps = 0;
    }
}

// ---------------------------------------------------------------- AdamW

// Working-copy element type (template parameter so the store is resolved at compile time).
enum class Lowp { None, Bf16, Fp16 };

template <Lowp kLowp>
__device__ __forceinline__ void store_lowp(void* lowp, size_t i, float p) {
    if constexpr (kLowp == Lowp::Bf16)
        static_cast<__nv_bfloat16*>(lowp)[i] = __float2bfloat16_rn(p);
    else if constexpr (kLowp == Lowp::Fp16)
        static_cast<__half*>(lowp)[i] = __float2half_rn(p);
}

// The float scalars of cpu::adamw_update (decay is per tensor, passed separately).
struct AdamWFloats {
    float beta1, beta2, one_m_b1, one_m_b2, eps;
    float step_size;  // (float)(lr / bc1)
    float bc2_sqrt;   // (float)sqrt(bc2)
    float scale;      // gradient multiplier
};

// cpu::adamw_kernel's body, one rounding per operation in the CPU's order.
__device__ __forceinline__ void adamw_element(float& p, float& m, float& v, float grad,
                                              float decay, const AdamWFloats& c) {
    const float g = __fmul_rn(grad, c.scale);
    const float mi = __fadd_rn(__fmul_rn(m, c.beta1), __fmul_rn(c.one_m_b1, g));
    const float vi = __fadd_rn(__fmul_rn(v, c.beta2), __fmul_rn(__fmul_rn(c.one_m_b2, g), g));
    m = mi;
    v = vi;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), c.bc2_sqrt), c.eps);
    p = __fsub_rn(__fmul_rn(p, decay), __fdiv_rn(__fmul_rn(c.step_size, mi), denom));
}

// (float)(1.0 - lr * wd) in double, as the CPU; explicit rounding so no FMA is formed.
__device__ __forceinline__ float tensor_decay(double lr, float wd) {
    return static_cast<float>(__dsub_rn(1.0, __dmul_rn(lr, static_cast<double>(wd))));
}

// b^t for t >= 0 (t <= 0 gives 1) by binary powering in double-double (FMA-exact products),
// so the result is the correctly rounded double in practice. Inline integer-exponent code
// instead of the libdevice pow, which is an out-of-line call whose register saves spill.
// cpu::adamw_update uses glibc pow, which is off by an ulp now and then; in a host check
// (betas 0.9 .. 0.9999, steps up to 3e5) the two never differed once rounded to float, the
// precision the update uses.
__device__ __forceinline__ void dd_mul(double& hi, double& lo, double bhi, double blo) {
    const double p = __dmul_rn(hi, bhi);
    double e = fma(hi, bhi, -p);
    e = fma(hi, blo, e);
    e = fma(lo, bhi, e);
    const double s = __dadd_rn(p, e);  // Fast2Sum, |p| >= |e|; explicit: no contraction
    lo = __dsub_rn(e, __dsub_rn(s, p));
    hi = s;
}

__device__ __forceinline__ double pow_int(double b, int64_t t) {
    double rh = 1.0, rl = 0.0, xh = b, xl = 0.0;
    while (t > 0) {
        if (t & 1) dd_mul(rh, rl, xh, xl);
        t >>= 1;
        if (t > 0) dd_mul(xh, xl, xh, xl);
    }
    return __dadd_rn(rh, rl);
}

// adamw_step's scalars from StepScalars, as cpu::adamw_update derives them from AdamWParams
// (bias corrections in double, then float).
__device__ __forceinline__ AdamWFloats step_floats(float beta1, float beta2, float one_m_b1,
                                                   float one_m_b2, float eps,
                                                   const StepScalars* s) {
    const double lr = s->lr;
    const double bc1 = 1.0 - pow_int(static_cast<double>(beta1), s->step);
    const double bc2 = 1.0 - pow_int(static_cast<double>(beta2), s->step);
    AdamWFloats c;
    c.beta1 = beta1;
    c.beta2 = beta2;
    c.one_m_b1 = one_m_b1;
    c.one_m_b2 = one_m_b2;
    c.eps = eps;
    c.step_size = static_cast<float>(lr / bc1);
    c.bc2_sqrt = static_cast<float>(sqrt(bc2));
    // The CPU multiplies by grad_scale = (float)clip_scale; loss_scale (1 on the CPU, where
    // the division is exact) unscales fp16-scaled gradients in the same factor.
    c.scale = __fdiv_rn(s->clip_scale, s->loss_scale);
    return c;
}

constexpr int kAdamThreads = 256;
constexpr int kAdamItems = 8;                                 // elements per thread
constexpr int64_t kAdamChunk = kAdamThreads * kAdamItems;  // elements per block-iteration
// adamw_step's grid cap: enough blocks to fill any device while amortising each block's
// scalar setup (two double-double powers) over several chunks. Elementwise: the grid cannot change
// the result.
constexpr int64_t kAdamMaxBlocks = 8192;

// Fused multi-tensor AdamW over the flat buffer [n], cut into contiguous chunks of
// kAdamChunk elements; block b takes chunks b, b + gridDim.x, ... Within a chunk thread t
// owns elements base + k*kAdamThreads + t (coalesced) in increasing order, so it finds the
// segment of its first element by binary search and then only walks forward. Thread 0
// derives the step's scalars from s (in double, as the CPU) once per block.
template <Lowp kLowp>
__global__ void __launch_bounds__(kAdamThreads)
    adamw_step_kernel(float* __restrict__ params, void* __restrict__ lowp,
                      const float* __restrict__ grads, float* __restrict__ m,
                      float* __restrict__ v, int64_t n, const int64_t* __restrict__ seg_ends,
                      const float* __restrict__ seg_decay, int32_t seg_count, float beta1,
                      float beta2, float one_m_b1, float one_m_b2, float eps,
                      const StepScalars* __restrict__ s) {
    __shared__ AdamWFloats sh_c;
    __shared__ double sh_lr;
    __shared__ int sh_skip;
    if (threadIdx.x == 0) {
        sh_skip = s->nonfinite;
        sh_lr = s->lr;
        sh_c = step_floats(beta1, beta2, one_m_b1, one_m_b2, eps, s);
    }
    __syncthreads();
    if (sh_skip) return;  // GradScaler: a non-finite gradient never reaches the weights
    const AdamWFloats c = sh_c;
    const double lr = sh_lr;

    const int64_t chunks = (n + kAdamChunk - 1) / kAdamChunk;
    for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        const int64_t first = chunk * kAdamChunk + threadIdx.x;
        if (first >= n) break;  // only in the last chunk; no barrier follows
        // Segment of `first`: the first j with ends[j] > first (clamped to the last one).
        int32_t lo = 0, hi = seg_count - 1;
        while (lo < hi) {
            const int32_t mid = (lo + hi) >> 1;
            if (seg_ends[mid] > first) hi = mid;
            else lo = mid + 1;
        }
        int32_t seg = lo;
        int64_t seg_end = seg_ends[seg];
        float decay = tensor_decay(lr, seg_decay[seg]);
#pragma unroll
        for (int k = 0; k < kAdamItems; ++k) {
            const int64_t i = first + static_cast<int64_t>(k) * kAdamThreads;
            if (i >= n) break;
            while (i >= seg_end && seg + 1 < seg_count) {
                ++seg;
                seg_end = seg_ends[seg];
                decay = tensor_decay(lr, seg_decay[seg]);
            }
            float p = params[i], mi = m[i], vi = v[i];
            adamw_element(p, mi, vi, grads[i], decay, c);
            params[i] = p;
            m[i] = mi;
            v[i] = vi;
            store_lowp<kLowp>(lowp, static_cast<size_t>(i), p);
        }
    }
}

// optim.state_dtype = "int8": one thread block per quantization block (kQ8Block elements,
// one per thread). Each thread decodes its moments, updates as adamw_step_kernel does, and
// the block's new scales (largest |m|, largest v) come from a fixed-order tree in shared
// memory; then each thread encodes its moments with the shared tables (core/q8_moments.h),
// exactly as the CPU's adamw_step_q8.
static_assert(kQ8Block == kAdamThreads, "one thread per element of a quantization block");
template <Lowp kLowp>
__global__ void __launch_bounds__(kAdamThreads)
    adamw_step_q8_kernel(float* __restrict__ params, void* __restrict__ lowp,
                         const float* __restrict__ grads, uint8_t* __restrict__ m8,
                         uint8_t* __restrict__ v8, float* __restrict__ m_scale,
                         float* __restrict__ v_scale, const Q8Tables* __restrict__ tables,
                         int64_t n, const int64_t* __restrict__ seg_ends,
                         const float* __restrict__ seg_decay, int32_t seg_count, float beta1,
                         float beta2, float one_m_b1, float one_m_b2, float eps,
                         const StepScalars* __restrict__ s) {
    __shared__ AdamWFloats sh_c;
    __shared__ double sh_lr;
    __shared__ int sh_skip;
    __shared__ float sh_m[kAdamThreads], sh_v[kAdamThreads];
    if (threadIdx.x == 0) {
        sh_skip = s->nonfinite;
        sh_lr = s->lr;
        sh_c = step_floats(beta1, beta2, one_m_b1, one_m_b2, eps, s);
    }
    __syncthreads();
    if (sh_skip) return;
    const AdamWFloats c = sh_c;
    const Q8Tables& t = *tables;
    const int64_t blocks = q8_blocks(n);
    for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
        const int64_t i = b * kQ8Block + threadIdx.x;
        float mi = 0.0f, vi = 0.0f;
        if (i < n) {
            int32_t lo = 0, hi = seg_count - 1;  // the segment of i
            while (lo < hi) {
                const int32_t mid = (lo + hi) >> 1;
                if (seg_ends[mid] > i) hi = mid;
                else lo = mid + 1;
            }
            float p = params[i];
            mi = q8_decode_m(t, m8[i], m_scale[b]);
            vi = q8_decode_v(t, v8[i], v_scale[b]);
            adamw_element(p, mi, vi, grads[i], tensor_decay(sh_lr, seg_decay[lo]), c);
            params[i] = p;
            store_lowp<kLowp>(lowp, static_cast<size_t>(i), p);
        }
        sh_m[threadIdx.x] = fabsf(mi);
        sh_v[threadIdx.x] = vi;
        __syncthreads();
        for (int w = kAdamThreads / 2; w > 0; w >>= 1) {
            if (threadIdx.x < w) {
                sh_m[threadIdx.x] = fmaxf(sh_m[threadIdx.x], sh_m[threadIdx.x + w]);
                sh_v[threadIdx.x] = fmaxf(sh_v[threadIdx.x], sh_v[threadIdx.x + w]);
            }
            __syncthreads();
        }
        const float ms = sh_m[0], vs = sh_v[0];
        if (i < n) {
            m8[i] = q8_encode_m(t, mi, ms);
            v8[i] = q8_encode_v(t, vi, vs);
        }
        if (threadIdx.x == 0) {
            m_scale[b] = ms;
            v_scale[b] = vs;
        }
        __syncthreads();  // sh_m, sh_v are refilled for the next block
    }
}

Lowp lowp_kind(const CudaCtx& ctx, const void* params_lowp, const char* who) {
    if (params_lowp == nullptr) return Lowp::None;
    TRT_CHECK(ctx.lowp(), who, ": a working copy needs precision Bf16 or Fp16");
    return ctx.precision == Precision::Bf16 ? Lowp::Bf16 : Lowp::Fp16;
}

}  // namespace

size_t optimizer_scratch_bytes(size_t n_params, const ModelDims& d) {
    (void)n_params;
    (void)d;
    // One double partial per first-pass block. The grid is capped at kMaxReduceBlocks for any
    // n (parameters or B*T losses), so the bound is constant.
    return round_up_256(static_cast<size_t>(kMaxReduceBlocks) * sizeof(double));
}

void begin_step(const CudaCtx& ctx, StepScalars* s, float lr, int64_t step) {
    TRT_CHECK(s != nullptr, "begin_step: null StepScalars");
    begin_step_kernel<<<1, 1, 0, ctx.stream>>>(s, lr, step);
    TRT_CUDA_LAUNCH_CHECK();
}

void accumulate_loss(const CudaCtx& ctx, StepScalars* s, const float* losses, size_t n) {
    TRT_CHECK(s != nullptr, "accumulate_loss: null StepScalars");
    if (n == 0) return;  // loss_sum += 0
    TRT_CHECK(losses != nullptr, "accumulate_loss: null losses");
    const int blocks = reduce_blocks(n);
    double* partials = reduce_partials(ctx, blocks, "accumulate_loss");
    partial_sums_kernel<false><<<blocks, kReduceThreads, 0, ctx.stream>>>(losses, n, partials);
    TRT_CUDA_LAUNCH_CHECK();
    finish_loss_kernel<<<1, kReduceThreads, 0, ctx.stream>>>(s, partials, blocks);
    TRT_CUDA_LAUNCH_CHECK();
}

void grad_norm_clip(const CudaCtx& ctx, StepScalars* s, const float* grads, size_t n,
                    float max_norm) {
    TRT_CHECK(s != nullptr && (n == 0 || grads != nullptr), "grad_norm_clip: null pointer");
    // n == 0: no first pass; the second still writes norm 0, finite, clip 1.
    const int blocks = reduce_blocks(n);
    double* partials = reduce_partials(ctx, blocks, "grad_norm_clip");
    if (blocks > 0) {
        partial_sums_kernel<true><<<blocks, kReduceThreads, 0, ctx.stream>>>(grads, n,
                                                                              partials);
        TRT_CUDA_LAUNCH_CHECK();
    }
    finish_grad_norm_kernel<<<1, kReduceThreads, 0, ctx.stream>>>(s, partials, blocks,
                                                                   max_norm);
    TRT_CUDA_LAUNCH_CHECK();
}

void adamw_step(const CudaCtx& ctx, float* params, void* params_lowp, const float* grads,
                float* m, float* v, size_t n, const ParamSegments& seg, const AdamWConfig& hp,
                const StepScalars* s) {
    TRT_CHECK(s != nullptr, "adamw_step: null StepScalars");
    if (n == 0) return;
    TRT_CHECK(params && grads && m && v, "adamw_step: null buffer");
    TRT_CHECK(seg.ends && seg.weight_decay && seg.count > 0, "adamw_step: no segments");
    const int64_t chunks = (static_cast<int64_t>(n) + kAdamChunk - 1) / kAdamChunk;
    const int64_t blocks = chunks < kAdamMaxBlocks ? chunks : kAdamMaxBlocks;
    // Host-side, exactly as cpu::adamw_update: (float)(1.0 - (double)beta).
    const float one_m_b1 = static_cast<float>(1.0 - static_cast<double>(hp.beta1));
    const float one_m_b2 = static_cast<float>(1.0 - static_cast<double>(hp.beta2));
    const int64_t n64 = static_cast<int64_t>(n);
    switch (lowp_kind(ctx, params_lowp, "adamw_step")) {
        case Lowp::None:
            adamw_step_kernel<Lowp::None>
                <<<static_cast<unsigned>(blocks), kAdamThreads, 0, ctx.stream>>>(
                    params, params_lowp, grads, m, v, n64, seg.ends, seg.weight_decay,
                    seg.count, hp.beta1, hp.beta2, one_m_b1, one_m_b2, hp.eps, s);
            break;
        case Lowp::Bf16:
            adamw_step_kernel<Lowp::Bf16>
                <<<static_cast<unsigned>(blocks), kAdamThreads, 0, ctx.stream>>>(
                    params, params_lowp, grads, m, v, n64, seg.ends, seg.weight_decay,
                    seg.count, hp.beta1, hp.beta2, one_m_b1, one_m_b2, hp.eps, s);
            break;
        case Lowp::Fp16:
            adamw_step_kernel<Lowp::Fp16>
                <<<static_cast<unsigned>(blocks), kAdamThreads, 0, ctx.stream>>>(
                    params, params_lowp, grads, m, v, n64, seg.ends, seg.weight_decay,
                    seg.count, hp.beta1, hp.beta2, one_m_b1, one_m_b2, hp.eps, s);
            break;
    }
    TRT_CUDA_LAUNCH_CHECK();
}

void adamw_step_q8(const CudaCtx& ctx, float* params, void* params_lowp, const float* grads,
                   uint8_t* m8, uint8_t* v8, float* m_scale, float* v_scale,
                   const Q8Tables* tables, size_t n, const ParamSegments& seg,
                   const AdamWConfig& hp, const StepScalars* s) {
    TRT_CHECK(s != nullptr, "adamw_step_q8: null StepScalars");
    if (n == 0) return;
    TRT_CHECK(params && grads && m8 && v8 && m_scale && v_scale && tables,
              "adamw_step_q8: null buffer");
    TRT_CHECK(seg.ends && seg.weight_decay && seg.count > 0, "adamw_step_q8: no segments");
    const int64_t n64 = static_cast<int64_t>(n);
    const int64_t qb = q8_blocks(n64);
    const unsigned blocks = static_cast<unsigned>(qb < kAdamMaxBlocks ? qb : kAdamMaxBlocks);
    const float one_m_b1 = static_cast<float>(1.0 - static_cast<double>(hp.beta1));
    const float one_m_b2 = static_cast<float>(1.0 - static_cast<double>(hp.beta2));
    auto launch = [&](auto kind) {
        adamw_step_q8_kernel<decltype(kind)::value><<<blocks, kAdamThreads, 0, ctx.stream>>>(
            params, params_lowp, grads, m8, v8, m_scale, v_scale, tables, n64, seg.ends,
            seg.weight_decay, seg.count, hp.beta1, hp.beta2, one_m_b1, one_m_b2, hp.eps, s);
    };
    switch (lowp_kind(ctx, params_lowp, "adamw_step_q8")) {
        case Lowp::None: launch(std::integral_constant<Lowp, Lowp::None>{}); break;
        case Lowp::Bf16: launch(std::integral_constant<Lowp, Lowp::Bf16>{}); break;
        case Lowp::Fp16: launch(std::integral_constant<Lowp, Lowp::Fp16>{}); break;
    }
    TRT_CUDA_LAUNCH_CHECK();
}

void end_step(const CudaCtx& ctx, StepScalars* s, const LossScalePolicy& policy) {
    TRT_CHECK(s != nullptr, "end_step: null StepScalars");
    end_step_kernel<<<1, 1, 0, ctx.stream>>>(s, policy);
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace trt::cuda
