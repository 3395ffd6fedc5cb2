// bfloat16 on the host: the upper 16 bits of an IEEE float. Narrowing rounds to nearest even
// (as the GPU's __float2bfloat16_rn and AVX-512 BF16's vcvtneps2bf16), keeps infinities and
// turns every NaN into a quiet NaN; widening is exact.
#pragma once
#include <cstdint>
#include <cstring>

namespace trt {

// Branch-free, so loops over it vectorise.
inline uint16_t float_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    // Round to nearest even: add 0x7FFF plus the lowest kept bit; overflow rolls into inf.
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (u >> 16) | 0x0040u;
    return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}

inline float bf16_to_float(uint16_t b) {
    const uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// x rounded to the nearest bf16 value, as a float.
inline float round_to_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

}  // namespace trt
