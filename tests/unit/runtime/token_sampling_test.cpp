// sample_token: greedy, top-k, temperature and determinism, against direct computations.
#include "runtime/token_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace trt {
namespace {

using Scratch = std::vector<std::pair<float, int32_t>>;

TEST(TokenSampling, UniformIsInUnitIntervalAndDeterministic) {
    double lo = 1, hi = 0;
    for (uint64_t i = 0; i < 10000; ++i) {
        const double u = philox_uniform(42, i);
        ASSERT_GE(u, 0.0);
        ASSERT_LT(u, 1.0);
        lo = std::min(lo, u);
        hi = std::max(hi, u);
        ASSERT_EQ(u, philox_uniform(42, i));
    }
    EXPECT_LT(lo, 0.001);
    EXPECT_GT(hi, 0.999);
    EXPECT_NE(philox_uniform(1, 0), philox_uniform(2, 0));
}

TEST(TokenSampling, GreedyIsArgmaxLowestIdOnTies) {
    const float logits[] = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
    TokenSamplingOptions o;
    o.temperature = 0;
    Scratch s;
    EXPECT_EQ(sample_token(logits, 5, o, 0, s), 1);
}

TEST(TokenSampling, TopKOneIsGreedyAndTopKNeverLeavesTheTopK) {
    const float logits[] = {0.1f, 3.0f, 2.9f, -4.0f, 2.8f, 0.0f, 1.0f};
    Scratch s;
    TokenSamplingOptions o;
    o.top_k = 1;
    for (uint64_t i = 0; i < 50; ++i) EXPECT_EQ(sample_token(logits, 7, o, i, s), 1);
    o.top_k = 3;
    o.temperature = 5.0;  // flat: every kept token gets drawn
    std::map<int32_t, int> seen;
    for (uint64_t i = 0; i < 3000; ++i) ++seen[sample_token(logits, 7, o, i, s)];
    EXPECT_EQ(seen.size(), 3u);
    for (const auto& kv : seen) EXPECT_TRUE(kv.first == 1 || kv.first == 2 || kv.first == 4);
}

TEST(TokenSampling, FrequenciesFollowSoftmaxOverTemperature) {
    const float logits[] = {1.0f, 2.0f, 0.0f};
    TokenSamplingOptions o;
    o.temperature = 0.5;
    o.seed = 9;
    Scratch s;
    const int n = 40000;
    std::vector<int> count(3);
    for (uint64_t i = 0; i < static_cast<uint64_t>(n); ++i) ++count[sample_token(logits, 3, o, i, s)];
    double z = 0;
    for (float l : logits) z += std::exp(l / o.temperature);
    for (int k = 0; k < 3; ++k) {
        const double p = std::exp(logits[k] / o.temperature) / z;
        // 5 standard deviations of a binomial proportion.
        EXPECT_NEAR(count[k] / static_cast<double>(n), p, 5 * std::sqrt(p * (1 - p) / n)) << k;
    }
}

}  // namespace
}  // namespace trt
