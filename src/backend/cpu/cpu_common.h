// Private helpers shared by the CPU kernels: static partitioning, a vectorisable exp,
// fixed-order float reductions, and per-CPU clones of the hot loops.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

// The library is built for baseline x86-64 (SSE2). Hot elementwise/row kernels are also
// compiled for x86-64-v3 (AVX2) and x86-64-v4 (AVX-512: 6% off a bf16 step on the Zen 5 dev
// machine, bench/results/2026-11-26-cpu-onednn.md) and picked at load time (GCC function
// multiversioning). The choice is fixed per machine, so results stay reproducible run to run.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define TRT_CPU_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TRT_CPU_CLONES
#endif


namespace trt::cpu {

// Column-reduction kernels (bias and layernorm parameter gradients) walk their columns in
// chunks of this many, with the accumulators on the stack.
inline constexpr int kColChunk = 256;

// The team to wake for a parallel loop over `work` elements: `threads`, or 1 below
// kMinParallelWork. A region costs a wake-up and a barrier of every thread in it:
// microseconds on idle cores, but a scheduler time slice each when another process keeps the
// cores busy (libgomp spins at its barriers) — two test processes on 2 cores ran a model's
// ops in one-row chunks 800x slower. Results never depend on the team: every loop partitions
// its work by `threads` (a team of one walks all the parts in order).
inline constexpr size_t kMinParallelWork = size_t{1} << 15;
inline int team(size_t work, int threads) { return work < kMinParallelWork ? 1 : threads; }

// body(i) for i in [0, n), statically split over a team of `team_size` threads. A team of
// one runs in the caller with no OpenMP region at all: libgomp builds a team even for one
// thread (an allocation and a barrier, ~0.3-1 us), which a decode step's ~40 one-row ops
// felt as a fifth of their time.
template <typename Index, typename Body>
inline void parallel_for(Index n, int team_size, Body&& body) {
    if (team_size <= 1) {
        for (Index i = 0; i < n; i++) body(i);
        return;
    }
#pragma omp parallel for schedule(static) num_threads(team_size)
    for (Index i = 0; i < n; i++) body(i);
}

// [begin, end) of part `i` of `parts` near-equal contiguous pieces of [0, n). A static
// partition: the result depends only on (n, parts, i), which keeps reductions reproducible.
inline void split_range(size_t n, size_t parts, size_t i, size_t* begin, size_t* end) {
    size_t base = n / parts, rem = n % parts;
    *begin = i * base + std::min(i, rem);
    *end = *begin + base + (i < rem ? 1 : 0);
}

// Column sums over all N rows, reproducibly: each of `threads` threads owns a static range of
// the M columns and walks every row in order (no cross-thread reduction), kColChunk columns
// at a time with double accumulators on the stack (no allocation in a training step).
// chunk(j0, w, acc) adds column j0 + j's contribution into acc[j] for j < w (acc zeroed);
// then dsum[j0 + j] += acc[j].
template <typename ChunkFn>
inline void column_sums_into(float* dsum, int M, int threads, ChunkFn chunk) {
    const size_t parts = (size_t)threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t part = 0; part < parts; part++) {
        size_t c0, c1;
        split_range((size_t)M, parts, part, &c0, &c1);
        for (size_t j0 = c0; j0 < c1; j0 += kColChunk) {
            const int w = (int)std::min<size_t>(kColChunk, c1 - j0);
            double acc[kColChunk] = {};
            chunk(j0, w, acc);
            for (int j = 0; j < w; j++) dsum[j0 + j] += (float)acc[j];
        }
    }
}

// The norms' parameter-gradient pass (layernorm dw and db, rmsnorm dw): called INSIDE an
// OpenMP parallel region of `threads` threads (an orphaned work-share, so it can follow the
// rows pass in the same region). Each thread owns a static range of the C columns and walks
// every row in order, kColChunk columns at a time with K float accumulators per column on
// the stack: chunk(j0, w, acc) adds column j0 + j's contributions into acc[k][j] (zeroed),
// then dst[k][j0 + j] += acc[k][j]. No cross-thread reduction: each column's sum is the same
// whatever the thread count.
template <int K, typename ChunkFn>
inline void norm_param_columns(float* const (&dst)[K], int C, int threads, ChunkFn chunk) {
    const size_t parts = (size_t)threads;
#pragma omp for schedule(static)
    for (size_t part = 0; part < parts; part++) {
        size_t c0, c1;
        split_range((size_t)C, parts, part, &c0, &c1);
        for (size_t j0 = c0; j0 < c1; j0 += kColChunk) {
            const int w = (int)std::min<size_t>(kColChunk, c1 - j0);
            float acc[K][kColChunk] = {};
            chunk(j0, w, acc);
            for (int k = 0; k < K; k++)
                for (int j = 0; j < w; j++) dst[k][j0 + j] += acc[k][j];
        }
    }
}

// Clamp bounds for fast_expf, hidden from the optimiser: with literal bounds GCC threads the
// clamped constant through the polynomial and the resulting branch stops vectorisation.
// Fetch once outside a loop.
struct ExpLimits {
    float lo, hi;
};
inline ExpLimits exp_limits() {
    float lo = -87.0f, hi = 88.0f;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __asm__("" : "+x"(lo), "+x"(hi));
#endif
    return {lo, hi};
}

// e^x in float, branch-free so loops over it vectorise (glibc expf does not without
// -ffast-math). 2^n · e^r with n = round(x·log2 e), |r| <= ln2/2, degree-7 Taylor on r:
// ~1 ulp. Inputs are clamped to [-87, 88] (results stay normal and finite); a NaN (which
// the clamps let through) gives NaN, with the exponent bits built in unsigned arithmetic so
// no input reaches undefined behaviour (a signed left shift of a negative number).
inline float fast_expf(float x, ExpLimits lim) {
    x = x < lim.lo ? lim.lo : x;
    x = x > lim.hi ? lim.hi : x;
    const float magic = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
    const float t = x * 1.44269504088896341f + magic;
    const float n = t - magic;
    float r = x - n * 0.693359375f;  // Cody-Waite split of ln 2
    r = r - n * -2.12194440e-4f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t ti;
    std::memcpy(&ti, &t, sizeof ti);
    // 2^n as float bits: n from t's mantissa (t's bits - 0x4B400000), plus the bias 127.
    const uint32_t si = (ti - 0x4B400000u + 127u) << 23;
    float scale;
    std::memcpy(&scale, &si, sizeof scale);
    return p * scale;
}

// Sum / dot product with 8 interleaved accumulators combined in a fixed order: vectorises
// without -ffast-math and gives the same bits every run.
inline float sum_f(const float* __restrict a, int n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j];
    for (; i < n; i++) acc[0] += a[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

inline float dot_f(const float* __restrict a, const float* __restrict b, int n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    for (; i < n; i++) acc[0] += a[i] * b[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

inline float max_f(const float* __restrict a, int n) {
    float m = a[0];
    for (int i = 1; i < n; i++) m = a[i] > m ? a[i] : m;
    return m;
}

}  // namespace trt::cpu
