// Matrix products on the CPU through oneDNN's matmul primitive, for the shapes of the linear
// layers (accel.cpu_matmul, docs/CONFIG.md):
//   - bf16 operands, fp32 accumulation, the result written as bf16 (rounded once, to nearest
//     even) or as fp32: on a CPU with AVX-512 BF16 or AMX oneDNN's brgemm kernels multiply the
//     bf16 values directly, so the bf16 mode neither widens its operands nor reads twice the
//     bytes;
//   - fp32 operands: on a CPU with AVX-512 oneDNN's brgemm (`brg:avx512_core`) runs about twice
//     as fast as Debian's OpenBLAS 0.3.21, whose kernels for such CPUs are AVX2
//     (bench/results/2026-11-26-cpu-onednn.md).
// One primitive per block shape (a product is run as blocks over our threads, each block
// single-threaded), made on first use and kept: a training
// step repeats the same few shapes, so nothing is created per step. A build without oneDNN
// (TRAINRT_ONEDNN=OFF or not found) compiles this file to a stub whose availability() says why.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace trt::cpu {

// What C is: of the operands' type (bf16: C = round(A·B + bias)); fp32, C = A·B + bias; fp32,
// C += A·B (no bias).
enum class GemmOut { Same, F32, F32Add };

// C[m, n] = op(A)[m, k] · op(B)[k, n] (+ bias[n]), row-major with leading dimensions.
// A not transposed: A[i, p] at a[i * lda + p]; transposed: a[p * lda + i] (likewise B:
// b[p * ldb + j], transposed b[j * ldb + p]). C[i, j] at c[i * ldc + j].
struct GemmShape {
    DType in = DType::BF16;  // A and B: BF16 or F32
    int m = 0, n = 0, k = 0;
    int lda = 0, ldb = 0, ldc = 0;
    bool a_trans = false, b_trans = false;
    GemmOut out = GemmOut::Same;
    bool bias = false;  // an fp32 bias[n] added to the fp32 product (not with F32Add)
    float alpha = 1.0f;  // C = alpha·A·B (+ C with F32Add): the product scaled before the sum
};

// The three products of a linear layer y = x·W (+ b), x [N, K], W [K, M] (InOut) or [M, K]
// (OutIn, read transposed in place), operands of type `in`:
//   forward  y[N, M]  = x · W (+ bias)
//   dinp     dx[N, K] = dy · Wᵀ
//   dweight  dW      += xᵀ · dy (InOut, [K, M]) | dyᵀ · x (OutIn, [M, K]), fp32
// Call order of run()'s a and b: forward (x, W), dinp (dy, W), dweight as weight_grad_operands.
inline GemmShape linear_forward(DType in, int N, int K, int M, bool outin) {
    GemmShape s;
    s.in = in, s.m = N, s.n = M, s.k = K, s.lda = K, s.ldc = M;
    s.b_trans = outin;
    s.ldb = outin ? K : M;
    return s;
}
inline GemmShape linear_dinp(DType in, int N, int K, int M, bool outin) {
    GemmShape s;
    s.in = in, s.m = N, s.n = K, s.k = M, s.lda = M, s.ldc = K;
    s.b_trans = !outin;
    s.ldb = outin ? K : M;
    return s;
}
inline GemmShape linear_dweight(DType in, int N, int K, int M, bool outin) {
    GemmShape s;
    s.in = in, s.m = outin ? M : K, s.n = outin ? K : M, s.k = N;
    s.a_trans = true;
    s.lda = outin ? M : K;
    s.ldb = outin ? K : M;
    s.ldc = s.n;
    s.out = GemmOut::F32Add;
    return s;
}
// "bf16 64x256x64 a·bᵀ -> bf16 (ld 192 192 64)": the operands' type, m x n x k, the
// transposes, what C is (" +bias", " alpha 0.125" where they apply), the leading dimensions.
// For the profile's choices.
std::string describe(const GemmShape& s);

// a, b of the dweight product: (x, dy) for InOut, (dy, x) for OutIn.
template <typename T>
inline std::pair<const T*, const T*> weight_grad_operands(const T* x, const T* dy, bool outin) {
    return outin ? std::make_pair(dy, x) : std::make_pair(x, dy);
}

// Row-major C = alpha·op(A)·op(B) + beta·C by oneDNN's dnnl_sgemm (its JIT gemm, with AVX-512
// kernels where the CPU has them; no primitive to cache): for small products issued from
// inside our own parallel loops, where it runs on the calling thread. False (nothing done)
// in a build without oneDNN or if oneDNN refuses the call.
bool onednn_sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                  int lda, const float* B, int ldb, float beta, float* C, int ldc) noexcept;

class OnednnGemm {
public:
    // "" when this build and CPU can run `in` (BF16 or F32) products through oneDNN, else why
    // not. `impl` (may be null) receives oneDNN's implementation name for a layer-sized
    // product, e.g. "brg:avx512_core_bf16".
    static std::string availability(DType in, std::string* impl = nullptr);
    // Whether that implementation is the fast kind: bf16 on the CPU's own bf16 instructions
    // (not an emulation on plain AVX-512); fp32 by brgemm (AVX-512), not the AVX2 `gemm:jit`
    // that OpenBLAS matches (bench/results/2026-11-26-onednn-vs-openblas.md).
    static bool fast(DType in, const std::string& impl);
    // oneDNN's implementation for one product of this shape made single-threaded, as
    // run_here runs it (e.g. "gemm:jit", "brg:avx512_core_amx"), or "none: why". Made once per
    // call: for a log line, not for a loop.
    static std::string implementation(const GemmShape& shape);

    OnednnGemm();
    ~OnednnGemm();
    OnednnGemm(const OnednnGemm&) = delete;
    OnednnGemm& operator=(const OnednnGemm&) = delete;

    // Runs one product on `threads` threads (in blocks over our pool, cpu_pool.h). a, b: of type
    // shape.in; c: as shape.out says; bias: fp32 or null. Not from two threads at once.
    // Throws trt::Error.
    void run(const GemmShape& shape, const void* a, const void* b, void* c, const float* bias,
             int threads);

    // Products issued one by one from inside our own parallel loops (attention's per-head
    // ones): prepare() makes each shape's primitive and `threads` slots on the calling thread,
    // before the loop (primitives are never made concurrently); run_here() then runs one of
    // them single-threaded on the calling thread, as slot `slot` (< threads), from any number
    // of threads at once. No bias. Both throw trt::Error.
    void prepare(const GemmShape& shape, int threads);
    void run_here(const GemmShape& shape, const void* a, const void* b, void* c, int slot) const;

    // The block shapes made so far, in a stable order, each with oneDNN's implementation and
    // its scratchpad's bytes: what the profile lists as the CPU's matmul choices.
    struct MadeShape {
        GemmShape shape;
        std::string implementation;
        size_t scratchpad_bytes = 0;
    };
    std::vector<MadeShape> made_shapes() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace trt::cpu
