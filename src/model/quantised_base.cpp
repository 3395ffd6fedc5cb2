#include "model/quantised_base.h"

#include <cmath>

#include "core/error.h"

namespace trt {

namespace {

// A map key for (slot, layer): per-layer slots by layer, the global ones after them.
int slot_key(Slot slot, int layer) {
    return (layer + 1) * static_cast<int>(Slot::kSlots) + static_cast<int>(slot);
}

// The matrix a quantised tensor belongs to (the decoder's fused matmuls) and its place in it.
Slot group_slot(const ModelSpec& s, Slot slot, int* position) {
    *position = 0;
    if (s.split_qkv() && (slot == Slot::Q || slot == Slot::K || slot == Slot::V)) {
        *position = slot == Slot::Q ? 0 : slot == Slot::K ? 1 : 2;
        return Slot::Q;
    }
    if (s.gated_mlp() && (slot == Slot::Gate || slot == Slot::Up)) {
        *position = slot == Slot::Gate ? 0 : 1;
        return Slot::Gate;
    }
    return slot;
}

// How a tensor is stored: the base dtype for the linears, bf16 for the vocabulary matrices.
BaseDType storage_of(const ParamTensor& t, const LoraSpec& lora) {
    return t.role == ParamRole::Linear ? lora.base_dtype : BaseDType::Bf16;
}

// [rows, cols] of a tensor as the matrix holds it ([out, in]; GPT-2's Conv1D is [in, out]).
void oriented_shape(const ParamTensor& t, const ModelSpec& s, int* rows, int* cols) {
    const bool transpose = t.role == ParamRole::Linear && s.linear_layout() == WeightLayout::InOut;
    *rows = static_cast<int>(t.shape[transpose ? 1 : 0]);
    *cols = static_cast<int>(t.shape[transpose ? 0 : 1]);
}

}  // namespace

struct QuantisedBase::Group {
    BaseDType type = BaseDType::Fp32;
    bool double_quant = false;
    int cols = 0;
    bool transpose = false;  // GPT-2's Conv1D weights: [in, out] in files
    int pad_rows = 0;        // zero rows after the last tensor (the vocabulary's padding)
    std::vector<const ParamTensor*> members;  // in row order
    std::vector<std::vector<float>> pending;  // [member]: [rows, cols], until quantised
    std::vector<bool> have;
    std::unique_ptr<QuantisedMatrix> host;
    void* buffers[4] = {nullptr, nullptr, nullptr, nullptr};
    QuantWeight view;
};

QuantisedBase::QuantisedBase(Backend& backend, const ParamTable& table) : be_(backend) {
    const ModelSpec& s = table.spec();
    for (const ParamTensor& t : table.quantised_tensors()) {
        int position = 0;
        const Slot slot = group_slot(s, t.slot, &position);
        Group*& g = by_key_[slot_key(slot, t.layer)];
        if (!g) {
            groups_.push_back(std::make_unique<Group>());
            g = groups_.back().get();
            g->type = storage_of(t, s.lora);
            g->double_quant = s.lora.double_quant;
            int rows = 0;
            oriented_shape(t, s, &rows, &g->cols);
            g->transpose = t.role == ParamRole::Linear && s.linear_layout() == WeightLayout::InOut;
            if (t.role != ParamRole::Linear) g->pad_rows = table.padded_vocab() - s.V;
        }
        if (g->members.size() <= static_cast<size_t>(position))
            g->members.resize(static_cast<size_t>(position) + 1, nullptr);
        g->members[static_cast<size_t>(position)] = &t;
    }
    for (auto& g : groups_) {
        for (const ParamTensor* m : g->members)
            TRT_CHECK(m != nullptr, "QuantisedBase: a fused matrix misses one of its tensors");
        g->pending.resize(g->members.size());
        g->have.assign(g->members.size(), false);
    }
}

QuantisedBase::~QuantisedBase() {
    for (auto& g : groups_)
        for (void* p : g->buffers) be_.free(p);
}

QuantisedBase::Group* QuantisedBase::group_of(const ParamTensor& t, size_t* index) {
    for (auto& g : groups_)
        for (size_t i = 0; i < g->members.size(); ++i)
            if (g->members[i]->name == t.name) {
                *index = i;
                return g.get();
            }
    fail(Status::Internal, "QuantisedBase: '", t.name, "' is not a quantised tensor");
}

void QuantisedBase::set(const ParamTensor& t, const float* values, const std::string& source) {
    TRT_CHECK(!uploaded_, "QuantisedBase::set after upload");
    size_t i = 0;
    Group& g = *group_of(t, &i);
    for (size_t e = 0; e < t.numel; ++e)
        if (!std::isfinite(values[e]))
            fail(Status::Format, source, ": tensor '", t.name, "' holds ", values[e],
                 " at element ", e,
                 "; its weights are unusable (a damaged file, or one saved "
                 "from a diverged run)");
    std::vector<float>& m = g.pending[i];
    if (g.transpose) {  // Conv1D [in, out] -> [out, in]
        const size_t in = static_cast<size_t>(t.shape[0]), out = static_cast<size_t>(t.shape[1]);
        m.resize(t.numel);
        for (size_t r = 0; r < in; ++r)
            for (size_t c = 0; c < out; ++c) m[c * in + r] = values[r * out + c];
    } else {
        m.assign(values, values + t.numel);
    }
    g.have[i] = true;
    for (bool h : g.have)
        if (!h) return;
    quantise(g);
}

void QuantisedBase::quantise(Group& g) {
    g.host = std::make_unique<QuantisedMatrix>(g.type, g.double_quant, g.cols);
    for (std::vector<float>& m : g.pending) {
        g.host->append(m.data(), static_cast<int>(m.size() / static_cast<size_t>(g.cols)));
        std::vector<float>().swap(m);
    }
    if (g.pad_rows > 0) {
        const std::vector<float> zeros(static_cast<size_t>(g.pad_rows) * g.cols, 0.0f);
        g.host->append(zeros.data(), g.pad_rows);
    }
}

void QuantisedBase::upload() {
    for (auto& g : groups_) {
        for (size_t i = 0; i < g->members.size(); ++i)
            TRT_CHECK(g->have[i], "QuantisedBase::upload: tensor '", g->members[i]->name,
                      "' was never set");
        const QuantisedMatrix& m = *g->host;
        auto put = [&](int slot, const auto& v) -> const void* {
            if (v.empty()) return nullptr;
            const size_t bytes = v.size() * sizeof(v[0]);
            g->buffers[slot] = be_.alloc(bytes, "quantised base");
            be_.copy_to_device(g->buffers[slot], v.data(), bytes);
            return g->buffers[slot];
        };
        const void* data = put(0, m.data());
        const void* scales = put(1, m.scales());
        const void* codes = put(2, m.scale_codes());
        const void* scales2 = put(3, m.scales2());
        g->view = m.view(data, static_cast<const float*>(scales),
                         static_cast<const uint8_t*>(codes), static_cast<const float*>(scales2));
        g->host.reset();
    }
    uploaded_ = true;
}

const QuantWeight* QuantisedBase::weight(Slot slot, int layer) const {
    const auto it = by_key_.find(slot_key(slot, layer));
    if (it == by_key_.end()) return nullptr;
    TRT_CHECK(uploaded_, "QuantisedBase: the quantised base was never uploaded");
    return &it->second->view;
}

size_t QuantisedBase::bytes() const {
    size_t n = 0;
    for (const auto& g : groups_) n += g->view.bytes();
    return n;
}

size_t QuantisedBase::planned_bytes(const ParamTable& table) {
    const ModelSpec& s = table.spec();
    size_t n = 0;
    for (const ParamTensor& t : table.quantised_tensors()) {
        int rows = 0, cols = 0;
        oriented_shape(t, s, &rows, &cols);
        const size_t e = t.numel;
        switch (storage_of(t, s.lora)) {
            case BaseDType::Fp32:
                n += 4 * e;
                break;
            case BaseDType::Bf16:
                n += 2 * (e + (t.role == ParamRole::Linear
                                   ? 0
                                   : static_cast<size_t>(table.padded_vocab() - s.V) * cols));
                break;
            case BaseDType::Int8:
                n += e + 4 * static_cast<size_t>(rows);
                break;
            case BaseDType::Nf4: {
                const size_t blocks = nf4_blocks(e);
                n += nf4_code_bytes(e) +
                     (s.lora.double_quant ? blocks + 4 * nf4_dq_blocks(blocks) : 4 * blocks);
                break;
            }
        }
    }
    return n;
}

}  // namespace trt
