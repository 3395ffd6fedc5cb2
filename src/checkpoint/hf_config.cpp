// config.json for GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM and
// MistralForCausalLM: written with every export and
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

// config.json's rope_scaling: null, or the object transformers reads ("rope_type" and the
// older "type" both, as Llama 3.1's own config.json has them).
std::string rope_scaling_json(const RopeScalingSpec& r) {
    if (r.kind == RopeScaling::None) return "null";
    const std::string type = json::quote(to_string(r.kind));
    std::string out = cat("{\"rope_type\": ", type, ", \"type\": ", type,
                          ", \"factor\": ", float_text(r.factor));
    if (r.kind == RopeScaling::Llama3)
        out += cat(", \"low_freq_factor\": ", float_text(r.low_freq_factor),
                   ", \"high_freq_factor\": ", float_text(r.high_freq_factor),
                   ", \"original_max_position_embeddings\": ", r.original_context);
    return out + "}";
}

}  // namespace

std::string hf_config_json(const ModelSpec& s, const std::string& torch_dtype) {
    if (!s.learned_positions()) {
        // Field names and defaults follow transformers' LlamaConfig (Qwen2Config has the same
        // ones, its q/k/v biases implied by the model type); SiLU-gated MLP.
        const Family& f = s.family();
        const bool qwen2 = s.arch == ModelArch::Qwen2, mistral = s.arch == ModelArch::Mistral;
        const bool qwen3 = s.arch == ModelArch::Qwen3;
        const std::string window =
            s.sliding_window > 0 ? std::to_string(s.sliding_window) : std::string("null");
        return cat("{\n",
                   "  \"architectures\": [\"", f.hf_class, "\"],\n",
                   "  \"model_type\": \"", f.model_type, "\",\n",
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
                   "  \"rope_scaling\": ", rope_scaling_json(s.rope_scaling), ",\n",
                   qwen3     ? std::string("  \"attention_bias\": false,\n  \"use_sliding_window\": false,\n")
                   : qwen2   ? std::string("  \"use_sliding_window\": false,\n")
                   : mistral ? cat("  \"sliding_window\": ", window, ",\n")
                             : std::string("  \"attention_bias\": false,\n  \"mlp_bias\": false,\n"),
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
    add("head_dim", ck.hs(), cfg.hs());
    add("d_ff", ck.F, cfg.F);
    add("rope_theta", ck.rope_theta, cfg.rope_theta);
    add("norm_eps", ck.norm_eps, cfg.norm_eps);
    add("sliding_window", ck.sliding_window, cfg.sliding_window);
    add_text("rope_scaling", to_string(ck.rope_scaling.kind), to_string(cfg.rope_scaling.kind));
    add("rope_scaling_factor", ck.rope_scaling.factor, cfg.rope_scaling.factor);
    add("rope_low_freq_factor", ck.rope_scaling.low_freq_factor, cfg.rope_scaling.low_freq_factor);
    add("rope_high_freq_factor", ck.rope_scaling.high_freq_factor,
        cfg.rope_scaling.high_freq_factor);
    add("rope_original_context", ck.rope_scaling.original_context,
        cfg.rope_scaling.original_context);
    if (ck.tied != cfg.tied) add_text("tie_embeddings", ck.tied ? "true" : "false", cfg.tied ? "true" : "false");
    return out;
}

}  // namespace trt::ckpt
