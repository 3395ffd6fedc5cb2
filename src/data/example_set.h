// ExampleSet: prepared instruction-tuning data (docs/FORMATS.md §1, "Loss masks"): the token
// shards of a split and, beside each, its loss-mask shard, read as a list of examples.
//
// `trainrt prepare --chat` writes, for a split's shard NAME.bin, a mask shard mask_NAME.bin in
// the same llm.c layout and width, one value per token:
//   bit 0 (kMaskTarget)  the token is a target: the loss of predicting it from the tokens
//                        before it counts;
//   bit 1 (kMaskBegins)  the token begins an example (an example never begins as a target).
// So the token stream is a sequence of whole examples, each with its own loss mask.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/token_dataset.h"

namespace trt {

constexpr uint32_t kMaskTarget = 1u, kMaskBegins = 2u;

// The mask shard beside a token shard: "dir/train_000001.bin" -> "dir/mask_train_000001.bin".
std::string mask_shard_path(const std::string& token_shard);

// True when every shard of `tokens` has its mask shard beside it (a --chat prepare's split);
// false when none has. A split with some but not all is Error(Format) naming a missing one.
bool has_loss_masks(const TokenDataset& tokens);

struct Example {
    int64_t begin = 0;   // offset of its first token in the split's stream (shards in order)
    int32_t length = 0;  // tokens, cut to the longest a row takes (ExampleSet::open)
    int32_t targets = 0; // of them, targets that count
};

class ExampleSet {
public:
    // The split's examples. An example longer than max_tokens (seq_len + 1: T inputs and T
    // targets) is cut to its first max_tokens tokens (counted in truncated()); one with no
    // target left is dropped (counted in dropped()). Throws Error(Format) naming the mask
    // shard and offset when the masks do not describe whole examples (the first token does
    // not begin one, or a token both begins an example and is a target), Error(Config) when
    // no example has a target.
    static ExampleSet open(const TokenDataset& tokens, int64_t max_tokens);

    const std::vector<Example>& examples() const { return examples_; }
    int64_t truncated() const { return truncated_; }
    int64_t dropped() const { return dropped_; }

    // ids[i] = token (begin + i), mask[i] its mask value, for i < n (across shards).
    void read(int64_t begin, int32_t n, int32_t* ids, uint8_t* mask) const;

private:
    const TokenDataset* tokens_ = nullptr;
    std::vector<TokenDataset> masks_;
    std::vector<int64_t> shard_start_;  // stream offset of each shard's first token
    std::vector<Example> examples_;
    int64_t truncated_ = 0, dropped_ = 0;
};

}  // namespace trt
