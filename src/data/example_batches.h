// ExampleBatches: the rows a training run draws from an ExampleSet (data/example_set.h), with
// or without packing (CONFIG.md: data.packing; docs/FORMATS.md §1, "Packing").
//
// A row is T (input, target) slots. An example of L tokens takes L - 1 of them: inputs its
// tokens 0 .. L-2, targets its tokens 1 .. L-1 (-1 where the mask says the target does not
// count), positions 0 .. L-2 (they restart in each example, so attention and positions never
// cross an example: backend.h, `pos`). What a row's examples leave over is padding: input
// pad_id, target -1, positions restarting at 0 (packing) or running on (no packing).
//
// Packing is best-fit decreasing, once for the whole split: examples by length, longest
// first (ties by order in the data), each into the fullest row it still fits in, else a new
// row. Without packing, each example is a row of its own. Each epoch visits every row once,
// in an order drawn with Philox4x32-10 from (data.seed, epoch): a Fisher-Yates shuffle, so a
// run's rows depend only on the seed and the global row number (a resume needs the step).
// Unshuffled (evaluation), every epoch takes the rows in packing order.
#pragma once
#include <cstdint>
#include <vector>

#include "data/example_set.h"

namespace trt {

class ExampleBatches {
public:
    ExampleBatches(const ExampleSet& set, int64_t T, bool packing, uint64_t seed,
                   bool shuffled = true);

    int64_t rows_per_epoch() const { return static_cast<int64_t>(rows_.size()); }
    // Of the slots of all rows, the share that holds an example's tokens.
    double fill() const;
    // Rows row0 .. row0 + B - 1 of the run (row r: epoch r / rows_per_epoch()), as host
    // [B, T] arrays. Each returns the number of targets that count.
    int64_t fill_rows(int64_t row0, int B, int32_t* inputs, int32_t* targets,
                      int32_t* positions, int32_t pad_id);

private:
    const std::vector<uint32_t>& order(int64_t epoch);
    const ExampleSet& set_;
    int64_t T_;
    bool packing_;
    uint64_t seed_;
    bool shuffled_;
    std::vector<std::vector<uint32_t>> rows_;  // example indices, in packing order
    int64_t epoch_cached_ = -1;
    std::vector<uint32_t> order_;  // rows_ indices in epoch_cached_'s order
};

}  // namespace trt
