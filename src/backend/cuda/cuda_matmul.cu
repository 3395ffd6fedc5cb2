// Matmuls on cuBLASLt: matmul_forward / matmul_backward / matmul_gelu_forward of cuda_ops.h
// and the general GEMM of cuda_gemm.h (attention's batched products). Every product is one
// RowMajorGemm (cuda_gemm.h) run by run_gemm (cuda_gemm_plan.cpp), which swaps it into
// cuBLASLt's column-major terms. The products of the matmul ops (N = rows, K = in, M = out),
// and what cuBLASLt sees after the swap (A' = B, B' = A, m' = n, n' = m):
//
//   product                     row-major form                      Lt A' (op, ld)  Lt B' (op, ld)  m', n', k'  beta
//   forward  InOut   out[N,M]  = inp[N,K] · W[K,M]                 W    (N, M)     inp  (N, K)     M, N, K     0
//   forward  OutIn   out[N,M]  = inp[N,K] · W[M,K]ᵀ                W    (T, K)     inp  (N, K)     M, N, K     0
//   dinp     InOut   dinp[N,K] = dout[N,M] · W[K,M]ᵀ               W    (T, M)     dout (N, M)     K, N, M     0
//   dinp     OutIn   dinp[N,K] = dout[N,M] · W[M,K]                W    (N, K)     dout (N, M)     K, N, M     0
//   dweight  InOut   dW[K,M]  += inp[N,K]ᵀ · dout[N,M]             dout (N, M)     inp  (T, K)     M, K, N     1
//   dweight  OutIn   dW[M,K]  += dout[N,M]ᵀ · inp[N,K]             inp  (N, K)     dout (T, M)     K, M, N     1
//   (D = C, column-major [m', n'] with ld = the row-major row stride of the output: M, K, M, K.)
//
// Epilogues (ctx.matmul_epilogues; off = every product is a plain GEMM and the extra work is
// done by the backend's own kernels, which is also the fallback whenever an epilogue cannot be
// used; cuBLASLt's names of them in cuda_gemm_plan.cpp):
//   forward + bias     GemmEpilogue::Bias, bias[M] added to every row of out.
//                      Fallback: plain GEMM, then bias_rows.
//   matmul_gelu        GemmEpilogue::GeluAux: C = out, aux = pre (the GELU input, bias
//                      included), aux ld = M. cuBLASLt's GELU is the tanh form of backend.h
//                      (PyTorch's _addmm_activation relies on that, pytorch#104061; the GPU test
//                      holds out to the tanh form of pre at 1e-5, which the erf form misses by
//                      ~2e-4), but not the same bits as gelu_forward; only pre feeds
//                      gelu_backward_bias, and pre is the plain GEMM + bias. The aux matrix has
//                      C's type and cuBLASLt requires its ld to be a multiple of 8: M % 8 != 0
//                      takes the fallback (GEMM into pre + bias, then gelu_forward).
//   dweight + dbias    dbias[M] = column sums of dout[N, M] = the reduction over k = N of the
//                      operand that holds dout: B for InOut (GemmEpilogue::BiasGradB), A for
//                      OutIn (BiasGradA). The epilogue *writes* its vector while backend.h's
//                      dbias accumulates, so it writes into ctx.scratch and add_inplace adds it
//                      (fixed order, one thread per element). Fallback: column_sums (double
//                      partials, fixed order).
// The bias/bias-gradient vector and the aux matrix must be 16-byte aligned (kernels assuming 16
// bytes have been reported to fault on less-aligned vectors; odd-C models slice biases at
// 4-byte offsets from the flat buffer); otherwise the fallback runs. run_gemm also says false
// when cuBLASLt has no algorithm for the epilogue at that shape: the same fallback.
//
// Chunked bf16/fp16 backward: the casts of dout and inp cover rows × (M + K) elements, which
// for the tied output projection (M = Vp ≈ 50k) is ~0.8 GB at N = 8192. matmul_backward
// therefore runs over chunks of at most lowp_chunk_rows(N, K, M) rows (kLowpChunkBytes of
// casts): per chunk, dinp rows = dout rows · Wᵀ (overwritten) and dweight += inp rowsᵀ · dout
// rows (beta = 1), the weight cast (when unregistered) made once. The chunking depends only on
// (N, K, M), so results stay deterministic; they equal the one-GEMM results up to the order of
// the fp32 dweight accumulation. Shapes that fit in one chunk (every GPT-2 layer but the
// output projection at B*T = 8192) run exactly as before.
//
// Precision (ctx.precision, each product's RowMajorGemm::precision): Fp32 and Tf32 take fp32
// operands; Bf16/Fp16 take A and B in bf16/fp16 (weights from the working copy ctx.lowp_of(w)
// when registered, else cast), fp32 accumulation, and the activations either
//   - fp32 (ctx.act F32): cast into ctx.scratch per call, C fp32; or
//   - bf16/fp16 (ctx.act, accel.lowp_activations): read as stored (no operand casts; the
//     backward in one pass), and the forward's out/pre and the dinp product written in that
//     type (C rounds the fp32 accumulator once). A bias is then an operand like the weight,
//     in the low precision (its working copy; cuBLASLt 13.1 refuses an fp32 bias with a bf16
//     C), added to the fp32 product inside the GEMM (Bias / GeluAux epilogues) before C's
//     rounding; without a usable epilogue the product goes through fp32 row chunks of
//     scratch and finish_rows adds the same bias (and GELU) and rounds once — never a
//     low-precision C plus a bias kernel, which would round twice where the CPU twin rounds
//     once (PRECISION.md).
// dweight is fp32 in every precision, so its beta = 1 accumulation stays fp32. Determinism of
// the GEMMs and their epilogues: cuda_gemm_plan.cpp; tests/gpu/cuda_epilogue_test.cpp checks
// every epilogue bitwise run to run.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_gemm.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/gelu.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/lowp.cuh"
#include "backend/cuda/kernels/reduce.cuh"
#include "core/error.h"

namespace trt::cuda {

// ---------------------------------------------------------------- scratch

void* ScratchCursor::take(size_t bytes) {
    const size_t off = align_scratch(used_);
    if (bytes > cap_ || off > cap_ - bytes)
        fail(Status::Internal, who_, " needs ", off + bytes, " bytes of CUDA scratch but only ",
             cap_, " are reserved (the *_scratch_bytes functions must cover every op)");
    used_ = off + bytes;
    return base_ + off;
}

CudaCtx ScratchCursor::rest(const CudaCtx& ctx) const {
    CudaCtx c = ctx;
    const size_t off = std::min(align_scratch(used_), cap_);
    c.scratch = base_ ? base_ + off : nullptr;
    c.scratch_bytes = cap_ - off;
    return c;
}

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;  // grid-stride kernels: enough to fill any device
constexpr size_t kLowpBytes = 2;       // bf16 and fp16

// Chunked bf16/fp16 backward (file comment): the dout and inp casts of one chunk stay within
// this many bytes; chunks are whole multiples of kChunkRowQuantum rows (so every chunk starts
// as aligned as the buffers do), at least one quantum.
constexpr size_t kLowpChunkBytes = size_t(256) << 20;
constexpr int kChunkRowQuantum = 64;

int grid_for(int64_t n) { return grid_blocks(n, kThreads, kMaxBlocks); }


// out[r, j] (row-major [rows, cols], row stride ld) = (accumulate ? out[r, j] : 0) + bias[j]
// (bias null: + 0). The bias fallback after a plain GEMM, and the K = 0 product.
__global__ void __launch_bounds__(kThreads)
    bias_rows_kernel(float* __restrict__ out, const float* __restrict__ bias, int64_t rows,
                     int64_t cols, int64_t ld, bool accumulate) {
    const int64_t n = rows * cols;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t r = i / cols, j = i - r * cols;
        float* o = out + r * ld + j;
        const float bj = bias ? bias[j] : 0.0f;
        *o = accumulate ? *o + bj : bj;
    }
}

// The same, four columns per thread with 128-bit accesses (cols4 = cols / 4, ld4 = ld / 4:
// cols and ld multiples of 4, out and bias 16-byte aligned). Same additions, same bits.
__global__ void __launch_bounds__(kThreads)
    bias_rows_vec4_kernel(float4* __restrict__ out, const float4* __restrict__ bias,
                          int64_t rows, int64_t cols4, int64_t ld4, bool accumulate) {
    const int64_t n = rows * cols4;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t r = i / cols4, j = i - r * cols4;
        float4* o = out + r * ld4 + j;
        const float4 b = bias ? bias[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (accumulate) {
            float4 v = *o;
            v.x += b.x;
            v.y += b.y;
            v.z += b.z;
            v.w += b.w;
            *o = v;
        } else {
            *o = b;
        }
    }
}

void bias_rows(const CudaCtx& ctx, float* out, const float* bias, int64_t rows, int64_t cols,
               int64_t ld, bool accumulate) {
    if (rows <= 0 || cols <= 0) return;
    if (cols % 4 == 0 && ld % 4 == 0 && aligned16(out) && (!bias || aligned16(bias))) {
        bias_rows_vec4_kernel<<<grid_for(rows * cols / 4), kThreads, 0, ctx.stream>>>(
            reinterpret_cast<float4*>(out), reinterpret_cast<const float4*>(bias), rows,
            cols / 4, ld / 4, accumulate);
    } else {
        bias_rows_kernel<<<grid_for(rows * cols), kThreads, 0, ctx.stream>>>(out, bias, rows,
                                                                             cols, ld, accumulate);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

// Low-precision activations (ctx.act bf16/fp16), a product whose bias or GELU the epilogue did
// not take: out = round(acc + bias) (acc null: 0; bias null: 0; the bias is the matmul's
// low-precision operand, as the epilogue reads it), and with pre: pre = round(v),
// out = round(gelu(v)) from the fp32 v — the CPU twin's rounding points, where a low-precision
// GEMM output followed by a bias kernel would round twice. [rows, cols] contiguous.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    finish_rows_kernel(T* __restrict__ out, T* __restrict__ pre, const float* __restrict__ acc,
                       const T* __restrict__ bias, int64_t rows, int64_t cols) {
    const int64_t n = rows * cols;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t j = i % cols;
        const float v = (acc ? acc[i] : 0.0f) + (bias ? to_f32(bias[j]) : 0.0f);
        if (pre) {
            pre[i] = from_f32<T>(v);
            out[i] = from_f32<T>(gelu_value(v));
        } else {
            out[i] = from_f32<T>(v);
        }
    }
}

void finish_rows(const CudaCtx& ctx, Act out, Act pre, const float* acc, const void* bias,
                 int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    with_storage(act_storage(ctx, {out, pre}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        finish_rows_kernel<T><<<grid_for(rows * cols), kThreads, 0, ctx.stream>>>(
            typed<T>(out), pre ? typed<T>(pre) : nullptr, acc, static_cast<const T*>(bias),
            rows, cols);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

// The fp32 pointer of a view the caller knows is fp32 (ctx.act == F32).
const float* f32_of(ConstAct v) {
    TRT_CHECK(v.dtype == DType::F32, "cuda matmul: expected an fp32 activation view");
    return static_cast<const float*>(v.data);
}
// bf16/fp16 copy of src[0, n) into dst (scratch).
const void* cast_into(const CudaCtx& ctx, void* dst, const float* src, size_t n) {
    cast_from_f32(ctx, dst, src, n, ctx.precision);
    return dst;
}

// bf16/fp16 copy of src[0, n) in the next piece of scratch.
const void* cast_operand(const CudaCtx& ctx, ScratchCursor& cur, const float* src, size_t n) {
    return cast_into(ctx, cur.take(n * kLowpBytes), src, n);
}

// A weight as a GEMM operand of ctx's precision: the working copy when registered.
const void* weight_operand(const CudaCtx& ctx, ScratchCursor& cur, const float* w, size_t n) {
    if (!ctx.lowp()) return w;
    if (const void* p = ctx.lowp_of(w)) return p;
    return cast_operand(ctx, cur, w, n);
}

// An activation as a GEMM operand of ctx's precision: as stored when activations are
// low-precision (ctx.act is then precision's operand type: CudaBackend::init), else the fp32
// buffer, cast into scratch under bf16/fp16.
const void* activation_operand(const CudaCtx& ctx, ScratchCursor& cur, ConstAct x, size_t n) {
    if (x.dtype != DType::F32) return x.data;
    return ctx.lowp() ? cast_operand(ctx, cur, f32_of(x), n) : x.data;
}

// A bias as the GEMM reads it (file comment): the fp32 master for an fp32 output; for a
// low-precision output its low-precision operand, the working copy when registered and 16-byte
// aligned (the epilogue's rule), else a rounded copy of its M values in scratch.
struct BiasOperand {
    const void* data = nullptr;  // null: no bias
    DType type = DType::F32;
};
BiasOperand bias_operand(const CudaCtx& ctx, ScratchCursor& cur, const float* bias, size_t M,
                         DType out) {
    if (!bias) return {};
    if (out == DType::F32) return {bias, DType::F32};
    const void* b = ctx.lowp_of(bias);
    if (!b || !aligned16(b)) b = cast_operand(ctx, cur, bias, M);
    return {b, out};
}

// Elements from the first to one past the last element an operand touches, stored [rows,
// cols] with row stride ld, batch copies stride apart (the span a cast must cover).
size_t operand_span(int64_t rows, int64_t cols, int64_t ld, int batch, int64_t stride) {
    if (rows <= 0 || cols <= 0 || batch <= 0) return 0;
    return static_cast<size_t>((batch > 1 ? (batch - 1) * stride : 0) + (rows - 1) * ld + cols);
}
size_t span_a(const RowMajorGemm& g) {
    return operand_span(g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch,
                        g.stride_a);
}
size_t span_b(const RowMajorGemm& g) {
    return operand_span(g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch,
                        g.stride_b);
}

// ---- the matmul ops' products

// out[N,M] = x[N,K] · W, W [K,M] (InOut) or [M,K] (OutIn); operands in ctx's operand type,
// out of type out_type.
RowMajorGemm forward_product(const CudaCtx& ctx, void* out, DType out_type, const void* x,
                             const void* w, int N, int K, int M, bool inout) {
    RowMajorGemm r;
    r.precision = ctx.precision;
    r.m = N;
    r.n = M;
    r.k = K;
    r.a = x;
    r.lda = K;
    r.b = w;
    r.trans_b = !inout;
    r.ldb = inout ? M : K;
    r.c = out;
    r.c_type = out_type;
    r.ldc = M;
    r.beta = 0.0f;
    return r;
}

// Rows per chunk when a chunk's scratch is per_row bytes a row (the bf16/fp16 backward's casts,
// file comment; the low-precision forward's fp32 product): all N when N rows fit in
// kLowpChunkBytes; else the fewest chunks that fit, balanced and rounded up to the quantum
// (never above the fitting maximum).
int chunk_rows(int N, size_t per_row) {
    const size_t fit = kLowpChunkBytes / per_row / kChunkRowQuantum * kChunkRowQuantum;
    const int64_t cap = std::max<int64_t>(kChunkRowQuantum, static_cast<int64_t>(fit));
    if (N <= cap) return N;
    const int64_t chunks = (N + cap - 1) / cap;
    const int64_t even = (N + chunks - 1) / chunks;
    const int64_t rows = (even + kChunkRowQuantum - 1) / kChunkRowQuantum * kChunkRowQuantum;
    return static_cast<int>(std::min(rows, cap));
}
int lowp_chunk_rows(int N, int K, int M) {
    return chunk_rows(N, (static_cast<size_t>(K) + static_cast<size_t>(M)) * kLowpBytes);
}

// Upper bound of a chunk's scratch at per_row bytes a row (its pieces aligned) for any N' <= N
// and smaller rows: monotone, so the model's largest shapes cover every smaller one.
size_t chunk_bytes_bound(size_t N, size_t per_row) {
    const size_t chunk = std::max(kLowpChunkBytes, kChunkRowQuantum * per_row);
    return std::min(N * per_row, chunk) + 2 * kScratchAlign;
}
size_t lowp_chunk_cast_bound(size_t N, size_t K, size_t M) {
    return chunk_bytes_bound(N, (K + M) * kLowpBytes);
}

// Low-precision activations, a bias or GELU the epilogue did not take (file comment): r's
// product (operands set, r.m = N rows of x with row stride r.lda, r.n = M) in row chunks of
// fp32 scratch, each finished by finish_rows into out (and pre, with GELU); bias: [M] of out's
// type (bias_operand).
void forward_via_fp32(const CudaCtx& ctx, ScratchCursor& cur, RowMajorGemm r, Act out,
                      Act pre, const void* bias) {
    const int N = static_cast<int>(r.m), M = static_cast<int>(r.n);
    const size_t row_bytes = static_cast<size_t>(M) * sizeof(float);
    // At most what is left of the scratch (matmul_scratch_bytes sizes it for the model's
    // biased shapes; any other caller gets smaller chunks rather than an error).
    const size_t left = cur.rest(ctx).scratch_bytes;
    size_t fit = left / row_bytes;
    if (fit >= static_cast<size_t>(kChunkRowQuantum)) fit = fit / kChunkRowQuantum * kChunkRowQuantum;
    const int rows = static_cast<int>(
        std::max<size_t>(1, std::min<size_t>(chunk_rows(N, row_bytes), fit)));
    float* acc = cur.take_floats(static_cast<size_t>(rows) * M);  // [rows, M]
    const char* x = static_cast<const char*>(r.a);
    for (int r0 = 0; r0 < N; r0 += rows) {
        const int n = std::min(rows, N - r0);
        RowMajorGemm c = r;
        c.m = n;
        c.a = x + static_cast<size_t>(r0) * static_cast<size_t>(r.lda) * kLowpBytes;
        c.c = acc;
        c.c_type = DType::F32;
        c.ldc = M;
        c.beta = 0.0f;
        c.epilogue = GemmEpilogue::None;
        c.bias = nullptr;
        c.aux = nullptr;
        run_gemm(ctx, c);
        const size_t off = static_cast<size_t>(r0) * M;
        finish_rows(ctx, out.at(off), pre ? pre.at(off) : Act{}, acc, bias, n, M);
    }
}

// r (beta = 0, D = out), then + bias[r.n] on every row (bias.data may be null): the bias
// epilogue when enabled and usable; else a plain GEMM and bias_rows for an fp32 out, and for a
// low-precision out forward_via_fp32 (a low-precision D plus bias_rows would round twice).
void run_with_bias(const CudaCtx& ctx, ScratchCursor& cur, RowMajorGemm r, Act out,
                   BiasOperand bias) {
    if (bias.data && ctx.matmul_epilogues && aligned16(bias.data)) {
        RowMajorGemm e = r;
        e.epilogue = GemmEpilogue::Bias;
        e.bias = bias.data;
        e.bias_type = bias.type;
        if (run_gemm(ctx, e)) return;
    }
    if (bias.data && out.dtype != DType::F32) {
        forward_via_fp32(ctx, cur, r, out, Act{}, bias.data);
        return;
    }
    run_gemm(ctx, r);
    if (bias.data)
        bias_rows(ctx, static_cast<float*>(r.c), static_cast<const float*>(bias.data), r.m, r.n,
                  r.ldc, /*accumulate=*/true);
}

}  // namespace

// ---------------------------------------------------------------- general GEMM

size_t gemm_scratch_bytes(const RowMajorGemm& g, Precision p) {
    if (!lowp_precision(p)) return 0;
    return align_scratch(span_a(g) * kLowpBytes) + align_scratch(span_b(g) * kLowpBytes);
}

void gemm_f32(const CudaCtx& ctx, const RowMajorGemm& g) {
    if (g.m <= 0 || g.n <= 0 || g.batch <= 0) return;
    TRT_CHECK(g.k > 0, "gemm_f32 with k = ", g.k);
    TRT_CHECK(g.batch == 1 || (g.stride_a >= 0 && g.stride_b >= 0 && g.stride_c >= 0),
              "gemm_f32 with a negative batch stride");
    TRT_CHECK(g.precision == Precision::Fp32 && g.c_type == DType::F32 &&
                  g.epilogue == GemmEpilogue::None,
              "gemm_f32 takes fp32 operands and C, and no epilogue");
    RowMajorGemm r = g;
    r.precision = ctx.precision;
    if (ctx.lowp()) {
        ScratchCursor cur(ctx, "gemm_f32");
        // Cast the whole span so that lda/ldb/strides address the copy like the original.
        r.a = cast_operand(ctx, cur, static_cast<const float*>(g.a), span_a(g));
        r.b = cast_operand(ctx, cur, static_cast<const float*>(g.b), span_b(g));
    }
    run_gemm(ctx, r);
}

// ---------------------------------------------------------------- matmul ops

size_t matmul_scratch_bytes(const ModelDims& d, Precision p, DType act) {
    // Attention shares the GEMM path and the scratch (cuda_gemm.h).
    size_t need = attention_ctx_scratch_bytes(d, p);
    if (d.B <= 0 || d.T <= 0 || d.C <= 0) return need;
    const bool lowp = lowp_precision(p);
    const bool lowp_acts = act != DType::F32;
    // The model's matmuls (K, M), widths from the dims (cuda_ops.h): the qkv projection
    // (NH+2NKV)·hs wide, the attention output C, the MLP's up (F, or the stacked gate|up 2F of
    // a SwiGLU MLP) and down (F -> C) projections; the classifier's Vp is at most V rounded up
    // to 128.
    const size_t N = static_cast<size_t>(d.B) * d.T, C = d.C;
    const size_t QKV = dims_qkv_width(d), F = dims_ff(d);
    const size_t A = static_cast<size_t>(dims_attention_width(d));  // o_proj's input
    const size_t Vp = (static_cast<size_t>(std::max(d.V, 0)) + 127) / 128 * 128;
    // (K, M, whether the model gives it a bias: only those can take forward_via_fp32.)
    const size_t shapes[6][3] = {{C, QKV, 1}, {A, C, 1}, {C, F, 1},
                                 {C, 2 * F, 1}, {F, C, 1}, {C, Vp, 0}};
    for (const auto& s : shapes) {
        const size_t K = s[0], M = s[1];
        const bool biased = s[2] != 0;
        // (A quantised base's weights never reach these ops: qmatmul_scratch_bytes sizes
        // their tiles, and a cast of the 8B head alone would be 1 GiB.)
        const size_t weight_cast =
            lowp && !d.quantised_base ? align_scratch(K * M * kLowpBytes) : 0;
        // Forward (matmul_forward, matmul_gelu_forward): the weight cast (an unregistered
        // weight), and the inp cast (fp32 activations) or one chunk of the fp32 product (low-
        // precision activations whose bias/GELU fell back).
        size_t fwd = weight_cast;
        if (lowp_acts && biased)  // + the bias operand when not in the working copy
            fwd += align_scratch(M * kLowpBytes) + chunk_bytes_bound(N, M * sizeof(float));
        else if (lowp)
            fwd += align_scratch(N * K * kLowpBytes);
        // Backward: the weight cast, one chunk of dout and inp casts (fp32 activations), the
        // bias-gradient vector and the column sums of a chunk whose bias-gradient epilogue
        // fell back.
        size_t bwd = align_scratch(M * sizeof(float)) +
                     colred::partial_bytes_bound(static_cast<int>(M), 1, sizeof(double)) +
                     weight_cast;
        if (lowp && !lowp_acts) bwd += lowp_chunk_cast_bound(N, K, M);
        need = std::max(need, std::max(fwd, bwd));
    }
    return need;
}

// out[N,M] = inp[N,K] · W (+ bias[M]); W [K,M] (InOut) or [M,K] (OutIn).
void matmul_forward(const CudaCtx& ctx, Act out, ConstAct inp, const float* weight,
                    const float* bias, int N, int K, int M, WeightLayout layout) {
    const bool lowp_acts = act_storage(ctx, {out, inp}) != DType::F32;
    if (N <= 0 || M <= 0) return;
    ScratchCursor cur(ctx, "matmul_forward");
    const BiasOperand b = bias_operand(ctx, cur, bias, static_cast<size_t>(M), out.dtype);
    if (K <= 0) {  // empty product: out = bias (or 0)
        if (lowp_acts)
            finish_rows(ctx, out, Act{}, nullptr, b.data, N, M);
        else
            bias_rows(ctx, static_cast<float*>(out.data), bias, N, M, M, /*accumulate=*/false);
        return;
    }
    const void* x = activation_operand(ctx, cur, inp, static_cast<size_t>(N) * K);
    const void* w = weight_operand(ctx, cur, weight, static_cast<size_t>(K) * M);
    run_with_bias(ctx, cur,
                  forward_product(ctx, out.data, out.dtype, x, w, N, K, M,
                                  layout == WeightLayout::InOut),
                  out, b);
}

// dinp[N,K] = dout[N,M] · Wᵀ (overwritten; skipped if null); dweight += inpᵀ · dout in W's
// layout; dbias[M] += column sums of dout. bf16/fp16 with fp32 activations: over row chunks
// (file comment); with low-precision activations the stored activations are the operands
// (no casts, one chunk) and dinp is written in their type.
void matmul_backward(const CudaCtx& ctx, Act dinp, float* dweight, float* dbias,
                     ConstAct dout, ConstAct inp, const float* weight, int N, int K, int M,
                     WeightLayout layout) {
    const bool lowp_acts = act_storage(ctx, {dinp, dout, inp}) != DType::F32;
    if (N <= 0 || K <= 0 || M <= 0) {
        if (dinp && N > 0 && K > 0)  // M = 0: the product is empty, dinp = 0
            TRT_CUDA_CHECK(cudaMemsetAsync(
                dinp.data, 0, static_cast<size_t>(N) * K * float_dtype_size(dinp.dtype),
                ctx.stream));
        return;
    }
    const bool inout = layout == WeightLayout::InOut;
    const bool cast_acts = ctx.lowp() && !lowp_acts;  // fp32 activations cast per chunk
    ScratchCursor cur(ctx, "matmul_backward");
    // Pieces of scratch that live through every chunk: the weight operand of dinp's product,
    // the chunk's dout and inp casts, and the bias gradient the epilogue writes.
    const void* w =
        dinp ? weight_operand(ctx, cur, weight, static_cast<size_t>(K) * M) : nullptr;
    const int rows = cast_acts ? lowp_chunk_rows(N, K, M) : N;
    void* dy_buf = cast_acts && (dinp || dweight)
                       ? cur.take(static_cast<size_t>(rows) * M * kLowpBytes)
                       : nullptr;
    void* x_buf =
        cast_acts && dweight ? cur.take(static_cast<size_t>(rows) * K * kLowpBytes) : nullptr;
    const bool fuse_dbias = dbias && dweight && ctx.matmul_epilogues;
    float* bgrad = fuse_dbias ? cur.take_floats(static_cast<size_t>(M)) : nullptr;  // [M]
    const CudaCtx rest = cur.rest(ctx);  // for column sums while the pieces above are live

    for (int r0 = 0; r0 < N && (dinp || dweight); r0 += rows) {
        const int n = std::min(rows, N - r0);
        const ConstAct dout_c = dout.at(static_cast<size_t>(r0) * M);  // [n, M]
        // dout is an operand of both products: cast once per chunk.
        const void* dy =
            dy_buf ? cast_into(ctx, dy_buf, f32_of(dout_c), static_cast<size_t>(n) * M)
                   : dout_c.data;
        if (dinp) {
            // dinp[n,K] = dout[n,M] · W[K,M]ᵀ (InOut) | dout[n,M] · W[M,K] (OutIn)
            RowMajorGemm r;
            r.precision = ctx.precision;
            r.m = n;
            r.n = K;
            r.k = M;
            r.a = dy;
            r.lda = M;
            r.b = w;
            r.trans_b = inout;
            r.ldb = inout ? M : K;
            r.c = dinp.at(static_cast<size_t>(r0) * K).data;
            r.c_type = dinp.dtype;
            r.ldc = K;
            r.beta = 0.0f;
            run_gemm(ctx, r);
        }
        if (!dweight) continue;
        const ConstAct inp_c = inp.at(static_cast<size_t>(r0) * K);  // [n, K]
        const void* x = x_buf ? cast_into(ctx, x_buf, f32_of(inp_c), static_cast<size_t>(n) * K)
                              : inp_c.data;
        RowMajorGemm r;
        r.precision = ctx.precision;
        r.k = n;
        r.trans_a = true;
        r.beta = 1.0f;  // parameter gradients accumulate (fp32 D in every mode)
        r.c = dweight;
        GemmEpilogue dbias_epilogue = GemmEpilogue::None;
        if (inout) {  // dW[K,M] += inp[n,K]ᵀ · dout[n,M]: dout is B
            r.m = K;
            r.n = M;
            r.a = x;
            r.lda = K;
            r.b = dy;
            r.ldb = M;
            r.ldc = M;
            dbias_epilogue = GemmEpilogue::BiasGradB;
        } else {  // dW[M,K] += dout[n,M]ᵀ · inp[n,K]: dout is A
            r.m = M;
            r.n = K;
            r.a = dy;
            r.lda = M;
            r.b = x;
            r.ldb = K;
            r.ldc = K;
            dbias_epilogue = GemmEpilogue::BiasGradA;
        }
        if (fuse_dbias) {
            RowMajorGemm e = r;
            e.epilogue = dbias_epilogue;
            e.bgrad = bgrad;
            if (run_gemm(ctx, e)) {
                add_inplace(ctx, dbias, bgrad, static_cast<size_t>(M));  // the epilogue overwrites
                continue;
            }
        }
        run_gemm(ctx, r);
        if (fuse_dbias) column_sums(rest, dbias, dout_c, n, M);  // this chunk fell back
    }
    // After the GEMMs on the same stream, so column_sums may reuse all of ctx.scratch.
    if (dbias && !fuse_dbias) column_sums(ctx, dbias, dout, N, M);
}

// pre[N,M] = inp[N,K] · W[K,M] + bias[M]; out = gelu(pre) (from the fp32 pre: see
// finish_rows for low-precision activations).
void matmul_gelu_forward(const CudaCtx& ctx, Act pre, Act out, ConstAct inp,
                         const float* weight, const float* bias, int N, int K, int M) {
    const bool lowp_acts = act_storage(ctx, {pre, out, inp}) != DType::F32;
    if (N <= 0 || M <= 0) return;
    ScratchCursor cur(ctx, "matmul_gelu_forward");
    const BiasOperand b = bias_operand(ctx, cur, bias, static_cast<size_t>(M), pre.dtype);
    if (K <= 0) {  // empty product: pre = bias (or 0)
        if (lowp_acts) {
            finish_rows(ctx, out, pre, nullptr, b.data, N, M);
        } else {
            bias_rows(ctx, static_cast<float*>(pre.data), bias, N, M, M, /*accumulate=*/false);
            gelu_forward(ctx, out, pre, static_cast<size_t>(N) * M);
        }
        return;
    }
    const void* x = activation_operand(ctx, cur, inp, static_cast<size_t>(N) * K);
    const void* w = weight_operand(ctx, cur, weight, static_cast<size_t>(K) * M);
    // The GELU epilogue's rules (file comment): aux ld a multiple of 8, 16-byte aligned
    // aux and bias. The aux (pre) has D's type.
    if (ctx.matmul_epilogues && M % 8 == 0 && aligned16(pre.data) &&
        (!b.data || aligned16(b.data))) {
        RowMajorGemm e = forward_product(ctx, out.data, out.dtype, x, w, N, K, M,
                                   /*inout=*/true);
        e.epilogue = GemmEpilogue::GeluAux;
        e.bias = b.data;
        e.bias_type = b.type;
        e.aux = pre.data;
        e.aux_ld = M;
        if (run_gemm(ctx, e)) return;
    }
    const RowMajorGemm r =
        forward_product(ctx, pre.data, pre.dtype, x, w, N, K, M, /*inout=*/true);
    if (lowp_acts) {
        forward_via_fp32(ctx, cur, r, out, pre, b.data);
        return;
    }
    run_with_bias(ctx, cur, r, pre, b);
    gelu_forward(ctx, out, pre, static_cast<size_t>(N) * M);
}

}  // namespace trt::cuda
