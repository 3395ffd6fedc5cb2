// Sequential and random batch samplers (docs/FORMATS.md §1).
#include "data/sampler.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "data/sampler_math.h"

namespace trt {

namespace {

void check_shape(const char* who, int64_t B, int64_t T, const int32_t* out) {
    if (B <= 0 || T <= 0)
        fail(Status::InvalidArgument, who, ": batch size B and sequence length T must be > 0 (B=",
             B, ", T=", T, ")");
    // B*(T+1) must not overflow (T+1 >= B*T+1 covers the window size too).
    if (T >= std::numeric_limits<int64_t>::max() / 2 / B)
        fail(Status::InvalidArgument, who, ": B*T overflows (B=", B, ", T=", T, ")");
    if (out == nullptr) fail(Status::InvalidArgument, who, ": null output buffer");
}

// Largest shard and its index (0 tokens, shard 0 for an empty dataset).
std::pair<int64_t, size_t> largest_shard(const TokenDataset& data) {
    int64_t best = 0;
    size_t at = 0;
    for (size_t s = 0; s < data.num_shards(); ++s) {
        if (data.shard_tokens(s) > best) {
            best = data.shard_tokens(s);
            at = s;
        }
    }
    return {best, at};
}

}  // namespace

bool sequential_fits(const TokenDataset& data, int64_t B, int64_t T) {
    if (B <= 0 || T <= 0 || T >= std::numeric_limits<int64_t>::max() / 2 / B) return false;
    return largest_shard(data).first >= B * T + 1;
}

SequentialWindow next_sequential_window(const TokenDataset& data, SequentialCursor& cursor,
                                        int64_t B, int64_t T) {
    const int64_t nshards = static_cast<int64_t>(data.num_shards());
    if (cursor.shard < 0 || cursor.shard >= nshards || cursor.pos < 0)
        fail(Status::InvalidArgument, "sequential sampler: cursor (shard ", cursor.shard,
             ", pos ", cursor.pos, ") is outside the dataset of ", nshards, " shards");
    const int64_t window = B * T + 1;  // B rows of T inputs + 1 trailing target
    if (!sequential_fits(data, B, T)) {
        const auto [largest, at] = largest_shard(data);
        fail(Status::Config, "sequential sampler: a batch needs B*T+1 = ", window,
             " tokens (B=", B, ", T=", T, ") but the largest shard",
             nshards ? cat(" '", data.shard_path(at), "'") : std::string(), " holds only ",
             largest, "; lower the batch size or sequence length, or use larger shards");
    }
    // Move on until the window at the cursor fits; terminates within nshards + 1 steps
    // because some shard holds a window at position 0.
    while (cursor.pos > data.shard_tokens(static_cast<size_t>(cursor.shard)) - window) {
        cursor.shard = (cursor.shard + 1) % nshards;
        cursor.pos = 0;
    }
    const SequentialWindow w{static_cast<size_t>(cursor.shard), cursor.pos};
    cursor.pos += B * T;
    return w;
}

void sample_sequential(const TokenDataset& data, SequentialCursor& cursor, int64_t B, int64_t T,
                       int32_t* out, int64_t rank, int64_t world) {
    check_shape("sequential sampler", B, T, out);
    TRT_CHECK(world >= 1 && rank >= 0 && rank < world, "sequential sampler: rank ", rank,
              " of ", world);
    const SequentialWindow w = next_sequential_window(data, cursor, world * B, T);
    // Row b = tokens[pos + b*T, pos + b*T + T + 1): rows overlap by one token.
    for (int64_t b = 0; b < B; ++b)
        data.copy_tokens(w.shard, w.pos + (rank * B + b) * T, T + 1, out + b * (T + 1));
}

void sample_random(const TokenDataset& data, uint64_t seed, int64_t step, int64_t micro_step,
                   int64_t B, int64_t T, int32_t* out, int64_t row0) {
    check_shape("random sampler", B, T, out);
    // W = number of valid starts p (p + T + 1 <= n) over all shards.
    uint64_t W = 0;
    for (size_t s = 0; s < data.num_shards(); ++s)
        W += static_cast<uint64_t>(std::max<int64_t>(0, data.shard_tokens(s) - T));
    if (W == 0) {
        const auto [largest, at] = largest_shard(data);
        fail(Status::Config, "random sampler: a row needs T+1 = ", T + 1, " tokens but the ",
             "largest shard", data.num_shards() ? cat(" '", data.shard_path(at), "'") : std::string(),
             " holds only ", largest, "; lower the sequence length or use larger shards");
    }
    for (int64_t r = 0; r < B; ++r) {
        uint64_t idx = sampler_math::random_window_index(seed, step, micro_step, row0 + r, W);
        // idx -> (shard, offset) by cumulative valid-start counts in shard order.
        size_t s = 0;
        for (;; ++s) {
            const uint64_t count =
                static_cast<uint64_t>(std::max<int64_t>(0, data.shard_tokens(s) - T));
            if (idx < count) break;
            idx -= count;
        }
        data.copy_tokens(s, static_cast<int64_t>(idx), T + 1, out + r * (T + 1));
    }
}

}  // namespace trt
