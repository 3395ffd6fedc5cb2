// A model of any family as llama.cpp's GGUF holds it (docs/FORMATS.md §6, "The model"): the
// architecture llama.cpp knows it by, its hyper-parameter keys, and every tensor under
// llama.cpp's name, in llama.cpp's layout. One row per slot, like llama.cpp's per-architecture
// tables; what differs by family is said in the row.
//
//   family   GGUF arch  layout changes
//   gpt2     gpt2       Conv1D weights [in, out] transposed to [out, in]
//   llama    llama      q and k rows reordered per head (HF's rotate-half pairs (i, i + D/2)
//                       -> ggml's adjacent pairs (2i, 2i + 1)); Llama 3 RoPE as rope_freqs
//   mistral  llama      as llama; llama.cpp's llama has no sliding window (a note says so)
//   qwen2    qwen2      none (NEOX RoPE: HF's pairs)
//   qwen3    qwen3      none; key/value_length when head_dim != d_model / n_head
//
// A tied head writes no output.weight (llama.cpp shares token_embd); LoRA adapters are not
// part of a model file (the export merges them first). 1-D tensors, norms and GPT-2's position
// embedding are F32 in any file type, as llama.cpp's converter keeps them.
#pragma once
#include <string>
#include <vector>

#include "io/gguf_writer.h"
#include "model/param_table.h"

namespace trt {

struct GgufModelTensor {
    std::string name;            // "blk.3.attn_q.weight"
    std::vector<int64_t> shape;  // PyTorch order, outermost first (the writer reverses it)
    bool keep_f32 = false;       // stays F32 whatever the file's type
    // The values: a view of the parameters, or a re-laid-out copy of them.
    const float* view = nullptr;
    std::vector<float> copy;
    const float* values() const { return copy.empty() ? view : copy.data(); }
};

struct GgufModel {
    std::string architecture;              // general.architecture
    std::vector<GgufModelTensor> tensors;  // in the table's order (rope_freqs last)
    // What the file does not keep of the model, for the user ("" lines never).
    std::vector<std::string> notes;
};

// The model of `table` (no LoRA adapters: merge first) with its parameters `params` (the flat
// buffer, kept alive by the caller while the result is used). Error(Unsupported) for a model
// llama.cpp's architecture cannot hold (Qwen2 with head_dim * n_head != d_model, a RoPE scaling
// the architecture has no key or tensor for).
GgufModel gguf_model(const ParamTable& table, const float* params);

// A LoRA run's adapters as llama.cpp's adapter file holds them (its convert_lora_to_gguf.py;
// `llama-cli -m BASE.gguf --lora FILE`): per adapted linear, "<its tensor's name>.lora_a" =
// PEFT's lora_A [r, in] (ne [in, r]) and ".lora_b" = lora_B [out, r] (ne [r, out]), as they
// are (GPT-2's too: PEFT's A and B are plain [r, in], [out, r] over Conv1D); a Llama/Mistral
// q or k adapter's B rows reordered per head as the base's q/k rows are. The scale is
// adapter.lora.alpha / r, as ours. Error(InvalidArgument) for a table without adapters.
GgufModel gguf_lora_adapter(const ParamTable& table, const float* params);

// llama.cpp's name of a model's architecture ("llama" for Mistral too).
std::string gguf_architecture(const ModelSpec& spec);

// llama.cpp's name of a table tensor ("blk.3.attn_q.weight"; LoRA adapters: their base's).
std::string gguf_tensor_name(const ParamTensor& t);

// Whether the family's q and k rows (and biases) are reordered per head in a GGUF file
// (Llama, Mistral: HF's rotate-half pairs -> ggml's adjacent pairs).
bool gguf_reorders_qk(const ModelSpec& spec);

// The reordering's row map: row `hf_row` of an HF q/k tensor of heads of D rows is row
// gguf_qk_row(hf_row, D) of the GGUF tensor.
int64_t gguf_qk_row(int64_t hf_row, int D);

// The architecture's hyper-parameter keys (`<arch>.context_length`, ... with the types
// llama.cpp reads: counts UINT32, epsilons and RoPE's base FLOAT32), general.architecture
// first.
void add_gguf_hyperparameters(gguf::Writer& w, const ModelSpec& spec);

}  // namespace trt
