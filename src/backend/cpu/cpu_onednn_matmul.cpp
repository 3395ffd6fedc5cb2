#include "backend/cpu/cpu_onednn_matmul.h"

#include "backend/cpu/cpu_ops.h"

namespace trt::cpu {

// Empty products (N, K or M zero) keep the OpenBLAS kernels' handling of them.
static bool empty(int N, int K, int M) { return N <= 0 || K <= 0 || M <= 0; }

void onednn_matmul_forward(OnednnGemm& gemm, float* out, const float* inp, const float* weight,
                           const float* bias, int N, int K, int M, WeightLayout layout,
                           int threads) {
    if (empty(N, K, M) || N == 1)
        return matmul_forward(out, inp, weight, bias, N, K, M, layout, threads);
    GemmShape s = linear_forward(DType::F32, N, K, M, layout == WeightLayout::OutIn);
    s.bias = bias != nullptr;
    gemm.run(s, inp, weight, out, bias, threads);  // out = inp · W + bias
}

void onednn_matmul_gelu_forward(OnednnGemm& gemm, float* pre, float* out, const float* inp,
                                const float* weight, const float* bias, int N, int K, int M,
                                int threads) {
    if (empty(N, K, M))
        return matmul_gelu_forward(pre, out, inp, weight, bias, N, K, M, threads);
    onednn_matmul_forward(gemm, pre, inp, weight, bias, N, K, M, WeightLayout::InOut, threads);
    gelu_forward(out, pre, (size_t)N * M, threads);  // the same gelu_value as the fused pass
}

void onednn_matmul_backward(OnednnGemm& gemm, float* dinp, float* dweight, float* dbias,
                            const float* dout, const float* inp, const float* weight, int N,
                            int K, int M, WeightLayout layout, int threads) {
    if (empty(N, K, M))
        return matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, K, M, layout,
                               threads);
    const bool outin = layout == WeightLayout::OutIn;
    if (dinp) gemm.run(linear_dinp(DType::F32, N, K, M, outin), dout, weight, dinp, nullptr,
                       threads);
    if (dweight) {
        const auto ab = weight_grad_operands(inp, dout, outin);
        gemm.run(linear_dweight(DType::F32, N, K, M, outin), ab.first, ab.second, dweight,
                 nullptr, threads);
    }
    // The bias gradient alone: OpenBLAS's kernel with no product to do.
    if (dbias)
        matmul_backward(nullptr, nullptr, dbias, dout, inp, weight, N, K, M, layout, threads);
}

}  // namespace trt::cpu
