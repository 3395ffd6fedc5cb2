#include "runtime/token_sampling.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/philox.h"

namespace trt {

double philox_uniform(uint64_t seed, uint64_t index) {
    const Philox4x32 r = philox4x32_10(static_cast<uint32_t>(index),
                                       static_cast<uint32_t>(index >> 32), 0, 0,
                                       static_cast<uint32_t>(seed),
                                       static_cast<uint32_t>(seed >> 32));
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32 | r.v[1]) >> 11;  // 53 bits
    return static_cast<double>(bits) * 0x1.0p-53;
}

namespace {

// A key whose unsigned order is: larger logit first, then smaller id. The float's bits are
// mapped to an unsigned integer increasing with the value (-0 taken as +0, which compares
// equal to it), then flipped.
uint64_t descending_key(float logit, int32_t id) {
    if (logit == 0.0f) logit = 0.0f;
    uint32_t u;
    std::memcpy(&u, &logit, sizeof u);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // ascending with the value
    return static_cast<uint64_t>(~u) << 32 | static_cast<uint32_t>(id);
}

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

int32_t sample_token(const float* logits, int V, const TokenSamplingOptions& options,
                     uint64_t index, std::vector<std::pair<float, int32_t>>& scratch) {
    if (options.temperature <= 0.0) {
        int32_t best = 0;
        for (int i = 1; i < V; ++i)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    scratch.resize(static_cast<size_t>(V));
    size_t k = options.top_k > 0 && options.top_k < V ? static_cast<size_t>(options.top_k)
                                                     : static_cast<size_t>(V);
    // Largest logits first; equal logits by id, so the order (and the draw) is deterministic.
    // One 64-bit key per entry (the logit's order flipped, then the id), which orders exactly
    // as that comparison: a radix sort of all of them (ids ascending going in, so the stable
    // sort by the logit part breaks ties by id), or a partial sort for a small top-k.
    thread_local std::vector<uint64_t> keys, tmp;
    thread_local std::vector<double> weights;
    keys.resize(static_cast<size_t>(V));
    for (int i = 0; i < V; ++i) keys[i] = descending_key(logits[i], i);
    if (k * 16 < keys.size())
        std::partial_sort(keys.begin(), keys.begin() + static_cast<ptrdiff_t>(k), keys.end());
    else
        sort_by_upper_half(keys, tmp);
    for (size_t i = 0; i < k; ++i) {
        const int32_t id = static_cast<int32_t>(keys[i] & 0xffffffffu);
        scratch[i] = {logits[id], id};
    }

    // softmax(logits / temperature) over the kept k, in double; max first for stability.
    const double inv_t = 1.0 / options.temperature;
    const double top = scratch[0].first;
    weights.resize(k);
    double total = 0.0;
    for (size_t i = 0; i < k; ++i) {
        weights[i] = std::exp((scratch[i].first - top) * inv_t);
        total += weights[i];
    }
    const double u = philox_uniform(options.seed, index) * total;
    double acc = 0.0;
    for (size_t i = 0; i < k; ++i) {
        acc += weights[i];
        if (u < acc) return scratch[i].second;
    }
    return scratch[k - 1].second;  // u rounded up to total
}

}  // namespace trt
