// The memory planner's numbers (issue 19; `trainrt plan`): trainrt_config_model_info's total
// is within 5% of what a real CPU session holds (bytes_in_use), for shapes that exercise each
// part of the plan — grouped-query Llama with block recompute, LoRA (adapters, compact
// gradients and moments), frozen layers, and bf16 (the CPU backend's row chunks widened to
// fp32, cpu_lowp.cpp, counted by Backend::op_scratch_bytes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "capi_test_util.h"
#include "trainrt/trainrt.h"

namespace {

struct Shape {
    const char* name;
    const char* toml;  // appended to the base config (sections of their own)
};

class CapiPlan : public ::testing::TestWithParam<Shape> {};

}  // namespace

TEST_P(CapiPlan, EstimateWithinFivePercentOfTheSession) {
    const std::string dir = scratch_dir();
    write_shard(dir + "/train.bin", lcg_tokens(4000, 1, 64));
    const std::string toml = std::string(R"(
[data]
train = "train.bin"
[runtime]
device = "cpu"
threads = 2
)") + GetParam().toml;
    trainrt_config* c = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&c, toml.c_str(), dir.c_str()), TRAINRT_OK) << last_error();
    if (std::string(GetParam().name).find("bf16") != std::string::npos)
        ASSERT_EQ(trainrt_config_set(c, "runtime.precision", "\"bf16\""), TRAINRT_OK);
    trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
    ASSERT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
    trainrt_session* s = nullptr;
    ASSERT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
    trainrt_config_destroy(c);
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();  // after a step too
    ASSERT_EQ(trainrt_session_metrics(&m, s), TRAINRT_OK);
    const double est = static_cast<double>(info.bytes_total), got = static_cast<double>(m.bytes_in_use);
    EXPECT_LE(std::fabs(est - got), 0.05 * got)
        << GetParam().name << ": estimate " << est << " vs session " << got;
    trainrt_session_destroy(s);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CapiPlan,
    ::testing::Values(
        Shape{"gpt2_fp32", R"(
[model]
vocab_size = 64
context_length = 64
n_layer = 3
n_head = 4
d_model = 64
[train]
batch_size = 4
seq_len = 64
)"},
        Shape{"gpt2_bf16_recompute_mlp", R"(
# precision set below
[model]
vocab_size = 64
context_length = 64
n_layer = 3
n_head = 4
d_model = 64
[train]
batch_size = 6
seq_len = 48
recompute = "mlp"
)"},
        Shape{"llama_gqa_block", R"(
[model]
arch = "llama"
vocab_size = 64
context_length = 64
n_layer = 4
n_head = 4
n_kv_head = 2
d_model = 64
d_ff = 160
tie_embeddings = false
[train]
batch_size = 4
seq_len = 64
recompute = "block"
)"},
        Shape{"gpt2_lora_all_linear", R"(
[model]
vocab_size = 64
context_length = 64
n_layer = 3
n_head = 4
d_model = 64
[lora]
rank = 8
alpha = 16.0
target_modules = ["all-linear"]
[train]
batch_size = 4
seq_len = 64
)"},
        Shape{"llama_frozen", R"(
[model]
arch = "llama"
vocab_size = 64
context_length = 64
n_layer = 3
n_head = 4
d_model = 64
d_ff = 128
[train]
batch_size = 4
seq_len = 32
trainable = ["model.layers.2.*", "model.norm.weight"]
)"},
        Shape{"llama_frozen_bf16", R"(
[model]
arch = "llama"
vocab_size = 64
context_length = 64
n_layer = 3
n_head = 4
d_model = 64
d_ff = 128
[train]
batch_size = 4
seq_len = 32
trainable = ["model.layers.2.*", "model.norm.weight"]
)"}),
    [](const ::testing::TestParamInfo<Shape>& i) { return i.param.name; });

// trainrt_model_info version 2 adds trainable_parameters; a version-1 caller (56 bytes)
// gets the first fields and nothing past them.
TEST(CapiPlanInfo, TrainableParametersAndAVersion1Caller) {
    trainrt_config* c = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&c, R"(
[model]
vocab_size = 64
context_length = 32
n_layer = 2
n_head = 2
d_model = 32
[lora]
rank = 4
target_modules = ["c_attn"]
[train]
seq_len = 32
)", nullptr), TRAINRT_OK) << last_error();
    trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
    ASSERT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
    EXPECT_EQ(info.version, 2u);
    // Two c_attn adapters: A [4, 32] and B [96, 4] per block.
    EXPECT_EQ(info.trainable_parameters, 2 * (4 * 32 + 96 * 4));
    EXPECT_GT(info.parameters, info.trainable_parameters);
    struct V1 {
        trainrt_model_info info;
        unsigned char guard[8];
    } v1;
    std::memset(&v1, 0xA5, sizeof v1);
    v1.info.struct_size = 56;  // sizeof the version-1 struct
    v1.info.version = 1;
    ASSERT_EQ(trainrt_config_model_info(&v1.info, c), TRAINRT_OK) << last_error();
    EXPECT_EQ(v1.info.bytes_total, info.bytes_total);
    const unsigned char* past = reinterpret_cast<const unsigned char*>(&v1.info) + 56;
    for (size_t i = 0; i < sizeof(int64_t); ++i) ASSERT_EQ(past[i], 0xA5) << "wrote past 56 bytes";
    trainrt_config_destroy(c);
}

// train.batch_size = "auto" through the C API: model_info needs a number (the session
// resolves "auto" on its device) and says so; a session resolves it and its config dump
// records the number.
TEST(CapiPlanAuto, ModelInfoRefusesAutoAndTheSessionRecordsTheNumber) {
    const std::string dir = scratch_dir();
    write_shard(dir + "/train.bin", lcg_tokens(4000, 1, 64));
    trainrt_config* c = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&c, R"(
[model]
vocab_size = 64
n_layer = 1
n_head = 2
d_model = 16
[data]
train = "train.bin"
[train]
batch_size = "auto"
seq_len = 16
[runtime]
device = "cpu"
threads = 1
memory_limit = 20000000
)", dir.c_str()), TRAINRT_OK) << last_error();
    int64_t b = -1;
    ASSERT_EQ(trainrt_config_get_int(&b, c, "train.batch_size"), TRAINRT_OK);
    EXPECT_EQ(b, 0);
    trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
    EXPECT_EQ(trainrt_config_model_info(&info, c), TRAINRT_ERR_CONFIG);
    EXPECT_NE(std::string(last_error()).find("\"auto\""), std::string::npos) << last_error();
    trainrt_session* s = nullptr;
    ASSERT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
    size_t needed = 0;
    ASSERT_EQ(trainrt_session_config_dump(nullptr, 0, &needed, s), TRAINRT_OK);
    std::string dump(needed, '\0');
    ASSERT_EQ(trainrt_session_config_dump(&dump[0], dump.size(), &needed, s), TRAINRT_OK);
    const size_t at = dump.find("\nbatch_size = ");
    ASSERT_NE(at, std::string::npos);
    const long long resolved = std::strtoll(dump.c_str() + at + 14, nullptr, 10);
    EXPECT_GE(resolved, 1) << dump;
    // The resolved size within the limit: the estimate of that config (a number now) fits.
    ASSERT_EQ(trainrt_config_set(c, "train.batch_size", std::to_string(resolved).c_str()),
              TRAINRT_OK);
    ASSERT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
    EXPECT_LE(info.bytes_total, 20000000);
    ASSERT_EQ(trainrt_config_set(c, "train.batch_size", std::to_string(resolved + 1).c_str()),
              TRAINRT_OK);
    ASSERT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
    EXPECT_GT(info.bytes_total, 20000000);
    trainrt_session_destroy(s);
    trainrt_config_destroy(c);
}
