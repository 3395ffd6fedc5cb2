// Causal self-attention, the portable path (llm.c style), multi-head (NKV == NH) or grouped-
// query (NKV < NH: query head h reads key/value head h / G, G = NH / NKV). Heads are split out
// of qkv [B,T,(NH+2NKV)hs] into q [B,NH,T,hs] and k, v [B,NKV,T,hs]; the two products per
// key/value head run as one strided-batched GEMM over the B·NKV kv heads (gemm_f32, precision
// from ctx), and a warp per row does the scaled causal softmax in between.
//
// Grouped-query without copies: the G query heads of one kv head are adjacent in q
// ([B,NH,T,hs], h = kv*G + j) and in att ([B,NH,T,T]), so per kv head they form ONE [G·T, hs]
// matrix and ONE [G·T, T] matrix. preatt = q_grp · kᵀ and y = att_grp · v are then plain
// GEMMs with m = G·T, and the backward's dv = att_grpᵀ · dy_grp and dk = dpreatt_grpᵀ · q_grp
// are GEMMs with k = G·T: the sum over the query heads sharing a kv head happens inside one
// GEMM (a fixed algorithm: deterministic), never through atomics. G = 1 is exactly the
// multi-head shapes of before.
//
// The GEMMs compute the full T×T square; the softmax writes the masked upper triangle as
// exact zeros, so everything downstream is causal. Documents (pos, backend.h) and a sliding
// window only move each row's first key: the softmax zeroes the keys before it, and the
// backward's softmax kernel needs neither (those zeros keep it out).
//
// cuDNN attention takes no documents: the backend sends calls with pos to this path.
//
// Storage: the activations at the boundary, qkv and dout (read) and out and dqkv (written),
// are stored in ctx.act (float, bf16 or fp16; the kernels' storage type is S, as T is the
// sequence length here). split_heads widens them exactly into fp32 q, k, v, dy; everything
// inside (att, the softmax, the GEMM outputs) is fp32, and the final merge rounds out / dqkv
// once, as the CPU twin does. The internal GEMMs (gemm_f32) still cast their fp32 operands
// to bf16/fp16 per ctx.precision, so this portable path is not cast-free; cuDNN attention is
// the fast path.
//
// Memory: saved = the probabilities att [B,NH,T,T] only, fp32 (upper triangle 0: the same
// contents as the CPU twin's saved). q, k, v are re-derived from qkv where needed (a cheap
// gather), so no layer keeps a second copy of them:
//   forward:  q, k, v in ctx.scratch (y reuses q once preatt is done), then the GEMM casts in
//             the rest of ctx.scratch (attention_ctx_scratch_bytes, part of
//             matmul_scratch_bytes);
//   backward: everything fp32 in `scratch` (attention_scratch_floats); ctx.scratch only holds
//             the GEMM casts.
//
// Determinism: every output element is written by exactly one thread; the softmax sums are
// fixed-order (each lane strides the row in order, then an xor-shuffle tree), and the GEMMs
// use cached algorithms (cuda_matmul.cu). No atomics.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_gemm.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/lowp.cuh"
#include "core/error.h"

namespace trt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;  // softmax: one warp per row
constexpr int64_t kMaxBlocks = 65536;  // grid-stride kernels: enough to fill any device
constexpr size_t kAlignFloats = kScratchAlign / sizeof(float);
// The tiled form's [bc,NH,T,T] fp32 tile: at most this many floats (256 MiB), one sequence
// at least.
constexpr size_t kTileFloats = size_t{64} << 20;

int grid_for(int64_t n) { return grid_blocks(n, kThreads, kMaxBlocks); }

size_t pad_floats(size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

// Row layout of qkv: NH query heads, then NKV key heads, then NKV value heads, hs each; W =
// (NH + 2NKV)·hs floats per row. With NKV = 0 the rows hold the NH query heads only (W = C:
// dout / out).
//
// q[b,h,t,d] = src[b,t, h*hs + d] (h < NH), k[b,g,t,d] = src[b,t, (NH+g)*hs + d],
// v[b,g,t,d] = src[b,t, (NH+NKV+g)*hs + d] (g < NKV). Iterates over the source, so the reads
// are coalesced (the writes are hs-long runs). n = B*T*W. src is stored as S (the storage
// type; T is the sequence length in this file) and widened exactly.
template <typename S>
__global__ void split_heads_kernel(float* __restrict__ q, float* __restrict__ k,
                                   float* __restrict__ v, const S* __restrict__ src,
                                   int64_t n, int T, int NH, int NKV, int hs) {
    const int64_t W = static_cast<int64_t>(NH + 2 * NKV) * hs;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t bt = i / W;
        const int c = static_cast<int>(i - bt * W);
        const int h = c / hs, d = c - h * hs;
        const int64_t b = bt / T, t = bt - b * T;
        const float x = to_f32(src[i]);
        if (h < NH) {
            q[((b * NH + h) * T + t) * hs + d] = x;
        } else if (h < NH + NKV) {
            k[((b * NKV + (h - NH)) * T + t) * hs + d] = x;
        } else {
            v[((b * NKV + (h - NH - NKV)) * T + t) * hs + d] = x;
        }
    }
}

// The inverse: dst[b,t, :] (row layout above) from q [B,NH,T,hs] and k, v [B,NKV,T,hs];
// iterates over the destination so the writes are coalesced. n = B*T*W. dst is stored as S:
// each element rounded once.
template <typename S>
__global__ void merge_heads_kernel(S* __restrict__ dst, const float* __restrict__ q,
                                   const float* __restrict__ k, const float* __restrict__ v,
                                   int64_t n, int T, int NH, int NKV, int hs) {
    const int64_t W = static_cast<int64_t>(NH + 2 * NKV) * hs;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t bt = i / W;
        const int c = static_cast<int>(i - bt * W);
        const int h = c / hs, d = c - h * hs;
        const int64_t b = bt / T, t = bt - b * T;
        float x;
        if (h < NH) {
            x = q[((b * NH + h) * T + t) * hs + d];
        } else if (h < NH + NKV) {
            x = k[((b * NKV + (h - NH)) * T + t) * hs + d];
        } else {
            x = v[((b * NKV + (h - NH - NKV)) * T + t) * hs + d];
        }
        dst[i] = from_f32<S>(x);
    }
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The first key row `row` of att [rows = n*NH*T, T] attends: 0, or t - window + 1 under a
// sliding window, and with documents (pos [n,T] of the rows' sequences, or null) not before
// its example's start t - pos[b,t].
__device__ __forceinline__ int first_key(int64_t row, int T, int NH, int window,
                                         const int32_t* __restrict__ pos) {
    const int t = static_cast<int>(row % T);
    int lo = window > 0 && t >= window ? t - window + 1 : 0;
    if (pos != nullptr) {
        const int64_t b = row / (static_cast<int64_t>(NH) * T);
        lo = max(lo, t - pos[b * T + t]);
    }
    return lo;
}

// att [rows = B*NH*T, T] in place; row r is query t = r % T and holds its already scaled
// scores. Keys lo <= s <= t get softmax(scores[lo..t]) (max-subtracted), the others exactly
// 0: lo = first_key (the backward needs no window or documents: these zeros keep it out).
// Pass 1 is an online max/sum per lane (one read), pass 2 writes the probabilities. stats
// (the tiled form): each row's {max, 1/sum} [rows], or nullptr.
__global__ void __launch_bounds__(kThreads)
    causal_softmax_kernel(float* __restrict__ att, int64_t rows, int T, int window,
                          float2* __restrict__ stats, const int32_t* __restrict__ pos, int NH) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
    if (row >= rows) return;  // whole warps leave together: the shuffles below stay full
    const int lane = threadIdx.x & 31;
    const int t = static_cast<int>(row % T);
    const int lo = first_key(row, T, NH, window, pos);
    float* x = att + row * T;
    float mx = -FLT_MAX, sum = 0.0f;
    for (int s = lo + lane; s <= t; s += 32) {
        const float v = x[s];
        if (v > mx) {
            sum = sum * expf(mx - v) + 1.0f;
            mx = v;
        } else {
            sum += expf(v - mx);
        }
    }
    const float m = warp_max(mx);
    sum = warp_sum(sum * expf(mx - m));  // lanes without keys: sum = 0
    const float inv = 1.0f / sum;
    if (stats != nullptr && lane == 0) stats[row] = make_float2(m, inv);
    for (int s = lane; s < T; s += 32) x[s] = s >= lo && s <= t ? expf(x[s] - m) * inv : 0.0f;
}

// The tiled backward's probabilities: att [rows, T] holds the scaled scores again; row r gets
// causal_softmax_kernel's values from its saved {max, 1/sum} (the same expression).
__global__ void __launch_bounds__(kThreads)
    causal_softmax_recompute_kernel(float* __restrict__ att, const float2* __restrict__ stats,
                                    int64_t rows, int T, int window,
                                    const int32_t* __restrict__ pos, int NH) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
    if (row >= rows) return;
    const int lane = threadIdx.x & 31;
    const int t = static_cast<int>(row % T);
    const int lo = first_key(row, T, NH, window, pos);
    float* x = att + row * T;
    const float2 st = stats[row];
    for (int s = lane; s < T; s += 32)
        x[s] = s >= lo && s <= t ? expf(x[s] - st.x) * st.y : 0.0f;
}

// d [rows, T] in place: datt → dpreatt = scale · att · (datt − Σ_{s<=t} att·datt) on keys
// s <= t, exactly 0 above the diagonal (att's upper triangle is 0 there as well).
// With dropout (dropped = P' = att ⊙ mask/(1-p), d = dP' in): dP = d ⊙ mask/(1-p), so
// scale · att ⊙ (dP − <att, dP>) = scale · (P'·d − att·<P', d>).
__global__ void __launch_bounds__(kThreads)
    causal_softmax_backward_kernel(float* __restrict__ d, const float* __restrict__ att,
                                   const float* __restrict__ dropped, int64_t rows, int T,
                                   float scale) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
    if (row >= rows) return;
    const int lane = threadIdx.x & 31;
    const int t = static_cast<int>(row % T);
    float* g = d + row * T;
    const float* a = att + row * T;
    const float* ad = dropped ? dropped + row * T : a;  // the probabilities the output used
    float dot = 0.0f;
    for (int s = lane; s <= t; s += 32) dot += ad[s] * g[s];
    dot = warp_sum(dot);
    if (dropped) {
        for (int s = lane; s < T; s += 32)
            g[s] = s <= t ? scale * (ad[s] * g[s] - a[s] * dot) : 0.0f;
    } else {
        for (int s = lane; s < T; s += 32) g[s] = s <= t ? scale * a[s] * (g[s] - dot) : 0.0f;
    }
}

// NKV = 0: src/dst rows hold the NH query-block heads only (k, v unused). src / dst are
// activations in ctx.act (checked by the launchers); q, k, v are fp32 scratch.
void split_heads(const CudaCtx& ctx, float* q, float* k, float* v, ConstAct src, int B, int T,
                 int NH, int NKV, int hs) {
    const int64_t n = static_cast<int64_t>(B) * T * (NH + 2 * NKV) * hs;
    with_storage(act_storage(ctx, {src}), [&](auto tag) {
        using S = typename decltype(tag)::type;
        split_heads_kernel<S><<<grid_for(n), kThreads, 0, ctx.stream>>>(
            q, k, v, typed<S>(src), n, T, NH, NKV, hs);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

void merge_heads(const CudaCtx& ctx, Act dst, const float* q, const float* k, const float* v,
                 int B, int T, int NH, int NKV, int hs) {
    const int64_t n = static_cast<int64_t>(B) * T * (NH + 2 * NKV) * hs;
    with_storage(act_storage(ctx, {dst}), [&](auto tag) {
        using S = typename decltype(tag)::type;
        merge_heads_kernel<S><<<grid_for(n), kThreads, 0, ctx.stream>>>(
            typed<S>(dst), q, k, v, n, T, NH, NKV, hs);
        TRT_CUDA_LAUNCH_CHECK();
    });
}

int softmax_blocks(int64_t rows) {
    const int64_t b = (rows + kWarps - 1) / kWarps;
    TRT_CHECK(b <= INT_MAX, "attention softmax over ", rows, " rows");
    return static_cast<int>(b);
}

// The two product shapes, per kv head (batch = B*NKV; G = NH/NKV query heads per kv head,
// whose rows are adjacent: a [G*T, *] matrix per kv head; G = 1 is multi-head attention):
// S[G*T,T] = alpha · X[G*T,hs] · Y[T,hs]ᵀ
RowMajorGemm gemm_xyt(float* s, const float* x, const float* y, int BKV, int G, int T, int hs,
                      float alpha) {
    RowMajorGemm g;
    g.m = G * T;
    g.n = T;
    g.k = hs;
    g.a = x;
    g.lda = hs;
    g.stride_a = static_cast<int64_t>(G) * T * hs;
    g.b = y;
    g.trans_b = true;
    g.ldb = hs;
    g.stride_b = static_cast<int64_t>(T) * hs;
    g.c = s;
    g.ldc = T;
    g.stride_c = static_cast<int64_t>(G) * T * T;
    g.batch = BKV;
    g.alpha = alpha;
    return g;
}

// P is [G*T, T] per kv head.
//   trans_p = false: Z[G*T,hs] = P · W[T,hs]        (y = att·v, dq = dpreatt·k)
//   trans_p = true:  Z[T,hs]   = Pᵀ · W[G*T,hs]     (dv = attᵀ·dy, dk = dpreattᵀ·q; the sum
//                                                    over the G query heads is the GEMM's k)
RowMajorGemm gemm_pw(float* z, const float* p, bool trans_p, const float* w, int BKV, int G,
                     int T, int hs) {
    const int64_t rows_p = static_cast<int64_t>(G) * T;
    RowMajorGemm g;
    g.m = trans_p ? T : G * T;
    g.n = hs;
    g.k = trans_p ? G * T : T;
    g.a = p;
    g.trans_a = trans_p;
    g.lda = T;
    g.stride_a = rows_p * T;
    g.b = w;
    g.ldb = hs;
    g.stride_b = (trans_p ? rows_p : T) * hs;
    g.c = z;
    g.ldc = hs;
    g.stride_c = (trans_p ? T : rows_p) * hs;
    g.batch = BKV;
    return g;
}

bool empty(int B, int T, int C, int NH) { return B <= 0 || T <= 0 || C <= 0 || NH <= 0; }

void check_heads(int C, int NH, int NKV) {
    if (C % NH != 0)
        fail(Status::InvalidArgument, "attention: C = ", C, " is not a multiple of NH = ", NH);
    if (NKV < 1 || NH % NKV != 0)
        fail(Status::InvalidArgument, "attention: NKV = ", NKV,
             " key/value heads do not divide NH = ", NH, " query heads");
}

}  // namespace

size_t attention_saved_floats(int B, int T, int C, int NH, int NKV, bool tiled) {
    (void)NKV;  // the probabilities are per query head
    if (empty(B, T, C, NH)) return 0;
    if (tiled) return 2 * static_cast<size_t>(B) * NH * T;  // {max, 1/sum} [B,NH,T]
    return static_cast<size_t>(B) * NH * T * T;  // att [B,NH,T,T]
}

size_t attention_scratch_floats(int B, int T, int C, int NH, int NKV, bool tiled) {
    if (empty(B, T, C, NH) || NKV < 1) return 0;
    if (tiled) {
        // P, dP/dS and P' tiles [bc,NH,T,T], then q, k, v, dy as below.
        const size_t tile = static_cast<size_t>(attention_tile_seqs(B, T, NH)) * NH * T * T;
        const size_t btc = static_cast<size_t>(B) * T * C;
        const size_t bkv = static_cast<size_t>(B) * T * (C / NH) * NKV;
        return 3 * pad_floats(tile) + 2 * pad_floats(btc) + 2 * pad_floats(bkv);
    }
    // datt/dpreatt [B,NH,T,T], then q [B,NH,T,hs], k, v [B,NKV,T,hs], dy [B,NH,T,hs]
    // (256-byte aligned pieces).
    const size_t btc = static_cast<size_t>(B) * T * C;
    const size_t bkv = static_cast<size_t>(B) * T * (C / NH) * NKV;
    return pad_floats(static_cast<size_t>(B) * NH * T * T) + 2 * pad_floats(btc) +
           2 * pad_floats(bkv);
}

size_t attention_ctx_scratch_bytes(const ModelDims& d, Precision p) {
    // The attention's width: NH heads of hs (C unless the model has a head_dim).
    const int A = dims_attention_width(d);
    if (empty(d.B, d.T, A, d.NH) || A % d.NH != 0) return 0;
    const int NKV = dims_nkv(d);
    if (NKV < 1 || d.NH % NKV != 0) return 0;
    const int BKV = d.B * NKV, G = d.NH / NKV, T = d.T, hs = A / d.NH;
    const size_t btc = static_cast<size_t>(d.B) * T * A;
    const size_t bkv = static_cast<size_t>(d.B) * T * hs * NKV;
    // Every product is one of these shapes; the casts only depend on the shape. (For one
    // B, T, C, NH the casts and q/k/v only shrink as NKV does: NKV = NH bounds them all.)
    size_t casts = gemm_scratch_bytes(gemm_xyt(nullptr, nullptr, nullptr, BKV, G, T, hs, 1.0f), p);
    for (bool trans : {false, true})
        casts = std::max(casts, gemm_scratch_bytes(gemm_pw(nullptr, nullptr, trans, nullptr, BKV,
                                                           G, T, hs),
                                                   p));
    // Forward: q, k, v, then the casts; the backward needs only the casts.
    return align_scratch(btc * sizeof(float)) + 2 * align_scratch(bkv * sizeof(float)) + casts;
}

// out[B,T,C] = causal attention of qkv[B,T,(NH+2NKV)hs]; saved = att [B,NH,T,T] (fp32).
// With dropout (mask): saved = [P | P'] (2 × attention_saved_floats); P' = dropout of P over
// the whole [B,NH,T,T] stream (the upper triangle stays 0), and y = P'·v.
void attention_forward(const CudaCtx& ctx, Act out, float* saved, ConstAct qkv, int B, int T,
                       int C, int NH, int NKV, const DropoutMask* mask, int window,
                       const int32_t* pos) {
    if (ctx.tiled_attention)
        return attention_forward_tiled(ctx, out, saved, qkv, B, T, C, NH, NKV, mask, window,
                                       pos);
    if (empty(B, T, C, NH)) return;
    check_heads(C, NH, NKV);
    act_storage(ctx, {out, qkv});  // both views in ctx.act before anything is launched
    const int hs = C / NH, G = NH / NKV, BKV = B * NKV, BH = B * NH;
    const size_t btc = static_cast<size_t>(B) * T * C;
    const size_t bkv = static_cast<size_t>(B) * T * hs * NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    ScratchCursor cur(ctx, "attention_forward");
    float* q = cur.take_floats(btc);
    float* k = cur.take_floats(bkv);
    float* v = cur.take_floats(bkv);
    const CudaCtx gctx = cur.rest(ctx);  // the GEMMs' casts go after q, k, v
    float* att = saved;

    split_heads(ctx, q, k, v, qkv, B, T, NH, NKV, hs);
    gemm_f32(gctx, gemm_xyt(att, q, k, BKV, G, T, hs, scale));  // preatt = scale · q·kᵀ
    const int64_t rows = static_cast<int64_t>(BH) * T;
    causal_softmax_kernel<<<softmax_blocks(rows), kThreads, 0, ctx.stream>>>(
        att, rows, T, window, nullptr, pos, NH);
    TRT_CUDA_LAUNCH_CHECK();
    const float* probs = att;
    if (mask != nullptr) {
        float* dropped = att + static_cast<size_t>(rows) * T;
        dropout_floats(ctx, dropped, att, static_cast<size_t>(rows) * T, *mask);
        probs = dropped;
    }
    float* y = q;  // q is dead after preatt
    gemm_f32(gctx, gemm_pw(y, probs, false, v, BKV, G, T, hs));  // y = att·v (P' with dropout)
    merge_heads(ctx, out, y, nullptr, nullptr, B, T, NH, 0, hs);
}

// dqkv[B,T,(NH+2NKV)hs] (overwritten) from dout[B,T,C], qkv and saved = att [B,NH,T,T].
void attention_backward(const CudaCtx& ctx, Act dqkv, float* scratch, ConstAct dout,
                        ConstAct qkv, const float* saved, int B, int T, int C, int NH,
                        int NKV, const DropoutMask* mask, int window, const int32_t* pos) {
    if (ctx.tiled_attention)
        return attention_backward_tiled(ctx, dqkv, scratch, dout, qkv, saved, B, T, C, NH, NKV,
                                        mask, window, pos);
    const bool dropout = mask != nullptr;
    if (empty(B, T, C, NH)) return;
    check_heads(C, NH, NKV);
    act_storage(ctx, {dqkv, dout, qkv});  // all views in ctx.act before anything is launched
    const int hs = C / NH, G = NH / NKV, BKV = B * NKV, BH = B * NH;
    const size_t btc = static_cast<size_t>(B) * T * C;
    const size_t bkv = static_cast<size_t>(B) * T * hs * NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    float* dd = scratch;  // datt, then dpreatt in place
    float* q = dd + pad_floats(static_cast<size_t>(BH) * T * T);
    float* k = q + pad_floats(btc);
    float* v = k + pad_floats(bkv);
    float* dy = v + pad_floats(bkv);
    const float* att = saved;
    const int64_t rows = static_cast<int64_t>(BH) * T;
    // The probabilities y was made of: P, or P' (after P in saved) with dropout.
    const float* used = dropout ? att + static_cast<size_t>(rows) * T : att;

    split_heads(ctx, q, k, v, qkv, B, T, NH, NKV, hs);
    split_heads(ctx, dy, nullptr, nullptr, dout, B, T, NH, 0, hs);
    // Each result overwrites a buffer that is dead by then (stream order):
    gemm_f32(ctx, gemm_xyt(dd, dy, v, BKV, G, T, hs, 1.0f));  // datt = dy·vᵀ
    float* dv = v;                                             // v: last read by datt
    gemm_f32(ctx, gemm_pw(dv, used, true, dy, BKV, G, T, hs));  // dv = attᵀ·dy (Σ over group)
    causal_softmax_backward_kernel<<<softmax_blocks(rows), kThreads, 0, ctx.stream>>>(
        dd, att, dropout ? used : nullptr, rows, T, scale);
    TRT_CUDA_LAUNCH_CHECK();
    float* dq = dy;                                           // dy: last read by dv
    gemm_f32(ctx, gemm_pw(dq, dd, false, k, BKV, G, T, hs));  // dq = dpreatt·k
    float* dk = k;                                            // k: last read by dq
    gemm_f32(ctx, gemm_pw(dk, dd, true, q, BKV, G, T, hs));   // dk = dpreattᵀ·q (Σ over group)
    merge_heads(ctx, dqkv, dq, dk, dv, B, T, NH, NKV, hs);
}

// ---- The tiled form (CudaCtx::tiled_attention): no [B,NH,T,T] state between the passes.
// The forward keeps each softmax row's {max, 1/sum} (saved [B,NH,T,2]) and works through the
// batch a tile of bc sequences at a time (attention_tile_seqs: [bc,NH,T,T] fp32 within
// kTileFloats), with the untiled path's products and kernels on each tile; the backward
// recomputes each tile's scores and, from the statistics, its probabilities (the forward's
// expression), and draws P' again from the forward's mask. Not yet run on a GPU: off unless
// asked for (cuda_backend.cpp).

namespace {

// One call's tiling: a sequence's q [NH,T,hs], k and v [NKV,T,hs] and probabilities [NH,T,T]
// (floats), bc sequences per tile, the whole batch's q and k/v.
struct Tiling {
    int hs, G, bc;
    size_t btc, bkv, seq_q, seq_kv, seq_att;
    float scale;
    Tiling(int B, int T, int C, int NH, int NKV)
        : hs(C / NH), G(NH / NKV), bc(attention_tile_seqs(B, T, NH)),
          btc(static_cast<size_t>(B) * T * C),
          bkv(static_cast<size_t>(B) * T * (C / NH) * NKV),
          seq_q(static_cast<size_t>(NH) * T * (C / NH)),
          seq_kv(static_cast<size_t>(NKV) * T * (C / NH)),
          seq_att(static_cast<size_t>(NH) * T * T),
          scale(1.0f / std::sqrt(static_cast<float>(C / NH))) {}
};

// The mask of the tile from sequence b0 on: its part of the [B,NH,T,T] stream.
DropoutMask tile_mask(const DropoutMask& mask, int b0, size_t seq_att) {
    DropoutMask m = mask;
    m.index0 += static_cast<uint64_t>(b0) * seq_att;
    return m;
}

}  // namespace

int attention_tile_seqs(int B, int T, int NH) {
    const size_t per_seq = std::max<size_t>(1, static_cast<size_t>(NH) * T * T);
    const size_t fit = std::max<size_t>(1, kTileFloats / per_seq);
    return static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(B, 1)), fit));
}

size_t attention_tiled_ctx_scratch_bytes(const ModelDims& d, Precision p) {
    // The untiled forward's q, k, v and casts (a tile's products are those shapes with fewer
    // batches: no more cast bytes), plus the P and P' tiles.
    const int A = dims_attention_width(d);
    if (empty(d.B, d.T, A, d.NH)) return 0;
    const size_t tile =
        static_cast<size_t>(attention_tile_seqs(d.B, d.T, d.NH)) * d.NH * d.T * d.T;
    return attention_ctx_scratch_bytes(d, p) + 2 * align_scratch(tile * sizeof(float));
}

void attention_forward_tiled(const CudaCtx& ctx, Act out, float* saved, ConstAct qkv, int B,
                             int T, int C, int NH, int NKV, const DropoutMask* mask,
                             int window, const int32_t* pos) {
    if (empty(B, T, C, NH)) return;
    check_heads(C, NH, NKV);
    act_storage(ctx, {out, qkv});
    const Tiling z(B, T, C, NH, NKV);
    const int hs = z.hs, G = z.G, bc = z.bc;
    const size_t btc = z.btc, bkv = z.bkv, seq_q = z.seq_q, seq_kv = z.seq_kv, seq_att = z.seq_att;
    const float scale = z.scale;
    ScratchCursor cur(ctx, "attention_forward (tiled)");
    float* q = cur.take_floats(btc);
    float* k = cur.take_floats(bkv);
    float* v = cur.take_floats(bkv);
    float* att = cur.take_floats(bc * seq_att);                               // [bc,NH,T,T]
    float* dropped = mask != nullptr ? cur.take_floats(bc * seq_att) : nullptr;  // P'
    const CudaCtx gctx = cur.rest(ctx);
    auto* stats = reinterpret_cast<float2*>(saved);  // [B,NH,T]

    split_heads(ctx, q, k, v, qkv, B, T, NH, NKV, hs);
    for (int b0 = 0; b0 < B; b0 += bc) {
        const int n = std::min(bc, B - b0);
        float* qb = q + b0 * seq_q;
        const float* kb = k + b0 * seq_kv;
        const float* vb = v + b0 * seq_kv;
        gemm_f32(gctx, gemm_xyt(att, qb, kb, n * NKV, G, T, hs, scale));  // scale · q·kᵀ
        const int64_t rows = static_cast<int64_t>(n) * NH * T;
        causal_softmax_kernel<<<softmax_blocks(rows), kThreads, 0, ctx.stream>>>(
            att, rows, T, window, stats + static_cast<size_t>(b0) * NH * T,
            pos != nullptr ? pos + static_cast<size_t>(b0) * T : nullptr, NH);
        TRT_CUDA_LAUNCH_CHECK();
        const float* probs = att;
        if (mask != nullptr) {
            dropout_floats(ctx, dropped, att, static_cast<size_t>(rows) * T,
                           tile_mask(*mask, b0, seq_att));
            probs = dropped;
        }
        gemm_f32(gctx, gemm_pw(qb, probs, false, vb, n * NKV, G, T, hs));  // y = P·v into q
    }
    merge_heads(ctx, out, q, nullptr, nullptr, B, T, NH, 0, hs);
}

void attention_backward_tiled(const CudaCtx& ctx, Act dqkv, float* scratch, ConstAct dout,
                              ConstAct qkv, const float* saved, int B, int T, int C, int NH,
                              int NKV, const DropoutMask* mask, int window,
                              const int32_t* pos) {
    if (empty(B, T, C, NH)) return;
    check_heads(C, NH, NKV);
    act_storage(ctx, {dqkv, dout, qkv});
    const Tiling z(B, T, C, NH, NKV);
    const int hs = z.hs, G = z.G, bc = z.bc;
    const size_t btc = z.btc, bkv = z.bkv, seq_q = z.seq_q, seq_kv = z.seq_kv, seq_att = z.seq_att;
    const float scale = z.scale;
    const size_t tile = pad_floats(bc * seq_att);
    float* att = scratch;        // P, recomputed
    float* dd = att + tile;      // datt, then dpreatt in place
    float* dropped = dd + tile;  // P' (dropout)
    float* q = dropped + tile;
    float* k = q + pad_floats(btc);
    float* v = k + pad_floats(bkv);
    float* dy = v + pad_floats(bkv);
    const auto* stats = reinterpret_cast<const float2*>(saved);  // [B,NH,T]

    split_heads(ctx, q, k, v, qkv, B, T, NH, NKV, hs);
    split_heads(ctx, dy, nullptr, nullptr, dout, B, T, NH, 0, hs);
    for (int b0 = 0; b0 < B; b0 += bc) {
        const int n = std::min(bc, B - b0), BKV = n * NKV;
        const float* qb = q + b0 * seq_q;
        float* kb = k + b0 * seq_kv;
        float* vb = v + b0 * seq_kv;
        float* dyb = dy + b0 * seq_q;
        const int64_t rows = static_cast<int64_t>(n) * NH * T;
        gemm_f32(ctx, gemm_xyt(att, qb, kb, BKV, G, T, hs, scale));  // the forward's scores
        causal_softmax_recompute_kernel<<<softmax_blocks(rows), kThreads, 0, ctx.stream>>>(
            att, stats + static_cast<size_t>(b0) * NH * T, rows, T, window,
            pos != nullptr ? pos + static_cast<size_t>(b0) * T : nullptr, NH);
        TRT_CUDA_LAUNCH_CHECK();
        const float* used = att;  // the probabilities y was made of
        if (mask != nullptr) {
            dropout_floats(ctx, dropped, att, static_cast<size_t>(rows) * T,
                           tile_mask(*mask, b0, seq_att));
            used = dropped;
        }
        // Each result overwrites this tile's slice of a buffer that is dead by then:
        gemm_f32(ctx, gemm_xyt(dd, dyb, vb, BKV, G, T, hs, 1.0f));    // datt = dy·vᵀ
        float* dvb = vb;                                                // v: last read by datt
        gemm_f32(ctx, gemm_pw(dvb, used, true, dyb, BKV, G, T, hs));   // dv = usedᵀ·dy
        causal_softmax_backward_kernel<<<softmax_blocks(rows), kThreads, 0, ctx.stream>>>(
            dd, att, mask != nullptr ? used : nullptr, rows, T, scale);
        TRT_CUDA_LAUNCH_CHECK();
        float* dqb = dyb;                                            // dy: last read by dv
        gemm_f32(ctx, gemm_pw(dqb, dd, false, kb, BKV, G, T, hs));  // dq = dpreatt·k
        float* dkb = kb;                                             // k: last read by dq
        gemm_f32(ctx, gemm_pw(dkb, dd, true, qb, BKV, G, T, hs));   // dk = dpreattᵀ·q
    }
    merge_heads(ctx, dqkv, dy, k, v, B, T, NH, NKV, hs);
}

}  // namespace trt::cuda
