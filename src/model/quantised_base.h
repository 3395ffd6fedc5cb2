// The frozen base a QLoRA run keeps quantised (lora.base_dtype; ParamTable::quantised_tensors
// says which tensors): each block's linear weights as the decoder multiplies them — Llama's
// q/k/v_proj as one [q; k; v] matrix, gate/up_proj as one [gate; up], GPT-2's Conv1D weights
// transposed to [out, in] — in base_dtype, and the token embedding and an untied head in bf16,
// [Vp, C] with zero padding rows. Built as the weights are read, a piece of rows at a time
// (never the whole model, nor a whole large tensor, in fp32: the loaders hand each piece to
// set_rows() and forget it), each matrix put in backend memory as soon as it is complete;
// the ops read it through QuantWeight views (core/base_quant.h).
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
    // Rows [row0, row0 + rows) of a quantised tensor as its file holds them (t: one of the
    // table's quantised_tensors(); values: rows x t.shape[1] floats, HF layout), each tensor's
    // rows in order, pieces of whole NF4 blocks but the last (rows_per_piece says how many);
    // tensors in any order (a tensor that is not the next of its matrix waits in fp32).
    // Error(Format) naming `source` for a value that is not finite (a damaged file, or one
    // saved from a diverged run).
    void set_rows(const ParamTensor& t, const float* values, int64_t row0, int64_t rows,
                  const std::string& source);
    void set(const ParamTensor& t, const float* values, const std::string& source) {
        set_rows(t, values, 0, t.shape[0], source);
    }
    // Rows a loader's piece of t should hold: about 4 Mi values, whole NF4 blocks.
    static int64_t rows_per_piece(const ParamTensor& t);
    // Every tensor set (Error(Internal) naming the first one that was not): ready.
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
    void advance(Group& g);  // past its next tensor, streaming any that waited
    void finish(Group& g);   // padding rows, then into backend memory

    Backend& be_;
    std::vector<std::unique_ptr<Group>> groups_;
    std::map<int, Group*> by_key_;  // slot_key(slot, layer) -> its group
    bool uploaded_ = false;
};

}  // namespace trt
