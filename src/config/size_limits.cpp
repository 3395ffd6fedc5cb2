#include "config/size_limits.h"

#include <cstdio>

#include "config/run_config.h"
#include "core/error.h"

namespace trt::limits {

double estimated_bytes(const RunConfig& r) {
    // Doubles: exact far beyond kMaxBytes, and no product of the bounded keys overflows them.
    const double V = static_cast<double>(r.model.vocab_size), C = static_cast<double>(r.model.d_model);
    const double L = static_cast<double>(r.model.n_layer), NH = static_cast<double>(r.model.n_head);
    const double maxT = static_cast<double>(r.model.context_length);
    const double T = static_cast<double>(r.train.seq_len);
    const double N = static_cast<double>(r.train.batch_size) * T;
    const double Vp = V + 127.0;  // padded vocab, at most
    const double F = r.model.d_ff > 0 ? static_cast<double>(r.model.d_ff) : 4.0 * C;
    const double KV = r.model.n_kv_head > 0 ? static_cast<double>(r.model.n_kv_head) : NH;
    const double qkv = C + 2.0 * C / NH * KV;  // query, key and value widths
    // Embedding [Vp, C], an untied head [Vp, C], positions [maxT, C] (gpt2), per block the
    // attention (qkv + output: qkv*C + C^2), the MLP (gated: 3 C F, else 2 C F) and small
    // vectors; a generous bound for either family.
    const double params = 2.0 * Vp * C + maxT * C + L * (qkv * C + C * C + 3.0 * C * F + 13.0 * C + qkv + F) + 2.0 * C;
    // Per block about 8 C + qkv + 3 F floats per row plus the attention probabilities
    // (NH x T per row); then the logits (Vp per row) and the backward scratch.
    const double acts = L * N * (8.0 * C + 2.0 * qkv + 3.0 * F + 4.0 + NH * T) +
                        N * (Vp + 8.0 * C + 2.0 * qkv + 3.0 * F + 4.0);
    return 4.0 * (4.0 * params + acts);
}

std::string size_problem(const RunConfig& r) {
    const double rows = static_cast<double>(r.train.batch_size) * static_cast<double>(r.train.seq_len);
    if (rows > static_cast<double>(kMaxRows))
        return cat("train.batch_size x train.seq_len = ", r.train.batch_size, " x ",
                   r.train.seq_len, " rows per micro-batch, more than ", kMaxRows,
                   " (activations are indexed by 32-bit row numbers); lower train.batch_size "
                   "(use train.grad_accum for more tokens per step) or train.seq_len");
    const double bytes = estimated_bytes(r);
    if (bytes > kMaxBytes) {
        char shown[64];
        std::snprintf(shown, sizeof shown, "%.3g", bytes / 1099511627776.0);
        return cat("model.* and train.batch_size/seq_len together need about ", shown,
                   " TiB (parameters, gradients, AdamW state and one micro-batch's "
                   "activations), more than the 4096 TiB this runtime addresses; lower "
                   "model.vocab_size, model.d_model, model.n_layer or train.batch_size");
    }
    return "";
}

}  // namespace trt::limits
