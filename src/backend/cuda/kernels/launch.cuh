// Launch geometry shared by the CUDA kernel files: the block count of a grid-stride kernel
// and the 16-byte alignment test of the vectorised (float4 / 8 x 16-bit) paths.
#pragma once
#include <cstdint>

namespace trt::cuda {

// Blocks for `units` work items at `threads` per block: at least 1, at most max_blocks (the
// kernel strides over the rest). Elementwise kernels give the same bits for any grid.
inline int grid_blocks(int64_t units, int threads, int64_t max_blocks) {
    int64_t b = (units + threads - 1) / threads;
    if (b > max_blocks) b = max_blocks;
    return b < 1 ? 1 : static_cast<int>(b);
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace trt::cuda
