// The CUDA backend's internal elementwise kernels (kernels/elementwise.cu: gelu_forward,
// gelu_backward, add_inplace), called directly through cuda_ops.h. They are not Backend ops
// (the fused matmul+GELU fallback, gelu_backward_bias and the bias-gradient epilogue use
// them), so the op-case suite reaches them only at aligned addresses; here they meet their
// CPU twins (cpu_ops.h) at every alignment:
//   - views at float offsets 0 (16-byte aligned: the float4 path) and 1, 2, 3 (scalar path),
//     sizes with and without a vector tail; nothing outside [off, off + n) is written;
//   - add_inplace is one IEEE addition per element: bitwise; GELU: ‖cuda − cpu‖/‖cpu‖ <= 1e-5;
//   - the vector and scalar paths of one kernel give the same bits.
// Links elementwise.cu on its own (no module, no backend): a CudaCtx on the default stream is
// all these kernels need. Skips without a device (fails with TRAINRT_REQUIRE_CUDA=1).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "backend/cuda/cuda_ops.h"
#include "gpu_test_util.h"

namespace {

using trt::cuda::CudaCtx;

class CudaElementwise : public ::testing::Test {
protected:
    void SetUp() override {
        int count = 0;
        const cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess || count == 0) {
            const std::string why = e != cudaSuccess ? cudaGetErrorString(e) : "no device";
            if (gpu::cuda_required()) FAIL() << "no CUDA device (TRAINRT_REQUIRE_CUDA): " << why;
            GTEST_SKIP() << "no CUDA device: " << why;
        }
        ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    }
    void TearDown() override {
        for (void* p : owned_) cudaFree(p);
    }
    // A device copy of host (its own allocation: 256-byte aligned).
    float* up(const std::vector<float>& host) {
        void* p = nullptr;
        EXPECT_EQ(cudaMalloc(&p, host.size() * sizeof(float)), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
                  cudaSuccess);
        owned_.push_back(p);
        return static_cast<float*>(p);
    }
    std::vector<float> down(const float* dev, size_t n) {
        std::vector<float> host(n);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        return host;
    }
    CudaCtx ctx_;  // default stream, fp32; these kernels use nothing else
    std::vector<void*> owned_;
};

// Elements [off, off + n) of got against want (n values); everything else must still be NaN.
void expect_view(const std::string& what, const std::vector<float>& got,
                 const std::vector<float>& want, size_t off, bool bitwise) {
    const size_t n = want.size();
    const std::vector<float> view(got.begin() + off, got.begin() + off + n);
    if (bitwise) {
        EXPECT_TRUE(gpu::same_bits(view, want)) << what << ": not bitwise equal to the CPU";
    } else {
        const double e = ref::rel_error(view, want);
        ref::report(what, e);
        EXPECT_LE(e, gpu::kTolFp32) << what;
    }
    for (size_t k = 0; k < got.size(); k++) {
        if (k >= off && k < off + n) continue;
        ASSERT_TRUE(std::isnan(got[k])) << what << ": wrote element " << k << " outside the view";
    }
}

TEST_F(CudaElementwise, AtOddOffsetsAndSizesAgainstTheCpu) {
    for (size_t n : {size_t(3), size_t(40 * 7), size_t(40 * 7 + 3), size_t(100003)})
        for (size_t off : {0, 1, 2, 3}) {
            const std::string sh = " n" + std::to_string(n) + " off" + std::to_string(off);
            const size_t len = n + 4;
            const auto av = gpu::rnd(len, 3701, -5, 5), bv = gpu::rnd(len, 3702);
            const std::vector<float> poison(len, gpu::kNaN);
            float* a = up(av);
            float* b = up(bv);
            float* dst = up(poison);
            float* g = up(poison);
            float* dg = up(poison);
            // dst's view starts as a's: dst += b.
            EXPECT_EQ(cudaMemcpy(dst + off, a + off, n * sizeof(float), cudaMemcpyDeviceToDevice),
                      cudaSuccess);
            trt::cuda::add_inplace(ctx_, dst + off, b + off, n);
            trt::cuda::gelu_forward(ctx_, g + off, a + off, n);
            trt::cuda::gelu_backward(ctx_, dg + off, a + off, b + off, n);

            std::vector<float> sum(n), gf(n), gb(n);
            for (size_t i = 0; i < n; i++) sum[i] = av[off + i] + bv[off + i];
            trt::cpu::gelu_forward(gf.data(), av.data() + off, n, 1);
            trt::cpu::gelu_backward(gb.data(), av.data() + off, bv.data() + off, n, 1);
            expect_view("add_inplace" + sh, down(dst, len), sum, off, true);
            expect_view("gelu fwd" + sh, down(g, len), gf, off, false);
            expect_view("gelu bwd" + sh, down(dg, len), gb, off, false);
        }
}

// The same data at an aligned and at a misaligned address: the float4 and the scalar path of
// one kernel give the same bits.
TEST_F(CudaElementwise, VectorAndScalarPathsAgreeBitwise) {
    const size_t n = 40 * 101 + 5;
    const auto xv = gpu::rnd(n, 3801, -6, 6), dv = gpu::rnd(n, 3802);
    auto run = [&](size_t off, bool backward) {
        std::vector<float> host(n + 4, 0.0f), dhost(n + 4, 0.0f);
        std::copy(xv.begin(), xv.end(), host.begin() + off);
        std::copy(dv.begin(), dv.end(), dhost.begin() + off);
        float* x = up(host);
        float* d = up(dhost);
        float* o = up(std::vector<float>(n + 4, 0.0f));
        if (backward)
            trt::cuda::gelu_backward(ctx_, o + off, x + off, d + off, n);
        else
            trt::cuda::gelu_forward(ctx_, o + off, x + off, n);
        auto all = down(o, n + 4);
        return std::vector<float>(all.begin() + off, all.begin() + off + n);
    };
    for (bool backward : {false, true}) {
        const auto aligned = run(0, backward);
        for (size_t off : {1, 3})
            EXPECT_TRUE(gpu::same_bits(aligned, run(off, backward)))
                << (backward ? "gelu bwd" : "gelu fwd") << " offset " << off;
    }
}

}  // namespace
