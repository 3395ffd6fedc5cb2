#include "model/decoder.h"

#include <algorithm>

#include "core/bf16.h"
#include "core/error.h"
#include "core/fp16.h"
#include "model/dropout_sites.h"
#include "model/quantised_base.h"
#include "model/rope_tables.h"
#include "model/trainable.h"

namespace trt {

Decoder::Decoder(Backend& backend, const ModelSpec& spec, int B, int T,
                 const DecoderOptions& options)
    : be_(backend), table_(spec), B_(B), T_(T), recompute_(options.recompute),
      dropout_seed_(options.dropout_seed) {
    const ModelSpec& s = spec;
    table_.set_trainable(trainable_flags(table_, options.trainable));
    quantised_ = std::make_unique<QuantisedBase>(be_, table_);
    const BackwardExtent extent = backward_extent(table_);
    embeddings_train_ = extent.embeddings;
    backward_from_layer_ = extent.from_layer;
    const size_t N = static_cast<size_t>(B) * static_cast<size_t>(T);
    head_rows_ =
        trt::head_chunk_rows(table_.padded_vocab(), B * T, options.head_chunk_rows,
                             head_chunk_logits(table_, be_.capabilities().head_chunk_logits));
    // The backend sizes its scratch first: which attention path it takes (and so how much it
    // saves for the backward) can depend on the shapes (cuDNN plans are built here).
    be_.reserve(model_dims(table_, B, T));
    const size_t att_saved = be_.attention_saved_floats(s.attention_shape(B, T));
    const size_t att_scratch = be_.attention_scratch_floats(s.attention_shape(B, T));
    const DType act = be_.activation_dtype();
    act_bytes_ = lay_out_activations(s, B, T, att_saved, att_scratch, act, recompute_, nullptr,
                                     nullptr, head_rows_);

    params_ = static_cast<float*>(be_.alloc(table_.total() * sizeof(float), "parameters"));
    grads_ = static_cast<float*>(be_.alloc(table_.grad_total() * sizeof(float), "gradients"));
    if (!table_.all_trainable())
        discard_ = static_cast<float*>(be_.alloc(2 * discard_width() * sizeof(float),
                                                 "frozen norms' gradients"));
    act_base_ = be_.alloc(act_bytes_, "activations");
    inputs_ = static_cast<int32_t*>(be_.alloc(N * sizeof(int32_t), "input ids"));
    targets_ = static_cast<int32_t*>(be_.alloc(N * sizeof(int32_t), "target ids"));
    positions_ = static_cast<int32_t*>(be_.alloc(N * sizeof(int32_t), "positions"));
    be_.register_params(params_, table_.total());
    lay_out_activations(s, B, T, att_saved, att_scratch, act, recompute_, act_base_, &acts_,
                        head_rows_);
    if (!s.learned_positions()) {
        const RopeTables rope = make_rope_tables(s.maxT, s.hs(), s.rope_theta, s.rope_scaling);
        const size_t bytes = rope.cos.size() * sizeof(float);
        rope_cos_ = static_cast<float*>(be_.alloc(bytes, "RoPE cos table"));
        rope_sin_ = static_cast<float*>(be_.alloc(bytes, "RoPE sin table"));
        be_.copy_to_device(rope_cos_, rope.cos.data(), bytes);
        be_.copy_to_device(rope_sin_, rope.sin.data(), bytes);
    }
    host_losses_.resize(N);
}

Decoder::~Decoder() {
    be_.free(params_);
    be_.free(grads_);
    be_.free(discard_);
    be_.free(act_base_);
    be_.free(rope_cos_);
    be_.free(rope_sin_);
    be_.free(inputs_);
    be_.free(targets_);
    be_.free(positions_);
    be_.free(kv_cache_);
}

const QuantWeight* Decoder::quantised(Slot slot, int layer) const {
    return quantised_->weight(slot, layer);
}

void Decoder::linear_forward(Act out, ConstAct in, Slot slot, int layer, const float* bias, int N,
                             int K, int M) {
    if (const QuantWeight* q = quantised(slot, layer))
        be_.qmatmul_forward(out, in, *q, bias, N, K, M);
    else
        be_.matmul_forward(out, in, w(slot, layer), bias, N, K, M, spec().linear_layout());
}

void Decoder::linear_backward(Act dinp, float* dbias, ConstAct dout, ConstAct inp, Slot slot,
                              int layer, int N, int K, int M) {
    if (const QuantWeight* q = quantised(slot, layer))
        be_.qmatmul_backward(dinp, dbias, dout, *q, N, K, M);
    else
        be_.matmul_backward(dinp, dw(slot, layer), dbias, dout, inp, w(slot, layer), N, K, M,
                            spec().linear_layout());
}

void Decoder::head_forward(Act logits, ConstAct lnf, int n) {
    const int C = spec().C, Vp = table_.padded_vocab();
    if (const QuantWeight* q = quantised(table_.head_slot()))
        be_.qmatmul_forward(logits, lnf, *q, nullptr, n, C, Vp);
    else
        be_.matmul_forward(logits, lnf, params_ + table_.head().offset, nullptr, n, C, Vp,
                           WeightLayout::OutIn);
}

float* Decoder::w(Slot slot, int layer) {
    const ParamTensor* t = table_.get(slot, layer);
    return t != nullptr ? params_ + t->offset : nullptr;
}

float* Decoder::dw(Slot slot, int layer) {
    const ParamTensor* t = table_.get(slot, layer);
    return t != nullptr && t->trainable ? grads_ + t->grad_offset : nullptr;
}

float* Decoder::norm_dw(Slot slot, int layer) {
    const ParamTensor* t = table_.get(slot, layer);
    if (t == nullptr) return nullptr;
    if (t->trainable) return grads_ + t->grad_offset;
    const bool bias = t->role == ParamRole::NormBias;
    return discard_ + (bias ? discard_width() : 0);
}

// mid [N, r] = x [N, in] · A[r, in]ᵀ: the adapter's down projection, in the forward and
// again in the backward (not kept).
void Decoder::lora_down(const ParamTensor& a, ConstAct x, int N) {
    be_.matmul_forward(acts_.lora_mid, x, params_ + a.offset, nullptr, N,
                       static_cast<int>(a.shape[1]), spec().lora.rank, WeightLayout::OutIn);
}

DropoutMask Decoder::mask(float p, uint32_t site) const {
    DropoutMask m;
    m.p = p;
    m.seed = dropout_seed_;
    m.scalars = pass_scalars_;
    m.micro_step = pass_micro_step_;
    m.site = site;
    return m;
}

ConstAct Decoder::branch_grad(float p, uint32_t site, int N) {
    if (!dropping(p)) return acts_.dresidual;
    be_.dropout(acts_.dln, acts_.dresidual, static_cast<size_t>(N) * spec().C, mask(p, site));
    return acts_.dln;
}

ConstAct Decoder::lora_input(Slot slot, int layer, ConstAct x, int in, int N) {
    const float p = spec().lora.dropout;
    if (!dropping(p)) return x;
    be_.dropout(acts_.lora_x, x, static_cast<size_t>(N) * in,
                mask(p, dropout_site(layer, DropoutPlace::LoraInput, slot)));
    return acts_.lora_x;
}

void Decoder::lora_forward(Slot slot, int layer, ConstAct x, Act out, int N) {
    const ParamTensor* a = table_.lora_a(slot, layer);
    if (a == nullptr) return;
    const ParamTensor& b = *(a + 1);
    const LinearShape ls = linear_shape(spec(), slot);
    Activations& A = acts_;
    // update [N, out] = mid · B[out, r]ᵀ, added into the layer's columns (PEFT: the adapter
    // sees dropout(x))
    lora_down(*a, lora_input(slot, layer, x, ls.in, N), N);
    be_.matmul_forward(A.lora_wide, A.lora_mid, params_ + b.offset, nullptr, N,
                       spec().lora.rank, ls.out, WeightLayout::OutIn);
    be_.add_columns(out, A.lora_wide, spec().lora.scale(), N, ls.fused_width, ls.column, ls.out);
}

void Decoder::lora_backward(Slot slot, int layer, ConstAct x, ConstAct dout, Act dx, int N) {
    const ParamTensor* a = table_.lora_a(slot, layer);
    if (a == nullptr) return;
    const ParamTensor& b = *(a + 1);
    const LinearShape ls = linear_shape(spec(), slot);
    Activations& A = acts_;
    float* dA = a->trainable ? grads_ + a->grad_offset : nullptr;
    float* dB = b.trainable ? grads_ + b.grad_offset : nullptr;
    // g [N, out] = scale * dout[:, column ..]: the gradient of the update B·A sees.
    be_.copy_columns(A.lora_wide, dout, spec().lora.scale(), N, ls.fused_width, ls.column,
                     ls.out);
    const ConstAct xa = lora_input(slot, layer, x, ls.in, N);  // the forward's dropped x
    lora_down(*a, xa, N);
    // dB += gᵀ · mid; dmid [N, r] = g · B
    be_.matmul_backward(A.lora_dmid, dB, nullptr, A.lora_wide, A.lora_mid, params_ + b.offset,
                        N, spec().lora.rank, ls.out, WeightLayout::OutIn);
    // dA += dmidᵀ · x; dx_lora [N, in] = dmid · A (through the dropout's mask), added into dx
    be_.matmul_backward(A.lora_wide, dA, nullptr, A.lora_dmid, xa, params_ + a->offset, N,
                        ls.in, spec().lora.rank, WeightLayout::OutIn);
    if (dropping(spec().lora.dropout))
        be_.dropout(A.lora_wide, A.lora_wide, static_cast<size_t>(N) * ls.in,
                    mask(spec().lora.dropout,
                         dropout_site(layer, DropoutPlace::LoraInput, slot)));
    be_.add_columns(dx, A.lora_wide, 1.0f, N, ls.in, 0, ls.in);
}

void Decoder::zero_grads() { be_.zero(grads_, table_.grad_total() * sizeof(float)); }

void Decoder::forward(const int32_t* inputs, const int32_t* targets, int B, int T,
                      const int32_t* positions) {
    pass_scalars_ = nullptr;  // evaluation: no dropout
    pass_positions_ = positions;
    run_forward(inputs, targets, B, T, 0.0f, false, nullptr);
}

void Decoder::begin_pass(const StepScalars* scalars, uint32_t micro_step) {
    const bool drops = spec().dropout > 0.0f || spec().lora.dropout > 0.0f;
    TRT_CHECK(!drops || scalars != nullptr,
              "a training pass with dropout needs the step scalars (the masks' step)");
    pass_scalars_ = drops ? scalars : nullptr;
    pass_micro_step_ = micro_step;
}

void Decoder::forward_backward(const int32_t* inputs, const int32_t* targets, int B, int T,
                               float dloss_scale, const StepScalars* scalars,
                               uint32_t micro_step, const int32_t* positions) {
    begin_pass(scalars, micro_step);
    pass_positions_ = positions;
    run_forward(inputs, targets, B, T, dloss_scale, true, scalars);
    run_backward(inputs, B, T);
}

void Decoder::forward_training(const int32_t* inputs, const int32_t* targets, int B, int T,
                               const StepScalars* scalars, uint32_t micro_step,
                               const int32_t* positions) {
    begin_pass(scalars, micro_step);
    pass_positions_ = positions;
    run_forward(inputs, targets, B, T, 0.0f, false, nullptr);
}

void Decoder::norm_forward(Act out, float* mean, float* rstd, ConstAct inp,
                           const float* wt, const float* b, int N) {
    const ModelSpec& s = spec();
    if (s.rms_norm())
        be_.rmsnorm_forward(out, rstd, inp, wt, N, s.C, s.norm_eps);
    else
        be_.layernorm_forward(out, mean, rstd, inp, wt, b, N, s.C);
}

void Decoder::residual_norm_forward(Act res_out, Act out, float* mean, float* rstd,
                                    ConstAct a, ConstAct b, const float* bb,
                                    const float* wt, const float* bias, int N) {
    const ModelSpec& s = spec();
    if (s.rms_norm())  // no biases in RMSNorm families (bb, bias are null)
        be_.residual_rmsnorm_forward(res_out, out, rstd, a, b, wt, N, s.C, s.norm_eps);
    else
        be_.residual_layernorm_forward(res_out, out, mean, rstd, a, b, bb, wt, bias, N, s.C);
}

void Decoder::norm_backward(Act dinp, float* dwt, float* db, ConstAct dout,
                            ConstAct inp, const float* wt, const float* mean,
                            const float* rstd, int N) {
    const ModelSpec& s = spec();
    if (s.rms_norm())
        be_.rmsnorm_backward(dinp, dwt, dout, inp, wt, rstd, N, s.C);
    else
        be_.layernorm_backward(dinp, dwt, db, dout, inp, wt, mean, rstd, N, s.C);
}

ConstAct Decoder::block_input(int i) const {
    return i == 0 ? ConstAct(acts_.encoded) : ConstAct(acts_.layers[i - 1].residual3);
}

// Block i's attention in this pass: the model's heads and window, the pass's documents
// (forward_cached has none) and, when training drops, the probabilities' dropout mask.
AttentionShape Decoder::pass_attention_shape(int i, int B, int T, bool cached) const {
    const ModelSpec& s = spec();
    AttentionShape a = s.attention_shape(B, T);
    if (cached) {
        a.pos = decode_position_;  // decode_step's, read by RoPE and the cached attention
        return a;
    }
    a.pos = pass_positions_;
    if (dropping(s.dropout))
        a.dropout = mask(s.dropout, dropout_site(i, DropoutPlace::AttentionProbs));
    return a;
}

// ln1 (already written) -> qkv (rotated) -> attention -> attproj -> residual2, ln2.
void Decoder::block_attention_forward(int i, int B, int T, int cache_pos0) {
    const ModelSpec& s = spec();
    // A: the attention's width, NH heads side by side (C unless the model has a head_dim).
    const int N = B * T, C = s.C, A = s.attention_width();
    LayerActivations& a = acts_.layers[i];
    linear_forward(a.qkv, a.ln1, s.split_qkv() ? Slot::Q : Slot::Qkv, i, w(qkv_bias_slot(), i), N,
                   C, s.qkv_width());
    for (Slot p : {Slot::Qkv, Slot::Q, Slot::K, Slot::V}) lora_forward(p, i, a.ln1, a.qkv, N);
    if (s.family().qk_norm) qk_norm_forward(i, N);
    const bool cached = cache_pos0 >= 0;
    const AttentionShape shape = pass_attention_shape(i, B, T, cached);
    if (!s.learned_positions())
        be_.rope_forward(a.qkv, rope_cos_, rope_sin_, cached ? cache_pos0 : 0, shape);
    if (cached) {
        const size_t per_cache = static_cast<size_t>(s.NKV) * T_ * s.hs();
        float* k_cache = kv_cache_ + 2 * static_cast<size_t>(i) * per_cache;
        be_.attention_cached_forward(a.atty, a.qkv, k_cache, k_cache + per_cache, cache_pos0, T_,
                                     shape);
    } else {
        be_.attention_forward(a.atty, a.att_saved, a.qkv, shape);
    }
    const float* bias = residual_branch(a.attproj, a.atty, Slot::AttnOut, i, A, N);
    residual_norm_forward(a.residual2, a.ln2, a.ln2_mean, a.ln2_rstd, block_input(i), a.attproj,
                          bias, w(Slot::MlpNorm, i), w(Slot::MlpNormBias, i), N);
}

// Qwen3's q_norm and k_norm: RMSNorm over each head of q and of k (one [hs] weight each,
// shared by the heads), in place in qkv, before RoPE; the heads as they were (qk_pre) and
// their rstd kept for the backward. Rows are independent: one sequence of N rows.
void Decoder::qk_norm_forward(int i, int N) {
    const ModelSpec& s = spec();
    LayerActivations& a = acts_.layers[i];
    be_.qk_norm_forward(a.qkv, a.qk_pre, a.qk_rstd, w(Slot::QNorm, i), w(Slot::KNorm, i),
                        acts_.qk_tmp, s.norm_eps,
                        AttentionShape::from_heads(1, N, s.NH, s.NKV, s.hs()));
}

// dqkv's q and k columns: the gradient of the normalised heads in, of the heads before the
// norm out; the norm weights' gradients added (discarded when frozen).
void Decoder::qk_norm_backward(int i, int N) {
    const ModelSpec& s = spec();
    LayerActivations& a = acts_.layers[i];
    Activations& A = acts_;
    const int hs = s.hs(), W = s.qkv_width(), QW = s.NH * hs, KW = s.NKV * hs;
    const size_t q_size = static_cast<size_t>(N) * QW;
    const Act dq_n = A.qk_tmp, dk_n = A.qk_tmp.at(q_size);
    const Act dq = A.dqk_pre, dk = A.dqk_pre.at(q_size);
    be_.copy_columns(dq_n, A.dqkv, 1.0f, N, W, 0, QW);
    be_.copy_columns(dk_n, A.dqkv, 1.0f, N, W, QW, KW);
    be_.zero(A.dqk_pre.data, static_cast<size_t>(N) * (QW + KW) *
                                 float_dtype_size(A.dqk_pre.dtype));
    be_.rmsnorm_backward(dq, norm_dw(Slot::QNorm, i), dq_n, a.qk_pre, w(Slot::QNorm, i),
                         a.qk_rstd, N * s.NH, hs);
    be_.rmsnorm_backward(dk, norm_dw(Slot::KNorm, i), dk_n, a.qk_pre.at(q_size),
                         w(Slot::KNorm, i), a.qk_rstd + static_cast<size_t>(N) * s.NH,
                         N * s.NKV, hs);
    be_.add_columns(A.dqkv, dq_n, -1.0f, N, W, 0, QW);
    be_.add_columns(A.dqkv, dq, 1.0f, N, W, 0, QW);
    be_.add_columns(A.dqkv, dk_n, -1.0f, N, W, QW, KW);
    be_.add_columns(A.dqkv, dk, 1.0f, N, W, QW, KW);
}

// out [N, C] = in [N, K] · W (+ the adapter): a residual branch's output projection. Its bias
// is left to the fused residual norm (returned), unless the branch drops: then bias and
// adapter come before the dropout, as GPT-2's dropout(c_proj(x)), and it returns null.
const float* Decoder::residual_branch(Act out, ConstAct in, Slot slot, int layer, int K,
                                      int N) {
    const ModelSpec& s = spec();
    const bool attention = slot == Slot::AttnOut;
    const float* bias = w(attention ? Slot::AttnOutBias : Slot::DownBias, layer);
    const bool drop = dropping(s.dropout);
    linear_forward(out, in, slot, layer, drop ? bias : nullptr, N, K, s.C);
    lora_forward(slot, layer, in, out, N);
    if (!drop) return bias;
    const DropoutPlace place = attention ? DropoutPlace::AttentionOut : DropoutPlace::MlpOut;
    be_.dropout(out, out, static_cast<size_t>(N) * s.C,
                mask(s.dropout, dropout_site(layer, place)));
    return nullptr;
}

// ln2 -> MLP -> the residual add, fused with the next norm: the next block's ln1, or lnf.
void Decoder::block_mlp_forward(int i, int N) {
    const int L = spec().L;
    Activations& A = acts_;
    LayerActivations& a = A.layers[i];
    block_mlp_up_forward(i, N);
    const float* down_bias = residual_branch(a.fcproj, a.mlp_act, Slot::Down, i, spec().F, N);
    const bool last = i + 1 == L;
    LayerActivations* next = last ? nullptr : &A.layers[i + 1];
    residual_norm_forward(
        a.residual3, last ? A.lnf : next->ln1, last ? A.lnf_mean : next->ln1_mean,
        last ? A.lnf_rstd : next->ln1_rstd, a.residual2, a.fcproj, down_bias,
        last ? w(Slot::FinalNorm) : w(Slot::AttnNorm, i + 1),
        last ? w(Slot::FinalNormBias) : w(Slot::AttnNormBias, i + 1), N);
}

// ln2 -> mlp_pre -> mlp_act.
void Decoder::block_mlp_up_forward(int i, int N) {
    const ModelSpec& s = spec();
    const int C = s.C, F = s.F;
    LayerActivations& a = acts_.layers[i];
    if (s.gated_mlp()) {
        // [gate | up] [N, 2F] in one matmul: gate_proj and up_proj are adjacent.
        linear_forward(a.mlp_pre, a.ln2, Slot::Gate, i, nullptr, N, C, 2 * F);
        lora_forward(Slot::Gate, i, a.ln2, a.mlp_pre, N);
        lora_forward(Slot::Up, i, a.ln2, a.mlp_pre, N);
        be_.swiglu_forward(a.mlp_act, a.mlp_pre, N, F);
    } else if (table_.lora_a(Slot::Up, i) || quantised(Slot::Up, i)) {
        // The adapter goes in before the GELU (and a quantised c_fc has no fused GELU).
        linear_forward(a.mlp_pre, a.ln2, Slot::Up, i, w(Slot::UpBias, i), N, C, F);
        lora_forward(Slot::Up, i, a.ln2, a.mlp_pre, N);
        be_.gelu_forward(a.mlp_act, a.mlp_pre, static_cast<size_t>(N) * F);
    } else {
        be_.matmul_gelu_forward(a.mlp_pre, a.mlp_act, a.ln2, w(Slot::Up, i), w(Slot::UpBias, i),
                                N, C, F);
    }
}

// One block, GPT-2 names | Llama names:
//   ln1 = norm1(x)                                   ln_1 | input_layernorm
//   qkv = ln1 · Wqkv (+ b)                           c_attn | [q_proj; k_proj; v_proj]
//   q, k rotated in place (rotary families)
//   atty = causal_attention(qkv)                     (grouped-query when NKV < NH)
//   residual2 = x + atty · Wo (+ b)                  c_proj | o_proj
//   ln2 = norm2(residual2)                           ln_2 | post_attention_layernorm
//   mlp_act = gelu(ln2 · Wfc + b)                    c_fc
//           | silu(ln2 · Wgateᵀ) * (ln2 · Wupᵀ)      [gate_proj; up_proj]
//   residual3 = residual2 + mlp_act · Wdown (+ b)    mlp.c_proj | down_proj
// Every residual add is fused with the norm that follows it, and the projections feeding
// the residual leave their bias to that fused op (GPT-2).
// encoded = the token (+ position) embeddings of inputs [B, T], dropped when training drops;
// then the first norm: block 0's ln1, or lnf for a model without blocks.
void Decoder::embed(const int32_t* inputs, const float* wpe, int B, int T) {
    const ModelSpec& s = spec();
    const int N = B * T;
    Activations& A = acts_;
    held_row0_ = -1;  // a new pass: lnf, and so the logits, will change
    if (const QuantWeight* wte = quantised(Slot::TokenEmbedding))
        be_.qencoder_forward(A.encoded, inputs, *wte, wpe, B, T, s.C, pass_positions_);
    else
        be_.encoder_forward(A.encoded, inputs, w(Slot::TokenEmbedding), wpe, B, T, s.C,
                            pass_positions_);
    if (dropping(s.dropout))
        be_.dropout(A.encoded, A.encoded, static_cast<size_t>(N) * s.C,
                    mask(s.dropout, kEmbeddingDropoutSite));
    if (s.L > 0) {
        LayerActivations& a0 = A.layers[0];
        norm_forward(a0.ln1, a0.ln1_mean, a0.ln1_rstd, A.encoded, w(Slot::AttnNorm, 0),
                     w(Slot::AttnNormBias, 0), N);
    } else {
        norm_forward(A.lnf, A.lnf_mean, A.lnf_rstd, A.encoded, w(Slot::FinalNorm),
                     w(Slot::FinalNormBias), N);
    }
}

void Decoder::run_forward(const int32_t* inputs, const int32_t* targets, int B, int T,
                          float dloss_scale, bool write_grad, const StepScalars* scalars) {
    TRT_CHECK(B >= 1 && B <= B_ && T >= 1 && T <= T_, "micro-batch ", B, "x", T,
              " exceeds the allocated ", B_, "x", T_);
    const ModelSpec& s = spec();
    const int N = B * T, L = s.L;

    be_.annotate_layer(Backend::kNoLayer);  // for a profiler: the ops' block, or none
    embed(inputs, w(Slot::PositionEmbedding), B, T);
    for (int i = 0; i < L; ++i) {
        be_.annotate_layer(i);
        // Block i's ln1 was written above (block 0) or by the previous block's fused norm.
        block_attention_forward(i, B, T);
        block_mlp_forward(i, N);
    }
    be_.annotate_layer(Backend::kNoLayer);
    head_loss(targets, N, dloss_scale, write_grad, scalars);
}

// The output head and the loss, a chunk of rows at a time (chunked linear + cross-entropy;
// activations.h head_chunk_rows): for rows [r0, r0+n), logits [n, Vp] = lnf · headᵀ (head
// stored [Vp, C]: the token embedding when tied; rows >= V are zero padding, and the
// classifier reads the first V columns and zeroes the others' gradient), the losses, and when
// training their gradient in place, which goes straight back through the head: dln rows =
// dlogits · head, dhead += dlogitsᵀ · lnf rows. The batch's logits never exist at once; dln
// is complete when run_backward starts.
void Decoder::head_loss(const int32_t* targets, int N, float dloss_scale, bool write_grad,
                        const StepScalars* scalars) {
    const ModelSpec& s = spec();
    const int C = s.C, Vp = table_.padded_vocab();
    Activations& A = acts_;
    const ParamTensor* head = table_.get(table_.head_slot());  // null: quantised
    const QuantWeight* qW = quantised(table_.head_slot());
    const float* W = head ? params_ + head->offset : nullptr;
    float* dW = head && head->trainable ? grads_ + head->grad_offset : nullptr;
    for (int r0 = 0; r0 < N; r0 += head_rows_) {
        const int n = std::min(head_rows_, N - r0);
        const size_t at = static_cast<size_t>(r0) * static_cast<size_t>(C);
        const ConstAct lnf = ConstAct(A.lnf).at(at);
        head_forward(A.logits, lnf, n);
        be_.classifier_forward_backward(A.logits, A.losses + r0, targets + r0, n, s.V, Vp,
                                        dloss_scale, write_grad, scalars);
        if (write_grad && qW)
            be_.qmatmul_backward(A.dln.at(at), nullptr, A.logits, *qW, n, C, Vp);
        else if (write_grad)
            be_.matmul_backward(A.dln.at(at), dW, nullptr, A.logits, lnf, W, n, C, Vp,
                                WeightLayout::OutIn);
        // Without write_grad the classifier leaves the logits as they are.
        held_row0_ = write_grad ? -1 : r0;
        held_rows_ = n;
    }
}

// Gradients flow through one residual buffer: every norm backward adds its input gradient
// into dresidual, and every block's two residual branches read the same buffer.
void Decoder::run_backward(const int32_t* inputs, int B, int T) {
    const ModelSpec& s = spec();
    const int N = B * T, C = s.C, F = s.F, L = s.L, AW = s.attention_width();
    Activations& A = acts_;
    const size_t NC = static_cast<size_t>(N) * static_cast<size_t>(C);
    const size_t act_size = float_dtype_size(A.dresidual.dtype);

    const Act last_residual = L > 0 ? A.layers[L - 1].residual3 : A.encoded;
    be_.annotate_layer(Backend::kNoLayer);
    // dln [N, C] = d lnf, written by head_loss in the forward.
    be_.zero(A.dresidual.data, NC * act_size);
    norm_backward(A.dresidual, norm_dw(Slot::FinalNorm), norm_dw(Slot::FinalNormBias), A.dln,
                  last_residual, w(Slot::FinalNorm), A.lnf_mean, A.lnf_rstd, N);
    // Frozen bottom layers (train.trainable): nothing below backward_from_layer_ needs a
    // gradient, so the backward ends there.
    for (int i = L - 1; i >= backward_from_layer_; --i) {
        LayerActivations& a = A.layers[i];
        be_.annotate_layer(i);
        // train.recompute: refill the shared buffers with this block's values (the top block's
        // are still there from the forward).
        if (i + 1 < L && recompute_ == Recompute::Block) block_attention_forward(i, B, T);
        if (i + 1 < L && recompute_ != Recompute::None) block_mlp_up_forward(i, N);
        const Act residual = i == 0 ? A.encoded : A.layers[i - 1].residual3;
        // dresidual = d residual3 = d residual2 (skip) = d fcproj (branch; through its
        // dropout mask into dln when it drops).
        const ConstAct dfc = branch_grad(s.dropout, dropout_site(i, DropoutPlace::MlpOut), N);
        linear_backward(A.dmlp_act, dw(Slot::DownBias, i), dfc, a.mlp_act, Slot::Down, i, N, F, C);
        lora_backward(Slot::Down, i, a.mlp_act, dfc, A.dmlp_act, N);
        if (s.gated_mlp())
            be_.swiglu_backward(A.dmlp_pre, a.mlp_pre, A.dmlp_act, N, F);
        else  // the c_fc bias gradient is summed in the GELU backward pass
            be_.gelu_backward_bias(A.dmlp_pre, dw(Slot::UpBias, i), a.mlp_pre, A.dmlp_act, N, F);
        linear_backward(A.dln, nullptr, A.dmlp_pre, a.ln2, s.gated_mlp() ? Slot::Gate : Slot::Up, i,
                        N, C, s.mlp_up_width());
        for (Slot p : {Slot::Gate, Slot::Up}) lora_backward(p, i, a.ln2, A.dmlp_pre, A.dln, N);
        norm_backward(A.dresidual, norm_dw(Slot::MlpNorm, i), norm_dw(Slot::MlpNormBias, i),
                      A.dln, a.residual2, w(Slot::MlpNorm, i), a.ln2_mean, a.ln2_rstd, N);
        // dresidual = d residual2 = d residual (skip) = d attproj (branch, as above).
        const ConstAct dproj =
            branch_grad(s.dropout, dropout_site(i, DropoutPlace::AttentionOut), N);
        linear_backward(A.datty, dw(Slot::AttnOutBias, i), dproj, a.atty, Slot::AttnOut, i, N, AW,
                        C);
        lora_backward(Slot::AttnOut, i, a.atty, dproj, A.datty, N);
        const AttentionShape shape = pass_attention_shape(i, B, T, false);
        be_.attention_backward(A.dqkv, A.att_scratch, A.datty, a.qkv, a.att_saved, shape);
        if (!s.learned_positions())  // d(rotated q, k) -> d(q, k)
            be_.rope_backward(A.dqkv, rope_cos_, rope_sin_, 0, shape);
        if (s.family().qk_norm) qk_norm_backward(i, N);  // d(normalised q, k) -> d(q, k)
        const Slot qkv = s.split_qkv() ? Slot::Q : Slot::Qkv;
        linear_backward(A.dln, dw(qkv_bias_slot(), i), A.dqkv, a.ln1, qkv, i, N, C, s.qkv_width());
        for (Slot p : {Slot::Qkv, Slot::Q, Slot::K, Slot::V})
            lora_backward(p, i, a.ln1, A.dqkv, A.dln, N);
        norm_backward(A.dresidual, norm_dw(Slot::AttnNorm, i), norm_dw(Slot::AttnNormBias, i),
                      A.dln, residual, w(Slot::AttnNorm, i), a.ln1_mean, a.ln1_rstd, N);
        if (block_done_) block_done_(i);
    }
    be_.annotate_layer(Backend::kNoLayer);
    if (embeddings_train_ && dropping(s.dropout))  // through the embeddings' mask
        be_.dropout(A.dresidual, A.dresidual, NC, mask(s.dropout, kEmbeddingDropoutSite));
    if (embeddings_train_)  // dwte may be null (a frozen wte with a trainable wpe)
        be_.encoder_backward(dw(Slot::TokenEmbedding), dw(Slot::PositionEmbedding),
                             A.dresidual, inputs, B, T, C, pass_positions_);
}

size_t Decoder::kv_cache_floats() const {
    const ModelSpec& s = spec();
    return 2 * static_cast<size_t>(s.L) * s.NKV * static_cast<size_t>(T_) * s.hs();
}

void Decoder::release_kv_cache() {
    be_.free(kv_cache_);
    kv_cache_ = nullptr;
}

// run_forward's evaluation pass for one sequence of n new rows, with attention over the cache
// instead of over the rows alone: the same ops, at positions pos0.. (the position table and
// the rotary tables are read from row pos0 on).
void Decoder::forward_cached(const int32_t* inputs, int pos0, int n) {
    TRT_CHECK(n >= 1 && pos0 >= 0 && pos0 + n <= T_, "forward_cached: positions ", pos0, " .. ",
              pos0 + n, " exceed the model's ", T_);
    const ModelSpec& s = spec();
    const int C = s.C;
    if (kv_cache_ == nullptr)
        kv_cache_ = static_cast<float*>(be_.alloc(kv_cache_floats() * sizeof(float), "KV cache"));
    pass_scalars_ = nullptr;  // evaluation: no dropout
    pass_positions_ = nullptr;
    // The position table read from row pos0 on: the rows are positions pos0 .. pos0+n-1.
    const float* wpe = w(Slot::PositionEmbedding);
    embed(inputs, wpe ? wpe + static_cast<size_t>(pos0) * C : nullptr, 1, n);
    for (int i = 0; i < s.L; ++i) {
        block_attention_forward(i, 1, n, pos0);
        block_mlp_forward(i, n);
    }
}

void Decoder::decode_step(const int32_t* input, const int32_t* pos) {
    TRT_CHECK(kv_cache_ != nullptr, "decode_step: no KV cache yet (forward_cached first)");
    const ModelSpec& s = spec();
    pass_scalars_ = nullptr;
    // The encoder reads wpe[pos[0]], RoPE's angle and the cached attention's row *pos.
    pass_positions_ = pos;
    decode_position_ = pos;
    struct Reset {
        Decoder& d;
        ~Reset() { d.pass_positions_ = d.decode_position_ = nullptr; }
    } reset{*this};
    embed(input, w(Slot::PositionEmbedding), 1, 1);
    for (int i = 0; i < s.L; ++i) {
        block_attention_forward(i, 1, 1, /*cache_pos0, unused with a position=*/0);
        block_mlp_forward(i, 1);
    }
}

void Decoder::copy_logits_to_host(float* dst, size_t row0, size_t rows, size_t cols) {
    const size_t Vp = static_cast<size_t>(table_.padded_vocab());
    TRT_CHECK(cols <= Vp && row0 + rows <= static_cast<size_t>(B_) * T_,
              "copy_logits_to_host: rows/cols outside the logits");
    // The head product again, a chunk of rows at a time (head_loss keeps no logits), except
    // for rows the buffer still holds.
    for (size_t r = 0; r < rows; r += static_cast<size_t>(head_rows_)) {
        const size_t n = std::min(static_cast<size_t>(head_rows_), rows - r);
        hold_logit_rows(row0 + r, n);
        copy_logit_rows(dst + r * cols, row0 + r - static_cast<size_t>(held_row0_), n, cols);
    }
}

ConstAct Decoder::logits_row(size_t row) {
    TRT_CHECK(row < static_cast<size_t>(B_) * T_, "logits_row: row ", row, " outside the logits");
    hold_logit_rows(row, 1);
    const size_t Vp = static_cast<size_t>(table_.padded_vocab());
    return ConstAct(acts_.logits).at((row - static_cast<size_t>(held_row0_)) * Vp);
}

// The logits buffer holds rows [first, first + n) (n <= head_rows_) of the last forward: kept
// if it does, else the head product again for them.
void Decoder::hold_logit_rows(size_t first, size_t n) {
    const int64_t f = static_cast<int64_t>(first);
    if (held_row0_ >= 0 && f >= held_row0_ &&
        f + static_cast<int64_t>(n) <= held_row0_ + held_rows_)
        return;
    const size_t C = static_cast<size_t>(spec().C);
    head_forward(acts_.logits, ConstAct(acts_.lnf).at(first * C), static_cast<int>(n));
    held_row0_ = f;
    held_rows_ = static_cast<int>(n);
}

// Rows [first, first + rows) of the logits buffer, the first cols columns, widened to fp32
// into dst.
void Decoder::copy_logit_rows(float* dst, size_t first, size_t rows, size_t cols) {
    const size_t Vp = static_cast<size_t>(table_.padded_vocab());
    const ConstAct src = ConstAct(acts_.logits).at(first * Vp);
    if (src.dtype == DType::F32) {
        if (cols == Vp) {  // one copy
            be_.copy_to_host(dst, src.data, rows * Vp * sizeof(float));
            return;
        }
        for (size_t r = 0; r < rows; ++r)
            be_.copy_to_host(dst + r * cols, src.at(r * Vp).data, cols * sizeof(float));
        return;
    }
    TRT_CHECK(src.dtype == DType::BF16 || src.dtype == DType::F16,
              "copy_logits_to_host: unsupported activation dtype");
    const bool bf16 = src.dtype == DType::BF16;
    // Whole padded rows, a block of them per copy (a device copy is synchronous: one per row
    // would be thousands for a forward), at most 8 Mi elements of host staging.
    const size_t block = std::max<size_t>(1, (size_t{8} << 20) / Vp);
    host_lowp_.resize(std::min(block, rows) * Vp);
    for (size_t r0 = 0; r0 < rows; r0 += block) {
        const size_t n = std::min(block, rows - r0);
        be_.copy_to_host(host_lowp_.data(), src.at(r0 * Vp).data, n * Vp * sizeof(uint16_t));
        for (size_t r = 0; r < n; ++r)
            for (size_t c = 0; c < cols; ++c) {
                const uint16_t v = host_lowp_[r * Vp + c];
                dst[(r0 + r) * cols + c] = bf16 ? bf16_to_float(v) : fp16_to_float(v);
            }
    }
}

double Decoder::mean_loss(int B, int T) {
    return sum_loss(B, T) / (static_cast<double>(B) * static_cast<double>(T));
}

double Decoder::sum_loss(int B, int T) {
    const size_t N = static_cast<size_t>(B) * static_cast<size_t>(T);
    be_.copy_to_host(host_losses_.data(), acts_.losses, N * sizeof(float));
    double sum = 0.0;
    for (size_t i = 0; i < N; ++i) sum += host_losses_[i];
    return sum;
}

}  // namespace trt
