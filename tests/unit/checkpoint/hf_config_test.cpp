// config.json of every family (checkpoint/hf_config.cpp): what libtrainrt writes reads back
// as the same spec; transformers' defaults apply to missing keys; what the decoder cannot
// run (rope scaling, biases, other activations, other model types) is refused by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "checkpoint/checkpoint_internal.h"
#include "core/error.h"

using namespace trt;
using ::testing::HasSubstr;

namespace {

void expect_same(const ModelSpec& a, const ModelSpec& b) {
    EXPECT_EQ(ckpt::shape_diff(a, b), "");
    EXPECT_EQ(a.arch, b.arch);
    EXPECT_EQ(a.tied, b.tied);
    EXPECT_EQ(a.NKV, b.NKV);
    EXPECT_EQ(a.F, b.F);
    EXPECT_TRUE(a.rope_scaling == b.rope_scaling);
}

Error parse_error(const std::string& json) {
    try {
        (void)ckpt::parse_hf_config(json, "config.json");
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "accepted: " << json;
    return Error(Status::Internal, "");
}

const char* kLlama =
    "{\"model_type\": \"llama\", \"vocab_size\": 49152, \"hidden_size\": 576, "
    "\"intermediate_size\": 1536, \"num_hidden_layers\": 30, \"num_attention_heads\": 9, "
    "\"num_key_value_heads\": 3, \"max_position_embeddings\": 2048, "
    "\"rope_theta\": 10000.0, \"tie_word_embeddings\": true";

}  // namespace

TEST(HfConfig, BothFamiliesRoundTrip) {
    ModelSpec llama = llama_spec(49152, 2048, 30, 9, 3, 576, 1536, true);
    llama.norm_eps = 1e-5f;
    llama.rope_theta = 100000.0f;
    expect_same(ckpt::parse_hf_config(ckpt::hf_config_json(llama, "float32"), "c"), llama);
    llama.tied = false;
    llama.norm_eps = 1e-6f;
    expect_same(ckpt::parse_hf_config(ckpt::hf_config_json(llama, "bfloat16"), "c"), llama);
    const ModelSpec gpt2 = gpt2_spec(50257, 1024, 12, 12, 768);
    expect_same(ckpt::parse_hf_config(ckpt::hf_config_json(gpt2, "float32"), "c"), gpt2);
    ModelSpec wide = gpt2;
    wide.F = 2048;  // n_inner
    EXPECT_THAT(ckpt::hf_config_json(wide, "float32"), HasSubstr("\"n_inner\": 2048"));
    expect_same(ckpt::parse_hf_config(ckpt::hf_config_json(wide, "float32"), "c"), wide);
    // Llama 3.1's rope_scaling, and linear; Qwen2 (its biases are the model type's).
    llama.rope_theta = 500000.0f;
    llama.rope_scaling = {RopeScaling::Llama3, 32.0f, 1.0f, 4.0f, 8192};
    const std::string l3 = ckpt::hf_config_json(llama, "bfloat16");
    EXPECT_THAT(l3, HasSubstr("\"rope_scaling\": {\"rope_type\": \"llama3\", \"type\": \"llama3\", "
                              "\"factor\": 32.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": "
                              "4.0, \"original_max_position_embeddings\": 8192}"));
    expect_same(ckpt::parse_hf_config(l3, "c"), llama);
    llama.rope_scaling = {RopeScaling::Linear, 2.5f, 1.0f, 4.0f, 0};
    expect_same(ckpt::parse_hf_config(ckpt::hf_config_json(llama, "float32"), "c"), llama);
    ModelSpec qwen2 = llama_spec(151936, 32768, 24, 14, 2, 896, 4864, true);
    qwen2.arch = ModelArch::Qwen2;
    const std::string q = ckpt::hf_config_json(qwen2, "bfloat16");
    EXPECT_THAT(q, HasSubstr("\"architectures\": [\"Qwen2ForCausalLM\"]"));
    EXPECT_THAT(q, HasSubstr("\"model_type\": \"qwen2\""));
    EXPECT_THAT(q, HasSubstr("\"use_sliding_window\": false"));
    expect_same(ckpt::parse_hf_config(q, "c"), qwen2);
    ModelSpec mistral = llama_spec(32768, 32768, 32, 32, 8, 4096, 14336, false);
    mistral.arch = ModelArch::Mistral;
    std::string m = ckpt::hf_config_json(mistral, "bfloat16");
    EXPECT_THAT(m, HasSubstr("\"architectures\": [\"MistralForCausalLM\"]"));
    EXPECT_THAT(m, HasSubstr("\"sliding_window\": null"));
    expect_same(ckpt::parse_hf_config(m, "c"), mistral);
    mistral.sliding_window = 4096;
    m = ckpt::hf_config_json(mistral, "bfloat16");
    EXPECT_THAT(m, HasSubstr("\"sliding_window\": 4096"));
    EXPECT_EQ(ckpt::parse_hf_config(m, "c").sliding_window, 4096);
    EXPECT_EQ(ParamTable(mistral).num_params(), 7248023552u);  // Mistral 7B v0.3, published
    // head_dim: heads NH * head_dim wide, not hidden_size (Qwen3-0.6B's 16 x 128 over 1024).
    ModelSpec wide_heads = llama_spec(1000, 512, 2, 16, 8, 1024, 3072, true);
    wide_heads.head_dim = 128;
    const std::string w = ckpt::hf_config_json(wide_heads, "float32");
    EXPECT_THAT(w, HasSubstr("\"head_dim\": 128"));
    const ModelSpec back = ckpt::parse_hf_config(w, "c");
    expect_same(back, wide_heads);
    EXPECT_EQ(back.attention_width(), 2048);
    EXPECT_EQ(ParamTable(back).at(Slot::Q, 0).shape, (std::vector<int64_t>{2048, 1024}));
    EXPECT_EQ(ParamTable(back).at(Slot::AttnOut, 0).shape, (std::vector<int64_t>{1024, 2048}));
    // Qwen3-0.6B's config.json (the keys that matter): q/k norms, head_dim 128 over 1024.
    const ModelSpec q3 = ckpt::parse_hf_config(
        "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", "
        "\"vocab_size\": 151936, \"hidden_size\": 1024, \"intermediate_size\": 3072, "
        "\"num_hidden_layers\": 28, \"num_attention_heads\": 16, \"num_key_value_heads\": 8, "
        "\"head_dim\": 128, \"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, "
        "\"rope_theta\": 1000000, \"rope_scaling\": null, \"attention_bias\": false, "
        "\"use_sliding_window\": false, \"sliding_window\": null, \"max_window_layers\": 28, "
        "\"tie_word_embeddings\": true, \"hidden_act\": \"silu\"}",
        "config.json");
    EXPECT_EQ(q3.arch, ModelArch::Qwen3);
    EXPECT_EQ(q3.head_dim, 128);
    EXPECT_EQ(ParamTable(q3).num_params(), 596049920u);  // Qwen3-0.6B, published
    const std::string q3_json = ckpt::hf_config_json(q3, "bfloat16");
    EXPECT_THAT(q3_json, HasSubstr("\"architectures\": [\"Qwen3ForCausalLM\"]"));
    expect_same(ckpt::parse_hf_config(q3_json, "c"), q3);
    // A head_dim equal to hidden_size / heads is the plain model.
    EXPECT_EQ(ckpt::parse_hf_config(std::string(kLlama) + ", \"head_dim\": 64}", "c").head_dim, 0);
}

// Llama 3.2 1B's config.json as published (the keys that matter), and Qwen2.5 0.5B's.
TEST(HfConfig, Llama32AndQwen25ConfigsRead) {
    ModelSpec s = ckpt::parse_hf_config(
        "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
        "\"vocab_size\": 128256, \"hidden_size\": 2048, \"intermediate_size\": 8192, "
        "\"num_hidden_layers\": 16, \"num_attention_heads\": 32, \"num_key_value_heads\": 8, "
        "\"head_dim\": 64, \"max_position_embeddings\": 131072, \"rms_norm_eps\": 1e-05, "
        "\"rope_theta\": 500000.0, \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": "
        "4.0, \"low_freq_factor\": 1.0, \"original_max_position_embeddings\": 8192, "
        "\"rope_type\": \"llama3\"}, \"tie_word_embeddings\": true, \"attention_bias\": false, "
        "\"mlp_bias\": false, \"hidden_act\": \"silu\"}",
        "config.json");
    EXPECT_EQ(s.arch, ModelArch::Llama);
    EXPECT_EQ(s.rope_scaling.kind, RopeScaling::Llama3);
    EXPECT_FLOAT_EQ(s.rope_scaling.factor, 32.0f);
    EXPECT_FLOAT_EQ(s.rope_scaling.low_freq_factor, 1.0f);
    EXPECT_FLOAT_EQ(s.rope_scaling.high_freq_factor, 4.0f);
    EXPECT_EQ(s.rope_scaling.original_context, 8192);
    EXPECT_EQ(ParamTable(s).num_params(), 1235814400u);  // Llama 3.2 1B, published
    s = ckpt::parse_hf_config(
        "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", "
        "\"vocab_size\": 151936, \"hidden_size\": 896, \"intermediate_size\": 4864, "
        "\"num_hidden_layers\": 24, \"num_attention_heads\": 14, \"num_key_value_heads\": 2, "
        "\"max_position_embeddings\": 32768, \"max_window_layers\": 21, \"rms_norm_eps\": 1e-06, "
        "\"rope_theta\": 1000000.0, \"sliding_window\": 32768, \"tie_word_embeddings\": true, "
        "\"use_sliding_window\": false, \"hidden_act\": \"silu\", \"rope_scaling\": null}",
        "config.json");
    EXPECT_EQ(s.arch, ModelArch::Qwen2);
    EXPECT_EQ(s.rope_scaling.kind, RopeScaling::None);
    EXPECT_EQ(ParamTable(s).num_params(), 494032768u);  // Qwen2.5 0.5B, published
    // The old spelling "type" reads the same; "default" is no scaling.
    s = ckpt::parse_hf_config(std::string(kLlama) +
                                  ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 4}}",
                              "config.json");
    EXPECT_EQ(s.rope_scaling.kind, RopeScaling::Linear);
    EXPECT_FLOAT_EQ(s.rope_scaling.factor, 4.0f);
    s = ckpt::parse_hf_config(std::string(kLlama) + ", \"rope_scaling\": {\"rope_type\": \"default\"}}",
                              "config.json");
    EXPECT_EQ(s.rope_scaling.kind, RopeScaling::None);
}

TEST(HfConfig, SmolLmShapedConfigReads) {
    const ModelSpec s = ckpt::parse_hf_config(
        std::string(kLlama) + ", \"rms_norm_eps\": 1e-05, \"hidden_act\": \"silu\"}", "config.json");
    EXPECT_EQ(s.arch, ModelArch::Llama);
    EXPECT_EQ(s.C, 576);
    EXPECT_EQ(s.NH, 9);
    EXPECT_EQ(s.NKV, 3);
    EXPECT_EQ(s.F, 1536);
    EXPECT_EQ(s.L, 30);
    EXPECT_TRUE(s.tied);
    EXPECT_FLOAT_EQ(s.norm_eps, 1e-5f);
}

TEST(HfConfig, LlamaDefaultsAreTransformers) {
    const ModelSpec s = ckpt::parse_hf_config(
        "{\"model_type\": \"llama\", \"vocab_size\": 32000, \"hidden_size\": 64, "
        "\"intermediate_size\": 172, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
        "\"max_position_embeddings\": 128}",
        "config.json");
    EXPECT_EQ(s.NKV, 4);                // num_key_value_heads = num_attention_heads
    EXPECT_FLOAT_EQ(s.norm_eps, 1e-6f);  // LlamaConfig.rms_norm_eps
    EXPECT_FLOAT_EQ(s.rope_theta, 10000.0f);
    EXPECT_FALSE(s.tied);                // LlamaConfig.tie_word_embeddings
}

TEST(HfConfig, WhatTheDecoderCannotRunIsRefusedByName) {
    const std::string base = kLlama;
    const char* const unsupported[][2] = {
        {", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}", "\"yarn\""},
        {", \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2.0}}", "\"dynamic\""},
        {", \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0, "
         "\"attention_factor\": 0.5}}", "attention_factor"},
        {", \"attention_bias\": true}", "attention_bias"},
        {", \"mlp_bias\": true}", "mlp_bias"},
    };
    for (const auto& u : unsupported) {
        const Error e = parse_error(base + u[0]);
        EXPECT_EQ(e.status(), Status::Unsupported) << u[1];
        EXPECT_THAT(e.what(), HasSubstr(u[1]));
    }
    Error e = parse_error("{\"model_type\": \"gemma3_text\", \"vocab_size\": 8}");
    EXPECT_EQ(e.status(), Status::Unsupported);
    e = parse_error("{\"model_type\": \"gemma3_text\", \"vocab_size\": 8}");
    EXPECT_THAT(e.what(), HasSubstr("\"gemma3_text\"; libtrainrt supports \"gpt2\", \"llama\", "
                                    "\"qwen2\", \"mistral\" and \"qwen3\""));
    std::string qwen2 = kLlama;
    qwen2.replace(qwen2.find("\"llama\""), 7, "\"qwen2\"");
    e = parse_error(qwen2 + ", \"use_sliding_window\": true}");
    EXPECT_EQ(e.status(), Status::Unsupported);
    EXPECT_THAT(e.what(), HasSubstr("use_sliding_window"));
    e = parse_error(base + ", \"hidden_act\": \"gelu\"}");
    EXPECT_THAT(e.what(), HasSubstr("hidden_act"));
}

TEST(HfConfig, MalformedLlamaDimsAreFormatErrors) {
    Error e = parse_error(
        "{\"model_type\": \"llama\", \"vocab_size\": 8, \"hidden_size\": 64, "
        "\"intermediate_size\": 172, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
        "\"num_key_value_heads\": 3, \"max_position_embeddings\": 128}");
    EXPECT_EQ(e.status(), Status::Format);
    EXPECT_THAT(e.what(), HasSubstr("do not form even, whole heads"));
    e = parse_error(
        "{\"model_type\": \"llama\", \"vocab_size\": 8, \"hidden_size\": 64, "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"max_position_embeddings\": 128}");
    EXPECT_THAT(e.what(), HasSubstr("\"intermediate_size\" is missing"));
    e = parse_error(std::string(kLlama) + ", \"rms_norm_eps\": -1}");
    EXPECT_THAT(e.what(), HasSubstr("rms_norm_eps"));
    // A llama3 rope_scaling without its band, or with it upside down.
    e = parse_error(std::string(kLlama) + ", \"rope_scaling\": {\"rope_type\": \"llama3\", "
                    "\"factor\": 8.0}}");
    EXPECT_EQ(e.status(), Status::Format);
    EXPECT_THAT(e.what(), HasSubstr("needs \"low_freq_factor\""));
    e = parse_error(std::string(kLlama) + ", \"rope_scaling\": {\"rope_type\": \"llama3\", "
                    "\"factor\": 8.0, \"low_freq_factor\": 4, \"high_freq_factor\": 1, "
                    "\"original_max_position_embeddings\": 8192}}");
    EXPECT_THAT(e.what(), HasSubstr("\"high_freq_factor\" must be above"));
    e = parse_error(std::string(kLlama) + ", \"rope_scaling\": [1]}");
    EXPECT_THAT(e.what(), HasSubstr("must be an object or null"));
}
