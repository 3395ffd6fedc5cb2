#include "model/activations.h"

#include <algorithm>

#include "model/trainable.h"

namespace trt {

int head_chunk_rows(int Vp, int N, int rows, size_t logits) {
    const size_t n = static_cast<size_t>(std::max(N, 1));
    if (rows > 0) return static_cast<int>(std::min(static_cast<size_t>(rows), n));
    size_t r = std::max<size_t>(logits, 1) / static_cast<size_t>(std::max(Vp, 1));
    if (r >= 64) r = r / 64 * 64;
    r = std::max<size_t>(r, 1);
    return static_cast<int>(std::min(r, n));
}

size_t head_chunk_logits(const ParamTable& table, size_t backend_logits) {
    const bool frozen = table.quantised(table.head_slot()) != nullptr || !table.head().trainable;
    return frozen ? std::min(backend_logits, kHostHeadChunkLogits) : backend_logits;
}

ModelDims model_dims(const ParamTable& table, int B, int T) {
    const ModelSpec& s = table.spec();
    ModelDims d{B, T, s.C, s.NH, s.V, s.L, s.NKV, s.F};
    d.HS = s.head_dim;
    d.window = s.sliding_window;
    d.attention_dropout = s.dropout > 0.0f;
    d.documents = s.documents;
    d.gated_mlp = s.gated_mlp();
    d.quantised_base = s.lora.quantised_base();
    for (int i = backward_extent(table).from_layer; i < s.L; ++i) {  // the blocks it visits
        const ParamTensor* bias = table.get(Slot::UpBias, i);
        if (bias != nullptr && !bias->trainable) d.frozen_up_bias = true;
    }
    return d;
}

namespace {

// The widths of the plan's buffers for one micro-batch of N = B*T rows (elements per buffer
// are N times these, but for the backend's attention state).
struct PlanWidths {
    size_t N, C, F;
    size_t A;        // the heads side by side
    size_t QK;       // Qwen3's q/k norms: the q and k heads, compact (0 without)
    size_t QK_ROWS;  // their rows per token (0 without)
    size_t QKV, UP, Vp;
    size_t stats;    // a norm's mean per row: none under RMSNorm
    size_t saved;    // the attention state a block keeps (twice the backend's with dropout)
};

PlanWidths plan_widths(const ModelSpec& s, int B, int T, size_t att_saved) {
    PlanWidths w{};
    w.N = static_cast<size_t>(B) * static_cast<size_t>(T);
    w.C = static_cast<size_t>(s.C);
    w.F = static_cast<size_t>(s.F);
    w.A = static_cast<size_t>(s.attention_width());
    const bool qk_norm = s.family().qk_norm;
    w.QK = qk_norm ? static_cast<size_t>(s.NH + s.NKV) * static_cast<size_t>(s.hs()) : 0;
    w.QK_ROWS = qk_norm ? static_cast<size_t>(s.NH + s.NKV) : 0;
    w.QKV = static_cast<size_t>(s.qkv_width());
    w.UP = static_cast<size_t>(s.mlp_up_width());
    w.Vp = static_cast<size_t>(padded_vocab(s.V));
    w.stats = s.rms_norm() ? 0 : w.N;  // RMSNorm saves no mean
    // Attention dropout keeps the dropped probabilities after the backend's own state.
    w.saved = s.dropout > 0.0f ? 2 * att_saved : att_saved;
    return w;
}

// Cuts buffers off `base` one after another, each rounded up to 64 bytes; with base null it
// only counts the bytes.
struct Carver {
    void* base;
    DType act;
    size_t act_size;
    size_t used = 0;  // bytes

    void* carve(size_t bytes) {
        void* p = base != nullptr ? static_cast<char*>(base) + used : nullptr;
        used += (bytes + 63) / 64 * 64;
        return p;
    }
    void take(Act& view, size_t n) { view = Act(carve(n * act_size), act); }
    void take_f32(float*& ptr, size_t n) { ptr = static_cast<float*>(carve(n * sizeof(float))); }
};

// A block's attention half and the MLP's input: what recompute = block shares.
void take_attention(Carver& c, const PlanWidths& w, LayerActivations& l) {
    c.take(l.qkv, w.N * w.QKV);
    c.take(l.qk_pre, w.N * w.QK);
    c.take_f32(l.qk_rstd, w.N * w.QK_ROWS);
    c.take(l.atty, w.N * w.A);
    c.take_f32(l.att_saved, w.saved);
    c.take(l.residual2, w.N * w.C);
    c.take(l.ln2, w.N * w.C);
    c.take_f32(l.ln2_mean, w.stats);
    c.take_f32(l.ln2_rstd, w.N);
}

void share_attention(LayerActivations& l, const LayerActivations& shared) {
    l.qkv = shared.qkv, l.atty = shared.atty, l.att_saved = shared.att_saved;
    l.qk_pre = shared.qk_pre, l.qk_rstd = shared.qk_rstd;
    l.residual2 = shared.residual2, l.ln2 = shared.ln2;
    l.ln2_mean = shared.ln2_mean, l.ln2_rstd = shared.ln2_rstd;
}

// A block's MLP buffers: what recompute = mlp (and block) shares.
void take_mlp(Carver& c, const PlanWidths& w, LayerActivations& l) {
    c.take(l.mlp_pre, w.N * w.UP);
    c.take(l.mlp_act, w.N * w.F);
}

// The blocks: the shared buffers first (carved once, below the per-block ones, when any block
// exists), then each block's own.
void take_layers(Carver& c, const PlanWidths& w, int L, Recompute recompute, Activations& a) {
    a.layers.resize(static_cast<size_t>(L));
    const bool block = recompute == Recompute::Block;
    const bool mlp = block || recompute == Recompute::Mlp;
    LayerActivations shared{};
    if (L > 0) {
        c.take(shared.attproj, w.N * w.C);
        c.take(shared.fcproj, w.N * w.C);
        if (block) take_attention(c, w, shared);
        if (mlp) take_mlp(c, w, shared);
    }
    for (LayerActivations& l : a.layers) {
        c.take(l.ln1, w.N * w.C);
        c.take_f32(l.ln1_mean, w.stats);
        c.take_f32(l.ln1_rstd, w.N);
        if (block) {
            share_attention(l, shared);
        } else {
            take_attention(c, w, l);
        }
        if (mlp) {
            l.mlp_pre = shared.mlp_pre, l.mlp_act = shared.mlp_act;
        } else {
            take_mlp(c, w, l);
        }
        l.attproj = shared.attproj, l.fcproj = shared.fcproj;
        c.take(l.residual3, w.N * w.C);
    }
}

// The final norm, one chunk of the head's logits, and the backward's scratch every layer
// reuses.
void take_head_and_scratch(Carver& c, const PlanWidths& w, int head_rows, size_t att_scratch,
                           Activations& a) {
    c.take(a.lnf, w.N * w.C);
    c.take_f32(a.lnf_mean, w.stats);
    c.take_f32(a.lnf_rstd, w.N);
    c.take(a.logits, std::min(static_cast<size_t>(std::max(head_rows, 1)), w.N) * w.Vp);
    c.take_f32(a.losses, w.N);
    c.take(a.dresidual, w.N * w.C);
    c.take(a.dln, w.N * w.C);
    c.take(a.datty, w.N * w.A);
    c.take(a.dqkv, w.N * w.QKV);
    c.take(a.dmlp_pre, w.N * w.UP);
    c.take(a.dmlp_act, w.N * w.F);
    c.take_f32(a.att_scratch, att_scratch);
    c.take(a.qk_tmp, w.N * w.QK);
    c.take(a.dqk_pre, w.N * w.QK);
}

// LoRA's scratch, sized by the widest adapted linear (empty without adapters).
void take_lora(Carver& c, const ModelSpec& s, size_t N, Activations& a) {
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
    c.take(a.lora_mid, N * rank);
    c.take(a.lora_dmid, N * rank);
    c.take(a.lora_wide, N * lora_wide);
    c.take(a.lora_x, s.lora.dropout > 0.0f ? N * lora_in : 0);
}

}  // namespace

size_t lay_out_activations(const ModelSpec& s, int B, int T, size_t att_saved,
                           size_t att_scratch, DType act, Recompute recompute, void* base,
                           Activations* out, int head_rows) {
    const PlanWidths w = plan_widths(s, B, T, att_saved);
    Carver c{base, act, float_dtype_size(act)};
    Activations scratch_out;
    Activations& a = out != nullptr ? *out : scratch_out;
    c.take(a.encoded, w.N * w.C);
    take_layers(c, w, s.L, recompute, a);
    take_head_and_scratch(c, w, head_rows, att_scratch, a);
    take_lora(c, s, w.N, a);
    return c.used;
}

}  // namespace trt
