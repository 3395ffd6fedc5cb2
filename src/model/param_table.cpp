#include "model/param_table.h"

#include <algorithm>

#include "core/error.h"

namespace trt {

ModelSpec model_spec(const ModelConfig& m) {
    ModelSpec s;
    s.arch = m.arch;
    s.V = static_cast<int>(m.vocab_size);
    s.maxT = static_cast<int>(m.context_length);
    s.L = static_cast<int>(m.n_layer);
    s.NH = static_cast<int>(m.n_head);
    s.NKV = m.n_kv_head > 0 ? static_cast<int>(m.n_kv_head) : s.NH;
    s.C = static_cast<int>(m.d_model);
    s.head_dim = m.head_dim > 0 && m.head_dim * m.n_head != m.d_model ? static_cast<int>(m.head_dim) : 0;
    s.F = m.d_ff > 0 ? static_cast<int>(m.d_ff) : 4 * s.C;
    s.norm_eps = static_cast<float>(m.norm_eps);
    s.rope_theta = static_cast<float>(m.rope_theta);
    s.rope_scaling.kind = m.rope_scaling;
    s.rope_scaling.factor = static_cast<float>(m.rope_scaling_factor);
    s.rope_scaling.low_freq_factor = static_cast<float>(m.rope_low_freq_factor);
    s.rope_scaling.high_freq_factor = static_cast<float>(m.rope_high_freq_factor);
    s.rope_scaling.original_context = static_cast<int>(m.rope_original_context);
    s.sliding_window = static_cast<int>(m.sliding_window);
    s.tied = m.tie_embeddings;
    s.dropout = static_cast<float>(m.dropout);
    return s;
}

ModelSpec gpt2_spec(int V, int maxT, int L, int NH, int C) {
    ModelSpec s;
    s.V = V, s.maxT = maxT, s.L = L, s.NH = NH, s.NKV = NH, s.C = C, s.F = 4 * C;
    return s;
}

ModelSpec llama_spec(int V, int maxT, int L, int NH, int NKV, int C, int F, bool tied) {
    ModelSpec s;
    s.arch = ModelArch::Llama;
    s.V = V, s.maxT = maxT, s.L = L, s.NH = NH, s.NKV = NKV, s.C = C, s.F = F, s.tied = tied;
    return s;
}

std::string arch_name(const ModelSpec& s) { return s.family().model_type; }

std::string describe(const ModelSpec& s) {
    std::string out = cat(arch_name(s), " L", s.L, " H", s.NH);
    if (s.NKV != s.NH) out += cat(" KV", s.NKV);
    out += cat(" C", s.C);
    if (s.head_dim > 0) out += cat(" head_dim ", s.head_dim);
    out += cat(" F", s.F, " V", s.V, " T_max", s.maxT);
    if (!s.learned_positions()) {
        out += cat(", RoPE theta ", s.rope_theta);
        const RopeScalingSpec& r = s.rope_scaling;
        if (r.kind == RopeScaling::Linear) out += cat(" scaled linear x", r.factor);
        if (r.kind == RopeScaling::Llama3)
            out += cat(" scaled llama3 x", r.factor, " (", r.low_freq_factor, "..",
                       r.high_freq_factor, " of ", r.original_context, ")");
    }
    if (s.family().qkv_bias && s.split_qkv()) out += ", q/k/v biases";
    if (s.family().qk_norm) out += ", q/k norms";
    if (s.sliding_window > 0) out += cat(", sliding window ", s.sliding_window);
    if (s.rms_norm()) out += cat(", RMSNorm eps ", s.norm_eps);
    if (!s.family().tied_only) out += s.tied ? ", tied head" : ", untied head";
    if (s.lora.on()) {
        size_t n = 0;
        for (uint8_t t : s.lora.targets) n += t;
        out += cat(", LoRA r", s.lora.rank, " alpha ", s.lora.alpha, " on ", n, " linear layers");
    }
    return out;
}

const char* to_string(ParamRole r) {
    switch (r) {
        case ParamRole::TokenEmbedding: return "token embedding";
        case ParamRole::PositionEmbedding: return "position embedding";
        case ParamRole::Norm: return "norm";
        case ParamRole::NormBias: return "norm bias";
        case ParamRole::Linear: return "linear";
        case ParamRole::LinearBias: return "linear bias";
        case ParamRole::Head: return "head";
        case ParamRole::LoraA: return "LoRA A";
        case ParamRole::LoraB: return "LoRA B";
    }
    return "?";
}

LinearShape linear_shape(const ModelSpec& s, Slot slot) {
    const int C = s.C, F = s.F, hs = s.hs(), q = s.NH * hs, kv = s.NKV * hs;
    switch (slot) {
        case Slot::Qkv: return {C, 3 * C, 3 * C, 0};
        case Slot::Q: return {C, q, s.qkv_width(), 0};
        case Slot::K: return {C, kv, s.qkv_width(), q};
        case Slot::V: return {C, kv, s.qkv_width(), q + kv};
        case Slot::AttnOut: return {q, C, C, 0};
        case Slot::Gate: return {C, F, 2 * F, 0};
        case Slot::Up: return s.gated_mlp() ? LinearShape{C, F, 2 * F, F} : LinearShape{C, F, F, 0};
        case Slot::Down: return {F, C, C, 0};
        default: break;
    }
    fail(Status::Internal, "linear_shape: slot ", static_cast<int>(slot), " is not a linear layer");
}

namespace {

// What a tensor in `slot` is (the optimizer's and the initialiser's view of it).
ParamRole slot_role(Slot slot) {
    switch (slot) {
        case Slot::TokenEmbedding: return ParamRole::TokenEmbedding;
        case Slot::PositionEmbedding: return ParamRole::PositionEmbedding;
        case Slot::Head: return ParamRole::Head;
        case Slot::AttnNorm: case Slot::MlpNorm: case Slot::FinalNorm: case Slot::QNorm:
        case Slot::KNorm: return ParamRole::Norm;
        case Slot::AttnNormBias: case Slot::MlpNormBias: case Slot::FinalNormBias:
            return ParamRole::NormBias;
        case Slot::QkvBias: case Slot::QBias: case Slot::KBias: case Slot::VBias:
        case Slot::AttnOutBias: case Slot::UpBias: case Slot::DownBias:
            return ParamRole::LinearBias;
        default: return ParamRole::Linear;
    }
}

// The shape of the tensor in `slot` as HF files hold it: a linear weight [in, out] or
// [out, in] by the family's layout, a bias [out], vocabulary matrices [V, C].
std::vector<int64_t> tensor_shape(const ModelSpec& s, Slot slot) {
    const int64_t C = s.C;
    const auto bias_of = [&](Slot linear) { return std::vector<int64_t>{linear_shape(s, linear).out}; };
    switch (slot) {
        case Slot::TokenEmbedding: case Slot::Head: return {s.V, C};
        case Slot::PositionEmbedding: return {s.maxT, C};
        case Slot::QNorm: case Slot::KNorm: return {s.hs()};
        case Slot::AttnNorm: case Slot::MlpNorm: case Slot::FinalNorm: case Slot::AttnNormBias:
        case Slot::MlpNormBias: case Slot::FinalNormBias: return {C};
        case Slot::QkvBias: return bias_of(Slot::Qkv);
        case Slot::QBias: return bias_of(Slot::Q);
        case Slot::KBias: return bias_of(Slot::K);
        case Slot::VBias: return bias_of(Slot::V);
        case Slot::AttnOutBias: return bias_of(Slot::AttnOut);
        case Slot::UpBias: return bias_of(Slot::Up);
        case Slot::DownBias: return bias_of(Slot::Down);
        default: break;
    }
    const LinearShape ls = linear_shape(s, slot);
    if (s.linear_layout() == WeightLayout::InOut) return {ls.in, ls.out};
    return {ls.out, ls.in};
}

int slot_index(Slot slot, int layer, int L) {
    const int s = static_cast<int>(slot), per = static_cast<int>(Slot::kLayerSlots);
    return s < per ? layer * per + s : L * per + (s - per);
}

}  // namespace

ParamTable::ParamTable(const ModelSpec& s) : spec_(s) {
    const int64_t C = s.C;
    Vp_ = trt::padded_vocab(s.V);
    const int global_slots = static_cast<int>(Slot::kSlots) - static_cast<int>(Slot::kLayerSlots);
    index_.assign(static_cast<size_t>(s.L) * static_cast<size_t>(Slot::kLayerSlots) +
                      static_cast<size_t>(global_slots), -1);
    int layer = -1;
    lora_index_.assign(static_cast<size_t>(s.L) * static_cast<size_t>(Slot::kLayerSlots), -1);
    quantised_index_.assign(index_.size(), -1);
    auto add = [&](std::string name, Slot slot, std::vector<int64_t> shape, ParamRole role) {
        ParamTensor t;
        t.name = std::move(name);
        t.slot = slot;
        t.role = role;
        t.layer = static_cast<int>(slot) < static_cast<int>(Slot::kLayerSlots) ? layer : -1;
        t.numel = 1;
        for (int64_t d : shape) t.numel *= static_cast<size_t>(d);
        t.decay = shape.size() >= 2;
        // Rows a vocabulary matrix is padded with, stored zero right after it.
        if (role == ParamRole::TokenEmbedding || role == ParamRole::Head)
            t.padding = static_cast<size_t>(Vp_ - s.V) * static_cast<size_t>(C);
        t.shape = std::move(shape);
        if (s.lora.quantised_base() && quantised_role(role)) {  // kept apart, frozen
            t.padding = 0;
            t.trainable = false;
            num_params_ += t.numel;
            quantised_index_[static_cast<size_t>(slot_index(slot, t.layer, s.L))] =
                static_cast<int>(quantised_.size());
            quantised_.push_back(std::move(t));
            return;
        }
        t.offset = total_;
        total_ += t.numel + t.padding;
        num_params_ += t.numel;
        const bool lora = role == ParamRole::LoraA || role == ParamRole::LoraB;
        if (!lora)
            index_[static_cast<size_t>(slot_index(slot, t.layer, s.L))] =
                static_cast<int>(tensors_.size());
        else if (role == ParamRole::LoraA)
            lora_index_[static_cast<size_t>(slot_index(slot, t.layer, s.L))] =
                static_cast<int>(tensors_.size());
        tensors_.push_back(std::move(t));
    };
    // The family's tensors (model/family.h), in its HF order.
    const auto add_base = [&](const std::string& name, Slot slot) {
        add(name, slot, tensor_shape(s, slot), slot_role(slot));
    };
    const Family& f = s.family();
    for (const FamilyTensor& ft : f.before_blocks) add_base(ft.name, ft.slot);
    for (layer = 0; layer < s.L; ++layer)
        for (const FamilyTensor& ft : f.per_block)
            add_base(cat(f.layer_prefix, layer, ".", ft.name), ft.slot);
    layer = -1;
    for (const FamilyTensor& ft : f.after_blocks)
        if (ft.slot != Slot::Head || !s.tied) add_base(ft.name, ft.slot);
    // LoRA adapters after the whole base model, block by block, so the trainable part of a
    // LoRA run is one contiguous run of the buffer. Names follow PEFT's module naming.
    if (s.lora.on()) {
        const int per = static_cast<int>(Slot::kLayerSlots);
        TRT_CHECK(s.lora.targets.size() == static_cast<size_t>(s.L) * per,
                  "LoraSpec: targets has ", s.lora.targets.size(), " entries, expected L * ",
                  per);
        const int64_t r = s.lora.rank;
        for (layer = 0; layer < s.L; ++layer)
            for (int k = 0; k < per; ++k) {
                if (!s.lora.targets[static_cast<size_t>(layer * per + k)]) continue;
                const Slot slot = static_cast<Slot>(k);
                const ParamTensor* base = get(slot, layer);
                if (!base) base = quantised(slot, layer);
                TRT_CHECK(base && base->role == ParamRole::Linear, "LoraSpec: slot ", k,
                          " of the ", arch_name(s), " family is not a linear layer");
                const std::string module = base->name.substr(0, base->name.size() - 7);
                const LinearShape ls = linear_shape(s, slot);
                add(module + ".lora_A.weight", slot, {r, ls.in}, ParamRole::LoraA);
                add(module + ".lora_B.weight", slot, {ls.out, r}, ParamRole::LoraB);
            }
        layer = -1;
    }
    set_trainable(std::vector<bool>(tensors_.size(), true));
}

void ParamTable::set_trainable(const std::vector<bool>& trainable) {
    TRT_CHECK(trainable.size() == tensors_.size(), "set_trainable: ", trainable.size(),
              " flags for ", tensors_.size(), " tensors");
    grad_total_ = 0;
    num_trainable_ = 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
        ParamTensor& t = tensors_[i];
        t.trainable = trainable[i];
        t.grad_offset = t.trainable ? grad_total_ : 0;
        if (!t.trainable) continue;
        grad_total_ += t.numel + t.padding;
        num_trainable_ += t.numel;
    }
}

void ParamTable::clear_padding(float* host) const {
    for (const ParamTensor& t : tensors_)
        std::fill(host + t.offset + t.numel, host + t.offset + t.numel + t.padding, 0.0f);
}

const ParamTensor* ParamTable::get(Slot slot, int layer) const {
    const bool per_layer = static_cast<int>(slot) < static_cast<int>(Slot::kLayerSlots);
    if (slot == Slot::kSlots) return nullptr;
    if (per_layer && (layer < 0 || layer >= spec_.L)) return nullptr;
    const int i = index_[static_cast<size_t>(slot_index(slot, per_layer ? layer : 0, spec_.L))];
    return i < 0 ? nullptr : &tensors_[static_cast<size_t>(i)];
}

const ParamTensor* ParamTable::quantised(Slot slot, int layer) const {
    const bool per_layer = static_cast<int>(slot) < static_cast<int>(Slot::kLayerSlots);
    if (slot == Slot::kSlots) return nullptr;
    if (per_layer && (layer < 0 || layer >= spec_.L)) return nullptr;
    const int i =
        quantised_index_[static_cast<size_t>(slot_index(slot, per_layer ? layer : 0, spec_.L))];
    return i < 0 ? nullptr : &quantised_[static_cast<size_t>(i)];
}

const ParamTensor& ParamTable::at(Slot slot, int layer) const {
    const ParamTensor* t = get(slot, layer);
    TRT_CHECK(t != nullptr, "the ", arch_name(spec_), " parameter table has no tensor in slot ",
              static_cast<int>(slot), " of layer ", layer);
    return *t;
}

const ParamTensor* ParamTable::lora_a(Slot slot, int layer) const {
    if (!spec_.lora.on() || layer < 0 || layer >= spec_.L ||
        static_cast<int>(slot) >= static_cast<int>(Slot::kLayerSlots))
        return nullptr;
    const int i = lora_index_[static_cast<size_t>(slot_index(slot, layer, spec_.L))];
    return i < 0 ? nullptr : &tensors_[static_cast<size_t>(i)];
}

const ParamTensor* ParamTable::find(const std::string& name) const {
    for (const ParamTensor& t : tensors_)
        if (t.name == name) return &t;
    return nullptr;
}

const ParamTensor* ParamTable::find_quantised(const std::string& name) const {
    for (const ParamTensor& t : quantised_)
        if (t.name == name) return &t;
    return nullptr;
}

}  // namespace trt
