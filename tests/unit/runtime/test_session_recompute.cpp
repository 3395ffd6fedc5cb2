// train.recompute (issue 19): the backward re-runs parts of each block's forward instead of
// keeping them. Same ops on the same inputs: every loss, gradient norm and weight is bit for
// bit the run without recompute — for both families, bf16, LoRA and grad accumulation —
// while the activation memory drops (none > mlp > block), as the estimate says.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model/lora.h"
#include "runtime/model_info.h"
#include "runtime/session.h"

using namespace trt;

namespace {

struct Case {
    const char* name;
    const char* model;      // [model] lines besides the shape
    const char* lora;       // a [lora] section, or ""
    const char* precision;  // runtime.precision
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Config config(const Case& c, const char* recompute) {
    std::string toml =
        "[model]\nvocab_size = 17\ncontext_length = 8\nn_layer = 3\nn_head = 2\nd_model = 8\n";
    toml += c.model;
    toml += std::string("\n[train]\nbatch_size = 2\nseq_len = 6\ngrad_accum = 2\nsteps = 10\n") +
            "recompute = \"" + recompute + "\"\n[optim]\nlr = 0.01\nwarmup_steps = 2\n" +
            "[runtime]\ndevice = \"cpu\"\nthreads = 1\nprecision = \"" + c.precision + "\"\n" +
            c.lora;
    return Config::from_string(toml, "");
}

std::vector<int32_t> tokens(int seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(0, 16);
    std::vector<int32_t> t(2 * 2 * 7);
    for (auto& x : t) x = d(rng);
    return t;
}

bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class SessionRecompute : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(SessionRecompute, LossesAndWeightsAreBitwiseThoseOfNoRecompute) {
    Session none(config(GetParam(), "none"), LogSink{});
    Session mlp(config(GetParam(), "mlp"), LogSink{});
    Session block(config(GetParam(), "block"), LogSink{});
    for (int s = 0; s < 4; ++s) {
        const std::vector<int32_t> t = tokens(s);
        const StepResult a = none.step_tokens(t.data(), t.size());
        const StepResult b = mlp.step_tokens(t.data(), t.size());
        const StepResult c = block.step_tokens(t.data(), t.size());
        EXPECT_TRUE(same(a.loss, b.loss) && same(a.loss, c.loss))
            << "step " << s + 1 << ": " << a.loss << " " << b.loss << " " << c.loss;
        EXPECT_TRUE(same(a.grad_norm, b.grad_norm) && same(a.grad_norm, c.grad_norm))
            << "step " << s + 1;
    }
    // The weights after the steps: a forward on fixed tokens.
    const std::vector<int32_t> probe = tokens(99);
    const double la = none.forward(probe.data(), 2, 6, nullptr, 0);
    EXPECT_TRUE(same(la, mlp.forward(probe.data(), 2, 6, nullptr, 0)));
    EXPECT_TRUE(same(la, block.forward(probe.data(), 2, 6, nullptr, 0)));
    // Less memory, in order; each exactly the plan's estimate of activations.
    const int64_t mn = none.metrics().bytes_in_use, mm = mlp.metrics().bytes_in_use,
                  mb = block.metrics().bytes_in_use;
    EXPECT_GT(mn, mm);
    EXPECT_GT(mm, mb);
    const auto be = make_cpu_backend(1, std::string(GetParam().precision) == "bf16"
                                            ? Precision::Bf16 : Precision::Fp32);
    const RunConfig r = config(GetParam(), "none").run();
    const ModelSpec spec = run_model_spec(r);
    const ModelInfo in = model_info(spec, 2, 6, *be, nullptr, r.train.trainable, Recompute::None);
    const ModelInfo im = model_info(spec, 2, 6, *be, nullptr, r.train.trainable, Recompute::Mlp);
    const ModelInfo ib = model_info(spec, 2, 6, *be, nullptr, r.train.trainable, Recompute::Block);
    EXPECT_EQ(in.bytes_activations - im.bytes_activations, mn - mm);
    EXPECT_EQ(in.bytes_activations - ib.bytes_activations, mn - mb);
}

INSTANTIATE_TEST_SUITE_P(
    Runs, SessionRecompute,
    ::testing::Values(
        Case{"gpt2", "", "", "fp32"}, Case{"gpt2_bf16", "", "", "bf16"},
        Case{"llama", "arch = \"llama\"\nn_kv_head = 1\nd_ff = 12\n", "", "fp32"},
        Case{"gpt2_lora", "", "[lora]\nrank = 2\ntarget_modules = [\"all-linear\"]\n", "fp32"},
        Case{"llama_lora_bf16", "arch = \"llama\"\nd_ff = 12\ntie_embeddings = false\n",
             "[lora]\nrank = 2\ntarget_modules = [\"all-linear\"]\n", "bf16"},
        // The recomputed forward draws the forward's own masks.
        Case{"gpt2_dropout", "dropout = 0.2\n", "", "fp32"},
        Case{"llama_dropout_lora_bf16", "arch = \"llama\"\nd_ff = 12\ndropout = 0.1\n",
             "[lora]\nrank = 2\ntarget_modules = [\"all-linear\"]\ndropout = 0.2\n", "bf16"},
        // Issue 39: q/k norms recomputed with the block (their saved heads are shared then),
        // an explicit head_dim, q/k/v biases.
        Case{"qwen3_head_dim", "arch = \"qwen3\"\nn_kv_head = 1\nhead_dim = 6\nd_ff = 12\n", "",
             "fp32"},
        Case{"qwen3_bf16_lora", "arch = \"qwen3\"\nhead_dim = 6\nd_ff = 12\n",
             "[lora]\nrank = 2\ntarget_modules = [\"all-linear\"]\n", "bf16"},
        Case{"qwen2", "arch = \"qwen2\"\nn_kv_head = 1\nd_ff = 12\n", "", "fp32"}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });
