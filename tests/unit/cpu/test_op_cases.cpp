// The op-case table (tests/ops/op_cases.h) on the CPU backend, one test per op:
//   - every case against the double reference (reference_ops.h) at 1, 2 and 3 threads,
//     tolerance fp32 (1e-5 relative; accumulators judged on the increment), but the `large`
//     ones (model-sized matmuls, whose double reference takes seconds);
//   - every case at 3 threads against 1 thread through the backend-vs-backend path the CUDA
//     suite (tests/gpu/cuda_op_cases_test.cpp) takes, bitwise where the case requires it;
//   - every case twice at 3 threads: the same bits.
// Properties beyond one call (bitwise run to run, fused == unfused bits, GQA as repeated MHA,
// edge values, errors) stay in test_cpu_*.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_lowp.h"
#include "cpu/reference_ops.h"
#include "ops/op_cases.h"
#include "ops/op_runner.h"

namespace {

class CpuOpCases : public ::testing::TestWithParam<std::string> {};

// Every precision runs each way its matmuls can (accel.cpu_matmul): OpenBLAS everywhere
// (bf16/fp16 by sgemm on widened operands), oneDNN where this build and CPU have it (fp32
// brgemm, bf16 kernels); a oneDNN mode this machine lacks is skipped, and says so once.
struct MatmulMode {
    trt::Precision p;
    trt::CpuMatmul matmul;
    const char* name;
};
constexpr MatmulMode kFp32Modes[] = {
    {trt::Precision::Fp32, trt::CpuMatmul::Openblas, "fp32"},
    {trt::Precision::Fp32, trt::CpuMatmul::Onednn, "fp32 onednn"},
};
constexpr MatmulMode kLowpModes[] = {
    {trt::Precision::Bf16, trt::CpuMatmul::Openblas, "bf16"},
    {trt::Precision::Bf16, trt::CpuMatmul::Onednn, "bf16 onednn"},
    {trt::Precision::Fp16, trt::CpuMatmul::Openblas, "fp16"},
};
// False when `be` does not run the mode's matmuls as asked (no oneDNN here).
bool runs_mode(const trt::Backend& be, const MatmulMode& mode) {
    if (mode.matmul != trt::CpuMatmul::Onednn) return true;
    const trt::AccelStatus st = be.accel_status();
    if (st.cpu_matmul == "onednn") return true;
    static bool said = false;
    if (!said) std::printf("[ SKIPPED  ] %s: %s\n", mode.name, st.cpu_matmul_note.c_str());
    said = true;
    return false;
}

TEST_P(CpuOpCases, AgainstTheReference) {
    for (const MatmulMode& mode : kFp32Modes) {
        int cases = 0;
        for (const opcase::OpCase& c : opcase::all_cases()) {
            if (c.op != GetParam() || c.large) continue;
            ++cases;
            for (int threads : {1, 2, 3}) {
                auto be = trt::make_cpu_backend(threads, mode.p, mode.matmul);
                if (!runs_mode(*be, mode)) break;
                for (const opcase::Check& k : opcase::against_reference(c, *be)) {
                    const std::string what = c.op + " " + c.shape + " " + k.tensor + " (" +
                                             mode.name + ", threads=" +
                                             std::to_string(threads) + ")";
                    if (threads == 1 && mode.matmul == trt::CpuMatmul::Openblas)
                        ref::report(what, k.error);
                    EXPECT_TRUE(k.passed()) << what << ": " << k.describe();
                }
            }
        }
        EXPECT_GT(cases, 0);
    }
}

TEST_P(CpuOpCases, ThreeThreadsAgainstOneAndRunToRun) {
    for (const MatmulMode& mode : kFp32Modes) {
        auto one = trt::make_cpu_backend(1, mode.p, mode.matmul);
        auto three = trt::make_cpu_backend(3, mode.p, mode.matmul);
        if (!runs_mode(*one, mode)) continue;
        for (const opcase::OpCase& c : opcase::all_cases()) {
            if (c.op != GetParam()) continue;
            for (const opcase::Check& k :
                 opcase::against_backend(c, *three, trt::Precision::Fp32, *one))
                EXPECT_TRUE(k.passed()) << c.op << " " << c.shape << " " << mode.name << " "
                                        << k.describe();
            for (const opcase::Check& k : opcase::run_to_run(c, *three, trt::Precision::Fp32))
                EXPECT_TRUE(k.passed()) << c.op << " " << c.shape << " " << mode.name
                                        << " run to run: " << k.describe();
        }
    }
}

// The low-precision modes (cpu_lowp.h): activations stored in bf16 (fp16), matmul weights
// through the rounded working copy, fp32 math. Against the double reference fed the same
// rounded inputs, each low-precision output within the rounding of its storage and each fp32
// output (statistics, losses, parameter gradients) at fp32 accuracy; the same at 1 and 3
// threads and run to run.
TEST_P(CpuOpCases, LowPrecisionAgainstTheReference) {
    for (const MatmulMode& mode : kLowpModes) {
        const trt::Precision p = mode.p;
        const std::string pname = mode.name;
        int cases = 0;
        auto one = trt::make_cpu_backend(1, p, mode.matmul);
        auto three = trt::make_cpu_backend(3, p, mode.matmul);
        if (!runs_mode(*one, mode)) continue;
        ASSERT_EQ(one->activation_dtype(),
                  p == trt::Precision::Bf16 ? trt::DType::BF16 : trt::DType::F16);
        for (const opcase::OpCase& c : opcase::all_cases()) {
            if (c.op != GetParam()) continue;
            if (!c.large) {
                ++cases;
                for (trt::Backend* be : {one.get(), three.get()})
                    for (const opcase::Check& k : opcase::against_reference(c, *be)) {
                        const std::string what = c.op + " " + c.shape + " " + k.tensor + " (" +
                                                 pname + ", threads=" +
                                                 std::to_string(be->num_threads()) + ")";
                        if (be == one.get()) ref::report(what, k.error);
                        EXPECT_TRUE(k.passed()) << what << ": " << k.describe();
                    }
            }
            for (const opcase::Check& k : opcase::against_backend(c, *three, p, *one))
                EXPECT_TRUE(k.passed()) << c.op << " " << c.shape << " " << pname
                                        << " 3 vs 1 thread: " << k.describe();
            for (const opcase::Check& k : opcase::run_to_run(c, *three, p))
                EXPECT_TRUE(k.passed()) << c.op << " " << c.shape << " " << pname
                                        << " run to run: " << k.describe();
        }
        EXPECT_GT(cases, 0);
    }
}

// The same with one row (ops with positions: one sequence) per chunk: every case crosses
// chunk boundaries, so an offset the chunk loop gets wrong (statistics, losses, targets,
// attention's saved state, positions) fails here though one-chunk cases would hide it.
TEST_P(CpuOpCases, Bf16InOneRowChunks) {
    struct Reset {
        ~Reset() {
            trt::cpu::LowpBackend::set_chunk_rows_for_tests(0);
            trt::cpu::LowpBackend::set_column_block_for_tests(0);
            trt::cpu::LowpBackend::set_panel_extent_for_tests(0);
        }
    } reset;
    trt::cpu::LowpBackend::set_chunk_rows_for_tests(1);
    // And [M, K]-weight matmuls in blocks of 3 output columns (the output head's path), so a
    // block's column offset is crossed too.
    trt::cpu::LowpBackend::set_column_block_for_tests(3);
    // And a quantised weight's bf16 panels (the oneDNN path) of 3 rows / columns.
    trt::cpu::LowpBackend::set_panel_extent_for_tests(3);
    for (const MatmulMode& mode : kLowpModes) {
        if (mode.p != trt::Precision::Bf16) continue;
        auto be = trt::make_cpu_backend(2, trt::Precision::Bf16, mode.matmul);
        if (!runs_mode(*be, mode)) continue;
        int cases = 0;
        for (const opcase::OpCase& c : opcase::all_cases()) {
            if (c.op != GetParam() || c.large) continue;
            ++cases;
            for (const opcase::Check& k : opcase::against_reference(c, *be))
                EXPECT_TRUE(k.passed()) << c.op << " " << c.shape << " " << k.tensor << " ("
                                        << mode.name << ", one-row chunks): " << k.describe();
        }
        EXPECT_GT(cases, 0);
    }
}

// The runner itself: a broken op must fail its checks (a suite that cannot fail proves
// nothing). Each mutant is a table case with its `run` replaced.
const opcase::OpCase& first_case(const std::string& op) {
    for (const opcase::OpCase& c : opcase::all_cases())
        if (c.op == op && !c.large) return c;
    throw std::runtime_error("no case for " + op);
}

bool all_pass(const std::vector<opcase::Check>& checks) {
    for (const auto& k : checks)
        if (!k.passed()) return false;
    return !checks.empty();
}

TEST(OpCaseRunner, CatchesBrokenOps) {
    auto be = trt::make_cpu_backend(1), other = trt::make_cpu_backend(2);
    // The unmodified cases pass (so what fails below fails for the mutation).
    for (const char* op : {"layernorm_backward", "encoder_forward", "swiglu_forward"}) {
        EXPECT_TRUE(all_pass(opcase::against_reference(first_case(op), *be))) << op;
        EXPECT_TRUE(all_pass(opcase::against_backend(first_case(op), *be,
                                                     trt::Precision::Fp32, *other)))
            << op;
    }

    // Accumulating twice: every += output is off by its whole increment.
    opcase::OpCase twice = first_case("layernorm_backward");
    const auto once = twice.run;
    twice.run = [once](trt::Backend& b, const opcase::DeviceTensors& t) {
        once(b, t);
        once(b, t);
    };
    EXPECT_FALSE(all_pass(opcase::against_reference(twice, *be)));

    // An output the op never writes keeps its NaN poison.
    opcase::OpCase idle = first_case("swiglu_forward");
    idle.run = [](trt::Backend&, const opcase::DeviceTensors&) {};
    EXPECT_FALSE(all_pass(opcase::against_reference(idle, *be)));
    EXPECT_FALSE(all_pass(opcase::against_backend(idle, *be, trt::Precision::Fp32, *other)));

    // One ulp off in a bitwise output: within tolerance, still a failure.
    opcase::OpCase nudged = first_case("encoder_forward");
    const auto exact = nudged.run;
    trt::Backend* oracle = other.get();
    const size_t out = nudged.tensors.size() - 1;
    ASSERT_TRUE(nudged.tensors[out].bitwise);
    nudged.run = [exact, oracle, out](trt::Backend& b, const opcase::DeviceTensors& t) {
        exact(b, t);
        if (&b == oracle) return;
        float x = 0;
        b.copy_to_host(&x, t.f(out), sizeof x);
        x = std::nextafter(x, INFINITY);
        b.copy_to_device(t.f(out), &x, sizeof x);
    };
    const auto checks = opcase::against_backend(nudged, *be, trt::Precision::Fp32, *other);
    ASSERT_EQ(checks.size(), 1u);
    EXPECT_LE(checks[0].error, checks[0].tol);
    EXPECT_FALSE(checks[0].passed());
}

INSTANTIATE_TEST_SUITE_P(Op, CpuOpCases, ::testing::ValuesIn(opcase::op_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
