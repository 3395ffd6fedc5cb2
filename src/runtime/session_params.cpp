// Session: the model's tensors read and written as fp32 through the C API (federated
// averaging, personalisation, inspection), and the user's key/value metadata that
// checkpoints carry. The flat buffer the C API speaks of is every tensor in table order,
// back to back: the backend's buffer without its zero padding rows (param_table.h).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "checkpoint/checkpoint_metadata.h"
#include "core/nearest.h"
#include "core/quote.h"
#include "runtime/session.h"

namespace trt {

const ParamTensor& Session::named_tensor(const char* what, const std::string& name) const {
    if (const ParamTensor* t = model_->table().find(name)) return *t;
    std::vector<std::string> names;
    for (const ParamTensor& t : model_->table().tensors()) names.push_back(t.name);
    const std::string near = nearest(name, names);
    fail(Status::InvalidArgument, what, ": the model has no tensor '", name, "'",
         near.empty() ? cat(" (its ", names.size(), " tensors are listed by "
                            "trainrt_session_param_info; the first is '", names.front(), "')")
                      : cat("; did you mean '", near, "'?"));
}

namespace {

size_t unpadded_total(const ParamTable& table) {
    size_t n = 0;
    for (const ParamTensor& t : table.tensors()) n += t.numel;
    return n;
}

void require_count(const char* what, const std::string& which, size_t count, size_t expected) {
    if (count != expected)
        fail(Status::InvalidArgument, what, ": ", which, " holds ", expected,
             " floats, but the buffer passed holds ", count, "; pass exactly ", expected);
}

}  // namespace

void Session::read_params(const char* name, float* out, size_t count) {
    const ParamTable& table = model_->table();
    sync();  // the steps in flight update these weights
    if (name) {
        const ParamTensor& t = named_tensor("read_params", name);
        require_count("read_params", cat("tensor '", t.name, "'"), count, t.numel);
        backend_->copy_to_host(out, model_->params() + t.offset, t.numel * sizeof(float));
        return;
    }
    require_count("read_params", "the flat buffer (every tensor)", count, unpadded_total(table));
    std::vector<float> host(table.total());
    backend_->copy_to_host(host.data(), model_->params(), host.size() * sizeof(float));
    for (const ParamTensor& t : table.tensors()) {
        std::copy(host.begin() + static_cast<ptrdiff_t>(t.offset),
                  host.begin() + static_cast<ptrdiff_t>(t.offset + t.numel), out);
        out += t.numel;
    }
}

void Session::write_params(const char* name, const float* values, size_t count) {
    const ParamTable& table = model_->table();
    std::vector<const ParamTensor*> targets;
    if (name) {
        targets.push_back(&named_tensor("write_params", name));
        require_count("write_params", cat("tensor '", targets[0]->name, "'"), count,
                      targets[0]->numel);
    } else {
        require_count("write_params", "the flat buffer (every tensor)", count,
                      unpadded_total(table));
        for (const ParamTensor& t : table.tensors()) targets.push_back(&t);
    }
    // Every value checked before any is written: a refused write changes nothing.
    const float* v = values;
    for (const ParamTensor* t : targets) {
        for (size_t i = 0; i < t->numel; ++i)
            if (!std::isfinite(v[i]))
                fail(Status::NonFinite, "write_params: tensor '", t->name, "' would get ", v[i],
                     " at element ", i, " of ", t->numel, "; nothing was written");
        v += t->numel;
    }
    sync();
    // copy_to_device refreshes the backend's bf16/fp16 working copy of what it writes: the
    // flat buffer goes in one copy (padding rows zero, as ParamTable keeps them), so a backend
    // that re-casts the whole copy does it once.
    if (name) {
        backend_->copy_to_device(model_->params() + targets[0]->offset, values,
                                 targets[0]->numel * sizeof(float));
    } else {
        std::vector<float> padded(table.total(), 0.0f);
        v = values;
        for (const ParamTensor& t : table.tensors()) {
            std::copy(v, v + t.numel, padded.begin() + static_cast<ptrdiff_t>(t.offset));
            v += t.numel;
        }
        backend_->copy_to_device(model_->params(), padded.data(), padded.size() * sizeof(float));
    }
    // A frozen tensor that no longer holds model.init_from's values must be stored by later
    // checkpoints (as load() decides for a checkpoint's values).
    for (const ParamTensor* t : targets)
        if (frozen_sha256_.count(t->name)) store_frozen_tensors();
    own_checkpoint_.clear();  // a save at this step must write the new weights
}

void Session::set_metadata(const std::string& key, const std::string* value) {
    if (!value) {  // removal: a key outside the rules cannot be there, so nothing to remove
        metadata_.erase(key);
    } else {
        check_metadata_entry("set_metadata", key, value);
        if (!metadata_.count(key) && metadata_.size() >= kMaxMetadataKeys)
            fail(Status::InvalidArgument, "set_metadata: the session already holds ",
                 kMaxMetadataKeys, " keys, the most a checkpoint carries; remove one first");
        size_t json_bytes = metadata_entry_json_bytes(key, *value);
        for (const auto& [k, v] : metadata_)
            if (k != key) json_bytes += metadata_entry_json_bytes(k, v);
        if (json_bytes > kMaxMetadataJsonBytes)
            fail(Status::InvalidArgument, "set_metadata: the metadata would take ", json_bytes,
                 " bytes in a checkpoint (JSON-escaped; a control character takes 6), more than "
                 "the ", kMaxMetadataJsonBytes, " kept; store large values in files of your own");
        metadata_[key] = *value;
    }
    own_checkpoint_.clear();  // a save at this step must write the new metadata
}

}  // namespace trt
