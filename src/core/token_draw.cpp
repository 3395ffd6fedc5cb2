// The host's draw (core/token_draw.h): keys sorted by radix (or partially, for a small top-k),
// then the chunked sums and the walk the CUDA kernel shares.
#include "core/token_draw.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace trt {
namespace {

// keys sorted ascending by their upper 32 bits, ties in their given order: a stable LSD radix
// sort, 8 bits a pass. Given in ascending id order, the result is the 64-bit keys' order.
void sort_by_upper_half(std::vector<uint64_t>& keys, std::vector<uint64_t>& tmp) {
    tmp.resize(keys.size());
    for (int shift = 32; shift < 64; shift += 8) {
        size_t count[257] = {};
        for (uint64_t k : keys) ++count[((k >> shift) & 0xff) + 1];
        if (*std::max_element(count + 1, count + 257) == keys.size()) continue;  // one bucket
        for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
        for (uint64_t k : keys) tmp[count[(k >> shift) & 0xff]++] = k;
        keys.swap(tmp);
    }
}

}  // namespace

int32_t draw_token_on_host(const float* logits, int V, const TokenDraw& d) {
    if (d.temperature <= 0.0) {
        int32_t best = 0;
        for (int i = 1; i < V; ++i)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    const int k = d.top_k > 0 && d.top_k < V ? d.top_k : V;
    // Largest logits first; equal logits by id, so the order (and the draw) is deterministic.
    // One 64-bit key per entry, which orders exactly as that comparison: a radix sort of all
    // of them (ids ascending going in, so the stable sort by the logit part breaks ties by
    // id), or a partial sort for a small top-k.
    thread_local std::vector<uint64_t> keys, tmp;
    thread_local std::vector<double> chunk_sums;
    keys.resize(static_cast<size_t>(V));
    for (int i = 0; i < V; ++i) keys[i] = descending_key(logits[i], i);
    if (static_cast<size_t>(k) * 16 < keys.size())
        std::partial_sort(keys.begin(), keys.begin() + k, keys.end());
    else
        sort_by_upper_half(keys, tmp);
    // softmax(logits / temperature) over the kept k, in double, summed by chunks.
    const double inv_t = 1.0 / d.temperature;
    const double top = static_cast<double>(key_logit(keys[0]));
    chunk_sums.resize(static_cast<size_t>((k + kDrawChunk - 1) / kDrawChunk));
    for (size_t c = 0; c < chunk_sums.size(); ++c)
        chunk_sums[c] = draw_chunk_sum(keys.data(), k, static_cast<int>(c), top, inv_t);
    return draw_from_sorted(keys.data(), k, chunk_sums.data(), inv_t,
                            draw_uniform(d.seed, d.index));
}

}  // namespace trt
