#include "model/lora.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/philox.h"
#include "core/quote.h"

namespace trt {

std::vector<Slot> linear_slots(const ModelSpec& s) {
    std::vector<Slot> out;
    for (const FamilyTensor& t : s.family().per_block)
        if (linear_slot(t.slot)) out.push_back(t.slot);
    return out;
}

bool module_matches(const std::string& key, const std::string& path) {
    if (key.empty() || key.size() > path.size()) return false;
    if (path.compare(path.size() - key.size(), key.size(), key) != 0) return false;
    return key.size() == path.size() || path[path.size() - key.size() - 1] == '.';
}

LoraSpec lora_spec(const LoraConfig& config, const ModelSpec& model) {
    LoraSpec out;
    if (config.rank == 0) return out;
    ModelSpec base = model;
    base.lora = LoraSpec{};
    const ParamTable table(base);
    std::vector<std::string> keys = config.target_modules;
    if (keys.empty())
        keys = model.family().default_lora_targets;
    const bool all = std::find(keys.begin(), keys.end(), "all-linear") != keys.end();
    const int per = static_cast<int>(Slot::kLayerSlots);
    out.rank = static_cast<int>(config.rank);
    out.alpha = static_cast<float>(config.alpha);
    out.dropout = static_cast<float>(config.dropout);
    out.base_dtype = config.base_dtype;
    out.double_quant = config.double_quant;
    out.targets.assign(static_cast<size_t>(model.L) * per, 0);
    std::vector<bool> used(keys.size(), false);
    for (int layer = 0; layer < model.L; ++layer)
        for (Slot slot : linear_slots(model)) {
            const std::string& name = table.at(slot, layer).name;
            const std::string path = name.substr(0, name.size() - 7);  // less ".weight"
            for (size_t k = 0; k < keys.size(); ++k)
                if (all || module_matches(keys[k], path)) {
                    out.targets[static_cast<size_t>(layer * per + static_cast<int>(slot))] = 1;
                    used[k] = true;
                }
        }
    for (size_t k = 0; k < keys.size(); ++k) {
        if (used[k] || (all && keys[k] == "all-linear")) continue;
        std::string names;
        for (Slot slot : linear_slots(model)) {
            const std::string& n = table.at(slot, 0).name;
            names += (names.empty() ? "" : ", ") + quote_string(n.substr(0, n.size() - 7));
        }
        fail(Status::Config, "lora.target_modules: ", quote_string(keys[k]),
             " names no linear layer of the ", arch_name(model), " model; a name matches a "
             "module path or its end after a '.' (block 0's are ", names,
             "), or use \"all-linear\"");
    }
    return out;
}

ModelSpec run_model_spec(const RunConfig& run) {
    ModelSpec s = model_spec(run.model);
    s.lora = lora_spec(run.lora, s);
    return s;
}

ModelSpec base_spec(const ModelSpec& spec) {
    ModelSpec s = spec;
    s.lora = LoraSpec{};
    return s;
}

std::vector<float> merge_lora(const ParamTable& table, const float* host) {
    const ParamTable base(base_spec(table.spec()));
    std::vector<float> out(host, host + base.total());
    const ModelSpec& s = table.spec();
    if (!s.lora.on()) return out;
    const double scale = s.lora.scale();
    const size_t r = static_cast<size_t>(s.lora.rank);
    std::vector<double> row;
    for (int layer = 0; layer < s.L; ++layer)
        for (Slot slot : linear_slots(s)) {
            const ParamTensor* a = table.lora_a(slot, layer);
            if (!a) continue;
            const ParamTensor& b = *(a + 1);
            const ParamTensor& w = base.at(slot, layer);
            const LinearShape ls = linear_shape(s, slot);
            const size_t in = static_cast<size_t>(ls.in), outw = static_cast<size_t>(ls.out);
            const float* A = host + a->offset;  // [r, in]
            const float* B = host + b.offset;   // [out, r]
            float* W = out.data() + w.offset;   // [out, in] or GPT-2's [in, out]
            const bool in_out = s.linear_layout() == WeightLayout::InOut;
            row.assign(in, 0.0);
            for (size_t o = 0; o < outw; ++o) {
                std::fill(row.begin(), row.end(), 0.0);
                for (size_t k = 0; k < r; ++k) {
                    const double bk = B[o * r + k];
                    const float* Ak = A + k * in;
                    for (size_t i = 0; i < in; ++i) row[i] += bk * Ak[i];
                }
                for (size_t i = 0; i < in; ++i) {
                    float& x = in_out ? W[i * outw + o] : W[o * in + i];
                    x = static_cast<float>(x + scale * row[i]);
                }
            }
        }
    return out;
}

void init_lora(const ParamTable& table, uint64_t seed, float* host) {
    const uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    const auto& tensors = table.tensors();
    // The index the tensor has in the unquantised table: a quantised base's tensors all come
    // before the adapters, so the adapters start as they would over an fp32 base.
    const size_t shift = table.quantised_tensors().size();
    for (size_t t = 0; t < tensors.size(); ++t) {
        const ParamTensor& pt = tensors[t];
        float* out = host + pt.offset;
        if (pt.role == ParamRole::LoraB) std::fill(out, out + pt.numel, 0.0f);
        if (pt.role != ParamRole::LoraA) continue;
        const double bound = 1.0 / std::sqrt(static_cast<double>(pt.shape[1]));
        // Philox stream 0x10AA per tensor index: independent of the base init's normals.
        for (size_t i = 0; i < pt.numel; i += 4) {
            const Philox4x32 r = philox4x32_10(
                static_cast<uint32_t>(i), static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32),
                static_cast<uint32_t>(t + shift), 0x10AAu, k0, k1);
            for (size_t j = 0; j < 4 && i + j < pt.numel; ++j) {
                const double u = (r.v[j] >> 8) / 16777216.0;  // [0, 1), 24 bits
                out[i + j] = static_cast<float>((2.0 * u - 1.0) * bound);
            }
        }
    }
}

}  // namespace trt
