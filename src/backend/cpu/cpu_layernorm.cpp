// LayerNorm over the last dim, eps 1e-5, biased variance (two-pass, per row).
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

static constexpr float kEps = 1e-5f;

TRT_CPU_CLONES static void layernorm_row(float* __restrict o, float* mean, float* rstd,
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

void layernorm_forward(float* out /*[N,C]*/, float* mean /*[N]*/, float* rstd /*[N]*/,
                       const float* inp /*[N,C]*/, const float* w /*[C]*/,
                       const float* b /*[C]*/, int N, int C, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int n = 0; n < N; n++)
        layernorm_row(out + (size_t)n * C, mean + n, rstd + n, inp + (size_t)n * C, w, b, C);
}

// dinp_row += rstd (g − mean(g) − xhat·mean(g·xhat)), g = dout·w, xhat = (x − mean)·rstd.
// g, xh: C-float scratch rows.
TRT_CPU_CLONES static void layernorm_backward_row(float* __restrict di, float* __restrict g,
                                                  float* __restrict xh,
                                                  const float* __restrict go,
                                                  const float* __restrict x,
                                                  const float* __restrict w, float m, float r,
                                                  int C) {
    for (int c = 0; c < C; c++) {
        g[c] = go[c] * w[c];
        xh[c] = (x[c] - m) * r;
    }
    const float mg = sum_f(g, C) / C;
    const float mgx = dot_f(g, xh, C) / C;
    for (int c = 0; c < C; c++) di[c] += r * (g[c] - mg - xh[c] * mgx);
}

// Columns [0, w) of dw/db += sum over rows of dout·xhat and dout (row stride C).
TRT_CPU_CLONES static void layernorm_param_cols(float* __restrict aw, float* __restrict ab,
                                                const float* dout, const float* inp,
                                                const float* mean, const float* rstd, int N,
                                                int C, size_t w) {
    for (int n = 0; n < N; n++) {
        const float* __restrict x = inp + (size_t)n * C;
        const float* __restrict go = dout + (size_t)n * C;
        const float m = mean[n], r = rstd[n];
        for (size_t j = 0; j < w; j++) {
            aw[j] += go[j] * ((x[j] - m) * r);
            ab[j] += go[j];
        }
    }
}

void layernorm_backward(float* dinp /*[N,C] +=*/, float* dw /*[C] +=*/, float* db /*[C] +=*/,
                        const float* dout /*[N,C]*/, const float* inp /*[N,C]*/,
                        const float* w /*[C]*/, const float* mean /*[N]*/,
                        const float* rstd /*[N]*/, int N, int C, int threads) {
    // Pass 1, rows in parallel: dinp.
#pragma omp parallel num_threads(threads)
    {
        std::vector<float> tmp(2 * (size_t)C);  // g and xhat of the current row
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++)
            layernorm_backward_row(dinp + (size_t)n * C, tmp.data(), tmp.data() + C,
                                   dout + (size_t)n * C, inp + (size_t)n * C, w, mean[n],
                                   rstd[n], C);
    }
    // Pass 2, columns in parallel: dw, db. Each thread owns a static column range and walks
    // all rows, so there is no cross-thread reduction (reproducible).
    const size_t parts = (size_t)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t part = 0; part < parts; part++) {
        size_t c0, c1;
        split_range((size_t)C, parts, part, &c0, &c1);
        if (c0 == c1) continue;
        const size_t wd = c1 - c0;
        std::vector<float> acc(2 * wd, 0.0f);
        layernorm_param_cols(acc.data(), acc.data() + wd, dout + c0, inp + c0, mean, rstd, N, C,
                             wd);
        for (size_t j = 0; j < wd; j++) {
            dw[c0 + j] += acc[j];
            db[c0 + j] += acc[wd + j];
        }
    }
}

}  // namespace trt::cpu
