// Whole-split evaluation windows (Session::eval_whole; docs/FORMATS.md §1). The split is ONE
// stream of N tokens — its shards back to back in the dataset's order, since prepare cuts a
// stream of documents into numbered shards wherever a shard fills — and every token but the
// first is scored exactly once as a target, in disjoint windows of T targets:
//   window k: inputs tokens[k*T, k*T + len), targets tokens[k*T + 1, k*T + len + 1),
//   len = min(T, N - 1 - k*T)
// so only the last window may be shorter. Nothing wraps, nothing is scored twice.
#pragma once
#include <cstdint>

#include "data/token_dataset.h"

namespace trt {

struct EvalWindow {
    int64_t start = 0;  // first input token in the stream
    int64_t len = 0;    // targets (and inputs): the window reads len + 1 tokens
};

// The windows of an N-token stream: ceil((N - 1) / T); 0 when N < 2 (nothing to predict).
int64_t whole_eval_windows(int64_t n_tokens, int64_t T);
// Window k (0 <= k < whole_eval_windows(n_tokens, T)).
EvalWindow whole_eval_window(int64_t n_tokens, int64_t T, int64_t k);

// out[i] = token (offset + i) of the dataset read as one stream (shards in order); the range
// must lie inside its total_tokens(). Throws Error(InvalidArgument) otherwise.
void copy_stream_tokens(const TokenDataset& data, int64_t offset, int64_t n, int32_t* out);

}  // namespace trt
