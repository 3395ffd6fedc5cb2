// ExampleSet (token + loss-mask shards -> examples) and ExampleBatches (packing, the rows of
// a step): data/example_set.h, data/example_batches.h.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "data/example_batches.h"
#include "data/example_set.h"
#include "data/prepare.h"
#include "data_test_util.h"

namespace trt {
namespace {

// Examples written as shards: example i has lengths[i] tokens, ids 1000*i + t, and every
// token but the first is a target except where `prompt` says the first prompt[i] tokens are
// not (a prompt of 3: tokens 1, 2 are not targets, 3.. are).
struct Written {
    std::string tokens;
};

Written write_examples(const std::string& dir, const std::vector<int>& lengths,
                       const std::vector<int>& prompt, int token_bytes = 4) {
    std::vector<uint32_t> ids, mask;
    for (size_t i = 0; i < lengths.size(); ++i)
        for (int t = 0; t < lengths[i]; ++t) {
            ids.push_back(static_cast<uint32_t>(1000 * i + t));
            uint32_t m = t == 0 ? kMaskBegins : 0;
            if (t > 0 && t >= (prompt.empty() ? 1 : prompt[i])) m |= kMaskTarget;
            mask.push_back(m);
        }
    write_shard(dir + "/train.bin", ids.data(), static_cast<int64_t>(ids.size()), token_bytes);
    write_shard(dir + "/mask_train.bin", mask.data(), static_cast<int64_t>(mask.size()),
                token_bytes);
    return {dir + "/train.bin"};
}

TEST(ExampleSet, FindsTheExamplesTheirTargetsAndCutsLongOnes) {
    const std::string dir = fresh_test_dir("ExampleSet");
    write_examples(dir, {5, 9, 1, 30}, {2, 4, 1, 1});
    const TokenDataset data = TokenDataset::open(dir + "/train.bin", 1 << 20);
    ASSERT_TRUE(has_loss_masks(data));
    const ExampleSet set = ExampleSet::open(data, 17);
    // The example of 1 token has no target: dropped. The one of 30 is cut to 17.
    ASSERT_EQ(set.examples().size(), 3u);
    EXPECT_EQ(set.dropped(), 1);
    EXPECT_EQ(set.truncated(), 1);
    EXPECT_EQ(set.examples()[0].begin, 0);
    EXPECT_EQ(set.examples()[0].length, 5);
    EXPECT_EQ(set.examples()[0].targets, 3);  // tokens 2, 3, 4
    EXPECT_EQ(set.examples()[1].begin, 5);
    EXPECT_EQ(set.examples()[1].targets, 5);  // tokens 4 .. 8
    EXPECT_EQ(set.examples()[2].begin, 15);
    EXPECT_EQ(set.examples()[2].length, 17);
    EXPECT_EQ(set.examples()[2].targets, 16);
}

TEST(ExampleSet, PlainShardsHaveNoMasksAndBadMasksAreRefused) {
    const std::string dir = fresh_test_dir("ExampleSet");
    std::vector<uint32_t> ids{1, 2, 3, 4};
    write_shard(dir + "/train.bin", ids.data(), 4, 2);
    EXPECT_FALSE(has_loss_masks(TokenDataset::open(dir + "/train.bin", 10)));
    // A first token that does not begin an example.
    std::vector<uint32_t> mask{kMaskTarget, 0, 0, 0};
    write_shard(dir + "/mask_train.bin", mask.data(), 4, 2);
    const TokenDataset data = TokenDataset::open(dir + "/train.bin", 10);
    ASSERT_TRUE(has_loss_masks(data));
    expect_error([&] { ExampleSet::open(data, 10); }, Status::Format,
                 {"mask_train.bin", "does not begin an example"});
    // A token that begins an example and is a target.
    mask = {kMaskBegins, kMaskTarget, kMaskBegins | kMaskTarget, 0};
    write_shard(dir + "/mask_train.bin", mask.data(), 4, 2);
    expect_error([&] { ExampleSet::open(data, 10); }, Status::Format,
                 {"both begins an example and is a target"});
    // Counts that differ from the tokens'.
    write_shard(dir + "/mask_train.bin", mask.data(), 3, 2);
    expect_error([&] { ExampleSet::open(data, 10); }, Status::Format, {"holds 3 mask values"});
    // A value above 3.
    mask = {kMaskBegins, 7, 0, 0};
    write_shard(dir + "/mask_train.bin", mask.data(), 4, 2);
    expect_error([&] { ExampleSet::open(data, 10); }, Status::Format, {"mask_train.bin"});
    // No target anywhere.
    mask = {kMaskBegins, 0, kMaskBegins, 0};
    write_shard(dir + "/mask_train.bin", mask.data(), 4, 2);
    expect_error([&] { ExampleSet::open(data, 10); }, Status::Config, {"no example with a target"});
}

struct Row {
    std::vector<int32_t> in, tg, pos;
};

std::vector<Row> draw(ExampleBatches& b, int64_t row0, int B, int T, int64_t* counted) {
    std::vector<int32_t> in(static_cast<size_t>(B * T)), tg(in.size()), pos(in.size());
    *counted = b.fill_rows(row0, B, in.data(), tg.data(), pos.data(), 7);
    std::vector<Row> rows(static_cast<size_t>(B));
    for (int r = 0; r < B; ++r) {
        rows[r].in.assign(in.begin() + r * T, in.begin() + (r + 1) * T);
        rows[r].tg.assign(tg.begin() + r * T, tg.begin() + (r + 1) * T);
        rows[r].pos.assign(pos.begin() + r * T, pos.begin() + (r + 1) * T);
    }
    return rows;
}

// Every row: examples whole, positions restarting with each, targets its own next tokens
// where the mask counts them, -1 elsewhere; padding after. Returns the examples it holds.
std::vector<int> check_row(const Row& r, int T, const std::vector<int>& lengths,
                           const std::vector<int>& prompt, bool packing) {
    std::vector<int> held;
    int t = 0;
    while (t < T && r.in[t] != 7) {
        const int ex = r.in[t] / 1000;
        held.push_back(ex);
        const int L = lengths[ex];
        for (int j = 0; j + 1 < L; ++j, ++t) {
            EXPECT_EQ(r.in[t], 1000 * ex + j);
            EXPECT_EQ(r.pos[t], j);
            EXPECT_EQ(r.tg[t], j + 1 >= prompt[ex] ? 1000 * ex + j + 1 : -1) << "ex " << ex;
        }
    }
    const int tail = t;
    for (; t < T; ++t) {
        EXPECT_EQ(r.in[t], 7);
        EXPECT_EQ(r.tg[t], -1);
        EXPECT_EQ(r.pos[t], packing ? t - tail : (tail == 0 ? t : r.pos[tail - 1] + t - tail + 1));
    }
    if (!packing) EXPECT_EQ(held.size(), 1u);
    return held;
}

TEST(ExampleBatches, PackingPutsWholeExamplesInRowsBestFitDecreasing) {
    const std::string dir = fresh_test_dir("ExampleBatches");
    const std::vector<int> lengths{5, 9, 3, 12, 2, 7, 4, 17, 6};
    const std::vector<int> prompt{2, 4, 1, 1, 1, 3, 2, 5, 1};
    write_examples(dir, lengths, prompt);
    const TokenDataset data = TokenDataset::open(dir + "/train.bin", 1 << 20);
    const int T = 16;
    const ExampleSet set = ExampleSet::open(data, T + 1);
    ExampleBatches packed(set, T, true, 42);
    // Slots (length - 1): 4 8 2 11 1 6 3 16 5 = 56 → best-fit decreasing: [16] [11 5]
    // [8 6 2] [4 3 1]: four rows, 56 of 64 slots.
    EXPECT_EQ(packed.rows_per_epoch(), 4);
    EXPECT_DOUBLE_EQ(packed.fill(), 56.0 / 64.0);
    int64_t counted = 0;
    const std::vector<Row> rows = draw(packed, 0, 4, T, &counted);
    std::multiset<int> seen;
    int64_t expect_counted = 0;
    for (const Row& r : rows)
        for (int ex : check_row(r, T, lengths, prompt, true)) seen.insert(ex);
    for (size_t i = 0; i < lengths.size(); ++i) {
        EXPECT_EQ(seen.count(static_cast<int>(i)), 1u) << "example " << i;
        expect_counted += lengths[i] - std::max(prompt[i], 1);
    }
    EXPECT_EQ(counted, expect_counted);
    // The next epoch: the same rows in another order (seeded), each once.
    const std::vector<Row> again = draw(packed, 4, 4, T, &counted);
    EXPECT_EQ(counted, expect_counted);
    std::set<std::vector<int32_t>> first, second;
    for (const Row& r : rows) first.insert(r.in);
    for (const Row& r : again) second.insert(r.in);
    EXPECT_EQ(first, second);
    // Rows depend only on (seed, row number): a second instance draws the same.
    ExampleBatches other(set, T, true, 42);
    int64_t c2 = 0;
    const std::vector<Row> rows2 = draw(other, 2, 2, T, &c2);
    EXPECT_EQ(rows2[0].in, rows[2].in);
    EXPECT_EQ(rows2[1].in, rows[3].in);
}

TEST(ExampleBatches, WithoutPackingEachExampleIsARowOfItsOwn) {
    const std::string dir = fresh_test_dir("ExampleBatches");
    const std::vector<int> lengths{5, 9, 3};
    const std::vector<int> prompt{2, 4, 1};
    write_examples(dir, lengths, prompt, 2);
    const TokenDataset data = TokenDataset::open(dir + "/train.bin", 1 << 16);
    const ExampleSet set = ExampleSet::open(data, 11);
    ExampleBatches rows(set, 10, false, 3);
    EXPECT_EQ(rows.rows_per_epoch(), 3);
    int64_t counted = 0;
    std::set<int> held;
    for (const Row& r : draw(rows, 0, 3, 10, &counted))
        for (int ex : check_row(r, 10, lengths, prompt, false)) held.insert(ex);
    EXPECT_EQ(held, (std::set<int>{0, 1, 2}));
    EXPECT_EQ(counted, 3 + 5 + 2);
}

}  // namespace
}  // namespace trt
