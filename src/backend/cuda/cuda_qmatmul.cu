// The matmuls of a frozen quantised weight (lora.base_dtype; core/base_quant.h) and the lookup
// of a quantised token embedding: qmatmul_forward / qmatmul_backward / qencoder_forward of
// cuda_ops.h, the CUDA twins of cpu_qmatmul.cpp. Not yet run on a GPU when written: the
// backend offers them only when asked (AccelOptions::cuda_quantised_base,
// TRAINRT_CUDA_QUANTISED_BASE=1).
//
// The weight is dequantised a tile at a time into ctx.scratch, each value fp32 as
// quant_element computes it (the CPU tiles' arithmetic, element by element) rounded once to
// the GEMM's operand type — fp32 (precision fp32 / tf32) or bf16 / fp16 — and the tile is one
// operand of a plain cuBLASLt GEMM (run_gemm), as a weight's working copy would be:
//
//   forward   out[:, j0:j1]  = x[N,K] · W[j0:j1, :]ᵀ      tiles of whole output rows of W
//   backward  dinp[:, k0:k1] = dout[N,M] · W[:, k0:k1]     tiles of whole input columns of W
//
// so every output element is one GEMM's full reduction, as on the CPU: the tiling (a fixed
// byte budget, by shape only) changes no result, and no dequantised copy of a whole weight
// exists beyond one tile (kTileBytes; 64 MiB is 8192 rows of a 4096-wide weight in bf16).
// The bias (forward) and the bias gradient (backward) as the plain matmuls' fallbacks do:
// fp32 outputs take the GEMM then + bias in place; low-precision outputs with a bias go
// through fp32 row chunks of scratch and round once (acc + the bias rounded as its working
// copy is), as the CPU's bf16 backend does; column_sums for dbias.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_gemm.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/lowp.cuh"
#include "backend/cuda/kernels/reduce.cuh"
#include "core/base_quant.h"
#include "core/base_quant_tables.h"
#include "core/error.h"

namespace trt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;
// A dequantised tile's bytes, and its extent's quantum (rows forward, columns backward: tiles
// start 16-byte aligned in the output for every operand type, and on whole NF4 blocks of a
// 64-multiple width).
constexpr size_t kTileBytes = size_t(64) << 20;
constexpr int kTileQuantum = 64;
// The fp32 product of a biased low-precision forward, and the bf16/fp16 casts of fp32
// activations in the backward: row chunks of at most this many bytes (multiples of 64 rows).
constexpr size_t kChunkBytes = size_t(256) << 20;
constexpr int kRowQuantum = 64;

int grid_for(int64_t n) { return grid_blocks(n, kThreads, kMaxBlocks); }

// The GEMM operand type of ctx's precision (the dequantised tile's, and the activations').
DType operand_dtype(const CudaCtx& ctx) {
    if (ctx.precision == Precision::Bf16) return DType::BF16;
    if (ctx.precision == Precision::Fp16) return DType::F16;
    return DType::F32;
}

// extent (of `total`) per tile when one unit of it is unit_bytes: kTileBytes' worth in
// multiples of kTileQuantum, at least one quantum, at most total.
int tile_extent(int total, size_t unit_bytes) {
    size_t fit = kTileBytes / std::max<size_t>(unit_bytes, 1);
    fit = std::max<size_t>(kTileQuantum, fit / kTileQuantum * kTileQuantum);
    return static_cast<int>(std::min<size_t>(fit, static_cast<size_t>(std::max(total, 1))));
}
int forward_tile_rows(int K, int M, size_t op_bytes) {
    return tile_extent(M, static_cast<size_t>(std::max(K, 1)) * op_bytes);
}
int backward_tile_cols(int K, int M, size_t op_bytes) {
    return tile_extent(K, static_cast<size_t>(std::max(M, 1)) * op_bytes);
}
// Rows of N per chunk when a row takes row_bytes: all of them if they fit in kChunkBytes,
// else kChunkBytes' worth in multiples of kRowQuantum (at least one quantum).
int chunk_rows(int N, size_t row_bytes) {
    size_t fit = kChunkBytes / std::max<size_t>(row_bytes, 1);
    fit = std::max<size_t>(kRowQuantum, fit / kRowQuantum * kRowQuantum);
    return static_cast<int>(std::min<size_t>(fit, static_cast<size_t>(std::max(N, 1))));
}

// The code book and the dynamic map, in constant memory; each block copies them to shared
// memory, where the lanes of a warp may read different entries without serialising.
__constant__ float c_nf4_code_book[16] = {TRT_NF4_CODE_BOOK};
__constant__ float c_dynamic_map[256] = {TRT_DYNAMIC_MAP_VALUES};

__device__ __forceinline__ void load_tables(float* book, float* map) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        map[i] = c_dynamic_map[i];
        if (i < 16) book[i] = c_nf4_code_book[i];
    }
    __syncthreads();
}

// dst[i, j] (row stride ld) = T(w[r0 + i, k0 + j]) for i < rows, j < width.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    dequantise_tile_kernel(T* __restrict__ dst, int64_t ld, QuantWeight w, int r0, int rows, int k0,
                           int width) {
    __shared__ float book[16], map[256];
    load_tables(book, map);
    const int64_t n = static_cast<int64_t>(rows) * width;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t r = i / width, j = i - r * width;
        dst[r * ld + j] = from_f32<T>(
            quant_element(w, r0 + static_cast<int>(r), k0 + static_cast<int>(j), book, map));
    }
}

// Rows [r0, r0 + rows) x columns [k0, k0 + width) of w into dst ([rows, width], dense) in type
// `type` (F32, BF16 or F16).
void dequantise_tile(const CudaCtx& ctx, void* dst, DType type, const QuantWeight& w, int r0,
                     int rows, int k0, int width) {
    if (rows <= 0 || width <= 0) return;
    with_storage(type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        dequantise_tile_kernel<T>
            <<<grid_for(static_cast<int64_t>(rows) * width), kThreads, 0, ctx.stream>>>(
                static_cast<T*>(dst), width, w, r0, rows, k0, width);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

// out[r, j] (row stride ldo) = T((acc ? acc[r, j] (row stride lda) : 0) + b_j) for r < rows,
// j < cols, where b_j = bias[j] (null: 0) as the output type rounds it (its working copy's
// value; fp32: itself). acc may be out itself (fp32: the bias added in place).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    finish_columns_kernel(T* out, int64_t ldo, const float* acc, int64_t lda,
                          const float* __restrict__ bias, int64_t rows, int64_t cols) {
    const int64_t n = rows * cols;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t r = i / cols, j = i - r * cols;
        const float b = bias ? to_f32(from_f32<T>(bias[j])) : 0.0f;
        out[r * ldo + j] = from_f32<T>((acc ? acc[r * lda + j] : 0.0f) + b);
    }
}

void finish_columns(const CudaCtx& ctx, Act out, int64_t ldo, const float* acc, int64_t lda,
                    const float* bias, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    with_storage(out.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        finish_columns_kernel<T><<<grid_for(rows * cols), kThreads, 0, ctx.stream>>>(
            typed<T>(out), ldo, acc, lda, bias, rows, cols);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

// out[n, c] = T(wte[inputs[n], c] + (wpe ? wpe[pos ? pos[n] : n % T, c] : 0))
template <typename S>
__global__ void __launch_bounds__(kThreads)
    qencoder_forward_kernel(S* __restrict__ out, const int32_t* __restrict__ inputs,
                            QuantWeight wte, const float* __restrict__ wpe, int N, int T, int C,
                            const int32_t* __restrict__ pos) {
    __shared__ float book[16], map[256];
    load_tables(book, map);
    const int64_t n_all = static_cast<int64_t>(N) * C;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_all;
         i += stride) {
        const int n = static_cast<int>(i / C),
                  c = static_cast<int>(i - static_cast<int64_t>(n) * C);
        float v = quant_element(wte, inputs[n], c, book, map);
        // Never fused with the dequantising product (the CPU adds a rounded value).
        if (wpe) v = __fadd_rn(v, wpe[static_cast<int64_t>(pos ? pos[n] : n % T) * C + c]);
        out[i] = from_f32<S>(v);
    }
}

size_t dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

}  // namespace

size_t qmatmul_scratch_bytes(const ModelDims& d, Precision p, DType act) {
    if (!d.quantised_base || d.B <= 0 || d.T <= 0 || d.C <= 0) return 0;
    const bool lowp = lowp_precision(p);
    const size_t op = lowp ? 2 : 4;
    const bool cast_acts = lowp && act == DType::F32;
    const bool lowp_acts = act != DType::F32;
    const int N = d.B * d.T;
    const size_t C = static_cast<size_t>(d.C), QKV = dims_qkv_width(d), F = dims_ff(d);
    const size_t A = static_cast<size_t>(dims_attention_width(d));
    const size_t Vp = (static_cast<size_t>(std::max(d.V, 0)) + 127) / 128 * 128;
    // (K, M, biased) of the model's matmuls (matmul_scratch_bytes' list): only these are
    // quantised, the head in bf16 without a bias.
    const size_t shapes[6][3] = {{C, QKV, 1},   {A, C, 1}, {C, F, 1},
                                 {C, 2 * F, 1}, {F, C, 1}, {C, Vp, 0}};
    size_t need = 0;
    for (const auto& s : shapes) {
        const int K = static_cast<int>(s[0]), M = static_cast<int>(s[1]);
        const bool biased = s[2] != 0;
        if (K <= 0 || M <= 0) continue;
        // Forward: the inp cast (fp32 activations under bf16/fp16), the tile, and a biased
        // low-precision output's fp32 row chunk.
        const int R = forward_tile_rows(K, M, op);
        size_t fwd = (cast_acts ? align_scratch(static_cast<size_t>(N) * K * 2) : 0) +
                     align_scratch(static_cast<size_t>(R) * K * op);
        if (lowp_acts && biased)
            fwd += align_scratch(static_cast<size_t>(chunk_rows(N, static_cast<size_t>(R) * 4)) *
                                 R * 4);
        // Backward: the tile and a row chunk of the dout cast; then (alone) dbias's column
        // sums.
        const int Kc = backward_tile_cols(K, M, op);
        size_t bwd = align_scratch(static_cast<size_t>(M) * Kc * op);
        if (cast_acts)
            bwd += align_scratch(static_cast<size_t>(chunk_rows(N, static_cast<size_t>(M) * 2)) *
                                 M * 2);
        const size_t sums = colred::partial_bytes_bound(M, 1, sizeof(double));
        need = std::max({need, fwd, bwd, sums});
    }
    return need;
}

void qmatmul_forward(const CudaCtx& ctx, Act out, ConstAct inp, const QuantWeight& w,
                     const float* bias, int N, int K, int M) {
    act_storage(ctx, {out, inp});
    TRT_CHECK(w.rows == M && w.cols == K, "qmatmul_forward: a [", w.rows, ", ", w.cols,
              "] weight for a [", M, ", ", K, "] product");
    if (N <= 0 || M <= 0) return;
    if (K <= 0) {  // empty product: out = bias (or 0)
        finish_columns(ctx, out, M, nullptr, 0, bias, N, M);
        return;
    }
    ScratchCursor cur(ctx, "qmatmul_forward");
    const DType op = operand_dtype(ctx);
    const size_t op_bytes = dtype_bytes(op);
    // x: the activations as stored, or (fp32 under bf16/fp16) cast once for every tile.
    const void* x = inp.data;
    if (ctx.lowp() && inp.dtype == DType::F32) {
        void* cast = cur.take(static_cast<size_t>(N) * K * 2);
        cast_from_f32(ctx, cast, static_cast<const float*>(inp.data), static_cast<size_t>(N) * K,
                      ctx.precision);
        x = cast;
    }
    const int R = forward_tile_rows(K, M, op_bytes);
    void* tile = cur.take(static_cast<size_t>(R) * K * op_bytes);  // [R, K]
    // A low-precision output with a bias: fp32 products of `rows` rows, rounded once.
    const bool via_fp32 = bias && out.dtype != DType::F32;
    const int rows = via_fp32 ? chunk_rows(N, static_cast<size_t>(R) * 4) : N;
    float* acc = via_fp32 ? cur.take_floats(static_cast<size_t>(rows) * R) : nullptr;
    const size_t out_bytes = dtype_bytes(out.dtype);
    for (int j0 = 0; j0 < M; j0 += R) {
        const int n = std::min(R, M - j0);
        dequantise_tile(ctx, tile, op, w, j0, n, 0, K);
        RowMajorGemm g;  // [N, n] = x[N, K] · tile[n, K]ᵀ
        g.precision = ctx.precision;
        g.n = n;
        g.k = K;
        g.a = x;
        g.lda = K;
        g.b = tile;
        g.trans_b = true;
        g.ldb = K;
        g.beta = 0.0f;
        if (!via_fp32) {  // straight into out's columns j0 .. j0 + n
            g.m = N;
            g.c = static_cast<char*>(out.data) + static_cast<size_t>(j0) * out_bytes;
            g.c_type = out.dtype;
            g.ldc = M;
            run_gemm(ctx, g);
            if (bias)  // fp32: + bias in place
                finish_columns(ctx, out.at(static_cast<size_t>(j0)), M,
                               static_cast<const float*>(out.data) + j0, M, bias + j0, N, n);
            continue;
        }
        for (int r0 = 0; r0 < N; r0 += rows) {
            const int m = std::min(rows, N - r0);
            g.m = m;
            g.a = static_cast<const char*>(x) + static_cast<size_t>(r0) * K * op_bytes;
            g.c = acc;
            g.c_type = DType::F32;
            g.ldc = n;
            run_gemm(ctx, g);
            finish_columns(ctx, out.at(static_cast<size_t>(r0) * M + j0), M, acc, n, bias + j0, m,
                           n);
        }
    }
}

void qmatmul_backward(const CudaCtx& ctx, Act dinp, float* dbias, ConstAct dout,
                      const QuantWeight& w, int N, int K, int M) {
    act_storage(ctx, {dinp, dout});
    TRT_CHECK(w.rows == M && w.cols == K, "qmatmul_backward: a [", w.rows, ", ", w.cols,
              "] weight for a [", M, ", ", K, "] product");
    if (N <= 0 || K <= 0) return;
    if (dinp && M <= 0) {  // the product is empty: dinp = 0
        TRT_CUDA_CHECK(cudaMemsetAsync(
            dinp.data, 0, static_cast<size_t>(N) * K * dtype_bytes(dinp.dtype), ctx.stream));
        return;
    }
    if (dinp) {
        ScratchCursor cur(ctx, "qmatmul_backward");
        const DType op = operand_dtype(ctx);
        const size_t op_bytes = dtype_bytes(op);
        const int Kc = backward_tile_cols(K, M, op_bytes);
        void* tile = cur.take(static_cast<size_t>(M) * Kc * op_bytes);  // [M, Kc]
        // fp32 activations under bf16/fp16: dout cast a chunk of rows at a time.
        const bool cast = ctx.lowp() && dout.dtype == DType::F32;
        const int rows = cast ? chunk_rows(N, static_cast<size_t>(M) * 2) : N;
        void* dy_buf = cast ? cur.take(static_cast<size_t>(rows) * M * 2) : nullptr;
        const size_t dinp_bytes = dtype_bytes(dinp.dtype);
        for (int r0 = 0; r0 < N; r0 += rows) {
            const int m = std::min(rows, N - r0);
            const ConstAct dout_c = dout.at(static_cast<size_t>(r0) * M);  // [m, M]
            const void* dy = dout_c.data;
            if (cast) {
                cast_from_f32(ctx, dy_buf, static_cast<const float*>(dout_c.data),
                              static_cast<size_t>(m) * M, ctx.precision);
                dy = dy_buf;
            }
            for (int k0 = 0; k0 < K; k0 += Kc) {
                const int kc = std::min(Kc, K - k0);
                dequantise_tile(ctx, tile, op, w, 0, M, k0, kc);
                RowMajorGemm g;  // dinp[r0:r0+m, k0:k0+kc] = dy[m, M] · tile[M, kc]
                g.precision = ctx.precision;
                g.m = m;
                g.n = kc;
                g.k = M;
                g.a = dy;
                g.lda = M;
                g.b = tile;
                g.ldb = kc;
                g.c = static_cast<char*>(dinp.data) +
                      (static_cast<size_t>(r0) * K + static_cast<size_t>(k0)) * dinp_bytes;
                g.c_type = dinp.dtype;
                g.ldc = K;
                g.beta = 0.0f;
                run_gemm(ctx, g);
            }
        }
    }
    // After the GEMMs on the same stream: column_sums may use all of ctx.scratch.
    if (dbias && M > 0) column_sums(ctx, dbias, dout, N, M);
}

void qencoder_forward(const CudaCtx& ctx, Act out, const int32_t* inputs, const QuantWeight& wte,
                      const float* wpe, int B, int T, int C, const int32_t* pos) {
    const int N = B * T;
    TRT_CHECK(wte.cols == C, "qencoder_forward: a [", wte.rows, ", ", wte.cols,
              "] embedding for width ", C);
    if (N <= 0 || C <= 0) return;
    with_storage(act_storage(ctx, {out}), [&](auto tag) {
        using S = typename decltype(tag)::type;
        qencoder_forward_kernel<S>
            <<<grid_for(static_cast<int64_t>(N) * C), kThreads, 0, ctx.stream>>>(
                typed<S>(out), inputs, wte, wpe, N, T, C, pos);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

}  // namespace trt::cuda
