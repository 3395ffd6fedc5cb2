// Decoder: the forward/backward orchestration of a decoder-only transformer, written once
// against the Backend op set for every family of model/param_table.h (GPT-2, Llama). Owns the
// flat parameter and gradient buffers and the activations (sized for the largest micro-batch
// B x T) on the backend. It knows nothing of optimizers, data or files.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "model/activations.h"
#include "model/param_table.h"
#include "model/quantised_base.h"

namespace trt {

// What a Decoder trains and keeps besides its shape.
struct DecoderOptions {
    // train.trainable's tensor-name patterns (model/trainable.h; empty = all train, or only
    // the LoRA adapters when the spec has them).
    std::vector<std::string> trainable;
    // train.recompute: the activations the backward recomputes (model/activations.h).
    Recompute recompute = Recompute::None;
    // The key of the dropout masks (model.seed; the probabilities are the spec's).
    uint64_t dropout_seed = 0;
    // Rows per chunk of the output head: accel.head_chunk_rows; 0 = about the backend's
    // BackendCaps::head_chunk_logits logits (model/activations.h head_chunk_rows). Tests set
    // a few to run the chunked head on small models.
    int head_chunk_rows = 0;
    DecoderOptions(std::vector<std::string> t = {}, Recompute r = Recompute::None,
                   uint64_t seed = 0)
        : trainable(std::move(t)), recompute(r), dropout_seed(seed) {}
};

class Decoder {
public:
    // Allocates params (zero), grads (zero) and activations for micro-batches up to B x T.
    // Frozen tensors (options.trainable) get no gradient: grads() holds the trainable ones
    // only, at their grad_offset, and the backward stops below the lowest layer that trains.
    Decoder(Backend& backend, const ModelSpec& spec, int B, int T,
            const DecoderOptions& options = {});
    ~Decoder();
    Decoder(const Decoder&) = delete;
    Decoder& operator=(const Decoder&) = delete;

    const ParamTable& table() const { return table_; }
    const ModelSpec& spec() const { return table_.spec(); }
    float* params() { return params_; }  // backend memory, table().total() floats
    // The quantised base (lora.base_dtype): the loaders set() its tensors, then upload() it
    // before the first pass. Empty without one.
    QuantisedBase& quantised_base() { return *quantised_; }
    float* grads() { return grads_; }    // backend memory, table().grad_total() floats
    int max_batch() const { return B_; }
    int max_seq() const { return T_; }
    int head_chunk_rows() const { return head_rows_; }  // rows per chunk of the output head

    // Forward on a micro-batch already in backend memory: inputs/targets int32 [B, T].
    // Writes per-position losses (backend memory: losses(), or mean_loss() to read them).
    // With backward, scales d(loss) by dloss_scale (times scalars->loss_scale, read on the
    // backend, when scalars is given) and ACCUMULATES into grads().
    // The logits are made a chunk of rows at a time and not kept (head_loss):
    // copy_logits_to_host computes the ones it is asked for from the last forward (those of
    // an evaluation pass's last chunk are still in the buffer: it reads them there).
    // forward() is the evaluation pass: it never drops. forward_backward is a training pass:
    // with spec().dropout or lora.dropout > 0 it drops with the masks of (scalars->step,
    // micro_step) (model/dropout_sites.h), and then scalars is required.
    // positions: packed examples (documents, backend.h): int32 [B, T] in backend memory
    // (positions_buffer(), or any), each row's examples attend only to themselves and their
    // positions restart at 0. nullptr: one example per row, positions 0 .. T-1.
    void forward(const int32_t* inputs, const int32_t* targets, int B, int T,
                 const int32_t* positions = nullptr);
    void forward_backward(const int32_t* inputs, const int32_t* targets, int B, int T,
                          float dloss_scale, const StepScalars* scalars = nullptr,
                          uint32_t micro_step = 0, const int32_t* positions = nullptr);
    // A training pass's forward alone (the loss forward_backward differentiates, masks
    // included): for tests that check the gradient against finite differences.
    void forward_training(const int32_t* inputs, const int32_t* targets, int B, int T,
                          const StepScalars* scalars, uint32_t micro_step = 0,
                          const int32_t* positions = nullptr);
    const float* losses() const { return acts_.losses; }  // backend memory [B*T]
    // Mean over B*T positions of the last forward's losses, summed in double; and the sum
    // itself (a whole-split eval adds windows of different lengths).
    double mean_loss(int B, int T);
    double sum_loss(int B, int T);
    // Rows [row0, row0 + rows) of the last forward's logits (recomputed from its final norm,
    // a chunk of rows at a time), the first `cols` columns of each (cols <= Vp), widened to
    // fp32 into dst [rows, cols] on the host.
    void copy_logits_to_host(float* dst, size_t row0, size_t rows, size_t cols);
    // Row `row` of the last forward's logits in backend memory ([Vp], the activation dtype;
    // made as copy_logits_to_host makes them), for the backend's draw_token. Valid until the
    // next pass or logits call.
    ConstAct logits_row(size_t row);
    void zero_grads();

    // Host <-> backend staging for one micro-batch of token ids.
    int32_t* inputs_buffer() { return inputs_; }    // backend memory [B*T]
    int32_t* targets_buffer() { return targets_; }  // backend memory [B*T]
    int32_t* positions_buffer() { return positions_; }  // backend memory [B*T] (documents)

    size_t activation_bytes() const { return act_bytes_; }

    // Generation with a KV cache (one sequence; an evaluation pass: nothing drops). Runs the
    // n tokens at positions pos0 .. pos0+n-1 (inputs: backend memory [n]; pos0 + n <=
    // max_seq()) over the cached keys and values of positions 0 .. pos0-1, adds theirs to the
    // cache; the logits of the last of them are row n - 1 (copy_logits_to_host(dst, n - 1,
    // 1, V)). The cache — per block, K and V of [NKV,
    // max_seq(), hs] fp32 — is allocated on first use and kept until release_kv_cache().
    void forward_cached(const int32_t* inputs, int pos0, int n);
    // forward_cached of one token whose position is read from backend memory when the ops
    // run (*pos, with *pos + 1 <= max_seq()): every op's host arguments are the same from one
    // token to the next, so a graph can hold the step and replay it. The cache must exist (a
    // forward_cached before it: a capture cannot allocate). The logits are row 0.
    void decode_step(const int32_t* input, const int32_t* pos);
    void release_kv_cache();
    size_t kv_cache_floats() const;

    // Data parallel (dist.overlap): called in forward_backward after block i's backward (i
    // descending), once its gradients are complete, so they can be summed across ranks while
    // the backward goes on. Empty: none.
    void set_block_done(std::function<void(int)> fn) { block_done_ = std::move(fn); }

private:
    void run_forward(const int32_t* inputs, const int32_t* targets, int B, int T,
                     float dloss_scale, bool write_grad, const StepScalars* scalars);
    void run_backward(const int32_t* inputs, int B, int T);
    // Block i's input: the embeddings, or block i-1's output.
    ConstAct block_input(int i) const;
    // encoded = embeddings (wpe: the position rows to add, or null), then the first norm.
    void embed(const int32_t* inputs, const float* wpe, int B, int T);
    // Block i's forward in the pieces the backward may re-run (train.recompute):
    // ln1 -> qkv -> attention -> attproj -> residual2, ln2; and ln2 -> mlp_pre -> mlp_act.
    // cache_pos0 >= 0 (forward_cached; B = 1): the rows are positions cache_pos0.. and attend
    // over the KV cache, which they extend.
    void block_attention_forward(int i, int B, int T, int cache_pos0 = -1);
    AttentionShape pass_attention_shape(int i, int B, int T, bool cached) const;
    void block_mlp_up_forward(int i, int N);
    // ln2 -> MLP -> residual3 and the next norm (block i+1's ln1, or lnf).
    void block_mlp_forward(int i, int N);
    // A residual branch's output projection (AttnOut | Down) with its adapter and dropout;
    // returns the bias the fused residual norm adds (null when the branch added it).
    const float* residual_branch(Act out, ConstAct in, Slot slot, int layer, int K, int N);
    // The family's norm (LayerNorm with bias | RMSNorm), fused with the residual add before it.
    void norm_forward(Act out, float* mean, float* rstd, ConstAct inp, const float* w,
                      const float* b, int N);
    void residual_norm_forward(Act res_out, Act out, float* mean, float* rstd, ConstAct a,
                               ConstAct b, const float* bb, const float* w, const float* bias,
                               int N);
    void norm_backward(Act dinp, float* dw, float* db, ConstAct dout, ConstAct inp,
                       const float* w, const float* mean, const float* rstd, int N);
    // A block's linear layer (the decoder's fused slots: Qkv or Q, AttnOut, Up or Gate, Down)
    // on its input, through its quantised weight when the base is quantised; the backward's
    // weight gradient goes to dw(slot) (a quantised weight has none).
    void linear_forward(Act out, ConstAct in, Slot slot, int layer, const float* bias, int N, int K,
                        int M);
    void linear_backward(Act dinp, float* dbias, ConstAct dout, ConstAct inp, Slot slot, int layer,
                         int N, int K, int M);
    // logits [n, Vp] = lnf [n, C] · headᵀ (the head's quantised weight when it has one).
    void head_forward(Act logits, ConstAct lnf, int n);
    const QuantWeight* quantised(Slot slot, int layer = -1) const;
    // A tensor's parameters / gradients; nullptr when the family has no such tensor (and,
    // for gradients, when it is frozen).
    float* w(Slot slot, int layer = -1);
    float* dw(Slot slot, int layer = -1);
    // The bias of the fused q/k/v matmul: c_attn's, or q_proj's with k_proj's and v_proj's
    // right after it (one [(NH+2NKV)hs] vector); w() gives null for a family without.
    // The output head and the loss over rows [0, N) of lnf, chunk by chunk; with write_grad
    // also dln and the head's gradient.
    void head_loss(const int32_t* targets, int N, float dloss_scale, bool write_grad,
                   const StepScalars* scalars);
    void hold_logit_rows(size_t first, size_t n);
    // Rows [first, first + rows) of the logits buffer, the first cols columns, into dst.
    void copy_logit_rows(float* dst, size_t first, size_t rows, size_t cols);
    Slot qkv_bias_slot() const { return spec().split_qkv() ? Slot::QBias : Slot::QkvBias; }
    // Qwen3's RMSNorm over each q and k head, in qkv before RoPE, and its backward in dqkv.
    void qk_norm_forward(int layer, int N);
    void qk_norm_backward(int layer, int N);
    // Floats per half of discard_ (the widest norm: d_model, or a q/k norm's head size).
    size_t discard_width() const {
        return static_cast<size_t>(std::max(spec().C, spec().hs()));
    }
    // The LoRA adapter of the linear in (slot, layer), if it has one (model/lora.h): x [N, in]
    // is the layer's input, out its (fused) output [N, fused_width]:
    //   out[:, column ..] += scale * (x · Aᵀ) · Bᵀ
    void lora_forward(Slot slot, int layer, ConstAct x, Act out, int N);
    // Its backward, after the base matmul's: dout [N, fused_width] the output's gradient;
    // dA, dB += ...; dx [N, in] += the adapter's share of the input gradient.
    void lora_backward(Slot slot, int layer, ConstAct x, ConstAct dout, Act dx, int N);
    void lora_down(const ParamTensor& a, ConstAct x, int N);  // lora_mid = x · Aᵀ
    // Dropout in the current pass: whether a probability applies, and a site's mask.
    bool dropping(float p) const { return pass_scalars_ != nullptr && p > 0.0f; }
    DropoutMask mask(float p, uint32_t site) const;
    // A residual branch's output gradient: dresidual, or (dropping) its masked copy in dln.
    ConstAct branch_grad(float p, uint32_t site, int N);
    // The adapter input x, or (lora.dropout) its dropped copy in lora_x.
    ConstAct lora_input(Slot slot, int layer, ConstAct x, int in, int N);
    void begin_pass(const StepScalars* scalars, uint32_t micro_step);
    // A norm's weight or bias gradient: dw(), or a discarded [C] scratch when the tensor is
    // frozen (the norm backwards always produce them; they cost O(N*C), like the norm).
    float* norm_dw(Slot slot, int layer = -1);

    Backend& be_;
    ParamTable table_;
    std::unique_ptr<QuantisedBase> quantised_;  // empty unless lora.base_dtype quantises
    int B_, T_;
    float* params_ = nullptr;
    float* grads_ = nullptr;
    float* discard_ = nullptr;  // [2C] frozen norms' gradients land here (null if none)
    // The backward's lowest block (L: none) and whether it reaches the embeddings: below
    // the lowest trainable tensor nothing needs a gradient.
    int backward_from_layer_ = 0;
    std::function<void(int)> block_done_;
    bool embeddings_train_ = true;
    Recompute recompute_ = Recompute::None;
    uint64_t dropout_seed_ = 0;
    // The current training pass when it drops (null: evaluation, or nothing to drop).
    const StepScalars* pass_scalars_ = nullptr;
    uint32_t pass_micro_step_ = 0;
    void* act_base_ = nullptr;  // one allocation, carved by lay_out_activations into acts_
    size_t act_bytes_ = 0;
    Activations acts_{};
    float *rope_cos_ = nullptr, *rope_sin_ = nullptr;  // [maxT, hs/2] (rotary families)
    int32_t* inputs_ = nullptr;
    int32_t* targets_ = nullptr;
    int32_t* positions_ = nullptr;
    // The current pass's positions (documents; null: positions t, and forward_cached's).
    const int32_t* pass_positions_ = nullptr;
    float* kv_cache_ = nullptr;  // forward_cached: [L][K | V][NKV, T_, hs], or null
    const int32_t* decode_position_ = nullptr;  // decode_step's, for its cached attention
    std::vector<float> host_losses_;
    std::vector<uint16_t> host_lowp_;  // staging for copy_logits_to_host
    int head_rows_ = 1;                // rows per chunk of the head (head_chunk_rows)
    // The logits buffer holds the logits of rows [held_row0_, held_row0_ + held_rows_) of
    // the last pass (an evaluation pass's last chunk, or copy_logits_to_host's last); -1:
    // none (a pass started, or a training pass left dlogits there).
    int64_t held_row0_ = -1;
    int held_rows_ = 0;
};

}  // namespace trt
