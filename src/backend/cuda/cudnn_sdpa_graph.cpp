// The SDPA operation graphs (cudnn_sdpa_graph.h).
#include "backend/cuda/cudnn_sdpa_graph.h"

#include <string>

#include "core/error.h"

namespace trt::cuda::sdpa {

using cudnn::OpGraph;
using cudnn::Tensor;

namespace {

// The row (query) and column (key) index of every score of x, int32.
struct Indices {
    Tensor row, col;
};
Indices score_indices(OpGraph& g, const Tensor& x) {
    Indices i{g.virt_like(x, CUDNN_DATA_INT32), g.virt_like(x, CUDNN_DATA_INT32)};
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, nullptr, nullptr, i.row, 2);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, x, nullptr, nullptr, i.col, 3);
    return i;
}

// x where keep, else -inf (BINARY_SELECT: y = t ? x : b).
Tensor keep_or_neg_inf(OpGraph& g, const Tensor& x, const Tensor& neg_inf, const Tensor& keep) {
    const Tensor y = g.virt_like(x, CUDNN_DATA_FLOAT);
    g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, &neg_inf, &keep, y);
    return y;
}

// x with every score of a key after its query (column > row) replaced by -inf.
Tensor causal_mask(OpGraph& g, const Tensor& x, const Tensor& neg_inf) {
    const Indices i = score_indices(g, x);
    const Tensor keep = g.virt_like(x, CUDNN_DATA_BOOLEAN);
    g.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, i.row, &i.col, nullptr, keep);
    return keep_or_neg_inf(g, x, neg_inf, keep);
}

// x with every score of a key at or before row - window replaced by -inf: keeps col + window >
// row (the sliding window, applied after causal_mask as cudnn_frontend orders its two bounds;
// window is the fp32 scalar kWindow, the column index widened to fp32 by the add).
Tensor window_mask(OpGraph& g, const Tensor& x, const Tensor& neg_inf, const Tensor& window) {
    const Indices i = score_indices(g, x);
    const Tensor reach = g.virt_like(x, CUDNN_DATA_FLOAT);
    g.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, i.col, &window, nullptr, reach);
    const Tensor keep = g.virt_like(x, CUDNN_DATA_BOOLEAN);
    g.pointwise(CUDNN_POINTWISE_CMP_GT, CUDNN_DATA_BOOLEAN, reach, &i.row, nullptr, keep);
    return keep_or_neg_inf(g, x, neg_inf, keep);
}

// The attention's mask: causal, then the sliding window when the geometry has one.
Tensor attention_mask(OpGraph& g, const Geometry& s, const Tensor& x, const Tensor& neg_inf) {
    const Tensor causal = causal_mask(g, x, neg_inf);
    if (s.window <= 0) return causal;
    const Tensor window = g.scalar(kWindow, CUDNN_DATA_FLOAT);
    return window_mask(g, causal, neg_inf, window);
}

// x outside [0, len_q) x [0, len_kv) replaced by -inf (the <= 9.15 backward workaround; the
// lengths are all T, so it masks nothing).
Tensor padding_mask(OpGraph& g, const Tensor& x, const Tensor& neg_inf, const Tensor& len_q,
                    const Tensor& len_kv) {
    const Tensor row = g.virt_like(x, CUDNN_DATA_INT32);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, x, nullptr, nullptr, row, 2);
    const Tensor col = g.virt_like(x, CUDNN_DATA_INT32);
    g.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, x, nullptr, nullptr, col, 3);
    const Tensor row_in = g.virt_like(x, CUDNN_DATA_BOOLEAN);
    g.pointwise(CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, row, &len_q, nullptr, row_in);
    const Tensor col_in = g.virt_like(x, CUDNN_DATA_BOOLEAN);
    g.pointwise(CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, col, &len_kv, nullptr, col_in);
    const Tensor keep = g.virt_like(x, CUDNN_DATA_BOOLEAN);
    g.pointwise(CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN, row_in, &col_in, nullptr, keep);
    return keep_or_neg_inf(g, x, neg_inf, keep);
}

}  // namespace

std::string shape_problem(int B, int T, int C, int NH) {
    if (B < 1 || T < 1 || C < 1 || NH < 1) return "the shape is empty";
    if (C % NH != 0) return cat("C=", C, " is not a multiple of NH=", NH);
    const int hs = C / NH;
    if (hs % 8 != 0 || hs > kMaxHeadSize)
        return cat("head size ", hs, " is not supported by cuDNN's fused attention (needs a "
                   "multiple of 8, at most ", kMaxHeadSize, ")");
    return {};
}

void build_forward(OpGraph& g, const Geometry& s, cudnnDataType_t io) {
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const Tensor q = g.tensor(kQ, s.heads(), s.in_qkv(), io);
    const Tensor kt = g.tensor(kK, s.kv_heads_t(), s.in_qkv_t(), io);
    const Tensor v = g.tensor(kV, s.kv_heads(), s.in_qkv(), io);
    const Tensor o = g.tensor(kO, s.heads(), s.in_btc(), io);
    const Tensor stats = g.tensor(kStats, s.rows(), s.rows_packed(), f32);
    const Tensor scale = g.scalar(kScale, f32);
    const Tensor neg_inf = g.scalar(kNegInf, f32);

    // scores [B,NH,T,T] = Q·Kᵀ · scale, causal (and banded with a window)
    const Tensor qk = g.virt(s.scores(), s.scores_packed(), f32);
    g.matmul(q, kt, qk);
    const Tensor scaled = g.virt_like(qk, f32);
    g.pointwise(CUDNN_POINTWISE_MUL, f32, qk, &scale, nullptr, scaled);
    const Tensor masked = attention_mask(g, s, scaled, neg_inf);

    // softmax with its statistics: m = max, e = exp(x - m), z = sum e, Stats = m + log z
    const Tensor m = g.virt(s.rows(), s.rows_packed(), f32);
    g.reduction(CUDNN_REDUCE_TENSOR_MAX, masked, m);
    const Tensor shifted = g.virt_like(masked, f32);
    g.pointwise(CUDNN_POINTWISE_SUB, f32, masked, &m, nullptr, shifted);
    const Tensor e = g.virt_like(masked, f32);
    g.pointwise(CUDNN_POINTWISE_EXP, f32, shifted, nullptr, nullptr, e);
    const Tensor z = g.virt(s.rows(), s.rows_packed(), f32);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, z);
    const Tensor log_z = g.virt(s.rows(), s.rows_packed(), f32);
    g.pointwise(CUDNN_POINTWISE_LOG, f32, z, nullptr, nullptr, log_z);
    g.pointwise(CUDNN_POINTWISE_ADD, f32, m, &log_z, nullptr, stats);
    // The probabilities enter the second matmul in the I/O type (the engines require it).
    const Tensor p = g.virt_like(masked, io);
    g.pointwise(CUDNN_POINTWISE_DIV, f32, e, &z, nullptr, p);

    g.matmul(p, v, o);  // O = P·V
}

void build_backward(OpGraph& g, const Geometry& s, cudnnDataType_t io, bool padded) {
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const Tensor q = g.tensor(kQ, s.heads(), s.in_qkv(), io);
    const Tensor kt = g.tensor(kK, s.kv_heads_t(), s.in_qkv_t(), io);
    const Tensor vt = g.tensor(kV, s.kv_heads_t(), s.in_qkv_t(), io);
    const Tensor o = g.tensor(kO, s.heads(), s.in_btc(), io);
    const Tensor d_o = g.tensor(kDO, s.heads(), s.in_btc(), io);
    const Tensor stats = g.tensor(kStats, s.rows(), s.rows_packed(), f32);
    const Tensor dq = g.tensor(kDQ, s.heads(), s.in_qkv(), io);
    const Tensor dk = g.tensor(kDK, s.kv_heads(), s.in_qkv(), io);
    const Tensor dv = g.tensor(kDV, s.kv_heads(), s.in_qkv(), io);
    const Tensor row_sum = g.tensor(kRowSum, s.rows(), s.rows_packed(), f32);
    const Tensor scale = g.scalar(kScale, f32);
    const Tensor neg_inf = g.scalar(kNegInf, f32);
    const Tensor one = g.scalar(kOne, f32);
    Tensor len_q, len_kv;  // [B,1,1,1] int32, all T (padding workaround only)
    const Tensor* lq = nullptr;
    const Tensor* lkv = nullptr;
    if (padded) {
        len_q = g.tensor(kSeqLenQ, {s.B, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_INT32);
        len_kv = g.tensor(kSeqLenKV, {s.B, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_INT32);
        lq = &len_q;
        lkv = &len_kv;
    }

    // row_sum [B,NH,T,1] = sum over hs of dO∘O: the softmax backward's per-row term
    const Tensor doo = g.virt(s.heads(), s.in_btc(), f32);
    g.pointwise(CUDNN_POINTWISE_MUL, f32, d_o, &o, nullptr, doo);
    const Tensor doo_sum = g.virt(s.rows(), s.rows_packed(), f32);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, doo, doo_sum);
    g.pointwise(CUDNN_POINTWISE_MUL, f32, doo_sum, &one, nullptr, row_sum);  // (x 1/keep-prob)

    // P = exp(Q·Kᵀ · scale - Stats), causal: the forward's probabilities, recomputed
    const Tensor qk = g.virt(s.scores(), s.scores_packed(), f32);
    g.matmul(q, kt, qk, lq, lkv, nullptr);
    const Tensor scaled = g.virt_like(qk, f32);
    g.pointwise(CUDNN_POINTWISE_MUL, f32, qk, &scale, nullptr, scaled);
    Tensor centered = g.virt_like(qk, f32);
    g.pointwise(CUDNN_POINTWISE_SUB, f32, scaled, &stats, nullptr, centered);
    if (padded) centered = padding_mask(g, centered, neg_inf, len_q, len_kv);
    const Tensor masked = attention_mask(g, s, centered, neg_inf);
    const Tensor p = g.virt_like(qk, f32);
    g.pointwise(CUDNN_POINTWISE_EXP, f32, masked, nullptr, nullptr, p);

    // Grouped-query attention: dK and dV per query head, then summed over each group of
    // NH/NKV heads by a reduction onto the NKV heads (cudnn_frontend's "fullhead" form).
    Tensor dk_full, dv_full;
    if (s.grouped()) {
        dk_full = g.tensor(kDKFull, s.heads(), s.heads_packed(), f32);
        dv_full = g.tensor(kDVFull, s.heads(), s.heads_packed(), f32);
    }

    // dV = Pᵀ·dO
    const Tensor p_t = g.virt(s.scores(), s.scores_t(), io);
    g.reshape(p, p_t);
    g.matmul(p_t, d_o, s.grouped() ? dv_full : dv, lkv, nullptr, lq);
    if (s.grouped()) g.reduction(CUDNN_REDUCE_TENSOR_ADD, dv_full, dv);

    // dS = P∘(dO·Vᵀ - row_sum) · scale
    const Tensor dp = g.virt(s.scores(), s.scores_packed(), f32);
    g.matmul(d_o, vt, dp, lq, lkv, nullptr);
    const Tensor dp_centered = g.virt_like(dp, f32);
    g.pointwise(CUDNN_POINTWISE_SUB, f32, dp, &row_sum, nullptr, dp_centered);
    const Tensor ds_unscaled = g.virt_like(dp, f32);
    g.pointwise(CUDNN_POINTWISE_MUL, f32, dp_centered, &p, nullptr, ds_unscaled);
    const Tensor ds = g.virt_like(dp, f32);
    g.pointwise(CUDNN_POINTWISE_MUL, f32, ds_unscaled, &scale, nullptr, ds);

    // dK = dSᵀ·Q
    const Tensor ds_t = g.virt(s.scores(), s.scores_t(), io);
    g.reshape(ds, ds_t);
    g.matmul(ds_t, q, s.grouped() ? dk_full : dk, lkv, nullptr, lq);
    if (s.grouped()) g.reduction(CUDNN_REDUCE_TENSOR_ADD, dk_full, dk);

    // dQ = dS·K, written directly (no fp32 accumulator: no atomics)
    const Tensor k = g.virt(s.kv_heads(), s.in_qkv(), f32);
    g.reshape(kt, k);
    g.matmul(ds, k, dq, lq, nullptr, lkv);
}

}  // namespace trt::cuda::sdpa
