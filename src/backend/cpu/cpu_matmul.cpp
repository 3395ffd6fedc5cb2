// Matmuls: OpenBLAS cblas_sgemm for every product (forward, dinp, dweight), split into blocks
// over our threads (cpu_pool.h), each block one single-threaded sgemm (SerialLibrariesScope,
// cpu_threads.h). Products whose output rows are positions (forward, dinp) are split by rows,
// with the bias broadcast / bias + GELU epilogue on the same rows while they are in cache: on
// 2 cores that beat OpenBLAS's own threading by 5-15% at these shapes
// (bench/results/2026-11-22-cpu-vs-torch.md). dweight reduces over positions, so it is split
// by its output columns: every block still sums all N positions, in sgemm's own order.
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_gelu.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_threads.h"

namespace trt::cpu {

// Blocks to split a product's N output rows (or columns) into: kBlocksPerThread per thread,
// so a thread parked beside other work delays the product by a block, not by its share; but
// never blocks under kMinRowsPerPart rows (tiny products are not worth a team; every block
// packs the other operand again).
static constexpr int kBlocksPerThread = 2;
static int row_parts(int N, int threads) {
    constexpr int kMinRowsPerPart = 32;
    return std::max(1, std::min(threads * kBlocksPerThread, N / kMinRowsPerPart));
}

// block(part) for part in [0, parts) over `threads` threads.
template <typename Block>
static void run_blocks(int parts, int threads, Block&& block) {
    run_parts((size_t)parts, threads, [&](size_t part, int) { block((int)part); });
}

// One row (generation's decode step): out[M] = bias + inp[K] · W, as a matrix-vector
// product in our own loops. sgemm (and oneDNN) spend more on setting up a 1-row product than
// on the product itself. The product is bound by reading W once, so W is streamed in order:
// its K rows are cut into parts (a number fixed by K alone, so the sums never depend on the
// thread count), each part's rows sum into its own partial row, and the partials are added
// in part order: out = ((bias + p0) + p1) + ...

// p[M] += Σ_{k0 <= k < k1} x[k] · W[k, :], eight rows of W per pass over p (each p[j] in a
// register for eight products, added in k order).
TRT_CPU_CLONES static void rows_times_inout(float* __restrict p, const float* __restrict x,
                                            const float* __restrict w, int k0, int k1, int M) {
    int k = k0;
    for (; k + 8 <= k1; k += 8) {
        const float* __restrict r = w + (size_t)k * M;
        const float x0 = x[k], x1 = x[k + 1], x2 = x[k + 2], x3 = x[k + 3];
        const float x4 = x[k + 4], x5 = x[k + 5], x6 = x[k + 6], x7 = x[k + 7];
        const size_t m = (size_t)M;
        for (int c = 0; c < M; c++) {
            float o = p[c];
            o += x0 * r[c];
            o += x1 * r[m + c];
            o += x2 * r[2 * m + c];
            o += x3 * r[3 * m + c];
            o += x4 * r[4 * m + c];
            o += x5 * r[5 * m + c];
            o += x6 * r[6 * m + c];
            o += x7 * r[7 * m + c];
            p[c] = o;
        }
    }
    for (; k < k1; k++) {
        const float xk = x[k];
        const float* __restrict row = w + (size_t)k * M;
        for (int c = 0; c < M; c++) p[c] += xk * row[c];
    }
}

// The parts of K: one per 64 rows, at most 8, each a multiple of 8 rows but the last.
static int row_product_parts(int K) { return std::max(1, std::min(8, K / 64)); }
static int part_begin(int K, int parts, int i) {
    return i == parts ? K : std::min(K, (int)((int64_t)K * i / parts) / 8 * 8);
}

void matmul_forward_row(float* out /*[M]*/, const float* inp /*[K]*/,
                        const float* weight /*[K,M] InOut | [M,K] OutIn*/,
                        const float* bias /*[M] or null*/, int K, int M, WeightLayout layout,
                        int threads) {
    // A team pays off once the weight outgrows a core's first caches; below, waking the team
    // costs more than the product.
    constexpr size_t kMinParallelWeights = size_t{1} << 14;
    const bool large = (size_t)K * M >= kMinParallelWeights;
    if (layout == WeightLayout::OutIn) {  // out[j] = dot(inp, W[j, :]): rows in order already
        auto columns = [&](int j0, int j1) {
            for (int j = j0; j < j1; j++)
                out[j] = (bias ? bias[j] : 0.0f) + dot_f(inp, weight + (size_t)j * K, K);
        };
        const int team_size = large ? std::max(1, std::min(threads, M / 16)) : 1;
        parallel_for(team_size, team_size, [&](int part) {
            size_t j0, j1;
            split_range((size_t)M, (size_t)team_size, (size_t)part, &j0, &j1);
            columns((int)j0, (int)j1);
        });
        return;
    }
    const int parts = row_product_parts(K);
    // Partial rows of the parts after the first, kept between calls (a decode step is many
    // small calls); part 0 sums onto the bias in out.
    thread_local std::vector<float> partials;
    if (partials.size() < (size_t)(parts - 1) * M) partials.resize((size_t)(parts - 1) * M);
    float* const pbuf = partials.data();
    auto part = [&](int i) {
        float* p = i == 0 ? out : pbuf + (size_t)(i - 1) * M;
        for (int j = 0; j < M; j++) p[j] = (i == 0 && bias) ? bias[j] : 0.0f;
        rows_times_inout(p, inp, weight, part_begin(K, parts, i), part_begin(K, parts, i + 1), M);
    };
    const int team_size = large ? std::max(1, std::min(threads, parts)) : 1;
    parallel_for(parts, team_size, part);
    for (int i = 1; i < parts; i++) {
        const float* __restrict p = pbuf + (size_t)(i - 1) * M;
        for (int j = 0; j < M; j++) out[j] += p[j];
    }
}

void matmul_forward(float* out /*[N,M]*/, const float* inp /*[N,K]*/,
                    const float* weight /*[K,M] InOut | [M,K] OutIn*/,
                    const float* bias /*[M] or null*/, int N, int K, int M,
                    WeightLayout layout, int threads) {
    if (N <= 0 || M <= 0) return;
    if (N == 1 && K > 0) return matmul_forward_row(out, inp, weight, bias, K, M, layout, threads);
    const SerialLibrariesScope serial;
    const bool inout = layout == WeightLayout::InOut;
    const int parts = row_parts(N, threads);
    auto block = [&](int part) {
        size_t r0, r1;
        split_range((size_t)N, (size_t)parts, (size_t)part, &r0, &r1);
        const int rows = (int)(r1 - r0);
        float* o = out + r0 * M;
        if (bias) {  // broadcast the bias, then let sgemm accumulate onto it (beta = 1)
            for (int n = 0; n < rows; n++)
                for (int j = 0; j < M; j++) o[(size_t)n * M + j] = bias[j];
        } else if (K <= 0) {
            for (size_t i = 0; i < (size_t)rows * M; i++) o[i] = 0.0f;
        }
        if (K > 0 && rows > 0)
            // out[N,M] = inp[N,K] · W[K,M]  (InOut)  |  inp[N,K] · W[M,K]ᵀ  (OutIn)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, inout ? CblasNoTrans : CblasTrans, rows, M,
                        K, 1.0f, inp + r0 * K, K, weight, inout ? M : K, bias ? 1.0f : 0.0f, o,
                        M);
    };
    run_blocks(parts, threads, block);
}

// acc[j] += dout[n, j] for j < w, rows n in order (row stride M).
TRT_CPU_CLONES static void column_sums(double* __restrict acc, const float* __restrict dout,
                                       int N, int M, int w) {
    for (int n = 0; n < N; n++) {
        const float* __restrict row = dout + (size_t)n * M;
        for (int j = 0; j < w; j++) acc[j] += row[j];
    }
}

// dbias[M] += sum_n dout[n, :], reproducibly (column_sums_into in cpu_common.h).
static void bias_backward(float* dbias, const float* dout, int N, int M, int threads) {
    column_sums_into(dbias, N, M, threads, [&](size_t j0, int w, size_t r0, int rows, double* acc) {
        column_sums(acc, dout + r0 * M + j0, rows, M, w);
    });
}

// Rows [0, rows) of pre (row stride M): pre += bias (if non-null), out = gelu(pre).
TRT_CPU_CLONES static void bias_gelu_rows(float* __restrict pre, float* __restrict out,
                                          const float* __restrict bias, int rows, int M) {
    const ExpLimits lim = exp_limits();
    for (int n = 0; n < rows; n++) {
        float* __restrict p = pre + (size_t)n * M;
        float* __restrict o = out + (size_t)n * M;
        if (bias)
            for (int j = 0; j < M; j++) p[j] += bias[j];
        for (int j = 0; j < M; j++) o[j] = gelu_value(p[j], lim);
    }
}

void matmul_gelu_forward(float* pre /*[N,M]*/, float* out /*[N,M]*/, const float* inp /*[N,K]*/,
                         const float* weight /*[K,M]*/, const float* bias /*[M] or null*/,
                         int N, int K, int M, int threads) {
    if (N <= 0 || M <= 0) return;
    // Per block of rows: pre = inp · W (sgemm, beta = 0), then one pass adds the bias and
    // applies GELU while the rows are in cache; the bias needs no broadcast pass of its own.
    const SerialLibrariesScope serial;
    const int parts = row_parts(N, threads);
    auto block = [&](int part) {
        size_t r0, r1;
        split_range((size_t)N, (size_t)parts, (size_t)part, &r0, &r1);
        const int rows = (int)(r1 - r0);
        if (rows == 0) return;
        if (K > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, M, K, 1.0f,
                        inp + r0 * K, K, weight, M, 0.0f, pre + r0 * M, M);
        else
            for (size_t i = 0; i < (size_t)rows * M; i++) pre[r0 * M + i] = 0.0f;
        bias_gelu_rows(pre + r0 * M, out + r0 * M, bias, rows, M);
    };
    run_blocks(parts, threads, block);
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
    const SerialLibrariesScope serial;
    const bool inout = layout == WeightLayout::InOut;
    if (dinp) {
        const int parts = row_parts(N, threads);
        auto block = [&](int part) {
            size_t r0, r1;
            split_range((size_t)N, (size_t)parts, (size_t)part, &r0, &r1);
            if (r1 == r0) return;
            // dinp[N,K] = dout[N,M] · W[K,M]ᵀ  (InOut)  |  dout[N,M] · W[M,K]  (OutIn)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, inout ? CblasTrans : CblasNoTrans,
                        (int)(r1 - r0), K, M, 1.0f, dout + r0 * M, M, weight, inout ? M : K,
                        0.0f, dinp + r0 * K, K);
        };
        run_blocks(parts, threads, block);
    }
    if (dweight) {  // by blocks [m0, m1) of the M output features
        const int parts = row_parts(M, threads);
        run_blocks(parts, threads, [&](int part) {
            size_t m0, m1;
            split_range((size_t)M, (size_t)parts, (size_t)part, &m0, &m1);
            const int w = (int)(m1 - m0);
            if (w == 0) return;
            if (inout)  // dW[K, m0:m1] += inp[N,K]ᵀ · dout[N, m0:m1]
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, w, N, 1.0f, inp, K,
                            dout + m0, M, 1.0f, dweight + m0, M);
            else  // dW[m0:m1, K] += dout[N, m0:m1]ᵀ · inp[N,K]
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, w, K, N, 1.0f, dout + m0,
                            M, inp, K, 1.0f, dweight + m0 * K, K);
        });
    }
    if (dbias) bias_backward(dbias, dout, N, M, threads);
}

}  // namespace trt::cpu
