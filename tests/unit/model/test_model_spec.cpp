// The model as data (model/param_table.h): the spec a config resolves to, and the parameter
// table each family builds from it — HF names and shapes in HF order, roles and flags, the
// adjacency the decoder's stacked matmuls rely on, and the vocabulary padding.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "model/param_table.h"

using namespace trt;

namespace {

std::vector<std::string> names(const ParamTable& t) {
    std::vector<std::string> out;
    for (const ParamTensor& p : t.tensors()) out.push_back(p.name);
    return out;
}

}  // namespace

TEST(ModelSpec, ConfigDefaultsResolvePerFamily) {
    ModelConfig m;  // gpt2, 4 heads, d_model 128
    ModelSpec s = model_spec(m);
    EXPECT_EQ(s.arch, ModelArch::Gpt2);
    EXPECT_EQ(s.NKV, 4);
    EXPECT_EQ(s.F, 512);
    EXPECT_TRUE(s.tied);
    m.arch = ModelArch::Llama;
    m.n_kv_head = 2;
    m.d_ff = 344;
    m.tie_embeddings = false;
    m.rope_theta = 500000.0;
    s = model_spec(m);
    EXPECT_EQ(s.NKV, 2);
    EXPECT_EQ(s.F, 344);
    EXPECT_EQ(s.hs(), 32);
    EXPECT_EQ(s.qkv_width(), (4 + 2 * 2) * 32);
    EXPECT_EQ(s.mlp_up_width(), 688);
    EXPECT_FLOAT_EQ(s.rope_theta, 500000.0f);
    EXPECT_EQ(describe(s), "llama L4 H4 KV2 C128 F344 V256 T_max256, RoPE theta 500000, RMSNorm "
                           "eps 1e-05, untied head");
    EXPECT_EQ(describe(gpt2_spec(50257, 1024, 12, 12, 768)), "gpt2 L12 H12 C768 F3072 V50257 T_max1024");
}

TEST(ParamTable, LlamaNamesShapesAndOrderAreHuggingFaces) {
    const ModelSpec s = llama_spec(11, 6, 2, 4, 2, 8, 12, /*tied=*/false);
    const ParamTable t(s);
    const std::vector<std::string> layer0 = {
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
        "model.layers.0.mlp.gate_proj.weight",    "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.mlp.down_proj.weight",    "model.layers.0.input_layernorm.weight",
        "model.layers.0.post_attention_layernorm.weight"};
    const std::vector<std::string> all = names(t);
    ASSERT_EQ(all.size(), 1 + 2 * 9 + 2u);
    EXPECT_EQ(all.front(), "model.embed_tokens.weight");
    EXPECT_EQ(std::vector<std::string>(all.begin() + 1, all.begin() + 10), layer0);
    EXPECT_EQ(all[all.size() - 2], "model.norm.weight");
    EXPECT_EQ(all.back(), "lm_head.weight");
    // [out, in] shapes; hs = 2, so q is 4*2 rows and k, v 2*2.
    EXPECT_EQ(t.at(Slot::Q, 1).shape, (std::vector<int64_t>{8, 8}));
    EXPECT_EQ(t.at(Slot::K, 1).shape, (std::vector<int64_t>{4, 8}));
    EXPECT_EQ(t.at(Slot::V, 1).shape, (std::vector<int64_t>{4, 8}));
    EXPECT_EQ(t.at(Slot::AttnOut, 1).shape, (std::vector<int64_t>{8, 8}));
    EXPECT_EQ(t.at(Slot::Gate, 1).shape, (std::vector<int64_t>{12, 8}));
    EXPECT_EQ(t.at(Slot::Down, 1).shape, (std::vector<int64_t>{8, 12}));
    EXPECT_EQ(t.at(Slot::Head).shape, (std::vector<int64_t>{11, 8}));
    EXPECT_EQ(t.at(Slot::Q, 1).layer, 1);
    EXPECT_EQ(t.at(Slot::FinalNorm).layer, -1);
    const size_t C = 8, V = 11, L = 2, F = 12;
    EXPECT_EQ(t.num_params(), 2 * V * C + L * (8 * C + 2 * 4 * C + C * 8 + 3 * C * F + 2 * C) + C);
}

TEST(ParamTable, StackedMatmulsFindTheirTensorsAdjacent) {
    const ParamTable t(llama_spec(11, 6, 3, 4, 1, 8, 12, false));
    for (int l = 0; l < 3; ++l) {
        const ParamTensor &q = t.at(Slot::Q, l), &k = t.at(Slot::K, l), &v = t.at(Slot::V, l);
        EXPECT_EQ(k.offset, q.offset + q.numel);  // [q; k; v] is one [(NH+2NKV)hs, C] matrix
        EXPECT_EQ(v.offset, k.offset + k.numel);
        EXPECT_EQ(q.numel + k.numel + v.numel, size_t(t.spec().qkv_width()) * 8);
        const ParamTensor &g = t.at(Slot::Gate, l), &u = t.at(Slot::Up, l);
        EXPECT_EQ(u.offset, g.offset + g.numel);  // [gate; up] is one [2F, C] matrix
    }
}

TEST(ParamTable, RolesFlagsAndMissingSlots) {
    const ParamTable t(llama_spec(11, 6, 1, 2, 2, 8, 12, true));
    for (const ParamTensor& p : t.tensors()) {
        EXPECT_EQ(p.decay, p.shape.size() >= 2) << p.name;
        EXPECT_TRUE(p.trainable) << p.name;
    }
    EXPECT_EQ(t.at(Slot::TokenEmbedding).role, ParamRole::TokenEmbedding);
    EXPECT_EQ(t.at(Slot::AttnNorm, 0).role, ParamRole::Norm);
    EXPECT_EQ(t.at(Slot::Down, 0).role, ParamRole::Linear);
    // No biases, no position embedding, no c_attn, and (tied) no head tensor.
    for (Slot s : {Slot::QkvBias, Slot::AttnOutBias, Slot::UpBias, Slot::DownBias, Slot::Qkv,
                   Slot::AttnNormBias})
        EXPECT_EQ(t.get(s, 0), nullptr);
    EXPECT_EQ(t.get(Slot::PositionEmbedding), nullptr);
    EXPECT_EQ(t.get(Slot::Head), nullptr);
    EXPECT_EQ(&t.head(), &t.at(Slot::TokenEmbedding));
    EXPECT_EQ(t.get(Slot::Q, 1), nullptr);  // layer out of range
    EXPECT_EQ(t.get(Slot::Q, -1), nullptr);
    try {
        (void)t.at(Slot::Head);
        FAIL() << "at() of a missing slot returned";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Internal);
    }
}

TEST(ParamTable, VocabPaddingFollowsEmbeddingAndUntiedHead) {
    for (bool tied : {true, false}) {
        const ParamTable t(llama_spec(11, 6, 1, 2, 2, 8, 12, tied));
        size_t padded = 0, offset = 0;
        for (const ParamTensor& p : t.tensors()) {
            EXPECT_EQ(p.offset, offset) << p.name;
            offset += p.numel + p.padding;
            const bool vocab = p.role == ParamRole::TokenEmbedding || p.role == ParamRole::Head;
            EXPECT_EQ(p.padding, vocab ? (128u - 11u) * 8u : 0u) << p.name;
            padded += p.padding;
        }
        EXPECT_EQ(t.total(), t.num_params() + padded);
        EXPECT_EQ(padded, (tied ? 1u : 2u) * (128u - 11u) * 8u);
        std::vector<float> host(t.total(), 7.0f);
        t.clear_padding(host.data());
        for (const ParamTensor& p : t.tensors()) {
            EXPECT_EQ(host[p.offset + p.numel - 1], 7.0f);
            for (size_t i = 0; i < p.padding; ++i) ASSERT_EQ(host[p.offset + p.numel + i], 0.0f);
        }
    }
}

TEST(ParamTable, Gpt2KeepsItsNamesRolesAndOrder) {
    const ParamTable t(gpt2_spec(11, 6, 1, 2, 8));
    EXPECT_EQ(names(t), (std::vector<std::string>{
                            "wte.weight", "wpe.weight", "h.0.ln_1.weight", "h.0.ln_1.bias",
                            "h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias",
                            "h.0.attn.c_proj.weight", "h.0.attn.c_proj.bias", "h.0.ln_2.weight",
                            "h.0.ln_2.bias", "h.0.mlp.c_fc.weight", "h.0.mlp.c_fc.bias",
                            "h.0.mlp.c_proj.weight", "h.0.mlp.c_proj.bias", "ln_f.weight",
                            "ln_f.bias"}));
    EXPECT_EQ(t.at(Slot::PositionEmbedding).role, ParamRole::PositionEmbedding);
    EXPECT_EQ(t.at(Slot::QkvBias, 0).role, ParamRole::LinearBias);
    EXPECT_EQ(t.at(Slot::AttnNormBias, 0).role, ParamRole::NormBias);
    EXPECT_EQ(&t.head(), &t.at(Slot::TokenEmbedding));
    EXPECT_EQ(t.get(Slot::Q, 0), nullptr);
    EXPECT_EQ(t.get(Slot::Gate, 0), nullptr);
    EXPECT_EQ(t.spec().linear_layout(), WeightLayout::InOut);
}

TEST(ParamTable, CountsAndOffsetsMatchGpt2) {
    ModelSpec s = gpt2_spec(11, 6, 3, 2, 8);
    ParamTable t(s);
    const size_t C = 8, V = 11, T = 6, L = 3;
    const size_t params = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
    EXPECT_EQ(t.num_params(), params);
    // wte is followed by its padding rows up to the padded vocab (11 -> 128).
    EXPECT_EQ(t.padded_vocab(), 128);
    EXPECT_EQ(t.total(), params + (128 - V) * C);
    size_t offset = 0;
    for (const ParamTensor& p : t.tensors()) {
        EXPECT_EQ(p.offset, offset) << p.name;
        offset += p.numel;
        if (p.name == "wte.weight") offset += (128 - V) * C;
        EXPECT_EQ(p.decay, p.shape.size() >= 2) << p.name;
    }
    EXPECT_EQ(t.at(Slot::Up, 2).name, "h.2.mlp.c_fc.weight");
    EXPECT_EQ((t.at(Slot::Up, 2).shape), (std::vector<int64_t>{8, 32}));
    EXPECT_EQ(t.at(Slot::FinalNormBias).name, "ln_f.bias");
    EXPECT_EQ(t.find("h.1.attn.c_attn.bias")->numel, 24u);
    EXPECT_EQ(t.find("nope"), nullptr);
}

// Families as data (model/family.h): every ModelArch has its row, named as config.json and
// model.arch name it, and the row is what the table is built from.
TEST(Family, EveryArchHasItsRow) {
    for (ModelArch a : {ModelArch::Gpt2, ModelArch::Llama, ModelArch::Qwen2, ModelArch::Mistral,
                        ModelArch::Qwen3}) {
        const Family& f = family(a);
        EXPECT_EQ(f.arch, a);
        EXPECT_STREQ(f.model_type, to_string(a));
        for (const FamilyTensor& t : f.per_block)
            EXPECT_LT(static_cast<int>(t.slot), static_cast<int>(Slot::kLayerSlots)) << t.name;
    }
    EXPECT_EQ(model_arch_names(), "\"gpt2\", \"llama\", \"qwen2\", \"mistral\" and \"qwen3\"");
}

// Qwen2: Llama's tensors plus q/k/v_proj biases, adjacent so [bq; bk; bv] is the fused
// matmul's one [(NH+2NKV)hs] bias.
TEST(ParamTable, Qwen2AddsAdjacentQkvBiases) {
    ModelSpec s = llama_spec(11, 6, 2, 4, 2, 8, 12, /*tied=*/true);
    s.arch = ModelArch::Qwen2;
    const ParamTable t(s);
    const ParamTable llama(llama_spec(11, 6, 2, 4, 2, 8, 12, true));
    EXPECT_EQ(t.tensors().size(), llama.tensors().size() + 2 * 3);
    const ParamTensor &q = t.at(Slot::QBias, 1), &k = t.at(Slot::KBias, 1), &v = t.at(Slot::VBias, 1);
    EXPECT_EQ(q.name, "model.layers.1.self_attn.q_proj.bias");
    EXPECT_EQ(k.name, "model.layers.1.self_attn.k_proj.bias");
    EXPECT_EQ(v.name, "model.layers.1.self_attn.v_proj.bias");
    EXPECT_EQ(q.shape, (std::vector<int64_t>{8}));
    EXPECT_EQ(k.shape, (std::vector<int64_t>{4}));
    EXPECT_EQ(k.offset, q.offset + q.numel);
    EXPECT_EQ(v.offset, k.offset + k.numel);
    EXPECT_EQ(q.numel + k.numel + v.numel, size_t(s.qkv_width()));
    EXPECT_EQ(q.role, ParamRole::LinearBias);
    EXPECT_FALSE(q.decay);
    EXPECT_EQ(t.get(Slot::AttnOutBias, 1), nullptr);  // o_proj has none
    EXPECT_EQ(t.num_params(), llama.num_params() + 2 * 16);
    EXPECT_EQ(describe(s), "qwen2 L2 H4 KV2 C8 F12 V11 T_max6, RoPE theta 10000, q/k/v biases, "
                           "RMSNorm eps 1e-05, tied head");
}

// Qwen3: Llama's tensors plus q_norm and k_norm, [hs] each (hs from head_dim).
TEST(ParamTable, Qwen3AddsHeadNorms) {
    ModelSpec s = llama_spec(11, 6, 2, 4, 2, 8, 12, true);
    s.arch = ModelArch::Qwen3;
    s.head_dim = 6;
    const ParamTable t(s);
    const ParamTensor &q = t.at(Slot::QNorm, 1), &k = t.at(Slot::KNorm, 1);
    EXPECT_EQ(q.name, "model.layers.1.self_attn.q_norm.weight");
    EXPECT_EQ(k.name, "model.layers.1.self_attn.k_norm.weight");
    EXPECT_EQ(q.shape, (std::vector<int64_t>{6}));
    EXPECT_EQ(q.role, ParamRole::Norm);
    EXPECT_EQ(t.at(Slot::Q, 0).shape, (std::vector<int64_t>{24, 8}));
    EXPECT_EQ(t.at(Slot::AttnOut, 0).shape, (std::vector<int64_t>{8, 24}));
    EXPECT_EQ(describe(s), "qwen3 L2 H4 KV2 C8 head_dim 6 F12 V11 T_max6, RoPE theta 10000, "
                           "q/k norms, RMSNorm eps 1e-05, tied head");
}

TEST(ModelSpec, RopeScalingComesFromTheConfig) {
    ModelConfig m;
    m.arch = ModelArch::Llama;
    m.rope_scaling = RopeScaling::Llama3;
    m.rope_scaling_factor = 32.0;
    m.rope_original_context = 8192;
    const ModelSpec s = model_spec(m);
    EXPECT_EQ(s.rope_scaling.kind, RopeScaling::Llama3);
    EXPECT_FLOAT_EQ(s.rope_scaling.factor, 32.0f);
    EXPECT_FLOAT_EQ(s.rope_scaling.low_freq_factor, 1.0f);
    EXPECT_FLOAT_EQ(s.rope_scaling.high_freq_factor, 4.0f);
    EXPECT_EQ(s.rope_scaling.original_context, 8192);
    EXPECT_EQ(describe(s), "llama L4 H4 C128 F512 V256 T_max256, RoPE theta 10000 scaled llama3 "
                           "x32 (1..4 of 8192), RMSNorm eps 1e-05, tied head");
}
