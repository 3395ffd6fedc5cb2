// The byte sizes of cuDNN attention's buffers (backend/cuda/cudnn_attention.cpp), as plain
// arithmetic with no CUDA in it, so that the core's memory estimate (trainrt info,
// trainrt_config_model_info) sizes a CUDA run's attention as the CUDA backend will, without
// the CUDA module. One definition for both: the estimate cannot drift from the allocation.
#pragma once
#include <cstddef>

namespace trt::cudnn_sizes {

constexpr size_t kAlign = 256;     // every buffer the path carves starts 256-byte aligned
constexpr size_t kLowpBytes = 2;   // bf16 and fp16
constexpr size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// The buffers one call of B sequences of T positions touches.
struct Sizes {
    size_t qkv_lowp;  // [B,T,3C] bf16/fp16
    size_t out_lowp;  // [B,T,C] bf16/fp16 (O in saved, dO in the op scratch)
    size_t rows;      // [B,NH,T] fp32 (Stats, rowsum)
};

inline Sizes sizes_of(int B, int T, int C, int NH) {
    const size_t bt = static_cast<size_t>(B) * static_cast<size_t>(T);
    return Sizes{bt * 3 * static_cast<size_t>(C) * kLowpBytes,
                 bt * static_cast<size_t>(C) * kLowpBytes,
                 bt * static_cast<size_t>(NH) * sizeof(float)};
}

// What the backward needs from the forward: O (low precision) and the softmax Stats.
inline size_t saved_floats(int B, int T, int C, int NH) {
    const Sizes z = sizes_of(B, T, C, NH);
    return (align_up(z.out_lowp) + align_up(z.rows)) / sizeof(float);
}

// The backward's own scratch (the rowsum).
inline size_t scratch_floats(int B, int T, int C, int NH) {
    return align_up(sizes_of(B, T, C, NH).rows) / sizeof(float);
}

// The op scratch a plan stages through, without cuDNN's engine workspace (known only once a
// plan is built on a GPU): the backward's qkv, dO and dqkv copies; the forward needs less.
inline size_t op_scratch_bytes_without_workspace(int B, int T, int C, int NH) {
    const Sizes z = sizes_of(B, T, C, NH);
    return 2 * align_up(z.qkv_lowp) + align_up(z.out_lowp);
}

}  // namespace trt::cudnn_sizes
