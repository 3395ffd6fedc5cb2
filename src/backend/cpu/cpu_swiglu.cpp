// SwiGLU, the Llama MLP's activation: out = silu(gate) * up on inp = [gate | up] rows (the
// stacked gate_proj and up_proj outputs, [N, 2F]). Memory-bound rows, split statically;
// silu through the branch-free fast_expf so the loops vectorise (as GELU's).
#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

// silu(x) = x·s, s = sigmoid(x) = 1/(1 + e), e = e^-x. fast_expf clamps to [-87, 88], so
// 1 + e stays finite and very negative x give ~0, not NaN.
TRT_CPU_CLONES static void swiglu_forward_rows(float* out, const float* inp, int rows, int F) {
    const ExpLimits lim = exp_limits();
    for (int n = 0; n < rows; n++) {
        float* __restrict o = out + (size_t)n * F;
        const float* __restrict gate = inp + (size_t)n * 2 * F;
        const float* __restrict up = gate + F;
        for (int j = 0; j < F; j++) {
            const float x = gate[j];
            o[j] = x / (1.0f + fast_expf(-x, lim)) * up[j];
        }
    }
}

// silu'(x) = s + x·s(1 − s) = s(1 + x·e·s): 1 − s = e·s avoids the cancellation.
TRT_CPU_CLONES static void swiglu_backward_rows(float* dinp, const float* inp,
                                                const float* dout, int rows, int F) {
    const ExpLimits lim = exp_limits();
    for (int n = 0; n < rows; n++) {
        float* __restrict dgate = dinp + (size_t)n * 2 * F;
        float* __restrict dup = dgate + F;
        const float* __restrict gate = inp + (size_t)n * 2 * F;
        const float* __restrict up = gate + F;
        const float* __restrict go = dout + (size_t)n * F;
        for (int j = 0; j < F; j++) {
            const float x = gate[j];
            const float e = fast_expf(-x, lim);
            const float s = 1.0f / (1.0f + e);
            dgate[j] = go[j] * up[j] * (s * (1.0f + x * (e * s)));
            dup[j] = go[j] * (x / (1.0f + e));  // silu(x) with the forward's bits
        }
    }
}

void swiglu_forward(float* out /*[N,F]*/, const float* inp /*[N,2F]*/, int N, int F,
                    int threads) {
    const size_t parts = std::min((size_t)N, (size_t)threads * kPartsPerThread);
    parallel_for(parts, team((size_t)N * F, threads), [&](size_t part) {
        size_t r0, r1;
        split_range((size_t)N, parts, part, &r0, &r1);
        swiglu_forward_rows(out + r0 * F, inp + r0 * 2 * F, (int)(r1 - r0), F);
    });
}

void swiglu_backward(float* dinp /*[N,2F] overwritten*/, const float* inp /*[N,2F]*/,
                     const float* dout /*[N,F]*/, int N, int F, int threads) {
    const size_t parts = std::min((size_t)N, (size_t)threads * kPartsPerThread);
    parallel_for(parts, team((size_t)N * F, threads), [&](size_t part) {
        size_t r0, r1;
        split_range((size_t)N, parts, part, &r0, &r1);
        swiglu_backward_rows(dinp + r0 * 2 * F, inp + r0 * 2 * F, dout + r0 * F,
                             (int)(r1 - r0), F);
    });
}

}  // namespace trt::cpu
