// The cuBLASLt view of a RowMajorGemm (src/backend/cuda/cuda_gemm_plan.cpp), on the CPU (label
// cpu, registered in tests/gpu/CMakeLists.txt): cuBLASLt builds descriptors and layouts without
// a device, so the one place the column-major view is derived is checked here, attribute by
// attribute, against the table in cuda_matmul.cu's file comment:
//   - the six products of the matmul ops (forward, dinp, dweight × InOut/OutIn): A' = B,
//     B' = A with the same transposes, m' = n, n' = m, every ld unchanged, D = C;
//   - attention's strided-batched product: batch count and strides follow their operand;
//   - types: bf16 operands, a bf16 C, TF32 compute;
//   - epilogues: Bias → BIAS (+ its data type), GeluAux → GELU_AUX(_BIAS) with aux ld and
//     pointer, BiasGradA → BGRADB and BiasGradB → BGRADA (row-major A is cuBLASLt's B);
//   - the plan key tells apart what the heuristic sees (alignments, epilogue, a GELU bias)
//     and ignores what it does not (pointers of the same alignment, fields of an unused
//     epilogue), and the heuristic's alignments come in cuBLASLt's A, B, C, D order.
// Mutations these catch: the swap undone (A' = A), a layout's rows/cols transposed, BGRADA and
// BGRADB exchanged, the aux ld dropped, a key blind to alignment.
#include <gtest/gtest.h>

#include <cublasLt.h>

#include <array>
#include <cstdint>
#include <ostream>

#include "backend/cuda/cuda_gemm_plan.h"

namespace {

using trt::DType;
using trt::Precision;
using trt::cuda::describe_gemm;
using trt::cuda::destroy_plan;
using trt::cuda::gemm_plan_key;
using trt::cuda::GemmEpilogue;
using trt::cuda::GemmPlan;
using trt::cuda::lt_alignments;
using trt::cuda::lt_epilogue;
using trt::cuda::RowMajorGemm;

// Fake device addresses: only their alignment matters here (nothing is dereferenced).
const void* at(uintptr_t address) { return reinterpret_cast<const void*>(address); }
void* at_mut(uintptr_t address) { return reinterpret_cast<void*>(address); }

template <typename T>
T desc_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a) {
    T v{};
    size_t written = 0;
    EXPECT_EQ(cublasLtMatmulDescGetAttribute(d, a, &v, sizeof(v), &written),
              CUBLAS_STATUS_SUCCESS);
    return v;
}

// A column-major layout as cuBLASLt holds it.
struct Layout {
    int64_t type, rows, cols, ld, batch, stride;
    bool operator==(const Layout& o) const {
        return type == o.type && rows == o.rows && cols == o.cols && ld == o.ld &&
               batch == o.batch && stride == o.stride;
    }
};
std::ostream& operator<<(std::ostream& os, const Layout& l) {
    return os << "{type " << l.type << ", " << l.rows << "x" << l.cols << ", ld " << l.ld
              << ", batch " << l.batch << ", stride " << l.stride << "}";
}
Layout layout_of(cublasLtMatrixLayout_t l) {
    uint32_t type = 0;
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0, stride = 0;
    int32_t batch = 0;
    size_t w = 0;
    EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type,
                                               sizeof(type), &w),
              CUBLAS_STATUS_SUCCESS);
    cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof(rows), &w);
    cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols), &w);
    cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof(ld), &w);
    cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                     sizeof(batch), &w);
    cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                     sizeof(stride), &w);
    return {type, static_cast<int64_t>(rows), static_cast<int64_t>(cols), ld, batch, stride};
}

// A described plan, destroyed at scope exit.
struct Described {
    GemmPlan p;
    explicit Described(const RowMajorGemm& g) : p(describe_gemm(g)) {}
    ~Described() { destroy_plan(p); }
};

constexpr int64_t N = 24, K = 40, M = 56;  // rows, in, out
constexpr int64_t F32 = CUDA_R_32F;

// One matmul-op product, built as cuda_matmul.cu builds it (the row-major form of the table);
// ops: "TN" = trans_a, not trans_b.
RowMajorGemm product(int64_t m, int64_t n, int64_t k, const char* ops, int64_t lda, int64_t ldb,
                     int64_t ldc, float beta) {
    RowMajorGemm g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.trans_a = ops[0] == 'T';
    g.a = at(0x10000);
    g.lda = lda;
    g.trans_b = ops[1] == 'T';
    g.b = at(0x20000);
    g.ldb = ldb;
    g.c = at_mut(0x30000);
    g.ldc = ldc;
    g.beta = beta;
    return g;
}
int32_t op(char c) { return c == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N; }
Layout f32(int64_t rows, int64_t cols, int64_t ld) { return {F32, rows, cols, ld, 1, 0}; }

struct TableRow {
    const char* name;
    RowMajorGemm g;
    const char* lt_ops;  // cuBLASLt's op of A' (the weight, or dout/inp) and of B'
    Layout a, b;
};

TEST(GemmPlan, MatmulProductsAreTheTableOfCudaMatmul) {
    const TableRow rows[] = {
        // out[N,M] = inp[N,K] · W[K,M]  →  A' = W (N, ld M), B' = inp (N, ld K)
        {"forward InOut", product(N, M, K, "NN", K, M, M, 0), "NN", f32(M, K, M), f32(K, N, K)},
        // out = inp · W[M,K]ᵀ  →  A' = W (T, ld K)
        {"forward OutIn", product(N, M, K, "NT", K, K, M, 0), "TN", f32(K, M, K), f32(K, N, K)},
        // dinp[N,K] = dout[N,M] · W[K,M]ᵀ  →  A' = W (T, ld M), B' = dout (N, ld M)
        {"dinp InOut", product(N, K, M, "NT", M, M, K, 0), "TN", f32(M, K, M), f32(M, N, M)},
        // dinp = dout · W[M,K]  →  A' = W (N, ld K)
        {"dinp OutIn", product(N, K, M, "NN", M, K, K, 0), "NN", f32(K, M, K), f32(M, N, M)},
        // dW[K,M] += inp[N,K]ᵀ · dout[N,M]  →  A' = dout (N, ld M), B' = inp (T, ld K)
        {"dweight InOut", product(K, M, N, "TN", K, M, M, 1), "NT", f32(M, N, M), f32(K, N, K)},
        // dW[M,K] += dout[N,M]ᵀ · inp[N,K]  →  A' = inp (N, ld K), B' = dout (T, ld M)
        {"dweight OutIn", product(M, K, N, "TN", M, K, K, 1), "NT", f32(K, N, K), f32(M, N, M)},
    };
    for (const TableRow& r : rows) {
        SCOPED_TRACE(r.name);
        Described d(r.g);
        EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_TRANSA), op(r.lt_ops[0]));
        EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_TRANSB), op(r.lt_ops[1]));
        EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
                  CUBLAS_COMPUTE_32F);
        EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE), CUDA_R_32F);
        EXPECT_EQ(desc_attr<uint32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE),
                  CUBLASLT_EPILOGUE_DEFAULT);
        EXPECT_EQ(layout_of(d.p.a), r.a);
        EXPECT_EQ(layout_of(d.p.b), r.b);
        // D = C is the column-major [n, m] (m' = n, n' = m) with C's row stride as its ld.
        EXPECT_EQ(layout_of(d.p.d), f32(r.g.n, r.g.m, r.g.ldc));
    }
}

TEST(GemmPlan, BatchedProductKeepsEachOperandsStride) {
    // Attention's S[G*T,T] = X[G*T,hs] · Y[T,hs]ᵀ per kv head (kernels/attention.cu gemm_xyt).
    const int64_t BKV = 6, G = 2, T = 16, hs = 8;
    RowMajorGemm g = product(G * T, T, hs, "NT", hs, hs, T, 0);
    g.stride_a = G * T * hs;
    g.stride_b = T * hs;
    g.stride_c = G * T * T;
    g.batch = static_cast<int>(BKV);
    Described d(g);
    EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_TRANSA), CUBLAS_OP_T);
    EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_TRANSB), CUBLAS_OP_N);
    EXPECT_EQ(layout_of(d.p.a), (Layout{F32, hs, T, hs, BKV, T * hs}));          // Y
    EXPECT_EQ(layout_of(d.p.b), (Layout{F32, hs, G * T, hs, BKV, G * T * hs}));  // X
    EXPECT_EQ(layout_of(d.p.d), (Layout{F32, T, G * T, T, BKV, G * T * T}));
}

TEST(GemmPlan, PrecisionSetsOperandAndComputeTypes) {
    RowMajorGemm g = product(N, M, K, "NN", K, M, M, 0);
    g.precision = Precision::Bf16;
    g.c_type = DType::BF16;
    {
        Described d(g);
        EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
                  CUBLAS_COMPUTE_32F);
        EXPECT_EQ(layout_of(d.p.a).type, CUDA_R_16BF);
        EXPECT_EQ(layout_of(d.p.b).type, CUDA_R_16BF);
        EXPECT_EQ(layout_of(d.p.d).type, CUDA_R_16BF);
    }
    g.precision = Precision::Fp16;
    g.c_type = DType::F32;
    {
        Described d(g);
        EXPECT_EQ(layout_of(d.p.a).type, CUDA_R_16F);
        EXPECT_EQ(layout_of(d.p.d).type, CUDA_R_32F);
    }
    g.precision = Precision::Tf32;
    {
        Described d(g);
        EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
                  CUBLAS_COMPUTE_32F_FAST_TF32);
        EXPECT_EQ(layout_of(d.p.a).type, CUDA_R_32F);
    }
}

TEST(GemmPlan, EpiloguesInCublasLtTerms) {
    const RowMajorGemm fwd = product(N, M, K, "NN", K, M, M, 0);
    {  // Bias: a bf16 bias with a bf16 C
        RowMajorGemm g = fwd;
        g.precision = Precision::Bf16;
        g.c_type = DType::BF16;
        g.epilogue = GemmEpilogue::Bias;
        g.bias = at(0x40000);
        g.bias_type = DType::BF16;
        Described d(g);
        EXPECT_EQ(desc_attr<uint32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE),
                  CUBLASLT_EPILOGUE_BIAS);
        EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE),
                  CUDA_R_16BF);
        EXPECT_EQ(desc_attr<const void*>(d.p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER), g.bias);
    }
    for (const bool with_bias : {true, false}) {  // GeluAux: aux = pre, ld M
        SCOPED_TRACE(with_bias ? "gelu with a bias" : "gelu without a bias");
        RowMajorGemm g = fwd;
        g.epilogue = GemmEpilogue::GeluAux;
        g.bias = with_bias ? at(0x40000) : nullptr;
        g.aux = at_mut(0x50000);
        g.aux_ld = M;
        Described d(g);
        EXPECT_EQ(desc_attr<uint32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE),
                  with_bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX);
        EXPECT_EQ(desc_attr<int64_t>(d.p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD), M);
        EXPECT_EQ(desc_attr<const void*>(d.p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER),
                  g.aux);
        if (with_bias) {
            EXPECT_EQ(desc_attr<int32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE),
                      CUDA_R_32F);
        }
    }
    // dweight's bias gradient: row-major A is cuBLASLt's B' and B its A'.
    const struct {
        GemmEpilogue e;
        cublasLtEpilogue_t lt;
    } grads[] = {{GemmEpilogue::BiasGradA, CUBLASLT_EPILOGUE_BGRADB},
                 {GemmEpilogue::BiasGradB, CUBLASLT_EPILOGUE_BGRADA}};
    for (const auto& c : grads) {
        RowMajorGemm g = product(K, M, N, "TN", K, M, M, 1);
        g.epilogue = c.e;
        g.bgrad = reinterpret_cast<float*>(at_mut(0x60000));
        Described d(g);
        EXPECT_EQ(lt_epilogue(g), c.lt);
        EXPECT_EQ(desc_attr<uint32_t>(d.p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE),
                  static_cast<uint32_t>(c.lt));
        EXPECT_EQ(desc_attr<const void*>(d.p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER),
                  static_cast<const void*>(g.bgrad));
    }
}

TEST(GemmPlan, KeySeesWhatTheHeuristicSees) {
    const RowMajorGemm g = product(N, M, K, "NN", K, M, M, 0);
    // Pointers of the same alignment share a plan; a less aligned one does not.
    RowMajorGemm moved = g;
    moved.a = at(0x90000);
    EXPECT_EQ(gemm_plan_key(moved), gemm_plan_key(g));
    RowMajorGemm odd = g;
    odd.a = at(0x10004);
    EXPECT_NE(gemm_plan_key(odd), gemm_plan_key(g));
    // An odd ld lowers the alignment too: ld 41 fp32 rows start 4-byte aligned.
    RowMajorGemm odd_ld = g;
    odd_ld.lda = K + 1;
    EXPECT_EQ(lt_alignments(odd_ld)[1], 4u);
    // Fields of an epilogue the GEMM does not run are not part of its problem.
    RowMajorGemm stale = g;
    stale.bias = at(0x40004);
    stale.aux = at_mut(0x50004);
    stale.aux_ld = 3;
    stale.bgrad = reinterpret_cast<float*>(at_mut(0x60004));
    EXPECT_EQ(gemm_plan_key(stale), gemm_plan_key(g));
    // A GELU with and without a bias are two epilogues.
    RowMajorGemm gelu = g;
    gelu.epilogue = GemmEpilogue::GeluAux;
    gelu.aux = at_mut(0x50000);
    gelu.aux_ld = M;
    RowMajorGemm gelu_bias = gelu;
    gelu_bias.bias = at(0x40000);
    EXPECT_NE(gemm_plan_key(gelu), gemm_plan_key(gelu_bias));
    // beta == 0 (C not read) and beta != 0 are different problems.
    RowMajorGemm acc = g;
    acc.beta = 1.0f;
    EXPECT_NE(gemm_plan_key(acc), gemm_plan_key(g));
    // The heuristic's alignments in cuBLASLt's order: A' = row-major B, B' = A, then C, D.
    RowMajorGemm mixed = g;
    mixed.a = at(0x10008);
    mixed.b = at(0x20010);
    mixed.c = at_mut(0x30020);
    const std::array<uint32_t, 4> al = lt_alignments(mixed);
    EXPECT_EQ(al[0], 16u);
    EXPECT_EQ(al[1], 8u);
    EXPECT_EQ(al[2], 32u);
    EXPECT_EQ(al[3], 32u);
}

}  // namespace

namespace {

// The profile's words for a plan (Backend::op_choices): the key in row-major terms, and an
// algorithm's configuration as cuBLASLt holds it.
TEST(GemmPlan, ProfileDescribesTheKeyAndTheAlgorithm) {
    RowMajorGemm g = product(N, M, K, "NT", K, K, M, 0);
    g.precision = Precision::Bf16;
    g.c_type = DType::BF16;
    EXPECT_EQ(trt::cuda::describe_key(gemm_plan_key(g)), "24x56x40 a·bᵀ bf16 -> bf16");
    RowMajorGemm dw = product(K, M, N, "TN", K, M, M, 1);
    dw.precision = Precision::Tf32;
    EXPECT_EQ(trt::cuda::describe_key(gemm_plan_key(dw)), "40x56x24 aᵀ·b fp32 -> fp32 tf32 +=");
    RowMajorGemm batched = product(32, 16, 8, "NT", 8, 8, 16, 0);
    batched.batch = 6;
    batched.stride_a = 256;
    batched.stride_b = 128;
    batched.stride_c = 512;
    EXPECT_EQ(trt::cuda::describe_key(gemm_plan_key(batched)), "32x16x8 batch 6 a·bᵀ fp32 -> fp32");

    // An algorithm's configuration, written and read back through cuBLASLt's own accessors
    // (the id is read-only, set by cublasLtMatmulAlgoInit: 0 in a zeroed algorithm).
    cublasLtMatmulAlgo_t algo{};
    const uint32_t tile = CUBLASLT_MATMUL_TILE_128x256, stages = 8, splitk = 2;
    ASSERT_EQ(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, 4),
              CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(
        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, 4),
        CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(
        cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, 4),
        CUBLAS_STATUS_SUCCESS);
    const std::string d = trt::cuda::describe_algo(algo);
    EXPECT_EQ(d.rfind("id 0 tile 23 stages 8 split-k 2 reduction ", 0), 0u) << d;
    EXPECT_NE(d.find(" swizzle "), std::string::npos) << d;
    EXPECT_NE(d.find(" custom "), std::string::npos) << d;
}

}  // namespace
