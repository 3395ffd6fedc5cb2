// The defaults of the ops backend_ops.def enters as TRT_OP_COMPOSED: each built from other ops
// of the interface, so it runs, with their numerics, on every backend that has those; a backend
// with a faster kernel for it (a fusion) overrides it. The op-case table checks the op the same
// way whichever runs. Inline, like the rest of Backend: the CUDA module implements Backend and
// must not link the core library. Included at the end of backend.h.
//
// Why an op starts composed: a fusion the model needs everywhere at once, whose kernel each
// backend writes when it pays (and, on a GPU, when a loan has verified it: docs/GPU_CHECK.md);
// until then the backend runs the composition it already runs today.
#pragma once
#include "backend/backend.h"

namespace trt {

// The heads copied out compact and kept (pre), normalised as rows into scratch, and their
// columns of qkv replaced: x - x + y, exactly y in every dtype.
inline void Backend::qk_norm_forward(Act qkv, Act pre, float* rstd, const float* wq,
                                     const float* wk, Act scratch, float eps,
                                     const AttentionShape& a) {
    const int N = a.B * a.T, W = a.qkv_width(), QW = a.NH * a.hs, KW = a.NKV * a.hs;
    const size_t q_size = static_cast<size_t>(N) * QW;
    const Act k_pre = pre.at(q_size), q_n = scratch, k_n = scratch.at(q_size);
    copy_columns(pre, qkv, 1.0f, N, W, 0, QW);
    copy_columns(k_pre, qkv, 1.0f, N, W, QW, KW);
    rmsnorm_forward(q_n, rstd, pre, wq, N * a.NH, a.hs, eps);
    rmsnorm_forward(k_n, rstd + static_cast<size_t>(N) * a.NH, k_pre, wk, N * a.NKV, a.hs, eps);
    add_columns(qkv, pre, -1.0f, N, W, 0, QW);
    add_columns(qkv, q_n, 1.0f, N, W, 0, QW);
    add_columns(qkv, k_pre, -1.0f, N, W, QW, KW);
    add_columns(qkv, k_n, 1.0f, N, W, QW, KW);
}

}  // namespace trt
