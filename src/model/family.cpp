#include "model/family.h"

#include "core/error.h"

namespace trt {

namespace {

// The blocks of the Llama-shaped families (HF LlamaForCausalLM order), with or without
// q/k/v biases after the stacked q/k/v weights, and q/k norms after o_proj.
std::vector<FamilyTensor> llama_block(bool qkv_bias, bool qk_norm) {
    std::vector<FamilyTensor> t = {
        {Slot::Q, "self_attn.q_proj.weight"},
        {Slot::K, "self_attn.k_proj.weight"},
        {Slot::V, "self_attn.v_proj.weight"},
    };
    if (qkv_bias)
        t.insert(t.end(), {{Slot::QBias, "self_attn.q_proj.bias"},
                           {Slot::KBias, "self_attn.k_proj.bias"},
                           {Slot::VBias, "self_attn.v_proj.bias"}});
    t.push_back({Slot::AttnOut, "self_attn.o_proj.weight"});
    if (qk_norm)
        t.insert(t.end(), {{Slot::QNorm, "self_attn.q_norm.weight"},
                           {Slot::KNorm, "self_attn.k_norm.weight"}});
    t.insert(t.end(), {{Slot::Gate, "mlp.gate_proj.weight"},
                       {Slot::Up, "mlp.up_proj.weight"},
                       {Slot::Down, "mlp.down_proj.weight"},
                       {Slot::AttnNorm, "input_layernorm.weight"},
                       {Slot::MlpNorm, "post_attention_layernorm.weight"}});
    return t;
}

Family llama_like(ModelArch arch, const char* model_type, const char* hf_class, bool qkv_bias,
                  bool qk_norm = false) {
    Family f{};
    f.arch = arch;
    f.model_type = model_type;
    f.hf_class = hf_class;
    f.rms_norm = true;
    f.learned_positions = false;
    f.gated_mlp = true;
    f.split_qkv = true;
    f.qkv_bias = qkv_bias;
    f.qk_norm = qk_norm;
    f.linear_bias = false;
    f.scaled_residual_init = false;
    f.tied_only = false;
    f.layout = WeightLayout::OutIn;
    f.hf_model_prefix = "";
    f.layer_prefix = "model.layers.";
    f.before_blocks = {{Slot::TokenEmbedding, "model.embed_tokens.weight"}};
    f.per_block = llama_block(qkv_bias, qk_norm);
    f.after_blocks = {{Slot::FinalNorm, "model.norm.weight"}, {Slot::Head, "lm_head.weight"}};
    f.default_lora_targets = {"q_proj", "v_proj"};
    return f;
}

Family gpt2_family() {
    Family f{};
    f.arch = ModelArch::Gpt2;
    f.model_type = "gpt2";
    f.hf_class = "GPT2LMHeadModel";
    f.rms_norm = false;
    f.learned_positions = true;
    f.gated_mlp = false;
    f.split_qkv = false;
    f.qkv_bias = true;
    f.qk_norm = false;
    f.linear_bias = true;
    f.scaled_residual_init = true;
    f.tied_only = true;
    f.layout = WeightLayout::InOut;
    f.hf_model_prefix = "transformer.";
    f.layer_prefix = "h.";
    // GPT2LMHeadModel's order without the "transformer." prefix.
    f.before_blocks = {{Slot::TokenEmbedding, "wte.weight"},
                       {Slot::PositionEmbedding, "wpe.weight"}};
    f.per_block = {
        {Slot::AttnNorm, "ln_1.weight"},       {Slot::AttnNormBias, "ln_1.bias"},
        {Slot::Qkv, "attn.c_attn.weight"},     {Slot::QkvBias, "attn.c_attn.bias"},
        {Slot::AttnOut, "attn.c_proj.weight"}, {Slot::AttnOutBias, "attn.c_proj.bias"},
        {Slot::MlpNorm, "ln_2.weight"},        {Slot::MlpNormBias, "ln_2.bias"},
        {Slot::Up, "mlp.c_fc.weight"},         {Slot::UpBias, "mlp.c_fc.bias"},
        {Slot::Down, "mlp.c_proj.weight"},     {Slot::DownBias, "mlp.c_proj.bias"},
    };
    f.after_blocks = {{Slot::FinalNorm, "ln_f.weight"}, {Slot::FinalNormBias, "ln_f.bias"}};
    f.default_lora_targets = {"c_attn"};
    return f;
}

// Indexed by ModelArch.
const std::vector<Family>& families() {
    static const std::vector<Family> rows = {
        gpt2_family(),
        llama_like(ModelArch::Llama, "llama", "LlamaForCausalLM", false),
        // Qwen2 / Qwen2.5: Llama with biases on q, k and v (Qwen2Attention).
        llama_like(ModelArch::Qwen2, "qwen2", "Qwen2ForCausalLM", true),
        // Mistral: Llama's tensors and equations; its sliding window is a [model] key.
        llama_like(ModelArch::Mistral, "mistral", "MistralForCausalLM", false),
        // Qwen3: Llama with RMSNorm over each q and k head before RoPE (Qwen3Attention's
        // q_norm, k_norm), usually with a head_dim other than d_model / n_head.
        llama_like(ModelArch::Qwen3, "qwen3", "Qwen3ForCausalLM", false, /*qk_norm=*/true),
    };
    return rows;
}

}  // namespace

bool linear_slot(Slot slot) {
    switch (slot) {
        case Slot::Qkv: case Slot::Q: case Slot::K: case Slot::V: case Slot::AttnOut:
        case Slot::Gate: case Slot::Up: case Slot::Down: return true;
        default: return false;
    }
}

const Family& family(ModelArch arch) {
    const auto& rows = families();
    const size_t i = static_cast<size_t>(arch);
    TRT_CHECK(i < rows.size() && rows[i].arch == arch, "family: no row for model arch ",
              static_cast<int>(arch));
    return rows[i];
}

}  // namespace trt
