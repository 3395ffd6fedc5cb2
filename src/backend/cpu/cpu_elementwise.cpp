// Elementwise ops and the embedding encoder: memory-bound loops, OpenMP over the outer
// index with static schedules, contiguous inner loops that vectorise.
#include <cmath>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

void encoder_forward(float* out /*[N,C]*/, const int32_t* inputs /*[N]*/,
                     const float* wte /*[V,C]*/, const float* wpe /*[>=T,C]*/, int B, int T,
                     int C, int threads) {
    const int N = B * T;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int n = 0; n < N; n++) {
        float* __restrict o = out + (size_t)n * C;
        const float* __restrict e = wte + (size_t)inputs[n] * C;
        const float* __restrict p = wpe + (size_t)(n % T) * C;
        for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
}

void encoder_backward(float* dwte /*[V,C] +=*/, float* dwpe /*[>=T,C] +=*/,
                      const float* dout /*[N,C]*/, const int32_t* inputs /*[N]*/, int B,
                      int T, int C, int threads) {
    // A token may repeat, so rows of dwte would race if split by n. Split by channel instead:
    // each thread owns columns [c0, c1) of every row and walks n in order (deterministic).
    const int N = B * T;
    const size_t parts = (size_t)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t part = 0; part < parts; part++) {
        size_t c0, c1;
        split_range((size_t)C, parts, part, &c0, &c1);
        const size_t w = c1 - c0;
        for (int n = 0; n < N; n++) {
            const float* __restrict g = dout + (size_t)n * C + c0;
            float* __restrict e = dwte + (size_t)inputs[n] * C + c0;
            float* __restrict p = dwpe + (size_t)(n % T) * C + c0;
            for (size_t j = 0; j < w; j++) {
                e[j] += g[j];
                p[j] += g[j];
            }
        }
    }
}

static constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

// GELU(x) = 0.5x(1 + tanh u), u = sqrt(2/pi)(x + 0.044715x³). Since 0.5(1 + tanh u) =
// sigmoid(2u), GELU(x) = x / (1 + e^{-2u}): one vectorisable exp, stable for large |u|.
TRT_CPU_CLONES static void gelu_forward_kernel(float* __restrict out,
                                               const float* __restrict inp, size_t n) {
    const ExpLimits lim = exp_limits();
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float u = kGeluScale * (x + 0.044715f * x * x * x);
        out[i] = x / (1.0f + fast_expf(-2.0f * u, lim));
    }
}

// d GELU/dx = s + x·2s(1−s)·du/dx with s = sigmoid(2u) = 1/(1+e), e = e^{-2u};
// s(1−s) = e/(1+e)² avoids the cancellation in 1−s.
TRT_CPU_CLONES static void gelu_backward_kernel(float* __restrict dinp,
                                                const float* __restrict inp,
                                                const float* __restrict dout, size_t n) {
    const ExpLimits lim = exp_limits();
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float u = kGeluScale * (x + 0.044715f * x * x * x);
        const float e = fast_expf(-2.0f * u, lim);
        const float s = 1.0f / (1.0f + e);
        const float du = kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = (s + x * 2.0f * (e * s * s) * du) * dout[i];
    }
}

void gelu_forward(float* out, const float* inp, size_t n, int threads) {
    const size_t parts = (size_t)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t part = 0; part < parts; part++) {
        size_t i0, i1;
        split_range(n, parts, part, &i0, &i1);
        gelu_forward_kernel(out + i0, inp + i0, i1 - i0);
    }
}

void gelu_backward(float* dinp /*overwritten*/, const float* inp, const float* dout, size_t n,
                   int threads) {
    const size_t parts = (size_t)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t part = 0; part < parts; part++) {
        size_t i0, i1;
        split_range(n, parts, part, &i0, &i1);
        gelu_backward_kernel(dinp + i0, inp + i0, dout + i0, i1 - i0);
    }
}

void residual_forward(float* out, const float* a, const float* b, size_t n, int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void add_inplace(float* dst, const float* src, size_t n, int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

}  // namespace trt::cpu

