// The CUDA backend's memory (zero-filled allocations, copies, out-of-memory errors) and the
// bf16/fp16 working copy of the registered parameters following the master weights, against
// the CPU backend for each CUDA precision. Every op at its shapes: cuda_op_cases_test.cpp (the
// op-case table, tests/ops); the step ops, samplers and determinism have their own files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace {

using gpu::Cover;
using gpu::kCpu;
using gpu::kCuda;
using gpu::Twin;
using trt::Backend;
using trt::Precision;
using trt::WeightLayout;

class CudaOps : public gpu::CudaOpsP {};

// ------------------------------------------------------------------ memory

TEST_P(CudaOps, MemoryZeroFilledCopiesAndOutOfMemory) {
    reserve(Cover().add(1, 64, 64));
    Backend& g = *cuda_;
    const size_t before = g.bytes_in_use();
    const size_t n = (1 << 20) + 7;
    {
        // Dirty memory, free it, allocate again: still zero-filled.
        void* p = g.alloc(n * 4, "dirty");
        g.copy_to_device(p, std::vector<float>(n, 3.5f).data(), n * 4);
        g.synchronize();
        g.free(p);
    }
    void* p = g.alloc(n * 4, "fresh");
    EXPECT_GE(g.bytes_in_use(), before + n * 4);
    std::vector<float> back(n, 1.0f);
    g.copy_to_host(back.data(), p, n * 4);
    size_t nonzero = 0;
    for (float x : back) nonzero += x != 0.0f;
    EXPECT_EQ(nonzero, 0u) << "alloc is documented zero-filled";
    auto v = gpu::rnd(n, 11);
    g.copy_to_device(p, v.data(), n * 4);
    g.zero(static_cast<float*>(p) + 5, 100 * 4);
    g.copy_to_host(back.data(), p, n * 4);
    for (size_t i = 0; i < n; i++) {
        const float want = i >= 5 && i < 105 ? 0.0f : v[i];
        ASSERT_EQ(back[i], want) << i;
    }
    g.free(p);
    g.free(nullptr);
    EXPECT_EQ(g.bytes_in_use(), before);
    try {
        g.alloc(size_t(1) << 50, "an absurd test buffer");
        ADD_FAILURE() << "a 1 PiB allocation succeeded";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::OutOfMemory) << e.what();
        EXPECT_NE(std::string(e.what()).find("an absurd test buffer"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(g.bytes_in_use(), before);
    // The backend still works after the failed allocation.
    void* q = g.alloc(64, "after");
    g.copy_to_device(q, v.data(), 64);
    std::vector<float> w(16);
    g.copy_to_host(w.data(), q, 64);
    EXPECT_EQ(0, std::memcmp(w.data(), v.data(), 64));
    g.free(q);
}

// ------------------------------------------------------------------ the working copy

// The bf16/fp16 working copy follows the master weights: after copy_to_device into the
// registered buffer and after adamw_step on it, a matmul sees the new values.
TEST_P(CudaOps, RegisteredWorkingCopyFollowsTheMasterWeights) {
    const int N = 64, K = 96, M = 80;
    reserve(Cover().matmul(N, K, M));
    const size_t n = (size_t)K * M + 10;
    Twin params = up(in(n, 551)), grads = up(gpu::rnd(n, 552)), m = up(gpu::rnd(n, 553, -0.01f, 0.01f)),
         v = up(gpu::rnd(n, 554, 1e-5f, 1e-3f));
    both([&](Backend& be, int s) { be.register_params(params.f(s), n); });
    Twin x = up(in(N * K, 555)), out = nan_floats(N * M);
    auto matmul = [&](const std::string& what) {
        out.poison();
        both([&](Backend& be, int s) {
            be.matmul_forward(out.f(s), x.f(s), params.f(s) + 3, nullptr, N, K, M,
                              WeightLayout::InOut);
        });
        expect_close(what, out, N * M, tol(false));
    };
    matmul("working copy: registered");
    // copy_to_device of part of the buffer.
    const auto part = in(K * M / 2, 556, 2.0f, 3.0f);
    for (int s = 0; s < 2; s++) be(s).copy_to_device(params.f(s) + 3 + 100, part.data(), part.size() * 4);
    matmul("working copy: after copy_to_device");
    // adamw_step over the registered buffer (lr large enough to move bf16 values).
    const std::vector<int64_t> ends = {(int64_t)n};
    const std::vector<float> decay = {0.0f};
    Twin e = up(ends), d = up(decay), sc = alloc(sizeof(trt::StepScalars));
    const trt::StepScalars init;
    sc.set(&init, sizeof init);
    const trt::AdamWConfig hp{0.9f, 0.95f, 1e-8f};
    both([&](Backend& be, int s) {
        trt::ParamSegments seg;
        seg.ends = e.as<int64_t>(s);
        seg.weight_decay = d.f(s);
        seg.count = 1;
        auto* st = sc.as<trt::StepScalars>(s);
        trt::optimizer_step_of(be).begin_step(st, 0.05f,
                                              1);  // step 1: every weight moves by about lr
        trt::optimizer_step_of(be).adamw_step(params.f(s), grads.f(s), m.f(s), v.f(s), n, seg, hp,
                                              st);
    });
    expect_close("adamw_step params (registered)", params, n, gpu::kTolFp32);
    matmul("working copy: after adamw_step");
}

INSTANTIATE_TEST_SUITE_P(Precision, CudaOps,
                         ::testing::Values(Precision::Fp32, Precision::Tf32, Precision::Bf16,
                                           Precision::Fp16),
                         gpu::precision_param_name);

}  // namespace
