// Fused softmax cross-entropy over the first V of Vp logit columns, optionally writing the
// logit gradient in place (the logits buffer is reused as dlogits). A target of -1
// (kIgnoredTarget) is a position that is an input but not a target: loss 0, gradient 0.
#include <cmath>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

namespace trt::cpu {

// One row: loss = logsumexp(row[:V]) − row[tgt]; optionally row <- dloss (p − onehot).
TRT_CPU_CLONES static void classifier_row(float* __restrict row, float* loss, int tgt, int V,
                                          int Vp, float dloss, bool write_grad) {
    const ExpLimits lim = exp_limits();
    const float mx = max_f(row, V);  // max subtraction keeps exp() in range
    float sum = 0.0f;
    if (write_grad) {  // keep e^(x−max) in the row; it becomes the gradient below
        const float target_logit = row[tgt];
        for (int i = 0; i < V; i++) row[i] = fast_expf(row[i] - mx, lim);
        sum = sum_f(row, V);
        *loss = (float)((double)mx + std::log((double)sum) - (double)target_logit);
        const float scale = dloss / sum;
        for (int i = 0; i < V; i++) row[i] *= scale;
        row[tgt] -= dloss;                           // the onehot term
        for (int i = V; i < Vp; i++) row[i] = 0.0f;  // padded columns carry no gradient
    } else {
        // Same accumulation order as sum_f above, so both paths give the same loss bits.
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int i = 0;
        for (; i + 8 <= V; i += 8)
            for (int j = 0; j < 8; j++) acc[j] += fast_expf(row[i + j] - mx, lim);
        for (; i < V; i++) acc[0] += fast_expf(row[i] - mx, lim);
        sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        *loss = (float)((double)mx + std::log((double)sum) - (double)row[tgt]);
    }
}

void classifier_forward_backward(float* logits /*[N,Vp] inout*/, float* losses /*[N]*/,
                                 const int32_t* targets /*[N]*/, int N, int V, int Vp,
                                 float dloss, bool write_grad, int threads) {
    TRT_CHECK(V > 0 && V <= Vp, "V=", V, " Vp=", Vp);
    // Validate before the parallel loop: a part must not throw (cpu_pool.h).
    for (int n = 0; n < N; n++)
        TRT_CHECK(targets[n] == kIgnoredTarget || (targets[n] >= 0 && targets[n] < V), "target ",
                  targets[n], " at position ", n, " outside [0, ", V, ") and not ",
                  kIgnoredTarget, " (ignored)");
    parallel_for(N, team((size_t)N * Vp, threads), [&](int n) {
        float* row = logits + (size_t)n * Vp;
        if (targets[n] == kIgnoredTarget) {  // not a target: no loss, no gradient
            losses[n] = 0.0f;
            if (write_grad)
                for (int i = 0; i < Vp; i++) row[i] = 0.0f;
            return;
        }
        classifier_row(row, losses + n, targets[n], V, Vp, dloss, write_grad);
    });
}

}  // namespace trt::cpu
