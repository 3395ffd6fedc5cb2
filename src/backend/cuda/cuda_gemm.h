// Private to the CUDA backend: the one description of a GEMM (RowMajorGemm), run on cuBLASLt by
// cuda_gemm_plan.cpp, and the general GEMM of cuda_matmul.cu for other launchers (attention's
// batched products). Same rules as cuda_ops.h: enqueue on ctx.stream only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_ops.h"

namespace trt::cuda {

// The epilogue of a GEMM, in row-major terms (what the matmul ops ask for; cuda_gemm_plan.cpp
// maps it onto cuBLASLt's). An epilogue only with batch == 1.
enum class GemmEpilogue {
    None,
    Bias,       // C[m, n] += bias[n]
    GeluAux,    // aux[m, n] = product (+ bias[n] if bias); C = gelu(aux)
    BiasGradA,  // bgrad[m] = sum over k of op(A)[m, k]
    BiasGradB,  // bgrad[n] = sum over k of op(B)[k, n]
};

// One GEMM: the only description of a product, row-major as the ops think. Strided-batched:
//   for i in [0, batch):  C_i[m,n] = alpha · op(A_i)[m,k] · op(B_i)[k,n] + beta · C_i[m,n]
// then the epilogue. A_i = a + i*stride_a is stored [m,k] (trans_a = false) or [k,m]
// (trans_a = true) with row stride lda (elements); B_i likewise [k,n] or [n,k] with row
// stride ldb; C_i = c + i*stride_c is [m,n] with row stride ldc. Strides are ignored when
// batch == 1. beta == 0: C is not read. C must not overlap A or B. cuBLASLt's column-major
// view of it is derived where its descriptors are built (cuda_gemm_plan.cpp), nowhere else.
struct RowMajorGemm {
    int64_t m = 0, n = 0, k = 0;
    bool trans_a = false, trans_b = false;
    const void* a = nullptr;
    int64_t lda = 0, stride_a = 0;
    const void* b = nullptr;
    int64_t ldb = 0, stride_b = 0;
    void* c = nullptr;
    int64_t ldc = 0, stride_c = 0;
    int batch = 1;
    float alpha = 1.0f, beta = 0.0f;
    // A's and B's element type and the compute type: Fp32 (fp32), Tf32 (fp32 operands, TF32
    // compute), Bf16/Fp16 (2-byte operands, fp32 compute). Never Auto.
    Precision precision = Precision::Fp32;
    DType c_type = DType::F32;  // C's (and aux's): fp32, or a forward / dinp product's BF16/F16
    GemmEpilogue epilogue = GemmEpilogue::None;
    const void* bias = nullptr;    // Bias, GeluAux (optional): [n] of bias_type
    DType bias_type = DType::F32;  // fp32, or c_type's low precision (PRECISION.md)
    void* aux = nullptr;           // GeluAux: [m, n] of c_type, row stride aux_ld
    int64_t aux_ld = 0;
    float* bgrad = nullptr;        // BiasGradA: [m]; BiasGradB: [n] (written, not accumulated)
};

inline bool lowp_precision(Precision p) { return p == Precision::Bf16 || p == Precision::Fp16; }

// Runs g on ctx.stream through the plan cache ctx.matmul (cuda_gemm_plan.cpp); false when g's
// epilogue cannot be used at this shape (nothing was enqueued: the caller runs its fallback).
// A plain GEMM always runs (or throws).
bool run_gemm(const CudaCtx& ctx, const RowMajorGemm& g);

// The general GEMM for other launchers (attention's batched products): g with fp32 operands
// (g.precision Fp32), C fp32, no epilogue. Precision from ctx: Fp32 = fp32 compute; Tf32 =
// CUBLAS_COMPUTE_32F_FAST_TF32; Bf16/Fp16 = A and B cast into ctx.scratch (the whole span each
// one covers, so lda/ldb/strides keep their meaning), C fp32, fp32 accumulation. Uses
// gemm_scratch_bytes(g, ctx.precision) bytes of ctx.scratch (Error(Internal) if
// ctx.scratch_bytes is smaller). Algorithms are chosen once per shape and cached in ctx.matmul
// (deterministic, see cuda_gemm_plan.cpp).
void gemm_f32(const CudaCtx& ctx, const RowMajorGemm& g);

// Bytes of ctx.scratch gemm_f32(g) needs at precision p: 0 for Fp32/Tf32; the 256-byte
// aligned bf16/fp16 copies of A's and B's spans otherwise. Only the shape fields of g count.
size_t gemm_scratch_bytes(const RowMajorGemm& g, Precision p);

// Bytes of ctx.scratch attention_forward/backward need (kernels/attention.cu): the forward's
// fp32 q [B,NH,T,hs] and k, v [B,NKV,T,hs] (NKV from d, cuda_ops.h) plus the GEMM casts
// above. matmul_scratch_bytes includes it, since attention and the matmuls share the GEMM path
// and the backend sizes the scratch per family.
size_t attention_ctx_scratch_bytes(const ModelDims& d, Precision p);

// Offsets inside ctx.scratch (and other fp32 scratch) are kept 256-byte aligned, which is the
// alignment cuBLASLt's fastest kernels want and ctx.scratch is given with.
inline constexpr size_t kScratchAlign = 256;
inline constexpr size_t align_scratch(size_t bytes) {
    return (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

// Hands out consecutive aligned pieces of ctx.scratch for one launcher call; throws
// Error(Internal) naming `who` when the backend reserved too little (a sizing bug, never a
// memory overrun).
class ScratchCursor {
public:
    ScratchCursor(const CudaCtx& ctx, const char* who)
        : base_(static_cast<char*>(ctx.scratch)), cap_(ctx.scratch_bytes), who_(who) {}
    void* take(size_t bytes);
    float* take_floats(size_t n) { return static_cast<float*>(take(n * sizeof(float))); }
    // ctx with its scratch narrowed to what is left, for a callee that uses ctx.scratch too.
    CudaCtx rest(const CudaCtx& ctx) const;

private:
    char* base_;
    size_t cap_;
    size_t used_ = 0;
    const char* who_;
};

}  // namespace trt::cuda
