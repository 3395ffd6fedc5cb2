// draw_token on the GPU (backend_ops.def): the next token from one row of logits with the
// host's arithmetic (core/token_draw.h), so the same logits give the same token as
// sample_token. Four launches, nothing read back:
//   keys    one 64-bit order key per logit (larger logit first, then smaller id) and the
//           non-finite flag;
//   greedy  (temperature 0) one block reduces the keys to the smallest: the largest logit,
//           lowest id on ties — sample_token's argmax;
//   sort    cub's radix sort of all V keys (ascending: the kept top-k are the first k);
//   chunks  each chunk of kDrawChunk kept keys summed in order by one thread;
//   draw    one thread adds the chunks' sums in order and walks to the drawn id
//           (draw_from_sorted, shared with the host).
// Scratch (ctx.scratch): keys in and out [V] uint64, chunk sums [ceil(V / kDrawChunk)] double,
// cub's temporary storage; draw_token_scratch_bytes(V) says how much.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/lowp.cuh"
#include "core/error.h"
#include "core/token_draw.h"

namespace trt::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kGreedyThreads = 1024;

size_t align256(size_t n) { return (n + 255) / 256 * 256; }

struct DrawScratch {
    uint64_t* keys = nullptr;    // [V]
    uint64_t* sorted = nullptr;  // [V]
    double* chunk_sums = nullptr;
    void* cub_temp = nullptr;
    size_t cub_bytes = 0;
};

size_t cub_sort_bytes(int V) {
    size_t bytes = 0;
    TRT_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(
        nullptr, bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr), V));
    return bytes;
}

DrawScratch carve(void* base, int V) {
    DrawScratch s;
    char* p = static_cast<char*>(base);
    const size_t keys = align256(sizeof(uint64_t) * static_cast<size_t>(V));
    const size_t chunks =
        align256(sizeof(double) * static_cast<size_t>((V + kDrawChunk - 1) / kDrawChunk));
    s.keys = reinterpret_cast<uint64_t*>(p);
    s.sorted = reinterpret_cast<uint64_t*>(p + keys);
    s.chunk_sums = reinterpret_cast<double*>(p + 2 * keys);
    s.cub_temp = p + 2 * keys + chunks;
    s.cub_bytes = cub_sort_bytes(V);
    return s;
}

// keys[i] = descending_key(logit i, i); out[1] = 1 if a logit is not finite (out[1] is 0
// before the launch). Grid-stride.
template <typename T>
__global__ void draw_keys_kernel(uint64_t* __restrict__ keys, int32_t* __restrict__ out,
                                 const T* __restrict__ logits, int V) {
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < V; i += stride) {
        const float x = to_f32(logits[i]);
        if (!isfinite(x)) out[1] = 1;  // every writer writes the same value
        keys[i] = descending_key(isfinite(x) ? x : 0.0f, i);
    }
}

// out[0] = the id of the smallest key (one block).
__global__ void draw_greedy_kernel(int32_t* __restrict__ out, const uint64_t* __restrict__ keys,
                                   int V) {
    __shared__ uint64_t best[kGreedyThreads];
    uint64_t b = ~0ull;
    for (int i = threadIdx.x; i < V; i += blockDim.x) b = keys[i] < b ? keys[i] : b;
    best[threadIdx.x] = b;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && best[threadIdx.x + s] < best[threadIdx.x])
            best[threadIdx.x] = best[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = out[1] ? 0 : key_id(best[0]);
}

// chunk_sums[c] for the k kept (sorted) keys: one thread per chunk.
__global__ void draw_chunks_kernel(double* __restrict__ chunk_sums,
                                   const uint64_t* __restrict__ sorted, int k, double inv_t) {
    const int chunks = (k + kDrawChunk - 1) / kDrawChunk;
    const double top = static_cast<double>(key_logit(sorted[0]));
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < chunks; c += gridDim.x * blockDim.x)
        chunk_sums[c] = draw_chunk_sum(sorted, k, c, top, inv_t);
}

// out[0] = the drawn id (one thread). The draw's index: *index_at when given, else index.
__global__ void draw_walk_kernel(int32_t* __restrict__ out, const uint64_t* __restrict__ sorted,
                                 const double* __restrict__ chunk_sums, int k, double inv_t,
                                 uint64_t seed, uint64_t index,
                                 const uint64_t* __restrict__ index_at) {
    const double uniform = draw_uniform(seed, index_at != nullptr ? *index_at : index);
    out[0] = out[1] ? 0 : draw_from_sorted(sorted, k, chunk_sums, inv_t, uniform);
}

}  // namespace

size_t draw_token_scratch_bytes(const ModelDims& d) {
    if (d.V <= 0) return 0;
    return 2 * align256(sizeof(uint64_t) * static_cast<size_t>(d.V)) +
           align256(sizeof(double) * static_cast<size_t>((d.V + kDrawChunk - 1) / kDrawChunk)) +
           align256(cub_sort_bytes(d.V));
}

void draw_token(const CudaCtx& ctx, int32_t* out, ConstAct logits, int V, const TokenDraw& d) {
    TRT_CHECK(V > 0, "draw_token: V = ", V);
    ModelDims dims;
    dims.V = V;
    TRT_CHECK(draw_token_scratch_bytes(dims) <= ctx.scratch_bytes, "draw_token: a row of ", V,
              " logits needs ", draw_token_scratch_bytes(dims),
              " bytes of scratch, the backend reserved ", ctx.scratch_bytes);
    const DrawScratch s = carve(ctx.scratch, V);
    TRT_CUDA_CHECK(cudaMemsetAsync(out, 0, 2 * sizeof(int32_t), ctx.stream));
    with_storage(act_storage(ctx, {logits}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        draw_keys_kernel<T><<<grid_blocks(V, kThreads, 1024), kThreads, 0, ctx.stream>>>(
            s.keys, out, typed<T>(logits), V);
    });
    TRT_CUDA_CHECK(cudaGetLastError());
    if (d.temperature <= 0.0) {
        draw_greedy_kernel<<<1, kGreedyThreads, 0, ctx.stream>>>(out, s.keys, V);
        TRT_CUDA_CHECK(cudaGetLastError());
        return;
    }
    size_t bytes = s.cub_bytes;
    TRT_CUDA_CHECK(
        cub::DeviceRadixSort::SortKeys(s.cub_temp, bytes, s.keys, s.sorted, V, 0, 64, ctx.stream));
    const int k = d.top_k > 0 && d.top_k < V ? d.top_k : V;
    const double inv_t = 1.0 / d.temperature;
    const int chunks = (k + kDrawChunk - 1) / kDrawChunk;
    draw_chunks_kernel<<<grid_blocks(chunks, kThreads, 1024), kThreads, 0, ctx.stream>>>(
        s.chunk_sums, s.sorted, k, inv_t);
    TRT_CUDA_CHECK(cudaGetLastError());
    draw_walk_kernel<<<1, 1, 0, ctx.stream>>>(out, s.sorted, s.chunk_sums, k, inv_t, d.seed,
                                              d.index, d.index_at);
    TRT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace trt::cuda
