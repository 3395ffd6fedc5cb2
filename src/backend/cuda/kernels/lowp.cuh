// bf16/fp16 conversions shared by the cast kernels (elementwise.cu: whole buffers;
// padded_cast.cu: cuDNN attention's padded rows), so both round exactly alike.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace trt::cuda {

// Round to nearest even, as the names say.
template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) {
    return __float2half_rn(v);
}

__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

// Eight bf16/fp16 values: one 128-bit access.
template <typename T>
struct alignas(16) Lowp8 {
    T v[8];
};

}  // namespace trt::cuda
