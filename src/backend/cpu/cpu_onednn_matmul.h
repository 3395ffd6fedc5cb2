// The fp32 linear-layer matmuls through oneDNN (accel.cpu_matmul): the contracts of
// cpu_ops.h's matmul_forward / matmul_gelu_forward / matmul_backward, with the products run
// by an OnednnGemm (cpu_onednn_gemm.h) instead of OpenBLAS. Biases, GELU and the bias
// gradient are the cpu_ops.h kernels, so only the order of the fp32 sums differs.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_onednn_gemm.h"

namespace trt::cpu {

void onednn_matmul_forward(OnednnGemm& gemm, float* out, const float* inp, const float* weight,
                           const float* bias, int N, int K, int M, WeightLayout layout,
                           int threads);
void onednn_matmul_gelu_forward(OnednnGemm& gemm, float* pre, float* out, const float* inp,
                                const float* weight, const float* bias, int N, int K, int M,
                                int threads);
void onednn_matmul_backward(OnednnGemm& gemm, float* dinp, float* dweight, float* dbias,
                            const float* dout, const float* inp, const float* weight, int N,
                            int K, int M, WeightLayout layout, int threads);

// The block shapes `gemm` has made (a linear layer's products, attention's per-head ones),
// each with oneDNN's implementation: the CPU's entries of Backend::op_choices().
inline void append_op_choices(const OnednnGemm& gemm, std::vector<OpChoice>& out) {
    for (const OnednnGemm::MadeShape& m : gemm.made_shapes())
        out.push_back({"oneDNN matmul block", describe(m.shape), m.implementation,
                       static_cast<int64_t>(m.scratchpad_bytes)});
}

}  // namespace trt::cpu
