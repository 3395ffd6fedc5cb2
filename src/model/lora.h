// LoRA (Hu et al. 2021, as Hugging Face PEFT implements it): [lora] in the run config
// becomes the model's LoraSpec — which linear layers get an adapter, its rank and scale. The
// adapters are parameters of the table (ParamRole::LoraA / LoraB, after the base model); the
// decoder adds scale * (x · Aᵀ) · Bᵀ to each targeted layer's output, and only they train
// unless train.trainable names base tensors too.
#pragma once
#include <string>
#include <vector>

#include "config/run_config.h"
#include "model/param_table.h"

namespace trt {

// The family's linear slots, in block order (gpt2: c_attn, attn.c_proj, c_fc, mlp.c_proj;
// llama: q/k/v/o_proj, gate/up/down_proj).
std::vector<Slot> linear_slots(const ModelSpec& s);

// PEFT's target_modules rule: `key` names the module at `module_path` when the path is the
// key or ends with "." + key ("c_proj" names attn.c_proj and mlp.c_proj, "mlp.c_proj" one).
bool module_matches(const std::string& key, const std::string& module_path);

// [lora] resolved against the model: rank 0 gives an empty LoraSpec. Error(Config) naming
// lora.target_modules for a name that matches no linear layer (with the family's module
// names). Empty target_modules: PEFT's default for the family (gpt2: c_attn; llama: q_proj,
// v_proj); "all-linear": every linear layer of every block (not the output head).
LoraSpec lora_spec(const LoraConfig& config, const ModelSpec& model);

// The model a run trains: [model]'s spec with [lora]'s adapters.
ModelSpec run_model_spec(const RunConfig& run);

// The spec without its adapters (the base model), and the base model's weights with every
// adapter merged in: W += scale * B·A (in W's layout: transposed for GPT-2's [in, out]),
// summed in double and rounded once. host_params: the table's flat buffer; the result is
// laid out by ParamTable(base_spec(table.spec())) — the base tensors keep their offsets, the
// adapters follow them.
ModelSpec base_spec(const ModelSpec& spec);
std::vector<float> merge_lora(const ParamTable& table, const float* host_params);

// Fresh adapters as PEFT initialises them: A ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform_
// with a = sqrt(5)), B = 0, so the model starts as the base model. Deterministic for a seed.
void init_lora(const ParamTable& table, uint64_t seed, float* host_params);

}  // namespace trt
