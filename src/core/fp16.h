// IEEE binary16 on the host. Narrowing rounds to nearest even (as the GPU's __float2half_rn),
// with subnormals, overflow to infinity and every NaN a quiet NaN; widening is exact.
#pragma once
#include <cstdint>
#include <cstring>

namespace trt {

inline float fp16_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;  // signed zero
        } else {
            // Subnormal: normalize the mantissa; fp32 has the range to represent it exactly.
            uint32_t e = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                --e;
            }
            bits = sign | (e << 23) | ((mant & 0x3FF) << 13);
        }
    } else if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);  // inf, or NaN keeping its payload
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t float_to_fp16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00 | ((a >> 13) & 0x3FF));  // NaN
    if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00);  // rounds past 65504: inf
    if (a >= 0x38800000u) {  // normal in fp16 (>= 2^-14): rebias, round the 13 dropped bits
        const uint32_t r = a - ((127u - 15u) << 23);
        return static_cast<uint16_t>(sign | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13));
    }
    if (a < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
    // Subnormal in fp16: the value in units of 2^-24, rounded to nearest even.
    const uint32_t exp = a >> 23;
    const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;  // 24 significant bits
    const uint32_t shift = 126u - exp;                  // 14..24 (value = mant · 2^(exp-150))
    const uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    const uint32_t rounded = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<uint16_t>(sign | rounded);
}

// x rounded to the nearest fp16 value, as a float.
inline float round_to_fp16(float x) { return fp16_to_float(float_to_fp16(x)); }

}  // namespace trt
