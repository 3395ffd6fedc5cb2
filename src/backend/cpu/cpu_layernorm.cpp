// LayerNorm over the last dim, eps 1e-5, biased variance (two-pass, per row), and its fusion
// with the residual add that precedes every layernorm of the model but the first.
#include <cmath>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

static constexpr float kEps = 1e-5f;

// One row, x already in cache or not: mean, then the sum of squared deviations (fixed
// order), then the normalised output.
static inline void layernorm_row_impl(float* __restrict o, float* mean, float* rstd,
                                      const float* __restrict x, const float* __restrict w,
                                      const float* __restrict b, int C) {
    const float m = sum_f(x, C) / C;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // sum of squared deviations, fixed order
    int i = 0;
    for (; i + 8 <= C; i += 8)
        for (int j = 0; j < 8; j++) {
            const float d = x[i + j] - m;
            acc[j] += d * d;
        }
    for (; i < C; i++) acc[0] += (x[i] - m) * (x[i] - m);
    const float v = (((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                     ((acc[4] + acc[5]) + (acc[6] + acc[7]))) / C;
    const float r = 1.0f / std::sqrt(v + kEps);
    for (int c = 0; c < C; c++) o[c] = (x[c] - m) * r * w[c] + b[c];
    *mean = m;
    *rstd = r;
}

TRT_CPU_CLONES static void layernorm_rows(float* out, float* mean, float* rstd,
                                          const float* inp, const float* w, const float* b,
                                          int rows, int C) {
    for (int n = 0; n < rows; n++)
        layernorm_row_impl(out + (size_t)n * C, mean + n, rstd + n, inp + (size_t)n * C, w, b,
                           C);
}

// Rows of res = a + b (+ bb), each normalised while it is still in L1.
TRT_CPU_CLONES static void residual_layernorm_rows(float* res, float* out, float* mean,
                                                   float* rstd, const float* a, const float* b,
                                                   const float* bb, const float* w,
                                                   const float* bias, int rows, int C) {
    for (int n = 0; n < rows; n++) {
        const size_t o = (size_t)n * C;
        float* __restrict r = res + o;
        const float* __restrict x = a + o;
        const float* __restrict y = b + o;
        if (bb) {
            const float* __restrict z = bb;
            for (int c = 0; c < C; c++) r[c] = x[c] + (y[c] + z[c]);
        } else {
            for (int c = 0; c < C; c++) r[c] = x[c] + y[c];
        }
        layernorm_row_impl(out + o, mean + n, rstd + n, r, w, bias, C);
    }
}

void layernorm_forward(float* out /*[N,C]*/, float* mean /*[N]*/, float* rstd /*[N]*/,
                       const float* inp /*[N,C]*/, const float* w /*[C]*/,
                       const float* b /*[C]*/, int N, int C, int threads) {
    const size_t parts = std::min((size_t)N, (size_t)threads * kPartsPerThread);
    parallel_for(parts, team((size_t)N * C, threads), [&](size_t part) {
        size_t r0, r1;
        split_range((size_t)N, parts, part, &r0, &r1);
        layernorm_rows(out + r0 * C, mean + r0, rstd + r0, inp + r0 * C, w, b, (int)(r1 - r0),
                       C);
    });
}

void residual_layernorm_forward(float* res_out /*[N,C]*/, float* out /*[N,C]*/,
                                float* mean /*[N]*/, float* rstd /*[N]*/,
                                const float* a /*[N,C]*/, const float* b /*[N,C]*/,
                                const float* bb /*[C] or null*/, const float* w /*[C]*/,
                                const float* bias /*[C]*/, int N, int C, int threads) {
    const size_t parts = std::min((size_t)N, (size_t)threads * kPartsPerThread);
    parallel_for(parts, team((size_t)N * C, threads), [&](size_t part) {
        size_t r0, r1;
        split_range((size_t)N, parts, part, &r0, &r1);
        residual_layernorm_rows(res_out + r0 * C, out + r0 * C, mean + r0, rstd + r0,
                                a + r0 * C, b + r0 * C, bb, w, bias, (int)(r1 - r0), C);
    });
}

// dinp_row += rstd (g − mean(g) − xhat·mean(g·xhat)), g = dout·w, xhat = (x − mean)·rstd.
// Two passes over the row (sums, then the update), g and xhat recomputed: no scratch.
TRT_CPU_CLONES static void layernorm_backward_rows(float* dinp, const float* dout,
                                                   const float* inp, const float* w,
                                                   const float* mean, const float* rstd,
                                                   int rows, int C) {
    for (int n = 0; n < rows; n++) {
        const size_t o = (size_t)n * C;
        float* __restrict di = dinp + o;
        const float* __restrict go = dout + o;
        const float* __restrict x = inp + o;
        const float m = mean[n], r = rstd[n];
        float sg[8] = {0, 0, 0, 0, 0, 0, 0, 0}, sgx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int i = 0;
        for (; i + 8 <= C; i += 8)
            for (int j = 0; j < 8; j++) {
                const float g = go[i + j] * w[i + j];
                sg[j] += g;
                sgx[j] += g * ((x[i + j] - m) * r);
            }
        for (; i < C; i++) {
            const float g = go[i] * w[i];
            sg[0] += g;
            sgx[0] += g * ((x[i] - m) * r);
        }
        const float mg = (((sg[0] + sg[1]) + (sg[2] + sg[3])) +
                          ((sg[4] + sg[5]) + (sg[6] + sg[7]))) / C;
        const float mgx = (((sgx[0] + sgx[1]) + (sgx[2] + sgx[3])) +
                           ((sgx[4] + sgx[5]) + (sgx[6] + sgx[7]))) / C;
        for (int c = 0; c < C; c++) {
            const float g = go[c] * w[c];
            const float xh = (x[c] - m) * r;
            di[c] += r * (g - mg - xh * mgx);
        }
    }
}

// Columns [0, w) of dw/db += sum over rows of dout·xhat and dout (row stride C), float
// accumulators in row order.
TRT_CPU_CLONES static void layernorm_param_cols(float* __restrict aw, float* __restrict ab,
                                                const float* dout, const float* inp,
                                                const float* mean, const float* rstd, int N,
                                                int C, int w) {
    for (int n = 0; n < N; n++) {
        const float* __restrict x = inp + (size_t)n * C;
        const float* __restrict go = dout + (size_t)n * C;
        const float m = mean[n], r = rstd[n];
        for (int j = 0; j < w; j++) {
            aw[j] += go[j] * ((x[j] - m) * r);
            ab[j] += go[j];
        }
    }
}

void layernorm_backward(float* dinp /*[N,C] +=*/, float* dw /*[C] +=*/, float* db /*[C] +=*/,
                        const float* dout /*[N,C]*/, const float* inp /*[N,C]*/,
                        const float* w /*[C]*/, const float* mean /*[N]*/,
                        const float* rstd /*[N]*/, int N, int C, int threads) {
    // Columns: dw, db (the same sums whatever the thread count). Rows: dinp.
    float* const dst[2] = {dw, db};
    norm_backward_job<2>(
        dst, N, C, team((size_t)N * C, threads),
        [&](size_t j0, int wd, size_t r0, int rows, float(*acc)[kColChunk]) {
            const size_t o = r0 * C + j0;
            layernorm_param_cols(acc[0], acc[1], dout + o, inp + o, mean + r0, rstd + r0, rows, C,
                                 wd);
        },
        [&](size_t r0, size_t r1) {
            layernorm_backward_rows(dinp + r0 * C, dout + r0 * C, inp + r0 * C, w, mean + r0,
                                    rstd + r0, (int)(r1 - r0), C);
        });
}

}  // namespace trt::cpu
