// Causal multi-head self-attention, the portable path (llm.c style): heads are split out of
// qkv [B,T,3C] into q, k, v [B,NH,T,hs], the two products per head run as one strided-batched
// GEMM over the B·NH heads (gemm_f32, precision from ctx), and a warp per row does the scaled
// causal softmax in between. The GEMMs compute the full T×T square; the softmax writes the
// masked upper triangle as exact zeros, so everything downstream is causal.
//
// Memory: saved = the probabilities att [B,NH,T,T] only (upper triangle 0: the same contents
// as the CPU twin's saved). q, k, v are re-derived from qkv where needed (a cheap gather), so
// no layer keeps a second copy of them:
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
#include "core/error.h"

namespace trt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;  // softmax: one warp per row
constexpr int64_t kMaxBlocks = 65536;  // grid-stride kernels: enough to fill any device
constexpr size_t kAlignFloats = kScratchAlign / sizeof(float);

int grid_for(int64_t n) {
    const int64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<int>(std::max<int64_t>(1, std::min(b, kMaxBlocks)));
}

size_t pad_floats(size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

// dst_j[b,h,t,d] = src[b,t, j*C + h*hs + d] for j < nblk (src rows are nblk*C wide):
// nblk = 3 splits qkv into q, k, v; nblk = 1 splits dout. n = B*NH*T*hs = B*T*C.
__global__ void split_heads_kernel(float* __restrict__ d0, float* __restrict__ d1,
                                   float* __restrict__ d2, const float* __restrict__ src,
                                   int64_t n, int T, int C, int NH, int hs, int nblk) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        int64_t r = i / hs;
        const int d = static_cast<int>(i - r * hs);
        const int t = static_cast<int>(r % T);
        r /= T;
        const int h = static_cast<int>(r % NH);
        const int64_t b = r / NH;
        const float* s = src + (b * T + t) * static_cast<int64_t>(nblk) * C + h * hs + d;
        d0[i] = s[0];
        if (nblk == 3) {
            d1[i] = s[C];
            d2[i] = s[2 * C];
        }
    }
}

// The inverse: dst[b,t, j*C + h*hs + d] = src_j[b,h,t,d] for j < nblk; iterates over the
// destination so the writes are coalesced. n = B*T*C.
__global__ void merge_heads_kernel(float* __restrict__ dst, const float* __restrict__ s0,
                                   const float* __restrict__ s1, const float* __restrict__ s2,
                                   int64_t n, int T, int C, int NH, int hs, int nblk) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const int64_t bt = i / C;
        const int c = static_cast<int>(i - bt * C);
        const int h = c / hs, d = c - h * hs;
        const int64_t b = bt / T, t = bt - b * T;
        const int64_t from = ((b * NH + h) * T + t) * hs + d;
        float* o = dst + bt * static_cast<int64_t>(nblk) * C + c;
        o[0] = s0[from];
        if (nblk == 3) {
            o[C] = s1[from];
            o[2 * C] = s2[from];
        }
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

// att [rows = B*NH*T, T] in place; row r is query t = r % T and holds its already scaled
// scores. Keys s <= t get softmax(scores[0..t]) (max-subtracted), keys s > t exactly 0.
// Pass 1 is an online max/sum per lane (one read), pass 2 writes the probabilities.
__global__ void __launch_bounds__(kThreads)
    causal_softmax_kernel(float* __restrict__ att, int64_t rows, int T) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
    if (row >= rows) return;  // whole warps leave together: the shuffles below stay full
    const int lane = threadIdx.x & 31;
    const int t = static_cast<int>(row % T);
    float* x = att + row * T;
    float mx = -FLT_MAX, sum = 0.0f;
    for (int s = lane; s <= t; s += 32) {
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
    for (int s = lane; s < T; s += 32) x[s] = s <= t ? expf(x[s] - m) * inv : 0.0f;
}

// d [rows, T] in place: datt → dpreatt = scale · att · (datt − Σ_{s<=t} att·datt) on keys
// s <= t, exactly 0 above the diagonal (att's upper triangle is 0 there as well).
__global__ void __launch_bounds__(kThreads)
    causal_softmax_backward_kernel(float* __restrict__ d, const float* __restrict__ att,
                                   int64_t rows, int T, float scale) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
    if (row >= rows) return;
    const int lane = threadIdx.x & 31;
    const int t = static_cast<int>(row % T);
    float* g = d + row * T;
    const float* a = att + row * T;
    float dot = 0.0f;
    for (int s = lane; s <= t; s += 32) dot += a[s] * g[s];
    dot = warp_sum(dot);
    for (int s = lane; s < T; s += 32) g[s] = s <= t ? scale * a[s] * (g[s] - dot) : 0.0f;
}

void split_heads(const CudaCtx& ctx, float* d0, float* d1, float* d2, const float* src, int B,
                 int T, int C, int NH, int nblk) {
    const int64_t n = static_cast<int64_t>(B) * T * C;
    split_heads_kernel<<<grid_for(n), kThreads, 0, ctx.stream>>>(d0, d1, d2, src, n, T, C, NH,
                                                                 C / NH, nblk);
    TRT_CUDA_LAUNCH_CHECK();
}

void merge_heads(const CudaCtx& ctx, float* dst, const float* s0, const float* s1,
                 const float* s2, int B, int T, int C, int NH, int nblk) {
    const int64_t n = static_cast<int64_t>(B) * T * C;
    merge_heads_kernel<<<grid_for(n), kThreads, 0, ctx.stream>>>(dst, s0, s1, s2, n, T, C, NH,
                                                                 C / NH, nblk);
    TRT_CUDA_LAUNCH_CHECK();
}

int softmax_blocks(int64_t rows) {
    const int64_t b = (rows + kWarps - 1) / kWarps;
    TRT_CHECK(b <= INT_MAX, "attention softmax over ", rows, " rows");
    return static_cast<int>(b);
}

// The two product shapes, per head (batch = B*NH, all operands contiguous [T, *] per head):
// S[T,T] = alpha · X[T,hs] · Y[T,hs]ᵀ
RowMajorGemm gemm_xyt(float* s, const float* x, const float* y, int BH, int T, int hs,
                      float alpha) {
    RowMajorGemm g;
    g.m = T;
    g.n = T;
    g.k = hs;
    g.a = x;
    g.lda = hs;
    g.stride_a = static_cast<int64_t>(T) * hs;
    g.b = y;
    g.trans_b = true;
    g.ldb = hs;
    g.stride_b = static_cast<int64_t>(T) * hs;
    g.c = s;
    g.ldc = T;
    g.stride_c = static_cast<int64_t>(T) * T;
    g.batch = BH;
    g.alpha = alpha;
    return g;
}

// Z[T,hs] = op(P)[T,T] · W[T,hs], op(P) = P or Pᵀ
RowMajorGemm gemm_pw(float* z, const float* p, bool trans_p, const float* w, int BH, int T,
                     int hs) {
    RowMajorGemm g;
    g.m = T;
    g.n = hs;
    g.k = T;
    g.a = p;
    g.trans_a = trans_p;
    g.lda = T;
    g.stride_a = static_cast<int64_t>(T) * T;
    g.b = w;
    g.ldb = hs;
    g.stride_b = static_cast<int64_t>(T) * hs;
    g.c = z;
    g.ldc = hs;
    g.stride_c = static_cast<int64_t>(T) * hs;
    g.batch = BH;
    return g;
}

bool empty(int B, int T, int C, int NH) { return B <= 0 || T <= 0 || C <= 0 || NH <= 0; }

void check_heads(int C, int NH) {
    if (C % NH != 0)
        fail(Status::InvalidArgument, "attention: C = ", C, " is not a multiple of NH = ", NH);
}

}  // namespace

size_t attention_saved_floats(int B, int T, int C, int NH) {
    if (empty(B, T, C, NH)) return 0;
    return static_cast<size_t>(B) * NH * T * T;  // att [B,NH,T,T]
}

size_t attention_scratch_floats(int B, int T, int C, int NH) {
    if (empty(B, T, C, NH)) return 0;
    // datt/dpreatt [B,NH,T,T], then q, k, v, dy [B,NH,T,hs] (256-byte aligned pieces).
    const size_t btc = static_cast<size_t>(B) * T * C;
    return pad_floats(static_cast<size_t>(B) * NH * T * T) + 4 * pad_floats(btc);
}

size_t attention_ctx_scratch_bytes(const ModelDims& d, Precision p) {
    if (empty(d.B, d.T, d.C, d.NH) || d.C % d.NH != 0) return 0;
    const int BH = d.B * d.NH, T = d.T, hs = d.C / d.NH;
    const size_t btc = static_cast<size_t>(d.B) * T * d.C;
    // Every product is one of the two shapes; the casts only depend on the shape.
    const size_t casts = std::max(gemm_scratch_bytes(gemm_xyt(nullptr, nullptr, nullptr, BH, T,
                                                              hs, 1.0f), p),
                                  gemm_scratch_bytes(gemm_pw(nullptr, nullptr, false, nullptr,
                                                             BH, T, hs), p));
    // Forward: q, k, v, then the casts; the backward needs only the casts.
    return 3 * align_scratch(btc * sizeof(float)) + casts;
}

// out[B,T,C] = causal attention of qkv[B,T,3C]; saved = att [B,NH,T,T].
void attention_forward(const CudaCtx& ctx, float* out, float* saved, const float* qkv, int B,
                       int T, int C, int NH) {
    if (empty(B, T, C, NH)) return;
    check_heads(C, NH);
    const int hs = C / NH, BH = B * NH;
    const size_t btc = static_cast<size_t>(B) * T * C;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    ScratchCursor cur(ctx, "attention_forward");
    float* q = cur.take_floats(btc);
    float* k = cur.take_floats(btc);
    float* v = cur.take_floats(btc);
    const CudaCtx gctx = cur.rest(ctx);  // the GEMMs' casts go after q, k, v
    float* att = saved;

    split_heads(ctx, q, k, v, qkv, B, T, C, NH, 3);
    gemm_f32(gctx, gemm_xyt(att, q, k, BH, T, hs, scale));  // preatt = scale · q·kᵀ
    const int64_t rows = static_cast<int64_t>(BH) * T;
    causal_softmax_kernel<<<softmax_blocks(rows), kThreads, 0, ctx.stream>>>(att, rows, T);
    TRT_CUDA_LAUNCH_CHECK();
    float* y = q;  // q is dead after preatt
    gemm_f32(gctx, gemm_pw(y, att, false, v, BH, T, hs));  // y = att·v
    merge_heads(ctx, out, y, nullptr, nullptr, B, T, C, NH, 1);
}

// dqkv[B,T,3C] (overwritten) from dout[B,T,C], qkv and saved = att [B,NH,T,T].
void attention_backward(const CudaCtx& ctx, float* dqkv, float* scratch, const float* dout,
                        const float* qkv, const float* saved, int B, int T, int C, int NH) {
    if (empty(B, T, C, NH)) return;
    check_heads(C, NH);
    const int hs = C / NH, BH = B * NH;
    const size_t btc = static_cast<size_t>(B) * T * C;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    float* dd = scratch;  // datt, then dpreatt in place
    float* q = dd + pad_floats(static_cast<size_t>(BH) * T * T);
    float* k = q + pad_floats(btc);
    float* v = k + pad_floats(btc);
    float* dy = v + pad_floats(btc);
    const float* att = saved;

    split_heads(ctx, q, k, v, qkv, B, T, C, NH, 3);
    split_heads(ctx, dy, nullptr, nullptr, dout, B, T, C, NH, 1);
    // Each result overwrites a buffer that is dead by then (stream order):
    gemm_f32(ctx, gemm_xyt(dd, dy, v, BH, T, hs, 1.0f));  // datt = dy·vᵀ
    float* dv = v;                                         // v: last read by datt
    gemm_f32(ctx, gemm_pw(dv, att, true, dy, BH, T, hs));  // dv = attᵀ·dy
    const int64_t rows = static_cast<int64_t>(BH) * T;
    causal_softmax_backward_kernel<<<softmax_blocks(rows), kThreads, 0, ctx.stream>>>(
        dd, att, rows, T, scale);
    TRT_CUDA_LAUNCH_CHECK();
    float* dq = dy;                                       // dy: last read by dv
    gemm_f32(ctx, gemm_pw(dq, dd, false, k, BH, T, hs));  // dq = dpreatt·k
    float* dk = k;                                        // k: last read by dq
    gemm_f32(ctx, gemm_pw(dk, dd, true, q, BH, T, hs));   // dk = dpreattᵀ·q
    merge_heads(ctx, dqkv, dq, dk, dv, B, T, C, NH, 3);
}

}  // namespace trt::cuda
