// Private to the CUDA backend: the cuBLASLt plan of a RowMajorGemm (cuda_gemm.h), cached per
// key in MatmulState by run_gemm. Exposed for run_gemm's own file and for its host-only test
// (tests/unit/cuda/gemm_plan_test.cpp), which checks the descriptors without a device.
#pragma once
#include <cublasLt.h>

#include <array>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_gemm.h"

namespace trt::cuda {

// cuBLASLt's descriptor and layouts of one GEMM, and the algorithm the heuristic chose.
struct GemmPlan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // C uses d's layout
    cublasLtMatmulAlgo_t algo{};
    size_t workspace = 0;   // bytes the algorithm uses of the workspace (the heuristic's)
    bool rejected = false;  // the key's epilogue is unusable here: the caller falls back
    bool ran = false;       // a cublasLtMatmul with this plan has succeeded
};
void destroy_plan(GemmPlan& p) noexcept;  // back to GemmPlan{}

// Everything cublasLtMatmulAlgoGetHeuristic depends on: shape, transposes, lds, batch and
// strides, types, compute type, epilogue, and the alignment of every operand.
using GemmPlanKey = std::array<int64_t, 24>;
GemmPlanKey gemm_plan_key(const RowMajorGemm& g);

// cuBLASLt's terms for g: its epilogue, and the minimum alignments (bytes) the heuristic is
// told for its A, B, C and D (A = g's B, B = g's A: the row-major swap).
cublasLtEpilogue_t lt_epilogue(const RowMajorGemm& g);
std::array<uint32_t, 4> lt_alignments(const RowMajorGemm& g);

// g's descriptor and layouts, cuBLASLt's column-major view of it (the one place it is derived);
// no algorithm yet. Needs no device. Throws on a cuBLASLt error, leaking nothing.
GemmPlan describe_gemm(const RowMajorGemm& g);

// "id 21 tile 23 stages 8 split-k 1 reduction 0 swizzle 1 custom 0": an algorithm's
// configuration (cublasLtMatmulAlgoConfigGetAttribute; tile and stages are cublasLt.h's
// cublasLtMatmulTile_t / cublasLtMatmulStages_t values). Needs no device.
std::string describe_algo(const cublasLtMatmulAlgo_t& algo);
// "768x2304x768 a·bᵀ bf16 -> bf16 +bias": a plan key's row-major m x n x k (batch), the
// transposes, operand and output types, tf32, the epilogue, " +=" when C is accumulated.
std::string describe_key(const GemmPlanKey& key);

}  // namespace trt::cuda
