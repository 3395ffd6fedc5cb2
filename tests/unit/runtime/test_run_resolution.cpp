// resolve_run (backend/run_resolution.h): the one place the run's device, resolved precision
// and sizing rules live, asked by select_backend and the memory plan (run_model_info, under
// trainrt_config_model_info). "CUDA usable" is a parameter, so runtime.device = "auto" on a
// machine with a GPU is checked here without one; the C API's figures of each resolution are
// pinned in tests/unit/capi/capi_plan_device_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "backend/backend_factory.h"
#include "backend/run_resolution.h"
#include "config/config.h"
#include "runtime/model_info.h"

using namespace trt;

namespace {

RunConfig run(const std::string& runtime, const std::string& accel = "",
              const std::string& model = "") {
    return Config::from_string("[model]\nvocab_size = 64\ncontext_length = 32\nn_layer = 2\n"
                               "n_head = 4\nd_model = 32\n" + model +
                               "[train]\nbatch_size = 2\nseq_len = 32\n[runtime]\n" + runtime +
                               "[accel]\ncpu_matmul = \"openblas\"\n" + accel,
                               "")
        .run();
}

void expect_same_figures(const ModelInfo& a, const ModelInfo& b) {
    EXPECT_EQ(a.bytes_parameters, b.bytes_parameters);
    EXPECT_EQ(a.bytes_optimizer, b.bytes_optimizer);
    EXPECT_EQ(a.bytes_activations, b.bytes_activations);
    EXPECT_EQ(a.bytes_total, b.bytes_total);
}

}  // namespace

TEST(RunResolution, AutoDeviceFollowsWhetherCudaIsUsable) {
    const RunConfig r = run("device = \"auto\"\n");
    // usable: what device = "cuda" gets (which never asks); else what device = "cpu" gets.
    for (const bool usable : {true, false}) {
        const RunResolution res = resolve_run(r, usable);
        EXPECT_EQ(res.cuda, usable);
        const Precision p = usable ? Precision::Bf16 : Precision::Fp32;
        EXPECT_EQ(res.options.precision, p);
        EXPECT_EQ(res.sizing_precision, p);
        EXPECT_EQ(res.cudnn_attention_sizes, usable);
        EXPECT_EQ(res.cuda_working_copy_bytes_per_param, usable ? 2u : 0u);
        const RunConfig fixed = run(usable ? "device = \"cuda\"\n" : "device = \"cpu\"\n");
        EXPECT_EQ(resolve_run(fixed, !usable).cuda, usable);
        expect_same_figures(run_model_info(r, res),
                            run_model_info(fixed, resolve_run(fixed, !usable)));
    }
}

// CUDA under bf16 without accel.lowp_activations: fp32 activations, yet cuDNN's buffers and
// the 2-byte working copy; fp32/tf32: none of them; grouped-query: no cuDNN sizes.
TEST(RunResolution, CudaSizingRules) {
    const RunResolution fp32_acts =
        resolve_run(run("device = \"cuda\"\nprecision = \"bf16\"\n", "lowp_activations = false\n"));
    EXPECT_EQ(fp32_acts.sizing_precision, Precision::Fp32);
    EXPECT_TRUE(fp32_acts.cudnn_attention_sizes);
    EXPECT_EQ(fp32_acts.cuda_working_copy_bytes_per_param, 2u);
    for (const char* p : {"fp32", "tf32"}) {
        const RunResolution r = resolve_run(run(std::string("device = \"cuda\"\nprecision = \"") +
                                                p + "\"\n"));
        EXPECT_EQ(r.sizing_precision, Precision::Fp32) << p;
        EXPECT_FALSE(r.cudnn_attention_sizes) << p;
        EXPECT_EQ(r.cuda_working_copy_bytes_per_param, 0u) << p;
    }
    EXPECT_FALSE(resolve_run(run("device = \"cuda\"\n", "attention = \"matmul\"\n"))
                     .cudnn_attention_sizes);
    EXPECT_FALSE(resolve_run(run("device = \"cuda\"\n", "attention = \"cudnn\"\n",
                                 "arch = \"llama\"\nn_kv_head = 2\n"))
                     .cudnn_attention_sizes);
    // The options the CUDA backend is created with.
    const RunResolution opts = resolve_run(run("device = \"cuda\"\nthreads = 3\n",
                                               "attention = \"cudnn\"\n"));
    EXPECT_EQ(opts.options.threads, 3);
    EXPECT_TRUE(opts.options.accel.cudnn_attention);
    EXPECT_TRUE(opts.options.accel.cudnn_grouped_query);
}

// The session's path (select_backend) resolves the CPU's precision by the same rule: auto is
// fp32 there, tf32 is refused.
TEST(RunResolution, SelectBackendOnTheCpuAgrees) {
    for (const char* p : {"auto", "fp32", "bf16"}) {
        const RunConfig r = run(std::string("device = \"cpu\"\nprecision = \"") + p + "\"\n");
        EXPECT_EQ(select_backend(r).precision, resolve_run(r).options.precision) << p;
    }
    EXPECT_THROW(select_backend(run("device = \"cpu\"\nprecision = \"tf32\"\n")), Error);
}
