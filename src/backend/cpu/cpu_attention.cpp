// Causal multi-head self-attention. Per (b, h) — the unit of OpenMP parallelism — the
// products are single-threaded sgemms on strided views of qkv (OpenBLAS runs serially
// inside an OpenMP parallel region), and the softmax is a tight row loop.
#include <cblas.h>
#include <omp.h>

#include <cmath>
#include <cstddef>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

// att[T,T] holds scaled scores; replace each row t by its causal softmax (columns <= t),
// zeros above the diagonal.
TRT_CPU_CLONES static void causal_softmax_rows(float* att, int T) {
    const ExpLimits lim = exp_limits();
    for (int t = 0; t < T; t++) {
        float* __restrict row = att + (size_t)t * T;
        const float mx = max_f(row, t + 1);
        for (int s = 0; s <= t; s++) row[s] = fast_expf(row[s] - mx, lim);
        const float inv = 1.0f / sum_f(row, t + 1);
        for (int s = 0; s <= t; s++) row[s] *= inv;
        for (int s = t + 1; s < T; s++) row[s] = 0.0f;  // causal mask
    }
}

// Softmax backward in place on d[T,T] (datt in, dpreatt out):
// dpre[t,s] = att[t,s] (datt[t,s] - <att[t,:], datt[t,:]>), zeros above the diagonal.
TRT_CPU_CLONES static void softmax_backward_rows(float* d, const float* att, int T) {
    for (int t = 0; t < T; t++) {
        const float* __restrict a = att + (size_t)t * T;
        float* __restrict r = d + (size_t)t * T;
        const float dot = dot_f(a, r, t + 1);
        for (int s = 0; s <= t; s++) r[s] = a[s] * (r[s] - dot);
        for (int s = t + 1; s < T; s++) r[s] = 0.0f;
    }
}

size_t attention_saved_floats(int B, int T, int /*C*/, int NH) {
    // Softmax probabilities att[B,NH,T,T]; the strict upper triangle is stored as 0.
    return (size_t)B * NH * T * T;
}

size_t attention_scratch_floats(int /*B*/, int T, int /*C*/, int /*NH*/, int threads) {
    // One [T,T] block per thread for datt / dpreatt (computed in place).
    return (size_t)threads * T * T;
}

void attention_forward(float* out /*[B,T,C]*/, float* saved /*[B,NH,T,T]*/,
                       const float* qkv /*[B,T,3C]*/, int B, int T, int C, int NH,
                       int threads) {
    const int hs = C / NH;
    const int C3 = 3 * C;
    const float scale = 1.0f / std::sqrt((float)hs);
    const int BH = B * NH;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int bh = 0; bh < BH; bh++) {
        const int b = bh / NH, h = bh % NH;
        const float* q = qkv + (size_t)b * T * C3 + h * hs;  // [T,hs], row stride 3C
        const float* k = q + C;
        const float* v = q + 2 * C;
        float* att = saved + (size_t)bh * T * T;  // [T,T]
        // preatt = scale * q · kᵀ (the full square; the upper triangle is overwritten below)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, k, C3,
                    0.0f, att, T);
        causal_softmax_rows(att, T);
        // out_h[T,hs] = att[T,T] · v[T,hs], written into out's head columns (row stride C)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, att, T, v, C3,
                    0.0f, out + (size_t)b * T * C + h * hs, C);
    }
}

void attention_backward(float* dqkv /*[B,T,3C] overwritten*/, float* scratch,
                        const float* dout /*[B,T,C]*/, const float* qkv /*[B,T,3C]*/,
                        const float* saved /*[B,NH,T,T]*/, int B, int T, int C, int NH,
                        int threads) {
    const int hs = C / NH;
    const int C3 = 3 * C;
    const float scale = 1.0f / std::sqrt((float)hs);
    const int BH = B * NH;
    // Every (b, h) writes its own dq, dk, dv columns with beta = 0, so together they
    // overwrite all of dqkv without a separate zeroing pass.
#pragma omp parallel num_threads(threads)
    {
        float* d = scratch + (size_t)omp_get_thread_num() * T * T;  // [T,T] this thread's
#pragma omp for schedule(static)
        for (int bh = 0; bh < BH; bh++) {
            const int b = bh / NH, h = bh % NH;
            const size_t qoff = (size_t)b * T * C3 + h * hs;
            const float* q = qkv + qoff;
            const float* k = q + C;
            const float* v = q + 2 * C;
            float* dq = dqkv + qoff;
            float* dk = dq + C;
            float* dv = dq + 2 * C;
            const float* att = saved + (size_t)bh * T * T;
            const float* dout_h = dout + (size_t)b * T * C + h * hs;  // [T,hs], stride C
            // datt[T,T] = dout_h · vᵀ
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dout_h, C, v,
                        C3, 0.0f, d, T);
            // dv[T,hs] = attᵀ · dout_h
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, att, T,
                        dout_h, C, 0.0f, dv, C3);
            softmax_backward_rows(d, att, T);  // d: datt -> dpreatt
            // preatt = scale q·kᵀ  =>  dq = scale dpre · k ; dk = scale dpreᵀ · q
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, d, T, k,
                        C3, 0.0f, dq, C3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, d, T, q, C3,
                        0.0f, dk, C3);
        }
    }
}

}  // namespace trt::cpu
