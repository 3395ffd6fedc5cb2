// Element types: of tensors in files (safetensors) and of activations in backend memory.
#pragma once
#include <cstddef>

namespace trt {

enum class DType { F32, BF16, F16, F64, I64, I32, I16, I8, U8, BOOL };

// Bytes per element of the floating types an activation buffer can hold (F32, BF16, F16);
// 0 for any other. Inline: backend.h uses it, and the CUDA module links no core library.
inline size_t float_dtype_size(DType d) {
    switch (d) {
        case DType::F32: return 4;
        case DType::BF16:
        case DType::F16: return 2;
        default: return 0;
    }
}

}  // namespace trt
