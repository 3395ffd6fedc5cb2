#include "model/param_table.h"

#include <algorithm>

namespace trt {

ParamTable::ParamTable(const GptShape& s) : shape_(s) {
    const int64_t V = s.V, T = s.maxT, C = s.C;
    auto add = [&](std::string name, std::vector<int64_t> shape) {
        ParamTensor t;
        t.name = std::move(name);
        t.numel = 1;
        for (int64_t d : shape) t.numel *= static_cast<size_t>(d);
        t.decay = shape.size() >= 2;
        t.shape = std::move(shape);
        t.offset = total_;
        total_ += t.numel;
        num_params_ += t.numel;
        tensors_.push_back(std::move(t));
    };
    Vp_ = trt::padded_vocab(s.V);
    add("wte.weight", {V, C});
    total_ += static_cast<size_t>(Vp_ - V) * static_cast<size_t>(C);  // wte's padding rows
    add("wpe.weight", {T, C});
    for (int l = 0; l < s.L; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        // Order must match enum BlockParam.
        add(h + "ln_1.weight", {C});
        add(h + "ln_1.bias", {C});
        add(h + "attn.c_attn.weight", {C, 3 * C});
        add(h + "attn.c_attn.bias", {3 * C});
        add(h + "attn.c_proj.weight", {C, C});
        add(h + "attn.c_proj.bias", {C});
        add(h + "ln_2.weight", {C});
        add(h + "ln_2.bias", {C});
        add(h + "mlp.c_fc.weight", {C, 4 * C});
        add(h + "mlp.c_fc.bias", {4 * C});
        add(h + "mlp.c_proj.weight", {4 * C, C});
        add(h + "mlp.c_proj.bias", {C});
    }
    add("ln_f.weight", {C});
    add("ln_f.bias", {C});
}

void ParamTable::clear_padding(float* host) const {
    std::fill(host + padding_begin(), host + padding_begin() + padding_size(), 0.0f);
}

const ParamTensor* ParamTable::find(const std::string& name) const {
    for (const ParamTensor& t : tensors_)
        if (t.name == name) return &t;
    return nullptr;
}

}  // namespace trt
