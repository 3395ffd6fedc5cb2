// A float's bits and back, for code shared by the host and CUDA kernels (core/q8_moments.h,
// core/token_draw.h): memcpy on the host, the intrinsics in device code.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TRT_FLOAT_BITS_HD __host__ __device__
#else
#define TRT_FLOAT_BITS_HD
#endif

namespace trt {

TRT_FLOAT_BITS_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

TRT_FLOAT_BITS_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

}  // namespace trt
