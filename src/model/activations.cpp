#include "model/activations.h"

namespace trt {

size_t lay_out_activations(const ModelSpec& s, int B, int T, size_t att_saved,
                           size_t att_scratch, float* base, Activations* out) {
    const size_t N = static_cast<size_t>(B) * static_cast<size_t>(T);
    const size_t C = static_cast<size_t>(s.C), F = static_cast<size_t>(s.F);
    const size_t QKV = static_cast<size_t>(s.qkv_width());
    const size_t UP = static_cast<size_t>(s.mlp_up_width());
    const size_t Vp = static_cast<size_t>(padded_vocab(s.V));
    const size_t stats = s.rms_norm() ? 0 : N;  // RMSNorm saves no mean
    size_t used = 0;
    Activations scratch_out;
    Activations& a = out != nullptr ? *out : scratch_out;
    auto take = [&](float*& ptr, size_t n) {
        ptr = base != nullptr ? base + used : nullptr;
        used += (n + 15) / 16 * 16;
    };
    take(a.encoded, N * C);
    a.layers.resize(static_cast<size_t>(s.L));
    for (LayerActivations& l : a.layers) {
        take(l.ln1, N * C);
        take(l.ln1_mean, stats);
        take(l.ln1_rstd, N);
        take(l.qkv, N * QKV);
        take(l.atty, N * C);
        take(l.att_saved, att_saved);
        take(l.attproj, N * C);
        take(l.residual2, N * C);
        take(l.ln2, N * C);
        take(l.ln2_mean, stats);
        take(l.ln2_rstd, N);
        take(l.mlp_pre, N * UP);
        take(l.mlp_act, N * F);
        take(l.fcproj, N * C);
        take(l.residual3, N * C);
    }
    take(a.lnf, N * C);
    take(a.lnf_mean, stats);
    take(a.lnf_rstd, N);
    take(a.logits, N * Vp);
    take(a.losses, N);
    take(a.dresidual, N * C);
    take(a.dln, N * C);
    take(a.datty, N * C);
    take(a.dqkv, N * QKV);
    take(a.dmlp_pre, N * UP);
    take(a.dmlp_act, N * F);
    take(a.att_scratch, att_scratch);
    return used;
}

}  // namespace trt
