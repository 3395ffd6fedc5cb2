// Matmuls on cuBLASLt: matmul_forward / matmul_backward / matmul_gelu_forward of cuda_ops.h
// and the general row-major GEMM of cuda_gemm.h (attention's batched products).
//
// Row-major on a column-major library. A row-major X stored [r,c] with row stride ld is the
// column-major Xᵀ [c,r] with the same ld, so the row-major product C[m,n] = op(A)·op(B) is
// the column-major Cᵀ[n,m] = op(B)ᵀ·op(A)ᵀ: cuBLASLt gets A' = B, B' = A with the *same*
// transpose flags, m' = n, n' = m, k' = k, and every ld unchanged (lt_from_rowmajor). The
// products of the matmul ops, as cuBLASLt sees them (N = rows, K = in, M = out):
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
// used). Each maps onto the table above:
//   forward + bias     bias[M] is one value per row of the column-major D[m' = M, n' = N]:
//                      CUBLASLT_EPILOGUE_BIAS. Fallback: plain GEMM, then bias_rows.
//   matmul_gelu        D = out, aux = pre (the GELU input, bias included), aux ld = M:
//                      CUBLASLT_EPILOGUE_GELU_AUX_BIAS (GELU_AUX without a bias). cuBLASLt's
//                      GELU is the tanh form of backend.h (PyTorch's _addmm_activation relies
//                      on that, pytorch#104061; the GPU test holds out to the tanh form of pre
//                      at 1e-5, which the erf form misses by ~2e-4), but not the same bits as
//                      gelu_forward; only pre feeds gelu_backward_bias, and pre is the plain
//                      GEMM + bias. The aux matrix has D's type (fp32: the default, never set)
//                      and cuBLASLt requires its ld to be a multiple of 8: M % 8 != 0 takes
//                      the fallback (GEMM into pre + bias, then gelu_forward).
//   dweight + dbias    dbias[M] = column sums of dout[N, M] = the reduction over k' = N of the
//                      Lt operand that holds dout: A' for InOut (CUBLASLT_EPILOGUE_BGRADA, one
//                      value per row of D[M, K]), B' for OutIn (BGRADB, one per column of
//                      D[K, M]). The epilogue *writes* its vector while backend.h's dbias
//                      accumulates, so it writes into ctx.scratch and add_inplace adds it
//                      (fixed order). Fallback: column_sums (double partials, fixed order).
// The bias/bias-gradient vector and the aux matrix must be 16-byte aligned (kernels assuming 16
// bytes have been reported to fault on less-aligned vectors; odd-C models slice biases at
// 4-byte offsets from the flat buffer); otherwise the fallback runs. A plan is cached per
// (shape, epilogue, alignments); when the heuristic has no algorithm for the epilogue, or the
// first cublasLtMatmul with it says NOT_SUPPORTED / INVALID_VALUE, the plan is kept as
// "rejected" and that shape takes the fallback from then on (never a failed step).
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
// Precision (ctx.precision): Fp32 = everything CUDA_R_32F, CUBLAS_COMPUTE_32F; Tf32 = the same
// types, CUBLAS_COMPUTE_32F_FAST_TF32; Bf16/Fp16 = A and B in CUDA_R_16BF/CUDA_R_16F (weights
// from the working copy ctx.lowp_of(w) when registered, else cast), CUBLAS_COMPUTE_32F, scale
// type fp32, and the activations either
//   - fp32 (ctx.act F32): cast into ctx.scratch per call, C/D CUDA_R_32F; or
//   - bf16/fp16 (ctx.act, accel.lowp_activations): read as stored (no operand casts; the
//     backward in one pass), and the forward's out/pre and the dinp product written in that
//     type (D rounds the fp32 accumulator once). A bias is then an operand like the weight,
//     in the low precision (its working copy; cuBLASLt 13.1 refuses an fp32 bias with a bf16
//     D), added to the fp32 product inside the GEMM (BIAS / GELU_AUX_BIAS epilogues) before
//     D's rounding; without a usable epilogue the product goes through fp32 row chunks of
//     scratch and finish_rows adds the same bias (and GELU) and rounds once — never a
//     low-precision D plus a bias kernel, which would round twice where the CPU twin rounds
//     once (PRECISION.md).
// dweight is fp32 in every precision, so its beta = 1 accumulation stays fp32.
//
// Determinism: one algorithm per distinct problem, chosen by cublasLtMatmulAlgoGetHeuristic
// on first use (a host call; no device sync) and cached with its descriptors in MatmulState,
// keyed by everything the heuristic sees: shape, transposes, lds, batch and strides, types,
// compute type, epilogue, and the alignment of every operand (its pointer, lowered by odd
// lds/strides; also what the heuristic is told to assume). The heuristic only offers
// algorithms that fit ctx.lt_workspace_bytes (the whole workspace is passed on every call, so
// the choice never depends on what else ran). cuBLASLt's split-K reduction schemes are all
// fixed-order (INPLACE serialises the partial sums with counters in the workspace;
// COMPUTE_TYPE / OUTPUT_TYPE reduce in a separate pass) and there is no atomics-based scheme
// in cuBLAS 13, so every scheme is allowed (kReductionSchemes: one place to narrow it). With
// one stream and a workspace owned by the caller, cuBLAS documents bitwise-identical results
// run to run for a given toolkit, architecture and SM count. That covers the epilogues too:
// the bias gradient is reduced inside cublasLtMatmul (no atomics mode exists in cuBLASLt, and
// a split-K algorithm reduces with one of the fixed-order schemes above), and its addition
// into dbias is add_inplace, one thread per element. tests/gpu/cuda_epilogue_test.cpp checks
// every epilogue bitwise run to run.
//
// Threading: MatmulState is used from the backend's one host thread at a time (like the
// backend itself); the epilogue pointers are set on the cached descriptor per call.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_gemm.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/gelu.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/lowp.cuh"
#include "backend/cuda/kernels/reduce.cuh"
#include "core/error.h"

namespace trt::cuda {

// ---------------------------------------------------------------- plan cache

struct MatmulState {
    // Everything cublasLtMatmulAlgoGetHeuristic depends on (see LtGemm / plan_key).
    using Key = std::array<int64_t, 24>;
    struct Plan {
        cublasLtMatmulDesc_t desc = nullptr;
        cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // C uses d's layout
        cublasLtMatmulAlgo_t algo{};
        bool rejected = false;  // the key's epilogue is unusable here: the caller falls back
        bool ran = false;       // a cublasLtMatmul with this plan has succeeded
    };
    std::map<Key, Plan> plans;
    // Per epilogue family (epilogue_family()): shapes that run it fused / that fell back.
    std::array<int, 3> fused{}, fell_back{};

    static void destroy(Plan& p) noexcept {  // statuses ignored: nothing to do on failure
        if (p.a) cublasLtMatrixLayoutDestroy(p.a);
        if (p.b) cublasLtMatrixLayoutDestroy(p.b);
        if (p.d) cublasLtMatrixLayoutDestroy(p.d);
        if (p.desc) cublasLtMatmulDescDestroy(p.desc);
        p = Plan{};
    }
    ~MatmulState() {
        for (auto& kv : plans) destroy(kv.second);
    }
};

MatmulState* create_matmul_state() { return new MatmulState(); }
void destroy_matmul_state(MatmulState* s) { delete s; }

std::string matmul_epilogue_note(const MatmulState* s) {
    if (!s) return "";
    static const char* const kFamily[3] = {"bias", "gelu", "bias-grad"};
    std::string out;
    for (int f = 0; f < 3; f++) {
        if (s->fused[f] == 0 && s->fell_back[f] == 0) continue;
        if (!out.empty()) out += ", ";
        out += std::string(kFamily[f]) + " " + std::to_string(s->fused[f]) + " fused / " +
               std::to_string(s->fell_back[f]) + " fallback";
    }
    return out.empty() ? out : "cuBLASLt epilogue shapes: " + out;
}

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

// Allowed split-K reduction schemes: all of them are deterministic (see the file comment).
constexpr uint32_t kReductionSchemes = CUBLASLT_REDUCTION_SCHEME_MASK;

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

bool lowp_precision(Precision p) { return p == Precision::Bf16 || p == Precision::Fp16; }

// cuBLASLt's type for an activation dtype (F32, BF16, F16).
cudaDataType_t act_type(DType d) {
    return d == DType::BF16 ? CUDA_R_16BF : d == DType::F16 ? CUDA_R_16F : CUDA_R_32F;
}

// The fp32 pointer of a view the caller knows is fp32 (ctx.act == F32).
const float* f32_of(ConstAct v) {
    TRT_CHECK(v.dtype == DType::F32, "cuda matmul: expected an fp32 activation view");
    return static_cast<const float*>(v.data);
}

cudaDataType_t operand_type(Precision p) {
    return p == Precision::Bf16 ? CUDA_R_16BF : p == Precision::Fp16 ? CUDA_R_16F : CUDA_R_32F;
}

cublasComputeType_t compute_type(Precision p) {
    return p == Precision::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

// Largest power of two (<= 256) dividing x (0: 256).
uint32_t pow2_alignment(uint64_t x) {
    uint32_t al = 256;
    while (al > 1 && (x & (al - 1)) != 0) al >>= 1;
    return al;
}
uint32_t alignment_of(const void* p) { return pow2_alignment(reinterpret_cast<uintptr_t>(p)); }

// What the heuristic may assume about every column (and batch) start of an operand: the
// base pointer's alignment, lowered by that of the ld and batch stride in bytes, so an odd
// ld or stride can never reach a vectorised kernel that needs more.
uint32_t operand_alignment(const void* p, int64_t ld, int batch, int64_t stride, size_t elem) {
    uint32_t al = std::min(alignment_of(p), pow2_alignment(static_cast<uint64_t>(ld) * elem));
    if (batch > 1) al = std::min(al, pow2_alignment(static_cast<uint64_t>(stride) * elem));
    return al;
}

// ---- epilogues in cuBLASLt's terms
bool epilogue_reads_bias(cublasLtEpilogue_t e) {
    return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
bool epilogue_writes_bgrad(cublasLtEpilogue_t e) {
    return e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}
bool epilogue_writes_aux(cublasLtEpilogue_t e) {
    return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}
// Index into MatmulState::fused / fell_back: 0 bias, 1 gelu, 2 bias gradient.
int epilogue_family(cublasLtEpilogue_t e) {
    return epilogue_writes_aux(e) ? 1 : epilogue_writes_bgrad(e) ? 2 : 0;
}

// One GEMM in cuBLASLt's column-major terms:
//   D_i[m,n] = alpha · op_a(A_i)[m,k] · op_b(B_i)[k,n] + beta · D_i, then the epilogue.
// A and B of type ab_type; D (= C) of d_type (fp32, or the low-precision activation type of
// a forward / dinp product, docs/PRECISION.md); an epilogue only with batch == 1.
struct LtGemm {
    cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
    int64_t m = 0, n = 0, k = 0;
    const void* a = nullptr;
    int64_t lda = 0, stride_a = 0;
    const void* b = nullptr;
    int64_t ldb = 0, stride_b = 0;
    void* d = nullptr;
    int64_t ldd = 0, stride_d = 0;
    int batch = 1;
    cudaDataType_t ab_type = CUDA_R_32F;
    cudaDataType_t d_type = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    float alpha = 1.0f, beta = 0.0f;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void* bias = nullptr;  // BIAS, GELU_AUX_BIAS: [m] of bias_type, added to every column
    cudaDataType_t bias_type = CUDA_R_32F;  // fp32, or d_type's low precision (bias_operand)
    void* aux = nullptr;          // GELU_AUX*: the GELU input [m, n] (d_type), ld aux_ld
    int64_t aux_ld = 0;
    float* bgrad = nullptr;       // BGRADA: [m] (sums over k of op_a(A)); BGRADB: [n] (op_b(B))
};

// The epilogue's vector (bias in, bias gradient out), or null.
const void* epilogue_vector(const LtGemm& g) {
    if (epilogue_reads_bias(g.epilogue)) return g.bias;
    if (epilogue_writes_bgrad(g.epilogue)) return g.bgrad;
    return nullptr;
}

// The row-major epilogues (RmGemm): what the matmul ops ask for.
enum class Epilogue {
    None,
    Bias,       // C[m, n] += bias[n]
    GeluAux,    // aux[m, n] = product (+ bias[n] if bias); C = gelu(aux)
    BiasGradA,  // bgrad[m] = sum over k of op(A)[m, k]
    BiasGradB,  // bgrad[n] = sum over k of op(B)[k, n]
};

// The same GEMM in row-major terms (RowMajorGemm of cuda_gemm.h with typed operands).
struct RmGemm {
    int64_t m = 0, n = 0, k = 0;
    bool trans_a = false, trans_b = false;
    const void* a = nullptr;
    int64_t lda = 0, stride_a = 0;
    const void* b = nullptr;
    int64_t ldb = 0, stride_b = 0;
    void* c = nullptr;
    int64_t ldc = 0, stride_c = 0;
    cudaDataType_t c_type = CUDA_R_32F;  // C's (and aux's) element type
    int batch = 1;
    float alpha = 1.0f, beta = 0.0f;
    Epilogue epilogue = Epilogue::None;
    const void* bias = nullptr;  // Bias, GeluAux (optional): [n] of bias_type
    cudaDataType_t bias_type = CUDA_R_32F;
    void* aux = nullptr;          // GeluAux: [m, n] of c_type, row stride aux_ld
    int64_t aux_ld = 0;
    float* bgrad = nullptr;       // BiasGradA: [m]; BiasGradB: [n]
};

size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }
uint32_t align_a(const LtGemm& g) {
    return operand_alignment(g.a, g.lda, g.batch, g.stride_a, type_bytes(g.ab_type));
}
uint32_t align_b(const LtGemm& g) {
    return operand_alignment(g.b, g.ldb, g.batch, g.stride_b, type_bytes(g.ab_type));
}
uint32_t align_d(const LtGemm& g) {
    return operand_alignment(g.d, g.ldd, g.batch, g.stride_d, type_bytes(g.d_type));
}
uint32_t align_aux(const LtGemm& g) {  // aux has D's type (cuBLASLt's default, never set)
    return g.aux ? operand_alignment(g.aux, g.aux_ld, 1, 0, type_bytes(g.d_type)) : 0;
}

MatmulState::Key plan_key(const LtGemm& g) {
    const bool batched = g.batch > 1;
    const void* vec = epilogue_vector(g);
    return {g.op_a,
            g.op_b,
            g.m,
            g.n,
            g.k,
            g.lda,
            g.ldb,
            g.ldd,
            batched ? g.stride_a : 0,
            batched ? g.stride_b : 0,
            batched ? g.stride_d : 0,
            g.batch,
            static_cast<int64_t>(g.ab_type),
            static_cast<int64_t>(g.d_type),
            static_cast<int64_t>(g.compute),
            static_cast<int64_t>(g.epilogue),
            static_cast<int64_t>(epilogue_reads_bias(g.epilogue) ? g.bias_type : CUDA_R_32F),
            align_a(g),
            align_b(g),
            align_d(g),
            vec ? alignment_of(vec) : 0,
            align_aux(g),
            g.aux ? g.aux_ld : 0,
            g.beta == 0.0f};
}

// *out = a [rows, cols] column-major layout of type t (strided batch when batch > 1).
void make_layout(cublasLtMatrixLayout_t* out, cudaDataType_t t, int64_t rows, int64_t cols,
                 int64_t ld, int batch, int64_t stride) {
    TRT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(out, t, static_cast<uint64_t>(rows),
                                                static_cast<uint64_t>(cols), ld));
    if (batch > 1) {
        const int32_t count = batch;
        TRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
            *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
        TRT_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
            *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
    }
}

// The per-call pointers of g's epilogue (the cached descriptor is shared by every call with
// the same key; the heuristic saw pointers of the same alignment).
void set_epilogue_pointers(cublasLtMatmulDesc_t desc, const LtGemm& g) {
    if (const void* vec = epilogue_vector(g))
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                        &vec, sizeof(vec)));
    if (epilogue_writes_aux(g.epilogue)) {
        const void* aux = g.aux;
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
    }
}

void configure_epilogue(cublasLtMatmulDesc_t desc, const LtGemm& g) {
    const uint32_t e = static_cast<uint32_t>(g.epilogue);
    TRT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
    if (epilogue_reads_bias(g.epilogue)) {
        // fp32 with an fp32 D; with a bf16/fp16 D the bias is the low-precision operand
        // (bias_operand: cuBLASLt 13.1 refuses an fp32 bias there, INVALID_VALUE on an H100),
        // added to the fp32 product before D's one rounding, as the CPU twin does. The bias
        // gradient and the aux matrix keep their default: D's type.
        const int32_t bias_type = g.bias_type;
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    }
    if (epilogue_writes_aux(g.epilogue)) {
        const int64_t ld = g.aux_ld;
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                        &ld, sizeof(ld)));
    }
    set_epilogue_pointers(desc, g);
}

// Builds the descriptors and asks the heuristic for its best algorithm (first use of a key).
// A plan whose epilogue has no algorithm comes back rejected (no descriptors); a plain GEMM
// without an algorithm is an error.
MatmulState::Plan build_plan(const CudaCtx& ctx, const LtGemm& g) {
    MatmulState::Plan p;
    // Destroys whatever was created if a check below throws, or the plan is rejected.
    struct Guard {
        MatmulState::Plan* p;
        ~Guard() {
            if (p) MatmulState::destroy(*p);
        }
    } guard{&p};

    TRT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, g.compute, CUDA_R_32F));
    const int32_t op_a = g.op_a, op_b = g.op_b;
    TRT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    TRT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    // Stored shapes: op N keeps [m,k] / [k,n]; op T stores the transpose.
    const bool ta = g.op_a != CUBLAS_OP_N, tb = g.op_b != CUBLAS_OP_N;
    make_layout(&p.a, g.ab_type, ta ? g.k : g.m, ta ? g.m : g.k, g.lda, g.batch, g.stride_a);
    make_layout(&p.b, g.ab_type, tb ? g.n : g.k, tb ? g.k : g.n, g.ldb, g.batch, g.stride_b);
    make_layout(&p.d, g.d_type, g.m, g.n, g.ldd, g.batch, g.stride_d);
    if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) configure_epilogue(p.desc, g);

    cublasLtMatmulPreference_t pref = nullptr;
    TRT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    struct PrefGuard {
        cublasLtMatmulPreference_t p;
        ~PrefGuard() { cublasLtMatmulPreferenceDestroy(p); }
    } pref_guard{pref};
    const uint64_t ws = ctx.lt_workspace ? ctx.lt_workspace_bytes : 0;
    TRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    TRT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &kReductionSchemes,
        sizeof(kReductionSchemes)));
    // The default assumes 256-byte aligned pointers; views into larger buffers (per-layer
    // weights, attention's batched slices) can be less aligned, so say what they are.
    const uint32_t al[4] = {align_a(g), align_b(g), align_d(g), align_d(g)};
    const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        TRT_CUBLAS_CHECK(
            cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al[i], sizeof(al[i])));

    cublasLtMatmulHeuristicResult_t res{};
    int count = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx.lt, p.desc, p.a, p.b, p.d, p.d,
                                                             pref, 1, &res, &count);
    // An epilogue cuBLASLt does not take at these types (an fp32 bias with a bf16 D, seen on
    // an H100 with cuBLASLt 13.1) is refused as INVALID_VALUE rather than NOT_SUPPORTED: for
    // an epilogue plan both mean "fall back"; for a plain GEMM both are errors.
    const bool with_epilogue = g.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
    const bool refused = st == CUBLAS_STATUS_NOT_SUPPORTED ||
                         (st == CUBLAS_STATUS_INVALID_VALUE && with_epilogue);
    if (st != CUBLAS_STATUS_SUCCESS && !refused)
        cublas_fail(st, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
    if (st != CUBLAS_STATUS_SUCCESS || count < 1 || res.state != CUBLAS_STATUS_SUCCESS) {
        if (g.epilogue == CUBLASLT_EPILOGUE_DEFAULT)
            fail(Status::Device, "cuBLASLt has no algorithm for a ", g.m, "x", g.n, "x", g.k,
                 " GEMM (batch ", g.batch, ", operand type ", static_cast<int>(g.ab_type),
                 ", workspace ", ws, " bytes)");
        MatmulState::Plan rejected;  // the guard destroys p's descriptors
        rejected.rejected = true;
        return rejected;
    }
    p.algo = res.algo;
    guard.p = nullptr;  // success: the cache owns the descriptors
    return p;
}

// Runs g; false when g's epilogue cannot be used at this shape (nothing was enqueued: the
// caller runs its fallback). A plain GEMM always runs (or throws).
bool run_lt(const CudaCtx& ctx, const LtGemm& g) {
    TRT_CHECK(ctx.matmul != nullptr && ctx.lt != nullptr, "the CUDA context has no cuBLASLt");
    const bool with_epilogue = g.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
    TRT_CHECK(!with_epilogue || g.batch == 1, "an epilogue with a batched GEMM");
    MatmulState& state = *ctx.matmul;
    const MatmulState::Key key = plan_key(g);
    auto it = state.plans.find(key);
    if (it == state.plans.end()) {
        it = state.plans.emplace(key, build_plan(ctx, g)).first;
        if (with_epilogue)
            (it->second.rejected ? state.fell_back : state.fused)[epilogue_family(g.epilogue)]++;
    }
    MatmulState::Plan& p = it->second;
    if (p.rejected) return false;
    if (with_epilogue) set_epilogue_pointers(p.desc, g);
    const float alpha = g.alpha, beta = g.beta;
    const cublasStatus_t st =
        cublasLtMatmul(ctx.lt, p.desc, &alpha, g.a, p.a, g.b, p.b, &beta, g.d, p.d, g.d, p.d,
                       &p.algo, ctx.lt_workspace, ctx.lt_workspace ? ctx.lt_workspace_bytes : 0,
                       ctx.stream);
    if (st != CUBLAS_STATUS_SUCCESS) {
        // An epilogue the heuristic offered but whose first call is refused up front (argument
        // checks, before any launch): this shape falls back from now on.
        const bool refused = st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE;
        if (with_epilogue && !p.ran && refused) {
            MatmulState::destroy(p);
            p.rejected = true;
            const int f = epilogue_family(g.epilogue);
            state.fused[f]--;
            state.fell_back[f]++;
            return false;
        }
        cublas_fail(st, "cublasLtMatmul", __FILE__, __LINE__);
    }
    p.ran = true;
    return true;
}

// The row-major → column-major swap (file comment): Cᵀ = op(B)ᵀ · op(A)ᵀ. Row-major A is
// cuBLASLt's B' and vice versa, so a bias gradient over row-major A is BGRADB.
LtGemm lt_from_rowmajor(const CudaCtx& ctx, const RmGemm& r) {
    LtGemm g;
    g.m = r.n;
    g.n = r.m;
    g.k = r.k;
    g.op_a = r.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    g.a = r.b;
    g.lda = r.ldb;
    g.stride_a = r.stride_b;
    g.op_b = r.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    g.b = r.a;
    g.ldb = r.lda;
    g.stride_b = r.stride_a;
    g.d = r.c;
    g.ldd = r.ldc;
    g.stride_d = r.stride_c;
    g.d_type = r.c_type;
    g.batch = r.batch;
    g.ab_type = operand_type(ctx.precision);
    g.compute = compute_type(ctx.precision);
    g.alpha = r.alpha;
    g.beta = r.beta;
    switch (r.epilogue) {
        case Epilogue::None: break;
        case Epilogue::Bias:  // bias[n] per row-major column = per column-major row of D
            g.epilogue = CUBLASLT_EPILOGUE_BIAS;
            g.bias = r.bias;
            g.bias_type = r.bias_type;
            break;
        case Epilogue::GeluAux:  // aux [m, n] row-major = [n, m] column-major, same ld
            g.epilogue = r.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
            g.bias = r.bias;
            g.bias_type = r.bias_type;
            g.aux = r.aux;
            g.aux_ld = r.aux_ld;
            break;
        case Epilogue::BiasGradA:  // row-major op(A)[m, k] = Lt op(B')[k, n' = m]
            g.epilogue = CUBLASLT_EPILOGUE_BGRADB;
            g.bgrad = r.bgrad;
            break;
        case Epilogue::BiasGradB:  // row-major op(B)[k, n] = Lt op(A')[m' = n, k]
            g.epilogue = CUBLASLT_EPILOGUE_BGRADA;
            g.bgrad = r.bgrad;
            break;
    }
    return g;
}

// Runs r; false when its epilogue cannot be used at this shape (see run_lt).
bool run_rowmajor(const CudaCtx& ctx, const RmGemm& r) {
    return run_lt(ctx, lt_from_rowmajor(ctx, r));
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
    cudaDataType_t type = CUDA_R_32F;
};
BiasOperand bias_operand(const CudaCtx& ctx, ScratchCursor& cur, const float* bias, size_t M,
                         DType out) {
    if (!bias) return {};
    if (out == DType::F32) return {bias, CUDA_R_32F};
    const void* b = ctx.lowp_of(bias);
    if (!b || !aligned16(b)) b = cast_operand(ctx, cur, bias, M);
    return {b, act_type(out)};
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
RmGemm forward_product(void* out, cudaDataType_t out_type, const void* x, const void* w, int N,
                       int K, int M, bool inout) {
    RmGemm r;
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
void forward_via_fp32(const CudaCtx& ctx, ScratchCursor& cur, RmGemm r, Act out, Act pre,
                      const void* bias) {
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
        RmGemm c = r;
        c.m = n;
        c.a = x + static_cast<size_t>(r0) * static_cast<size_t>(r.lda) * kLowpBytes;
        c.c = acc;
        c.c_type = CUDA_R_32F;
        c.ldc = M;
        c.beta = 0.0f;
        c.epilogue = Epilogue::None;
        c.bias = nullptr;
        c.aux = nullptr;
        run_rowmajor(ctx, c);
        const size_t off = static_cast<size_t>(r0) * M;
        finish_rows(ctx, out.at(off), pre ? pre.at(off) : Act{}, acc, bias, n, M);
    }
}

// r (beta = 0, D = out), then + bias[r.n] on every row (bias.data may be null): the bias
// epilogue when enabled and usable; else a plain GEMM and bias_rows for an fp32 out, and for a
// low-precision out forward_via_fp32 (a low-precision D plus bias_rows would round twice).
void run_with_bias(const CudaCtx& ctx, ScratchCursor& cur, RmGemm r, Act out,
                   BiasOperand bias) {
    if (bias.data && ctx.matmul_epilogues && aligned16(bias.data)) {
        RmGemm e = r;
        e.epilogue = Epilogue::Bias;
        e.bias = bias.data;
        e.bias_type = bias.type;
        if (run_rowmajor(ctx, e)) return;
    }
    if (bias.data && out.dtype != DType::F32) {
        forward_via_fp32(ctx, cur, r, out, Act{}, bias.data);
        return;
    }
    run_rowmajor(ctx, r);
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
    RmGemm r;
    r.m = g.m;
    r.n = g.n;
    r.k = g.k;
    r.trans_a = g.trans_a;
    r.trans_b = g.trans_b;
    ScratchCursor cur(ctx, "gemm_f32");
    // Cast the whole span so that lda/ldb/strides address the copy like the original.
    r.a = ctx.lowp() ? cast_operand(ctx, cur, g.a, span_a(g)) : g.a;
    r.lda = g.lda;
    r.stride_a = g.stride_a;
    r.b = ctx.lowp() ? cast_operand(ctx, cur, g.b, span_b(g)) : g.b;
    r.ldb = g.ldb;
    r.stride_b = g.stride_b;
    r.c = g.c;
    r.ldc = g.ldc;
    r.stride_c = g.stride_c;
    r.batch = g.batch;
    r.alpha = g.alpha;
    r.beta = g.beta;
    run_rowmajor(ctx, r);
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
        const size_t weight_cast = lowp ? align_scratch(K * M * kLowpBytes) : 0;
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
                  forward_product(out.data, act_type(out.dtype), x, w, N, K, M,
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
            RmGemm r;
            r.m = n;
            r.n = K;
            r.k = M;
            r.a = dy;
            r.lda = M;
            r.b = w;
            r.trans_b = inout;
            r.ldb = inout ? M : K;
            r.c = dinp.at(static_cast<size_t>(r0) * K).data;
            r.c_type = act_type(dinp.dtype);
            r.ldc = K;
            r.beta = 0.0f;
            run_rowmajor(ctx, r);
        }
        if (!dweight) continue;
        const ConstAct inp_c = inp.at(static_cast<size_t>(r0) * K);  // [n, K]
        const void* x = x_buf ? cast_into(ctx, x_buf, f32_of(inp_c), static_cast<size_t>(n) * K)
                              : inp_c.data;
        RmGemm r;
        r.k = n;
        r.trans_a = true;
        r.beta = 1.0f;  // parameter gradients accumulate (fp32 D in every mode)
        r.c = dweight;
        Epilogue dbias_epilogue = Epilogue::None;
        if (inout) {  // dW[K,M] += inp[n,K]ᵀ · dout[n,M]: dout is B
            r.m = K;
            r.n = M;
            r.a = x;
            r.lda = K;
            r.b = dy;
            r.ldb = M;
            r.ldc = M;
            dbias_epilogue = Epilogue::BiasGradB;
        } else {  // dW[M,K] += dout[n,M]ᵀ · inp[n,K]: dout is A
            r.m = M;
            r.n = K;
            r.a = dy;
            r.lda = M;
            r.b = x;
            r.ldb = K;
            r.ldc = K;
            dbias_epilogue = Epilogue::BiasGradA;
        }
        if (fuse_dbias) {
            RmGemm e = r;
            e.epilogue = dbias_epilogue;
            e.bgrad = bgrad;
            if (run_rowmajor(ctx, e)) {
                add_inplace(ctx, dbias, bgrad, static_cast<size_t>(M));  // the epilogue overwrites
                continue;
            }
        }
        run_rowmajor(ctx, r);
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
        RmGemm e = forward_product(out.data, act_type(out.dtype), x, w, N, K, M,
                                   /*inout=*/true);
        e.epilogue = Epilogue::GeluAux;
        e.bias = b.data;
        e.bias_type = b.type;
        e.aux = pre.data;
        e.aux_ld = M;
        if (run_rowmajor(ctx, e)) return;
    }
    const RmGemm r =
        forward_product(pre.data, act_type(pre.dtype), x, w, N, K, M, /*inout=*/true);
    if (lowp_acts) {
        forward_via_fp32(ctx, cur, r, out, pre, b.data);
        return;
    }
    run_with_bias(ctx, cur, r, pre, b);
    gelu_forward(ctx, out, pre, static_cast<size_t>(N) * M);
}

}  // namespace trt::cuda
