// model.init_from naming a GGUF file (llama.cpp's model file, as its convert_hf_to_gguf.py or
// `trainrt export --gguf` writes it): the weights of a table read from it, the inverse of
// model/gguf_model.h. Tensors F32, F16, BF16, Q8_0 or Q4_0, decoded to fp32 as ggml does
// (a Q8_0/Q4_0 base is the quantised model's values, not the original's); GPT-2's matrices
// transposed back to HF's Conv1D [in, out]; Llama/Mistral q and k rows put back in HF's
// rotate-half order. A Llama 3 rope_freqs tensor is checked against the config's
// model.rope_scaling keys (a file's RoPE the config would run differently is refused).
// The shape comes from the file's metadata (config/gguf_model_config.h); the tokenizer does
// not (data.tokenizer names it).
#pragma once
#include <string>

#include "model/model_weights.h"

namespace trt {

// Every tensor of `table` but LoRA adapters from the GGUF file at `path` into host_params
// (the quantised ones a piece of rows at a time into `sink`, as load_hf_weights does). A
// missing tensor, a shape or architecture other than the table's, an unexpected tensor, or a
// rope_freqs other than the config's is Error(Format) naming the file and what to change; a
// tensor type the reader cannot decode is Error(Unsupported).
void load_gguf_weights(const ParamTable& table, const std::string& path, float* host_params,
                       const QuantisedSink& sink = {});

}  // namespace trt
