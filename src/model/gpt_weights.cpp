#include "model/gpt_weights.h"

#include <cmath>
#include <set>

#include "core/error.h"
#include "core/philox.h"
#include "io/safetensors.h"
#include "model/finite_check.h"
#include "model/llmc_import.h"

namespace trt {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(),
                                                  suffix) == 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

// Normal(0, std) for element i of tensor `tensor_index`: one Philox draw gives two uniforms.
void fill_normal(float* out, size_t n, uint64_t seed, uint32_t tensor_index, float stddev) {
    const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (size_t i = 0; i < n; i += 2) {
        const Philox4x32 r = philox4x32_10(static_cast<uint32_t>(i), static_cast<uint32_t>(
            static_cast<uint64_t>(i) >> 32), tensor_index, 0x1A17u, k0, k1);
        // u1 in (0, 1], u2 in [0, 1): 24-bit uniforms so float math is exact.
        const double u1 = ((r.v[0] >> 8) + 1.0) / 16777216.0;
        const double u2 = (r.v[1] >> 8) / 16777216.0;
        const double radius = std::sqrt(-2.0 * std::log(u1));
        out[i] = static_cast<float>(stddev * radius * std::cos(2.0 * M_PI * u2));
        if (i + 1 < n) out[i + 1] = static_cast<float>(stddev * radius * std::sin(2.0 * M_PI * u2));
    }
}

}  // namespace

void init_gpt2_random(const ParamTable& table, uint64_t seed, float* host) {
    const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(table.shape().L));
    const auto& tensors = table.tensors();
    for (size_t t = 0; t < tensors.size(); ++t) {
        const ParamTensor& pt = tensors[t];
        float* out = host + pt.offset;
        if (pt.shape.size() >= 2) {
            const bool residual_proj = ends_with(pt.name, "attn.c_proj.weight") ||
                                       ends_with(pt.name, "mlp.c_proj.weight");
            fill_normal(out, pt.numel, seed, static_cast<uint32_t>(t),
                        residual_proj ? residual_std : 0.02f);
        } else {
            const float value = ends_with(pt.name, ".weight") ? 1.0f : 0.0f;  // LN gain : bias
            for (size_t i = 0; i < pt.numel; ++i) out[i] = value;
        }
    }
    table.clear_padding(host);
}

void load_hf_gpt2(const ParamTable& table, const std::string& path, float* host) {
    const SafetensorsFile file = SafetensorsFile::open(path);
    std::set<std::string> used;
    for (const ParamTensor& pt : table.tensors()) {
        const TensorInfo* info = file.find(pt.name);
        std::string found_name = pt.name;
        if (info == nullptr) {
            found_name = "transformer." + pt.name;
            info = file.find(found_name);
        }
        if (info == nullptr)
            fail(Status::Format, "model.init_from = '", path, "': tensor '", pt.name,
                 "' is missing (the config asks for n_layer = ", table.shape().L,
                 "; check [model] matches the checkpoint)");
        if (info->shape != pt.shape) {
            fail(Status::Format, "model.init_from = '", path, "': tensor '", found_name,
                 "' has shape ", shape_text(info->shape), " but the config's model needs ",
                 shape_text(pt.shape),
                 " (set model.vocab_size, context_length, d_model to match the checkpoint)");
        }
        file.read_f32(*info, host + pt.offset);
        used.insert(found_name);
    }
    table.clear_padding(host);
    for (const TensorInfo& t : file.tensors()) {
        if (used.count(t.name)) continue;
        if (ends_with(t.name, ".attn.bias") || ends_with(t.name, ".attn.masked_bias") ||
            t.name == "lm_head.weight")
            continue;  // causal-mask buffers and the tied output projection
        fail(Status::Format, "model.init_from = '", path, "': unexpected tensor '", t.name,
             "' (the file holds a different model than [model] describes, e.g. more layers "
             "than n_layer = ", table.shape().L, ")");
    }
}

void load_init_weights(const ParamTable& table, const std::string& path, float* host) {
    const bool llmc = is_llmc_checkpoint(path);
    if (llmc)
        load_llmc_gpt2(table, path, host);
    else
        load_hf_gpt2(table, path, host);
    require_finite(table, host, cat("model.init_from '", path, "'"),
                   cat("the weights in this ", llmc ? "llm.c checkpoint" : "safetensors file",
                       " are unusable (a damaged file, or one saved from a diverged run); "
                       "use another file or set model.init_from = \"\" for a random init"));
}

}  // namespace trt
