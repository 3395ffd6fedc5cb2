#include "model/gguf_model.h"

#include <algorithm>

#include "core/error.h"
#include "model/rope_tables.h"

namespace trt {
namespace {

const char* architecture(const ModelSpec& s) {
    switch (s.arch) {
        case ModelArch::Gpt2:
            return "gpt2";
        case ModelArch::Llama:
        case ModelArch::Mistral:
            return "llama";  // llama.cpp's converter: MistralForCausalLM
        case ModelArch::Qwen2:
            return "qwen2";
        case ModelArch::Qwen3:
            return "qwen3";
    }
    fail(Status::Internal, "gguf: no architecture for model arch ", static_cast<int>(s.arch));
}

// llama.cpp's llama rotates adjacent pairs (RoPE "norm"); HF's Llama and Mistral weights are
// laid out for rotate-half, so their q and k rows are reordered. Qwen2/Qwen3 run NEOX RoPE,
// which is rotate-half: their rows stay.
bool reorders_qk(const ModelSpec& s) {
    return s.arch == ModelArch::Llama || s.arch == ModelArch::Mistral;
}

// llama.cpp's name of a slot's tensor (after "blk.N." for a per-layer slot).
const char* tensor_name(Slot slot) {
    switch (slot) {
        case Slot::AttnNorm:
            return "attn_norm.weight";
        case Slot::AttnNormBias:
            return "attn_norm.bias";
        case Slot::Qkv:
            return "attn_qkv.weight";
        case Slot::QkvBias:
            return "attn_qkv.bias";
        case Slot::Q:
            return "attn_q.weight";
        case Slot::K:
            return "attn_k.weight";
        case Slot::V:
            return "attn_v.weight";
        case Slot::QBias:
            return "attn_q.bias";
        case Slot::KBias:
            return "attn_k.bias";
        case Slot::VBias:
            return "attn_v.bias";
        case Slot::QNorm:
            return "attn_q_norm.weight";
        case Slot::KNorm:
            return "attn_k_norm.weight";
        case Slot::AttnOut:
            return "attn_output.weight";
        case Slot::AttnOutBias:
            return "attn_output.bias";
        case Slot::MlpNorm:
            return "ffn_norm.weight";
        case Slot::MlpNormBias:
            return "ffn_norm.bias";
        case Slot::Gate:
            return "ffn_gate.weight";
        case Slot::Up:
            return "ffn_up.weight";
        case Slot::UpBias:
            return "ffn_up.bias";
        case Slot::Down:
            return "ffn_down.weight";
        case Slot::DownBias:
            return "ffn_down.bias";
        case Slot::TokenEmbedding:
            return "token_embd.weight";
        case Slot::PositionEmbedding:
            return "position_embd.weight";
        case Slot::FinalNorm:
            return "output_norm.weight";
        case Slot::FinalNormBias:
            return "output_norm.bias";
        case Slot::Head:
            return "output.weight";
        case Slot::kSlots:
            break;  // a count, never a tensor's slot
    }
    fail(Status::Internal, "gguf: no tensor name for slot ", static_cast<int>(slot));
}

// [rows, cols] -> [cols, rows]
std::vector<float> transposed(const float* x, int64_t rows, int64_t cols) {
    std::vector<float> out(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) out[static_cast<size_t>(c * rows + r)] = x[r * cols + c];
    return out;
}

// Rows of `heads` heads of D rows each (`width` floats a row), each head's rows from HF's
// order (pairs (i, i + D/2)) to ggml's (pairs (2i, 2i + 1)): new row 2i + j = old row
// j·D/2 + i.
std::vector<float> pairs_adjacent(const float* x, int heads, int D, int64_t width) {
    std::vector<float> out(static_cast<size_t>(heads) * D * width);
    const int half = D / 2;
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < half; i++)
            for (int j = 0; j < 2; j++) {
                const float* src = x + (static_cast<int64_t>(h) * D + j * half + i) * width;
                float* dst = out.data() + (static_cast<int64_t>(h) * D + 2 * i + j) * width;
                std::copy(src, src + width, dst);
            }
    return out;
}

}  // namespace

GgufModel gguf_model(const ParamTable& table, const float* params) {
    const ModelSpec& s = table.spec();
    GgufModel m;
    m.architecture = architecture(s);
    if (s.arch == ModelArch::Qwen2 && s.attention_width() != s.C)
        fail(Status::Unsupported,
             "GGUF export: llama.cpp's qwen2 needs n_head x head_dim = "
             "d_model; this Qwen2 has ",
             s.NH, " x ", s.hs(), " = ", s.attention_width(), " over d_model ", s.C);
    const bool llama_rope = m.architecture == std::string("llama");
    if (s.rope_scaling.kind == RopeScaling::Llama3 && !llama_rope)
        fail(Status::Unsupported, "GGUF export: llama.cpp's ", m.architecture,
             " has no Llama 3 RoPE scaling (rope_freqs); this ", arch_name(s), " model uses it");
    const int D = s.hs();
    if (reorders_qk(s) && D % 2 != 0)
        fail(Status::Unsupported, "GGUF export: an odd head size (", D, ") has no RoPE pairs");
    for (const ParamTensor& t : table.tensors()) {
        if (t.role == ParamRole::LoraA || t.role == ParamRole::LoraB)
            fail(Status::InvalidArgument, "GGUF export: '", t.name,
                 "' is a LoRA adapter; a "
                 "model file holds the model with its adapters merged (merge_lora first)");
        GgufModelTensor g;
        g.name = gguf_tensor_name(t);
        g.shape = t.shape;
        g.view = params + t.offset;
        g.keep_f32 =
            t.shape.size() == 1 || t.role == ParamRole::Norm || t.slot == Slot::PositionEmbedding;
        const bool matrix = t.role == ParamRole::Linear && t.shape.size() == 2;
        if (matrix && s.linear_layout() == WeightLayout::InOut) {  // HF Conv1D [in, out]
            g.copy = transposed(g.view, t.shape[0], t.shape[1]);
            g.shape = {t.shape[1], t.shape[0]};
        }
        if (reorders_qk(s) && (t.slot == Slot::Q || t.slot == Slot::K || t.slot == Slot::QBias ||
                               t.slot == Slot::KBias)) {
            const int heads = t.slot == Slot::Q || t.slot == Slot::QBias ? s.NH : s.NKV;
            const int64_t width = t.shape.size() == 2 ? t.shape[1] : 1;
            TRT_CHECK(t.shape[0] == static_cast<int64_t>(heads) * D, t.name);
            g.copy = pairs_adjacent(g.view, heads, D, width);
        }
        m.tensors.push_back(std::move(g));
    }
    if (s.rope_scaling.kind == RopeScaling::Llama3) {
        // llama.cpp divides each pair's frequency by its factor: factor = base / scaled.
        const std::vector<float> base = rope_inv_freq(D, s.rope_theta);
        const std::vector<float> scaled = rope_inv_freq(D, s.rope_theta, s.rope_scaling);
        GgufModelTensor g;
        g.name = "rope_freqs.weight";
        g.shape = {D / 2};
        g.keep_f32 = true;
        g.copy.resize(static_cast<size_t>(D / 2));
        for (size_t i = 0; i < g.copy.size(); i++) g.copy[i] = base[i] / scaled[i];
        m.tensors.push_back(std::move(g));
    }
    if (s.sliding_window > 0 && s.sliding_window < s.maxT)
        m.notes.push_back(cat("llama.cpp's ", m.architecture,
                              " has no sliding window: it will "
                              "attend over the whole context, not the last ",
                              s.sliding_window, " positions this model trained with"));
    return m;
}

GgufModel gguf_lora_adapter(const ParamTable& table, const float* params) {
    const ModelSpec& s = table.spec();
    if (!s.lora.on())
        fail(Status::InvalidArgument,
             "GGUF adapter export: the run has no LoRA adapters "
             "(lora.rank = 0); export the model with --gguf");
    GgufModel m;
    m.architecture = architecture(s);
    const int D = s.hs();
    if (reorders_qk(s) && D % 2 != 0)
        fail(Status::Unsupported, "GGUF export: an odd head size (", D, ") has no RoPE pairs");
    for (const ParamTensor& a : table.tensors()) {
        if (a.role != ParamRole::LoraA) continue;
        const ParamTensor& b = *(&a + 1);  // lora_B follows its lora_A (param_table.h)
        const std::string base = gguf_tensor_name(a);
        GgufModelTensor ga;
        ga.name = base + ".lora_a";
        ga.shape = a.shape;  // [r, in]
        ga.view = params + a.offset;
        GgufModelTensor gb;
        gb.name = base + ".lora_b";
        gb.shape = b.shape;  // [out, r]
        gb.view = params + b.offset;
        if (reorders_qk(s) && (a.slot == Slot::Q || a.slot == Slot::K)) {
            const int heads = a.slot == Slot::Q ? s.NH : s.NKV;
            TRT_CHECK(b.shape[0] == static_cast<int64_t>(heads) * D, b.name);
            gb.copy = pairs_adjacent(gb.view, heads, D, b.shape[1]);
        }
        m.tensors.push_back(std::move(ga));
        m.tensors.push_back(std::move(gb));
    }
    return m;
}

std::string gguf_architecture(const ModelSpec& spec) { return architecture(spec); }

std::string gguf_tensor_name(const ParamTensor& t) {
    return (t.layer >= 0 ? cat("blk.", t.layer, ".") : std::string()) + tensor_name(t.slot);
}

bool gguf_reorders_qk(const ModelSpec& spec) { return reorders_qk(spec); }

int64_t gguf_qk_row(int64_t hf_row, int D) {
    const int half = D / 2;
    const int64_t head = hf_row / D, within = hf_row % D;
    return head * D + 2 * (within % half) + within / half;  // old row j·D/2 + i -> 2i + j
}

void add_gguf_hyperparameters(gguf::Writer& w, const ModelSpec& s) {
    const std::string a = architecture(s);
    w.add_string("general.architecture", a);
    const auto u32 = [](int v) { return static_cast<uint32_t>(v); };
    w.add_u32(a + ".context_length", u32(s.maxT));
    w.add_u32(a + ".embedding_length", u32(s.C));
    w.add_u32(a + ".block_count", u32(s.L));
    w.add_u32(a + ".feed_forward_length", u32(s.F));
    w.add_u32(a + ".attention.head_count", u32(s.NH));
    // What sizes the embedding when the file has no tokenizer ("no_vocab").
    w.add_u32(a + ".vocab_size", u32(s.V));
    if (s.arch == ModelArch::Gpt2) {
        w.add_f32(a + ".attention.layer_norm_epsilon", s.norm_eps);
        return;
    }
    w.add_u32(a + ".attention.head_count_kv", u32(s.NKV));
    w.add_f32(a + ".attention.layer_norm_rms_epsilon", s.norm_eps);
    w.add_f32(a + ".rope.freq_base", s.rope_theta);
    if (a == "llama") {
        w.add_u32(a + ".rope.dimension_count", u32(s.hs()));  // llama.cpp: must be key_length
    }
    if (s.hs() * s.NH != s.C) {  // llama.cpp's default is d_model / n_head
        w.add_u32(a + ".attention.key_length", u32(s.hs()));
        w.add_u32(a + ".attention.value_length", u32(s.hs()));
    }
    if (s.rope_scaling.kind == RopeScaling::Linear) {
        w.add_string(a + ".rope.scaling.type", "linear");
        w.add_f32(a + ".rope.scaling.factor", s.rope_scaling.factor);
    }
}

}  // namespace trt
