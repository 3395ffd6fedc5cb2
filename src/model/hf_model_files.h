// Where a Hugging Face model's weights are: model.init_from names a safetensors file, or a
// folder holding model.safetensors, or model.safetensors.index.json and the shards its
// weight_map names (transformers' save_pretrained layout, also what `trainrt export` writes).
#pragma once
#include <string>
#include <vector>

namespace trt {

inline constexpr const char* kHfWeightsFile = "model.safetensors";
inline constexpr const char* kHfWeightsIndex = "model.safetensors.index.json";

// The safetensors files holding the weights, in a fixed order. Error(Io) when the folder has
// neither file or a shard is missing, Error(Format) for a malformed index (a shard named with
// a path, an empty weight_map, ...).
std::vector<std::string> hf_weight_files(const std::string& init_from);

}  // namespace trt
