// The matmuls of a frozen quantised weight (lora.base_dtype; core/base_quant.h) and the
// embedding lookup of a quantised token embedding. The weight is dequantised a tile at a time
// into a thread's own fp32 scratch, each value rounded once to the compute dtype, and the
// tile goes through the same sgemm as a plain weight: a tile is a fixed number of rows
// (forward: W's output rows; backward: W's input columns) for a shape, so results never
// depend on the thread count, and no dequantised copy of the whole weight ever exists.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_threads.h"
#include "core/base_quant.h"
#include "core/bf16.h"
#include "core/fp16.h"

namespace trt {

namespace cpu {

namespace {

// Floats of a thread's dequantised tile: a fixed budget over the tile's other extent, at
// least kMinTile and at most kMaxTile rows (columns), in multiples of kMinTile.
constexpr size_t kTileFloats = size_t{1} << 16;
constexpr int kMinTile = 16, kMaxTile = 256;
int tile_extent(int other, int total) {
    int t = static_cast<int>(kTileFloats / static_cast<size_t>(std::max(other, 1)));
    t = std::max(kMinTile, std::min(kMaxTile, t / kMinTile * kMinTile));
    return std::min(t, std::max(total, 1));
}

// The thread's tile scratch, grown as needed (kept between calls: a step calls this often).
float* tile_scratch(size_t floats) {
    thread_local std::vector<float> tile;
    if (tile.size() < floats) tile.resize(floats);
    return tile.data();
}

// The compute dtype's one rounding of a dequantised value (fp16: a test twin's).
void round_tile(float* t, size_t n, DType round_to) {
    if (round_to == DType::BF16)
        for (size_t i = 0; i < n; i++) t[i] = round_to_bf16(t[i]);
    else if (round_to == DType::F16)
        for (size_t i = 0; i < n; i++) t[i] = round_to_fp16(t[i]);
}

}  // namespace

void qmatmul_rows_forward(float* out /*[N, ldo]*/, size_t ldo, const float* inp /*[N,K]*/,
                          const QuantWeight& w, int m0, int m1,
                          const float* bias /*[m1 - m0] or null*/, int N, int K, int threads,
                          DType round_to) {
    const int M = m1 - m0;
    if (N <= 0 || M <= 0) return;
    TRT_CHECK(w.cols == K && m0 >= 0 && m1 <= w.rows, "qmatmul_forward: rows ", m0, "..", m1,
              " of a [", w.rows, ", ", w.cols, "] weight for a product over ", K);
    const SerialLibrariesScope serial;
    const int tile = tile_extent(K, M);
    const int tiles = (M + tile - 1) / tile;
    run_parts(static_cast<size_t>(tiles), threads, [&](size_t t, int) {
        const int j0 = static_cast<int>(t) * tile, j1 = std::min(M, j0 + tile);
        const int width = j1 - j0;
        float* W = tile_scratch(static_cast<size_t>(width) * K);  // [width, K]
        dequantise_tile(w, m0 + j0, m0 + j1, 0, K, W, static_cast<size_t>(K));
        round_tile(W, static_cast<size_t>(width) * K, round_to);
        float* o = out + j0;
        for (int n = 0; n < N; n++)
            for (int j = 0; j < width; j++)
                o[static_cast<size_t>(n) * ldo + j] = bias ? bias[j0 + j] : 0.0f;
        if (K > 0)  // out[:, j0:j1] (+)= inp[N,K] · W[m0+j0 : m0+j1, :]ᵀ
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, width, K, 1.0f, inp, K, W, K,
                        bias ? 1.0f : 0.0f, o, static_cast<int>(ldo));
    });
}

void qmatmul_rows_backward(float* dinp /*[N,K] overwritten*/, const float* dout /*[N, ldd]*/,
                           size_t ldd, const QuantWeight& w, int m0, int m1, int N, int K,
                           int threads, DType round_to) {
    const int M = m1 - m0;
    if (N <= 0 || K <= 0) return;
    TRT_CHECK(w.cols == K && m0 >= 0 && m1 <= w.rows, "qmatmul_backward: rows ", m0, "..", m1,
              " of a [", w.rows, ", ", w.cols, "] weight for a product over ", K);
    const SerialLibrariesScope serial;
    const int tile = tile_extent(M, K);
    const int tiles = (K + tile - 1) / tile;
    run_parts(static_cast<size_t>(tiles), threads, [&](size_t t, int) {
        const int k0 = static_cast<int>(t) * tile, k1 = std::min(K, k0 + tile);
        const int width = k1 - k0;
        float* W = tile_scratch(static_cast<size_t>(std::max(M, 0)) * width);  // [M, width]
        dequantise_tile(w, m0, m1, k0, k1, W, static_cast<size_t>(width));
        round_tile(W, static_cast<size_t>(std::max(M, 0)) * width, round_to);
        if (M > 0)  // dinp[:, k0:k1] = dout[N, 0:M] · W[m0:m1, k0:k1]
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, width, M, 1.0f, dout,
                        static_cast<int>(ldd), W, width, 0.0f, dinp + k0, K);
        else
            for (int n = 0; n < N; n++)
                std::fill(dinp + static_cast<size_t>(n) * K + k0,
                          dinp + static_cast<size_t>(n) * K + k1, 0.0f);
    });
}

void qmatmul_forward(float* out /*[N,M]*/, const float* inp /*[N,K]*/, const QuantWeight& w,
                     const float* bias /*[M] or null*/, int N, int K, int M, int threads,
                     DType round_to) {
    TRT_CHECK(w.rows == M && w.cols == K, "qmatmul_forward: a [", w.rows, ", ", w.cols,
              "] weight for a [", M, ", ", K, "] product");
    qmatmul_rows_forward(out, static_cast<size_t>(M), inp, w, 0, M, bias, N, K, threads, round_to);
}

void qmatmul_backward(float* dinp /*[N,K] overwritten or null*/, float* dbias /*[M] += or null*/,
                      const float* dout /*[N,M]*/, const QuantWeight& w, int N, int K, int M,
                      int threads, DType round_to) {
    TRT_CHECK(w.rows == M && w.cols == K, "qmatmul_backward: a [", w.rows, ", ", w.cols,
              "] weight for a [", M, ", ", K, "] product");
    if (dinp)
        qmatmul_rows_backward(dinp, dout, static_cast<size_t>(M), w, 0, M, N, K, threads, round_to);
    if (dbias && N > 0 && K > 0 && M > 0)  // the plain matmul's reproducible column sums
        matmul_backward(nullptr, nullptr, dbias, dout, nullptr, nullptr, N, K, M,
                        WeightLayout::OutIn, threads);
}

void dequantise_panel_bf16(const QuantWeight& w, int r0, int r1, int k0, int k1,
                           uint16_t* out /*[r1 - r0, ld]*/, size_t ld, int threads) {
    const int rows = r1 - r0, width = k1 - k0;
    if (rows <= 0 || width <= 0) return;
    parallel_for(rows, team(static_cast<size_t>(rows) * width, threads), [&](int r) {
        float* row = tile_scratch(static_cast<size_t>(width));
        dequantise_tile(w, r0 + r, r0 + r + 1, k0, k1, row, static_cast<size_t>(width));
        uint16_t* o = out + static_cast<size_t>(r) * ld;
        for (int k = 0; k < width; k++) o[k] = float_to_bf16(row[k]);
    });
}

void qencoder_forward(float* out /*[N,C]*/, const int32_t* inputs /*[N]*/, const QuantWeight& wte,
                      const float* wpe /*[>=T,C] or null*/, int B, int T, int C, int threads,
                      const int32_t* pos) {
    const int N = B * T;
    parallel_for(N, team(static_cast<size_t>(N) * C, threads), [&](int n) {
        float* o = out + static_cast<size_t>(n) * C;
        dequantise_tile(wte, inputs[n], inputs[n] + 1, 0, C, o, static_cast<size_t>(C));
        if (!wpe) return;
        const float* p = wpe + static_cast<size_t>(pos != nullptr ? pos[n] : n % T) * C;
        for (int c = 0; c < C; c++) o[c] += p[c];
    });
}

}  // namespace cpu
}  // namespace trt
