// The casts of cuDNN attention's length buckets (cudnn_attention.cpp, attention_plan_cache.h):
// a call of T positions served by a plan of Tb >= T positions reads bf16/fp16 rows padded with
// zero rows to Tb per batch, and only the first T rows of each batch of the plan's output come
// back as fp32. With Tb == T they are the plain casts of elementwise.cu (same conversions,
// lowp.cuh). CPU twins: pad_rows / unpad_rows (padded_rows.h).
//
// Like elementwise.cu's casts, eight values per thread with 128-bit accesses when the row width
// is a multiple of 8 and both pointers are 16-byte aligned (always, for attention: W = C or 3C
// with C a multiple of 8, buffers 256-byte aligned), else one value per thread.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

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
constexpr size_t kMaxBlocks = 16384;  // grid-stride beyond this

int grid_for(size_t units) {
    return grid_blocks(static_cast<int64_t>(units), kThreads, static_cast<int64_t>(kMaxBlocks));
}


// dst [B,Tb,W] lowp = src [B,T,W] in rows t < T, +0 in rows T..Tb-1. Units of `vec` elements
// (1 or 8; W % vec == 0): unit u is row r = u / (W/vec) of dst, r = b·Tb + t.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    cast_padded_kernel(T* __restrict__ dst, const float* __restrict__ src, size_t units,
                       int T_, int Tb, int W) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t u = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
         u += stride) {
        const size_t r = u / W, c = u - r * W;
        const size_t b = r / Tb, t = r - b * Tb;
        dst[u] = t < static_cast<size_t>(T_) ? from_f32<T>(src[(b * T_ + t) * W + c])
                                             : from_f32<T>(0.0f);
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    cast_padded_vec8_kernel(T* __restrict__ dst, const float* __restrict__ src, size_t units,
                            int T_, int Tb, int W8) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const float4* s4 = reinterpret_cast<const float4*>(src);
    Lowp8<T>* d8 = reinterpret_cast<Lowp8<T>*>(dst);
    for (size_t u = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
         u += stride) {
        const size_t r = u / W8, c = u - r * W8;
        const size_t b = r / Tb, t = r - b * Tb;
        if (t >= static_cast<size_t>(T_)) {
            // The zero row: +0 in bf16 and fp16 alike is all bits clear.
            reinterpret_cast<uint4*>(d8)[u] = make_uint4(0u, 0u, 0u, 0u);
            continue;
        }
        const size_t s = (b * T_ + t) * W8 + c;  // in groups of 8 floats
        const float4 x = s4[2 * s], y = s4[2 * s + 1];
        Lowp8<T> o;
        o.v[0] = from_f32<T>(x.x);
        o.v[1] = from_f32<T>(x.y);
        o.v[2] = from_f32<T>(x.z);
        o.v[3] = from_f32<T>(x.w);
        o.v[4] = from_f32<T>(y.x);
        o.v[5] = from_f32<T>(y.y);
        o.v[6] = from_f32<T>(y.z);
        o.v[7] = from_f32<T>(y.w);
        d8[u] = o;
    }
}

// dst [B,T,W] fp32 = src [B,Tb,W] lowp, rows t < T of each batch. Unit u is row r = b·T + t of
// dst.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    cast_unpadded_kernel(float* __restrict__ dst, const T* __restrict__ src, size_t units,
                         int T_, int Tb, int W) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t u = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
         u += stride) {
        const size_t r = u / W, c = u - r * W;
        const size_t b = r / T_, t = r - b * T_;
        dst[u] = to_f32(src[(b * Tb + t) * W + c]);
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    cast_unpadded_vec8_kernel(float* __restrict__ dst, const T* __restrict__ src, size_t units,
                              int T_, int Tb, int W8) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const Lowp8<T>* s8 = reinterpret_cast<const Lowp8<T>*>(src);
    float4* d4 = reinterpret_cast<float4*>(dst);
    for (size_t u = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
         u += stride) {
        const size_t r = u / W8, c = u - r * W8;
        const size_t b = r / T_, t = r - b * T_;
        const Lowp8<T> v = s8[(b * Tb + t) * W8 + c];
        d4[2 * u] = make_float4(to_f32(v.v[0]), to_f32(v.v[1]), to_f32(v.v[2]), to_f32(v.v[3]));
        d4[2 * u + 1] =
            make_float4(to_f32(v.v[4]), to_f32(v.v[5]), to_f32(v.v[6]), to_f32(v.v[7]));
    }
}

void check_shape(const char* who, int B, int T, int Tb, int W, Precision p) {
    TRT_CHECK(p == Precision::Bf16 || p == Precision::Fp16, who,
              " needs precision bf16 or fp16, got ", static_cast<int>(p));
    TRT_CHECK(B >= 0 && T >= 0 && W >= 0 && Tb >= T, who, ": B=", B, " T=", T, " Tb=", Tb,
              " W=", W, " (need Tb >= T)");
}

template <typename T>
void launch_padded(const CudaCtx& ctx, T* dst, const float* src, int B, int T_, int Tb, int W) {
    const size_t elems = static_cast<size_t>(B) * Tb * W;
    if (W % 8 == 0 && aligned16(dst) && aligned16(src)) {
        cast_padded_vec8_kernel<T><<<grid_for(elems / 8), kThreads, 0, ctx.stream>>>(
            dst, src, elems / 8, T_, Tb, W / 8);
    } else {
        cast_padded_kernel<T><<<grid_for(elems), kThreads, 0, ctx.stream>>>(dst, src, elems, T_,
                                                                            Tb, W);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void launch_unpadded(const CudaCtx& ctx, float* dst, const T* src, int B, int T_, int Tb,
                     int W) {
    const size_t elems = static_cast<size_t>(B) * T_ * W;
    if (W % 8 == 0 && aligned16(dst) && aligned16(src)) {
        cast_unpadded_vec8_kernel<T><<<grid_for(elems / 8), kThreads, 0, ctx.stream>>>(
            dst, src, elems / 8, T_, Tb, W / 8);
    } else {
        cast_unpadded_kernel<T><<<grid_for(elems), kThreads, 0, ctx.stream>>>(dst, src, elems,
                                                                              T_, Tb, W);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace

// dst [B,Tb,W] bf16/fp16, src [B,T,W] fp32
void cast_padded_from_f32(const CudaCtx& ctx, void* dst, const float* src, int B, int T, int Tb,
                          int W, Precision p) {
    check_shape("cast_padded_from_f32", B, T, Tb, W, p);
    if (B == 0 || Tb == 0 || W == 0) return;
    if (p == Precision::Bf16)
        launch_padded(ctx, static_cast<__nv_bfloat16*>(dst), src, B, T, Tb, W);
    else
        launch_padded(ctx, static_cast<__half*>(dst), src, B, T, Tb, W);
}

// dst [B,T,W] fp32, src [B,Tb,W] bf16/fp16
void cast_unpadded_to_f32(const CudaCtx& ctx, float* dst, const void* src, int B, int T, int Tb,
                          int W, Precision p) {
    check_shape("cast_unpadded_to_f32", B, T, Tb, W, p);
    if (B == 0 || T == 0 || W == 0) return;
    if (p == Precision::Bf16)
        launch_unpadded(ctx, dst, static_cast<const __nv_bfloat16*>(src), B, T, Tb, W);
    else
        launch_unpadded(ctx, dst, static_cast<const __half*>(src), B, T, Tb, W);
}

}  // namespace trt::cuda
