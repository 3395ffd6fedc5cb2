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
// Bias: the forward's bias[M] is a per-column vector of the row-major output, i.e. one value
// per row of the column-major D[m' = M, n' = N], which is exactly CUBLASLT_EPILOGUE_BIAS (fp32
// bias with fp32 D). When the heuristic has no algorithm for the epilogue at some shape, the
// plan remembers that and a small kernel adds the bias after a plain GEMM instead (decided
// once per shape, so a shape always takes the same path). matmul_gelu_forward = that forward
// into `pre`, then gelu_forward(out, pre): the GELU is the backend's own kernel, bit-identical
// to the standalone op that gelu_backward_bias pairs with (cuBLASLt's GELU epilogue would not
// be; it can come later behind the same plan cache if the extra pass shows in a profile).
//
// Precision (ctx.precision): Fp32 = everything CUDA_R_32F, CUBLAS_COMPUTE_32F; Tf32 = the same
// types, CUBLAS_COMPUTE_32F_FAST_TF32; Bf16/Fp16 = A and B in CUDA_R_16BF/CUDA_R_16F (weights
// from the working copy ctx.lowp_of(w) when registered, else cast; activations and gradients
// cast into ctx.scratch), C/D CUDA_R_32F, CUBLAS_COMPUTE_32F, scale type fp32. dweight is fp32
// in every precision, so its beta = 1 accumulation stays fp32.
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
// run to run for a given toolkit, architecture and SM count.
//
// Threading: MatmulState is used from the backend's one host thread at a time (like the
// backend itself); the bias pointer is set on the cached descriptor per call.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_gemm.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace trt::cuda {

// ---------------------------------------------------------------- plan cache

struct MatmulState {
    // Everything cublasLtMatmulAlgoGetHeuristic depends on (see LtGemm / plan_key).
    using Key = std::array<int64_t, 20>;
    struct Plan {
        cublasLtMatmulDesc_t desc = nullptr;
        cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // C uses d's layout
        cublasLtMatmulAlgo_t algo{};
        bool bias_epilogue = false;  // the key asked for a bias and the epilogue is in use
    };
    std::map<Key, Plan> plans;

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

int grid_for(int64_t n) {
    const int64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<int>(std::max<int64_t>(1, std::min(b, kMaxBlocks)));
}

// out[r, j] (row-major [rows, cols], row stride ld) = (accumulate ? out[r, j] : 0) + bias[j]
// (bias null: + 0). The bias fallback after a plain GEMM, and the K = 0 product.
__global__ void bias_rows_kernel(float* __restrict__ out, const float* __restrict__ bias,
                                 int64_t rows, int64_t cols, int64_t ld, bool accumulate) {
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

void bias_rows(const CudaCtx& ctx, float* out, const float* bias, int64_t rows, int64_t cols,
               int64_t ld, bool accumulate) {
    if (rows <= 0 || cols <= 0) return;
    bias_rows_kernel<<<grid_for(rows * cols), kThreads, 0, ctx.stream>>>(out, bias, rows, cols,
                                                                         ld, accumulate);
    TRT_CUDA_LAUNCH_CHECK();
}

bool lowp_precision(Precision p) { return p == Precision::Bf16 || p == Precision::Fp16; }

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

// One GEMM in cuBLASLt's column-major terms:
//   D_i[m,n] = alpha · op_a(A_i)[m,k] · op_b(B_i)[k,n] + beta · D_i (+ bias[m] on every column)
// A and B of type ab_type; D (= C) fp32; bias only with batch == 1.
struct LtGemm {
    cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
    int64_t m = 0, n = 0, k = 0;
    const void* a = nullptr;
    int64_t lda = 0, stride_a = 0;
    const void* b = nullptr;
    int64_t ldb = 0, stride_b = 0;
    float* d = nullptr;
    int64_t ldd = 0, stride_d = 0;
    int batch = 1;
    cudaDataType_t ab_type = CUDA_R_32F;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    float alpha = 1.0f, beta = 0.0f;
    const float* bias = nullptr;
};

// The same GEMM in row-major terms (RowMajorGemm of cuda_gemm.h with typed operands); bias[n]
// is added to every row of C.
struct RmGemm {
    int64_t m = 0, n = 0, k = 0;
    bool trans_a = false, trans_b = false;
    const void* a = nullptr;
    int64_t lda = 0, stride_a = 0;
    const void* b = nullptr;
    int64_t ldb = 0, stride_b = 0;
    float* c = nullptr;
    int64_t ldc = 0, stride_c = 0;
    int batch = 1;
    float alpha = 1.0f, beta = 0.0f;
    const float* bias = nullptr;
};

size_t type_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }
uint32_t align_a(const LtGemm& g) {
    return operand_alignment(g.a, g.lda, g.batch, g.stride_a, type_bytes(g.ab_type));
}
uint32_t align_b(const LtGemm& g) {
    return operand_alignment(g.b, g.ldb, g.batch, g.stride_b, type_bytes(g.ab_type));
}
uint32_t align_d(const LtGemm& g) {
    return operand_alignment(g.d, g.ldd, g.batch, g.stride_d, sizeof(float));
}

MatmulState::Key plan_key(const LtGemm& g) {
    const bool batched = g.batch > 1;
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
            static_cast<int64_t>(g.compute),
            g.bias != nullptr,
            align_a(g),
            align_b(g),
            align_d(g),
            g.bias ? alignment_of(g.bias) : 0,
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

void set_bias_pointer(cublasLtMatmulDesc_t desc, const float* bias) {
    const void* p = bias;
    TRT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof(p)));
}

void set_epilogue(cublasLtMatmulDesc_t desc, cublasLtEpilogue_t e) {
    const uint32_t v = static_cast<uint32_t>(e);
    TRT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &v, sizeof(v)));
}

// Builds the descriptors and asks the heuristic for its best algorithm (first use of a key).
MatmulState::Plan build_plan(const CudaCtx& ctx, const LtGemm& g) {
    MatmulState::Plan p;
    // Destroys whatever was created if a check below throws.
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
    make_layout(&p.d, CUDA_R_32F, g.m, g.n, g.ldd, g.batch, g.stride_d);

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

    // Best algorithm for the descriptor as configured now; false if there is none.
    auto query = [&]() -> bool {
        cublasLtMatmulHeuristicResult_t res{};
        int count = 0;
        const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
            ctx.lt, p.desc, p.a, p.b, p.d, p.d, pref, 1, &res, &count);
        if (st == CUBLAS_STATUS_NOT_SUPPORTED) return false;
        if (st != CUBLAS_STATUS_SUCCESS)
            cublas_fail(st, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
        if (count < 1 || res.state != CUBLAS_STATUS_SUCCESS) return false;
        p.algo = res.algo;
        return true;
    };

    bool found = false;
    // The epilogue only for a 16-byte-aligned bias: cuBLASLt's heuristic is documented to read
    // the pointer's alignment, but kernels assuming 16 bytes have been reported to fault on
    // less-aligned biases (odd-C models slice biases at 4-byte offsets from the flat buffer);
    // those take the plain GEMM + bias_rows path.
    if (g.bias && alignment_of(g.bias) >= 16) {
        set_epilogue(p.desc, CUBLASLT_EPILOGUE_BIAS);
        const int32_t bias_type = CUDA_R_32F;
        TRT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
        set_bias_pointer(p.desc, g.bias);
        found = query();
        p.bias_epilogue = found;
        if (!found) {  // plain GEMM + bias_rows for this shape
            set_epilogue(p.desc, CUBLASLT_EPILOGUE_DEFAULT);
            set_bias_pointer(p.desc, nullptr);
        }
    }
    if (!found && !query())
        fail(Status::Device, "cuBLASLt has no algorithm for a ", g.m, "x", g.n, "x", g.k,
             " GEMM (batch ", g.batch, ", operand type ", static_cast<int>(g.ab_type),
             ", workspace ", ws, " bytes)");
    guard.p = nullptr;  // success: the cache owns the descriptors
    return p;
}

// Runs g; returns whether g.bias was applied (by the epilogue).
bool run_lt(const CudaCtx& ctx, const LtGemm& g) {
    TRT_CHECK(ctx.matmul != nullptr && ctx.lt != nullptr, "the CUDA context has no cuBLASLt");
    TRT_CHECK(g.bias == nullptr || g.batch == 1, "bias with a batched GEMM");
    auto& plans = ctx.matmul->plans;
    const MatmulState::Key key = plan_key(g);
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, build_plan(ctx, g)).first;
    const MatmulState::Plan& p = it->second;
    if (p.bias_epilogue) set_bias_pointer(p.desc, g.bias);
    const float alpha = g.alpha, beta = g.beta;
    TRT_CUBLAS_CHECK(cublasLtMatmul(ctx.lt, p.desc, &alpha, g.a, p.a, g.b, p.b, &beta, g.d, p.d,
                                    g.d, p.d, &p.algo, ctx.lt_workspace,
                                    ctx.lt_workspace ? ctx.lt_workspace_bytes : 0, ctx.stream));
    return p.bias_epilogue;
}

// The row-major → column-major swap (file comment): Cᵀ = op(B)ᵀ · op(A)ᵀ.
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
    g.batch = r.batch;
    g.ab_type = operand_type(ctx.precision);
    g.compute = compute_type(ctx.precision);
    g.alpha = r.alpha;
    g.beta = r.beta;
    g.bias = r.bias;  // bias[n] per row-major column = per column-major row of D [m' = n]
    return g;
}

void run_rowmajor(const CudaCtx& ctx, const RmGemm& r) {
    if (!run_lt(ctx, lt_from_rowmajor(ctx, r)) && r.bias)
        bias_rows(ctx, r.c, r.bias, r.m, r.n, r.ldc, /*accumulate=*/true);
}

// bf16/fp16 copy of src[0, n) in the next piece of scratch.
const void* cast_operand(const CudaCtx& ctx, ScratchCursor& cur, const float* src, size_t n) {
    void* dst = cur.take(n * kLowpBytes);
    cast_from_f32(ctx, dst, src, n, ctx.precision);
    return dst;
}

// A weight as a GEMM operand of ctx's precision: the working copy when registered.
const void* weight_operand(const CudaCtx& ctx, ScratchCursor& cur, const float* w, size_t n) {
    if (!ctx.lowp()) return w;
    if (const void* p = ctx.lowp_of(w)) return p;
    return cast_operand(ctx, cur, w, n);
}

const void* activation_operand(const CudaCtx& ctx, ScratchCursor& cur, const float* x,
                               size_t n) {
    return ctx.lowp() ? cast_operand(ctx, cur, x, n) : x;
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

size_t matmul_scratch_bytes(const ModelDims& d, Precision p) {
    // Attention shares the GEMM path and the scratch (cuda_gemm.h).
    size_t need = attention_ctx_scratch_bytes(d, p);
    if (!lowp_precision(p) || d.B <= 0 || d.T <= 0 || d.C <= 0) return need;
    // The GPT's matmuls (K, M); the classifier's Vp is at most V rounded up to 128.
    const size_t N = static_cast<size_t>(d.B) * d.T, C = d.C;
    const size_t Vp = (static_cast<size_t>(std::max(d.V, 0)) + 127) / 128 * 128;
    const size_t shapes[5][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}, {C, Vp}};
    for (const auto& s : shapes) {
        const size_t K = s[0], M = s[1];
        // matmul_backward: dout, inp and (unregistered) weight copies; the forward needs
        // only inp and weight.
        const size_t bwd = align_scratch(N * M * kLowpBytes) + align_scratch(N * K * kLowpBytes) +
                           align_scratch(K * M * kLowpBytes);
        need = std::max(need, bwd);
    }
    return need;
}

// out[N,M] = inp[N,K] · W (+ bias[M]); W [K,M] (InOut) or [M,K] (OutIn).
void matmul_forward(const CudaCtx& ctx, float* out, const float* inp, const float* weight,
                    const float* bias, int N, int K, int M, WeightLayout layout) {
    if (N <= 0 || M <= 0) return;
    if (K <= 0) {  // empty product: out = bias (or 0)
        bias_rows(ctx, out, bias, N, M, M, /*accumulate=*/false);
        return;
    }
    const bool inout = layout == WeightLayout::InOut;
    ScratchCursor cur(ctx, "matmul_forward");
    RmGemm r;
    r.m = N;
    r.n = M;
    r.k = K;
    r.a = activation_operand(ctx, cur, inp, static_cast<size_t>(N) * K);
    r.lda = K;
    r.b = weight_operand(ctx, cur, weight, static_cast<size_t>(K) * M);
    r.trans_b = !inout;
    r.ldb = inout ? M : K;
    r.c = out;
    r.ldc = M;
    r.beta = 0.0f;
    r.bias = bias;
    run_rowmajor(ctx, r);
}

// dinp[N,K] = dout[N,M] · Wᵀ (overwritten; skipped if null); dweight += inpᵀ · dout in W's
// layout; dbias[M] += column sums of dout.
void matmul_backward(const CudaCtx& ctx, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, const float* weight, int N, int K,
                     int M, WeightLayout layout) {
    if (N <= 0 || K <= 0 || M <= 0) {
        if (dinp && N > 0 && K > 0)  // M = 0: the product is empty, dinp = 0
            TRT_CUDA_CHECK(cudaMemsetAsync(dinp, 0, static_cast<size_t>(N) * K * sizeof(float),
                                           ctx.stream));
        return;
    }
    const bool inout = layout == WeightLayout::InOut;
    ScratchCursor cur(ctx, "matmul_backward");
    // dout is an operand of both products: cast once.
    const void* dy = (dinp || dweight)
                         ? activation_operand(ctx, cur, dout, static_cast<size_t>(N) * M)
                         : nullptr;
    if (dinp) {
        // dinp[N,K] = dout[N,M] · W[K,M]ᵀ (InOut) | dout[N,M] · W[M,K] (OutIn)
        RmGemm r;
        r.m = N;
        r.n = K;
        r.k = M;
        r.a = dy;
        r.lda = M;
        r.b = weight_operand(ctx, cur, weight, static_cast<size_t>(K) * M);
        r.trans_b = inout;
        r.ldb = inout ? M : K;
        r.c = dinp;
        r.ldc = K;
        r.beta = 0.0f;
        run_rowmajor(ctx, r);
    }
    if (dweight) {
        const void* x = activation_operand(ctx, cur, inp, static_cast<size_t>(N) * K);
        RmGemm r;
        r.k = N;
        r.trans_a = true;
        r.beta = 1.0f;  // parameter gradients accumulate
        r.c = dweight;
        if (inout) {  // dW[K,M] += inp[N,K]ᵀ · dout[N,M]
            r.m = K;
            r.n = M;
            r.a = x;
            r.lda = K;
            r.b = dy;
            r.ldb = M;
            r.ldc = M;
        } else {  // dW[M,K] += dout[N,M]ᵀ · inp[N,K]
            r.m = M;
            r.n = K;
            r.a = dy;
            r.lda = M;
            r.b = x;
            r.ldb = K;
            r.ldc = K;
        }
        run_rowmajor(ctx, r);
    }
    // After the GEMMs on the same stream, so column_sums may reuse ctx.scratch.
    if (dbias) column_sums(ctx, dbias, dout, N, M);
}

// pre[N,M] = inp[N,K] · W[K,M] + bias[M]; out = gelu(pre).
void matmul_gelu_forward(const CudaCtx& ctx, float* pre, float* out, const float* inp,
                         const float* weight, const float* bias, int N, int K, int M) {
    if (N <= 0 || M <= 0) return;
    matmul_forward(ctx, pre, inp, weight, bias, N, K, M, WeightLayout::InOut);
    gelu_forward(ctx, out, pre, static_cast<size_t>(N) * M);
}

}  // namespace trt::cuda
