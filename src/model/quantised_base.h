// The frozen base a QLoRA run keeps quantised (lora.base_dtype; ParamTable::quantised_tensors
// says which tensors): each block's linear weights as the decoder multiplies them — Llama's
// q/k/v_proj as one [q; k; v] matrix, gate/up_proj as one [gate; up], GPT-2's Conv1D weights
// transposed to [out, in] — in base_dtype, and the token embedding and an untied head in bf16,
// [Vp, C] with zero padding rows. Built a tensor at a time as the weights are read (never the
// whole model in fp32: the loaders hand each tensor to set() and forget it), then uploaded to
// backend memory once; the ops read it through QuantWeight views (core/base_quant.h).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/base_quant.h"
#include "model/param_table.h"

namespace trt {

class QuantisedBase {
public:
    QuantisedBase(Backend& backend, const ParamTable& table);
    ~QuantisedBase();
    QuantisedBase(const QuantisedBase&) = delete;
    QuantisedBase& operator=(const QuantisedBase&) = delete;

    bool empty() const { return groups_.empty(); }
    // One quantised tensor's values as its file holds them (t: one of the table's
    // quantised_tensors(); values: t.numel floats, HF layout). Any order; a matrix is
    // quantised once all of its tensors are in. Error(Format) naming `source` for a value
    // that is not finite (a damaged file, or one saved from a diverged run).
    void set(const ParamTensor& t, const float* values, const std::string& source);
    // Every tensor set: the matrices go to backend memory (the host copies are freed).
    // Error(Internal) naming the first tensor never set.
    void upload();
    bool uploaded() const { return uploaded_; }

    // The weight the decoder multiplies by for a linear slot of a block — Qkv (GPT-2), Q (the
    // fused q/k/v), AttnOut, Up (GPT-2's c_fc), Gate (the fused gate/up), Down — or for
    // TokenEmbedding / Head (layer -1); nullptr when that weight is not quantised.
    const QuantWeight* weight(Slot slot, int layer = -1) const;
    // Backend bytes of the quantised matrices (their codes and scales).
    size_t bytes() const;
    // What bytes() will be for a table, without building it (the memory plan).
    static size_t planned_bytes(const ParamTable& table);

private:
    struct Group;
    Group* group_of(const ParamTensor& t, size_t* index);
    void quantise(Group& g);

    Backend& be_;
    std::vector<std::unique_ptr<Group>> groups_;
    std::map<int, Group*> by_key_;  // slot_key(slot, layer) -> its group
    bool uploaded_ = false;
};

}  // namespace trt
