#include "config/gguf_model_config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config/hf_model_config.h"
#include "config/size_limits.h"
#include "core/error.h"

namespace trt {
namespace {

// `<arch>.<key>` as a dim within its model.* key's bound; fallback < 0: required.
int64_t dim(const gguf::Reader& f, const std::string& key, int64_t max, const char* config_key,
            int64_t fallback = -1) {
    const int64_t x = f.integer(key, fallback);
    if (x < 1 || x > max)
        fail(Status::Format, f.source_name(), ": '", key, "' = ", x, " is outside 1 .. ", max, " (",
             config_key, "); the file is damaged or not from a supported model");
    return x;
}

// An F32 value as the shortest decimal that gives the same float (1e-5f -> 1e-5, not
// 9.99999974738e-06): the number config.json would have said, so a config that writes it
// agrees with the file.
double shortest_decimal(float v) {
    char buf[32];
    for (int digits = 1; digits <= 9; digits++) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
        const double d = std::strtod(buf, nullptr);
        if (static_cast<float>(d) == v) return d;
    }
    return v;
}

double positive(const gguf::Reader& f, const std::string& key, double fallback) {
    double x = f.number(key, fallback);
    if (const gguf::Value* v = f.find(key); v && v->type == gguf::ValueType::F32)
        x = shortest_decimal(static_cast<float>(x));
    if (!(x > 0) || x > 1e30)
        fail(Status::Format, f.source_name(), ": '", key, "' = ", x, " must be a positive number");
    return x;
}

}  // namespace

ModelConfig parse_gguf_model_config(const gguf::Reader& f) {
    const std::string& src = f.source_name();
    const std::string a = f.string("general.architecture", "");
    ModelConfig m;
    if (a == "gpt2")
        m.arch = ModelArch::Gpt2;
    else if (a == "llama")
        m.arch = ModelArch::Llama;
    else if (a == "qwen2")
        m.arch = ModelArch::Qwen2;
    else if (a == "qwen3")
        m.arch = ModelArch::Qwen3;
    else
        fail(Status::Unsupported, src, ": general.architecture is '", a,
             "'; libtrainrt reads GGUF files of llama.cpp's gpt2, llama (Llama, Mistral), qwen2 "
             "and qwen3");
    if (f.integer("split.count", 1) > 1)
        fail(Status::Unsupported, src, ": one part of a split GGUF model (split.count ",
             f.integer("split.count"), "); merge the parts first (llama-gguf-split --merge)");
    if (f.integer(a + ".expert_count", 0) > 0)
        fail(Status::Unsupported, src, ": a mixture-of-experts model (", a, ".expert_count ",
             f.integer(a + ".expert_count"), "); libtrainrt trains dense models");
    if (a != "llama" && f.find_tensor("rope_freqs.weight"))
        fail(Status::Unsupported, src, ": a rope_freqs tensor in a ", a,
             " model (llama.cpp applies it to llama only)");
    // The vocabulary is the token embedding's rows: what the weights hold, whatever the
    // tokenizer arrays or <arch>.vocab_size say.
    const gguf::TensorEntry* embd = f.find_tensor("token_embd.weight");
    if (!embd || embd->ne.size() != 2)
        fail(Status::Format, src, ": no 2-D token_embd.weight tensor");
    if (embd->ne[1] > static_cast<uint64_t>(limits::kMaxVocab))
        fail(Status::Format, src, ": token_embd.weight has ", embd->ne[1], " rows, above ",
             limits::kMaxVocab);
    m.vocab_size = static_cast<int64_t>(embd->ne[1]);
    m.context_length = dim(f, a + ".context_length", limits::kMaxContext, "model.context_length");
    m.n_layer = dim(f, a + ".block_count", limits::kMaxLayers, "model.n_layer");
    m.d_model = dim(f, a + ".embedding_length", limits::kMaxWidth, "model.d_model");
    m.n_head = dim(f, a + ".attention.head_count", limits::kMaxHeads, "model.n_head");
    const int64_t ff = dim(f, a + ".feed_forward_length", limits::kMaxMlpWidth, "model.d_ff");
    const bool tied = f.find_tensor("output.weight") == nullptr;
    if (m.arch == ModelArch::Gpt2) {
        m.n_kv_head = 0;
        m.d_ff = ff == 4 * m.d_model ? 0 : ff;
        // GPT-2's LayerNorm epsilon is fixed at 1e-5 (model.norm_eps is not a GPT-2 key).
        const double eps = positive(f, a + ".attention.layer_norm_epsilon", 1e-5);
        if (eps != 1e-5)
            fail(Status::Unsupported, src, ": a GPT-2 LayerNorm epsilon of ", eps,
                 " (libtrainrt's GPT-2 uses 1e-5)");
        // llama.cpp's converter writes GPT-2's tied head as a copy, output.weight: its values
        // must equal token_embd's (the weights' loader checks), so only its shape is read here.
        const gguf::TensorEntry* head = f.find_tensor("output.weight");
        if (head && head->ne != embd->ne)
            fail(Status::Unsupported, src,
                 ": an untied GPT-2 head (output.weight of another "
                 "shape than token_embd.weight) is not supported");
        if (m.d_model % m.n_head != 0)
            fail(Status::Format, src, ": embedding_length ", m.d_model,
                 " is not a multiple of head_count ", m.n_head);
        check_model_parameter_count(m, src);
        return m;
    }
    m.d_ff = ff;
    m.n_kv_head =
        dim(f, a + ".attention.head_count_kv", limits::kMaxHeads, "model.n_kv_head", m.n_head);
    m.norm_eps = positive(f, a + ".attention.layer_norm_rms_epsilon", 1e-5);
    if (m.norm_eps > 1.0) fail(Status::Format, src, ": layer_norm_rms_epsilon must be <= 1");
    m.rope_theta = positive(f, a + ".rope.freq_base", 10000.0);
    m.tie_embeddings = tied;
    // Without key_length a head is d_model / n_head wide, which must be whole.
    if (!f.find(a + ".attention.key_length") && m.d_model % m.n_head != 0)
        fail(Status::Format, src, ": embedding_length ", m.d_model, " is not a multiple of ",
             "head_count ", m.n_head, ", and the file has no attention.key_length");
    const int64_t key_len = dim(f, a + ".attention.key_length", limits::kMaxWidth, "model.head_dim",
                                m.d_model / m.n_head);
    const int64_t value_len =
        dim(f, a + ".attention.value_length", limits::kMaxWidth, "model.head_dim", key_len);
    if (value_len != key_len)
        fail(Status::Unsupported, src, ": attention.key_length ", key_len,
             " differs from value_length ", value_len);
    if (key_len * m.n_head != m.d_model) m.head_dim = key_len;
    if (key_len % 2 != 0 || m.n_head % m.n_kv_head != 0 || key_len * m.n_head > limits::kMaxWidth)
        fail(Status::Format, src, ": embedding_length ", m.d_model, ", head_count ", m.n_head,
             ", head_count_kv ", m.n_kv_head, " and key_length ", key_len,
             " do not form even, whole heads");
    if (a == "llama") {  // llama.cpp requires rope.dimension_count = key_length
        const int64_t rot = f.integer(a + ".rope.dimension_count", key_len);
        if (rot != key_len)
            fail(Status::Unsupported, src, ": rope.dimension_count ", rot,
                 " (partial rotary embeddings) is not supported; libtrainrt rotates the whole "
                 "head of ",
                 key_len);
    }
    const std::string scaling = f.string(a + ".rope.scaling.type", "none");
    if (scaling == "linear") {
        m.rope_scaling = RopeScaling::Linear;
        m.rope_scaling_factor = positive(f, a + ".rope.scaling.factor", 1.0);
    } else if (scaling != "none") {
        fail(Status::Unsupported, src, ": rope.scaling.type '", scaling,
             "' is not supported (libtrainrt runs none, linear and Llama 3's rope_freqs)");
    }
    if (const gguf::TensorEntry* freqs = f.find_tensor("rope_freqs.weight")) {
        if (m.rope_scaling != RopeScaling::None)
            fail(Status::Unsupported, src, ": both rope.scaling.type '", scaling,
                 "' and a rope_freqs tensor");
        if (freqs->ne.size() != 1 || freqs->ne[0] != static_cast<uint64_t>(key_len / 2))
            fail(Status::Format, src, ": rope_freqs.weight has ", freqs->ne[0],
                 " values; a head of ", key_len, " has ", key_len / 2, " pairs");
        std::vector<float> factors(static_cast<size_t>(key_len / 2));
        f.read_rows(*freqs, 0, 1, factors.data());
        const float largest = *std::max_element(factors.begin(), factors.end());
        if (!(largest >= 1.0f && largest <= 1e6f))
            fail(Status::Format, src, ": rope_freqs' largest factor is ", largest,
                 "; Llama 3 RoPE scaling divides frequencies by factors >= 1");
        m.rope_scaling = RopeScaling::Llama3;
        m.rope_scaling_factor = shortest_decimal(largest);
        m.rope_low_freq_factor = 1.0;   // Meta's Llama 3.1-3.3 values; the weights' loader
        m.rope_high_freq_factor = 4.0;  // checks rope_freqs against whatever the config says
        m.rope_original_context = 8192;
    }
    check_model_parameter_count(m, src);
    return m;
}

}  // namespace trt
