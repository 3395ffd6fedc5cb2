// RMSNorm over the last dim (HF LlamaRMSNorm: no mean subtraction, no bias, eps from the
// model config), and its fusion with the residual add that precedes every norm of a Llama
// block but the first. Same structure as cpu_layernorm.cpp.
#include <cmath>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

// One row: the sum of squares (fixed order), then out = (x·rstd)·w — LlamaRMSNorm's order
// (normalise, then scale by the weight).
static inline void rmsnorm_row_impl(float* __restrict o, float* rstd,
                                    const float* __restrict x, const float* __restrict w,
                                    int C, float eps) {
    const float ms = dot_f(x, x, C) / C;
    const float r = 1.0f / std::sqrt(ms + eps);
    for (int c = 0; c < C; c++) o[c] = (x[c] * r) * w[c];
    *rstd = r;
}

TRT_CPU_CLONES static void rmsnorm_rows(float* out, float* rstd, const float* inp,
                                        const float* w, int rows, int C, float eps) {
    for (int n = 0; n < rows; n++)
        rmsnorm_row_impl(out + (size_t)n * C, rstd + n, inp + (size_t)n * C, w, C, eps);
}

// Rows of res = a + b, each normalised while it is still in L1.
TRT_CPU_CLONES static void residual_rmsnorm_rows(float* res, float* out, float* rstd,
                                                 const float* a, const float* b,
                                                 const float* w, int rows, int C, float eps) {
    for (int n = 0; n < rows; n++) {
        const size_t o = (size_t)n * C;
        float* __restrict r = res + o;
        const float* __restrict x = a + o;
        const float* __restrict y = b + o;
        for (int c = 0; c < C; c++) r[c] = x[c] + y[c];
        rmsnorm_row_impl(out + o, rstd + n, r, w, C, eps);
    }
}

void rmsnorm_forward(float* out /*[N,C]*/, float* rstd /*[N]*/, const float* inp /*[N,C]*/,
                     const float* w /*[C]*/, int N, int C, float eps, int threads) {
    const size_t parts = std::min((size_t)N, (size_t)threads * kPartsPerThread);
    parallel_for(parts, team((size_t)N * C, threads), [&](size_t part) {
        size_t r0, r1;
        split_range((size_t)N, parts, part, &r0, &r1);
        rmsnorm_rows(out + r0 * C, rstd + r0, inp + r0 * C, w, (int)(r1 - r0), C, eps);
    });
}

void residual_rmsnorm_forward(float* res_out /*[N,C]*/, float* out /*[N,C]*/,
                              float* rstd /*[N]*/, const float* a /*[N,C]*/,
                              const float* b /*[N,C]*/, const float* w /*[C]*/, int N, int C,
                              float eps, int threads) {
    const size_t parts = std::min((size_t)N, (size_t)threads * kPartsPerThread);
    parallel_for(parts, team((size_t)N * C, threads), [&](size_t part) {
        size_t r0, r1;
        split_range((size_t)N, parts, part, &r0, &r1);
        residual_rmsnorm_rows(res_out + r0 * C, out + r0 * C, rstd + r0, a + r0 * C,
                              b + r0 * C, w, (int)(r1 - r0), C, eps);
    });
}

// Row n's q heads, then its k heads: each copied into pre and normalised back into place from
// there — rmsnorm_rows on the same values, so the same bits as the composed default.
TRT_CPU_CLONES static void qk_norm_rows(float* qkv, float* pre, float* rstd, const float* wq,
                                        const float* wk, int n0, int n1, int N, int NH, int NKV,
                                        int hs, float eps) {
    const size_t W = (size_t)(NH + 2 * NKV) * hs, q_rows = (size_t)N * NH;
    for (int n = n0; n < n1; n++) {
        for (int h = 0; h < NH + NKV; h++) {
            const bool q = h < NH;
            const size_t row = q ? (size_t)n * NH + h : q_rows + (size_t)n * NKV + (h - NH);
            float* x = qkv + n * W + (size_t)h * hs;  // q heads, then k heads, side by side
            float* p = pre + row * hs;
            for (int c = 0; c < hs; c++) p[c] = x[c];
            rmsnorm_row_impl(x, rstd + row, p, q ? wq : wk, hs, eps);
        }
    }
}

void qk_norm_forward(float* qkv /*[N,(NH+2NKV)hs]*/, float* pre /*[N(NH+NKV),hs]*/,
                     float* rstd /*[N(NH+NKV)]*/, const float* wq /*[hs]*/,
                     const float* wk /*[hs]*/, int N, int NH, int NKV, int hs, float eps,
                     int threads) {
    const size_t parts = std::min((size_t)N, (size_t)threads * kPartsPerThread);
    parallel_for(parts, team((size_t)N * (NH + NKV) * hs, threads), [&](size_t part) {
        size_t r0, r1;
        split_range((size_t)N, parts, part, &r0, &r1);
        qk_norm_rows(qkv, pre, rstd, wq, wk, (int)r0, (int)r1, N, NH, NKV, hs, eps);
    });
}

// dinp_row += rstd (g − xhat·mean(g·xhat)), g = dout·w, xhat = x·rstd (the layernorm
// backward without the mean terms). Two passes over the row, g and xhat recomputed.
TRT_CPU_CLONES static void rmsnorm_backward_rows(float* dinp, const float* dout,
                                                 const float* inp, const float* w,
                                                 const float* rstd, int rows, int C) {
    for (int n = 0; n < rows; n++) {
        const size_t o = (size_t)n * C;
        float* __restrict di = dinp + o;
        const float* __restrict go = dout + o;
        const float* __restrict x = inp + o;
        const float r = rstd[n];
        float sgx[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // sum of g·xhat, fixed order
        int i = 0;
        for (; i + 8 <= C; i += 8)
            for (int j = 0; j < 8; j++) sgx[j] += (go[i + j] * w[i + j]) * (x[i + j] * r);
        for (; i < C; i++) sgx[0] += (go[i] * w[i]) * (x[i] * r);
        const float mgx = (((sgx[0] + sgx[1]) + (sgx[2] + sgx[3])) +
                           ((sgx[4] + sgx[5]) + (sgx[6] + sgx[7]))) / C;
        for (int c = 0; c < C; c++) {
            const float g = go[c] * w[c];
            const float xh = x[c] * r;
            di[c] += r * (g - xh * mgx);
        }
    }
}

// Columns [0, wd) of dw += sum over rows of dout·xhat (row stride C), float accumulators in
// row order (as layernorm_param_cols).
TRT_CPU_CLONES static void rmsnorm_param_cols(float* __restrict aw, const float* dout,
                                              const float* inp, const float* rstd, int N,
                                              int C, int wd) {
    for (int n = 0; n < N; n++) {
        const float* __restrict x = inp + (size_t)n * C;
        const float* __restrict go = dout + (size_t)n * C;
        const float r = rstd[n];
        for (int j = 0; j < wd; j++) aw[j] += go[j] * (x[j] * r);
    }
}

void rmsnorm_backward(float* dinp /*[N,C] +=*/, float* dw /*[C] +=*/,
                      const float* dout /*[N,C]*/, const float* inp /*[N,C]*/,
                      const float* w /*[C]*/, const float* rstd /*[N]*/, int N, int C,
                      int threads) {
    // Columns: dw (the same sums whatever the thread count). Rows: dinp.
    float* const dst[1] = {dw};
    norm_backward_job<1>(
        dst, N, C, team((size_t)N * C, threads),
        [&](size_t j0, int wd, size_t r0, int rows, float(*acc)[kColChunk]) {
            const size_t o = r0 * C + j0;
            rmsnorm_param_cols(acc[0], dout + o, inp + o, rstd + r0, rows, C, wd);
        },
        [&](size_t r0, size_t r1) {
            rmsnorm_backward_rows(dinp + r0 * C, dout + r0 * C, inp + r0 * C, w, rstd + r0,
                                  (int)(r1 - r0), C);
        });
}

}  // namespace trt::cpu
