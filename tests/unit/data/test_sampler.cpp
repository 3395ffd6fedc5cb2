// Sequential and random samplers against hand computations (FORMATS.md §1).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "data/data_test_util.h"
#include "core/error.h"
#include "core/philox.h"
#include "data/prepare.h"
#include "data/sampler.h"
#include "data/token_dataset.h"

namespace fs = std::filesystem;
using trt::Error;
using trt::SequentialCursor;
using trt::Status;
using trt::TokenDataset;

namespace {

constexpr int32_t kBase = 1000;  // token i of shard s has id s*kBase + i: ids identify places
constexpr int64_t kVocab = 100 * kBase;

// Shards named s0.bin, s1.bin, ... with the given sizes; returns the opened dataset.
TokenDataset make_dataset(const std::vector<int64_t>& sizes, int token_bytes = 2) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "data_sampler" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (size_t s = 0; s < sizes.size(); ++s) {
        std::vector<uint32_t> toks(static_cast<size_t>(sizes[s]));
        for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<uint32_t>(s * kBase + i);
        trt::write_shard((dir / ("s" + std::to_string(s) + ".bin")).string(), toks.data(),
                         sizes[s], token_bytes);
    }
    return TokenDataset::open((dir / "s*.bin").string(), kVocab);
}

// Expected row: ids shard*kBase + start + j for j in [0, T].
std::vector<int32_t> row_at(int64_t shard, int64_t start, int64_t T) {
    std::vector<int32_t> r;
    for (int64_t j = 0; j <= T; ++j) r.push_back(static_cast<int32_t>(shard * kBase + start + j));
    return r;
}

std::vector<int32_t> row_of(const std::vector<int32_t>& batch, int64_t b, int64_t T) {
    return {batch.begin() + b * (T + 1), batch.begin() + (b + 1) * (T + 1)};
}

}  // namespace

// ---------------------------------------------------------------- sequential

TEST(SequentialSampler, FirstBatchRowsOverlapByOneToken) {
    TokenDataset ds = make_dataset({20});
    SequentialCursor cur;
    std::vector<int32_t> out(2 * 4);
    trt::sample_sequential(ds, cur, 2, 3, out.data());
    // Window tokens[0, 7): row 0 = [0..3], row 1 = [3..6].
    EXPECT_EQ(out, (std::vector<int32_t>{0, 1, 2, 3, 3, 4, 5, 6}));
    EXPECT_EQ(cur.shard, 0);
    EXPECT_EQ(cur.pos, 6);
}

TEST(SequentialSampler, WalksShardsSkipsSmallOneAndWraps) {
    // B=2, T=3: a window is 7 tokens, pos advances by 6.
    // s0 (20): windows at 0, 6, 12; 18+7 > 20 -> next shard.
    // s1 (5): cannot hold 7 -> skipped.
    // s2 (13): windows at 0, 6 (6+7 = 13 fits exactly); 12+7 > 13 -> wrap to s0 at 0.
    TokenDataset ds = make_dataset({20, 5, 13});
    EXPECT_TRUE(trt::sequential_fits(ds, 2, 3));
    const std::vector<std::pair<int64_t, int64_t>> expected = {
        {0, 0}, {0, 6}, {0, 12}, {2, 0}, {2, 6}, {0, 0}, {0, 6}, {0, 12}, {2, 0}};
    SequentialCursor cur;
    std::vector<int32_t> out(2 * 4);
    for (size_t i = 0; i < expected.size(); ++i) {
        trt::sample_sequential(ds, cur, 2, 3, out.data());
        const auto [shard, pos] = expected[i];
        EXPECT_EQ(row_of(out, 0, 3), row_at(shard, pos, 3)) << "draw " << i;
        EXPECT_EQ(row_of(out, 1, 3), row_at(shard, pos + 3, 3)) << "draw " << i;
        EXPECT_EQ(cur.shard, shard) << "draw " << i;
        EXPECT_EQ(cur.pos, pos + 6) << "draw " << i;
    }
}

TEST(SequentialSampler, GradAccumMicroBatchesAreConsecutiveWindows) {
    TokenDataset ds = make_dataset({100}, 4);
    SequentialCursor cur;
    const int64_t B = 3, T = 4;  // window 13, stride 12
    std::vector<int32_t> out(B * (T + 1));
    for (int64_t k = 0; k < 4; ++k) {  // 4 micro-steps of one optimizer step
        trt::sample_sequential(ds, cur, B, T, out.data());
        for (int64_t b = 0; b < B; ++b)
            EXPECT_EQ(row_of(out, b, T), row_at(0, 12 * k + T * b, T)) << k << "," << b;
    }
    EXPECT_EQ(cur.pos, 48);
}

TEST(SequentialSampler, CursorPastShardEndMovesOn) {
    TokenDataset ds = make_dataset({10, 10});
    SequentialCursor cur{1, 8};  // e.g. resumed onto a shorter shard
    std::vector<int32_t> out(1 * 5);
    trt::sample_sequential(ds, cur, 1, 4, out.data());
    EXPECT_EQ(out, row_at(0, 0, 4));  // wrapped from the last shard to shard 0
    EXPECT_EQ(cur.shard, 0);
    EXPECT_EQ(cur.pos, 4);
}

TEST(SequentialSampler, OnlyShardThatFitsIsReused) {
    TokenDataset ds = make_dataset({3, 9, 4});
    SequentialCursor cur;
    std::vector<int32_t> out(2 * 5);
    for (int i = 0; i < 3; ++i) {  // window 9 fits only s1 at 0
        trt::sample_sequential(ds, cur, 2, 4, out.data());
        EXPECT_EQ(row_of(out, 0, 4), row_at(1, 0, 4));
        EXPECT_EQ(row_of(out, 1, 4), row_at(1, 4, 4));
        EXPECT_EQ(cur.shard, 1);
        EXPECT_EQ(cur.pos, 8);
    }
}

TEST(SequentialSampler, BatchLargerThanEveryShard) {
    TokenDataset ds = make_dataset({10, 12});
    EXPECT_TRUE(trt::sequential_fits(ds, 1, 11));   // 12 tokens
    EXPECT_FALSE(trt::sequential_fits(ds, 2, 6));  // 13 tokens
    SequentialCursor cur;
    std::vector<int32_t> out(2 * 7);
    expect_error([&] { trt::sample_sequential(ds, cur, 2, 6, out.data()); }, Status::Config,
                 {"B*T+1 = 13", "12", "s1.bin", "lower the batch size or sequence length"});
    EXPECT_EQ(cur.shard, 0);  // untouched
    EXPECT_EQ(cur.pos, 0);
}

TEST(SequentialSampler, BadArguments) {
    TokenDataset ds = make_dataset({10});
    std::vector<int32_t> out(100);
    SequentialCursor cur;
    expect_error([&] { trt::sample_sequential(ds, cur, 0, 3, out.data()); },
                 Status::InvalidArgument, {});
    expect_error([&] { trt::sample_sequential(ds, cur, 2, -1, out.data()); },
                 Status::InvalidArgument, {});
    SequentialCursor bad{1, 0};
    expect_error([&] { trt::sample_sequential(ds, bad, 1, 3, out.data()); },
                 Status::InvalidArgument, {"cursor"});
    EXPECT_FALSE(trt::sequential_fits(ds, 0, 3));
}

// ---------------------------------------------------------------- random

// Independent of sampler.cpp: the spec's row draw, written out, with the cumulative
// valid-start counts given by hand.
std::pair<int64_t, int64_t> expected_start(uint64_t seed, uint32_t step, uint32_t micro,
                                           uint32_t row, uint64_t W,
                                           const std::vector<std::pair<int64_t, uint64_t>>& cum) {
    const trt::Philox4x32 x = trt::philox4x32_10(step, micro, row, 0, uint32_t(seed & 0xffffffffu),
                                                 uint32_t(seed >> 32));
    const uint64_t u = uint64_t(x.v[0]) | (uint64_t(x.v[1]) << 32);
    const uint64_t idx = u % W;
    // cum: (shard, first idx of that shard), ascending.
    for (size_t i = cum.size(); i-- > 0;)
        if (idx >= cum[i].second) return {cum[i].first, int64_t(idx - cum[i].second)};
    return {-1, -1};
}

TEST(RandomSampler, MatchesHandComputation) {
    // T=3: valid starts s0 (6 tokens): 0,1,2 -> idx 0..2; s1 (3): none; s2 (5): 0,1 -> idx 3..4.
    TokenDataset ds = make_dataset({6, 3, 5});
    const int64_t T = 3, B = 4;
    const std::vector<std::pair<int64_t, uint64_t>> cum = {{0, 0}, {2, 3}};
    std::set<int64_t> shards_seen;
    for (uint64_t seed : {uint64_t{0}, uint64_t{1337}, uint64_t{0x123456789abcdef0ull}}) {
        for (int64_t step = 1; step <= 5; ++step) {
            for (int64_t micro = 0; micro < 3; ++micro) {
                std::vector<int32_t> out(B * (T + 1));
                trt::sample_random(ds, seed, step, micro, B, T, out.data());
                for (int64_t r = 0; r < B; ++r) {
                    const auto [shard, off] = expected_start(seed, uint32_t(step),
                                                             uint32_t(micro), uint32_t(r), 5, cum);
                    shards_seen.insert(shard);
                    EXPECT_EQ(row_of(out, r, T), row_at(shard, off, T))
                        << "seed " << seed << " step " << step << " micro " << micro << " row "
                        << r;
                }
            }
        }
    }
    EXPECT_EQ(shards_seen, (std::set<int64_t>{0, 2}));  // both sides of the boundary drawn
}

TEST(RandomSampler, OneKnownDraw) {
    // Pin one draw to literal numbers, so a change to the formula shows up even if the
    // helper above changed with it: counter (1, 0, 0, 0), key (0, 0).
    const trt::Philox4x32 x = trt::philox4x32_10(1, 0, 0, 0, 0, 0);
    const uint64_t u = uint64_t(x.v[0]) | (uint64_t(x.v[1]) << 32);
    TokenDataset ds = make_dataset({1000});
    std::vector<int32_t> out(1 * 11);
    trt::sample_random(ds, 0, 1, 0, 1, 10, out.data());
    EXPECT_EQ(out[0], static_cast<int32_t>(u % 990));
}

TEST(RandomSampler, DeterministicAndRowsDiffer) {
    TokenDataset ds = make_dataset({50000, 40000}, 4);
    const int64_t B = 8, T = 16;
    std::vector<int32_t> a(B * (T + 1)), b(B * (T + 1)), c(B * (T + 1)), d(B * (T + 1));
    trt::sample_random(ds, 42, 7, 2, B, T, a.data());
    trt::sample_random(ds, 42, 7, 2, B, T, b.data());
    EXPECT_EQ(a, b);
    std::set<std::vector<int32_t>> rows;
    for (int64_t r = 0; r < B; ++r) rows.insert(row_of(a, r, T));
    EXPECT_EQ(rows.size(), size_t(B));
    // Row r does not depend on B: a larger batch extends a smaller one.
    std::vector<int32_t> small(3 * (T + 1));
    trt::sample_random(ds, 42, 7, 2, 3, T, small.data());
    EXPECT_TRUE(std::equal(small.begin(), small.end(), a.begin()));
    // Step, micro-step and seed all change the draw.
    trt::sample_random(ds, 42, 8, 2, B, T, c.data());
    trt::sample_random(ds, 42, 7, 3, B, T, d.data());
    EXPECT_NE(a, c);
    EXPECT_NE(a, d);
    trt::sample_random(ds, 43, 7, 2, B, T, c.data());
    EXPECT_NE(a, c);
    trt::sample_random(ds, 42 | (uint64_t{1} << 32), 7, 2, B, T, d.data());  // seed high word
    EXPECT_NE(a, d);
}

TEST(RandomSampler, EveryValidStartReachableNoInvalidStart) {
    const std::vector<int64_t> sizes = {7, 2, 4, 9};
    const int64_t T = 3;  // valid starts: 4 + 0 + 1 + 6 = 11
    TokenDataset ds = make_dataset(sizes);
    std::map<std::pair<int64_t, int64_t>, int> hits;
    const int64_t B = 8;
    std::vector<int32_t> out(B * (T + 1));
    for (int64_t step = 1; step <= 500; ++step) {
        trt::sample_random(ds, 99, step, 0, B, T, out.data());
        for (int64_t r = 0; r < B; ++r) {
            const int64_t shard = out[r * (T + 1)] / kBase, p = out[r * (T + 1)] % kBase;
            ASSERT_GE(shard, 0);
            ASSERT_LT(shard, int64_t(sizes.size()));
            ASSERT_LE(p + T + 1, sizes[shard]) << "invalid start " << shard << ":" << p;
            ASSERT_EQ(row_of(out, r, T), row_at(shard, p, T));
            ++hits[{shard, p}];
        }
    }
    EXPECT_EQ(hits.size(), 11u);
    for (const auto& [where, n] : hits)  // 4000 draws over 11 starts: ~364 each
        EXPECT_GT(n, 250) << where.first << ":" << where.second;
}

TEST(RandomSampler, NoShardHoldsARow) {
    TokenDataset ds = make_dataset({4, 5});
    std::vector<int32_t> out(2 * 6);
    expect_error([&] { trt::sample_random(ds, 1, 1, 0, 2, 5, out.data()); }, Status::Config,
                 {"T+1 = 6", "holds only 5", "s1.bin"});
    // T = 4 fits exactly one start in s1.
    trt::sample_random(ds, 1, 1, 0, 2, 4, out.data());
    EXPECT_EQ(row_of(out, 0, 4), row_at(1, 0, 4));
    EXPECT_EQ(row_of(out, 1, 4), row_at(1, 0, 4));
    expect_error([&] { trt::sample_random(ds, 1, 1, 0, 0, 4, out.data()); },
                 Status::InvalidArgument, {});
}

// Data parallel (docs/DISTRIBUTED.md): ranks of B rows together draw exactly the world·B rows
// one process draws, for both samplers, and their cursors move the same way.
TEST(DataParallelSampling, RanksDrawTheSlicesOfOneProcessBatch) {
    TokenDataset ds = make_dataset({200, 90});
    const int64_t B = 3, T = 4, world = 2;
    for (int step = 0; step < 12; ++step) {
        SequentialCursor one{}, r0{}, r1{};
        for (int k = 0; k <= step; ++k) {  // step windows in
            std::vector<int32_t> all(static_cast<size_t>(world * B * (T + 1)));
            std::vector<int32_t> a(static_cast<size_t>(B * (T + 1))), b(a.size());
            trt::sample_sequential(ds, one, world * B, T, all.data());
            trt::sample_sequential(ds, r0, B, T, a.data(), 0, world);
            trt::sample_sequential(ds, r1, B, T, b.data(), 1, world);
            if (k < step) continue;
            EXPECT_EQ(std::vector<int32_t>(all.begin(), all.begin() + a.size()), a) << step;
            EXPECT_EQ(std::vector<int32_t>(all.begin() + a.size(), all.end()), b) << step;
        }
        EXPECT_EQ(one.shard, r0.shard);
        EXPECT_EQ(one.pos, r0.pos);
        EXPECT_EQ(one.pos, r1.pos);
    }
    std::vector<int32_t> all(static_cast<size_t>(world * B * (T + 1))), a(B * (T + 1)), b(a.size());
    trt::sample_random(ds, 7, 5, 1, world * B, T, all.data());
    trt::sample_random(ds, 7, 5, 1, B, T, a.data(), 0);
    trt::sample_random(ds, 7, 5, 1, B, T, b.data(), B);
    EXPECT_EQ(std::vector<int32_t>(all.begin(), all.begin() + a.size()), a);
    EXPECT_EQ(std::vector<int32_t>(all.begin() + a.size(), all.end()), b);
}
