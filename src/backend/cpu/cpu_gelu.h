// GELU (tanh approximation) per element, shared by the standalone GELU kernels
// (cpu_elementwise.cpp) and the fused matmul epilogue (cpu_matmul.cpp), so both give the
// same bits. Branch-free: loops over them vectorise.
#pragma once
#include "backend/cpu/cpu_common.h"

namespace trt::cpu {

inline constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

// GELU(x) = 0.5x(1 + tanh u), u = sqrt(2/pi)(x + 0.044715x³). Since 0.5(1 + tanh u) =
// sigmoid(2u), GELU(x) = x / (1 + e^{-2u}): one vectorisable exp, stable for large |u|.
inline float gelu_value(float x, ExpLimits lim) {
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    return x / (1.0f + fast_expf(-2.0f * u, lim));
}

// d GELU/dx = s + x·2s(1−s)·du/dx with s = sigmoid(2u) = 1/(1+e), e = e^{-2u};
// s(1−s) = e/(1+e)² avoids the cancellation in 1−s.
inline float gelu_grad(float x, ExpLimits lim) {
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    const float e = fast_expf(-2.0f * u, lim);
    const float s = 1.0f / (1.0f + e);
    const float du = kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    return s + x * 2.0f * (e * s * s) * du;
}

}  // namespace trt::cpu
