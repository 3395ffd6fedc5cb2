#include "model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/philox.h"
#include "io/gguf_reader.h"
#include "io/safetensors.h"
#include "model/finite_check.h"
#include "model/gguf_import.h"
#include "model/hf_model_files.h"
#include "model/llmc_import.h"
#include "model/lora.h"
#include "model/quantised_base.h"

namespace trt {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(),
                                                  suffix) == 0;
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

// A whole model in `full` (laid out by the unquantised twin of `table`) into table's flat host
// buffer and, for its quantised tensors, the sink.
void distribute(const ParamTable& full, const float* all, const ParamTable& table, float* host,
                const QuantisedSink& sink) {
    for (const ParamTensor& t : table.tensors()) {
        const ParamTensor* f = full.find(t.name);
        TRT_CHECK(f != nullptr, "distribute: '", t.name, "' is not in the unquantised table");
        std::copy(all + f->offset, all + f->offset + t.numel + t.padding, host + t.offset);
    }
    for (const ParamTensor& t : table.quantised_tensors()) {
        const ParamTensor* f = full.find(t.name);
        TRT_CHECK(f != nullptr, "distribute: '", t.name, "' is not in the unquantised table");
        sink(t, all + f->offset, 0, t.shape[0]);
    }
}

void require_sink(const ParamTable& table, const QuantisedSink& sink) {
    TRT_CHECK(table.quantised_tensors().empty() || sink,
              "loading a quantised base needs a QuantisedSink");
}

}  // namespace

ModelSpec unquantised_spec(const ModelSpec& spec) {
    ModelSpec s = spec;
    s.lora.base_dtype = BaseDType::Fp32;
    return s;
}

void init_random(const ParamTable& table, uint64_t seed, float* host, const QuantisedSink& sink) {
    require_sink(table, sink);
    if (!table.quantised_tensors().empty()) {  // drawn as the unquantised twin, then split
        const ParamTable full(unquantised_spec(table.spec()));
        std::vector<float> all(full.total());
        init_random(full, seed, all.data());
        distribute(full, all.data(), table, host, sink);
        return;
    }
    const ModelSpec& s = table.spec();
    const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(s.L));
    const auto& tensors = table.tensors();
    for (size_t t = 0; t < tensors.size(); ++t) {
        const ParamTensor& pt = tensors[t];
        float* out = host + pt.offset;
        switch (pt.role) {
            case ParamRole::TokenEmbedding:
            case ParamRole::PositionEmbedding:
            case ParamRole::Head:
            case ParamRole::Linear: {
                const bool residual_proj =
                    s.family().scaled_residual_init &&
                    (pt.slot == Slot::AttnOut || pt.slot == Slot::Down);
                fill_normal(out, pt.numel, seed, static_cast<uint32_t>(t),
                            residual_proj ? residual_std : 0.02f);
                break;
            }
            case ParamRole::Norm: std::fill(out, out + pt.numel, 1.0f); break;
            case ParamRole::NormBias:
            case ParamRole::LinearBias: std::fill(out, out + pt.numel, 0.0f); break;
            case ParamRole::LoraA:
            case ParamRole::LoraB: break;  // init_lora below
        }
    }
    init_lora(table, seed, host);
    table.clear_padding(host);
}

void load_hf_weights(const ParamTable& table, const std::string& path, float* host,
                     const QuantisedSink& sink) {
    require_sink(table, sink);
    // One file, or every shard of a model folder; a tensor is looked up across all of them.
    std::vector<SafetensorsFile> files;
    for (const std::string& f : hf_weight_files(path)) files.push_back(SafetensorsFile::open(f));
    std::map<std::string, const SafetensorsFile*> where;  // tensor name -> its file
    for (const SafetensorsFile& f : files)
        for (const TensorInfo& t : f.tensors())
            if (!where.emplace(t.name, &f).second)
                fail(Status::Format, "model.init_from = '", path, "': tensor '", t.name,
                     "' is in two shards (", where[t.name]->source_name(), " and ",
                     f.source_name(), ")");
    const auto find = [&](const std::string& name) -> std::pair<const SafetensorsFile*, const TensorInfo*> {
        auto it = where.find(name);
        if (it == where.end()) return {nullptr, nullptr};
        return {it->second, it->second->find(name)};
    };
    std::set<std::string> used;
    // (tensor, quantised): the flat buffer's tensors, then the quantised base's.
    std::vector<std::pair<const ParamTensor*, bool>> wanted;
    for (const ParamTensor& pt : table.tensors()) wanted.emplace_back(&pt, false);
    for (const ParamTensor& pt : table.quantised_tensors()) wanted.emplace_back(&pt, true);
    std::vector<float> one;  // a quantised tensor's values, until the sink has them
    for (const auto& [wp, quantised] : wanted) {
        const ParamTensor& pt = *wp;
        if (pt.role == ParamRole::LoraA || pt.role == ParamRole::LoraB) continue;  // adapters
        std::string found_name = pt.name;
        auto [file, info] = find(pt.name);
        if (const std::string prefix = table.spec().family().hf_model_prefix;
            info == nullptr && !prefix.empty()) {
            found_name = prefix + pt.name;
            std::tie(file, info) = find(found_name);
        }
        if (info == nullptr)
            fail(Status::Format, "model.init_from = '", path, "': tensor '", pt.name,
                 "' is missing (the config asks for a ", describe(table.spec()),
                 "; check [model] matches the checkpoint)");
        if (info->shape != pt.shape) {
            fail(Status::Format, "model.init_from = '", path, "': tensor '", found_name,
                 "' has shape ", shape_text(info->shape), " but the config's model needs ",
                 shape_text(pt.shape),
                 " (set the model.* keys - vocab_size, context_length, d_model, n_kv_head, "
                 "d_ff - to match the checkpoint)");
        }
        if (!quantised) {
            file->read_f32(*info, host + pt.offset);
        } else {  // a piece of rows at a time
            const int64_t rows = pt.shape[0], per = QuantisedBase::rows_per_piece(pt);
            const size_t cols = pt.numel / static_cast<size_t>(rows);
            for (int64_t r = 0; r < rows; r += per) {
                const int64_t n = std::min(per, rows - r);
                one.resize(static_cast<size_t>(n) * cols);
                file->read_f32_range(*info, static_cast<size_t>(r) * cols, one.size(), one.data());
                sink(pt, one.data(), r, n);
            }
        }
        used.insert(found_name);
    }
    table.clear_padding(host);
    for (const auto& [name, file] : where) {
        if (used.count(name)) continue;
        if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
            ends_with(name, ".rotary_emb.inv_freq") ||
            (name == "lm_head.weight" && table.spec().tied))
            continue;  // causal-mask and RoPE buffers, and the tied output projection
        fail(Status::Format, "model.init_from = '", path, "': unexpected tensor '", name,
             "' (the file holds a different model than [model] describes: ",
             describe(table.spec()), ")");
    }
}

void load_init_weights(const ParamTable& table, const std::string& path, float* host,
                       const QuantisedSink& sink) {
    require_sink(table, sink);
    const bool llmc = is_llmc_checkpoint(path);
    const bool gguf = !llmc && gguf::is_gguf_file(path);
    if (gguf) {
        load_gguf_weights(table, path, host, sink);
    } else if (llmc &&
               !table.quantised_tensors().empty()) {  // a GPT-2 at most: read whole, then split
        const ParamTable full(unquantised_spec(table.spec()));
        std::vector<float> all(full.total());
        load_llmc_gpt2(full, path, all.data());
        distribute(full, all.data(), table, host, sink);
    } else if (llmc) {
        load_llmc_gpt2(table, path, host);
    } else {
        load_hf_weights(table, path, host, sink);
    }
    require_finite(table, host, cat("model.init_from '", path, "'"),
                   cat("the weights in this ",
                       llmc   ? "llm.c checkpoint"
                       : gguf ? "GGUF model"
                              : "safetensors model",
                       " are unusable (a damaged file, or one saved from a diverged run); "
                       "use another file or set model.init_from = \"\" for a random init"));
}

}  // namespace trt
