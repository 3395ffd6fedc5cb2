// GELU, tanh approximation, in the form of cpu_gelu.h: GELU(x) = x / (1 + e^{-2u}),
// u = sqrt(2/pi)(x + 0.044715x³). The exp argument is clamped to [-87, 88] as the CPU's
// fast_expf does: e stays finite, so the gradient never forms inf * 0. (Ternaries, not
// fminf/fmaxf, so a NaN input stays NaN as on the CPU.) Shared by elementwise.cu and the
// matmul's low-precision GELU fallback (cuda_matmul.cu), so both compute the same bits.
#pragma once

namespace trt::cuda {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

__device__ __forceinline__ float clamped_exp(float a) {
    a = a < -87.0f ? -87.0f : a;
    a = a > 88.0f ? 88.0f : a;
    return expf(a);
}

__device__ __forceinline__ float gelu_value(float x) {
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    return x / (1.0f + clamped_exp(-2.0f * u));
}

// s + x·2s(1−s)·du/dx with s = 1/(1+e), s(1−s) = e·s² (no cancellation in 1−s).
__device__ __forceinline__ float gelu_grad(float x) {
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    const float e = clamped_exp(-2.0f * u);
    const float s = 1.0f / (1.0f + e);
    const float du = kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    return s + x * 2.0f * (e * s * s) * du;
}

}  // namespace trt::cuda
