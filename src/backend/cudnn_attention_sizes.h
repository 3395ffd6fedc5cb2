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

// The buffers one call of B sequences of T positions touches. NKV: key/value heads (0: NH).
struct Sizes {
    size_t qkv_lowp;  // [B,T,(NH+2NKV)hs] bf16/fp16 ([B,T,3C] for multi-head attention)
    size_t out_lowp;  // [B,T,C] bf16/fp16 (O in saved, dO in the op scratch)
    size_t rows;      // [B,NH,T] fp32 (Stats, rowsum)
    size_t fullhead;  // grouped-query backward: dK or dV per query head, [B,NH,T,hs] fp32
};

// The width of a qkv row: NH query heads and 2 NKV key/value heads of C / NH.
inline size_t qkv_width(int C, int NH, int NKV) {
    const size_t hs = NH > 0 ? static_cast<size_t>(C / NH) : 0;
    const size_t kv = static_cast<size_t>(NKV > 0 ? NKV : NH);
    return static_cast<size_t>(C) + 2 * kv * hs;
}

inline Sizes sizes_of(int B, int T, int C, int NH, int NKV = 0) {
    const size_t bt = static_cast<size_t>(B) * static_cast<size_t>(T);
    const bool grouped = NKV > 0 && NKV != NH;
    return Sizes{bt * qkv_width(C, NH, NKV) * kLowpBytes,
                 bt * static_cast<size_t>(C) * kLowpBytes,
                 bt * static_cast<size_t>(NH) * sizeof(float),
                 grouped ? bt * static_cast<size_t>(C) * sizeof(float) : 0};
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
inline size_t op_scratch_bytes_without_workspace(int B, int T, int C, int NH, int NKV = 0) {
    const Sizes z = sizes_of(B, T, C, NH, NKV);
    return 2 * align_up(z.qkv_lowp) + align_up(z.out_lowp) + 2 * align_up(z.fullhead);
}

}  // namespace trt::cudnn_sizes
