// sample_token: greedy, top-k, temperature and determinism, against direct computations.
#include "runtime/token_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

namespace trt {
namespace {

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
    EXPECT_EQ(sample_token(logits, 5, o, 0), 1);
}

TEST(TokenSampling, TopKOneIsGreedyAndTopKNeverLeavesTheTopK) {
    const float logits[] = {0.1f, 3.0f, 2.9f, -4.0f, 2.8f, 0.0f, 1.0f};
    TokenSamplingOptions o;
    o.top_k = 1;
    for (uint64_t i = 0; i < 50; ++i) EXPECT_EQ(sample_token(logits, 7, o, i), 1);
    o.top_k = 3;
    o.temperature = 5.0;  // flat: every kept token gets drawn
    std::map<int32_t, int> seen;
    for (uint64_t i = 0; i < 3000; ++i) ++seen[sample_token(logits, 7, o, i)];
    EXPECT_EQ(seen.size(), 3u);
    for (const auto& kv : seen) EXPECT_TRUE(kv.first == 1 || kv.first == 2 || kv.first == 4);
}

TEST(TokenSampling, FrequenciesFollowSoftmaxOverTemperature) {
    const float logits[] = {1.0f, 2.0f, 0.0f};
    TokenSamplingOptions o;
    o.temperature = 0.5;
    o.seed = 9;
    const int n = 40000;
    std::vector<int> count(3);
    for (uint64_t i = 0; i < static_cast<uint64_t>(n); ++i) ++count[sample_token(logits, 3, o, i)];
    double z = 0;
    for (float l : logits) z += std::exp(l / o.temperature);
    for (int k = 0; k < 3; ++k) {
        const double p = std::exp(logits[k] / o.temperature) / z;
        // 5 standard deviations of a binomial proportion.
        EXPECT_NEAR(count[k] / static_cast<double>(n), p, 5 * std::sqrt(p * (1 - p) / n)) << k;
    }
}

// The draw defined directly: the kept logits ordered largest first, equal ones (-0 = +0) by
// id; softmax weights over them in double in that order, summed in chunks of 64 (each chunk
// in order, then the chunks in order: core/token_draw.h, what the CUDA kernel can sum in
// parallel); u = uniform * total falls in the first chunk whose running sum passes it, then on
// the first entry of it whose running sum (from the chunks before) passes it. The library sorts
// 64-bit keys by radix (or partially, for a small top-k): it must give the same token on every
// input, ties included.
int32_t reference_draw(const std::vector<float>& logits, const TokenSamplingOptions& o,
                       uint64_t index) {
    std::vector<std::pair<float, int32_t>> kept;
    for (size_t i = 0; i < logits.size(); ++i)
        kept.push_back({logits[i] == 0.0f ? 0.0f : logits[i], static_cast<int32_t>(i)});
    std::stable_sort(kept.begin(), kept.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    const size_t V = logits.size();
    const size_t k = o.top_k > 0 && static_cast<size_t>(o.top_k) < V ? o.top_k : V;
    kept.resize(k);
    const double top = kept[0].first, inv_t = 1.0 / o.temperature;
    auto w = [&](size_t i) { return std::exp((kept[i].first - top) * inv_t); };
    const size_t chunk = 64;
    std::vector<double> sums;
    for (size_t c0 = 0; c0 < k; c0 += chunk) {
        double s = 0.0;
        for (size_t i = c0; i < std::min(k, c0 + chunk); ++i) s += w(i);
        sums.push_back(s);
    }
    double total = 0.0;
    for (double s : sums) total += s;
    const double u = philox_uniform(o.seed, index) * total;
    double acc = 0.0;
    for (size_t c = 0; c < sums.size(); ++c) {
        if (u < acc + sums[c]) {
            double a = acc;
            for (size_t i = c * chunk; i < std::min(k, (c + 1) * chunk); ++i) {
                a += w(i);
                if (u < a) return kept[i].second;
            }
        }
        acc += sums[c];
    }
    return kept.back().second;
}

TEST(TokenSampling, DrawsTheTokenOfTheDirectDefinition) {
    std::mt19937 rng(3);
    for (int V : {1, 2, 7, 256, 1000, 50257}) {
        for (int shape = 0; shape < 4; ++shape) {
            // Spread logits, a few values with many ties, signed zeros, and one huge range.
            std::vector<float> logits(static_cast<size_t>(V));
            std::normal_distribution<float> normal(0.0f, shape == 3 ? 30.0f : 2.0f);
            for (int i = 0; i < V; ++i) {
                float x = normal(rng);
                if (shape == 1) x = std::round(x);
                if (shape == 2) x = (i % 3 == 0) ? 0.0f : (i % 3 == 1 ? -0.0f : std::round(x));
                logits[static_cast<size_t>(i)] = x;
            }
            for (int top_k : {0, 1, 5, 40, V - 1, V, V + 3}) {
                TokenSamplingOptions o;
                o.temperature = shape == 3 ? 5.0 : 0.8;
                o.top_k = std::max(0, top_k);
                o.seed = 11 + static_cast<uint64_t>(V);
                for (uint64_t index = 0; index < 25; ++index)
                    ASSERT_EQ(sample_token(logits.data(), V, o, index),
                              reference_draw(logits, o, index))
                        << "V " << V << " shape " << shape << " top_k " << top_k << " draw "
                        << index;
            }
        }
    }
}

}  // namespace
}  // namespace trt
