// The op-case table (tests/ops/op_cases.h) on the CUDA backend, one test per (op, precision):
// every case against the CPU backend (tests/unit/cpu holds that against the double reference),
// both fed the same inputs, matmul operands rounded to bf16/fp16 for those precisions, the
// tolerance of the case for the precision (op_cases.h: fp32-math ops 1e-5 everywhere; matrix
// products tf32 2e-3, bf16/fp16 1e-2 forward, 2e-2 backward), bitwise where the case says so.
// Each case also runs twice on CUDA and must give the same bits (no atomics, fixed-order
// reductions), and at fp32 is held against the double reference itself (but the `large` ones).
// Weights marked as parameters sit in the registered buffer, so bf16/fp16 read the working
// copy. When the CUDA backend stores bf16 activations, the oracle is the CPU's bf16 mode. Properties beyond one call (bitwise run to run, working-copy refresh after AdamW, GQA
// as repeated MHA, memory, epilogue variants) are in the other files here.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>

#include "gpu/gpu_test_util.h"
#include "ops/op_cases.h"
#include "ops/op_runner.h"

namespace {

using trt::Precision;

class CudaOpCases : public ::testing::TestWithParam<std::tuple<std::string, Precision>> {};

TEST_P(CudaOpCases, AgainstTheCpuBackend) {
    const auto& [op, precision] = GetParam();
    std::unique_ptr<trt::Backend> cuda;
    TRT_CUDA_BACKEND_OR_SKIP(cuda, precision);
    // The oracle stores activations as the CUDA backend does: the CPU in bf16 (docs/
    // PRECISION.md, the same rounding points) once CUDA keeps bf16 activations, else fp32.
    // 4 threads: ctest runs several of these at once.
    const bool bf16_acts = cuda->activation_dtype() == trt::DType::BF16;
    auto cpu = trt::make_cpu_backend(4, bf16_acts ? Precision::Bf16 : Precision::Fp32);
    int cases = 0;
    for (const opcase::OpCase& c : opcase::all_cases()) {
        if (c.op != op) continue;
        ++cases;
        const std::string what = c.op + " " + c.shape + " [" + gpu::pname(precision) + "] ";
        for (const opcase::Check& k : opcase::against_backend(c, *cuda, precision, *cpu)) {
            ref::report(what + k.tensor, k.error);
            EXPECT_TRUE(k.passed()) << what << k.describe();
        }
        for (const opcase::Check& k : opcase::run_to_run(c, *cuda, precision))
            EXPECT_TRUE(k.passed()) << what << "run to run: " << k.describe();
        if (precision == Precision::Fp32 && !c.large)
            for (const opcase::Check& k : opcase::against_reference(c, *cuda)) {
                ref::report(what + k.tensor + " vs reference", k.error);
                EXPECT_TRUE(k.passed()) << what << "against the reference: " << k.describe();
            }
    }
    EXPECT_GT(cases, 0);
}

std::string case_name(const ::testing::TestParamInfo<CudaOpCases::ParamType>& info) {
    return std::get<0>(info.param) + "_" + gpu::pname(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Op, CudaOpCases,
                         ::testing::Combine(::testing::ValuesIn(opcase::op_names()),
                                            ::testing::Values(Precision::Fp32, Precision::Tf32,
                                                              Precision::Bf16, Precision::Fp16)),
                         case_name);

}  // namespace
