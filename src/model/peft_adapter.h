// LoRA adapters in Hugging Face PEFT's folder layout (what PeftModel.save_pretrained writes
// and from_pretrained reads):
//   adapter_config.json         {"peft_type": "LORA", "r", "lora_alpha", "target_modules",
//                                "base_model_name_or_path", "fan_in_fan_out", ...}
//   adapter_model.safetensors   "base_model.model.<module path>.lora_A.weight" [r, in] and
//                                ".lora_B.weight" [out, r] per adapted module
// where the module path is the transformers one (GPT-2: "transformer.h.0.attn.c_attn";
// Llama: "model.layers.0.self_attn.q_proj").
#pragma once
#include <string>

#include "model/param_table.h"

namespace trt {

inline constexpr const char* kPeftConfigFile = "adapter_config.json";
inline constexpr const char* kPeftWeightsFile = "adapter_model.safetensors";

// The PEFT name of one of the table's adapter tensors ("h.0.attn.c_attn.lora_A.weight" ->
// "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight").
std::string peft_tensor_name(const ModelSpec& spec, const std::string& name);

// lora.init_from: fills the table's adapters from a PEFT folder. Error(Config) when the
// folder's r / lora_alpha differ from the table's (naming lora.rank / lora.alpha), when it
// adapts other modules than lora.target_modules selects (naming one), or asks for what this
// runtime does not do (use_rslora, use_dora, bias other than "none"); Error(Format) for a
// malformed file; Error(Io) for a missing one. Nothing is written unless all checks pass.
void load_peft_adapter(const ParamTable& table, const std::string& dir, float* host_params);

// Writes the table's adapters (from the flat host params) as a PEFT folder, creating `dir`:
// each file atomically, and never a new file beside an old one (an older config is removed
// first, the new one written last). base_model: recorded as base_model_name_or_path.
void write_peft_adapter(const ParamTable& table, const float* host_params, const std::string& dir,
                        const std::string& base_model, DType dtype = DType::F32);

}  // namespace trt
