// fast_expf (backend/cpu/cpu_common.h): accuracy over the clamped range, the clamps, and
// NaN in -> NaN out with no undefined behaviour (issue 15: a NaN weight once reached a
// signed left shift of a negative number; UBSan in CI checks this file).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend/cpu/cpu_common.h"

using trt::cpu::exp_limits;
using trt::cpu::fast_expf;

TEST(FastExp, AgreesWithExpfOverTheRange) {
    const auto lim = exp_limits();
    for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
        const float want = std::exp(x), got = fast_expf(x, lim);
        EXPECT_NEAR(got, want, 4e-7f * want) << "x = " << x;
    }
}

TEST(FastExp, ClampsInfinitiesAndPropagatesNaN) {
    const auto lim = exp_limits();
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(fast_expf(-inf, lim), fast_expf(-87.0f, lim));
    EXPECT_EQ(fast_expf(inf, lim), fast_expf(88.0f, lim));
    EXPECT_TRUE(std::isfinite(fast_expf(inf, lim)));
    EXPECT_TRUE(std::isnan(fast_expf(std::numeric_limits<float>::quiet_NaN(), lim)));
    EXPECT_TRUE(std::isnan(fast_expf(-std::numeric_limits<float>::quiet_NaN(), lim)));
}
