// Config validation: one test per rule. Each asserts Status::Config, that the message names
// the key path, and - when the config came from a file - file:line:col of the bad value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.h"
#include "core/error.h"

namespace trt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

fs::path test_file() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& ch : name)
        if (ch == '/') ch = '_';
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "config_errors" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir / "run.toml";
}

// Message of the Error(Config) that loading `text` from a file throws ("" + failure if none).
std::string file_error(const std::string& text, fs::path* path_out = nullptr) {
    const fs::path path = test_file();
    {
        std::ofstream f(path, std::ios::binary);
        f << text;
    }
    if (path_out) *path_out = path;
    try {
        Config::from_file(path.string());
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
}

std::string string_error(const std::string& text) {
    try {
        Config::from_string(text, "/base");
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return "";
}

// ------------------------------------------------------------------ one rule per case

struct Rule {
    const char* name;     // test name
    const char* section;  // [section]
    const char* key;      // key inside it
    const char* value;    // bad TOML value
    const char* expect;   // text the message must contain (what to do)
    int offset = 0;       // column of the reported node within the value (array elements)
};

// The bad value sits on line 4, column 1 + len(key) + 3, after a comment and a valid key.
class ValidationRule : public ::testing::TestWithParam<Rule> {};

TEST_P(ValidationRule, FromFileNamesKeyAndPosition) {
    const Rule& r = GetParam();
    const std::string text = std::string("[") + r.section + "]\n# a comment\nlog_ok = 1\n" +
                             r.key + " = " + r.value + "\n";
    // log_ok is not a real key: replace line 3 with a harmless valid line instead.
    std::string doc = text;
    doc.replace(doc.find("log_ok = 1\n"), 11, "\n");
    fs::path path;
    const std::string msg = file_error(doc, &path);
    const std::string key_path = std::string(r.section) + "." + r.key;
    EXPECT_THAT(msg, HasSubstr(key_path));
    EXPECT_THAT(msg, HasSubstr(r.expect));
    const std::string col = std::to_string(std::string(r.key).size() + 4 + r.offset);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":4:" + col + ": ")) << msg;
}

TEST_P(ValidationRule, FromStringNamesKeyAndPosition) {
    const Rule& r = GetParam();
    const std::string msg =
        string_error(std::string("[") + r.section + "]\n" + r.key + " = " + r.value + "\n");
    EXPECT_THAT(msg, HasSubstr(std::string(r.section) + "." + r.key));
    EXPECT_THAT(msg, HasSubstr(r.expect));
    EXPECT_THAT(msg, HasSubstr("<string>:2:"));
}

TEST_P(ValidationRule, ThroughSetNamesKey) {
    const Rule& r = GetParam();
    Config c;
    const std::string before = c.dump();
    try {
        c.set(std::string(r.section) + "." + r.key, r.value);
        ADD_FAILURE() << "set accepted " << r.value;
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config);
        EXPECT_THAT(e.what(), HasSubstr(std::string(r.section) + "." + r.key));
        EXPECT_THAT(e.what(), HasSubstr(r.expect));
    }
    EXPECT_EQ(c.dump(), before);
}

const Rule kRules[] = {
    {"VocabSizeZero", "model", "vocab_size", "0", "expected an integer in [1, 2147483520]"},
    {"VocabSizeTooBig", "model", "vocab_size", "2147483648", "expected an integer in [1, 2147483520]"},
    // 2^31 - 1 was the documented maximum once; padded to 128 it overflowed an int.
    {"VocabSizeIntMax", "model", "vocab_size", "2147483647", "expected an integer in [1, 2147483520]"},
    {"ContextLengthZero", "model", "context_length", "0", "expected an integer in [1, 16777216]"},
    {"ContextLength2To32", "model", "context_length", "4294967296", "expected an integer in [1, 16777216]"},
    {"ContextLength2To40", "model", "context_length", "1099511627776", "expected an integer in [1, 16777216]"},
    {"NLayerZero", "model", "n_layer", "0", "expected an integer in [1, 16384]"},
    {"NLayer2To32Plus1", "model", "n_layer", "4294967297", "expected an integer in [1, 16384]"},
    {"NLayerIntMax", "model", "n_layer", "2147483647", "expected an integer in [1, 16384]"},
    {"NHeadZero", "model", "n_head", "0", "expected an integer in [1, 65536]"},
    {"DModelZero", "model", "d_model", "0", "expected an integer in [1, 1048576]"},
    {"ArchUnknown", "model", "arch", "\"gemma3\"", "\"gpt2\", \"llama\", \"qwen2\", \"mistral\", \"qwen3\""},
    {"NKvHeadNegative", "model", "n_kv_head", "-1", "expected an integer in [0, 65536]"},
    {"DFfNegative", "model", "d_ff", "-4", "expected an integer in [0, 4194304]"},
    {"DFfHuge", "model", "d_ff", "4194305", "expected an integer in [0, 4194304]"},
    {"RopeThetaZero", "model", "rope_theta", "0.0", "expected a finite number > 0"},
    {"RopeScalingUnknown", "model", "rope_scaling", "\"yarn\"", "\"none\", \"linear\", \"llama3\""},
    {"RopeScalingFactorZero", "model", "rope_scaling_factor", "0.0", "expected a finite number > 0"},
    {"RopeLowFreqFactorZero", "model", "rope_low_freq_factor", "0.0", "expected a finite number > 0"},
    {"RopeHighFreqFactorZero", "model", "rope_high_freq_factor", "0.0", "expected a finite number > 0"},
    {"SlidingWindowNegative", "model", "sliding_window", "-1", "expected an integer in [0, 16777216]"},
    {"RopeOriginalContextNegative", "model", "rope_original_context", "-1", "expected an integer in [0, 16777216]"},
    {"NormEpsZero", "model", "norm_eps", "0.0", "expected a finite number > 0"},
    {"NormEpsAboveOne", "model", "norm_eps", "2.0", "<= 1"},
    {"TieEmbeddingsNotBool", "model", "tie_embeddings", "1", "expected true or false"},
    {"DModelNegative", "model", "d_model", "-128", "expected an integer in [1, 1048576]"},
    {"DModel2To32Plus4", "model", "d_model", "4294967300", "expected an integer in [1, 1048576]"},
    {"ModelSeedNegative", "model", "seed", "-1", "expected a non-negative integer"},
    {"ModelSeedFloat", "model", "seed", "1.5", "expected a non-negative integer"},
    {"InitFromNotString", "model", "init_from", "false", "expected a string"},
    {"DataTrainNotString", "data", "train", "5", "expected a string"},
    {"DataValNotString", "data", "val", "[\"a\"]", "expected a string"},
    // A NUL would cut the path where C sees it: "x\u0000y" opened x.
    {"DataTrainWithNul", "data", "train", "\"x\\u0000y\"",
     "the string holds a NUL character (\\u0000) at byte 1; paths and names cannot contain one"},
    {"InitFromWithNul", "model", "init_from", "\"\\u0000\"", "NUL character (\\u0000) at byte 0"},
    {"TokenizerWithNul", "data", "tokenizer", "\"t\\u0000\"", "NUL character (\\u0000) at byte 1"},
    {"LoraTargetWithNul", "lora", "target_modules", "[\"q_proj\", \"v\\u0000\"]",
     "lora.target_modules (element 1): the string holds a NUL character", 11},
    {"SamplerUnknown", "data", "sampler", "\"shuffle\"", "\"random\", \"sequential\""},
    {"SamplerNotString", "data", "sampler", "1", "\"random\", \"sequential\""},
    {"DataSeedNegative", "data", "seed", "-5", "expected a non-negative integer"},
    {"PlacementUnknown", "data", "placement", "\"pinned\"", "\"auto\", \"device\", \"host\""},
    {"BatchSizeZero", "train", "batch_size", "0", "expected an integer in [1, 16777216] or \"auto\""},
    {"BatchSizeFloat", "train", "batch_size", "8.0", "expected an integer in [1, 16777216] or \"auto\""},
    {"BatchSize2To32Plus1", "train", "batch_size", "4294967297", "expected an integer in [1, 16777216] or \"auto\""},
    {"BatchSizeString", "train", "batch_size", "\"8\"", "got a string"},
    {"BatchSizeAutoCapitalised", "train", "batch_size", "\"Auto\"", "or \"auto\""},
    {"StateDtypeBf16", "optim", "state_dtype", "\"bf16\"", "\"fp32\", \"int8\""},
    {"MemoryLimitNegative", "runtime", "memory_limit", "-1", "expected an integer in [0, "},
    {"DistBackendGloo", "dist", "backend", "\"gloo\"", "\"auto\", \"none\", \"mpi\", \"nccl\""},
    {"DistTimeoutZero", "dist", "timeout", "0", "expected an integer in [1, 604800]"},
    {"DistZeroTwo", "dist", "zero", "2", "expected an integer in [0, 1]"},
    {"DistWireFp16", "dist", "wire_dtype", "\"fp16\"", "\"fp32\", \"bf16\""},
    {"SeqLenZero", "train", "seq_len", "0", "expected an integer in [1, 16777216]"},
    {"GradAccumZero", "train", "grad_accum", "0", "expected an integer in [1, 1048576]"},
    {"GradAccum2To62", "train", "grad_accum", "4611686018427387904", "expected an integer in [1, 1048576]"},
    {"StepsZero", "train", "steps", "0", "expected an integer in [1, 1099511627776]"},
    {"StepsInt64Max", "train", "steps", "9223372036854775807", "expected an integer in [1, 1099511627776]"},
    {"EvalEveryNegative", "train", "eval_every", "-1", "expected an integer in [0, 1099511627776]"},
    {"EvalBatchesZero", "train", "eval_batches", "0", "expected an integer in [1, 1099511627776]"},
    {"EvalBatches2To41", "train", "eval_batches", "2199023255552", "expected an integer in [1, 1099511627776]"},
    {"CheckpointEveryNegative", "train", "checkpoint_every", "-10", "expected an integer in [0, 1099511627776]"},
    {"KeepLastHuge", "train", "keep_last", "1099511627776", "expected an integer in [0, 1048576]"},
    {"OutDirNotString", "train", "out_dir", "1", "expected a string"},
    {"TrainableNotArray", "train", "trainable", "\"h.1.*\"", "expected an array of at most 4096"},
    {"TrainableEmptyPattern", "train", "trainable", "[\"h.1.*\", \"\"]", "non-empty strings", 10},
    {"TrainableNumber", "train", "trainable", "[1]", "as element 0", 1},
    {"RecomputeUnknown", "train", "recompute", "\"attention\"", "\"none\", \"mlp\", \"block\""},
    {"EvalModeUnknown", "train", "eval_mode", "\"all\"", "\"sampled\", \"whole\""},
    {"LoraRankNegative", "lora", "rank", "-1", "expected an integer in [0, 65536]"},
    {"LoraRankHuge", "lora", "rank", "65537", "expected an integer in [0, 65536]"},
    {"LoraAlphaZero", "lora", "alpha", "0.0", "expected a finite number > 0"},
    {"LoraDropoutOne", "lora", "dropout", "1.0", "< 1"},
    {"LoraDropoutNegative", "lora", "dropout", "-0.1", ">= 0"},
    {"ModelDropoutOne", "model", "dropout", "1.0", "< 1"},
    {"ModelDropoutNegative", "model", "dropout", "-0.5", ">= 0"},
    {"LoraTargetsString", "lora", "target_modules", "\"q_proj\"", "an array of at most 4096"},
    {"LoraInitFromNumber", "lora", "init_from", "3", "expected a string"},
    {"LrZero", "optim", "lr", "0", "expected a finite number > 0"},
    {"LrNegative", "optim", "lr", "-0.1", "expected a finite number > 0"},
    {"LrNan", "optim", "lr", "nan", "finite"},
    {"LrAboveFloatMax", "optim", "lr", "1e39", "expected a finite number > 0 and <= 3.4028234663852886e38"},
    {"LrString", "optim", "lr", "\"3e-4\"", "got a string"},
    {"BetasOneElement", "optim", "betas", "[0.9]", "an array of 2 numbers"},
    {"BetasThreeElements", "optim", "betas", "[0.9, 0.95, 0.99]", "an array of 2 numbers"},
    {"BetasNotArray", "optim", "betas", "0.9", "an array of 2 numbers"},
    {"Beta1One", "optim", "betas", "[1.0, 0.95]", "each in [0, 1)", 1},
    {"Beta2Negative", "optim", "betas", "[0.9, -0.1]", "each in [0, 1)", 6},
    {"BetaString", "optim", "betas", "[0.9, \"x\"]", "each in [0, 1)", 6},
    {"EpsZero", "optim", "eps", "0.0", "expected a finite number > 0"},
    {"EpsInf", "optim", "eps", "inf", "finite"},
    {"WeightDecayNegative", "optim", "weight_decay", "-0.01", "expected a finite number >= 0"},
    {"GradClipNegative", "optim", "grad_clip", "-1", "expected a finite number >= 0"},
    {"ScheduleUnknown", "optim", "schedule", "\"cos\"", "\"constant\", \"cosine\", \"linear\""},
    {"WarmupNegative", "optim", "warmup_steps", "-1", "expected an integer in [0, 1099511627776]"},
    {"MinLrNegative", "optim", "min_lr", "-1e-5", "expected a finite number >= 0"},
    {"DeviceUnknown", "runtime", "device", "\"gpu\"", "\"auto\", \"cpu\", \"cuda\""},
    {"PrecisionUnknown", "runtime", "precision", "\"fp8\"",
     "\"auto\", \"fp32\", \"tf32\", \"bf16\", \"fp16\""},
    {"ThreadsNegative", "runtime", "threads", "-2", "expected an integer in [0, 4096]"},
    {"ThreadsHuge", "runtime", "threads", "4294967296", "expected an integer in [0, 4096]"},
    {"LogEveryZero", "runtime", "log_every", "0", "expected an integer in [1, 1099511627776]"},
    {"MaxInflightZero", "runtime", "max_inflight", "0", "expected an integer in [1, 1024]"},
    {"FusedAdamwInt", "accel", "fused_adamw", "1", "expected true or false"},
    {"CudaGraphsString", "accel", "cuda_graphs", "\"true\"", "expected true or false"},
    {"AttentionUnknown", "accel", "attention", "\"flash\"", "\"auto\", \"cudnn\", \"matmul\""},
    {"FusedClassifierInt", "accel", "fused_classifier", "0", "expected true or false"},
    {"MatmulEpiloguesFloat", "accel", "matmul_epilogues", "1.0", "expected true or false"},
    {"LowpActivationsString", "accel", "lowp_activations", "\"yes\"", "expected true or false"},
    {"DeterministicString", "accel", "deterministic", "\"off\"", "expected true or false"},
    {"DeterministicInt", "accel", "deterministic", "0", "expected true or false"},
};

INSTANTIATE_TEST_SUITE_P(Config, ValidationRule, ::testing::ValuesIn(kRules),
                         [](const ::testing::TestParamInfo<Rule>& i) { return i.param.name; });

// ------------------------------------------------------------------ sizes formed from keys

std::string set_error(Config& c, const std::string& key, const std::string& value) {
    try {
        c.set(key, value);
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config) << e.what();
        return e.what();
    }
    ADD_FAILURE() << key << " = " << value << " was accepted";
    return "";
}

TEST(ConfigSizes, RowsPerMicroBatchMustFitAnInt) {
    Config c;  // seq_len = 128
    const std::string before = c.dump();
    const std::string msg = set_error(c, "train.batch_size", "16777216");  // 2^31 rows
    EXPECT_THAT(msg, HasSubstr("train.batch_size x train.seq_len = 16777216 x 128"));
    EXPECT_THAT(msg, HasSubstr("use train.grad_accum"));
    EXPECT_EQ(c.dump(), before);  // a refused set leaves the config unchanged
    c.set("train.seq_len", "127");
    c.set("train.batch_size", "16777216");  // just under 2^31 rows: accepted
    EXPECT_EQ(c.run().train.batch_size, 16777216);
}

TEST(ConfigSizes, ModelsNoMachineHoldsAreRefusedBeforeAnyProductOverflows) {
    Config c;
    c.set("model.d_model", "1048576");
    c.set("model.n_head", "16");
    const std::string msg = set_error(c, "model.n_layer", "16384");
    EXPECT_THAT(msg, HasSubstr("TiB"));
    EXPECT_THAT(msg, HasSubstr("more than the 4096 TiB"));
    // The largest vocabulary with the widest model: still refused, still a Config error.
    Config v;
    v.set("model.d_model", "262144");
    EXPECT_THAT(set_error(v, "model.vocab_size", "2147483520"), HasSubstr("TiB"));
}

TEST(ConfigSizes, TheLargestAllowedKeysAloneAreAccepted) {
    // Every key at its bound on an otherwise tiny model: each fits the limits on its own.
    Config c;
    c.set("model.vocab_size", "2147483520");
    c.set("train.steps", "1099511627776");
    c.set("train.eval_batches", "1099511627776");
    c.set("train.grad_accum", "1048576");
    c.set("model.n_layer", "16384");
    EXPECT_EQ(c.run().model.vocab_size, 2147483520);
    EXPECT_EQ(c.run().model.n_layer, 16384);
}

// ------------------------------------------------------------------ messages that help

TEST(ConfigErrors, EnumNearMissSuggestsValue) {
    EXPECT_THAT(string_error("[optim]\nschedule = \"cosin\"\n"), HasSubstr("did you mean \"cosine\"?"));
}

TEST(ConfigErrors, FloatForIntegerSaysSo) {
    const std::string msg = string_error("[train]\nsteps = 10.5\n");
    EXPECT_THAT(msg, HasSubstr("train.steps"));
    EXPECT_THAT(msg, HasSubstr("got a float (10.5)"));
}

TEST(ConfigErrors, SeveralProblemsReportTheFirstAndCountTheRest) {
    const std::string msg =
        string_error("[train]\nsteps = 0\nbatch_size = 0\n[optim]\nlr = -1\n");
    EXPECT_THAT(msg, HasSubstr("<string>:2:9: train.steps"));
    EXPECT_THAT(msg, HasSubstr("and 2 more problems"));
}

// ------------------------------------------------------------------ cross-key rules

TEST(ConfigErrors, DModelNotDivisibleByNHead) {
    fs::path path;
    const std::string msg = file_error("[model]\nn_head = 4\nd_model = 130\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":3:11: model.d_model"));
    EXPECT_THAT(msg, HasSubstr("not divisible by model.n_head (4)"));
}

TEST(ConfigErrors, DModelDefaultNotDivisibleByGivenNHead) {
    fs::path path;  // d_model stays 128; n_head = 5 given on line 2
    const std::string msg = file_error("[model]\nn_head = 5\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":2:"));
    EXPECT_THAT(msg, HasSubstr("model.d_model"));
}

TEST(ConfigErrors, KvHeadsMustDivideHeads) {
    fs::path path;
    const std::string msg =
        file_error("[model]\narch = \"llama\"\nn_head = 4\nn_kv_head = 3\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":4:13: model.n_kv_head"));
    EXPECT_THAT(msg, HasSubstr("does not divide model.n_head (4)"));
}

// GPT-2 has no switch for what only Llama-family models have; each is refused where it was
// written, naming model.arch as the way out.
TEST(ConfigErrors, Gpt2RefusesLlamaOnlySwitches) {
    const char* const cases[][2] = {
        {"n_kv_head = 2", "grouped-query attention"},
        {"tie_embeddings = false", "always its token embedding"},
        {"rope_theta = 500000.0", "learned positions, not RoPE"},
        {"norm_eps = 1e-6", "LayerNorm epsilon is 1e-5"},
        {"rope_scaling = \"linear\"\nrope_scaling_factor = 2.0", "learned positions, not RoPE"},
    };
    for (const auto& c : cases) {
        fs::path path;
        const std::string msg = file_error(std::string("[model]\n") + c[0] + "\n", &path);
        EXPECT_THAT(msg, HasSubstr(path.string() + ":2:")) << c[0];
        EXPECT_THAT(msg, HasSubstr(c[1])) << c[0];
        EXPECT_THAT(msg, HasSubstr("model.arch = \"llama\"")) << c[0];
    }
    // The same keys at their GPT-2 values are fine (n_kv_head = n_head is plain MHA).
    EXPECT_NO_THROW(Config::from_string("[model]\nn_kv_head = 4\ntie_embeddings = true\n"
                                        "rope_theta = 10000.0\nnorm_eps = 1e-5\n", ""));
}

// model.rope_scaling's keys: each only with the kind that reads it, and llama3's band whole.
TEST(ConfigErrors, RopeScalingKeysBelongToTheirKind) {
    const char* const cases[][2] = {
        {"rope_scaling = \"linear\"\nrope_original_context = 8192", "read with \"llama3\" only"},
        {"rope_scaling = \"llama3\"\nrope_scaling_factor = 8.0", "needs the pretraining context"},
        {"rope_scaling = \"llama3\"\nrope_original_context = 8192\nrope_low_freq_factor = 4.0",
         "must be above model.rope_low_freq_factor"},
    };
    for (const auto& c : cases)
        EXPECT_THAT(string_error(std::string("[model]\narch = \"llama\"\n") + c[0] + "\n"),
                    HasSubstr(c[1])) << c[0];
    EXPECT_NO_THROW(Config::from_string("[model]\narch = \"llama\"\nrope_scaling = \"llama3\"\n"
                                        "rope_scaling_factor = 32.0\nrope_original_context = 8192\n",
                                        ""));
    // Key by key (each set validated): the band first, while rope_scaling is still "none".
    Config c = Config::from_string("[model]\narch = \"llama\"\n", "");
    c.set("model.rope_scaling_factor", "8.0");
    c.set("model.rope_original_context", "8192");
    EXPECT_NO_THROW(c.set("model.rope_scaling", "\"llama3\""));
    EXPECT_EQ(c.run().model.rope_scaling, RopeScaling::Llama3);
}

// model.sliding_window: Mistral's only; any length (the CPU runs windows shorter than the
// sequence; CUDA refuses them when the session starts).
TEST(ConfigErrors, SlidingWindowIsMistrals) {
    EXPECT_THAT(string_error("[model]\narch = \"llama\"\nsliding_window = 4096\n"),
                HasSubstr("only model.arch = \"mistral\" has a sliding window"));
    EXPECT_NO_THROW(Config::from_string("[model]\narch = \"mistral\"\nsliding_window = 64\n"
                                        "[train]\nseq_len = 128\n", ""));
}

TEST(ConfigErrors, LlamaHeadSizeMustBeEven) {
    const std::string msg =
        string_error("[model]\narch = \"llama\"\nn_head = 2\nd_model = 6\n");
    EXPECT_THAT(msg, HasSubstr("model.d_model / model.n_head = 3 is odd"));
}

TEST(ConfigErrors, SeqLenLongerThanContextLength) {
    fs::path path;
    const std::string msg =
        file_error("[model]\ncontext_length = 64\n\n[train]\nseq_len = 65\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":5:11: train.seq_len"));
    EXPECT_THAT(msg, HasSubstr("train.seq_len <= model.context_length"));
}

TEST(ConfigErrors, MinLrAboveLr) {
    fs::path path;
    const std::string msg = file_error("[optim]\nlr = 1e-4\nmin_lr = 2e-4\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":3:10: optim.min_lr"));
    EXPECT_THAT(msg, HasSubstr("optim.min_lr <= optim.lr"));
}

// ------------------------------------------------------------------ syntax, unknown, type

TEST(ConfigErrors, SyntaxErrorHasLineAndDescription) {
    fs::path path;
    const std::string msg = file_error("[model]\nn_layer = 2\nn_head = = 4\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":3:"));
    EXPECT_THAT(msg, HasSubstr("TOML syntax error"));
}

TEST(ConfigErrors, SyntaxErrorFromStringUsesSourceName) {
    try {
        Config::from_string("[train\n", "", "my.toml");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config);
        EXPECT_THAT(e.what(), HasSubstr("my.toml:1:"));
    }
}

// A model folder's config.json with a key twice: transformers takes the last, so reading the
// first would build another model than the one the weights were saved from.
TEST(ConfigErrors, ModelFolderConfigWithADuplicateKeyIsRefused) {
    const fs::path folder = fs::path(TRAINRT_TEST_TMP) / "config_errors" / "dup_keys_model";
    fs::remove_all(folder);
    fs::create_directories(folder);
    std::ofstream(folder / "config.json")
        << R"({"model_type":"gpt2","n_embd":32,"n_embd":64,"vocab_size":256,)"
           R"("n_positions":32,"n_layer":2,"n_head":2})";
    const std::string msg =
        string_error("[model]\ninit_from = \"" + folder.string() + "\"\n");
    EXPECT_THAT(msg, HasSubstr("model.init_from: the model folder's config.json cannot be used"));
    EXPECT_THAT(msg, HasSubstr((folder / "config.json").string() +
                               ": duplicate key \"n_embd\" at byte 33 ($.n_embd)"));
}

TEST(ConfigErrors, DuplicateKeyIsSyntaxError) {
    const std::string msg = string_error("[train]\nsteps = 1\nsteps = 2\n");
    EXPECT_THAT(msg, HasSubstr("<string>:3:"));
}

TEST(ConfigErrors, UnknownKeySuggestsNearMiss) {
    fs::path path;
    const std::string msg = file_error("[train]\nsteps = 5\nbatchsize = 8\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":3:1: train.batchsize: unknown key"));
    EXPECT_THAT(msg, HasSubstr("did you mean 'batch_size'?"));
}

// A huge unknown key (a fuzzer's 1 MB one took ~27 s of edit distances) gets no suggestion and
// a short message that shows its start and its length.
TEST(ConfigErrors, HugeUnknownKeyGetsAShortMessage) {
    const std::string key = "optim.lr" + std::string(200000, 'x');
    Config c;
    try {
        c.set(key, "1");
        ADD_FAILURE() << "set accepted a 200 KB key";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config);
        const std::string msg = e.what();
        EXPECT_THAT(msg, HasSubstr("unknown config key"));
        EXPECT_THAT(msg, HasSubstr("(200008 bytes)"));
        EXPECT_THAT(msg, Not(HasSubstr("did you mean")));
        EXPECT_LT(msg.size(), 400u) << msg.substr(0, 400);
    }
    try {
        (void)c.get_string(key);
        ADD_FAILURE() << "get_string found a 200 KB key";
    } catch (const Error& e) {
        EXPECT_LT(std::string(e.what()).size(), 400u);
    }
    // Near misses of ordinary length still get their suggestion.
    try {
        c.set("optim.lrr", "1");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_THAT(e.what(), HasSubstr("did you mean 'optim.lr'?"));
    }
}

TEST(ConfigErrors, KeyInWrongSectionPointsToItsSection) {
    const std::string msg = string_error("[train]\nlr = 0.1\n");
    EXPECT_THAT(msg, HasSubstr("train.lr"));
    EXPECT_THAT(msg, HasSubstr("optim.lr"));
}

TEST(ConfigErrors, UnknownSection) {
    fs::path path;
    const std::string msg = file_error("[model]\nn_layer = 2\n\n[modle]\nn_head = 2\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":4:"));
    EXPECT_THAT(msg, HasSubstr("modle: unknown section"));
    EXPECT_THAT(msg, HasSubstr("did you mean [model]?"));
}

TEST(ConfigErrors, TopLevelKeyIsUnknown) {
    const std::string msg = string_error("steps = 10\n");
    EXPECT_THAT(msg, HasSubstr("<string>:1:1: steps: unknown key"));
    EXPECT_THAT(msg, HasSubstr("train.steps"));
}

TEST(ConfigErrors, NestedTableInSectionIsUnknownKey) {
    const std::string msg = string_error("[model.extra]\nx = 1\n");
    EXPECT_THAT(msg, HasSubstr("model.extra: unknown key"));
}

TEST(ConfigErrors, SectionThatIsNotATable) {
    const std::string msg = string_error("model = 3\n");
    EXPECT_THAT(msg, HasSubstr("model: expected a table"));
    EXPECT_THAT(msg, HasSubstr("<string>:1:"));
}

TEST(ConfigErrors, WrongTypeNamesKeyTypeAndLine) {
    fs::path path;
    const std::string msg = file_error("[runtime]\n\nthreads = \"four\"\n", &path);
    EXPECT_THAT(msg, HasSubstr(path.string() + ":3:11: runtime.threads"));
    EXPECT_THAT(msg, HasSubstr("expected an integer in [0, 4096], got a string (\"four\")"));
}

TEST(ConfigErrors, InlineTableSectionsAreChecked) {
    const std::string msg = string_error("model = { n_layer = 0 }\n");
    EXPECT_THAT(msg, HasSubstr("model.n_layer"));
    EXPECT_EQ(Config::from_string("model = { n_layer = 3 }\n", "").run().model.n_layer, 3);
}

}  // namespace
}  // namespace trt
