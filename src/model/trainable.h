// train.trainable: which parameter tensors train, by name pattern. Everything else is frozen:
// no gradient is computed or held for it and AdamW allocates no moments for it.
#pragma once
#include <string>
#include <vector>

#include "model/param_table.h"

namespace trt {

// Glob over a whole tensor name: '*' matches any run of characters (dots included), '?' one
// character; everything else matches itself. "h.11.*" matches every tensor of GPT-2's block 11.
bool name_matches(const std::string& pattern, const std::string& name);

// One flag per tensor of `table` (table order): true where some pattern matches the tensor's
// Hugging Face name; every tensor when `patterns` is empty. LoRA adapters always train, and
// with them the base model is frozen but for the tensors the patterns name. Error(Config), naming `key`:
// a pattern that matches no tensor (with example names), or a fused group trained in part
// (Llama's q/k/v_proj are one matmul, gate/up_proj another: list all of a group or none).
std::vector<bool> trainable_flags(const ParamTable& table, const std::vector<std::string>& patterns,
                                  const std::string& key = "train.trainable");

// Where the backward of a table with these trainable flags can stop: the lowest block holding
// a trainable tensor (0 when an embedding trains; L when no block does), since nothing below
// it needs a gradient.
struct BackwardExtent {
    int from_layer = 0;
    bool embeddings = true;  // an embedding trains: the backward reaches encoder_backward
};
BackwardExtent backward_extent(const ParamTable& table);

}  // namespace trt
