// The Llama family through the C API, as a host program sees it: it trains and resumes
// bit-exactly like GPT-2, exports a Hugging Face folder that is itself a model.init_from
// (the folder's config.json sets the [model] keys; a key that contradicts it is refused),
// samples, and `trainrt info`'s summary names it. Tiny model: V 32, L2 H4 KV2 C16 F24.
#include <trainrt/trainrt.h>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char* const kModel = R"(
[model]
arch = "llama"
vocab_size = 32
context_length = 16
n_layer = 2
n_head = 4
n_kv_head = 2
d_model = 16
d_ff = 24
rope_theta = 500000.0
norm_eps = 1e-6
tie_embeddings = false
)";

const char* const kRun = R"(
[data]
train = "train*.bin"
val = "val.bin"
sampler = "sequential"

[train]
batch_size = 2
seq_len = 8
grad_accum = 2
steps = 12
eval_every = 0
eval_batches = 2

[optim]
lr = 0.01
warmup_steps = 2

[runtime]
threads = 1
)";

class CapiLlama : public CapiSessionTest {
protected:
    void SetUp() override {
        CapiSessionTest::SetUp();
        write_shard(dir_ + "/train0.bin", lcg_tokens(300, 1, 32));
        write_shard(dir_ + "/val.bin", lcg_tokens(100, 3, 32));
    }
    trainrt_config* config(const std::string& model_toml) {
        return config_from(model_toml + kRun);
    }

    trainrt_session* open(const std::string& model_toml = kModel) {
        return open_from(model_toml + kRun);
    }

    static std::pair<double, double> step(trainrt_session* s) {
        const trainrt_step_result r = step_result(s);
        return {r.loss, r.grad_norm};
    }

    static double eval(trainrt_session* s) {
        double loss = 0;
        EXPECT_EQ(trainrt_session_eval(&loss, s), TRAINRT_OK) << last_error();
        return loss;
    }

};

}  // namespace

TEST_F(CapiLlama, TrainsAndResumesBitExactly) {
    trainrt_session* full = open();
    std::vector<std::pair<double, double>> ref;
    for (int i = 0; i < 7; ++i) ref.push_back(step(full));

    trainrt_session* first = open();
    for (int i = 0; i < 3; ++i) step(first);
    char buf[4096];
    size_t needed = 0;
    const std::string ckpt = dir_ + "/ckpt";
    ASSERT_EQ(trainrt_session_save(buf, sizeof buf, &needed, first, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    trainrt_session* resumed = open();
    ASSERT_EQ(trainrt_session_load(resumed, ckpt.c_str()), TRAINRT_OK) << last_error();
    for (int i = 3; i < 7; ++i) {
        const auto [loss, norm] = step(resumed);
        EXPECT_TRUE(same_bits(loss, ref[i].first)) << "step " << i + 1;
        EXPECT_TRUE(same_bits(norm, ref[i].second)) << "step " << i + 1;
    }
    // A GPT-2 config cannot load the Llama checkpoint: the family differs.
    trainrt_session* gpt2 = open("[model]\nvocab_size = 32\ncontext_length = 16\nn_layer = 2\n"
                                 "n_head = 4\nd_model = 16\n");
    EXPECT_EQ(trainrt_session_load(gpt2, ckpt.c_str()), TRAINRT_ERR_CONFIG);
    EXPECT_TRUE(names(last_error(), "model.arch")) << last_error();
}

TEST_F(CapiLlama, AnExportedFolderIsAnInitFromThatSetsTheModel) {
    trainrt_session* a = open();
    for (int i = 0; i < 3; ++i) step(a);
    const std::string hf = dir_ + "/hf";
    ASSERT_EQ(trainrt_session_export(a, hf.c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK) << last_error();
    const double before = eval(a);

    // [model] names only the folder: every shape key comes from its config.json.
    trainrt_config* c = config("[model]\ninit_from = \"hf\"\n");
    ASSERT_NE(c, nullptr);
    char text[64];
    size_t needed = 0;
    ASSERT_EQ(trainrt_config_get_string(text, sizeof text, &needed, c, "model.arch"), TRAINRT_OK);
    EXPECT_STREQ(text, "llama");
    int64_t v = 0;
    EXPECT_EQ(trainrt_config_get_int(&v, c, "model.n_kv_head"), TRAINRT_OK);
    EXPECT_EQ(v, 2);
    EXPECT_EQ(trainrt_config_get_int(&v, c, "model.d_ff"), TRAINRT_OK);
    EXPECT_EQ(v, 24);
    double theta = 0;
    EXPECT_EQ(trainrt_config_get_double(&theta, c, "model.rope_theta"), TRAINRT_OK);
    EXPECT_EQ(theta, 500000.0);
    int32_t tied = 1;
    EXPECT_EQ(trainrt_config_get_bool(&tied, c, "model.tie_embeddings"), TRAINRT_OK);
    EXPECT_EQ(tied, 0);
    trainrt_session* b = nullptr;
    ASSERT_EQ(trainrt_session_create(&b, c), TRAINRT_OK) << last_error();
    sessions_.push_back(b);
    trainrt_config_destroy(c);
    // The same weights: the same validation loss, bit for bit.
    EXPECT_TRUE(same_bits(eval(b), before)) << eval(b) << " vs " << before;

    // A key written in [model] must agree with the folder; the error says which value wins.
    trainrt_config* bad = nullptr;
    const std::string contra = std::string("[model]\ninit_from = \"hf\"\nn_layer = 3\n") + kRun;
    EXPECT_EQ(trainrt_config_from_string(&bad, contra.c_str(), dir_.c_str()), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(bad, nullptr);
    EXPECT_TRUE(names(last_error(), "<string>:3:11: model.n_layer = 3 contradicts")) << last_error();
    EXPECT_TRUE(names(last_error(), "which gives 2")) << last_error();
    // Agreeing keys are fine.
    trainrt_config* same = config("[model]\ninit_from = \"hf\"\nn_layer = 2\narch = \"llama\"\n");
    EXPECT_NE(same, nullptr);
    trainrt_config_destroy(same);
}

TEST_F(CapiLlama, SamplesAndSummarises) {
    trainrt_session* s = open();
    step(s);
    const int32_t prompt[] = {1, 2, 3};
    int32_t out[5] = {};
    ASSERT_EQ(trainrt_session_sample(out, 5, s, prompt, 3, 5, nullptr), TRAINRT_OK) << last_error();
    for (int32_t id : out) EXPECT_TRUE(id >= 0 && id < 32) << id;

    trainrt_config* c = config(kModel);
    size_t needed = 0;
    ASSERT_EQ(trainrt_config_model_summary(nullptr, 0, &needed, c), TRAINRT_OK);
    std::string text(needed + 1, '\0');  // + the NUL
    ASSERT_EQ(trainrt_config_model_summary(text.data(), text.size(), &needed, c), TRAINRT_OK);
    trainrt_config_destroy(c);
    text.resize(needed);
    EXPECT_TRUE(names(text, "architecture: llama L2 H4 KV2 C16 F24 V32 T_max16")) << text;
    EXPECT_TRUE(names(text, "attention")) << text;
    EXPECT_TRUE(names(text, "output head")) << text;
}

// runtime.precision = "bf16" on the CPU (bf16 activations, fp32 math; cpu_lowp.h) trains a
// Llama-family model — RMSNorm, RoPE, SwiGLU and grouped-query attention in bf16 — close to
// fp32 (a bf16 loss is within 2% of the fp32 one over these steps) but not bit for bit (the
// rounding does happen), and resumes bit-exactly: the working copy follows a load.
TEST_F(CapiLlama, Bf16TracksFp32AndResumesBitExactly) {
    auto open_bf16 = [&] {
        // kRun ends in [runtime]: the key joins that table.
        return open_from(std::string(kModel) + kRun + "precision = \"bf16\"\n");
    };
    trainrt_session* fp32 = open();
    trainrt_session* low = open_bf16();
    std::vector<std::pair<double, double>> ref;
    bool differs = false;
    for (int i = 0; i < 6; ++i) {
        const auto a = step(fp32);
        const auto b = step(low);
        ref.push_back(b);
        EXPECT_NEAR(b.first, a.first, 2e-2 * a.first) << "step " << i + 1;
        EXPECT_NEAR(b.second, a.second, 5e-2 * a.second) << "step " << i + 1;
        differs = differs || !same_bits(a.first, b.first);
    }
    EXPECT_TRUE(differs) << "bf16 gave the fp32 losses bit for bit: nothing was rounded";

    trainrt_session* first = open_bf16();
    for (int i = 0; i < 2; ++i) step(first);
    char buf[4096];
    size_t needed = 0;
    const std::string ckpt = dir_ + "/ckpt_bf16";
    ASSERT_EQ(trainrt_session_save(buf, sizeof buf, &needed, first, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    trainrt_session* resumed = open_bf16();
    ASSERT_EQ(trainrt_session_load(resumed, ckpt.c_str()), TRAINRT_OK) << last_error();
    for (int i = 2; i < 6; ++i) {
        const auto [loss, norm] = step(resumed);
        EXPECT_TRUE(same_bits(loss, ref[i].first)) << "step " << i + 1;
        EXPECT_TRUE(same_bits(norm, ref[i].second)) << "step " << i + 1;
    }
}

// Issue 39: each Llama-shaped family through `model.init_from` alone — an exported folder
// (config.json + safetensors) sets the family and shape, the weights load bit for bit, and a
// run from it resumes bit-exactly from a checkpoint.
TEST_F(CapiLlama, EveryFamilyTrainsExportsAndResumesFromItsFolder) {
    const std::pair<const char*, const char*> families[] = {
        {"qwen2", "arch = \"qwen2\"\n"},
        {"qwen3", "arch = \"qwen3\"\nhead_dim = 6\n"},
        {"mistral", "arch = \"mistral\"\nsliding_window = 12\n"},
        {"llama3_rope", "rope_scaling_factor = 8.0\nrope_original_context = 8\n"
                        "rope_scaling = \"llama3\"\n"},
    };
    for (const auto& [name, keys] : families) {
        SCOPED_TRACE(name);
        // kModel with the family's keys (its arch line replaced when the family has one).
        std::string model = kModel;
        if (std::string(keys).rfind("arch", 0) == 0)
            model.erase(model.find("arch = \"llama\"\n"), 15);
        trainrt_session* a = open(model + keys);
        ASSERT_NE(a, nullptr) << last_error();
        for (int i = 0; i < 2; ++i) step(a);
        const std::string hf = dir_ + "/hf_" + name;
        ASSERT_EQ(trainrt_session_export(a, hf.c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
            << last_error();
        const double before = eval(a);
        const std::string folder = std::string("[model]\ninit_from = \"hf_") + name + "\"\n";
        trainrt_config* c = config(folder);
        ASSERT_NE(c, nullptr) << last_error();
        char arch[32];
        size_t needed = 0;
        ASSERT_EQ(trainrt_config_get_string(arch, sizeof arch, &needed, c, "model.arch"),
                  TRAINRT_OK);
        EXPECT_STREQ(arch, std::string(name) == "llama3_rope" ? "llama" : name);
        trainrt_config_destroy(c);
        trainrt_session* b = open(folder);
        ASSERT_NE(b, nullptr) << last_error();
        EXPECT_TRUE(same_bits(eval(b), before)) << "the folder's weights are the trained ones";
        // From the folder: 5 steps straight, or 2, a checkpoint, and 3 after loading it.
        std::vector<std::pair<double, double>> ref;
        for (int i = 0; i < 5; ++i) ref.push_back(step(b));
        trainrt_session* first = open(folder);
        for (int i = 0; i < 2; ++i) step(first);
        char buf[4096];
        const std::string ckpt = dir_ + "/ckpt_" + name;
        ASSERT_EQ(trainrt_session_save(buf, sizeof buf, &needed, first, ckpt.c_str()), TRAINRT_OK)
            << last_error();
        trainrt_session* resumed = open(folder);
        ASSERT_EQ(trainrt_session_load(resumed, ckpt.c_str()), TRAINRT_OK) << last_error();
        for (int i = 2; i < 5; ++i) {
            const auto [loss, norm] = step(resumed);
            EXPECT_TRUE(same_bits(loss, ref[i].first)) << "step " << i + 1;
            EXPECT_TRUE(same_bits(norm, ref[i].second)) << "step " << i + 1;
        }
    }
}
