// What the op-case table (test_op_cases.cpp) does not hold: the elementwise GELU kernels
// under the fused GELU ops (cpu_ops.h) against the double reference, and the classifier at
// extreme logits and with out-of-range targets. Runs for 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "cpu/reference_ops.h"

namespace {

using ref::Vec;
constexpr double kTol = 1e-5;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

class CpuOps : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override { be = trt::make_cpu_backend(GetParam()); }
    std::string tag(const std::string& op) const {
        return op + " (threads=" + std::to_string(GetParam()) + ")";
    }
    std::unique_ptr<trt::Backend> be;
};

TEST_P(CpuOps, Gelu) {
    const size_t n = 1237;
    auto x = ref::random_floats(n, 501, -5, 5), dout = ref::random_floats(n, 502);
    std::vector<float> out(n, kNaN), dx(n, kNaN);
    trt::cpu::gelu_forward(out.data(), x.data(), n, GetParam());
    trt::cpu::gelu_backward(dx.data(), x.data(), dout.data(), n, GetParam());
    Vec want(n), rdx(n);
    for (size_t i = 0; i < n; i++) {
        want[i] = ref::gelu(x[i]);
        rdx[i] = ref::gelu_grad(x[i]) * dout[i];
    }
    double ef = ref::rel_error(out, want), eb = ref::rel_error(dx, rdx);
    ref::report(tag("gelu fwd"), ef);
    ref::report(tag("gelu bwd (overwrite)"), eb);
    EXPECT_LE(ef, kTol);
    EXPECT_LE(eb, kTol);
}

TEST_P(CpuOps, ClassifierStableForHugeLogits) {
    const int N = 2, V = 3, Vp = 4;
    std::vector<float> lg = {1000.f, 999.f, 998.f, 0.f, -1000.f, -1001.f, -999.f, 0.f};
    std::vector<int32_t> tg = {0, 2};
    std::vector<float> losses(N);
    be->classifier_forward_backward(lg.data(), losses.data(), tg.data(), N, V, Vp, 1.0f, true);
    const double l0 = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
    EXPECT_NEAR(losses[0], l0, 1e-6);
    EXPECT_NEAR(losses[1], l0, 1e-6);
    for (float g : lg) EXPECT_TRUE(std::isfinite(g));
}

TEST_P(CpuOps, ClassifierRejectsOutOfRangeTargets) {
    const int N = 2, V = 5, Vp = 8;
    auto lg = ref::random_floats(N * Vp, 801);
    std::vector<float> losses(N);
    for (int32_t bad : {5, -2, 7, INT32_MIN}) {  // -1 is kIgnoredTarget (the op-case table)
        std::vector<int32_t> tg = {1, bad};
        try {
            be->classifier_forward_backward(lg.data(), losses.data(), tg.data(), N, V, Vp, 1.0f, true);
            ADD_FAILURE() << "target " << bad << " accepted";
        } catch (const trt::Error& e) {
            EXPECT_EQ(e.status(), trt::Status::Internal);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuOps, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return "t" + std::to_string(info.param); });

}  // namespace
