// config.json for GPT2LMHeadModel and LlamaForCausalLM: written with every export and
// checkpoint so the directory loads with transformers' from_pretrained, and read back to
// learn a checkpoint's (or a Hugging Face model folder's) family and dims.
#include <cmath>
#include <cstdio>
#include <limits>

#include "checkpoint/checkpoint_internal.h"
#include "config/hf_model_config.h"
#include "config/size_limits.h"
#include "core/error.h"
#include "io/json_min.h"

namespace trt::ckpt {

namespace {

// Shortest text that reads back as the same float (config.json floats are fp32 values).
std::string float_text(float v) {
    char buf[32];
    for (int digits = 6; digits <= 9; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
        if (std::strtof(buf, nullptr) == v) break;
    }
    std::string s = buf;
    // JSON has no "1e-05" problem, but "10000" must stay a number transformers reads as float.
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
    return s;
}

}  // namespace

std::string hf_config_json(const ModelSpec& s, const std::string& torch_dtype) {
    if (s.llama()) {
        // Field names and defaults follow transformers' LlamaConfig; no rope scaling, no
        // biases, SiLU-gated MLP.
        return cat("{\n",
                   "  \"architectures\": [\"LlamaForCausalLM\"],\n",
                   "  \"model_type\": \"llama\",\n",
                   "  \"vocab_size\": ", s.V, ",\n",
                   "  \"max_position_embeddings\": ", s.maxT, ",\n",
                   "  \"hidden_size\": ", s.C, ",\n",
                   "  \"intermediate_size\": ", s.F, ",\n",
                   "  \"num_hidden_layers\": ", s.L, ",\n",
                   "  \"num_attention_heads\": ", s.NH, ",\n",
                   "  \"num_key_value_heads\": ", s.NKV, ",\n",
                   "  \"head_dim\": ", s.hs(), ",\n",
                   "  \"hidden_act\": \"silu\",\n",
                   "  \"rms_norm_eps\": ", float_text(s.norm_eps), ",\n",
                   "  \"rope_theta\": ", float_text(s.rope_theta), ",\n",
                   "  \"rope_scaling\": null,\n",
                   "  \"attention_bias\": false,\n",
                   "  \"mlp_bias\": false,\n",
                   "  \"attention_dropout\": 0.0,\n",
                   "  \"initializer_range\": 0.02,\n",
                   "  \"tie_word_embeddings\": ", s.tied ? "true" : "false", ",\n",
                   "  \"torch_dtype\": ", json::quote(torch_dtype), "\n",
                   "}\n");
    }
    // Field names and defaults follow transformers' GPT2Config. n_inner null = 4 * n_embd;
    // "gelu_new" is the tanh-approximated GELU the model uses; dropout is 0 because training
    // here never uses it; the output projection is tied to wte.
    return cat("{\n",
               "  \"architectures\": [\"GPT2LMHeadModel\"],\n",
               "  \"model_type\": \"gpt2\",\n",
               "  \"vocab_size\": ", s.V, ",\n",
               "  \"n_positions\": ", s.maxT, ",\n",
               "  \"n_ctx\": ", s.maxT, ",\n",
               "  \"n_embd\": ", s.C, ",\n",
               "  \"n_layer\": ", s.L, ",\n",
               "  \"n_head\": ", s.NH, ",\n",
               "  \"n_inner\": ", s.F == 4 * s.C ? std::string("null") : std::to_string(s.F), ",\n",
               "  \"activation_function\": \"gelu_new\",\n",
               "  \"layer_norm_epsilon\": 1e-05,\n",
               "  \"resid_pdrop\": 0.0,\n",
               "  \"embd_pdrop\": 0.0,\n",
               "  \"attn_pdrop\": 0.0,\n",
               "  \"initializer_range\": 0.02,\n",
               "  \"tie_word_embeddings\": true,\n",
               "  \"torch_dtype\": ", json::quote(torch_dtype), "\n",
               "}\n");
}

ModelSpec parse_hf_config(const std::string& text, const std::string& source) {
    return model_spec(parse_hf_model_config(text, source));
}

std::string shape_diff(const ModelSpec& ck, const ModelSpec& cfg) {
    std::string out;
    const auto add_text = [&](const char* key, const std::string& a, const std::string& b) {
        if (a == b) return;
        if (!out.empty()) out += ", ";
        out += cat("model.", key, " = ", a, " (the config has ", b, ")");
    };
    const auto add = [&](const char* key, double a, double b) {
        if (a != b) add_text(key, cat(a), cat(b));
    };
    add_text("arch", arch_name(ck), arch_name(cfg));
    add("vocab_size", ck.V, cfg.V);
    add("context_length", ck.maxT, cfg.maxT);
    add("n_layer", ck.L, cfg.L);
    add("n_head", ck.NH, cfg.NH);
    add("n_kv_head", ck.NKV, cfg.NKV);
    add("d_model", ck.C, cfg.C);
    add("d_ff", ck.F, cfg.F);
    add("rope_theta", ck.rope_theta, cfg.rope_theta);
    add("norm_eps", ck.norm_eps, cfg.norm_eps);
    if (ck.tied != cfg.tied) add_text("tie_embeddings", ck.tied ? "true" : "false", cfg.tied ? "true" : "false");
    return out;
}

}  // namespace trt::ckpt
