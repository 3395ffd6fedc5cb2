// Private helpers shared by the CPU kernels: static partitioning, a vectorisable exp,
// fixed-order float reductions, and per-CPU clones of the hot loops.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_pool.h"
#include "core/error.h"

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
// kMinParallelWork. A parallel loop costs a wake-up of the pool's workers (cpu_pool.h) and a
// wait for the parts they took: microseconds on idle cores, more beside busy work, and a
// decode step's ~40 one-row ops would feel it. Results never depend on the team: a loop's
// parts are fixed by its work (and, for the reductions, by `threads`), not by who runs them.
inline constexpr size_t kMinParallelWork = size_t{1} << 15;
inline int team(size_t work, int threads) { return work < kMinParallelWork ? 1 : threads; }

// [begin, end) of part `i` of `parts` near-equal contiguous pieces of [0, n). A static
// partition: the result depends only on (n, parts, i), which keeps reductions reproducible.
inline void split_range(size_t n, size_t parts, size_t i, size_t* begin, size_t* end) {
    size_t base = n / parts, rem = n % parts;
    *begin = i * base + std::min(i, rem);
    *end = *begin + base + (i < rem ? 1 : 0);
}

// Parts per thread of a parallel loop: threads claim parts as they come free, so a thread the
// scheduler parks beside other work delays the loop by one part, not by its whole share.
inline constexpr size_t kPartsPerThread = 4;

// body(i, slot) for i in [0, n) over a team of `team_size` threads (cpu_pool.h), in up to
// kPartsPerThread contiguous parts per thread; `slot` names the running thread's scratch
// (< team_size; inside another loop's part, that part's slot: size scratch for `threads`).
// A team of one runs in the caller, in order, with no pool involved.
template <typename Index, typename Body>
inline void parallel_for_slots(Index n, int team_size, Body&& body) {
    if (team_size <= 1 || n <= 1) {
        const int slot = current_slot();
        for (Index i = 0; i < n; i++) body(i, slot);
        return;
    }
    const size_t parts = std::min((size_t)n, (size_t)team_size * kPartsPerThread);
    run_parts(parts, team_size, [&](size_t part, int slot) {
        size_t i0, i1;
        split_range((size_t)n, parts, part, &i0, &i1);
        for (size_t i = i0; i < i1; i++) body((Index)i, slot);
    });
}

// body(i) for i in [0, n), as parallel_for_slots.
template <typename Index, typename Body>
inline void parallel_for(Index n, int team_size, Body&& body) {
    parallel_for_slots(n, team_size, [&](Index i, int) { body(i); });
}

// Column reductions (bias and norm parameter gradients) are cut into parts of kColChunk
// columns by kRowBlock rows: a reduction over few columns still has parts for every thread
// (by columns alone, a 384-wide bias gradient was 2 parts — at most 2 threads however many
// there are — and the norms' 2 column parts each walked all N rows while 16 threads shared
// the rest). Each part sums its rows, in order, into its own partial sums; the partials are
// then added in row-block order. The parts depend on (N, M) alone, never on the threads: the
// sums are the same whatever the team.
inline constexpr int kRowBlock = 128;
inline size_t column_chunks(int M) { return ((size_t)M + kColChunk - 1) / kColChunk; }
inline size_t row_blocks(int N) {
    return std::max<size_t>(1, ((size_t)N + kRowBlock - 1) / kRowBlock);
}

// The partial sums of one reduction: per calling thread, grown and never shrunk, so a training
// step allocates nothing after its first. Not re-entrant on one thread (no reduction runs
// inside another's part): checked.
template <typename T>
class ReductionScratch {
public:
    explicit ReductionScratch(size_t n) {
        TRT_CHECK(!busy(), "cpu: a column reduction inside another one's part");
        if (buffer().size() < n) buffer().resize(n);  // may throw: busy is not set yet
        busy() = true;
    }
    ~ReductionScratch() { busy() = false; }
    ReductionScratch(const ReductionScratch&) = delete;
    ReductionScratch& operator=(const ReductionScratch&) = delete;
    T* data() { return buffer().data(); }

private:
    static std::vector<T>& buffer() {
        thread_local std::vector<T> b;
        return b;
    }
    static bool& busy() {
        thread_local bool in_use = false;
        return in_use;
    }
};

// Part p of a reduction's (column chunk, row block) grid: its columns [j0, j0 + w) and rows
// [r0, r0 + rows).
struct ColumnPart {
    size_t j0, r0, block;
    int w, rows;
};
inline ColumnPart column_part(size_t p, int N, int M) {
    const size_t chunks = column_chunks(M), c = p % chunks, b = p / chunks;
    const size_t r0 = b * kRowBlock;
    return {c * kColChunk, r0, b, (int)std::min<size_t>(kColChunk, (size_t)M - c * kColChunk),
            (int)std::min<size_t>(kRowBlock, (size_t)N - r0)};
}

// Column sums over all N rows, reproducibly (above), with double accumulators (N can be
// thousands of rows). chunk(j0, w, r0, rows, acc) adds rows [r0, r0 + rows) of columns
// j0 + j into acc[j] for j < w (acc zeroed, row order); then dsum[j] += the blocks' sums.
template <typename ChunkFn>
inline void column_sums_into(float* dsum, int N, int M, int threads, ChunkFn chunk) {
    const size_t blocks = row_blocks(N), parts = column_chunks(M) * blocks;
    ReductionScratch<double> scratch(blocks * (size_t)M);
    double* partial = scratch.data();  // [blocks, M]
    parallel_for(parts, team((size_t)N * M, threads), [&](size_t p) {
        const ColumnPart c = column_part(p, N, M);
        double acc[kColChunk] = {};
        if (c.rows > 0) chunk(c.j0, c.w, c.r0, c.rows, acc);
        std::memcpy(partial + c.block * M + c.j0, acc, sizeof(double) * c.w);
    });
    for (int j = 0; j < M; j++) {
        double s = partial[j];
        for (size_t b = 1; b < blocks; b++) s += partial[b * M + j];
        dsum[j] += (float)s;
    }
}

// A norm's backward as one parallel job: the parameter gradients dst[k] (K of them, float
// accumulators) by column part — column_part_fn(j0, w, r0, rows, acc) adds rows [r0, r0 +
// rows) of columns j0 + j into acc[k][j] (zeroed) — first, then rows(r0, r1) over blocks of
// the rows (dinp). The column parts never read dinp, so the two need no wait between them.
// Then dst[k][j] += the blocks' partial sums, in block order.
template <int K, typename ColumnPartFn, typename Rows>
inline void norm_backward_job(float* const (&dst)[K], int N, int C, int team_size,
                              ColumnPartFn column_part_fn, Rows rows) {
    const size_t blocks = row_blocks(N), cols = column_chunks(C) * blocks;
    const size_t row_parts =
        std::max<size_t>(1, std::min((size_t)N, (size_t)team_size * kPartsPerThread));
    ReductionScratch<float> scratch(blocks * K * (size_t)C);
    float* partial = scratch.data();  // [blocks, K, C]
    run_parts(cols + row_parts, team_size, [&](size_t part, int) {
        if (part < cols) {
            const ColumnPart c = column_part(part, N, C);
            float acc[K][kColChunk] = {};
            if (c.rows > 0) column_part_fn(c.j0, c.w, c.r0, c.rows, acc);
            for (int k = 0; k < K; k++)
                std::memcpy(partial + (c.block * K + k) * C + c.j0, acc[k], sizeof(float) * c.w);
            return;
        }
        size_t r0, r1;
        split_range((size_t)N, row_parts, part - cols, &r0, &r1);
        rows(r0, r1);
    });
    for (int k = 0; k < K; k++)
        for (int j = 0; j < C; j++) {
            float s = partial[k * C + j];
            for (size_t b = 1; b < blocks; b++) s += partial[(b * K + k) * C + j];
            dst[k][j] += s;
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
