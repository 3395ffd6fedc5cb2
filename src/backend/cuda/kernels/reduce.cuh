// Shared device reduction helpers: warp butterflies and a fixed-order column reduction
// (per-block partials in scratch, then one ordered pass). No atomics anywhere, so every
// result is bitwise reproducible run to run.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace trt::cuda {

inline constexpr unsigned kFullWarpMask = 0xffffffffu;

inline size_t align_up_256(size_t bytes) { return (bytes + 255) & ~static_cast<size_t>(255); }

// Xor butterfly over the 32 lanes. Lanes l and l^o combine the same pair of values and fp add
// / max are commutative, so every lane ends with the same bits, whatever the scheduling.
// All 32 lanes must take part.
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullWarpMask, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullWarpMask, v, o));
    return v;
}

// ---- fixed-order column reduction over the rows of an [N, M] matrix
//
// Pass 1 (colred::partials_kernel): block (kCols, kRowLanes) owns kCols columns of one chunk
// of rows; its thread (x, y) walks rows y, y + kRowLanes, ... of the chunk in order, then the
// kRowLanes accumulators of a column are summed in y order and written to
// part[(o * chunks + chunk) * M + m]. Pass 2 (colred::finalize_kernel): one thread per column
// sums the chunk partials in chunk order and adds (+=) into the destination. The chunking
// depends only on (N, M), so the bits do not depend on the GPU either.
namespace colred {

inline constexpr int kCols = 32;           // one warp width: coalesced row segments
inline constexpr int kRowLanes = 8;        // rows in flight per block
inline constexpr int kTargetBlocks = 1024; // enough blocks to fill a large GPU
inline constexpr int kMaxChunks = 128;     // bounds the serial loop of the finalize pass
inline constexpr int kMinRowsPerChunk = 64;

struct Plan {
    int tiles = 0;           // column tiles of kCols
    int chunks = 0;          // row chunks (grid.y)
    int rows_per_chunk = 0;
};

inline Plan plan(int N, int M) {
    Plan p;
    p.tiles = (M + kCols - 1) / kCols;
    int cap = (kTargetBlocks + p.tiles - 1) / p.tiles;
    if (cap > kMaxChunks) cap = kMaxChunks;
    if (cap < 1) cap = 1;
    int g = (N + kMinRowsPerChunk - 1) / kMinRowsPerChunk;
    if (g > cap) g = cap;
    if (g < 1) g = 1;
    p.rows_per_chunk = (N + g - 1) / g;
    if (p.rows_per_chunk < 1) p.rows_per_chunk = 1;
    p.chunks = (N + p.rows_per_chunk - 1) / p.rows_per_chunk;  // no empty chunk
    if (p.chunks < 1) p.chunks = 1;
    return p;
}

// Scratch bytes of one call: nout partial rows of `acc_bytes` elements per chunk.
inline size_t partial_bytes(int N, int M, int nout, size_t acc_bytes) {
    const Plan p = plan(N, M);
    return align_up_256(static_cast<size_t>(p.chunks) * static_cast<size_t>(M) *
                        static_cast<size_t>(nout) * acc_bytes);
}

// Upper bound of partial_bytes over every N and every M <= max_m: chunks <=
// ceil(kTargetBlocks / tiles) and M <= tiles * kCols give chunks * M < (kTargetBlocks + tiles)
// * kCols.
inline size_t partial_bytes_bound(int max_m, int nout, size_t acc_bytes) {
    if (max_m <= 0) return 0;
    const size_t tiles = static_cast<size_t>((max_m + kCols - 1) / kCols);
    return align_up_256((kTargetBlocks + tiles) * kCols * static_cast<size_t>(nout) * acc_bytes);
}

// F: copyable functor with
//   __device__ void operator()(int n, int m, Acc (&acc)[NOUT]) const
// adding row n, column m's contribution(s) to acc (it may also write an output element).
// Launch: grid (plan.tiles, plan.chunks), block (kCols, kRowLanes).
template <typename Acc, int NOUT, typename F>
__global__ void __launch_bounds__(kCols* kRowLanes)
    partials_kernel(Acc* __restrict__ part, int N, int M, int rows_per_chunk, F f) {
    __shared__ Acc sh[NOUT][kRowLanes][kCols];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int m = blockIdx.x * kCols + tx;
    const int chunk = blockIdx.y;
    const int r0 = chunk * rows_per_chunk;
    const int r1 = min(N, r0 + rows_per_chunk);
    Acc acc[NOUT];
#pragma unroll
    for (int o = 0; o < NOUT; o++) acc[o] = Acc(0);
    if (m < M) {
#pragma unroll 4
        for (int n = r0 + ty; n < r1; n += kRowLanes) f(n, m, acc);
    }
#pragma unroll
    for (int o = 0; o < NOUT; o++) sh[o][ty][tx] = acc[o];
    __syncthreads();
    if (ty == 0 && m < M) {
#pragma unroll
        for (int o = 0; o < NOUT; o++) {
            Acc s = sh[o][0][tx];
#pragma unroll
            for (int k = 1; k < kRowLanes; k++) s += sh[o][k][tx];  // fixed y order
            part[(static_cast<size_t>(o) * gridDim.y + chunk) * M + m] = s;
        }
    }
}

template <int NOUT>
struct Dsts {
    float* p[NOUT];  // entries may be nullptr: that output is skipped
};

// dst.p[o][m] += (float)(sum over chunks c in order of part[(o * chunks + c) * M + m]).
// Launch: any 1-D grid (grid-stride over M).
template <typename Acc, int NOUT>
__global__ void finalize_kernel(Dsts<NOUT> dst, const Acc* __restrict__ part, int chunks,
                                int M) {
    for (int m = blockIdx.x * blockDim.x + threadIdx.x; m < M; m += gridDim.x * blockDim.x) {
#pragma unroll
        for (int o = 0; o < NOUT; o++) {
            if (!dst.p[o]) continue;
            const Acc* p = part + static_cast<size_t>(o) * chunks * M + m;
            Acc s = p[0];
#pragma unroll 4
            for (int c = 1; c < chunks; c++) s += p[static_cast<size_t>(c) * M];
            dst.p[o][m] += static_cast<float>(s);
        }
    }
}

// Both passes on ctx.stream, partials in ctx.scratch. `what` names the op in the error when the
// scratch is too small. N, M > 0.
template <typename Acc, int NOUT, typename F>
inline void run(const CudaCtx& ctx, const char* what, Dsts<NOUT> dst, int N, int M, F f) {
    const Plan p = plan(N, M);
    const size_t need = partial_bytes(N, M, NOUT, sizeof(Acc));
    TRT_CHECK(need <= ctx.scratch_bytes, what, " needs ", need, " bytes of CUDA scratch for N=", N,
              " M=", M, ", have ", ctx.scratch_bytes, " (sized by reserve(ModelDims))");
    Acc* part = static_cast<Acc*>(ctx.scratch);
    partials_kernel<Acc, NOUT, F>
        <<<dim3(p.tiles, p.chunks), dim3(kCols, kRowLanes), 0, ctx.stream>>>(part, N, M,
                                                                           p.rows_per_chunk, f);
    TRT_CUDA_LAUNCH_CHECK();
    const int threads = 256;
    const int blocks = (M + threads - 1) / threads;
    finalize_kernel<Acc, NOUT><<<blocks, threads, 0, ctx.stream>>>(dst, part, p.chunks, M);
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace colred
}  // namespace trt::cuda
