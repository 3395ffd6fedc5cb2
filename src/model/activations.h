// The activation plan: every buffer one micro-batch of B x T needs, in one place. The
// Decoder carves them out of one allocation; model_info sizes the same plan without
// allocating, so the reported memory is the allocated memory.
#pragma once
#include <cstddef>
#include <vector>

#include "model/param_table.h"

namespace trt {

struct LayerActivations {  // one decoder block, each [N = B*T, ...]
    float* ln1;        // [N, C] the attention's normalised input
    float* ln1_mean;   // [N] LayerNorm only
    float* ln1_rstd;   // [N]
    float* qkv;        // [N, qkv_width] (q and k rotated in place under RoPE)
    float* atty;       // [N, C] attention output, heads side by side
    float* att_saved;  // backend-defined (attention_saved_floats)
    float* attproj;    // [N, C]
    float* residual2;  // [N, C] residual stream after attention
    float* ln2;        // [N, C] the MLP's normalised input
    float* ln2_mean;   // [N] LayerNorm only
    float* ln2_rstd;   // [N]
    float* mlp_pre;    // [N, mlp_up_width] c_fc output (pre-GELU) | [gate | up]
    float* mlp_act;    // [N, F] GELU(c_fc) | silu(gate) * up
    float* fcproj;     // [N, C]
    float* residual3;  // [N, C] residual stream after the MLP (the block's output)
};

struct Activations {
    float* encoded;  // [N, C] token (+ position) embeddings
    std::vector<LayerActivations> layers;
    float *lnf, *lnf_mean, *lnf_rstd;  // [N, C], [N], [N]
    float* logits;   // [N, Vp]; becomes dlogits in forward_backward
    float* losses;   // [N]
    // Backward scratch, reused by every layer.
    float *dresidual, *dln, *datty;  // [N, C]
    float* dqkv;                     // [N, qkv_width]
    float *dmlp_pre, *dmlp_act;      // [N, mlp_up_width], [N, F]
    float* att_scratch;              // backend-defined (attention_scratch_floats)
};

// Lays the plan out from `base` (each buffer rounded up to 16 floats, so every one stays
// 64-byte aligned) into *out, and returns the floats it spans. With base == nullptr and
// out == nullptr it only counts.
size_t lay_out_activations(const ModelSpec& s, int B, int T, size_t att_saved,
                           size_t att_scratch, float* base, Activations* out);

}  // namespace trt
