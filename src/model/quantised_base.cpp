#include "model/quantised_base.h"

#include <algorithm>
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
    std::vector<std::vector<float>> waiting;  // [member]: fp32 rows of a tensor not yet next
    std::vector<int64_t> rows_in;             // [member]: rows received
    size_t next = 0;                          // the member being quantised
    std::unique_ptr<QuantisedMatrix> host;
    void* buffers[4] = {nullptr, nullptr, nullptr, nullptr};
    QuantWeight view;
    bool done = false;

    int member_rows(size_t i) const {  // [out, in] rows of member i
        const ParamTensor& t = *members[i];
        return static_cast<int>(transpose ? t.shape[1] : t.shape[0]);
    }
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
        g->waiting.resize(g->members.size());
        g->rows_in.assign(g->members.size(), 0);
        g->host = std::make_unique<QuantisedMatrix>(g->type, g->double_quant, g->cols);
        int rows = g->pad_rows;
        for (size_t i = 0; i < g->members.size(); ++i) rows += g->member_rows(i);
        g->host->reserve(rows);
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

int64_t QuantisedBase::rows_per_piece(const ParamTensor& t) {
    const int64_t cols = t.shape.size() > 1 ? t.shape[1] : 1;
    const int64_t rows = std::max<int64_t>(1, (int64_t{1} << 22) / cols) / kNf4Block * kNf4Block;
    return std::max<int64_t>(kNf4Block, rows);  // a multiple of 64 rows: whole blocks
}

void QuantisedBase::set_rows(const ParamTensor& t, const float* values, int64_t row0, int64_t rows,
                             const std::string& source) {
    TRT_CHECK(!uploaded_, "QuantisedBase::set_rows after upload");
    size_t i = 0;
    Group& g = *group_of(t, &i);
    const size_t cols = static_cast<size_t>(t.shape[1]), n = static_cast<size_t>(rows) * cols;
    TRT_CHECK(row0 == g.rows_in[i] && row0 + rows <= t.shape[0], "QuantisedBase: rows ", row0, "..",
              row0 + rows, " of '", t.name, "' out of order");
    for (size_t e = 0; e < n; ++e)
        if (!std::isfinite(values[e]))
            fail(Status::Format, source, ": tensor '", t.name, "' holds ", values[e],
                 " at element ", static_cast<size_t>(row0) * cols + e,
                 "; its weights are unusable (a damaged file, or one saved from a diverged run)");
    g.rows_in[i] += rows;
    const bool whole = g.rows_in[i] == t.shape[0];
    if (g.transpose || i != g.next || !g.waiting[i].empty()) {  // fp32 until whole and next
        g.waiting[i].insert(g.waiting[i].end(), values, values + n);
        if (whole && i == g.next) advance(g);
        return;
    }
    if (row0 == 0) g.host->begin(g.member_rows(i));
    g.host->add_rows(values, static_cast<int>(rows));
    if (whole) advance(g);
}

void QuantisedBase::advance(Group& g) {
    while (g.next < g.members.size() && g.rows_in[g.next] == g.members[g.next]->shape[0]) {
        std::vector<float>& w = g.waiting[g.next];
        if (!w.empty()) {  // a tensor that waited whole (or GPT-2's, to transpose)
            const ParamTensor& t = *g.members[g.next];
            if (g.transpose) {  // Conv1D [in, out] -> [out, in]
                const size_t in = static_cast<size_t>(t.shape[0]),
                             out = static_cast<size_t>(t.shape[1]);
                std::vector<float> m(t.numel);
                for (size_t r = 0; r < in; ++r)
                    for (size_t c = 0; c < out; ++c) m[c * in + r] = w[r * out + c];
                w.swap(m);
            }
            g.host->append(w.data(), g.member_rows(g.next));
            std::vector<float>().swap(w);
        } else
            g.host->end();  // streamed: its rows are in
        ++g.next;
    }
    if (g.next == g.members.size()) finish(g);
}

void QuantisedBase::finish(Group& g) {
    if (g.pad_rows > 0) {
        const std::vector<float> zeros(static_cast<size_t>(g.pad_rows) * g.cols, 0.0f);
        g.host->append(zeros.data(), g.pad_rows);
    }
    const QuantisedMatrix& m = *g.host;
    auto put = [&](int slot, const auto& v) -> const void* {
        if (v.empty()) return nullptr;
        const size_t bytes = v.size() * sizeof(v[0]);
        g.buffers[slot] = be_.alloc(bytes, "quantised base");
        be_.copy_to_device(g.buffers[slot], v.data(), bytes);
        return g.buffers[slot];
    };
    const void* data = put(0, m.data());
    const void* scales = put(1, m.scales());
    const void* codes = put(2, m.scale_codes());
    const void* scales2 = put(3, m.scales2());
    g.view = m.view(data, static_cast<const float*>(scales), static_cast<const uint8_t*>(codes),
                    static_cast<const float*>(scales2));
    g.host.reset();
    g.done = true;
}

void QuantisedBase::upload() {
    for (auto& g : groups_)
        for (size_t i = 0; i < g->members.size(); ++i)
            TRT_CHECK(g->done, "QuantisedBase::upload: tensor '", g->members[i]->name,
                      "' was not set whole (", g->rows_in[i], " of ", g->members[i]->shape[0],
                      " rows)");
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
