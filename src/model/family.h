// Model families as data: one row per family (llama.cpp's per-family tables). A row says what
// the decoder switches on, which tensors the family has (slot, Hugging Face name, HF order),
// how its config.json names itself, and PEFT's defaults for it. Everything that differs by
// family reads its row — ParamTable, the decoder's switches, LoRA's target names, PEFT
// adapters, HF import and export — so adding a family that differs by a switch is a row here
// plus its config.json keys (docs/ARCHITECTURE.md, "Add a family").
#pragma once
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"

namespace trt {

// Where a tensor sits in the decoder. Per-layer slots come first. The numbers of the per-layer
// slots key LoRA's dropout masks (model/dropout_sites.h): append, never renumber.
enum class Slot {
    // per layer
    AttnNorm, AttnNormBias,  // ln_1 | input_layernorm
    Qkv, QkvBias,            // gpt2 c_attn (one tensor)
    Q, K, V,                 // q/k/v_proj: adjacent, so [Q; K; V] is one [(NH+2NKV)hs, C]
    AttnOut, AttnOutBias,    // c_proj | o_proj
    MlpNorm, MlpNormBias,    // ln_2 | post_attention_layernorm
    Gate,                    // gate_proj, then Up (up_proj) right after it in the buffer, so
                             //   [gate; up] is one [2F, C] matrix
    Up, UpBias,              // gpt2 c_fc | up_proj
    Down, DownBias,          // mlp.c_proj | down_proj
    QBias, KBias, VBias,     // qwen2 q/k/v_proj biases: adjacent, one [(NH+2NKV)hs] vector
    QNorm, KNorm,            // qwen3 q_norm, k_norm: RMSNorm weights [hs] over each head
    kLayerSlots,
    // global
    TokenEmbedding = kLayerSlots, PositionEmbedding, FinalNorm, FinalNormBias, Head,
    kSlots
};

// A linear layer's weight (Qkv, Q, K, V, AttnOut, Gate, Up, Down): what LoRA can adapt.
bool linear_slot(Slot slot);

// A tensor of a family: its slot and its Hugging Face name (after the layer prefix for a
// per-layer slot, e.g. "self_attn.q_proj.weight" under "model.layers.3.").
struct FamilyTensor {
    Slot slot;
    const char* name;
};

struct Family {
    ModelArch arch;
    const char* model_type;  // model.arch and config.json's "model_type"
    const char* hf_class;    // config.json's "architectures" entry
    // The decoder's switches (docs/ARCHITECTURE.md, "Families").
    bool rms_norm;              // RMSNorm (norm_eps), else LayerNorm with a bias
    bool learned_positions;     // wpe added in the encoder, else RoPE on q and k
    bool gated_mlp;             // silu(x·Wgateᵀ) * (x·Wupᵀ), else gelu(x·W_fc + b)
    bool split_qkv;             // adjacent q/k/v_proj, else one c_attn
    bool qkv_bias;              // q, k and v have biases (c_attn's, or q/k/v_proj's)
    bool qk_norm;               // RMSNorm over each q and k head before RoPE (Qwen3)
    bool linear_bias;           // the other linear layers have biases too (GPT-2)
    bool scaled_residual_init;  // random init of the residual projections: 0.02 / sqrt(2L)
    bool tied_only;             // the head is always the token embedding
    WeightLayout layout;        // linear weights [in, out] (HF Conv1D) or [out, in] (nn.Linear)
    // The prefix HF files may put before every tensor name (GPT2LMHeadModel's "transformer.",
    // absent from GPT2Model files); PEFT's names carry it.
    const char* hf_model_prefix;
    const char* layer_prefix;                 // "h." | "model.layers."
    std::vector<FamilyTensor> before_blocks;  // HF order
    std::vector<FamilyTensor> per_block;      // HF order; stacked tensors adjacent
    std::vector<FamilyTensor> after_blocks;   // the Head row only when the head is untied
    // lora.target_modules when none are given (PEFT's default for the model type).
    std::vector<std::string> default_lora_targets;
};

// The row of a family (every ModelArch has one; its model_type is to_string(arch), so
// config.json's model_type and model.arch read one list: run_config.cpp).
const Family& family(ModelArch arch);

}  // namespace trt
