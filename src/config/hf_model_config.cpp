#include "config/hf_model_config.h"

#include <sys/stat.h>

#include <limits>

#include "config/size_limits.h"
#include "core/error.h"
#include "io/json_min.h"

namespace trt {

namespace {

// A positive finite number (an integer or a float in the JSON); `what` names it in messages.
double positive_number_of(const json::Value& v, const std::string& source, const std::string& what) {
    double x = 0;
    int64_t i = 0;
    if (v.kind == json::Value::Kind::Double) x = v.d;
    else if (v.get_i64(i)) x = static_cast<double>(i);
    else fail(Status::Format, source, ": ", what, " must be a number (got a ", v.kind_name(), ")");
    if (!(x > 0) || x > limits::kMaxFloat)
        fail(Status::Format, source, ": ", what, " must be a positive finite number");
    return x;
}

// config.json's "rope_scaling" (null or absent: none) into model.rope_scaling and its keys.
// "rope_type" names the kind ("type" in configs written before transformers 4.43); kinds the
// decoder cannot run ("dynamic", "yarn", "longrope") are refused by name.
void read_rope_scaling(const json::Value& root, const std::string& source, ModelConfig& m) {
    const json::Value* rs = root.find("rope_scaling");
    if (rs == nullptr || rs->kind == json::Value::Kind::Null) return;
    if (!rs->is_object())
        fail(Status::Format, source, ": \"rope_scaling\" must be an object or null (got a ",
             rs->kind_name(), ")");
    const json::Value* type = rs->find("rope_type");
    if (type == nullptr || type->kind == json::Value::Kind::Null) type = rs->find("type");
    if (type == nullptr || !type->is_string())
        fail(Status::Format, source, ": \"rope_scaling\" has no \"rope_type\" string");
    const auto number = [&](const char* key, double fallback, bool required) -> double {
        const json::Value* v = rs->find(key);
        if (v == nullptr || v->kind == json::Value::Kind::Null) {
            if (required)
                fail(Status::Format, source, ": \"rope_scaling\" of type \"", type->s,
                     "\" needs \"", key, "\"");
            return fallback;
        }
        return positive_number_of(*v, source, cat("rope_scaling \"", key, "\""));
    };
    if (type->s == "default") return;
    if (type->s == "linear") {
        m.rope_scaling = RopeScaling::Linear;
        m.rope_scaling_factor = number("factor", 1.0, true);
    } else if (type->s == "llama3") {
        m.rope_scaling = RopeScaling::Llama3;
        m.rope_scaling_factor = number("factor", 1.0, true);
        m.rope_low_freq_factor = number("low_freq_factor", 1.0, true);
        m.rope_high_freq_factor = number("high_freq_factor", 4.0, true);
        const double original = number("original_max_position_embeddings", 0.0, true);
        if (original != static_cast<double>(static_cast<int64_t>(original)) ||
            original > static_cast<double>(limits::kMaxContext))
            fail(Status::Format, source, ": rope_scaling \"original_max_position_embeddings\" "
                 "must be a whole number of positions up to ", limits::kMaxContext);
        m.rope_original_context = static_cast<int64_t>(original);
        if (!(m.rope_high_freq_factor > m.rope_low_freq_factor))
            fail(Status::Format, source, ": rope_scaling \"high_freq_factor\" must be above "
                 "\"low_freq_factor\"");
    } else {
        fail(Status::Unsupported, source, ": rope_scaling of type \"", type->s,
             "\" is not supported (libtrainrt runs \"linear\" and \"llama3\" RoPE scaling)");
    }
    // transformers multiplies cos and sin by it; "linear" and "llama3" leave it at 1.
    if (number("attention_factor", 1.0, false) != 1.0)
        fail(Status::Unsupported, source, ": rope_scaling \"attention_factor\" other than 1 is "
             "not supported");
}

// config.json's keys read with the messages every family shares: each error names `source`.
struct ConfigKeys {
    const json::Value& root;
    const std::string& source;

    static bool is_null(const json::Value* v) {
        return v == nullptr || v->kind == json::Value::Kind::Null;
    }
    // Each dim within the bound of its model.* key (config/size_limits.h): a checkpoint's dims
    // become a ParamTable (export_checkpoint_hf builds one straight from this file, one entry
    // per tensor per layer), so a hostile n_layer of 2^31 - 1 must stop here, not in the
    // allocator. fallback < 0: the key is required.
    int64_t dim(const char* key, int64_t max, const char* config_key, int64_t fallback = -1) const {
        const json::Value* v = root.find(key);
        if (fallback >= 0 && is_null(v)) return fallback;
        if (!v) fail(Status::Format, source, ": key \"", key, "\" is missing");
        int64_t x = 0;
        if (!v->get_i64(x) || x < 1 || x > std::numeric_limits<int32_t>::max())
            fail(Status::Format, source, ": \"", key, "\" must be a positive 32-bit integer (got a ",
                 v->kind_name(), v->is_integer() ? " out of range" : "", ")");
        if (x > max)
            fail(Status::Format, source, ": \"", key, "\" = ", x, " is above ", max,
                 ", the largest ", config_key,
                 " libtrainrt supports; the file is damaged or not from a supported model");
        return x;
    }
    double positive_number(const char* key, double fallback) const {
        const json::Value* v = root.find(key);
        if (is_null(v)) return fallback;
        return positive_number_of(*v, source, cat("\"", key, "\""));
    }
    bool flag(const char* key, bool fallback) const {
        const json::Value* v = root.find(key);
        if (is_null(v)) return fallback;
        if (v->kind != json::Value::Kind::Bool)
            fail(Status::Format, source, ": \"", key, "\" must be true or false");
        return v->b;
    }
    void refuse_unless(bool ok, const std::string& what) const {
        if (!ok)
            fail(Status::Unsupported, source, ": ", what, " is not supported (libtrainrt trains "
                 "GPT-2, Llama, Qwen2, Mistral and Qwen3 models without it)");
    }
};

// GPT2Config's keys.
void read_gpt2(const ConfigKeys& keys, ModelConfig& m) {
    m.arch = ModelArch::Gpt2;
    m.vocab_size = keys.dim("vocab_size", limits::kMaxVocab, "model.vocab_size");
    m.context_length = keys.dim("n_positions", limits::kMaxContext, "model.context_length");
    m.n_layer = keys.dim("n_layer", limits::kMaxLayers, "model.n_layer");
    m.n_head = keys.dim("n_head", limits::kMaxHeads, "model.n_head");
    m.d_model = keys.dim("n_embd", limits::kMaxWidth, "model.d_model");
    m.n_kv_head = 0;
    // n_inner null = 4 * n_embd, which d_ff = 0 means too.
    const int64_t inner = keys.dim("n_inner", limits::kMaxMlpWidth, "model.d_ff", 0);
    m.d_ff = inner == 4 * m.d_model ? 0 : inner;
    if (const json::Value* act = keys.root.find("activation_function"))
        keys.refuse_unless(act->is_string() && act->s == "gelu_new",
                           "activation_function other than \"gelu_new\"");
    keys.refuse_unless(keys.flag("tie_word_embeddings", true), "an untied GPT-2 head");
    if (m.d_model % m.n_head != 0)
        fail(Status::Format, keys.source, ": n_embd ", m.d_model, " is not a multiple of n_head ",
             m.n_head);
}

// The heads of a Llama-family config: head_dim (LlamaConfig and its kin; absent or null =
// hidden_size / heads) may make them NH * head_dim wide, not hidden_size (Qwen3-0.6B: 16 x 128
// over 1024).
void read_llama_heads(const ConfigKeys& keys, ModelConfig& m) {
    const int64_t head = keys.dim("head_dim", limits::kMaxWidth, "model.head_dim", 0);
    if (head > 0 && head * m.n_head != m.d_model) m.head_dim = head;
    const int64_t hs = m.head_dim > 0 ? m.head_dim : m.d_model / m.n_head;
    if ((m.head_dim == 0 && m.d_model % m.n_head != 0) || m.n_head % m.n_kv_head != 0 ||
        hs % 2 != 0 || hs * m.n_head > limits::kMaxWidth)
        fail(Status::Format, keys.source, ": hidden_size ", m.d_model, ", num_attention_heads ",
             m.n_head, ", num_key_value_heads ", m.n_kv_head, " and head_dim ", hs,
             " do not form even, whole heads");
}

// LlamaConfig's keys; Qwen2Config, MistralConfig and Qwen3Config have the same ones (Qwen2's
// q/k/v biases and Qwen3's q/k norms are part of the family, not keys), and each its own
// sliding window.
void read_llama_family(const ConfigKeys& keys, const std::string& model_type, ModelConfig& m) {
    const bool qwen2 = model_type == "qwen2", mistral = model_type == "mistral";
    const bool qwen3 = model_type == "qwen3";
    m.arch = qwen2     ? ModelArch::Qwen2
             : mistral ? ModelArch::Mistral
             : qwen3   ? ModelArch::Qwen3
                       : ModelArch::Llama;
    m.vocab_size = keys.dim("vocab_size", limits::kMaxVocab, "model.vocab_size");
    m.context_length = keys.dim("max_position_embeddings", limits::kMaxContext, "model.context_length");
    m.n_layer = keys.dim("num_hidden_layers", limits::kMaxLayers, "model.n_layer");
    m.n_head = keys.dim("num_attention_heads", limits::kMaxHeads, "model.n_head");
    m.n_kv_head = keys.dim("num_key_value_heads", limits::kMaxHeads, "model.n_kv_head", m.n_head);
    m.d_model = keys.dim("hidden_size", limits::kMaxWidth, "model.d_model");
    m.d_ff = keys.dim("intermediate_size", limits::kMaxMlpWidth, "model.d_ff");
    m.norm_eps = keys.positive_number("rms_norm_eps", 1e-6);  // LlamaConfig's default
    m.rope_theta = keys.positive_number("rope_theta", 10000.0);
    m.tie_embeddings = keys.flag("tie_word_embeddings", false);  // LlamaConfig's default
    if (m.norm_eps > 1.0) fail(Status::Format, keys.source, ": \"rms_norm_eps\" must be <= 1");
    read_llama_heads(keys, m);
    if (const json::Value* act = keys.root.find("hidden_act"))
        keys.refuse_unless(act->is_string() && act->s == "silu", "hidden_act other than \"silu\"");
    read_rope_scaling(keys.root, keys.source, m);
    if (qwen2 || qwen3) {
        keys.refuse_unless(!keys.flag("use_sliding_window", false), "use_sliding_window = true");
        if (qwen3) keys.refuse_unless(!keys.flag("attention_bias", false), "attention_bias = true");
    } else if (mistral) {
        // MistralConfig: sliding_window null = the whole context (Mistral 7B v0.3), else
        // each query sees the last sliding_window keys (v0.1: 4096).
        m.sliding_window = keys.dim("sliding_window", limits::kMaxContext, "model.sliding_window", 0);
    } else {
        keys.refuse_unless(!keys.flag("attention_bias", false), "attention_bias = true");
        keys.refuse_unless(!keys.flag("mlp_bias", false), "mlp_bias = true");
    }
}

}  // namespace

ModelConfig parse_hf_model_config(const std::string& text, const std::string& source) {
    const json::Value root = json::parse(text, source);
    if (!root.is_object())
        fail(Status::Format, source, ": is a JSON ", root.kind_name(), ", expected an object");
    // Checkpoints written before the Llama family have model_type "gpt2" too; a file without
    // one is read as GPT-2, as before.
    std::string model_type = "gpt2";
    if (const json::Value* mt = root.find("model_type")) {
        if (!mt->is_string()) fail(Status::Format, source, ": \"model_type\" must be a string");
        model_type = mt->s;
    }
    const ConfigKeys keys{root, source};
    ModelConfig m;
    if (model_type == "gpt2")
        read_gpt2(keys, m);
    else if (model_type == "llama" || model_type == "qwen2" || model_type == "mistral" ||
             model_type == "qwen3")
        read_llama_family(keys, model_type, m);
    else
        fail(Status::Unsupported, source, ": \"model_type\" is \"", model_type,
             "\"; libtrainrt supports ", model_arch_names());
    check_model_parameter_count(m, source);
    return m;
}

// Parameter count in long double: the per-layer C^2 terms alone overflow int64 for hostile
// dims. 2^40 floats (4 TiB) is far beyond any model this library trains.
void check_model_parameter_count(const ModelConfig& m, const std::string& source) {
    const long double C = static_cast<long double>(m.d_model);
    const long double F = m.d_ff > 0 ? static_cast<long double>(m.d_ff) : 4 * C;
    const long double n =
        (2.0L * m.vocab_size + m.context_length) * C + 2 * C +
        static_cast<long double>(m.n_layer) * (4 * C * C + 3 * C * F + 13 * C + F);
    if (n > static_cast<long double>(uint64_t{1} << 40))
        fail(Status::Format, source, ": dims give ", static_cast<double>(n),
             " parameters, more than any supported model; the file is damaged");
}

std::string hf_folder_config_path(const std::string& init_from) {
    struct stat st {};
    if (init_from.empty() || ::stat(init_from.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "";
    return init_from + (init_from.back() == '/' ? "" : "/") + "config.json";
}

}  // namespace trt
