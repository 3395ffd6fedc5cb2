// Initial GPT-2 weights: a seeded random init, a Hugging Face GPT-2 safetensors file, or an
// llm.c model checkpoint (model/llmc_import.h).
// Both fill a host buffer laid out by ParamTable (the caller copies it to the backend).
#pragma once
#include <cstdint>
#include <string>

#include "model/param_table.h"

namespace trt {

// GPT-2 init: matmul weights and embeddings ~ N(0, 0.02), the two residual projections
// (attn.c_proj, mlp.c_proj) ~ N(0, 0.02/sqrt(2L)), biases 0, LayerNorm weights 1.
// Deterministic for a seed (Philox4x32-10 + Box-Muller, indexed by tensor and element).
void init_gpt2_random(const ParamTable& table, uint64_t seed, float* host_params);

// Loads every tensor of the table from an HF-named safetensors file (F32/BF16/F16/F64).
// Accepts a "transformer." prefix; ignores attn.bias / attn.masked_bias buffers and a tied
// lm_head.weight. A missing tensor, a shape mismatch or an unexpected tensor is
// Error(Format) naming the file, the tensor and the config key to change.
void load_hf_gpt2(const ParamTable& table, const std::string& path, float* host_params);

// model.init_from: dispatches on the file's content, not its name. A file whose first int32
// is the llm.c model magic 20240326 is an llm.c checkpoint (load_llmc_gpt2); anything else is
// read as safetensors (load_hf_gpt2). A safetensors file cannot be mistaken for llm.c: its
// first 8 bytes are the header length, and a header of exactly 20240326 + k * 2^32 bytes is
// beyond what any GPT-2 safetensors header needs.
void load_init_weights(const ParamTable& table, const std::string& path, float* host_params);

}  // namespace trt
