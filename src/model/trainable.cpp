#include "model/trainable.h"

#include <algorithm>

#include "core/error.h"
#include "core/quote.h"

namespace trt {

bool name_matches(const std::string& pattern, const std::string& name) {
    // Iterative glob with one backtrack point (the last '*'): linear in practice, never
    // exponential, whatever the pattern.
    size_t p = 0, n = 0, star = std::string::npos, resume = 0;
    while (n < name.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p, ++n;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = n;
        } else if (star != std::string::npos) {
            p = star + 1;
            n = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

std::vector<bool> trainable_flags(const ParamTable& table, const std::vector<std::string>& patterns,
                                  const std::string& key) {
    const std::vector<ParamTensor>& tensors = table.tensors();
    // With LoRA adapters the base model is frozen (the adapters train, and the base tensors
    // the patterns name); without, no patterns means everything trains.
    std::vector<bool> flags(tensors.size(), patterns.empty() && !table.has_lora());
    for (size_t i = 0; i < tensors.size(); ++i)
        if (tensors[i].role == ParamRole::LoraA || tensors[i].role == ParamRole::LoraB)
            flags[i] = true;
    for (const std::string& pattern : patterns) {
        // A quantised base is frozen by construction (lora.base_dtype).
        for (const ParamTensor& q : table.quantised_tensors())
            if (name_matches(pattern, q.name))
                fail(Status::Config, key, ": the pattern ", quote_string(pattern), " names ",
                     quote_string(q.name), ", which lora.base_dtype = \"",
                     to_string(table.spec().lora.base_dtype),
                     "\" keeps quantised and frozen; "
                     "train it through LoRA adapters (lora.target_modules), or set "
                     "lora.base_dtype = \"fp32\" to train base tensors");
        bool any = false;
        for (size_t i = 0; i < tensors.size(); ++i)
            if (name_matches(pattern, tensors[i].name)) flags[i] = any = true;
        if (!any) {
            const Slot first_slot = table.spec().split_qkv() ? Slot::Q : Slot::Qkv;
            const int first_layer = table.spec().L > 0 ? 0 : -1;
            const ParamTensor* first_linear = table.get(first_slot, first_layer);
            if (!first_linear) first_linear = table.quantised(first_slot, first_layer);
            fail(Status::Config, key, ": the pattern ", quote_string(pattern),
                 " matches no tensor of the ", arch_name(table.spec()),
                 " model; patterns match whole Hugging Face tensor "
                 "names such as ",
                 quote_string(tensors.front().name), " or ",
                 quote_string(first_linear ? first_linear->name : tensors.back().name),
                 " ('*' for any characters, e.g. \"h.11.*\" or \"*.mlp.*\")");
        }
    }
    // Fused groups: one matmul, one gradient for the stacked matrix.
    const ModelSpec& s = table.spec();
    const Slot groups[][3] = {{Slot::Q, Slot::K, Slot::V},
                              {Slot::QBias, Slot::KBias, Slot::VBias},
                              {Slot::Gate, Slot::Up, Slot::Up}};
    for (int layer = 0; layer < s.L; ++layer)
        for (const auto& group : groups) {
            const ParamTensor* first = table.get(group[0], layer);
            if (!first) continue;
            for (Slot other : group) {
                const ParamTensor& t = table.at(other, layer);
                const size_t a = static_cast<size_t>(first - tensors.data());
                const size_t b = static_cast<size_t>(&t - tensors.data());
                if (flags[a] == flags[b]) continue;
                const ParamTensor& on = flags[a] ? *first : t;
                const ParamTensor& off = flags[a] ? t : *first;
                fail(Status::Config, key, ": ", quote_string(on.name), " trains but ", quote_string(off.name),
                     " is frozen; libtrainrt runs them as one stacked matmul with one gradient, "
                     "so they train together: list both (or neither)");
            }
        }
    return flags;
}

BackwardExtent backward_extent(const ParamTable& table) {
    BackwardExtent e;
    e.embeddings = false;
    e.from_layer = table.spec().L;
    for (const ParamTensor& t : table.tensors()) {
        if (!t.trainable) continue;
        if (t.role == ParamRole::TokenEmbedding || t.role == ParamRole::PositionEmbedding)
            e.embeddings = true;
        if (t.layer >= 0) e.from_layer = std::min(e.from_layer, t.layer);
    }
    if (e.embeddings) e.from_layer = 0;
    return e;
}

}  // namespace trt
