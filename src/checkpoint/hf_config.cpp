// config.json for GPT2LMHeadModel: written with every export and checkpoint so the directory
// loads with transformers' from_pretrained, and read back to learn a checkpoint's dims.
#include <limits>

#include "checkpoint/checkpoint_internal.h"
#include "config/size_limits.h"
#include "core/error.h"
#include "io/json_min.h"

namespace trt::ckpt {

std::string hf_config_json(const GptShape& s, const std::string& torch_dtype) {
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
               "  \"n_inner\": null,\n",
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

GptShape parse_hf_config(const std::string& text, const std::string& source) {
    const json::Value root = json::parse(text, source);
    if (!root.is_object())
        fail(Status::Format, source, ": is a JSON ", root.kind_name(), ", expected an object");
    // Each dim within the bound of its model.* key (config/size_limits.h): a checkpoint's dims
    // become a ParamTable (export_checkpoint_hf builds one straight from this file, one entry
    // per tensor per layer), so a hostile n_layer of 2^31 - 1 must stop here, not in the
    // allocator.
    const auto dim = [&](const char* key, int64_t max, const char* config_key) -> int {
        const json::Value* v = root.find(key);
        if (!v) fail(Status::Format, source, ": key \"", key, "\" is missing");
        int64_t x = 0;
        if (!v->get_i64(x) || x < 1 || x > std::numeric_limits<int32_t>::max())
            fail(Status::Format, source, ": \"", key, "\" must be a positive 32-bit integer (got a ",
                 v->kind_name(), v->is_integer() ? " out of range" : "", ")");
        if (x > max)
            fail(Status::Format, source, ": \"", key, "\" = ", x, " is above ", max,
                 ", the largest ", config_key,
                 " libtrainrt supports; the file is damaged or not from a supported model");
        return static_cast<int>(x);
    };
    if (const json::Value* mt = root.find("model_type"))
        if (!mt->is_string() || mt->s != "gpt2")
            fail(Status::Format, source, ": \"model_type\" is not \"gpt2\"; only GPT-2 models are supported");
    GptShape s;
    s.V = dim("vocab_size", limits::kMaxVocab, "model.vocab_size");
    s.maxT = dim("n_positions", limits::kMaxContext, "model.context_length");
    s.L = dim("n_layer", limits::kMaxLayers, "model.n_layer");
    s.NH = dim("n_head", limits::kMaxHeads, "model.n_head");
    s.C = dim("n_embd", limits::kMaxWidth, "model.d_model");
    // Parameter count in long double: the per-layer 12*C^2 term alone overflows int64 for
    // hostile dims. 2^40 floats (4 TiB) is far beyond any model this library trains.
    const long double C = s.C;
    const long double n = (static_cast<long double>(s.V) + s.maxT) * C + 2 * C +
                          static_cast<long double>(s.L) * (12 * C * C + 13 * C);
    if (n > static_cast<long double>(uint64_t{1} << 40))
        fail(Status::Format, source, ": dims give ", static_cast<double>(n),
             " parameters, more than any supported model; the file is damaged");
    return s;
}

std::string shape_diff(const GptShape& ck, const GptShape& cfg) {
    std::string out;
    const auto add = [&](const char* key, int a, int b) {
        if (a == b) return;
        if (!out.empty()) out += ", ";
        out += cat("model.", key, " = ", a, " (the config has ", b, ")");
    };
    add("vocab_size", ck.V, cfg.V);
    add("context_length", ck.maxT, cfg.maxT);
    add("n_layer", ck.L, cfg.L);
    add("n_head", ck.NH, cfg.NH);
    add("d_model", ck.C, cfg.C);
    return out;
}

}  // namespace trt::ckpt
