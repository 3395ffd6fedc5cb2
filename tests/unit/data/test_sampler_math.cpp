// The CUDA random sampler's index math (src/data/sampler_math.h), run on the
// host: for many (seed, step, micro_step, row) and shard layouts, the window it picks in the
// concatenated token set must hold exactly the tokens the CPU sample_random returns. This is
// what lets the GPU sampler be trusted without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/sampler_math.h"
#include "data/prepare.h"
#include "data/sampler.h"
#include "data/token_dataset.h"

namespace fs = std::filesystem;
using trt::TokenDataset;

namespace {

// Shards m0.bin, m1.bin, ... with the given sizes; token = its position in the concatenation
// (+ 1, so no window of ids is all zeros), so equal tokens mean equal positions.
TokenDataset make_layout(const std::vector<int64_t>& sizes, const std::string& tag) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "data_sampler_math" / info->name() / tag;
    fs::remove_all(dir);
    fs::create_directories(dir);
    uint32_t next = 1;
    int64_t total = 0;
    for (size_t s = 0; s < sizes.size(); ++s) {
        std::vector<uint32_t> toks(static_cast<size_t>(sizes[s]));
        for (auto& t : toks) t = next++;
        total += sizes[s];
        // Zero-padded names: the dataset orders shards by sorted path.
        char name[32];
        std::snprintf(name, sizeof name, "m%03zu.bin", s);
        trt::write_shard((dir / name).string(), toks.data(), sizes[s], 2);
    }
    return TokenDataset::open((dir / "m*.bin").string(), total + 2);
}

// What the CUDA backend keeps resident: the concatenated uint16 tokens, cumulative shard
// starts [num_shards + 1], and W for T (DeviceTokens).
struct Resident {
    std::vector<uint16_t> tokens;
    std::vector<int64_t> starts;
    uint64_t W = 0;
};

Resident make_resident(const TokenDataset& ds, int64_t T) {
    Resident r;
    r.starts.push_back(0);
    for (size_t s = 0; s < ds.num_shards(); ++s) {
        const int64_t n = ds.shard_tokens(s);
        std::vector<int32_t> buf(static_cast<size_t>(n));
        ds.copy_tokens(s, 0, n, buf.data());
        for (int32_t t : buf) r.tokens.push_back(static_cast<uint16_t>(t));
        r.starts.push_back(r.starts.back() + n);
        if (n > T) r.W += static_cast<uint64_t>(n - T);
    }
    return r;
}

// Checks every row of `draws` micro-batches of B rows against the CPU sampler; emulates the
// kernel's gather (inputs = tokens[p, p+T), targets = tokens[p+1, p+T+1)).
void check_layout(const std::vector<int64_t>& sizes, int64_t T, const std::string& tag) {
    SCOPED_TRACE("layout " + tag + ", T = " + std::to_string(T));
    TokenDataset ds = make_layout(sizes, tag);
    const Resident res = make_resident(ds, T);
    ASSERT_GT(res.W, 0u);
    const int32_t nshards = static_cast<int32_t>(ds.num_shards());
    const int64_t B = 5;
    const uint64_t seeds[] = {0, 1, 1337, 0xDEADBEEFCAFEF00Dull, uint64_t{42} << 32};
    const int64_t steps[] = {1, 2, 3, 17, 1000, 123456789, (int64_t{1} << 32) + 5};
    std::vector<int32_t> cpu(static_cast<size_t>(B * (T + 1)));
    for (uint64_t seed : seeds)
        for (int64_t step : steps)
            for (int64_t micro = 0; micro < 4; ++micro) {
                trt::sample_random(ds, seed, step, micro, B, T, cpu.data());
                for (int64_t r = 0; r < B; ++r) {
                    const int64_t p = trt::sampler_math::random_row_offset(
                        res.starts.data(), nshards, T, res.W, seed, step, micro, r);
                    ASSERT_GE(p, 0) << "seed " << seed << " step " << step << " micro "
                                    << micro << " row " << r;
                    ASSERT_LE(p + T + 1, static_cast<int64_t>(res.tokens.size()));
                    const int32_t* row = cpu.data() + r * (T + 1);
                    for (int64_t t = 0; t < T; ++t) {
                        ASSERT_EQ(static_cast<int32_t>(res.tokens[p + t]), row[t])
                            << "input, seed " << seed << " step " << step << " micro " << micro
                            << " row " << r << " t " << t;
                        ASSERT_EQ(static_cast<int32_t>(res.tokens[p + t + 1]), row[t + 1])
                            << "target, seed " << seed << " step " << step << " micro "
                            << micro << " row " << r << " t " << t;
                    }
                }
            }
}

}  // namespace

TEST(SamplerMath, MatchesCpuSamplerOnOneShard) { check_layout({300}, 16, "one"); }

TEST(SamplerMath, MatchesCpuSamplerWithTooSmallAndExactShards) {
    // T = 8: shard sizes < T, == T, == T + 1 contribute 0, 0, 1 starts.
    check_layout({20, 5, 8, 9, 13, 1, 40}, 8, "small");
}

TEST(SamplerMath, MatchesCpuSamplerAcrossShardGroups) {
    // More shards than kShardGroup (and not a multiple of it), with empty-window shards at a
    // group boundary, so the grouped walk crosses groups with carried idx.
    std::vector<int64_t> sizes;
    for (int s = 0; s < 3 * trt::sampler_math::kShardGroup + 3; ++s)
        sizes.push_back(s % 5 == 3 ? 4 : 10 + (s * 37) % 61);
    sizes[trt::sampler_math::kShardGroup - 1] = 2;
    sizes[trt::sampler_math::kShardGroup] = 6;
    check_layout(sizes, 6, "groups");
    check_layout(sizes, 1, "groups_t1");
}

TEST(SamplerMath, EveryIndexMapsInsideItsShard) {
    // The idx → offset walk alone, exhaustively: every idx < W lands on a valid start, the
    // starts are distinct and increasing, and idx = W falls off the end (-1).
    const std::vector<int64_t> sizes = {7, 2, 4, 9, 0, 3, 12, 5, 5, 5, 11};
    const int64_t T = 3;
    std::vector<int64_t> starts = {0};
    uint64_t W = 0;
    for (int64_t n : sizes) {
        starts.push_back(starts.back() + n);
        if (n > T) W += static_cast<uint64_t>(n - T);
    }
    const int32_t ns = static_cast<int32_t>(sizes.size());
    int64_t prev = -1;
    for (uint64_t idx = 0; idx < W; ++idx) {
        const int64_t p = trt::sampler_math::random_window_offset(starts.data(), ns, T, idx);
        ASSERT_GT(p, prev) << idx;
        size_t s = 0;
        while (starts[s + 1] <= p) ++s;  // shard holding p
        EXPECT_LE(p + T + 1, starts[s + 1]) << "window crosses a shard end at idx " << idx;
        prev = p;
    }
    EXPECT_EQ(trt::sampler_math::random_window_offset(starts.data(), ns, T, W), -1);
    EXPECT_EQ(trt::sampler_math::random_row_offset(starts.data(), ns, T, 0, 1, 1, 0, 0), -1);
}

TEST(SamplerMath, OneKnownDraw) {
    // Counter (1, 0, 0, 0), key (0, 0), as RandomSampler.OneKnownDraw pins for the CPU.
    const trt::Philox4x32 x = trt::philox4x32_10(1, 0, 0, 0, 0, 0);
    const uint64_t u = uint64_t(x.v[0]) | (uint64_t(x.v[1]) << 32);
    EXPECT_EQ(trt::sampler_math::random_window_index(0, 1, 0, 0, 990), u % 990);
}
