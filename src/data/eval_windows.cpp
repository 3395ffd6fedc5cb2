// Whole-split evaluation windows (eval_windows.h).
#include "data/eval_windows.h"

#include <algorithm>

#include "core/error.h"

namespace trt {

int64_t whole_eval_windows(int64_t n_tokens, int64_t T) {
    TRT_CHECK(T > 0, "T = ", T);
    if (n_tokens < 2) return 0;
    return (n_tokens - 1 + T - 1) / T;
}

EvalWindow whole_eval_window(int64_t n_tokens, int64_t T, int64_t k) {
    TRT_CHECK(k >= 0 && k < whole_eval_windows(n_tokens, T), "window ", k, " of ",
              whole_eval_windows(n_tokens, T));
    const int64_t start = k * T;
    return EvalWindow{start, std::min(T, n_tokens - 1 - start)};
}

void copy_stream_tokens(const TokenDataset& data, int64_t offset, int64_t n, int32_t* out) {
    const int64_t total = data.total_tokens();
    if (offset < 0 || n < 0 || offset > total || n > total - offset)
        fail(Status::InvalidArgument, "copy_stream_tokens: range [", offset, ", ", offset,
             " + ", n, ") outside the ", total, " tokens of the split");
    // Skip whole shards before offset, then copy shard by shard.
    for (size_t s = 0; s < data.num_shards() && n > 0; ++s) {
        const int64_t here = data.shard_tokens(s);
        if (offset >= here) {
            offset -= here;
            continue;
        }
        const int64_t take = std::min(n, here - offset);
        data.copy_tokens(s, offset, take, out);
        out += take;
        n -= take;
        offset = 0;
    }
}

}  // namespace trt
