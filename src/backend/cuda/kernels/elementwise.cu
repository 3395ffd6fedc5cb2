// Elementwise CUDA kernels (GELU, add, casts), the embedding encoder, and the deterministic
// column sums behind every bias gradient.
//
// Activations are stored as T (float, bf16 or fp16: ctx.act, cuda_ops.h): loaded with to_f32,
// computed in fp32, each stored value rounded once with from_f32<T>. Parameters and their
// gradients (wte, wpe, dwte, dwpe, dbias, add_inplace) stay float.
//
// The memory-bound kernels move 128 bits per access when every pointer they touch is 16-byte
// aligned (and, for row kernels, the row length keeps rows aligned): float4 for fp32, eight
// bf16/fp16 values (Lowp8) otherwise. Each element still gets exactly the scalar path's
// arithmetic, so both paths give the same bits; misaligned pointers and odd sizes (views at
// odd offsets, C = 3) take the scalar path, and the vector path ends with a scalar tail.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/kernels/gelu.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/lowp.cuh"
#include "backend/cuda/kernels/reduce.cuh"
#include "core/dropout_mask.h"
#include "core/error.h"

namespace trt::cuda {
namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 16384;  // grid-stride beyond this

int grid_for(size_t units) {
    return grid_blocks(static_cast<int64_t>(units), kThreads, static_cast<int64_t>(kMaxBlocks));
}

// 128 bits of T: float4 for fp32, Lowp8 (lowp.cuh) for bf16/fp16. lane(p, j) is element j
// (j a constant once the loops over it are unrolled).
template <typename T>
struct Vec128 {
    using type = Lowp8<T>;
    static constexpr int kN = 8;
};
template <>
struct Vec128<float> {
    using type = float4;
    static constexpr int kN = 4;
};
__device__ __forceinline__ float& lane(float4& p, int j) { return (&p.x)[j]; }
__device__ __forceinline__ float lane(const float4& p, int j) { return (&p.x)[j]; }
template <typename T>
__device__ __forceinline__ T& lane(Lowp8<T>& p, int j) {
    return p.v[j];
}
template <typename T>
__device__ __forceinline__ T lane(const Lowp8<T>& p, int j) {
    return p.v[j];
}

// GELU (gelu_value, gelu_grad): gelu.cuh, shared with the matmul's GELU fallback.

// ---- generic map: out[i] = f(in[0][i], ..., in[NIN-1][i]) over one storage type T (f takes
// and returns fp32). out may alias an input (same index read then written by one thread),
// hence no __restrict__.
template <typename T, int NIN>
struct Ins {
    const T* p[NIN];
};

struct GeluFwd {
    __device__ float operator()(const float (&v)[1]) const { return gelu_value(v[0]); }
};
struct GeluBwd {  // v = {inp, dout}
    __device__ float operator()(const float (&v)[2]) const { return gelu_grad(v[0]) * v[1]; }
};
struct Add {
    __device__ float operator()(const float (&v)[2]) const { return v[0] + v[1]; }
};

// kVec: every pointer is 16-byte aligned, so the first n/kN*kN elements go as 128-bit packs
// of kN; the tail (< kN elements) is scalar.
template <typename T, int NIN, bool kVec, typename F>
__global__ void __launch_bounds__(kThreads) map_kernel(T* out, Ins<T, NIN> in, size_t n, F f) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    size_t done = 0;
    if constexpr (kVec) {
        using V = typename Vec128<T>::type;
        constexpr int kN = Vec128<T>::kN;
        const size_t nv = n / kN;
        for (size_t i = tid; i < nv; i += stride) {
            V x[NIN];
#pragma unroll
            for (int k = 0; k < NIN; k++) x[k] = reinterpret_cast<const V*>(in.p[k])[i];
            V r;
#pragma unroll
            for (int j = 0; j < kN; j++) {
                float v[NIN];
#pragma unroll
                for (int k = 0; k < NIN; k++) v[k] = to_f32(lane(x[k], j));
                lane(r, j) = from_f32<T>(f(v));
            }
            reinterpret_cast<V*>(out)[i] = r;
        }
        done = nv * kN;
    }
    for (size_t i = done + tid; i < n; i += stride) {
        float v[NIN];
#pragma unroll
        for (int k = 0; k < NIN; k++) v[k] = to_f32(in.p[k][i]);
        out[i] = from_f32<T>(f(v));
    }
}

template <typename T, int NIN, typename F>
void launch_map(const CudaCtx& ctx, T* out, Ins<T, NIN> in, size_t n, F f) {
    if (n == 0) return;
    bool vec = aligned16(out);
    for (int k = 0; k < NIN; k++) vec = vec && aligned16(in.p[k]);
    if (vec) {
        map_kernel<T, NIN, true, F>
            <<<grid_for(n / Vec128<T>::kN + 1), kThreads, 0, ctx.stream>>>(out, in, n, f);
    } else {
        map_kernel<T, NIN, false, F><<<grid_for(n), kThreads, 0, ctx.stream>>>(out, in, n, f);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

// ---- column-reduction functors (reduce.cuh), double accumulators as the CPU's
// column_sums_into: N can be tens of thousands of rows.
template <typename T>
struct ColSumOp {
    const T* x;
    int M;
    __device__ void operator()(int n, int m, double (&acc)[1]) const {
        acc[0] += static_cast<double>(to_f32(x[static_cast<size_t>(n) * M + m]));
    }
};

// dinp = gelu'(inp) * dout, and its column sums: the fp32 value goes into the sum, dinp stores
// it rounded (the CPU twin's order).
template <typename T>
struct GeluBiasOp {
    T* dinp;
    const T* inp;
    const T* dout;
    int M;
    __device__ void operator()(int n, int m, double (&acc)[1]) const {
        const size_t i = static_cast<size_t>(n) * M + m;
        const float d = gelu_grad(to_f32(inp[i])) * to_f32(dout[i]);
        dinp[i] = from_f32<T>(d);
        acc[0] += static_cast<double>(d);
    }
};

// ---- encoder (S: the storage type of out / dout; T is the sequence length)
constexpr int kEncThreads = 128;

// out[n, :] = wte[inputs[n], :] + wpe[p, :] (the fp32 sum, stored rounded), p = n % T or, with
// documents (kDocs), pos[n]; one block per row (grid-stride). kPos = false (wpe == nullptr,
// rotary models): out[n, :] = wte[inputs[n], :]. (kDocs is an instantiation of its own: the
// one without documents stays the kernel it was.)
template <typename S, bool kPos, bool kDocs>
__global__ void __launch_bounds__(kEncThreads)
    encoder_forward_kernel(S* __restrict__ out, const int32_t* __restrict__ inputs,
                           const float* __restrict__ wte, const float* __restrict__ wpe, int N,
                           int T, int C, const int32_t* __restrict__ pos) {
    for (int n = blockIdx.x; n < N; n += gridDim.x) {
        const float* e = wte + static_cast<size_t>(inputs[n]) * C;
        S* o = out + static_cast<size_t>(n) * C;
        if constexpr (kPos) {
            const float* p = wpe + static_cast<size_t>(kDocs ? pos[n] : n % T) * C;
            for (int c = threadIdx.x; c < C; c += kEncThreads) o[c] = from_f32<S>(e[c] + p[c]);
        } else {
            for (int c = threadIdx.x; c < C; c += kEncThreads) o[c] = from_f32<S>(e[c]);
        }
    }
}

// The same with 128-bit accesses of out: Cv = C / kN packs per row (C % kN == 0 and out, wte,
// wpe 16-byte aligned, so every row starts aligned); a pack of kN outputs reads kN / 4 float4s
// of wte and of wpe.
template <typename S, bool kPos, bool kDocs>
__global__ void __launch_bounds__(kEncThreads)
    encoder_forward_vec_kernel(typename Vec128<S>::type* __restrict__ out,
                               const int32_t* __restrict__ inputs, const float4* __restrict__ wte,
                               const float4* __restrict__ wpe, int N, int T, int Cv,
                               const int32_t* __restrict__ pos) {
    using V = typename Vec128<S>::type;
    constexpr int kF4 = Vec128<S>::kN / 4;  // float4s per pack
    const size_t C4 = static_cast<size_t>(Cv) * kF4;
    for (int n = blockIdx.x; n < N; n += gridDim.x) {
        const float4* e = wte + static_cast<size_t>(inputs[n]) * C4;
        V* o = out + static_cast<size_t>(n) * Cv;
        const float4* p =
            kPos ? wpe + static_cast<size_t>(kDocs ? pos[n] : n % T) * C4 : nullptr;
        for (int c = threadIdx.x; c < Cv; c += kEncThreads) {
            V r;
#pragma unroll
            for (int q = 0; q < kF4; q++) {
                float4 a = e[c * kF4 + q];
                if constexpr (kPos) {
                    const float4 b = p[c * kF4 + q];
                    a = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
                }
#pragma unroll
                for (int j = 0; j < 4; j++) lane(r, 4 * q + j) = from_f32<S>(lane(a, j));
            }
            o[c] = r;
        }
    }
}

__global__ void iota_kernel(int32_t* __restrict__ v, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        v[i] = i;
}

// keys[N] sorted ascending, pos[N] the rows, stable (ascending within a key). The block
// (x, y) takes the runs that start at positions x, x + gridDim.x, ... and channels
// [y*kEncThreads, +kEncThreads): dwte[tok, c] += dout[pos, c] over the run, in position
// order — the same order, hence the same bits, as the CPU loop over n. Runs are distinct
// tokens, so no two blocks touch one dwte element. With documents the same kernel sums dwpe:
// keys are then the rows' positions.
template <typename S>
__global__ void __launch_bounds__(kEncThreads)
    encoder_dwte_kernel(float* __restrict__ dwte, const S* __restrict__ dout,
                        const int32_t* __restrict__ keys, const int32_t* __restrict__ pos, int N,
                        int C) {
    const int c = blockIdx.y * kEncThreads + threadIdx.x;
    for (int i = blockIdx.x; i < N; i += gridDim.x) {
        const int32_t tok = keys[i];
        if (i > 0 && keys[i - 1] == tok) continue;  // not the start of a run (block-uniform)
        if (c >= C) continue;
        // Run end: first index whose key is > tok (upper bound, keys sorted).
        int lo = i + 1, hi = N;
        while (lo < hi) {
            const int mid = lo + (hi - lo) / 2;
            if (keys[mid] <= tok) lo = mid + 1;
            else hi = mid;
        }
        const int end = lo;
        float* dst = dwte + static_cast<size_t>(tok) * C + c;
        float acc = *dst;
        int j = i;
        for (; j + 4 <= end; j += 4) {  // four independent loads, added in order
            const float g0 = to_f32(dout[static_cast<size_t>(pos[j]) * C + c]);
            const float g1 = to_f32(dout[static_cast<size_t>(pos[j + 1]) * C + c]);
            const float g2 = to_f32(dout[static_cast<size_t>(pos[j + 2]) * C + c]);
            const float g3 = to_f32(dout[static_cast<size_t>(pos[j + 3]) * C + c]);
            acc += g0;
            acc += g1;
            acc += g2;
            acc += g3;
        }
        for (; j < end; j++) acc += to_f32(dout[static_cast<size_t>(pos[j]) * C + c]);
        *dst = acc;
    }
}

// dwpe[t, c] += dout[b, t, c] for b = 0..B-1 in order (the CPU's order): one thread per
// (t, c), no reduction across threads.
template <typename S>
__global__ void __launch_bounds__(kThreads)
    encoder_dwpe_kernel(float* __restrict__ dwpe, const S* __restrict__ dout, int B, int T,
                        int C) {
    const size_t TC = static_cast<size_t>(T) * C;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < TC;
         i += stride) {
        float acc = dwpe[i];
#pragma unroll 4
        for (int b = 0; b < B; b++) acc += to_f32(dout[static_cast<size_t>(b) * TC + i]);
        dwpe[i] = acc;
    }
}

// The same over one 128-bit pack of dout per thread, kN consecutive (t, c) elements (TCv =
// T*C / kN; T*C % kN == 0, dwpe and dout 16-byte aligned): each element still adds
// b = 0..B-1 in order.
template <typename S>
__global__ void __launch_bounds__(kThreads)
    encoder_dwpe_vec_kernel(float4* __restrict__ dwpe,
                            const typename Vec128<S>::type* __restrict__ dout, int B, size_t TCv) {
    constexpr int kF4 = Vec128<S>::kN / 4;  // float4s of dwpe per pack
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < TCv;
         i += stride) {
        float4 acc[kF4];
#pragma unroll
        for (int q = 0; q < kF4; q++) acc[q] = dwpe[i * kF4 + q];
#pragma unroll 4
        for (int b = 0; b < B; b++) {
            const typename Vec128<S>::type g = dout[static_cast<size_t>(b) * TCv + i];
#pragma unroll
            for (int q = 0; q < kF4; q++) {
                acc[q].x += to_f32(lane(g, 4 * q));
                acc[q].y += to_f32(lane(g, 4 * q + 1));
                acc[q].z += to_f32(lane(g, 4 * q + 2));
                acc[q].w += to_f32(lane(g, 4 * q + 3));
            }
        }
#pragma unroll
        for (int q = 0; q < kF4; q++) dwpe[i * kF4 + q] = acc[q];
    }
}

// Scratch of encoder_backward for N positions: sorted keys, positions in, positions out
// (int32 each), then CUB's radix-sort temp storage; 256-byte aligned pieces.
struct EncoderScratch {
    size_t vals_in = 0, vals_out = 0, temp = 0;  // byte offsets (keys at 0)
    size_t temp_bytes = 0;
    size_t total = 0;
};

EncoderScratch encoder_scratch(int N, cudaStream_t stream) {
    EncoderScratch s;
    // A null temp pointer only asks for the size: nothing is launched.
    TRT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
        nullptr, s.temp_bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
        static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), N, 0, 32, stream));
    const size_t a = align_up_256(static_cast<size_t>(N) * sizeof(int32_t));
    s.vals_in = a;
    s.vals_out = 2 * a;
    s.temp = 3 * a;
    s.total = s.temp + align_up_256(s.temp_bytes);
    return s;
}

template <typename T>
__global__ void cast_from_f32_kernel(T* __restrict__ dst, const float* __restrict__ src,
                                     size_t n) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        dst[i] = from_f32<T>(src[i]);
}

template <typename T>
__global__ void cast_to_f32_kernel(float* __restrict__ dst, const T* __restrict__ src,
                                   size_t n) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        dst[i] = to_f32(src[i]);
}

// Eight values per thread with 128-bit accesses (Lowp8, lowp.cuh): n8 = n / 8 groups through
// the vector path (src and dst 16-byte aligned), then the tail (< 8 elements) scalar. Same
// conversions.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    cast_from_f32_vec8_kernel(T* __restrict__ dst, const float* __restrict__ src, size_t n) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const size_t n8 = n / 8;
    const float4* s4 = reinterpret_cast<const float4*>(src);
    Lowp8<T>* d8 = reinterpret_cast<Lowp8<T>*>(dst);
    for (size_t i = tid; i < n8; i += stride) {
        const float4 a = s4[2 * i], b = s4[2 * i + 1];
        Lowp8<T> o;
        o.v[0] = from_f32<T>(a.x);
        o.v[1] = from_f32<T>(a.y);
        o.v[2] = from_f32<T>(a.z);
        o.v[3] = from_f32<T>(a.w);
        o.v[4] = from_f32<T>(b.x);
        o.v[5] = from_f32<T>(b.y);
        o.v[6] = from_f32<T>(b.z);
        o.v[7] = from_f32<T>(b.w);
        d8[i] = o;
    }
    for (size_t i = n8 * 8 + tid; i < n; i += stride) dst[i] = from_f32<T>(src[i]);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    cast_to_f32_vec8_kernel(float* __restrict__ dst, const T* __restrict__ src, size_t n) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const size_t n8 = n / 8;
    const Lowp8<T>* s8 = reinterpret_cast<const Lowp8<T>*>(src);
    float4* d4 = reinterpret_cast<float4*>(dst);
    for (size_t i = tid; i < n8; i += stride) {
        const Lowp8<T> v = s8[i];
        d4[2 * i] = make_float4(to_f32(v.v[0]), to_f32(v.v[1]), to_f32(v.v[2]), to_f32(v.v[3]));
        d4[2 * i + 1] =
            make_float4(to_f32(v.v[4]), to_f32(v.v[5]), to_f32(v.v[6]), to_f32(v.v[7]));
    }
    for (size_t i = n8 * 8 + tid; i < n; i += stride) dst[i] = to_f32(src[i]);
}

template <typename T>
void launch_cast_from_f32(const CudaCtx& ctx, T* dst, const float* src, size_t n) {
    if (aligned16(dst) && aligned16(src)) {
        cast_from_f32_vec8_kernel<T><<<grid_for(n / 8 + 1), kThreads, 0, ctx.stream>>>(dst, src, n);
    } else {
        cast_from_f32_kernel<T><<<grid_for(n), kThreads, 0, ctx.stream>>>(dst, src, n);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

template <typename T>
void launch_cast_to_f32(const CudaCtx& ctx, float* dst, const T* src, size_t n) {
    if (aligned16(dst) && aligned16(src)) {
        cast_to_f32_vec8_kernel<T><<<grid_for(n / 8 + 1), kThreads, 0, ctx.stream>>>(dst, src, n);
    } else {
        cast_to_f32_kernel<T><<<grid_for(n), kThreads, 0, ctx.stream>>>(dst, src, n);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

}  // namespace

size_t elementwise_scratch_bytes(const ModelDims& d) {
    const int N = d.B * d.T;
    size_t bytes = 0;
    if (N > 0) bytes = encoder_scratch(N, nullptr).total;
    // column_sums / gelu_backward_bias: M up to the widest activation (the qkv row, F, 2F;
    // cuda_ops.h), double partials.
    const size_t cols =
        colred::partial_bytes_bound(static_cast<int>(dims_max_width(d)), 1, sizeof(double));
    if (cols > bytes) bytes = cols;
    return align_up_256(bytes);
}

namespace {
template <typename S, bool kPos, bool kDocs>
void launch_encoder_forward(const CudaCtx& ctx, S* out, const int32_t* inputs, const float* wte,
                            const float* wpe, int N, int T, int C, const int32_t* pos) {
    using V = typename Vec128<S>::type;
    constexpr int kN = Vec128<S>::kN;
    const int blocks = N < 65536 ? N : 65536;
    if (C % kN == 0 && aligned16(out) && aligned16(wte) && aligned16(wpe)) {
        encoder_forward_vec_kernel<S, kPos, kDocs><<<blocks, kEncThreads, 0, ctx.stream>>>(
            reinterpret_cast<V*>(out), inputs, reinterpret_cast<const float4*>(wte),
            reinterpret_cast<const float4*>(wpe), N, T, C / kN, pos);
    } else {
        encoder_forward_kernel<S, kPos, kDocs><<<blocks, kEncThreads, 0, ctx.stream>>>(
            out, inputs, wte, wpe, N, T, C, pos);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

// dwpe[t] += sum over b of dout[b, t] (dout [B*T, C], dwpe [>=T, C])
template <typename S>
void launch_encoder_dwpe(const CudaCtx& ctx, float* dwpe, const S* d, int B, int T, int C) {
    constexpr int kN = Vec128<S>::kN;
    const size_t TC = static_cast<size_t>(T) * C;
    if (TC % kN == 0 && aligned16(dwpe) && aligned16(d)) {
        encoder_dwpe_vec_kernel<S><<<grid_for(TC / kN), kThreads, 0, ctx.stream>>>(
            reinterpret_cast<float4*>(dwpe),
            reinterpret_cast<const typename Vec128<S>::type*>(d), B, TC / kN);
    } else {
        encoder_dwpe_kernel<S><<<grid_for(TC), kThreads, 0, ctx.stream>>>(dwpe, d, B, T, C);
    }
    TRT_CUDA_LAUNCH_CHECK();
}

// dst[key, :] += dout[n, :] for every row n, key = keys_in[n], each element's rows added in
// n order without atomics: the rows sorted by key (stable), then one run per key
// (encoder_dwte_kernel). dwte's keys are the tokens; with documents, dwpe's the positions.
// Uses all of ctx.scratch's encoder part; stream-ordered, so calls may follow each other.
void sum_rows_by_key(const CudaCtx& ctx, float* dst, ConstAct dout, DType st,
                     const int32_t* keys_in, int N, int C) {
    const EncoderScratch s = encoder_scratch(N, ctx.stream);
    TRT_CHECK(s.total <= ctx.scratch_bytes, "encoder_backward needs ", s.total,
              " bytes of CUDA scratch for B*T=", N, ", have ", ctx.scratch_bytes,
              " (sized by reserve(ModelDims))");
    char* base = static_cast<char*>(ctx.scratch);
    int32_t* keys = reinterpret_cast<int32_t*>(base);
    int32_t* vals_in = reinterpret_cast<int32_t*>(base + s.vals_in);
    int32_t* vals_out = reinterpret_cast<int32_t*>(base + s.vals_out);
    void* temp = base + s.temp;

    iota_kernel<<<grid_for(static_cast<size_t>(N)), kThreads, 0, ctx.stream>>>(vals_in, N);
    TRT_CUDA_LAUNCH_CHECK();
    // LSD radix sort is stable: the rows of one key stay ascending.
    size_t temp_bytes = s.temp_bytes;
    TRT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys, vals_in,
                                                   vals_out, N, 0, 32, ctx.stream));
    TRT_CUDA_LAUNCH_CHECK();

    with_storage(st, [&](auto tag) {
        using S = typename decltype(tag)::type;
        const dim3 grid(N < 2048 ? N : 2048, (C + kEncThreads - 1) / kEncThreads);
        encoder_dwte_kernel<S><<<grid, kEncThreads, 0, ctx.stream>>>(dst, typed<S>(dout), keys,
                                                                     vals_out, N, C);
        TRT_CUDA_LAUNCH_CHECK();
    });
}
}  // namespace

// out [B*T, C], inputs [B*T], wte [V, C], wpe [>=T, C] or null (no position term), pos [B*T]
// or null (documents)
void encoder_forward(const CudaCtx& ctx, Act out, const int32_t* inputs, const float* wte,
                     const float* wpe, int B, int T, int C, const int32_t* pos) {
    const int N = B * T;
    if (N <= 0 || C <= 0) return;
    with_storage(act_storage(ctx, {out}), [&](auto tag) {
        using S = typename decltype(tag)::type;
        if (wpe && pos)
            launch_encoder_forward<S, true, true>(ctx, typed<S>(out), inputs, wte, wpe, N, T, C,
                                                  pos);
        else if (wpe)
            launch_encoder_forward<S, true, false>(ctx, typed<S>(out), inputs, wte, wpe, N, T, C,
                                                   nullptr);
        else
            launch_encoder_forward<S, false, false>(ctx, typed<S>(out), inputs, wte, nullptr, N,
                                                    T, C, nullptr);
    });
}

// dwte [V, C] +=, dwpe [>=T, C] += (each skipped when null), dout [B*T, C], inputs [B*T],
// pos [B*T] or null (documents: dwpe's rows by position, as dwte's by token)
void encoder_backward(const CudaCtx& ctx, float* dwte, float* dwpe, ConstAct dout,
                      const int32_t* inputs, int B, int T, int C, const int32_t* pos) {
    const int N = B * T;
    if (N <= 0 || C <= 0) return;
    const DType st = act_storage(ctx, {dout});
    // dwte (null: a frozen token embedding, train.trainable), then dwpe (null: rotary models).
    if (dwte) sum_rows_by_key(ctx, dwte, dout, st, inputs, N, C);
    if (!dwpe) return;
    if (pos != nullptr) return sum_rows_by_key(ctx, dwpe, dout, st, pos, N, C);
    with_storage(st, [&](auto tag) {
        using S = typename decltype(tag)::type;
        launch_encoder_dwpe<S>(ctx, dwpe, typed<S>(dout), B, T, C);
    });
}

// out, inp [n]
void gelu_forward(const CudaCtx& ctx, Act out, ConstAct inp, size_t n) {
    with_storage(act_storage(ctx, {out, inp}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_map<T, 1>(ctx, typed<T>(out), Ins<T, 1>{{typed<T>(inp)}}, n, GeluFwd{});
    });
}

namespace {
// One thread per element of the [N, M] slice (grid-stride): scalar, since c0 and W need not
// keep rows 16-byte aligned; the slices are the LoRA adapters' outputs, N x rank or N x width.
template <typename T, bool kAdd>
__global__ void __launch_bounds__(kThreads)
    columns_kernel(T* out, const T* in, float scale, int N, int W, int c0, int M) {
    const size_t total = static_cast<size_t>(N) * M;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += stride) {
        const size_t n = i / M, j = i % M;
        if constexpr (kAdd) {  // out [N, W] += scale * in [N, M]
            T& o = out[n * W + c0 + j];
            o = from_f32<T>(to_f32(o) + scale * to_f32(in[i]));
        } else {  // out [N, M] = scale * in [N, W] slice
            out[i] = from_f32<T>(scale * to_f32(in[n * W + c0 + j]));
        }
    }
}

template <bool kAdd>
void launch_columns(const CudaCtx& ctx, Act out, ConstAct in, float scale, int N, int W,
                    int c0, int M) {
    if (N <= 0 || M <= 0) return;
    with_storage(act_storage(ctx, {out, in}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        columns_kernel<T, kAdd><<<grid_for(static_cast<size_t>(N) * M), kThreads, 0,
                                  ctx.stream>>>(typed<T>(out), typed<T>(in), scale, N, W, c0, M);
        TRT_CUDA_LAUNCH_CHECK();
    });
}
}  // namespace

void add_columns(const CudaCtx& ctx, Act out, ConstAct in, float scale, int N, int W, int c0,
                 int M) {
    launch_columns<true>(ctx, out, in, scale, N, W, c0, M);
}

void copy_columns(const CudaCtx& ctx, Act out, ConstAct in, float scale, int N, int W, int c0,
                  int M) {
    launch_columns<false>(ctx, out, in, scale, N, W, c0, M);
}

namespace {
// One thread per Philox group of four stream elements (grid-stride); the first and last
// groups may be partial (index0 need not be a multiple of 4). Same arithmetic as the CPU's
// DropoutDraw::apply: in · scale where kept, else 0, rounded once.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    dropout_kernel(T* out, const T* in, size_t n, uint64_t index0, uint64_t seed,
                   const StepScalars* s, uint32_t micro_step, uint32_t site,
                   uint32_t threshold, float scale) {
    const int64_t step = s->step;
    const uint64_t g0 = index0 >> 2, g1 = (index0 + n + 3) >> 2;
    const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    for (uint64_t g = g0 + static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         g < g1; g += stride) {
        const Philox4x32 u = dropout_uniforms(seed, step, micro_step, site, g);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            const uint64_t idx = g * 4 + lane;
            if (idx < index0 || idx >= index0 + n) continue;
            const size_t j = static_cast<size_t>(idx - index0);
            out[j] = u.v[lane] >= threshold ? from_f32<T>(to_f32(in[j]) * scale)
                                            : from_f32<T>(0.0f);
        }
    }
}

template <typename T>
void launch_dropout(const CudaCtx& ctx, T* out, const T* in, size_t n, const DropoutMask& m) {
    TRT_CHECK(m.scalars != nullptr && m.p >= 0.0f && m.p < 1.0f,
              "dropout: p outside [0, 1) or no step scalars");
    TRT_CHECK(m.index0 + n <= kDropoutMaxElements, "dropout over ", m.index0 + n,
              " elements: a site has at most 2^34");
    const size_t groups = ((m.index0 + n + 3) >> 2) - (m.index0 >> 2);
    dropout_kernel<T><<<grid_for(groups), kThreads, 0, ctx.stream>>>(
        out, in, n, m.index0, m.seed, m.scalars, m.micro_step, m.site, dropout_threshold(m.p),
        dropout_scale(m.p));
    TRT_CUDA_LAUNCH_CHECK();
}
}  // namespace

void dropout(const CudaCtx& ctx, Act out, ConstAct in, size_t n, const DropoutMask& m) {
    if (n == 0) return;
    with_storage(act_storage(ctx, {out, in}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_dropout<T>(ctx, typed<T>(out), typed<T>(in), n, m);
    });
}

void dropout_floats(const CudaCtx& ctx, float* out, const float* in, size_t n,
                    const DropoutMask& m) {
    if (n > 0) launch_dropout<float>(ctx, out, in, n, m);
}

// dinp, inp, dout [n]; dinp overwritten
void gelu_backward(const CudaCtx& ctx, Act dinp, ConstAct inp, ConstAct dout, size_t n) {
    with_storage(act_storage(ctx, {dinp, inp, dout}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        launch_map<T, 2>(ctx, typed<T>(dinp), Ins<T, 2>{{typed<T>(inp), typed<T>(dout)}}, n,
                         GeluBwd{});
    });
}

// dinp, inp, dout [N, M] (dinp overwritten); dbias [M] += column sums of dinp, or null
void gelu_backward_bias(const CudaCtx& ctx, Act dinp, float* dbias, ConstAct inp,
                        ConstAct dout, int N, int M) {
    if (N <= 0 || M <= 0) return;
    if (!dbias) {
        gelu_backward(ctx, dinp, inp, dout, static_cast<size_t>(N) * M);
        return;
    }
    with_storage(act_storage(ctx, {dinp, inp, dout}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        colred::run<double, 1>(ctx, "gelu_backward_bias", colred::Dsts<1>{{dbias}}, N, M,
                               GeluBiasOp<T>{typed<T>(dinp), typed<T>(inp), typed<T>(dout), M});
    });
}

// dst, src [n] fp32 (a parameter gradient); dst += src
void add_inplace(const CudaCtx& ctx, float* dst, const float* src, size_t n) {
    launch_map<float, 2>(ctx, dst, Ins<float, 2>{{dst, src}}, n, Add{});
}

// dst [M] +=, x [N, M]
void column_sums(const CudaCtx& ctx, float* dst, ConstAct x, int N, int M) {
    if (N <= 0 || M <= 0) return;
    with_storage(act_storage(ctx, {x}), [&](auto tag) {
        using T = typename decltype(tag)::type;
        colred::run<double, 1>(ctx, "column_sums", colred::Dsts<1>{{dst}}, N, M,
                               ColSumOp<T>{typed<T>(x), M});
    });
}

// dst [n] bf16/fp16, src [n] fp32
void cast_from_f32(const CudaCtx& ctx, void* dst, const float* src, size_t n, Precision p) {
    TRT_CHECK(p == Precision::Bf16 || p == Precision::Fp16,
              "cast_from_f32 needs precision bf16 or fp16, got ", static_cast<int>(p));
    if (n == 0) return;
    if (p == Precision::Bf16) {
        launch_cast_from_f32(ctx, static_cast<__nv_bfloat16*>(dst), src, n);
    } else {
        launch_cast_from_f32(ctx, static_cast<__half*>(dst), src, n);
    }
}

// dst [n] fp32, src [n] bf16/fp16
void cast_to_f32(const CudaCtx& ctx, float* dst, const void* src, size_t n, Precision p) {
    TRT_CHECK(p == Precision::Bf16 || p == Precision::Fp16,
              "cast_to_f32 needs precision bf16 or fp16, got ", static_cast<int>(p));
    if (n == 0) return;
    if (p == Precision::Bf16) {
        launch_cast_to_f32(ctx, dst, static_cast<const __nv_bfloat16*>(src), n);
    } else {
        launch_cast_to_f32(ctx, dst, static_cast<const __half*>(src), n);
    }
}

}  // namespace trt::cuda
