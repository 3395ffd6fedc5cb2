// Batch samplers (docs/FORMATS.md §1). Both fill a micro-batch as B rows of T+1 token ids
// (int32 [B, T+1]): a row's first T ids are inputs, its last T ids the targets.
#pragma once
#include <cstdint>

#include "data/token_dataset.h"

namespace trt {

// Sequential (llm.c) cursor: row b of a micro-batch is tokens[pos + b*T, pos + b*T + T + 1)
// of the current shard; then pos += B*T. A window of B*T+1 tokens never crosses a shard
// boundary: one that would not fit moves to the next shard at 0, after the last back to 0.
struct SequentialCursor {
    int64_t shard = 0;
    int64_t pos = 0;
};

// Where the next sequential window starts, advancing the cursor as sample_sequential does
// (the resident-data path reads the tokens on the device from this position).
struct SequentialWindow {
    size_t shard;
    int64_t pos;
};
SequentialWindow next_sequential_window(const TokenDataset& data, SequentialCursor& cursor,
                                        int64_t B, int64_t T);

// Throws Error(Config) if no shard holds B*T+1 tokens. Data parallel (docs/DISTRIBUTED.md):
// the window is world·B rows, and rank takes rows rank·B .. rank·B + B - 1 of it, so the
// ranks together draw what one process drawing world·B rows would.
void sample_sequential(const TokenDataset& data, SequentialCursor& cursor, int64_t B, int64_t T,
                       int32_t* out /* [B, T+1] */, int64_t rank = 0, int64_t world = 1);

// Random sampler: row r of micro-step k of step s (s from 1) is drawn with Philox4x32-10,
// key = (seed lo, seed hi), counter = (s, k, r, 0); u = x0 | x1 << 32; idx = u mod W where
// W = sum over shards of max(0, n_shard - T); idx maps to (shard, offset) in shard order.
// Throws Error(Config) if no shard holds T+1 tokens. row0: the global number of the first
// row (data parallel: rank·B), so rows are numbered across the ranks.
void sample_random(const TokenDataset& data, uint64_t seed, int64_t step, int64_t micro_step,
                   int64_t B, int64_t T, int32_t* out /* [B, T+1] */, int64_t row0 = 0);

// True if sample_sequential can draw a (B, T) window from data (some shard has B*T+1 ids).
bool sequential_fits(const TokenDataset& data, int64_t B, int64_t T);

}  // namespace trt
