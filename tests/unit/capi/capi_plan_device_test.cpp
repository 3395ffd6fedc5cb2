// trainrt_config_model_info for each way a run resolves (backend/run_resolution.h): which
// device, what `auto` precision becomes, the precision activations are sized at, cuDNN
// attention's buffers, CUDA's 2-byte working copy. runtime.device = "cuda" is sized without
// touching a GPU, so every CUDA branch is pinned here on any machine. The figures are the
// planner's as it was before those rules had one owner (issue 41): they must not move.
// accel.cpu_matmul = "openblas" keeps the CPU's own working copy (4 bytes a parameter under
// bf16 on OpenBLAS, 2 on oneDNN) the same on every CPU, and runtime.threads = 2 the CPU's
// per-thread op scratch. Moved since: the bf16 Llama figures, when the norms and SwiGLU left
// whole-chunk widening for per-thread row blocks (2026-12-07, 3567616 -> 2912256 bytes of
// activations: the SwiGLU chunk was the largest).
#include <gtest/gtest.h>

#include <string>

#include "capi_test_util.h"
#include "trainrt/trainrt.h"

namespace {

struct Case {
    const char* name;
    const char* device, *precision;  // runtime.device, runtime.precision
    const char* accel;               // more [accel] lines
    int64_t bytes_parameters, bytes_activations, bytes_total;
};

constexpr const char* kGpt2 = R"(
[model]
vocab_size = 64
context_length = 64
n_layer = 2
n_head = 4
d_model = 64
[train]
batch_size = 4
seq_len = 64
)";

// Grouped-query (n_kv_head < n_head): cuDNN's sizes do not apply.
constexpr const char* kLlamaGqa = R"(
[model]
arch = "llama"
vocab_size = 64
context_length = 64
n_layer = 2
n_head = 4
n_kv_head = 2
d_model = 64
[train]
batch_size = 4
seq_len = 64
)";

class CapiPlanDevice : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(CapiPlanDevice, FiguresOfEachResolution) {
    const Case& c = GetParam();
    const std::string name = c.name;
    const std::string toml = std::string(name.rfind("llama", 0) == 0 ? kLlamaGqa : kGpt2) +
                             "[runtime]\nthreads = 2\ndevice = \"" + c.device +
                             "\"\nprecision = \"" + c.precision +
                             "\"\n[accel]\ncpu_matmul = \"openblas\"\n" + c.accel;
    trainrt_config* config = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&config, toml.c_str(), nullptr), TRAINRT_OK)
        << last_error();
    trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
    ASSERT_EQ(trainrt_config_model_info(&info, config), TRAINRT_OK) << last_error();
    EXPECT_EQ(info.bytes_parameters, c.bytes_parameters) << name;
    EXPECT_EQ(info.bytes_activations, c.bytes_activations) << name;
    EXPECT_EQ(info.bytes_total, c.bytes_total) << name;
    trainrt_config_destroy(config);
}

INSTANTIATE_TEST_SUITE_P(
    Resolutions, CapiPlanDevice,
    ::testing::Values(
        // The CPU at its own precision; tf32 (CUDA's) is sized as fp32 there.
        Case{"cpu_fp32", "cpu", "fp32", "", 449536, 3535872, 5334016},
        Case{"cpu_auto", "cpu", "auto", "", 449536, 3535872, 5334016},
        Case{"cpu_tf32", "cpu", "tf32", "", 449536, 3535872, 5334016},
        Case{"cpu_bf16", "cpu", "bf16", "", 899072, 2421760, 4669440},
        Case{"cpu_fp16", "cpu", "fp16", "", 899072, 2618368, 4866048},
        // CUDA at fp32/tf32: fp32 activations, no working copy, the matmul attention.
        Case{"cuda_fp32", "cuda", "fp32", "", 449536, 3535872, 5334016},
        Case{"cuda_tf32", "cuda", "tf32", "", 449536, 3535872, 5334016},
        // CUDA, auto = bf16: bf16 activations (accel.lowp_activations), cuDNN attention,
        // the 2-byte working copy.
        Case{"cuda_auto", "cuda", "auto", "", 674304, 2614272, 4637184},
        Case{"cuda_bf16", "cuda", "bf16", "", 674304, 2614272, 4637184},
        Case{"cuda_fp16", "cuda", "fp16", "", 674304, 2810880, 4833792},
        // Without lowp activations: fp32 activations, still cuDNN and the working copy.
        Case{"cuda_bf16_fp32_activations", "cuda", "bf16", "lowp_activations = false\n",
             674304, 3728384, 5751296},
        Case{"cuda_auto_fp32_activations", "cuda", "auto", "lowp_activations = false\n",
             674304, 3728384, 5751296},
        // The matmul attention asked for: its own buffers.
        Case{"cuda_bf16_matmul_attention", "cuda", "bf16", "attention = \"matmul\"\n",
             674304, 2421760, 4444672},
        Case{"cuda_fp16_cudnn_attention", "cuda", "fp16", "attention = \"cudnn\"\n",
             674304, 2810880, 4833792},
        // Grouped-query: the matmul attention's buffers, even with cuDNN asked for.
        Case{"llama_cuda_bf16", "cuda", "bf16", "", 788352, 2912256, 5277312},
        Case{"llama_cuda_bf16_cudnn_attention", "cuda", "bf16", "attention = \"cudnn\"\n", 788352,
             2912256, 5277312},
        Case{"llama_cpu_bf16", "cpu", "bf16", "", 1051136, 2912256, 5540096}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });
