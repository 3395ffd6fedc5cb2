// Storage types of activations and the bf16/fp16 working copy: conversions shared by every
// kernel file, so all of them round exactly alike (round to nearest even), and the host-side
// dispatch from an activation dtype to the kernel's storage type T (float, __nv_bfloat16,
// __half). Kernels load with to_f32, compute in fp32 and store with from_f32<T>.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/backend.h"
#include "core/dtype.h"
#include "core/error.h"

namespace trt::cuda {

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) {
    return __float2half_rn(v);
}

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

// Eight bf16/fp16 values: one 128-bit access.
template <typename T>
struct alignas(16) Lowp8 {
    T v[8];
};

// A type carried as a value, for with_storage's callback.
template <typename T>
struct StorageTag {
    using type = T;
};

// Calls f(StorageTag<T>{}) for the storage type of d (F32, BF16 or F16):
//   with_storage(dt, [&](auto tag) { using T = typename decltype(tag)::type; kernel<T><<<…>>>(…); });
// so each kernel is instantiated for the three types once, here, not in a switch per launcher.
template <class F>
void with_storage(DType d, F&& f) {
    switch (d) {
        case DType::F32: f(StorageTag<float>{}); return;
        case DType::BF16: f(StorageTag<__nv_bfloat16>{}); return;
        case DType::F16: f(StorageTag<__half>{}); return;
        default: TRT_CHECK(false, "cuda backend: activation dtype ", static_cast<int>(d),
                           " is not a floating storage type");
    }
}

// The typed pointer of a view whose dtype with_storage has already matched to T.
template <typename T>
T* typed(Act a) {
    return static_cast<T*>(a.data);
}
template <typename T>
const T* typed(ConstAct a) {
    return static_cast<const T*>(a.data);
}

}  // namespace trt::cuda
