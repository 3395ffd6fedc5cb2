// The op-case table (tests/ops/op_cases.h) on the CUDA backend, one test per (op, precision):
// every case against the CPU backend (tests/unit/cpu holds that against the double reference),
// both fed the same inputs, matmul operands rounded to bf16/fp16 for those precisions, the
// tolerance of the case for the precision (op_cases.h: fp32-math ops 1e-5 everywhere; matrix
// products tf32 2e-3, bf16/fp16 1e-2 forward, 2e-2 backward), bitwise where the case says so.
// Each case also runs twice on CUDA and must give the same bits (no atomics, fixed-order
// reductions), and at fp32 is held against the double reference itself (but the `large` ones).
// Weights marked as parameters sit in the registered buffer, so bf16/fp16 read the working
// copy. bf16/fp16 run twice: with fp32 activations (per-matmul casts), and with
// accel.lowp_activations, where CUDA stores activations in bf16/fp16 and the oracle is the
// CPU's bf16/fp16 mode (the same rounding points, docs/PRECISION.md). Properties beyond one
// call (bitwise run to run, working-copy refresh after AdamW, GQA as repeated MHA, memory,
// epilogue variants) are in the other files here.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/gpu_test_util.h"
#include "ops/op_cases.h"
#include "ops/op_runner.h"

namespace {

using trt::Precision;

// A precision, and for bf16/fp16 whether activations are stored in it too
// (accel.lowp_activations) or stay fp32 with per-matmul casts. The two last switches run
// the fast paths on low-precision activations: cudnn = accel.attention "cudnn" (the attention
// ops only, a fresh backend per case, since the first reserve decides whether cuDNN serves:
// at least one case must run on cuDNN, reading bf16 qkv in place); epilogues =
// accel.matmul_epilogues (cuBLASLt bias / GELU / bias-grad with a bf16 D, or their exact
// fallback when cuBLASLt refuses the fp32 bias). tiled: the matmul attention in its tiled form
// (AccelOptions::tiled_matmul_attention; the attention ops only).
struct Mode {
    Precision precision;
    bool lowp_acts;
    bool cudnn = false;
    bool epilogues = false;
    bool tiled = false;
};

std::string mode_text(const Mode& m, const char* sep) {
    std::string s = gpu::pname(m.precision);
    if (m.lowp_acts) s += std::string(sep) + "acts";
    if (m.cudnn) s += std::string(sep) + "cudnn";
    if (m.epilogues) s += std::string(sep) + "epilogues";
    if (m.tiled) s += std::string(sep) + "tiled";
    return s;
}

// For gtest's test listing ("bf16 acts cudnn", not the bytes of the struct).
void PrintTo(const Mode& m, std::ostream* os) { *os << mode_text(m, " "); }

class CudaOpCases : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {};

TEST_P(CudaOpCases, AgainstTheCpuBackend) {
    const auto& [op, mode] = GetParam();
    const Precision precision = mode.precision;
    const bool attention_op = op.rfind("attention", 0) == 0;
    ASSERT_TRUE(!mode.cudnn || attention_op) << "the cudnn mode is instantiated for attention only";
    ASSERT_TRUE(!mode.tiled || attention_op) << "the tiled mode is instantiated for attention only";
    trt::AccelOptions accel;
    accel.lowp_activations = mode.lowp_acts;
    accel.cudnn_attention = mode.cudnn;
    accel.matmul_epilogues = mode.epilogues;
    accel.tiled_matmul_attention = mode.tiled;
    accel.cuda_quantised_base = true;  // the qmatmul ops (off by default until a GPU runs them)
    std::unique_ptr<trt::Backend> cuda;
    TRT_CUDA_BACKEND_WITH_OR_SKIP(cuda, precision, accel);
    // The oracle stores activations as the CUDA backend does: the CPU in bf16/fp16 (docs/
    // PRECISION.md, the same rounding points) when CUDA keeps them so, else fp32.
    // 4 threads: ctest runs several of these at once.
    const trt::DType acts = cuda->activation_dtype();
    if (mode.lowp_acts)
        ASSERT_EQ(acts, precision == Precision::Bf16 ? trt::DType::BF16 : trt::DType::F16);
    else
        ASSERT_EQ(acts, trt::DType::F32);
    auto cpu = trt::make_cpu_backend(4, acts == trt::DType::BF16  ? Precision::Bf16
                                        : acts == trt::DType::F16 ? Precision::Fp16
                                                                  : Precision::Fp32);
    int cases = 0, on_cudnn = 0;
    for (const opcase::OpCase& c : opcase::all_cases()) {
        if (c.op != op) continue;
        trt::OpKind kind;
        ASSERT_TRUE(opcase::op_kind(c.op, &kind)) << c.op;
        if (!cuda->supports(kind, c.dims, precision))  // said, not hidden: a skip per op
            GTEST_SKIP() << "the CUDA backend does not run " << c.op << " yet (supports())";
        ++cases;
        if (mode.cudnn && cases > 1) {
            cuda.reset();
            TRT_CUDA_BACKEND_WITH_OR_SKIP(cuda, precision, accel);
        }
        const std::string what = c.op + " " + c.shape + " [" + mode_text(mode, " ") + "] ";
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
        if (mode.cudnn) {
            const trt::AccelStatus st = cuda->accel_status();
            std::printf("[ attention] %s%s%s\n", what.c_str(), st.attention.c_str(),
                        st.attention_note.empty() ? "" : (": " + st.attention_note).c_str());
            if (st.attention == "cudnn") ++on_cudnn;
        }
    }
    EXPECT_GT(cases, 0);
    if (mode.cudnn) {
        EXPECT_GT(on_cudnn, 0) << "no " << op << " case ran on cuDNN";
    }
}

std::string case_name(const ::testing::TestParamInfo<CudaOpCases::ParamType>& info) {
    return std::get<0>(info.param) + "_" + mode_text(std::get<1>(info.param), "_");
}

INSTANTIATE_TEST_SUITE_P(
    Op, CudaOpCases,
    ::testing::Combine(::testing::ValuesIn(opcase::op_names()),
                       ::testing::Values(Mode{Precision::Fp32, false}, Mode{Precision::Tf32, false},
                                         Mode{Precision::Bf16, false}, Mode{Precision::Fp16, false},
                                         Mode{Precision::Bf16, true}, Mode{Precision::Fp16, true},
                                         Mode{Precision::Bf16, true, false, true})),
    case_name);

// The cudnn mode only where it means something (a skipped test in a GPU run reads as a gap):
// attention dropout always runs on the matmul path (ModelDims::attention_dropout).
std::vector<std::string> attention_op_names() {
    std::vector<std::string> names;
    for (const std::string& n : opcase::op_names())
        if (n.rfind("attention", 0) == 0 && n.rfind("attention_dropout", 0) != 0)
            names.push_back(n);
    return names;
}

INSTANTIATE_TEST_SUITE_P(Attention, CudaOpCases,
                         ::testing::Combine(::testing::ValuesIn(attention_op_names()),
                                            ::testing::Values(Mode{Precision::Bf16, true, true,
                                                                   false})),
                         case_name);

// The tiled matmul attention (issue 39; not yet run on a GPU when written): every attention op,
// dropout and sliding windows included, fp32 and bf16 activations.
std::vector<std::string> all_attention_op_names() {
    std::vector<std::string> names;
    for (const std::string& n : opcase::op_names())
        if (n.rfind("attention", 0) == 0) names.push_back(n);
    return names;
}

INSTANTIATE_TEST_SUITE_P(
    TiledAttention, CudaOpCases,
    ::testing::Combine(::testing::ValuesIn(all_attention_op_names()),
                       ::testing::Values(Mode{Precision::Fp32, false, false, false, true},
                                         Mode{Precision::Bf16, true, false, false, true})),
    case_name);

}  // namespace
