#include "model/activations.h"

#include <algorithm>

#include "model/trainable.h"

namespace trt {

int head_chunk_rows(int Vp, int N) {
    size_t rows = kHeadChunkElements / static_cast<size_t>(std::max(Vp, 1));
    if (rows >= 64) rows = rows / 64 * 64;
    rows = std::max<size_t>(rows, 1);
    return static_cast<int>(std::min<size_t>(rows, static_cast<size_t>(std::max(N, 1))));
}

ModelDims model_dims(const ParamTable& table, int B, int T) {
    const ModelSpec& s = table.spec();
    ModelDims d{B, T, s.C, s.NH, s.V, s.L, s.NKV, s.F};
    d.HS = s.head_dim;
    d.window = s.sliding_window;
    d.attention_dropout = s.dropout > 0.0f;
    d.documents = s.documents;
    d.gated_mlp = s.gated_mlp();
    for (int i = backward_extent(table).from_layer; i < s.L; ++i) {  // the blocks it visits
        const ParamTensor* bias = table.get(Slot::UpBias, i);
        if (bias != nullptr && !bias->trainable) d.frozen_up_bias = true;
    }
    return d;
}

size_t lay_out_activations(const ModelSpec& s, int B, int T, size_t att_saved,
                           size_t att_scratch, DType act, Recompute recompute, void* base,
                           Activations* out, int head_rows) {
    const size_t N = static_cast<size_t>(B) * static_cast<size_t>(T);
    const size_t C = static_cast<size_t>(s.C), F = static_cast<size_t>(s.F);
    const size_t A = static_cast<size_t>(s.attention_width());  // the heads side by side
    // Qwen3's q/k norms: the q and k heads, compact.
    const bool qk_norm = s.family().qk_norm;
    const size_t QK = qk_norm ? static_cast<size_t>(s.NH + s.NKV) * static_cast<size_t>(s.hs()) : 0;
    const size_t QK_ROWS = qk_norm ? static_cast<size_t>(s.NH + s.NKV) : 0;
    const size_t QKV = static_cast<size_t>(s.qkv_width());
    const size_t UP = static_cast<size_t>(s.mlp_up_width());
    const size_t Vp = static_cast<size_t>(padded_vocab(s.V));
    const size_t stats = s.rms_norm() ? 0 : N;  // RMSNorm saves no mean
    const size_t act_size = float_dtype_size(act);
    size_t used = 0;  // bytes
    Activations scratch_out;
    Activations& a = out != nullptr ? *out : scratch_out;
    auto carve = [&](size_t bytes) -> void* {
        void* p = base != nullptr ? static_cast<char*>(base) + used : nullptr;
        used += (bytes + 63) / 64 * 64;
        return p;
    };
    auto take = [&](Act& view, size_t n) { view = Act(carve(n * act_size), act); };
    auto take_f32 = [&](float*& ptr, size_t n) {
        ptr = static_cast<float*>(carve(n * sizeof(float)));
    };
    // Attention dropout keeps the dropped probabilities after the backend's own state.
    const size_t saved = s.dropout > 0.0f ? 2 * att_saved : att_saved;
    take(a.encoded, N * C);
    a.layers.resize(static_cast<size_t>(s.L));
    // The shared buffers (carved once, below the per-block ones, when any block exists).
    const bool block = recompute == Recompute::Block;
    const bool mlp = block || recompute == Recompute::Mlp;
    LayerActivations shared{};
    if (s.L > 0) {
        take(shared.attproj, N * C);
        take(shared.fcproj, N * C);
        if (block) {
            take(shared.qkv, N * QKV);
            take(shared.qk_pre, N * QK);
            take_f32(shared.qk_rstd, N * QK_ROWS);
            take(shared.atty, N * A);
            take_f32(shared.att_saved, saved);
            take(shared.residual2, N * C);
            take(shared.ln2, N * C);
            take_f32(shared.ln2_mean, stats);
            take_f32(shared.ln2_rstd, N);
        }
        if (mlp) {
            take(shared.mlp_pre, N * UP);
            take(shared.mlp_act, N * F);
        }
    }
    for (LayerActivations& l : a.layers) {
        take(l.ln1, N * C);
        take_f32(l.ln1_mean, stats);
        take_f32(l.ln1_rstd, N);
        if (block) {
            l.qkv = shared.qkv, l.atty = shared.atty, l.att_saved = shared.att_saved;
            l.qk_pre = shared.qk_pre, l.qk_rstd = shared.qk_rstd;
            l.residual2 = shared.residual2, l.ln2 = shared.ln2;
            l.ln2_mean = shared.ln2_mean, l.ln2_rstd = shared.ln2_rstd;
        } else {
            take(l.qkv, N * QKV);
            take(l.qk_pre, N * QK);
            take_f32(l.qk_rstd, N * QK_ROWS);
            take(l.atty, N * A);
            take_f32(l.att_saved, saved);
            take(l.residual2, N * C);
            take(l.ln2, N * C);
            take_f32(l.ln2_mean, stats);
            take_f32(l.ln2_rstd, N);
        }
        if (mlp) {
            l.mlp_pre = shared.mlp_pre, l.mlp_act = shared.mlp_act;
        } else {
            take(l.mlp_pre, N * UP);
            take(l.mlp_act, N * F);
        }
        l.attproj = shared.attproj, l.fcproj = shared.fcproj;
        take(l.residual3, N * C);
    }
    take(a.lnf, N * C);
    take_f32(a.lnf_mean, stats);
    take_f32(a.lnf_rstd, N);
    if (head_rows <= 0) head_rows = head_chunk_rows(static_cast<int>(Vp), static_cast<int>(N));
    take(a.logits, std::min(static_cast<size_t>(head_rows), N) * Vp);
    take_f32(a.losses, N);
    take(a.dresidual, N * C);
    take(a.dln, N * C);
    take(a.datty, N * A);
    take(a.dqkv, N * QKV);
    take(a.dmlp_pre, N * UP);
    take(a.dmlp_act, N * F);
    take_f32(a.att_scratch, att_scratch);
    take(a.qk_tmp, N * QK);
    take(a.dqk_pre, N * QK);
    size_t lora_wide = 0, lora_in = 0;
    if (s.lora.on()) {
        const size_t per = static_cast<size_t>(Slot::kLayerSlots);
        for (size_t i = 0; i < s.lora.targets.size(); ++i)
            if (s.lora.targets[i]) {
                const LinearShape ls = linear_shape(s, static_cast<Slot>(i % per));
                lora_wide = std::max(lora_wide, static_cast<size_t>(std::max(ls.in, ls.out)));
                lora_in = std::max(lora_in, static_cast<size_t>(ls.in));
            }
    }
    const size_t rank = s.lora.on() ? static_cast<size_t>(s.lora.rank) : 0;
    take(a.lora_mid, N * rank);
    take(a.lora_dmid, N * rank);
    take(a.lora_wide, N * lora_wide);
    take(a.lora_x, s.lora.dropout > 0.0f ? N * lora_in : 0);
    return used;
}

}  // namespace trt
