// cuDNN attention's length-bucket casts (src/backend/cuda/kernels/padded_cast.cu) against their
// CPU twins (src/backend/cuda/padded_rows.h), bit for bit, bf16 and fp16: both the 128-bit
// path (W % 8 == 0, aligned) and the one-value path (odd W, or pointers off by one element);
// pad rows come out +0 whatever the buffer held, and unpadding never reads them. Runs the
// launchers directly (linked into test_gpu_cudnn_buckets), so it needs a CUDA device: without
// one the cases are skipped (failed under TRAINRT_REQUIRE_CUDA=1).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/padded_rows.h"
#include "gpu/gpu_test_util.h"

namespace {

using trt::Precision;

// bf16 / fp16 bits -> float (exact).
float decode(uint16_t h, Precision p) {
    if (p == Precision::Bf16) {
        const uint32_t bits = static_cast<uint32_t>(h) << 16;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
    const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = std::ldexp(static_cast<float>(mant), -24);  // subnormal (or zero)
    else if (exp == 31)
        v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    else
        v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

bool same_float_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

#define CUDA_OK(call)                                                                   \
    do {                                                                                \
        const cudaError_t cuda_ok_e_ = (call);                                          \
        ASSERT_EQ(cuda_ok_e_, cudaSuccess) << #call << ": " << cudaGetErrorString(cuda_ok_e_); \
    } while (0)

class PaddedCast : public ::testing::TestWithParam<Precision> {
protected:
    void SetUp() override {
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n == 0) {
            cudaGetLastError();
            const std::string why = e != cudaSuccess ? cudaGetErrorString(e) : "no device";
            if (gpu::cuda_required()) FAIL() << "no CUDA device (" << why << ")";
            GTEST_SKIP() << "no CUDA device: " << why;
        }
        CUDA_OK(cudaSetDevice(0));
        CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        ctx_.stream = stream_;
        ctx_.precision = GetParam();
    }
    void TearDown() override {
        for (void* p : held_) cudaFree(p);
        if (stream_) cudaStreamDestroy(stream_);
    }
    void* dev(size_t bytes) {
        void* p = nullptr;
        EXPECT_EQ(cudaMalloc(&p, bytes + 64), cudaSuccess);
        held_.push_back(p);
        return p;
    }

    // pad then unpad one shape; offset: elements by which both device pointers are moved off
    // their 256-byte alignment (1 forces the one-value path).
    void check(int B, int T, int Tb, int W, int offset, uint32_t seed) {
        const Precision p = GetParam();
        SCOPED_TRACE("B" + std::to_string(B) + " T" + std::to_string(T) + " Tb" +
                     std::to_string(Tb) + " W" + std::to_string(W) + " offset " +
                     std::to_string(offset) + " " + gpu::pname(p));
        const size_t n_in = static_cast<size_t>(B) * T * W, n_pad = static_cast<size_t>(B) * Tb * W;
        std::vector<float> src = gpu::rnd(n_in, seed, -3.0f, 3.0f);
        if (n_in > 3) {
            src[0] = 1e-6f;  // fp16 subnormal, bf16 normal
            src[1] = -0.0f;
            src[2] = 1.00390625f;  // a bf16 tie: rounds to even
        }
        float* d_src = static_cast<float*>(dev(n_in * sizeof(float))) + offset;
        uint16_t* d_pad = static_cast<uint16_t*>(dev(n_pad * 2)) + offset;
        float* d_out = static_cast<float*>(dev(n_in * sizeof(float))) + offset;
        // Everything on the kernels' stream: it is non-blocking, so a plain cudaMemset or
        // pageable cudaMemcpy (legacy stream) could land after the kernel (it did, on an H100).
        CUDA_OK(cudaMemcpyAsync(d_src, src.data(), n_in * sizeof(float), cudaMemcpyHostToDevice,
                                stream_));
        // NaN bits: every element must be written.
        CUDA_OK(cudaMemsetAsync(d_pad, 0xff, n_pad * 2, stream_));
        CUDA_OK(cudaMemsetAsync(d_out, 0xff, n_in * sizeof(float), stream_));

        trt::cuda::cast_padded_from_f32(ctx_, d_pad, d_src, B, T, Tb, W, p);
        CUDA_OK(cudaStreamSynchronize(stream_));
        std::vector<uint16_t> pad_bits(n_pad);
        CUDA_OK(cudaMemcpy(pad_bits.data(), d_pad, n_pad * 2, cudaMemcpyDeviceToHost));
        std::vector<float> want_pad(n_pad, -1.0f);
        trt::cuda::pad_rows(want_pad.data(), src.data(), B, T, Tb, W,
                            [p](float x) { return gpu::round_to(x, p); });
        size_t bad = 0;
        for (size_t i = 0; i < n_pad; ++i)
            if (!same_float_bits(decode(pad_bits[i], p), want_pad[i]) && bad++ < 5)
                ADD_FAILURE() << "padded element " << i << ": got " << decode(pad_bits[i], p)
                              << " want " << want_pad[i];
        EXPECT_EQ(bad, 0u) << "of " << n_pad << " padded elements";

        // Unpad from a buffer whose pad rows hold NaN: none may reach the output.
        std::vector<uint16_t> poisoned = pad_bits;
        for (int b = 0; b < B; ++b)
            for (int t = T; t < Tb; ++t)
                for (int c = 0; c < W; ++c)
                    poisoned[(static_cast<size_t>(b) * Tb + t) * W + c] = 0x7fff;
        CUDA_OK(cudaMemcpyAsync(d_pad, poisoned.data(), n_pad * 2, cudaMemcpyHostToDevice,
                                stream_));
        trt::cuda::cast_unpadded_to_f32(ctx_, d_out, d_pad, B, T, Tb, W, p);
        CUDA_OK(cudaStreamSynchronize(stream_));
        std::vector<float> out(n_in);
        CUDA_OK(cudaMemcpy(out.data(), d_out, n_in * sizeof(float), cudaMemcpyDeviceToHost));
        std::vector<float> want_out(n_in);
        trt::cuda::unpad_rows(want_out.data(), poisoned.data(), B, T, Tb, W,
                              [p](uint16_t h) { return decode(h, p); });
        bad = 0;
        for (size_t i = 0; i < n_in; ++i)
            if (!same_float_bits(out[i], want_out[i]) && bad++ < 5)
                ADD_FAILURE() << "unpadded element " << i << ": got " << out[i] << " want "
                              << want_out[i];
        EXPECT_EQ(bad, 0u) << "of " << n_in << " unpadded elements";
    }

    cudaStream_t stream_ = nullptr;
    trt::cuda::CudaCtx ctx_;
    std::vector<void*> held_;
};

TEST_P(PaddedCast, MatchesTheCpuTwinBitForBit) {
    struct Case { int B, T, Tb, W; };
    const Case cases[] = {
        {2, 17, 128, 3 * 64},   // qkv of C=64, one bucket
        {1, 1, 128, 3 * 768},   // the first sampled token of GPT-2
        {3, 100, 128, 64},      // dout / O of C=64
        {2, 129, 256, 3 * 128}, // one past a tile
        {1, 300, 512, 768},
        {2, 256, 256, 3 * 64},  // T == Tb: the plain cast
        {3, 5, 8, 15},          // odd width: the one-value path
    };
    uint32_t seed = 9100;
    for (const Case& c : cases) {
        check(c.B, c.T, c.Tb, c.W, /*offset=*/0, seed++);
        check(c.B, c.T, c.Tb, c.W, /*offset=*/1, seed++);  // misaligned: the one-value path
    }
}

INSTANTIATE_TEST_SUITE_P(LowPrecision, PaddedCast,
                         ::testing::Values(Precision::Bf16, Precision::Fp16),
                         gpu::precision_param_name);

}  // namespace
