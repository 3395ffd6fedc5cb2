// A GGUF file's metadata as [model] keys: what model.init_from = "<file>.gguf" contributes to
// a config (docs/CONFIG.md, "GGUF files"), as a model folder's config.json does. llama.cpp's
// architectures gpt2, llama (Llama and Mistral: a config says model.arch = "mistral" and its
// sliding_window), qwen2 and qwen3 are read; their `<arch>.*` keys as llama.cpp's converter
// writes them. Not in a GGUF file, so taken from elsewhere: a Mistral's sliding window, and
// Llama 3's RoPE scaling parameters (the file holds only their result, the rope_freqs tensor:
// its largest factor is rope_scaling_factor, the rest are Meta's Llama 3.1-3.3 values, and
// loading the weights checks the tensor against whatever the config ends up saying).
#pragma once
#include <string>

#include "config/run_config.h"
#include "io/gguf_reader.h"

namespace trt {

// The family and shape keys of the GGUF file `f` (init_from and seed keep their defaults).
// Error(Format) for missing or malformed keys and dims (each bounded like its model.* key),
// Error(Unsupported) for an architecture or a feature the decoder cannot run.
ModelConfig parse_gguf_model_config(const gguf::Reader& f);

}  // namespace trt
