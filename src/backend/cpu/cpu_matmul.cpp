// Matmuls: OpenBLAS cblas_sgemm for every product (forward, dinp, dweight); OpenMP only for
// the bias broadcast and the dbias column sums.
#include <cblas.h>

#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

void matmul_forward(float* out /*[N,M]*/, const float* inp /*[N,K]*/,
                    const float* weight /*[K,M] InOut | [M,K] OutIn*/,
                    const float* bias /*[M] or null*/, int N, int K, int M,
                    WeightLayout layout, int threads) {
    if (N <= 0 || M <= 0) return;
    float beta = 0.0f;
    if (bias) {
        // Broadcast the bias into out, then let sgemm accumulate onto it (beta = 1).
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int n = 0; n < N; n++) {
            float* __restrict o = out + (size_t)n * M;
            for (int j = 0; j < M; j++) o[j] = bias[j];
        }
        beta = 1.0f;
    }
    if (K <= 0) {
        if (!bias)
            for (size_t i = 0; i < (size_t)N * M; i++) out[i] = 0.0f;
        return;
    }
    if (layout == WeightLayout::InOut) {
        // out[N,M] = inp[N,K] · W[K,M]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, M, K, 1.0f, inp, K, weight,
                    M, beta, out, M);
    } else {
        // out[N,M] = inp[N,K] · W[M,K]ᵀ
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, M, K, 1.0f, inp, K, weight, K,
                    beta, out, M);
    }
}

// dbias[M] += sum_n dout[n, :]. Each thread owns a static range of columns and walks all
// rows, so there is no cross-thread reduction and the result is reproducible.
static void bias_backward(float* dbias, const float* dout, int N, int M, int threads) {
    const size_t parts = (size_t)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t part = 0; part < parts; part++) {
        size_t c0, c1;
        split_range((size_t)M, parts, part, &c0, &c1);
        if (c0 == c1) continue;
        std::vector<double> acc(c1 - c0, 0.0);  // double: N can be thousands of rows
        double* __restrict a = acc.data();
        const size_t w = c1 - c0;
        for (int n = 0; n < N; n++) {
            const float* __restrict row = dout + (size_t)n * M + c0;
            for (size_t j = 0; j < w; j++) a[j] += row[j];
        }
        for (size_t j = 0; j < w; j++) dbias[c0 + j] += (float)a[j];
    }
}

void matmul_backward(float* dinp /*[N,K] overwritten or null*/,
                     float* dweight /*+= layout of weight*/, float* dbias /*[M] += or null*/,
                     const float* dout /*[N,M]*/, const float* inp /*[N,K]*/,
                     const float* weight, int N, int K, int M, WeightLayout layout,
                     int threads) {
    if (N <= 0 || K <= 0 || M <= 0) {
        if (dinp && N > 0 && K > 0)
            for (size_t i = 0; i < (size_t)N * K; i++) dinp[i] = 0.0f;
        return;
    }
    const bool inout = layout == WeightLayout::InOut;
    if (dinp) {
        if (inout)  // dinp[N,K] = dout[N,M] · W[K,M]ᵀ
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, K, M, 1.0f, dout, M,
                        weight, M, 0.0f, dinp, K);
        else  // dinp[N,K] = dout[N,M] · W[M,K]
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, K, M, 1.0f, dout, M,
                        weight, K, 0.0f, dinp, K);
    }
    if (dweight) {
        if (inout)  // dW[K,M] += inp[N,K]ᵀ · dout[N,M]
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, M, N, 1.0f, inp, K, dout,
                        M, 1.0f, dweight, M);
        else  // dW[M,K] += dout[N,M]ᵀ · inp[N,K]
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, K, N, 1.0f, dout, M, inp,
                        K, 1.0f, dweight, K);
    }
    if (dbias) bias_backward(dbias, dout, N, M, threads);
}

}  // namespace trt::cpu
