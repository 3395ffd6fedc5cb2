// Initial weights of any family: a seeded random init, a Hugging Face safetensors file
// (GPT-2 or Llama names, as the table has them), or an llm.c GPT-2 checkpoint
// (model/llmc_import.h).
// Both fill a host buffer laid out by ParamTable (the caller copies it to the backend).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "model/param_table.h"

namespace trt {

// Where the values of a table's quantised tensors go (ParamTable::quantised_tensors; a QLoRA
// run's QuantisedBase::set_rows, and their digests): rows [row0, row0 + rows) of t in its
// file's layout (rows x t.shape[1] values), each tensor's rows in order, in pieces of
// QuantisedBase::rows_per_piece rows (a large tensor is never held whole in fp32), then
// forgotten. Every loader below needs one when the table has such tensors (Error(Internal)
// otherwise).
using QuantisedSink =
    std::function<void(const ParamTensor& t, const float* values, int64_t row0, int64_t rows)>;

// Random init as the family's reference code does it: matmul weights and embeddings
// ~ N(0, 0.02), biases 0, norm weights 1; GPT-2 also scales its two residual projections
// (attn.c_proj, mlp.c_proj) to N(0, 0.02/sqrt(2L)) (HF GPT2 / nanoGPT), Llama does not (HF
// LlamaPreTrainedModel). Deterministic for a seed (Philox4x32-10 + Box-Muller, indexed by
// tensor and element).
// A quantised table draws the same values as its unquantised twin (the tensors keep their
// indices) and hands the quantised ones to `sink`.
void init_random(const ParamTable& table, uint64_t seed, float* host_params,
                 const QuantisedSink& sink = {});

// (LoRA adapters, when the table has them: init_lora.)
// Loads every tensor of the table (but LoRA adapters) from an HF-named safetensors file
// (F32/BF16/F16/F64).
// Accepts GPT-2's "transformer." prefix; ignores attn.bias / attn.masked_bias and
// rotary_emb.inv_freq buffers and an lm_head.weight when the head is tied. A missing
// tensor, a shape mismatch or an unexpected tensor is Error(Format) naming the file, the
// tensor and the config key to change.
// The quantised tensors are read one at a time into `sink`.
void load_hf_weights(const ParamTable& table, const std::string& path, float* host_params,
                     const QuantisedSink& sink = {});

// model.init_from: dispatches on the file's content, not its name. A file whose first int32
// is the llm.c model magic 20240326 is an llm.c checkpoint (load_llmc_gpt2), one that starts
// with "GGUF" a llama.cpp model file (load_gguf_weights); anything else is read as
// safetensors (load_hf_weights). A safetensors file cannot be mistaken for llm.c: its
// first 8 bytes are the header length, and a header of exactly 20240326 + k * 2^32 bytes is
// beyond what any GPT-2 safetensors header needs.
void load_init_weights(const ParamTable& table, const std::string& path, float* host_params,
                       const QuantisedSink& sink = {});

// The table without a quantised base (lora.base_dtype as fp32): what files hold.
ModelSpec unquantised_spec(const ModelSpec& spec);

}  // namespace trt
