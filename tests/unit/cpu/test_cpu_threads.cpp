// The CPU backend's threads do not depend on the thread that calls it. OpenBLAS's OpenMP
// build takes its count from the *calling* thread's omp_get_max_threads() at every sgemm; the
// backend once set it only on the thread that created it, so a session stepped from another
// thread (a Go program's goroutines move between OS threads) ran OpenBLAS with that thread's
// default, nested inside its own one-thread regions: one thread created and destroyed per
// matmul, 70-130x slower steps (bench/results/2026-11-25-go-signal.md). Now every parallel
// loop is the pool's (cpu_pool.h) and OpenBLAS runs single-threaded inside it, whichever
// thread calls (cpu_threads.h). Also: a kernel leaves the caller's OpenMP setting as it found
// it, and results do not depend on the calling thread.
#include <gtest/gtest.h>

#include <cblas.h>
#include <omp.h>

#include <thread>
#include <vector>

#include "backend/backend.h"

namespace {

std::vector<float> ramp(size_t n, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 37) % 101) - 1.0f;
    return v;
}

struct Probe {
    int blas_after = -1, omp_after = -1;
    std::vector<float> out, dinp, dweight, attn;
};

// One matmul forward + backward and an attention forward on `be`, from the calling thread
// whose OpenMP default is host_threads; what OpenBLAS and OpenMP say afterwards.
Probe run_kernels(trt::Backend& be, int host_threads) {
    omp_set_num_threads(host_threads);
    const int N = 96, K = 48, M = 80;  // N*M*K well above OpenBLAS's threading threshold
    const std::vector<float> x = ramp(static_cast<size_t>(N) * K, 0.01f);
    const std::vector<float> w = ramp(static_cast<size_t>(K) * M, 0.02f);
    const std::vector<float> dout = ramp(static_cast<size_t>(N) * M, 0.03f);
    Probe p;
    p.out.assign(static_cast<size_t>(N) * M, 0.0f);
    p.dinp.assign(static_cast<size_t>(N) * K, 0.0f);
    p.dweight.assign(static_cast<size_t>(K) * M, 0.0f);
    be.matmul_forward(p.out.data(), x.data(), w.data(), nullptr, N, K, M,
                      trt::WeightLayout::InOut);
    be.matmul_backward(p.dinp.data(), p.dweight.data(), nullptr, dout.data(), x.data(), w.data(),
                       N, K, M, trt::WeightLayout::InOut);
    const int B = 2, T = 16, C = 32, NH = 2;
    const std::vector<float> qkv = ramp(static_cast<size_t>(B) * T * 3 * C, 0.005f);
    std::vector<float> saved(
        be.attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)));
    p.attn.assign(static_cast<size_t>(B) * T * C, 0.0f);
    be.attention_forward(p.attn.data(), saved.data(), qkv.data(),
                         trt::AttentionShape::from_width(B, T, C, NH, NH));
    p.blas_after = openblas_get_num_threads();
    p.omp_after = omp_get_max_threads();
    return p;
}

TEST(CpuThreads, OpenBlasRunsSingleThreadedOnAnyThread) {
    for (const int threads : {1, 2}) {
        SCOPED_TRACE(threads);
        const auto be = trt::make_cpu_backend(threads);
        Probe here, there;
        std::thread([&] { here = run_kernels(*be, 3); }).join();
        std::thread([&] { there = run_kernels(*be, 5); }).join();
        for (const Probe* p : {&here, &there}) {
            EXPECT_EQ(p->blas_after, 1)
                << "OpenBLAS followed the calling thread's OpenMP default";
        }
        EXPECT_EQ(here.omp_after, 3) << "the kernel changed the caller's OpenMP setting";
        EXPECT_EQ(there.omp_after, 5) << "the kernel changed the caller's OpenMP setting";
        EXPECT_EQ(here.out, there.out);
        EXPECT_EQ(here.dinp, there.dinp);
        EXPECT_EQ(here.dweight, there.dweight);
        EXPECT_EQ(here.attn, there.attn);
    }
}

}  // namespace
