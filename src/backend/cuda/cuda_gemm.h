// Private to the CUDA backend: the general GEMM of cuda_matmul.cu for other launchers
// (attention's batched products). Same rules as cuda_ops.h: enqueue on ctx.stream only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_ops.h"

namespace trt::cuda {

// Row-major strided-batched GEMM on fp32 operands in device memory:
//   for i in [0, batch):  C_i[m,n] = alpha · op(A_i)[m,k] · op(B_i)[k,n] + beta · C_i[m,n]
// A_i = a + i*stride_a is stored [m,k] (trans_a = false) or [k,m] (trans_a = true) with row
// stride lda (elements); B_i likewise [k,n] or [n,k] with row stride ldb; C_i = c + i*stride_c
// is [m,n] with row stride ldc. Strides are ignored when batch == 1. beta == 0: C is not read.
// C must not overlap A or B.
struct RowMajorGemm {
    int m = 0, n = 0, k = 0;
    bool trans_a = false, trans_b = false;
    const float* a = nullptr;
    int64_t lda = 0, stride_a = 0;
    const float* b = nullptr;
    int64_t ldb = 0, stride_b = 0;
    float* c = nullptr;
    int64_t ldc = 0, stride_c = 0;
    int batch = 1;
    float alpha = 1.0f, beta = 0.0f;
};

// Precision from ctx: Fp32 = fp32 compute; Tf32 = CUBLAS_COMPUTE_32F_FAST_TF32; Bf16/Fp16 =
// A and B cast into ctx.scratch (the whole span each one covers, so lda/ldb/strides keep
// their meaning), C fp32, fp32 accumulation. Uses gemm_scratch_bytes(g, ctx.precision) bytes
// of ctx.scratch (Error(Internal) if ctx.scratch_bytes is smaller). Algorithms are chosen once
// per shape and cached in ctx.matmul (deterministic, see cuda_matmul.cu).
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
