// optim.state_dtype = "int8" on CUDA: adamw_step_q8 against the CPU backend's twin over three
// steps on a buffer whose blocks straddle segments and hold moments over six decades — the
// codes and scales equal (the same tables, the same per-element arithmetic), the parameters
// within fp32 rounding; a non-finite step changes nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "core/q8_moments.h"
#include "gpu_test_util.h"

namespace {

using trt::Precision;

TEST(CudaAdamWQ8, MatchesTheCpuOverThreeSteps) {
    std::unique_ptr<trt::Backend> cuda;
    TRT_CUDA_BACKEND_OR_SKIP(cuda, Precision::Fp32);
    auto cpu = trt::make_cpu_backend(2);
    const size_t n = 5000;
    const int64_t nb = trt::q8_blocks(static_cast<int64_t>(n));
    const std::vector<int64_t> ends{1000, 1001, 4000, 4001, 5000};
    const std::vector<float> decay{0.1f, 0.0f, 0.1f, 0.0f, 0.1f};
    const trt::Q8Tables tables = trt::make_q8_tables();
    std::vector<float> params(n), grads(n), ms(nb, 0.0f), vs(nb, 0.0f);
    std::vector<uint8_t> m8(n, 0), v8(n, 0);
    std::mt19937 rng(3);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& p : params) p = d(rng);
    // Device copies.
    auto up = [&](const void* src, size_t bytes) {
        void* p = cuda->alloc(bytes, "test");
        cuda->copy_to_device(p, src, bytes);
        return p;
    };
    auto* dp = static_cast<float*>(up(params.data(), n * 4));
    auto* dg = static_cast<float*>(cuda->alloc(n * 4, "grads"));
    auto* dm8 = static_cast<uint8_t*>(up(m8.data(), n));
    auto* dv8 = static_cast<uint8_t*>(up(v8.data(), n));
    auto* dms = static_cast<float*>(up(ms.data(), nb * 4));
    auto* dvs = static_cast<float*>(up(vs.data(), nb * 4));
    auto* dt = static_cast<trt::Q8Tables*>(up(&tables, sizeof tables));
    auto* de = static_cast<int64_t*>(up(ends.data(), ends.size() * 8));
    auto* dd = static_cast<float*>(up(decay.data(), decay.size() * 4));
    trt::StepScalars host_s;
    auto* ds = static_cast<trt::StepScalars*>(up(&host_s, sizeof host_s));
    const trt::AdamWConfig hp{0.9f, 0.95f, 1e-8f};
    const trt::ParamSegments cseg{ends.data(), decay.data(), 5}, gseg{de, dd, 5};
    for (int64_t step = 1; step <= 4; ++step) {
        for (size_t i = 0; i < n; ++i) grads[i] = d(rng) * std::pow(10.0f, -float(i % 7));
        cuda->copy_to_device(dg, grads.data(), n * 4);
        trt::StepScalars s;
        s.lr = 1e-3f;
        s.step = step;
        s.clip_scale = 0.75f;
        s.nonfinite = step == 4 ? 1 : 0;  // the last one is skipped
        cuda->copy_to_device(ds, &s, sizeof s);
        trt::optimizer_step_of(*cpu).adamw_step_q8(params.data(), grads.data(), m8.data(),
                                                   v8.data(), ms.data(), vs.data(), &tables, n,
                                                   cseg, hp, &s);
        trt::optimizer_step_of(*cuda).adamw_step_q8(dp, dg, dm8, dv8, dms, dvs, dt, n, gseg, hp,
                                                    ds);
    }
    std::vector<float> gp(n), gms(nb), gvs(nb);
    std::vector<uint8_t> gm8(n), gv8(n);
    cuda->copy_to_host(gp.data(), dp, n * 4);
    cuda->copy_to_host(gm8.data(), dm8, n);
    cuda->copy_to_host(gv8.data(), dv8, n);
    cuda->copy_to_host(gms.data(), dms, nb * 4);
    cuda->copy_to_host(gvs.data(), dvs, nb * 4);
    size_t code_diffs = 0;
    for (size_t i = 0; i < n; ++i) {
        EXPECT_NEAR(gp[i], params[i], 1e-6 * std::fabs(params[i]) + 1e-9) << i;
        code_diffs += (gm8[i] != m8[i]) + (gv8[i] != v8[i]);
    }
    for (int64_t b = 0; b < nb; ++b) {
        EXPECT_NEAR(gms[b], ms[b], 1e-6 * ms[b]) << b;
        EXPECT_NEAR(gvs[b], vs[b], 1e-6 * vs[b]) << b;
    }
    // The same arithmetic, but the CPU's sqrt/pow and FMA choices may move an element across
    // a code boundary now and then.
    EXPECT_LE(code_diffs, n / 100) << "codes differing from the CPU's";
    std::printf("[  info    ] adamw_step_q8: %zu of %zu codes differ from the CPU's\n", code_diffs,
                2 * n);
    for (void* p : {static_cast<void*>(dp), static_cast<void*>(dg), static_cast<void*>(dm8),
                    static_cast<void*>(dv8), static_cast<void*>(dms), static_cast<void*>(dvs),
                    static_cast<void*>(dt), static_cast<void*>(de), static_cast<void*>(dd),
                    static_cast<void*>(ds)})
        cuda->free(p);
}

}  // namespace
