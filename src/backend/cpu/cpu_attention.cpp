// Causal multi-head self-attention, tiled so that no [T,T] matrix of scores or probabilities
// outlives a block of query rows, with NKV <= NH key/value heads (grouped-query attention:
// query head h reads kv head h / (NH/NKV); NKV == NH is plain multi-head attention, GPT-2's).
// Per (b, h) the T query rows are cut into blocks of kQB rows (the forward's unit of
// parallelism, cpu_pool.h: (b, h, block); the backward's is (b, h)); query block [i0, i1) only
// needs keys [k0, i1) (k0 = 0, or row i0's first key under a sliding window or documents), so
// every product runs on the lower block triangle (10/16 of the square at T = 256). A block's
// scores live in a [kQB, T] tile of the thread's scratch: scale, mask and softmax are one row
// pass over it, and all the forward keeps for the backward is each row's max and 1/sum (saved
// [B,NH,T,2]). The backward recomputes the tile's probabilities from those with the forward's
// own products and arithmetic (the same bits), then the block's dq, and adds the block's share
// to dk, dv (keys [k0, i1)) in block order. The products run single-threaded on strided views
// of qkv (SerialLibrariesScope, cpu_threads.h): fp32 sgemms, or — the bf16 mode with oneDNN's
// bf16 matmuls — oneDNN matmul primitives on the stored bf16 values (attention_*_bf16: no
// widened copy of qkv; k0 rounded down to a multiple of kQB, so that a sequence length has at
// most 2·T/kQB shapes per product, each primitive made once, the extra keys masked like any
// other). In the bf16 mode P and dS are rounded to bf16 before their products either way
// (`round_bf16` on the fp32 kernel), as the CUDA bf16 paths and PyTorch's flash attention take
// them. Each part is done by one thread in a fixed order, so results do not depend on the
// thread count. In the GQA backward the query heads of a group each produce a partial dk/dv
// (scratch), summed in head order afterwards: no two threads write the same kv head, and the
// sum order is fixed. Dropout on the probabilities (attention_dropout_forward) draws P' into a
// second tile; the backward draws it again from the same counter-based mask
// (core/dropout_mask.h). Documents (pos, backend.h): row t's first key is also its example's
// start t - pos[t]. That start, like a window's, never decreases with t, so a block's keys
// start at (bf16: at or before) its first row's and each row masks its own band (a block may
// span an example boundary).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_dropout.h"
#include "backend/cpu/cpu_onednn_gemm.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_threads.h"
#include "core/bf16.h"
#include "core/error.h"

namespace trt::cpu {

// Query (and key) block: 64 rows keep the sgemms efficient and skip 3/8 of the square at
// T = 256 (a block of 32 would skip 7/16 but runs the small sgemms slower).
static constexpr int kQB = 64;

// One per-head product, row-major: by oneDNN's sgemm when asked (and it takes the call), else
// OpenBLAS's. Either runs serially on the calling thread (inside the per-head team).
static void head_sgemm(bool onednn, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K,
                       float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                       float* C, int ldc) {
    if (onednn && onednn_sgemm(ta == CblasTrans, tb == CblasTrans, M, N, K, alpha, A, lda, B,
                               ldb, beta, C, ldc))
        return;
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// The per-head products of a query block [i0, i1) over keys [k0, i1) (m = i1 - i0 query rows,
// n = i1 - k0 keys), as row-major views: q, k, v of qkv (row stride W), dout and out (C), a
// [kQB, T] tile (T), the dk, dv accumulators (ldkv). Operands of type `in` (F32 or BF16);
// `Same` outputs are of that type too.
struct BlockProducts {
    DType in;
    int hs, W, C, T, ldkv;
    float scale;
    GemmShape scores(int m, int n) const {  // S[m, n] = scale · q · kᵀ (fp32 tile)
        return shape(m, n, hs, W, false, W, true, T, GemmOut::F32, scale);
    }
    GemmShape out(int m, int n) const {  // out[m, hs] = P · v
        return shape(m, hs, n, T, false, W, false, C, GemmOut::Same, 1.0f);
    }
    GemmShape dp(int m, int n) const {  // dP[m, n] = dout · vᵀ (fp32 tile)
        return shape(m, n, hs, C, false, W, true, T, GemmOut::F32, 1.0f);
    }
    GemmShape dq(int m, int n) const {  // dq[m, hs] = scale · dS · k (into dqkv)
        return shape(m, hs, n, T, false, W, false, W, GemmOut::Same, scale);
    }
    GemmShape dv(int m, int n) const {  // dv[n, hs] += Pᵀ · dout (fp32)
        return shape(n, hs, m, T, true, C, false, ldkv, GemmOut::F32Add, 1.0f);
    }
    GemmShape dk(int m, int n) const {  // dk[n, hs] += scale · dSᵀ · q (fp32)
        return shape(n, hs, m, T, true, W, false, ldkv, GemmOut::F32Add, scale);
    }
    GemmShape shape(int m, int n, int k, int lda, bool a_trans, int ldb, bool b_trans, int ldc,
                    GemmOut out, float alpha) const {
        GemmShape g;
        g.in = in, g.m = m, g.n = n, g.k = k, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
        g.a_trans = a_trans, g.b_trans = b_trans, g.out = out, g.alpha = alpha;
        return g;
    }
};

// How one call's products run: fp32 operands by sgemm (head_sgemm), or bf16 ones by `gemm`'s
// primitives, made before the parallel loop (OnednnGemm::prepare).
struct ProductRunner {
    OnednnGemm* gemm = nullptr;
    bool onednn_sgemm = false;
    void operator()(const GemmShape& g, const void* a, const void* b, void* c, int slot) const {
        if (gemm != nullptr) {
            gemm->run_here(g, a, b, c, slot);
            return;
        }
        head_sgemm(onednn_sgemm, g.a_trans ? CblasTrans : CblasNoTrans,
                   g.b_trans ? CblasTrans : CblasNoTrans, g.m, g.n, g.k, g.alpha,
                   static_cast<const float*>(a), g.lda, static_cast<const float*>(b), g.ldb,
                   g.out == GemmOut::F32Add ? 1.0f : 0.0f, static_cast<float*>(c), g.ldc);
    }
};

// A tile's rows [m, n] (stride T): rounded to bf16 values in place, or narrowed into dst.
TRT_CPU_CLONES static void round_rows_bf16(float* __restrict tile, int m, int n, int T) {
    for (int r = 0; r < m; r++) {
        float* __restrict row = tile + (size_t)r * T;
        for (int j = 0; j < n; j++) row[j] = round_to_bf16(row[j]);
    }
}
TRT_CPU_CLONES static void narrow_rows_bf16(uint16_t* __restrict dst, const float* __restrict tile,
                                            int m, int n, int T) {
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++) dst[(size_t)r * T + j] = float_to_bf16(tile[(size_t)r * T + j]);
}

// A tile's rows [m, n] (stride T) as a product's operand: the fp32 tile itself (its values
// rounded to bf16 first with `round`: the bf16 mode on fp32 operands), or narrowed to bf16 into
// `lowp` (stride T).
static const float* tile_operand(float* tile, float* /*lowp*/, int m, int n, int T, bool round) {
    if (round) round_rows_bf16(tile, m, n, T);
    return tile;
}
static const uint16_t* tile_operand(const float* tile, uint16_t* lowp, int m, int n, int T,
                                    bool /*round*/) {
    narrow_rows_bf16(lowp, tile, m, n, T);
    return lowp;
}

// The first key of a query block whose first row's first key is k0: k0 itself, or with bf16
// primitives k0 rounded down to a block boundary, so that n takes at most T/kQB values per
// block height (the keys before a row's own first key are masked: P and dS are 0 there).
template <typename E>
static int block_key_start(int k0) {
    return std::is_same_v<E, uint16_t> ? k0 - k0 % kQB : k0;
}

// Makes every product shape a call over T can use (bf16: block_key_start's), before its loop.
static void prepare_products(const ProductRunner& run, const BlockProducts& bp, int T,
                             bool backward, int threads) {
    if (run.gemm == nullptr || bp.hs == 0) return;  // (hs 0: no products, forward_impl)
    for (int i0 = 0; i0 < T; i0 += kQB) {
        const int i1 = std::min(i0 + kQB, T), m = i1 - i0;
        for (int k0 = 0; k0 <= i0; k0 += kQB) {
            const int n = i1 - k0;
            run.gemm->prepare(bp.scores(m, n), threads);
            if (!backward) {
                run.gemm->prepare(bp.out(m, n), threads);
                continue;
            }
            for (const GemmShape& g : {bp.dp(m, n), bp.dq(m, n), bp.dv(m, n), bp.dk(m, n)})
                run.gemm->prepare(g, threads);
        }
    }
}

// A softmax row's statistics: its max score and 1 / sum of exp(score - max).
struct RowStats {
    float max, inv_sum;
};

// The two halves of a softmax over band[0 .. len) around its sum: band = exp(band - mx), then
// band *= inv. The forward and the backward's recomputation both run these, so both produce
// the same bits.
TRT_CPU_CLONES static void exp_band(float* __restrict band, int len, float mx) {
    const ExpLimits lim = exp_limits();
    for (int s = 0; s < len; s++) band[s] = fast_expf(band[s] - mx, lim);
}
TRT_CPU_CLONES static void scale_band(float* __restrict band, int len, float inv) {
    for (int s = 0; s < len; s++) band[s] *= inv;
}

// Zero row[0 .. lo) and row[t+1 .. n): the mask (causal, and a sliding window's start lo).
static void zero_outside(float* row, int lo, int t, int n) {
    std::fill(row, row + lo, 0.0f);
    std::fill(row + t + 1, row + n, 0.0f);
}

// row[lo..t] holds scaled scores of query t; replace them by their softmax and zero the rest
// of row[0 .. n). Returns the row's statistics.
TRT_CPU_CLONES static RowStats causal_softmax_row(float* __restrict row, int lo, int t, int n) {
    float* __restrict band = row + lo;
    const int len = t + 1 - lo;
    const float mx = max_f(band, len);
    exp_band(band, len, mx);
    const float inv = 1.0f / sum_f(band, len);
    scale_band(band, len, inv);
    zero_outside(row, lo, t, n);
    return {mx, inv};
}

// The probabilities of a row from its scores and saved statistics: causal_softmax_row's result.
static void softmax_row_from_stats(float* row, int lo, int t, int n, RowStats st) {
    exp_band(row + lo, t + 1 - lo, st.max);
    scale_band(row + lo, t + 1 - lo, st.inv_sum);
    zero_outside(row, lo, t, n);
}

// The first key query t attends: 0, or t - window + 1 with a sliding window.
static inline int window_start(int t, int window) {
    return window > 0 && t >= window ? t - window + 1 : 0;
}

// The same with documents: also not before its example's start t - pos[t] (pos: the
// sequence's row of positions, or null). Non-decreasing in t, as window_start is.
static inline int key_start(int t, int window, const int32_t* pos) {
    const int lo = window_start(t, window);
    return pos != nullptr ? std::max(lo, t - pos[t]) : lo;
}

// The same with dropout (a = P, ad = P' = P ⊙ mask/(1-p), r = d P' in): the gradient of
// P is dP = r ⊙ mask/(1-p), so P ⊙ (dP - <P, dP>) = ad ⊙ r - a · <ad, r>.
TRT_CPU_CLONES static void dropout_softmax_backward_row(float* __restrict r,
                                                        const float* __restrict a,
                                                        const float* __restrict ad, int t,
                                                        int n) {
    const float dot = dot_f(ad, r, t + 1);
    for (int s = 0; s <= t; s++) r[s] = ad[s] * r[s] - a[s] * dot;
    for (int s = t + 1; s < n; s++) r[s] = 0.0f;
}

// Softmax backward in place on one row (datt in, dpreatt out):
// r[s] = a[s] (r[s] - <a[0..t], r[0..t]>) for s <= t, zeros on (t, n).
TRT_CPU_CLONES static void softmax_backward_row(float* __restrict r, const float* __restrict a,
                                                int t, int n) {
    const float dot = dot_f(a, r, t + 1);
    for (int s = 0; s <= t; s++) r[s] = a[s] * (r[s] - dot);
    for (int s = t + 1; s < n; s++) r[s] = 0.0f;
}

size_t attention_saved_floats(int B, int T, int /*C*/, int NH, int /*NKV*/) {
    // Each softmax row's RowStats [B,NH,T,2]: O(T), where the probabilities were O(T²).
    return 2 * (size_t)B * NH * T;
}

// A thread's tiles: scores/probabilities, P' (dropout), and the backward's dP / dS; with bf16
// operands one more tile's bytes holding the bf16 P (and the backward's dS) for the products,
// and in an MHA backward the head's fp32 dk, dv (attention_bf16_scratch_floats).
static constexpr int kForwardTiles = 2, kBackwardTiles = 3;
static size_t tile_floats(int T) { return (size_t)kQB * T; }

size_t attention_scratch_floats(int B, int T, int C, int NH, int NKV, int threads) {
    // kBackwardTiles [kQB, T] tiles per thread; with GQA also each query head's partial dk, dv
    // [B,NH,2,T,hs] (= 2·B·T·C floats) for the ordered sum over its group.
    const size_t partials = NKV < NH ? 2 * (size_t)B * T * C : 0;
    return (size_t)std::max(threads, 1) * kBackwardTiles * tile_floats(T) + partials;
}

size_t attention_bf16_scratch_floats(int B, int T, int C, int NH, int NKV, int threads) {
    // Per thread also the bf16 tiles (one fp32 tile's bytes) and, MHA, the head's fp32 dk, dv
    // [2, T, hs] (GQA accumulates into its partials).
    const size_t head = NKV < NH ? 0 : 2 * (size_t)T * (C / NH);
    return attention_scratch_floats(B, T, C, NH, NKV, threads) +
           (size_t)std::max(threads, 1) * (tile_floats(T) + head);
}

static void check_heads(int C, int NH, int NKV) {
    TRT_CHECK(NH > 0 && NKV > 0 && NH % NKV == 0 && C % NH == 0, "attention: C=", C,
              " NH=", NH, " NKV=", NKV, " (NKV must divide NH, NH must divide C)");
}

// One (b, h)'s views of qkv [B,T,(NH+2NKV)hs]: q [T,hs] of query head h and k, v [T,hs] of its
// kv head, all with row stride W.
template <typename E>
struct HeadViews {
    const E *q, *k, *v;
    int kvh;
};
template <typename E>
static HeadViews<E> head_views(const E* qkv, int bh, int T, int C, int NH, int NKV, int hs) {
    const int b = bh / NH, h = bh % NH, kvh = h / (NH / NKV), W = C + 2 * NKV * hs;
    const E* row0 = qkv + (size_t)b * T * W;
    return {row0 + h * hs, row0 + C + kvh * hs, row0 + C + (NKV + kvh) * hs, kvh};
}

// P' rows t in [i0, i1) of head bh from the tile's P rows (keys [k0, k0 + n) in columns 0..n):
// the mask of element ((b·NH + h)·T + t)·T + key, drawn over the keys the row attends (P is 0
// elsewhere, so P' is too).
static void draw_dropped(const DropoutDraw& draw, float* pd, const float* p, int bh, int T,
                         int i0, int i1, int k0, int n) {
    for (int t = i0; t < i1; t++) {
        const size_t r = (size_t)(t - i0) * T;
        const int len = t + 1 - k0;
        draw.apply(pd + r, p + r, (size_t)len, ((size_t)bh * T + t) * T + k0);
        for (int s = len; s < n; s++) pd[r + s] = 0.0f;
    }
}

// The forward on operands of type E (float, or uint16_t: bf16 through run.gemm).
template <typename E>
static void forward_impl(const ProductRunner& run, bool round, E* out /*[B,T,C]*/,
                         float* saved /*[B,NH,T,2]*/, const E* qkv /*[B,T,(NH+2NKV)hs]*/, int B,
                         int T, int C, int NH, int NKV, int threads, const DropoutMask* mask,
                         int window, const int32_t* pos) {
    constexpr bool kLowp = std::is_same_v<E, uint16_t>;
    check_heads(C, NH, NKV);
    std::optional<DropoutDraw> draw;
    if (mask != nullptr) {
        draw.emplace(*mask);
        draw->check((uint64_t)B * NH * T * T);
    }
    const int hs = C / NH;
    const int W = C + 2 * NKV * hs;  // qkv row: Q (NH heads) | K (NKV) | V (NKV); 3C for MHA
    const float scale = 1.0f / std::sqrt((float)hs);
    const int BH = B * NH;
    const BlockProducts bp{kLowp ? DType::BF16 : DType::F32, hs, W, C, T, 0, scale};
    // Each slot's tiles, kept between calls (slot < threads, cpu_common.h).
    thread_local std::vector<float> tiles;
    const size_t per_slot = (kForwardTiles + (kLowp ? 1 : 0)) * tile_floats(T);
    const size_t want = (size_t)std::max(threads, 1) * per_slot;
    if (tiles.size() < want) tiles.resize(want);
    float* const tiles0 = tiles.data();
    RowStats* const stats = reinterpret_cast<RowStats*>(saved);  // [B,NH,T]
    // One part per (b, h, query block): a query block's rows need nothing from the others, so
    // B·NH heads (12 at B 2, 6 heads: fewer than 16 threads) give T/kQB times as many parts.
    // The per-head products run single-threaded inside their part (cpu_threads.h).
    const int QB = (T + kQB - 1) / kQB;
    const SerialLibrariesScope serial;
    const int team_size = team((size_t)BH * T * T, threads);
    // (Slots for `threads`: inside another loop's part, a team of one runs in that part's slot.)
    prepare_products(run, bp, T, false, std::max(threads, 1));
    parallel_for_slots(BH * QB, team_size, [&](int part, int slot) {
        const int bh = part / QB, i0 = (part % QB) * kQB;
        const HeadViews<E> hv = head_views(qkv, bh, T, C, NH, NKV, hs);
        float* s = tiles0 + (size_t)slot * per_slot;   // [kQB, T] scores -> P
        float* pd = s + tile_floats(T);                // [kQB, T] P' (dropout)
        // [kQB, T] the product's P (bf16 operands; fp32: none)
        std::conditional_t<kLowp, uint16_t, float>* lowp = nullptr;
        if constexpr (kLowp) lowp = reinterpret_cast<uint16_t*>(pd + tile_floats(T));
        E* o = out + (size_t)(bh / NH) * T * C + (bh % NH) * hs;  // [T,hs], stride C
        RowStats* st = stats + (size_t)bh * T;
        const int32_t* ps = pos != nullptr ? pos + (size_t)(bh / NH) * T : nullptr;
        const int i1 = i0 + kQB < T ? i0 + kQB : T;
        const int m = i1 - i0, k0 = block_key_start<E>(key_start(i0, window, ps)), n = i1 - k0;
        // s[m, n] = scale * q[i0:i1] · k[k0:i1]ᵀ (0 with heads of width 0)
        if (hs > 0)
            run(bp.scores(m, n), hv.q + (size_t)i0 * W, hv.k + (size_t)k0 * W, s, slot);
        else
            for (int r = 0; r < m; r++) std::fill_n(s + (size_t)r * T, n, 0.0f);
        for (int t = i0; t < i1; t++)
            st[t] = causal_softmax_row(s + (size_t)(t - i0) * T, key_start(t, window, ps) - k0,
                                       t - k0, n);
        float* p = s;
        if (draw) {
            draw_dropped(*draw, pd, s, bh, T, i0, i1, k0, n);
            p = pd;
        }
        // o[i0:i1] = P[i0:i1, k0:i1] · v[k0:i1] (P' with dropout)
        if (hs > 0)
            run(bp.out(m, n), tile_operand(p, lowp, m, n, T, round), hv.v + (size_t)k0 * W,
                o + (size_t)i0 * C, slot);
    });
}

void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C, int NH,
                       int NKV, int threads, const AttentionProducts& how, const DropoutMask* mask,
                       int window, const int32_t* pos) {
    forward_impl<float>(ProductRunner{nullptr, how.onednn_sgemm}, how.round_bf16, out, saved, qkv,
                        B, T, C, NH, NKV, threads, mask, window, pos);
}

void attention_forward_bf16(OnednnGemm& gemm, uint16_t* out, float* saved, const uint16_t* qkv,
                            int B, int T, int C, int NH, int NKV, int threads,
                            const DropoutMask* mask, int window, const int32_t* pos) {
    forward_impl<uint16_t>(ProductRunner{&gemm, false}, false, out, saved, qkv, B, T, C, NH, NKV,
                           threads, mask, window, pos);
}

// Eight floats as one value (GCC vector extension: AVX registers in the AVX2/AVX-512 clones,
// pairs of SSE registers in the baseline one). Macros, not functions: a function returning
// one would not be cloned per CPU (and GCC warns that its ABI depends on AVX).
typedef float V8f __attribute__((vector_size(32)));
// [a0+a1, a2+a3, b0+b1, b2+b3, a4+a5, a6+a7, b4+b5, b6+b7] (AVX's vhaddps).
// __builtin_shufflevector: GCC (12+) and clang both have it (__builtin_shuffle is GCC's own).
#define TRT_HADD8(a, b)                                                \
    (__builtin_shufflevector((a), (b), 0, 2, 8, 10, 4, 6, 12, 14) + \
     __builtin_shufflevector((a), (b), 1, 3, 9, 11, 5, 7, 13, 15))

// att[s] = scale · q · k[s] over rows s < rows of k [rows, hs]. Each key is summed as dot_f
// sums (eight lanes over d, then ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))), four keys at a time:
// their lanes side by side, and the four reduction trees done together by two rounds of
// pairwise adds, so a key costs hs/8 multiply-adds instead of a latency-bound reduction. (The
// bits can differ from dot_f's in the last place where GCC fuses multiply-adds differently.)
TRT_CPU_CLONES static void scores_row(float* __restrict att, const float* __restrict q,
                                      const float* __restrict k, int rows, int hs, float scale) {
    int s = 0;
    if (hs % 8 == 0) {
        for (; s + 4 <= rows; s += 4) {
            const float* __restrict k0 = k + (size_t)s * hs;
            const float* __restrict k1 = k0 + hs;
            const float* __restrict k2 = k1 + hs;
            const float* __restrict k3 = k2 + hs;
            V8f a0 = {}, a1 = {}, a2 = {}, a3 = {};
            for (int d = 0; d < hs; d += 8) {
                V8f qd, x0, x1, x2, x3;
                std::memcpy(&qd, q + d, sizeof qd);
                std::memcpy(&x0, k0 + d, sizeof x0);
                std::memcpy(&x1, k1 + d, sizeof x1);
                std::memcpy(&x2, k2 + d, sizeof x2);
                std::memcpy(&x3, k3 + d, sizeof x3);
                a0 += qd * x0;
                a1 += qd * x1;
                a2 += qd * x2;
                a3 += qd * x3;
            }
            // h[i] = key i's (l0+l1)+(l2+l3), h[i+4] = its (l4+l5)+(l6+l7).
            const V8f h01 = TRT_HADD8(a0, a1), h23 = TRT_HADD8(a2, a3);
            const V8f h = TRT_HADD8(h01, h23);
            for (int i = 0; i < 4; i++) att[s + i] = scale * (h[i] + h[i + 4]);
        }
    }
    for (; s < rows; s++) att[s] = scale * dot_f(q, k + (size_t)s * hs, hs);
}

// o[d] = Σ_s p[s] · v[s, d] over rows s < rows of v [rows, hs], s in order; 32 dimensions at
// a time summed in registers over all rows (each o[d]'s sum unchanged).
TRT_CPU_CLONES static void weighted_rows(float* __restrict o, const float* __restrict p,
                                         const float* __restrict v, int rows, int hs) {
    constexpr int kDims = 32;
    int d0 = 0;
    for (; d0 + kDims <= hs; d0 += kDims) {
        float acc[kDims] = {};
        for (int s = 0; s < rows; s++) {
            const float a = p[s];
            const float* __restrict vs = v + (size_t)s * hs + d0;
            for (int d = 0; d < kDims; d++) acc[d] += a * vs[d];
        }
        for (int d = 0; d < kDims; d++) o[d0 + d] = acc[d];
    }
    if (d0 == hs) return;
    for (int d = d0; d < hs; d++) o[d] = 0.0f;
    for (int s = 0; s < rows; s++) {
        const float a = p[s];
        const float* __restrict vs = v + (size_t)s * hs;
        for (int d = d0; d < hs; d++) o[d] += a * vs[d];
    }
}

void attention_cached_forward(float* out /*[n,NH*hs]*/, const float* qkv /*[n,W]*/,
                              float* k_cache /*[NKV,max_T,hs]*/, float* v_cache, int pos0, int n,
                              int NH, int NKV, int hs, int max_T, int threads, int window,
                              bool round_bf16) {
    check_heads(NH * hs, NH, NKV);
    TRT_CHECK(pos0 >= 0 && n >= 1 && pos0 + n <= max_T, "attention_cached_forward: rows ",
              pos0, " .. ", pos0 + n, " do not fit a cache of ", max_T);
    const int C = NH * hs, G = NH / NKV;
    const size_t W = (size_t)C + 2 * (size_t)NKV * hs;
    for (int i = 0; i < n; i++)
        for (int g = 0; g < NKV; g++) {
            const float* row = qkv + (size_t)i * W + C;
            const size_t at = ((size_t)g * max_T + pos0 + i) * hs;
            std::copy(row + (size_t)g * hs, row + (size_t)(g + 1) * hs, k_cache + at);
            std::copy(row + (size_t)(NKV + g) * hs, row + (size_t)(NKV + g + 1) * hs,
                      v_cache + at);
        }
    const float scale = 1.0f / std::sqrt((float)hs);
    const int keys = pos0 + n;  // the longest row's span
    // A decode step (n = 1) is small, but its heads split well: a team from 4K products on.
    const bool split = (size_t)n * NH * keys * hs >= 4096 && n * NH >= 2;
    const int team_size = split ? std::max(1, std::min(threads, n * NH)) : 1;
    // One row of scores per thread (slot < threads, cpu_common.h), kept between calls (a decode
    // step is one small call).
    thread_local std::vector<float> scratch;
    const size_t rows = (size_t)std::max(threads, 1);
    if (scratch.size() < rows * keys) scratch.resize(rows * keys);
    float* const scores = scratch.data();
    auto row_head = [&](float* att, int ih) {
        const int i = ih / NH, h = ih % NH, g = h / G, t = pos0 + i;
        const float* q = qkv + (size_t)i * W + (size_t)h * hs;
        const float* k = k_cache + (size_t)g * max_T * hs;
        const float* v = v_cache + (size_t)g * max_T * hs;
        // Keys lo .. t: the whole prefix, or a sliding window's last `window`.
        const int lo = window_start(t, window);
        scores_row(att, q, k + (size_t)lo * hs, t + 1 - lo, hs, scale);
        causal_softmax_row(att, 0, t - lo, t + 1 - lo);
        if (round_bf16) round_rows_bf16(att, 1, t + 1 - lo, 0);  // P as attention_forward's
        weighted_rows(out + (size_t)i * C + (size_t)h * hs, att, v + (size_t)lo * hs,
                      t + 1 - lo, hs);
    };
    parallel_for_slots(n * NH, team_size,
                       [&](int ih, int slot) { row_head(scores + (size_t)slot * keys, ih); });
}

// What every (b, h) of one attention_backward call shares (operands of type E).
template <typename E>
struct BackwardCall {
    E* dqkv;                   // [B,T,(NH+2NKV)hs]
    float* partials;           // GQA: [B,NH,2,T,hs] per-query-head dk, dv; null for MHA
    const E* dout;             // [B,T,C]
    const E* qkv;              // [B,T,(NH+2NKV)hs]
    const RowStats* stats;     // [B,NH,T]
    const DropoutDraw* draw;   // null without dropout
    const int32_t* pos;        // [B,T] or null
    int T, C, NH, NKV, hs, W, window;
    float scale;
    ProductRunner run;
    bool round;  // fp32 operands holding bf16 values: P and dS rounded
};

// The fp32 dk, dv [T, hs] of one head of an MHA call on bf16 operands (stride hs), after a
// slot's tiles: rounded into dqkv once all query blocks are summed.
static size_t head_accumulator_floats(int T, int hs) { return 2 * (size_t)T * hs; }

// One (b, h), query block by query block: writes all rows of its own dq columns, and of its
// dk, dv columns (MHA) or partials (GQA). `tiles`: its slot's kBackwardTiles [kQB, T] tiles
// (bf16: then the bf16 tiles and the head's accumulators).
template <typename E>
static void backward_head(const BackwardCall<E>& c, int bh, float* tiles, int slot) {
    constexpr bool kLowp = std::is_same_v<E, uint16_t>;
    const int T = c.T, C = c.C, NH = c.NH, hs = c.hs, W = c.W, window = c.window;
    float* p = tiles;                // [kQB, T] P, recomputed
    float* pd = p + tile_floats(T);  // [kQB, T] P' (dropout)
    float* d = pd + tile_floats(T);  // [kQB, T] dP -> dS
    // bf16: [kQB, T] P and dS as the products' operands (two bf16 tiles in one fp32 tile's
    // bytes), then the head's dk, dv accumulators. (fp32: none; the products read p and d.)
    using Lowp = std::conditional_t<kLowp, uint16_t, float>;
    Lowp* p16 = nullptr;
    Lowp* ds16 = nullptr;
    [[maybe_unused]] float* acc = nullptr;
    if constexpr (kLowp) {
        p16 = reinterpret_cast<uint16_t*>(d + tile_floats(T));
        ds16 = p16 + tile_floats(T);
        acc = d + 2 * tile_floats(T);
    }
    const HeadViews<E> hv = head_views(c.qkv, bh, T, C, NH, c.NKV, hs);
    const size_t row0 = (size_t)(bh / NH) * T * W;
    E* dq = c.dqkv + row0 + (bh % NH) * hs;
    // dk, dv: this head's partials (GQA, stride hs); MHA: straight into dqkv (fp32, stride W),
    // or the fp32 accumulators (bf16, stride hs).
    float *dk, *dv;
    int ldkv = hs;
    if (c.partials) {
        dk = c.partials + (size_t)bh * 2 * T * hs;  // [T,hs]
        dv = dk + (size_t)T * hs;
    } else if constexpr (kLowp) {
        dk = acc;
        dv = acc + (size_t)T * hs;
    } else {
        dk = c.dqkv + row0 + C + hv.kvh * hs;
        dv = c.dqkv + row0 + C + (c.NKV + hv.kvh) * hs;
        ldkv = W;
    }
    // dk, dv are sums over the query blocks that see a key: start from 0.
    for (int t = 0; t < T; t++) {
        std::fill_n(dk + (size_t)t * ldkv, hs, 0.0f);
        std::fill_n(dv + (size_t)t * ldkv, hs, 0.0f);
    }
    const BlockProducts bp{kLowp ? DType::BF16 : DType::F32, hs, W, C, T, ldkv, c.scale};
    const E* dout_h = c.dout + (size_t)(bh / NH) * T * C + (bh % NH) * hs;  // stride C
    const RowStats* st = c.stats + (size_t)bh * T;
    const int32_t* ps = c.pos != nullptr ? c.pos + (size_t)(bh / NH) * T : nullptr;
    for (int i0 = 0; i0 < T; i0 += kQB) {
        const int i1 = i0 + kQB < T ? i0 + kQB : T;
        const int m = i1 - i0, k0 = block_key_start<E>(key_start(i0, window, ps)), n = i1 - k0;
        // P[m, n] recomputed as the forward made it: its scores, then its row statistics.
        c.run(bp.scores(m, n), hv.q + (size_t)i0 * W, hv.k + (size_t)k0 * W, p, slot);
        for (int t = i0; t < i1; t++)
            softmax_row_from_stats(p + (size_t)(t - i0) * T, key_start(t, window, ps) - k0,
                                   t - k0, n, st[t]);
        // The probabilities the output was made of: P, or P' with dropout.
        float* used = p;
        if (c.draw) {
            draw_dropped(*c.draw, pd, p, bh, T, i0, i1, k0, n);
            used = pd;
        }
        // d[m, n] = dout_h[i0:i1] · v[k0:i1]ᵀ, then the softmax backward (dP -> dS;
        // zeros above the diagonal, and before the window where P is 0).
        c.run(bp.dp(m, n), dout_h + (size_t)i0 * C, hv.v + (size_t)k0 * W, d, slot);
        for (int t = i0; t < i1; t++) {
            const size_t r = (size_t)(t - i0) * T;
            if (c.draw)
                dropout_softmax_backward_row(d + r, p + r, pd + r, t - k0, n);
            else
                softmax_backward_row(d + r, p + r, t - k0, n);
        }
        // The products' operands (fp32 P and dS are not needed after this).
        const auto* used_op = tile_operand(used, p16, m, n, T, c.round);
        const auto* ds_op = tile_operand(d, ds16, m, n, T, c.round);
        // dq[i0:i1] = scale dS · k[k0:i1]
        c.run(bp.dq(m, n), ds_op, hv.k + (size_t)k0 * W, dq + (size_t)i0 * W, slot);
        // dv[k0:i1] += usedᵀ · dout_h[i0:i1];  dk[k0:i1] += scale dSᵀ · q[i0:i1]
        c.run(bp.dv(m, n), used_op, dout_h + (size_t)i0 * C, dv + (size_t)k0 * ldkv, slot);
        c.run(bp.dk(m, n), ds_op, hv.q + (size_t)i0 * W, dk + (size_t)k0 * ldkv, slot);
    }
    if constexpr (kLowp) {
        if (c.partials) return;
        // MHA on bf16: the summed dk, dv rounded into dqkv once.
        E* dk16 = c.dqkv + row0 + C + hv.kvh * hs;
        E* dv16 = c.dqkv + row0 + C + (c.NKV + hv.kvh) * hs;
        for (int t = 0; t < T; t++) {
            narrow_rows_bf16(dk16 + (size_t)t * W, dk + (size_t)t * hs, 1, hs, 0);
            narrow_rows_bf16(dv16 + (size_t)t * W, dv + (size_t)t * hs, 1, hs, 0);
        }
    }
}

// An fp32 value stored as E.
static inline void store_as(float* dst, float x) { *dst = x; }
static inline void store_as(uint16_t* dst, float x) { *dst = float_to_bf16(x); }

// GQA: each kv head's dk, dv is the sum of its G query heads' partials [B,NH,2,T,hs], in
// head order, split over the B·T rows.
template <typename E>
static void sum_group_partials(E* dqkv /*[B,T,(NH+2NKV)hs]*/, const float* partials, int B, int T,
                               int C, int NH, int NKV, int hs, int threads) {
    const int G = NH / NKV;
    const int W = C + 2 * NKV * hs;
    const int N = B * T;
    constexpr int kLane = 64;  // dimensions summed at a time, in registers or L1
    parallel_for(N, team((size_t)N * NKV * 2 * G * hs, threads), [&](int n) {
        const int b = n / T, t = n % T;
        for (int kvh = 0; kvh < NKV; kvh++)
            for (int part = 0; part < 2; part++) {  // 0: dk, 1: dv
                E* __restrict dst = dqkv + (size_t)n * W + C + (part * NKV + kvh) * hs;
                const size_t bh0 = (size_t)b * NH + (size_t)kvh * G;
                // Head g's partial row t: [bh0 + g][part][t], rows of hs floats.
                auto src = [&](int g) -> const float* {
                    return partials + (((bh0 + g) * 2 + part) * T + t) * hs;
                };
                for (int d0 = 0; d0 < hs; d0 += kLane) {
                    const int w = std::min(kLane, hs - d0);
                    float sum[kLane];
                    const float* __restrict p0 = src(0) + d0;
                    for (int i = 0; i < w; i++) sum[i] = p0[i];
                    for (int g = 1; g < G; g++) {
                        const float* __restrict pg = src(g) + d0;
                        for (int i = 0; i < w; i++) sum[i] += pg[i];
                    }
                    for (int i = 0; i < w; i++) store_as(dst + d0 + i, sum[i]);
                }
            }
    });
}

// The backward on operands of type E (float, or uint16_t: bf16 through run.gemm).
template <typename E>
static void backward_impl(const ProductRunner& run, bool round, E* dqkv, float* scratch,
                          const E* dout, const E* qkv, const float* saved, int B, int T, int C,
                          int NH, int NKV, int threads, const DropoutMask* mask, int window,
                          const int32_t* pos) {
    constexpr bool kLowp = std::is_same_v<E, uint16_t>;
    check_heads(C, NH, NKV);
    std::optional<DropoutDraw> draw;
    if (mask != nullptr) {
        draw.emplace(*mask);
        draw->check((uint64_t)B * NH * T * T);
    }
    const int hs = C / NH;
    const int G = NH / NKV;
    const int W = C + 2 * NKV * hs;
    const float scale = 1.0f / std::sqrt((float)hs);
    const int BH = B * NH;
    if (hs <= 0) return;
    const size_t per_slot =
        kBackwardTiles * tile_floats(T) +
        (kLowp ? tile_floats(T) + (G > 1 ? 0 : head_accumulator_floats(T, hs)) : 0);
    // GQA: per-query-head dk, dv partials [B,NH,2,T,hs] after the threads' tiles.
    float* partials = G > 1 ? scratch + (size_t)std::max(threads, 1) * per_slot : nullptr;
    const auto* stats = reinterpret_cast<const RowStats*>(saved);  // [B,NH,T]
    const BackwardCall<E> call{dqkv, partials, dout, qkv, stats, draw ? &*draw : nullptr,
                               pos, T, C, NH, NKV, hs, W, window, scale, run, round};
    const SerialLibrariesScope serial;
    const int team_size = team((size_t)BH * T * T, threads);
    // (ldkv only sizes the dk, dv shapes: hs for partials and bf16 accumulators, else W.)
    const BlockProducts bp{kLowp ? DType::BF16 : DType::F32, hs, W, C, T, hs, scale};
    prepare_products(run, bp, T, true, std::max(threads, 1));
    // Every (b, h) writes all rows of its own dq columns, and of its dk, dv columns (MHA) or
    // partials (GQA), so together they overwrite all of dqkv.
    parallel_for_slots(BH, team_size, [&](int bh, int slot) {
        backward_head(call, bh, scratch + (size_t)slot * per_slot, slot);
    });
    // (Every partial is written.)
    if (partials) sum_group_partials(dqkv, partials, B, T, C, NH, NKV, hs, threads);
}

void attention_backward(float* dqkv /*[B,T,(NH+2NKV)hs] overwritten*/, float* scratch,
                        const float* dout /*[B,T,C]*/, const float* qkv /*[B,T,(NH+2NKV)hs]*/,
                        const float* saved /*[B,NH,T,2]*/, int B, int T, int C, int NH, int NKV,
                        int threads, const AttentionProducts& how, const DropoutMask* mask,
                        int window, const int32_t* pos) {
    backward_impl<float>(ProductRunner{nullptr, how.onednn_sgemm}, how.round_bf16, dqkv, scratch,
                         dout, qkv, saved, B, T, C, NH, NKV, threads, mask, window, pos);
}

void attention_backward_bf16(OnednnGemm& gemm, uint16_t* dqkv, float* scratch, const uint16_t* dout,
                             const uint16_t* qkv, const float* saved, int B, int T, int C, int NH,
                             int NKV, int threads, const DropoutMask* mask, int window,
                             const int32_t* pos) {
    backward_impl<uint16_t>(ProductRunner{&gemm, false}, false, dqkv, scratch, dout, qkv, saved, B,
                            T, C, NH, NKV, threads, mask, window, pos);
}

}  // namespace trt::cpu
