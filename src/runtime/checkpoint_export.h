// Exporting a checkpoint without a session, for any run: a Hugging Face model folder (a LoRA
// run's adapters merged into the base weights) or, for a LoRA run, a PEFT adapter folder.
// The checkpoint's own config (state.json) says whether it has adapters.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "config/run_config.h"
#include "model/param_table.h"

namespace trt {

enum class ExportKind {
    Model,    // config.json + model.safetensors (adapters merged: W + alpha/r * B·A)
    Adapter,  // adapter_config.json + adapter_model.safetensors (LoRA runs only)
};

// A checkpoint that leaves its frozen base out (format 3) reads it, for a model export, from
// the model.init_from it records.
// Verifies the checkpoint as read_checkpoint does, calls before_writing (when given) with its
// state before anything is written, then writes out_dir. Error(InvalidArgument) for an
// adapter export of a run without adapters, or out_dir == the checkpoint.
void export_checkpoint(const std::string& checkpoint_dir, const std::string& out_dir,
                       ExportDType dtype, ExportKind kind,
                       const std::function<void(const CheckpointState&)>& before_writing = nullptr);

// The model a checkpoint holds, verified as read_checkpoint verifies it, its LoRA adapters
// merged (a format-3 checkpoint's frozen base read from its model.init_from): the run's
// config, the base model's spec and its flat parameters (ParamTable(spec)'s layout).
struct CheckpointModel {
    RunConfig run;
    ModelSpec spec;
    std::vector<float> params;
};
CheckpointModel read_checkpoint_model(const std::string& checkpoint_dir);
// A LoRA checkpoint's adapters, verified as read_checkpoint verifies them, without its base:
// the run's config, the spec with its adapters (lora.base_dtype as fp32: the table's layout of
// files) and the flat parameters, whose frozen base is zero where the checkpoint leaves it out.
// Error(InvalidArgument) for a run without adapters.
CheckpointModel read_checkpoint_adapters(const std::string& checkpoint_dir);

}  // namespace trt
