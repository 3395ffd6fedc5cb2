// Philox4x32-10 against the Random123 known-answer vectors (kat_vectors, philox4x32 10 rounds).
#include <gtest/gtest.h>

#include <cstdint>

#include "core/philox.h"

namespace {

void expect_kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                uint32_t e0, uint32_t e1, uint32_t e2, uint32_t e3) {
    const trt::Philox4x32 x = trt::philox4x32_10(c0, c1, c2, c3, k0, k1);
    EXPECT_EQ(x.v[0], e0);
    EXPECT_EQ(x.v[1], e1);
    EXPECT_EQ(x.v[2], e2);
    EXPECT_EQ(x.v[3], e3);
}

}  // namespace

TEST(Philox, KnownAnswerZero) {
    expect_kat(0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u);
}

TEST(Philox, KnownAnswerAllOnes) {
    expect_kat(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
               0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu);
}

TEST(Philox, KnownAnswerPi) {
    expect_kat(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u,
               0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u);
}

TEST(Philox, IsAPureFunctionOfCounterAndKey) {
    const auto a = trt::philox4x32_10(1, 2, 3, 0, 42, 0);
    const auto b = trt::philox4x32_10(1, 2, 3, 0, 42, 0);
    const auto c = trt::philox4x32_10(1, 2, 4, 0, 42, 0);
    const auto d = trt::philox4x32_10(1, 2, 3, 0, 42, 1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(a.v[i], b.v[i]);
    EXPECT_NE(a.v[0], c.v[0]);
    EXPECT_NE(a.v[0], d.v[0]);
}
