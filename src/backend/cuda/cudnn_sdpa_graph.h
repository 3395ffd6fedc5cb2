// The operation graphs of cuDNN's fused causal attention (SDPA), as backend descriptors
// (cudnn_graph.h): what cudnn_attention.cpp plans and runs. Host-only: no CUDA runtime, so a
// CPU test can build them and have cuDNN check them (tests/unit/cuda/cudnn_sdpa_graph_test.cpp).
//
// They are the classic SDPA graphs that cuDNN's fused-attention engines recognise (the same
// decomposition cudnn_frontend lowers its SDPA nodes to on 9.x):
//   forward   S = Q·Kᵀ · scale -> causal mask (-inf where key > query) -> softmax as
//             max / exp / sum, with Stats = max + log(sum) written -> O = P·V
//   backward  rowsum(dO∘O); P = exp(Q·Kᵀ · scale - Stats) under the same mask; dV = Pᵀ·dO;
//             dS = P∘(dO·Vᵀ - rowsum) · scale; dK = dSᵀ·Q; dQ = dS·K
// The backward writes dQ straight from its matmul: no fp32 accumulator, which the engines
// would fill with atomics (this is cudnn_frontend's "deterministic algorithm" form).
//
// Layouts: Q, K, V (and dQ, dK, dV) are [B,NH,T,hs] views of a bf16/fp16 [B,T,3C] buffer, head
// h of Q at columns [h·hs, (h+1)·hs), of K at C + ..., of V at 2C + ...: strides
// [T·3C, hs, 3C, 1] (Kᵀ, Vᵀ swap the last two). O and dO are [B,NH,T,hs] views of [B,T,C]:
// strides [T·C, hs, C, 1]. Stats and rowsum are packed fp32 [B,NH,T,1].
#pragma once
#include <cudnn_graph.h>

#include <cstdint>
#include <string>

#include "backend/cuda/cudnn_graph.h"

namespace trt::cuda::sdpa {

// Variant-pack ids of the tensors bound to memory (virtual tensors are numbered by OpGraph).
enum Uid : int64_t {
    kQ = 1,      // [B,NH,T,hs] view of qkv
    kK,          // Kᵀ [B,NH,hs,T] view of qkv (+C)
    kV,          // V (forward) / Vᵀ (backward) view of qkv (+2C)
    kO,          // [B,NH,T,hs] view of [B,T,C]
    kStats,      // [B,NH,T,1] fp32: max + log(sum) of each softmax row
    kScale,      // by value, fp32: 1/sqrt(hs)
    kNegInf,     // by value, fp32: -inf, the masked score
    kDO,         // like kO
    kDQ,         // like kQ, in dqkv
    kDK,         // [B,NH,T,hs] view of dqkv (+C)
    kDV,         // [B,NH,T,hs] view of dqkv (+2C)
    kRowSum,     // [B,NH,T,1] fp32: sum over hs of dO∘O
    kOne,        // by value, fp32: 1
    kSeqLenQ,    // [B,1,1,1] int32, all T (padding workaround only)
    kSeqLenKV,   // same
    kDKFull,     // grouped-query backward: dK per query head [B,NH,T,hs] fp32, packed
    kDVFull,     // (scratch), summed over each group into dK, dV
    kWindow,     // by value, fp32: a sliding window's length W (Geometry::window > 0 only)
};

// The fused engines on sm_80+ take head sizes that are multiples of 8, up to 128 in both
// directions (Hopper's go to 256, Ampere's backward does not).
constexpr int kMaxHeadSize = 128;

// Why the fused engines cannot take this shape ("" when they can, as far as the shape goes).
std::string shape_problem(int B, int T, int C, int NH);

// cuDNN up to 9.15 computes a wrong backward when the key length is not a multiple of 128
// unless the graph carries a padding mask; cudnn_frontend works around it with a padding mask
// whose lengths are all the full T, and so does this code.
constexpr long kUnpaddedBackwardFixedIn = 91600;
inline bool backward_needs_padding_mask(long cudnn_version, int T) {
    return cudnn_version < kUnpaddedBackwardFixedIn && T % 128 != 0;
}

// The [B,NH,T,*] geometry of one shape as 4-D dims and strides (C = NH·hs). Grouped-query
// attention: K and V have HK = NKV heads (NKV divides NH; query head h reads kv head
// h / (NH/NKV)), rows of qkv are W = (NH + 2·NKV)·hs wide; multi-head: HK = NH, W = 3C.
// window > 0: a sliding window (Mistral's): query t keeps keys s with t - s < window, a
// second band mask after the causal one (cudnn_frontend's top-left "left bound": col +
// window > row, the window an fp32 scalar kWindow); 0: none.
struct Geometry {
    int64_t B, H, T, D, C, HK, W;
    int window;
    Geometry(int b, int t, int c, int nh, int nkv = 0, int win = 0)
        : B(b), H(nh), T(t), D(c / nh), C(c), HK(nkv > 0 ? nkv : nh),
          W((nh + 2 * (nkv > 0 ? nkv : nh)) * static_cast<int64_t>(c / nh)), window(win) {}
    cudnn::Dims heads() const { return {B, H, T, D}; }
    cudnn::Dims heads_t() const { return {B, H, D, T}; }
    cudnn::Dims kv_heads() const { return {B, HK, T, D}; }
    cudnn::Dims kv_heads_t() const { return {B, HK, D, T}; }
    cudnn::Dims in_qkv() const { return {T * W, D, W, 1}; }    // a block of qkv [B,T,W]
    cudnn::Dims in_qkv_t() const { return {T * W, D, 1, W}; }  // last two swapped
    cudnn::Dims in_btc() const { return {T * C, D, C, 1}; }            // [B,T,C]
    cudnn::Dims heads_packed() const { return {H * T * D, T * D, D, 1}; }  // [B,NH,T,hs]
    bool grouped() const { return HK != H; }
    cudnn::Dims scores() const { return {B, H, T, T}; }
    cudnn::Dims scores_packed() const { return {H * T * T, T * T, T, 1}; }
    cudnn::Dims scores_t() const { return {H * T * T, T * T, 1, T}; }  // transposed view
    cudnn::Dims rows() const { return {B, H, T, 1}; }
    cudnn::Dims rows_packed() const { return {H * T, T, 1, 1}; }
};

// Floats of the grouped-query backward's per-query-head dK and dV (kDKFull, kDVFull) each;
// 0 for multi-head attention.
inline size_t fullhead_floats(const Geometry& s) {
    return s.grouped() ? static_cast<size_t>(s.B * s.H * s.T * s.D) : 0;
}

// Append the forward / backward graph to an empty OpGraph. io: CUDNN_DATA_BFLOAT16 or
// CUDNN_DATA_HALF. padded: the <= 9.15 backward workaround (backward_needs_padding_mask).
// Throw trt::Error(Device) if cuDNN rejects a descriptor.
void build_forward(cudnn::OpGraph& g, const Geometry& s, cudnnDataType_t io);
void build_backward(cudnn::OpGraph& g, const Geometry& s, cudnnDataType_t io, bool padded);

}  // namespace trt::cuda::sdpa
