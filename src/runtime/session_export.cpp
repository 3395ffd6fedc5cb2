// Session: export as a Hugging Face model folder (LoRA adapters merged) or as a PEFT adapter
// folder, from the parameters checked finite.
#include <optional>

#include "chat/end_of_turn.h"
#include "model/finite_check.h"
#include "model/lora.h"
#include "model/model_weights.h"
#include "model/peft_adapter.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer_files.h"

namespace trt {

void Session::export_hf(const std::string& out_dir, ExportDType dtype) {
    // The run's tokenizer goes into the folder too; found before anything is written.
    std::optional<tok::TokenizerFiles> tokenizer;
    if (!run_.data.tokenizer.empty())
        tokenizer = tok::find_tokenizer_files(run_.data.tokenizer, "export (data.tokenizer)");
    std::vector<float> params = params_for_export("export");
    const ParamTable& table = model_->table();
    if (table.spec().lora.quantised_base()) {  // merged into the full-precision base
        const ParamTable full(unquantised_spec(table.spec()));
        params = with_full_base(full, params);
        const std::vector<float> merged = merge_lora(full, params.data());
        trt::export_hf(out_dir, ParamTable(base_spec(table.spec())), merged.data(), dtype);
    } else if (table.has_lora()) {  // the adapters merged: a plain model of the base's family
        const std::vector<float> merged = merge_lora(table, params.data());
        trt::export_hf(out_dir, ParamTable(base_spec(table.spec())), merged.data(), dtype);
    } else {
        trt::export_hf(out_dir, table, params.data(), dtype);
    }
    if (tokenizer) {
        tok::copy_tokenizer_files(*tokenizer, out_dir, run_.model.context_length);
        chat::write_generation_config(*tokenizer, out_dir);
    }
}

void Session::export_adapter(const std::string& out_dir, ExportDType dtype) {
    if (!model_->table().has_lora())
        fail(Status::InvalidArgument, "export_adapter: the run has no LoRA adapters "
             "(lora.rank = 0); export the model instead");
    const std::vector<float> params = params_for_export("export_adapter");
    write_peft_adapter(model_->table(), params.data(), out_dir, run_.model.init_from,
                       dtype == ExportDType::BF16 ? DType::BF16 : DType::F32);
}

// A quantised base's export (as export_checkpoint does it): the base model.init_from holds, in
// full precision (its tensors' digests the ones the run started from), with the flat
// buffer's tensors (the adapters, the norms) over it, laid out by `full`.
std::vector<float> Session::with_full_base(const ParamTable& full, const std::vector<float>& flat) {
    const ParamTable& table = model_->table();
    std::vector<float> all(full.total());
    load_init_weights(full, run_.model.init_from, all.data());
    for (const ParamTensor& q : table.quantised_tensors()) {
        const ParamTensor* t = full.find(q.name);
        TRT_CHECK(t != nullptr, "export: '", q.name, "' is not in the unquantised table");
        const auto recorded = frozen_sha256_.find(q.name);
        if (recorded != frozen_sha256_.end() && recorded->second != tensor_sha256(*t, all.data()))
            fail(Status::Config, "export: model.init_from = '", run_.model.init_from,
                 "' is not the base this run started from ('", q.name,
                 "' differs, sha256); "
                 "nothing was written; restore that base, or export a checkpoint of this run "
                 "with it");
    }
    for (const ParamTensor& t : table.tensors()) {
        const ParamTensor* f = full.find(t.name);
        TRT_CHECK(f != nullptr, "export: '", t.name, "' is not in the unquantised table");
        std::copy(flat.begin() + static_cast<ptrdiff_t>(t.offset),
                  flat.begin() + static_cast<ptrdiff_t>(t.offset + t.numel + t.padding),
                  all.begin() + static_cast<ptrdiff_t>(f->offset));
    }
    return all;
}

std::vector<float> Session::params_for_export(const char* what) {
    const size_t n = model_->table().total();
    std::vector<float> params(n);
    backend_->synchronize();
    backend_->copy_to_host(params.data(), model_->params(), n * sizeof(float));
    require_finite(model_->table(), params.data(), cat(what, ": the parameters"),
                   "nothing was written; the run has diverged: export a good checkpoint "
                   "instead (trainrt_checkpoint_export)");
    return params;
}

}  // namespace trt
