#include "runtime/checkpoint_export.h"

#include <vector>

#include "config/config.h"
#include "core/error.h"
#include "model/lora.h"
#include "model/model_weights.h"
#include "model/peft_adapter.h"

namespace trt {

void export_checkpoint(const std::string& dir, const std::string& out_dir, ExportDType dtype,
                       ExportKind kind,
                       const std::function<void(const CheckpointState&)>& before_writing) {
    const CheckpointState recorded = read_checkpoint_state(dir);
    const RunConfig run = Config::from_string(recorded.config_toml, "", dir + "/state.json").run();
    if (run.lora.rank == 0 && kind == ExportKind::Adapter)
        fail(Status::InvalidArgument, "checkpoint '", dir, "' has no LoRA adapters (its run "
             "had lora.rank = 0); export it as a model instead");
    // Every tensor stored, no adapters: the plain export.
    if (run.lora.rank == 0 && recorded.frozen_sha256.empty())
        return export_checkpoint_hf(dir, out_dir, dtype, kDefaultMaxShardBytes, before_writing);
    refuse_export_into_checkpoint(dir, out_dir, "export");
    ModelSpec spec = read_checkpoint_model_spec(dir);
    // A file gets the base as loaded (a QLoRA run's adapters merge into the full-precision
    // base its model.init_from holds, not into its quantised copy).
    spec.lora = lora_spec(run.lora, spec);
    spec.lora.base_dtype = BaseDType::Fp32;
    const ParamTable table(spec);
    std::vector<float> params(table.total());
    // A checkpoint without its frozen base (format 3): a model export reads the base from
    // the model.init_from it names (verified against its digests); an adapter export needs
    // only the adapters.
    const bool need_base = kind == ExportKind::Model && !recorded.frozen_sha256.empty();
    if (need_base) load_init_weights(table, recorded.frozen_from, params.data());
    const CheckpointState state = read_checkpoint(dir, table, params.data(), nullptr, nullptr,
                                                  nullptr, need_base);
    if (before_writing) before_writing(state);
    if (kind == ExportKind::Adapter) {
        write_peft_adapter(table, params.data(), out_dir, run.model.init_from,
                           dtype == ExportDType::BF16 ? DType::BF16 : DType::F32);
        return;
    }
    const std::vector<float> merged = merge_lora(table, params.data());
    export_hf(out_dir, ParamTable(base_spec(spec)), merged.data(), dtype);
}

CheckpointModel read_checkpoint_adapters(const std::string& dir) {
    const CheckpointState recorded = read_checkpoint_state(dir);
    CheckpointModel m;
    m.run = Config::from_string(recorded.config_toml, "", dir + "/state.json").run();
    if (m.run.lora.rank == 0)
        fail(Status::InvalidArgument, "checkpoint '", dir,
             "' has no LoRA adapters (its run "
             "had lora.rank = 0); export it as a model instead");
    m.spec = read_checkpoint_model_spec(dir);
    m.spec.lora = lora_spec(m.run.lora, m.spec);
    m.spec.lora.base_dtype = BaseDType::Fp32;
    const ParamTable table(m.spec);
    m.params.assign(table.total(), 0.0f);
    read_checkpoint(dir, table, m.params.data(), nullptr, nullptr, nullptr, false);
    return m;
}

CheckpointModel read_checkpoint_model(const std::string& dir) {
    const CheckpointState recorded = read_checkpoint_state(dir);
    CheckpointModel m;
    m.run = Config::from_string(recorded.config_toml, "", dir + "/state.json").run();
    ModelSpec spec = read_checkpoint_model_spec(dir);
    spec.lora = lora_spec(m.run.lora, spec);
    spec.lora.base_dtype = BaseDType::Fp32;  // the full-precision base, as above
    const ParamTable table(spec);
    std::vector<float> params(table.total());
    const bool need_base = !recorded.frozen_sha256.empty();
    if (need_base) load_init_weights(table, recorded.frozen_from, params.data());
    read_checkpoint(dir, table, params.data(), nullptr, nullptr, nullptr, need_base);
    m.spec = base_spec(spec);
    m.params = spec.lora.on() ? merge_lora(table, params.data()) : std::move(params);
    return m;
}

}  // namespace trt
