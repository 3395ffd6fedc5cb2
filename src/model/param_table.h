// The model as data: ModelSpec (family + dimensions + switches) and ParamTable, every
// parameter as a named view into ONE flat fp32 buffer, with its role, its place in the
// decoder (slot, layer) and its flags. Grads and AdamW m/v use the same table over their own
// flat buffers, so the optimizer and checkpoints stream one buffer each.
//
// Families (model/family.h: one row each; docs/ARCHITECTURE.md, "Families"):
//   gpt2   LayerNorm with biases, learned positions (wpe), fused c_attn [C, 3C] and GELU MLP,
//          all with biases, Conv1D weights ([in, out]), head tied to wte. HF GPT2LMHeadModel.
//   llama  RMSNorm, rotary positions, q/k/v/o projections without biases (grouped-query when
//          n_kv_head < n_head), SwiGLU MLP (gate, up, down), head tied or not. Linear weights
//          are [out, in]. HF LlamaForCausalLM.
//   qwen2  llama with biases on q, k and v. HF Qwen2ForCausalLM.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"
#include "model/family.h"
#include "model/rope_tables.h"

namespace trt {

// LoRA adapters beside linear layers (model/lora.h resolves [lora] into this): for each
// targeted linear at (layer, slot), lora_A [rank, in] and lora_B [out, rank] are extra
// parameters, and the layer's output gains scale() * x · Aᵀ · Bᵀ. rank 0: none.
struct LoraSpec {
    int rank = 0;
    float alpha = 0.0f;
    // [L * Slot::kLayerSlots]: 1 where the linear of (layer, slot) has an adapter.
    std::vector<uint8_t> targets;
    float dropout = 0.0f;  // lora.dropout: on each adapter's input while training
    // lora.base_dtype / lora.double_quant: the frozen base kept quantised (QLoRA): the table
    // holds those tensors apart (ParamTable::quantised_tensors), out of the flat buffer.
    BaseDType base_dtype = BaseDType::Fp32;
    bool double_quant = true;
    bool quantised_base() const { return on() && base_dtype != BaseDType::Fp32; }
    bool on() const { return rank > 0; }
    float scale() const { return alpha / static_cast<float>(rank); }  // PEFT: alpha / r
};

struct ModelSpec {
    ModelArch arch = ModelArch::Gpt2;
    int V = 0;     // vocab_size
    int maxT = 0;  // context_length (rows of wpe; positions of the RoPE tables)
    int L = 0;     // n_layer
    int NH = 0;    // n_head
    int NKV = 0;   // key/value heads (== NH unless grouped-query)
    int C = 0;     // d_model
    int head_dim = 0;  // the head size when it is not C / NH (Qwen3's head_dim); 0 = C / NH
    int F = 0;     // MLP hidden width (gpt2: c_fc's output; llama: gate/up's output)
    float norm_eps = 1e-5f;
    float rope_theta = 10000.0f;
    RopeScalingSpec rope_scaling;
    int sliding_window = 0;  // attention span in positions; 0 = the whole causal context
    bool tied = true;  // the head is the token embedding
    // model.dropout (training only): embeddings, attention probabilities, residual branches.
    float dropout = 0.0f;
    // The batches may carry positions (packed examples: ModelDims::documents).
    bool documents = false;
    LoraSpec lora;     // adapters (none by default)

    int hs() const { return head_dim > 0 ? head_dim : C / NH; }  // head size
    int attention_width() const { return NH * hs(); }       // the heads side by side (q, out)
    int qkv_width() const { return (NH + 2 * NKV) * hs(); }  // [q | k | v] per row
    const Family& family() const { return trt::family(arch); }
    // The family's switches (model/family.h), so the decoder reads as the model's equations.
    bool learned_positions() const { return family().learned_positions; }  // wpe, else RoPE
    bool rms_norm() const { return family().rms_norm; }
    bool gated_mlp() const { return family().gated_mlp; }  // SwiGLU [gate | up], else GELU
    bool split_qkv() const { return family().split_qkv; }  // q/k/v_proj tensors, else c_attn
    // Linear weights as stored: [in, out] (HF Conv1D) or [out, in] (nn.Linear).
    WeightLayout linear_layout() const { return family().layout; }
    // The attention ops' shape for B sequences of T positions (no documents, no dropout:
    // the caller sets those for its pass).
    AttentionShape attention_shape(int B, int T) const {
        return AttentionShape::from_heads(B, T, NH, NKV, hs()).with_window(sliding_window);
    }
    // Width of the MLP activation the down projection reads, and of the matmul before it.
    int mlp_up_width() const { return gated_mlp() ? 2 * F : F; }
};

// Specs built in code (tests, tools): every switch at the family's default.
ModelSpec gpt2_spec(int V, int maxT, int L, int NH, int C);  // F = 4C
ModelSpec llama_spec(int V, int maxT, int L, int NH, int NKV, int C, int F, bool tied);

// The model section's spec, defaults resolved (n_kv_head 0 = n_head, d_ff 0 = 4 d_model).
// The config's bounds (config/size_limits.h) keep every field an int and every product of
// them addressable.
ModelSpec model_spec(const ModelConfig& m);
std::string arch_name(const ModelSpec& s);  // the family's model_type: "gpt2", "llama", ...
// One line for logs and `trainrt info`: "llama L2 H4 KV2 C64 F96 V64 T_max64, RoPE theta
// 10000, RMSNorm eps 1e-05, untied head".
std::string describe(const ModelSpec& s);

enum class ParamRole {
    TokenEmbedding, PositionEmbedding, Norm, NormBias, Linear, LinearBias, Head,
    LoraA, LoraB  // a LoRA adapter's down ([r, in]) and up ([out, r]) projections
};
const char* to_string(ParamRole r);

// A linear layer of a block as a matmul: its input and output widths, and where its output
// sits in the fused matmul that computes it (Llama's k_proj: columns [NH*hs, (NH+NKV)*hs) of
// [q | k | v]; up_proj: [F, 2F) of [gate | up]; else 0 of its own output).
struct LinearShape {
    int in = 0, out = 0;
    int fused_width = 0;  // columns of the fused output (== out when not fused)
    int column = 0;       // first column of this layer's output there
};
// For the linear slots (Qkv, Q, K, V, AttnOut, Gate, Up, Down); Error(Internal) otherwise.
LinearShape linear_shape(const ModelSpec& s, Slot slot);

struct ParamTensor {
    std::string name;            // Hugging Face name, e.g. "h.0.attn.c_attn.weight"
    std::vector<int64_t> shape;  // as in HF files (GPT-2 Conv1D weights are [in, out])
    size_t offset = 0;           // in floats, into the flat buffer
    size_t numel = 0;
    size_t padding = 0;          // zero floats stored after the tensor (vocab padding rows)
    ParamRole role = ParamRole::Linear;
    Slot slot = Slot::Qkv;
    int layer = -1;              // -1 for the global tensors
    bool decay = false;          // weight decay applies (tensors with >= 2 dims)
    // false: frozen (train.trainable): no gradient is computed, held or applied for it.
    bool trainable = true;
    // Trainable tensors only: offset in floats into the compact trainable buffers (gradients
    // and AdamW moments), which hold the trainable tensors (and their padding rows) in table
    // order. Equals `offset` while every tensor trains.
    size_t grad_offset = 0;
};

// The vocabulary rounded up to a multiple of kVocabPadding (GPT-2: 50257 -> 50304), so the
// classifier matmul's rows stay aligned for tensor-core kernels (llm.c's padded vocab).
inline constexpr int kVocabPadding = 128;
inline int padded_vocab(int V) { return (V + kVocabPadding - 1) / kVocabPadding * kVocabPadding; }

// Whether a run with a quantised base (LoraSpec::quantised_base) keeps the tensor of this role
// quantised: the blocks' linear weights (in lora.base_dtype), the token embedding and an
// untied head (in bf16). Norms, biases, wpe and the adapters stay in the flat buffer.
inline bool quantised_role(ParamRole role) {
    return role == ParamRole::Linear || role == ParamRole::TokenEmbedding ||
           role == ParamRole::Head;
}

class ParamTable {
public:
    explicit ParamTable(const ModelSpec& spec);
    const ModelSpec& spec() const { return spec_; }
    // The tensors of the flat buffer (and of files: checkpoints hold these).
    const std::vector<ParamTensor>& tensors() const { return tensors_; }
    // The frozen tensors a quantised base keeps out of the flat buffer (model/quantised_base.h
    // holds their values), in HF order: names, shapes, roles, slots and layers as tensors()'
    // would be; offset and grad_offset mean nothing, trainable is false. Empty unless
    // spec().lora.quantised_base().
    const std::vector<ParamTensor>& quantised_tensors() const { return quantised_; }
    // The quantised tensor in `slot` (of `layer`), or nullptr.
    const ParamTensor* quantised(Slot slot, int layer = -1) const;
    // Floats in the flat buffer: the parameters plus the padding rows [V, Vp) that follow the
    // token embedding and an untied head (always zero: no token reads them, their logits get
    // no gradient, so AdamW keeps them at 0). The buffer's embedding and head are [Vp, C]
    // matrices for the classifier matmul; every file (checkpoint, HF export, llm.c import)
    // sees only the [V, C] tensors.
    size_t total() const { return total_; }
    // The model's parameters (no padding), the quantised ones included.
    size_t num_params() const { return num_params_; }
    int padded_vocab() const { return Vp_; }
    // Sets the padding rows of a flat host buffer to 0: every loader and initialiser ends
    // with it, so the invariant "padding is zero" never depends on the caller's buffer.
    void clear_padding(float* host) const;

    // Which tensors train (one flag per tensor, table order; model/trainable.h makes it from
    // train.trainable): sets each tensor's trainable flag and grad_offset. All train at first.
    void set_trainable(const std::vector<bool>& trainable);
    // Floats in the gradient and moment buffers: the trainable tensors with their padding
    // rows (total() while everything trains).
    size_t grad_total() const { return grad_total_; }
    size_t num_trainable_params() const { return num_trainable_; }
    bool all_trainable() const { return num_trainable_ == num_params_; }

    // The tensor in `slot` (of `layer` for per-layer slots) of the flat buffer; nullptr when
    // the family has none (or it is quantised: quantised()).
    const ParamTensor* get(Slot slot, int layer = -1) const;
    // The same, for slots the family must have (Error(Internal) otherwise).
    const ParamTensor& at(Slot slot, int layer = -1) const;
    // The LoRA adapter of the linear in `slot` of `layer`: its lora_A tensor, lora_B being the
    // next one in tensors(); nullptr when that linear has none.
    const ParamTensor* lora_a(Slot slot, int layer) const;
    bool has_lora() const { return spec_.lora.on(); }
    // The output head: the token embedding when tied (of the flat buffer: a quantised head is
    // quantised(head_slot())).
    Slot head_slot() const { return spec_.tied ? Slot::TokenEmbedding : Slot::Head; }
    const ParamTensor& head() const { return at(head_slot()); }
    const ParamTensor* find(const std::string& name) const;  // of the flat buffer
    const ParamTensor* find_quantised(const std::string& name) const;

private:
    ModelSpec spec_;
    std::vector<ParamTensor> tensors_;
    // Tensor index of (slot, layer): layer * kLayerSlots + slot for per-layer slots, then
    // L * kLayerSlots + (slot - kLayerSlots) for the global ones; -1 = the family has none.
    std::vector<int> index_;
    std::vector<int> lora_index_;  // [L * kLayerSlots]: the lora_A tensor's index, or -1
    std::vector<ParamTensor> quantised_;
    std::vector<int> quantised_index_;  // as index_, into quantised_
    size_t total_ = 0;
    size_t num_params_ = 0;
    size_t grad_total_ = 0;
    size_t num_trainable_ = 0;
    int Vp_ = 0;
};

}  // namespace trt
