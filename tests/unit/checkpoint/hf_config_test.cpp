// config.json of both families (checkpoint/hf_config.cpp): what libtrainrt writes reads back
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
        {", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}}", "rope_scaling"},
        {", \"attention_bias\": true}", "attention_bias"},
        {", \"mlp_bias\": true}", "mlp_bias"},
        {", \"head_dim\": 128}", "head_dim"},
    };
    for (const auto& u : unsupported) {
        const Error e = parse_error(base + u[0]);
        EXPECT_EQ(e.status(), Status::Unsupported) << u[1];
        EXPECT_THAT(e.what(), HasSubstr(u[1]));
    }
    Error e = parse_error("{\"model_type\": \"mistral\", \"vocab_size\": 8}");
    EXPECT_EQ(e.status(), Status::Unsupported);
    EXPECT_THAT(e.what(), HasSubstr("\"mistral\"; libtrainrt supports \"gpt2\" and \"llama\""));
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
}
