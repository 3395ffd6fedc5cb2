// A Hugging Face model's config.json as [model] keys: what model.init_from = "<folder>"
// contributes to a config (docs/CONFIG.md, "Hugging Face model folders"), and what a
// checkpoint's config.json says its model is. GPT2LMHeadModel ("gpt2"), LlamaForCausalLM
// ("llama", with "linear" or "llama3" rope_scaling) and Qwen2ForCausalLM ("qwen2") are read;
// transformers' defaults apply to missing keys; what the decoder cannot run (other rope
// scaling, biases in Llama, sliding windows, other activations, other model types) is refused
// by name.
#pragma once
#include <string>

#include "config/run_config.h"

namespace trt {

// The family and shape keys of `text` (a config.json) as a ModelConfig; init_from and seed
// keep their defaults. Error(Format) for malformed JSON or dims (each bounded like its
// model.* key), Error(Unsupported) for a model the decoder cannot run. `source` names the
// file in messages.
ModelConfig parse_hf_model_config(const std::string& text, const std::string& source);

// Error(Format) naming `source` when the dims give more parameters than any supported model
// (2^40): hostile dims stop here, before a table is sized from them.
void check_model_parameter_count(const ModelConfig& m, const std::string& source);

// "<folder>/config.json" when `init_from` is a directory (a Hugging Face model folder or a
// libtrainrt checkpoint), else "".
std::string hf_folder_config_path(const std::string& init_from);

}  // namespace trt
