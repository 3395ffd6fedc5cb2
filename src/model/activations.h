// The activation plan: every buffer one micro-batch of B x T needs, in one place. The
// Decoder carves them out of one allocation; model_info sizes the same plan without
// allocating, so the reported memory is the allocated memory.
//
// Activations and their gradients (Act) are stored in the backend's activation dtype (fp32,
// or bf16); norm statistics, losses and the backend's attention state stay fp32 (float*):
// they are few, and the backward needs them exact (docs/PRECISION.md).
#pragma once
#include <cstddef>
#include <vector>

#include "backend/backend.h"
#include "model/param_table.h"

namespace trt {

// Which buffers a block keeps for the backward (train.recompute); the others are one buffer
// shared by every block, which the backward refills by re-running that part of the block's
// forward (the same ops on the same inputs: the same bits).
//   none   every block keeps everything the backward reads
//   mlp    mlp_pre and mlp_act shared (recomputed from ln2)
//   block  a block keeps ln1 (+ stats) and residual3 only; qkv, attention state, residual2,
//          ln2 and the MLP's buffers are shared (recomputed from ln1)
// attproj and fcproj are shared in every mode: only the forward's fused residual norms read
// them.
struct LayerActivations {  // one decoder block, each [N = B*T, ...]
    Act ln1;           // [N, C] the attention's normalised input
    float* ln1_mean;   // [N] LayerNorm only
    float* ln1_rstd;   // [N]
    Act qkv;           // [N, qkv_width] (q and k rotated in place under RoPE)
    // Qwen3's q/k norms (empty otherwise): the heads before the norm, [N*NH, hs] of q then
    // [N*NKV, hs] of k, and each head's rstd [N*NH] then [N*NKV].
    Act qk_pre;
    float* qk_rstd;
    Act atty;          // [N, NH*hs] attention output, heads side by side (C unless head_dim)
    float* att_saved;  // backend-defined (attention_saved_floats; twice that with dropout)
    Act attproj;       // [N, C]
    Act residual2;     // [N, C] residual stream after attention
    Act ln2;           // [N, C] the MLP's normalised input
    float* ln2_mean;   // [N] LayerNorm only
    float* ln2_rstd;   // [N]
    Act mlp_pre;       // [N, mlp_up_width] c_fc output (pre-GELU) | [gate | up]
    Act mlp_act;       // [N, F] GELU(c_fc) | silu(gate) * up
    Act fcproj;        // [N, C]
    Act residual3;     // [N, C] residual stream after the MLP (the block's output)
};

struct Activations {
    Act encoded;  // [N, C] token (+ position) embeddings
    std::vector<LayerActivations> layers;
    Act lnf;                      // [N, C]
    float *lnf_mean, *lnf_rstd;   // [N], [N]
    Act logits;    // [head_chunk_rows, Vp]: one chunk of the head's rows; becomes dlogits
    float* losses;  // [N]
    // Backward scratch, reused by every layer.
    Act dresidual, dln;  // [N, C]
    Act datty;           // [N, NH*hs]
    Act dqkv;                   // [N, qkv_width]
    Act dmlp_pre, dmlp_act;     // [N, mlp_up_width], [N, F]
    float* att_scratch;         // backend-defined (attention_scratch_floats)
    // Qwen3's q/k norms (empty otherwise), [N*(NH+NKV), hs] each: the normalised heads in
    // the forward, their gradient in the backward; and the gradient of the heads before it.
    Act qk_tmp, dqk_pre;
    // LoRA scratch (model/lora.h; empty without adapters), reused by every adapter: the
    // backward recomputes x · Aᵀ instead of keeping it.
    Act lora_mid, lora_dmid;  // [N, rank]: x · Aᵀ and its gradient
    Act lora_wide;            // [N, widest adapted in/out]: the update, then g, then dx
    Act lora_x;               // [N, widest adapted in]: the dropped input (lora.dropout > 0)
};

// The output head runs on chunks of rows (chunked linear + cross-entropy, Decoder::head_loss):
// logits and their gradient exist for this many rows at a time, never [B·T, Vp] for a step.
// `rows` (accel.head_chunk_rows) when it is set, capped at N; else about `logits` logits per
// chunk (the backend's BackendCaps::head_chunk_logits: 32 Mi on the CPU, 512 Mi on a GPU), a
// multiple of 64 rows where that is at least 64. A micro-batch that fits is one chunk.
// Depends only on the shapes, the key and the kind of backend, so the chunks (and the order
// of the head's gradient sums) are the same on every machine and thread count.
int head_chunk_rows(int Vp, int N, int rows, size_t logits);
// The `logits` for head_chunk_rows of a table (its trainable flags set): the backend's figure,
// but at most the host's (kHostHeadChunkLogits) where the head takes no weight gradient
// (frozen, as under LoRA, or quantised). The device's larger chunk is there for the
// gradient's read-modify-write per chunk (backend.h); without it what is left is memory for
// time: each chunk reads the head weight twice (a quantised head: dequantises it twice), while
// the logits buffer shrinks (Llama-3.1-8B at T 2048 in bf16: 8 chunks, 64 MiB instead of
// 501 MiB) — the trade a run that freezes its base makes for memory.
size_t head_chunk_logits(const ParamTable& table, size_t backend_logits);

// What the backend is told of a model of table's spec (and trainable flags) at B x T
// (Backend::reserve, op_scratch_bytes).
ModelDims model_dims(const ParamTable& table, int B, int T);

// Lays the plan out from `base` (each buffer rounded up to 64 bytes, so every one stays
// 64-byte aligned) into *out, activations (Act) in `act` elements, and returns the bytes it
// spans. With base == nullptr and out == nullptr it only counts.
// head_rows: rows per chunk of the output head (head_chunk_rows).
size_t lay_out_activations(const ModelSpec& s, int B, int T, size_t att_saved, size_t att_scratch,
                           DType act, Recompute recompute, void* base, Activations* out,
                           int head_rows);

}  // namespace trt
