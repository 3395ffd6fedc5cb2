// A trained model as one GGUF file that llama.cpp and Ollama load (docs/FORMATS.md §6): the
// model's tensors and hyper-parameters (model/gguf_model.h), its tokenizer, chat template and
// end-of-turn token as llama.cpp reads them, in the file type asked for.
//
// Tokenizer (tokenizer.ggml.*): a byte-level BPE tokenizer.json is llama.cpp's "gpt2" model
// (tokens in their byte-level form, merges "a b", the pre-tokenizer named by its regex: GPT-2's
// "gpt-2", Llama 3's "llama-bpe", Qwen2's "qwen2", another "default" with a note); a
// SentencePiece tokenizer.model is "llama" (pieces, scores, types). The token list has exactly
// the model's vocab_size entries (ids the tokenizer does not use are "[PAD<id>]", UNUSED).
// Special ids come from tokenizer_config.json (bos/eos/unk/pad), else the SentencePiece
// model's own, else the end-of-text token prepare opened documents with (a BPE's bos = its
// eos); a token the config names and the tokenizer lacks is refused. add_bos/add_eos are the
// config's, else false: this project's tokenizers add no BOS, so a model trained here never
// saw one (llama.cpp's default would prepend it). The folder's end-of-turn ids
// (generation_config.json, else its eos) are CONTROL; eot_token_id is the first that is not
// the eos (one llama.cpp knows as an end of turn preferred), eom_token_id <|eom_id|>; a note
// names those llama.cpp will not stop at. The chat template is tokenizer.chat_template.
// Without a tokenizer the file says "no_vocab" (<arch>.vocab_size sizes the embedding):
// llama.cpp runs it on token ids only.
#pragma once
#include <string>
#include <vector>

#include "io/ggml_blocks.h"
#include "model/param_table.h"

namespace trt {
namespace tok {
struct TokenizerFiles;
}

// "f32", "f16", "bf16", "q8_0" (Error(InvalidArgument) for another).
gguf::TensorType parse_gguf_type(const std::string& name);

struct GgufExportResult {
    size_t tensors = 0;
    // What the file does not keep, or keeps otherwise than asked (a matrix that is not whole
    // Q8_0 blocks written F16, a pre-tokenizer llama.cpp does not know): one line each.
    std::vector<std::string> notes;
};

// Writes `path` (atomically) from `table` (no LoRA adapters: merge first) and its parameters;
// `tokenizer` may be null; `name` becomes general.name.
GgufExportResult export_gguf(const std::string& path, const ParamTable& table, const float* params,
                             gguf::TensorType type, const tok::TokenizerFiles* tokenizer,
                             const std::string& name);

// A LoRA run's adapters as llama.cpp's adapter file (model/gguf_model.h gguf_lora_adapter):
// general.type "adapter", general.architecture, adapter.type "lora", adapter.lora.alpha
// (FLOAT32), the adapter tensors in `type` (a B whose rank is not whole Q8_0 blocks written
// F16). The base it goes with is the model the run trained on (model.init_from), as a GGUF of
// its own; the notes say so.
GgufExportResult export_gguf_lora(const std::string& path, const ParamTable& table,
                                  const float* params, gguf::TensorType type,
                                  const std::string& name);

}  // namespace trt
