// core/bf16.h and core/fp16.h: the host conversions every low-precision path shares (the CPU
// twin's storage, the op-case runner, safetensors). Narrowing must be round-to-nearest-even
// with IEEE edge cases; checked against an independent rounding (frexp/ldexp arithmetic)
// over every 16-bit pattern and a sweep of floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "core/bf16.h"
#include "core/fp16.h"

namespace {

// x rounded to a float format with `mant_bits` explicit mantissa bits, exponents down to
// `min_exp` (subnormals below it) and finite values up to `max_finite`; ties to even. Plain
// arithmetic, no bit tricks: the oracle for the bit-level conversions.
double round_like(double x, int mant_bits, int min_exp, double max_finite) {
    if (x == 0.0 || !std::isfinite(x)) return x;
    int e = 0;
    std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
    int exp2 = std::max(e - 1, min_exp);
    const double q = std::ldexp(1.0, exp2 - mant_bits);  // spacing at x
    const double r = std::nearbyint(x / q) * q;          // RNE (default rounding mode)
    if (std::fabs(r) > max_finite) return std::copysign(INFINITY, x);
    return r;
}

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

TEST(HalfFloats, EveryPatternWidensAndNarrowsBackExactly) {
    for (uint32_t b = 0; b < 65536; ++b) {
        const auto h = static_cast<uint16_t>(b);
        const float f16 = trt::fp16_to_float(h), bf = trt::bf16_to_float(h);
        if (std::isnan(f16)) {
            EXPECT_TRUE(std::isnan(trt::fp16_to_float(trt::float_to_fp16(f16)))) << b;
        } else {
            EXPECT_EQ(trt::float_to_fp16(f16), h) << b;
        }
        if (std::isnan(bf)) {
            EXPECT_TRUE(std::isnan(trt::bf16_to_float(trt::float_to_bf16(bf)))) << b;
        } else {
            EXPECT_EQ(trt::float_to_bf16(bf), h) << b;
        }
    }
}

TEST(HalfFloats, NarrowingRoundsToNearestEven) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint32_t> any;
    int checked = 0;
    for (int i = 0; i < 400000; ++i) {
        // Random bit patterns cover every exponent; the second half are the exact ties.
        uint32_t u = any(rng);
        if (i % 2) u = (u & ~0x1FFFu) | 0x1000u;  // an fp16 tie in the normal range
        float x;
        std::memcpy(&x, &u, 4);
        if (std::isnan(x)) continue;
        const double want16 = round_like(x, 10, -14, 65504.0);
        const double want_bf = round_like(x, 7, -126, std::numeric_limits<float>::max());
        EXPECT_EQ(static_cast<double>(trt::round_to_fp16(x)), want16) << x;
        // bf16 keeps fp32's subnormal range: its oracle rounds at fp32's minimum exponent.
        EXPECT_EQ(static_cast<double>(trt::round_to_bf16(x)), want_bf) << x;
        ++checked;
    }
    EXPECT_GT(checked, 300000);
    // Edge values.
    EXPECT_EQ(trt::float_to_fp16(65504.0f), 0x7BFF);
    EXPECT_EQ(trt::float_to_fp16(65519.99f), 0x7BFF);  // below the midpoint to 65536
    EXPECT_EQ(trt::float_to_fp16(65520.0f), 0x7C00);   // the tie rounds to even: infinity
    EXPECT_EQ(trt::float_to_fp16(-1e9f), 0xFC00);
    EXPECT_EQ(trt::float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
    EXPECT_EQ(trt::float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);   // its half: tie to even
    EXPECT_EQ(trt::float_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
    EXPECT_EQ(trt::float_to_fp16(-0.0f), 0x8000);
    EXPECT_EQ(trt::float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(bits_of(trt::bf16_to_float(0x3F80)), bits_of(1.0f));
    EXPECT_TRUE(std::isnan(trt::fp16_to_float(trt::float_to_fp16(std::nanf("")))));
}

}  // namespace
