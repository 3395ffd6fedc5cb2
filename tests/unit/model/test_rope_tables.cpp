// RoPE's frequencies (model/rope_tables.h), the one definition every backend rotates by:
// plain, "linear" and "llama3" scaling against the published equations evaluated here in
// double (transformers' modeling_rope_utils), region by region of the llama3 blend.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/rope_tables.h"

using namespace trt;

namespace {

std::vector<double> plain(int hs, double theta) {
    std::vector<double> f;
    for (int i = 0; i < hs / 2; ++i) f.push_back(1.0 / std::pow(theta, 2.0 * i / hs));
    return f;
}

void expect_close(float got, double want, const char* what, int i) {
    EXPECT_NEAR(got, want, 2e-6 * std::fabs(want)) << what << " pair " << i;
}

}  // namespace

TEST(RopeTables, PlainAndLinearScaling) {
    const std::vector<double> want = plain(16, 10000.0);
    const std::vector<float> f = rope_inv_freq(16, 10000.0f);
    RopeScalingSpec linear;
    linear.kind = RopeScaling::Linear;
    linear.factor = 4.0f;
    const std::vector<float> g = rope_inv_freq(16, 10000.0f, linear);
    for (int i = 0; i < 8; ++i) {
        expect_close(f[i], want[i], "plain", i);
        expect_close(g[i], want[i] / 4.0, "linear", i);
    }
    // The tables rotate position p by p * inv_freq.
    const RopeTables t = make_rope_tables(5, 16, 10000.0f, linear);
    EXPECT_NEAR(t.cos[3 * 8 + 0], std::cos(3.0 / 4.0), 1e-6);
    EXPECT_NEAR(t.sin[3 * 8 + 0], std::sin(3.0 / 4.0), 1e-6);
}

// Llama 3.1's scaling: wavelength 2π / f above original / low is divided by the factor,
// below original / high kept, and between blended by s = (original / wavelength - low) /
// (high - low): (1 - s) f / factor + s f.
TEST(RopeTables, Llama3ScalingFollowsTheThreeRegions) {
    RopeScalingSpec r;
    r.kind = RopeScaling::Llama3;
    r.factor = 8.0f;
    r.low_freq_factor = 1.0f;
    r.high_freq_factor = 4.0f;
    r.original_context = 64;  // wavelengths: kept below 16, divided above 64
    const int hs = 16;
    const std::vector<double> base = plain(hs, 10000.0);
    const std::vector<float> got = rope_inv_freq(hs, 10000.0f, r);
    int kept = 0, divided = 0, blended = 0;
    for (int i = 0; i < hs / 2; ++i) {
        const double wavelen = 2 * M_PI / base[i];
        double want = base[i];
        if (wavelen > 64) {
            want = base[i] / 8.0, ++divided;
        } else if (wavelen >= 16) {
            const double s = (64.0 / wavelen - 1.0) / 3.0;
            want = (1 - s) * base[i] / 8.0 + s * base[i], ++blended;
        } else {
            ++kept;
        }
        expect_close(got[i], want, "llama3", i);
    }
    // theta 10000, hs 16: wavelengths 6.3, 35, 199, ... - one pair in each region at least.
    EXPECT_GE(kept, 1);
    EXPECT_GE(blended, 1);
    EXPECT_GE(divided, 1);
}

// Llama 3.2 1B's tables (hs 64, theta 500000, factor 32, original 8192) at the edges.
TEST(RopeTables, Llama32TablesAreFiniteAndScaled) {
    RopeScalingSpec r{RopeScaling::Llama3, 32.0f, 1.0f, 4.0f, 8192};
    const std::vector<float> f = rope_inv_freq(64, 500000.0f, r);
    const std::vector<double> base = plain(64, 500000.0);
    EXPECT_FLOAT_EQ(f[0], 1.0f);                                   // shortest wavelength: kept
    expect_close(f[31], base[31] / 32.0, "lowest frequency", 31);  // divided by 32
    const RopeTables t = make_rope_tables(131072, 64, 500000.0f, r);
    for (float c : t.cos) ASSERT_TRUE(std::isfinite(c) && std::fabs(c) <= 1.0f);
}
