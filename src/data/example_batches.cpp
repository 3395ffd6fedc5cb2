// ExampleBatches: packing and the rows of a step (data/example_batches.h).
#include "data/example_batches.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "core/error.h"
#include "core/philox.h"

namespace trt {

namespace {

constexpr uint32_t kShuffleTag = 0x50414b52u;  // "PAKR": this stream's own Philox counters

// The (input, target) slots an example takes in a row.
int64_t slots(const Example& e) { return e.length - 1; }

}  // namespace

ExampleBatches::ExampleBatches(const ExampleSet& set, int64_t T, bool packing, uint64_t seed,
                               bool shuffled)
    : set_(set), T_(T), packing_(packing), seed_(seed), shuffled_(shuffled) {
    const std::vector<Example>& ex = set.examples();
    for (const Example& e : ex)
        if (slots(e) > T || e.length < 2)
            fail(Status::Internal, "ExampleBatches: an example of ", e.length,
                 " tokens does not fit a row of ", T, " (ExampleSet::open cuts them)");
    if (!packing) {
        rows_.resize(ex.size());
        for (size_t i = 0; i < ex.size(); ++i) rows_[i] = {static_cast<uint32_t>(i)};
        return;
    }
    std::vector<uint32_t> by_length(ex.size());
    std::iota(by_length.begin(), by_length.end(), 0u);
    std::stable_sort(by_length.begin(), by_length.end(),
                     [&](uint32_t a, uint32_t b) { return slots(ex[a]) > slots(ex[b]); });
    // Free slots -> rows with that many; best fit = the smallest free count that holds it
    // (the earliest such row on a tie, so the packing is deterministic).
    std::multimap<int64_t, uint32_t> free_rows;
    for (uint32_t i : by_length) {
        const int64_t need = slots(ex[i]);
        auto it = free_rows.lower_bound(need);
        uint32_t row;
        int64_t left;
        if (it == free_rows.end()) {
            row = static_cast<uint32_t>(rows_.size());
            rows_.emplace_back();
            left = T;
        } else {
            row = it->second;
            left = it->first;
            free_rows.erase(it);
        }
        rows_[row].push_back(i);
        left -= need;
        if (left > 0) free_rows.emplace(left, row);
    }
}

double ExampleBatches::fill() const {
    int64_t used = 0;
    for (const auto& row : rows_)
        for (uint32_t i : row) used += slots(set_.examples()[i]);
    return rows_.empty() ? 0.0 : static_cast<double>(used) / (static_cast<double>(T_) * rows_.size());
}

const std::vector<uint32_t>& ExampleBatches::order(int64_t epoch) {
    if (epoch == epoch_cached_) return order_;
    order_.resize(rows_.size());
    std::iota(order_.begin(), order_.end(), 0u);
    epoch_cached_ = epoch;
    if (!shuffled_) return order_;
    // Fisher-Yates, j uniform in [0, i] from 64 random bits (the modulo bias is < 2^-32).
    for (size_t i = order_.size(); i > 1; --i) {
        const Philox4x32 r = philox4x32_10(static_cast<uint32_t>(epoch),
                                           static_cast<uint32_t>(epoch >> 32),
                                           static_cast<uint32_t>(i), kShuffleTag,
                                           static_cast<uint32_t>(seed_),
                                           static_cast<uint32_t>(seed_ >> 32));
        const uint64_t u = r.v[0] | (static_cast<uint64_t>(r.v[1]) << 32);
        std::swap(order_[i - 1], order_[static_cast<size_t>(u % i)]);
    }
    return order_;
}

int64_t ExampleBatches::fill_rows(int64_t row0, int B, int32_t* inputs, int32_t* targets,
                                  int32_t* positions, int32_t pad_id) {
    const int64_t R = rows_per_epoch();
    int64_t counted = 0;
    std::vector<int32_t> ids(static_cast<size_t>(T_ + 1));
    std::vector<uint8_t> mask(static_cast<size_t>(T_ + 1));
    for (int b = 0; b < B; ++b) {
        const int64_t g = row0 + b;
        const std::vector<uint32_t>& row = rows_[order(g / R)[static_cast<size_t>(g % R)]];
        int32_t* in = inputs + b * T_;
        int32_t* tg = targets + b * T_;
        int32_t* ps = positions + b * T_;
        int64_t o = 0;
        for (uint32_t i : row) {
            const Example& e = set_.examples()[i];
            set_.read(e.begin, e.length, ids.data(), mask.data());
            for (int64_t t = 0; t + 1 < e.length; ++t, ++o) {
                in[o] = ids[static_cast<size_t>(t)];
                const bool counts = mask[static_cast<size_t>(t + 1)] & kMaskTarget;
                tg[o] = counts ? ids[static_cast<size_t>(t + 1)] : -1;
                counted += counts;
                ps[o] = static_cast<int32_t>(t);
            }
        }
        const int64_t run_on = o == 0 ? 0 : ps[o - 1] + 1;
        for (int64_t t = 0; o < T_; ++o, ++t) {
            in[o] = pad_id;
            tg[o] = -1;
            ps[o] = static_cast<int32_t>(packing_ ? t : run_on + t);
        }
    }
    return counted;
}

}  // namespace trt
