// What a model costs, computed from its shape without allocating it: `trainrt info` and
// trainrt_config_model_info. The activation figure is the Decoder's own plan (a test checks it
// against a real session's bytes_in_use).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/run_resolution.h"
#include "config/run_config.h"
#include "model/param_table.h"

namespace trt {

struct ModelInfo {
    int64_t parameters = 0;
    int64_t trainable_parameters = 0;  // train.trainable's share (= parameters by default)
    double flops_per_token = 0;  // training: 6N + 6·L·C·T (forward + backward, attention incl.)
    int64_t bytes_parameters = 0;
    int64_t bytes_optimizer = 0;    // grads + AdamW m, v (of the trainable tensors)
    int64_t bytes_activations = 0;  // one micro-batch B x T, forward + backward scratch
    int64_t bytes_total = 0;
};

// Attention buffers other than the sizing backend's own: a CUDA run on cuDNN attention, sized
// on the host from backend/cudnn_attention_sizes.h (saved and scratch floats as the backend's
// attention_*_floats would give; op_scratch_bytes: the staging the plans take beyond that).
struct AttentionSizing {
    size_t saved_floats = 0;
    size_t scratch_floats = 0;
    size_t op_scratch_bytes = 0;
};

// The output head's chunk (model/activations.h head_chunk_rows): accel.head_chunk_rows, and
// the logits per chunk where that is 0 (0 = the backend's own head_chunk_logits).
struct HeadChunking {
    int rows = 0;
    size_t logits = 0;
};

// trainable: train.trainable's patterns (empty: every tensor trains); recompute:
// train.recompute (the activations a block keeps); state: optim.state_dtype (AdamW's moments).
ModelInfo model_info(const ModelSpec& spec, int B, int T, const Backend& backend,
                     const AttentionSizing* attention = nullptr,
                     const std::vector<std::string>& trainable = {},
                     Recompute recompute = Recompute::None, StateDType state = StateDType::Fp32,
                     HeadChunking head = {});

// What a run of this config costs on the backend it resolves to (backend/run_resolution.h),
// at its train.batch_size (a number: "auto" is the session's to resolve): a CPU backend at
// the resolution's sizing precision stands in for the device, with cuDNN attention's buffers
// and CUDA's working copy where they apply. trainrt_config_model_info fills its struct from it.
ModelInfo run_model_info(const RunConfig& run, const RunResolution& resolution);

// A readable account of the model for `trainrt info`: the family and shape, then the
// parameters by part (embeddings, attention, MLP, norms, untied head) with their share.
std::string model_summary(const ModelSpec& spec);

}  // namespace trt
