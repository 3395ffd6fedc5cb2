// Initial GPT-2 weights: a seeded random init, or a Hugging Face GPT-2 safetensors file.
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

}  // namespace trt
