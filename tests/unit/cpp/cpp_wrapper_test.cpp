// Tests of the header-only C++ wrapper (include/trainrt/trainrt.hpp): every method, errors as
// trainrt::Error with the library's status and message, bit-identical losses to the raw C API,
// request_stop from another thread, exceptions from callbacks rethrown after the C call
// returned, move semantics. A tiny GPT-2 (V 32, L1 H2 C16; B 2, T 8, one thread).
#include <trainrt/trainrt.hpp>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr int kV = 32;
constexpr int kB = 2;
constexpr int kT = 8;

const char* const kToml = R"(
[model]
vocab_size = 32
context_length = 16
n_layer = 1
n_head = 2
d_model = 16

[data]
train = "train.bin"
val = "val.bin"
sampler = "random"
seed = 5

[train]
batch_size = 2
seq_len = 8
steps = 6
eval_every = 0
eval_batches = 2

[optim]
lr = 0.01
warmup_steps = 2

[runtime]
threads = 1
log_every = 1
)";

static_assert(std::is_base_of_v<std::runtime_error, trainrt::Error>);
static_assert(!std::is_copy_constructible_v<trainrt::Session>);
static_assert(!std::is_copy_assignable_v<trainrt::Session>);
static_assert(std::is_nothrow_move_constructible_v<trainrt::Session>);
static_assert(std::is_nothrow_move_assignable_v<trainrt::Session>);
static_assert(!std::is_copy_constructible_v<trainrt::Config>);
static_assert(std::is_nothrow_move_constructible_v<trainrt::Config>);

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<int32_t> rows_of(int rows) {
    std::vector<int32_t> out;
    const int32_t pattern[8] = {3, 17, 8, 25, 1, 30, 12, 6};
    for (int b = 0; b < rows; ++b)
        for (int t = 0; t <= kT; ++t) out.push_back(pattern[(3 * b + t) % 8]);
    return out;
}

// Expects `stmt` to throw trainrt::Error with `status`; returns its message.
#define EXPECT_TRAINRT_ERROR(stmt, expected_status)                                  \
    [&]() -> std::string {                                                           \
        try {                                                                        \
            stmt;                                                                    \
        } catch (const trainrt::Error& e) {                                          \
            EXPECT_EQ(e.status(), expected_status) << #stmt << ": " << e.what();     \
            EXPECT_FALSE(e.message().empty()) << #stmt;                              \
            EXPECT_EQ(std::string(e.what()), e.message());                           \
            return e.message();                                                      \
        } catch (const std::exception& e) {                                          \
            ADD_FAILURE() << #stmt << " threw something else: " << e.what();          \
            return "";                                                               \
        }                                                                            \
        ADD_FAILURE() << #stmt << " did not throw";                                  \
        return "";                                                                   \
    }()

class CppWrapper : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = std::string(TRAINRT_TEST_TMP) + "/cpp/" + info->test_suite_name() + "." +
               info->name();
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        write_shard(dir_ + "/train.bin", lcg_tokens(400, 1, kV));
        write_shard(dir_ + "/val.bin", lcg_tokens(100, 2, kV));
    }

    trainrt::Config config() {
        trainrt::Config c = trainrt::Config::from_string(kToml, dir_);
        return c;
    }

    trainrt::Session session() { return trainrt::Session(config()); }

    std::string dir_;
};

// ====================================================================== library

TEST_F(CppWrapper, VersionAndFeatures) {
    EXPECT_EQ(trainrt::version(), std::string(trainrt_version_string()));
    EXPECT_EQ(trainrt::abi_version(), static_cast<uint32_t>(TRAINRT_ABI_VERSION));
    EXPECT_EQ(trainrt::features(), trainrt_build_features());
    EXPECT_TRUE(trainrt::features() & TRAINRT_FEATURE_CPU);
    EXPECT_TRUE(trainrt::has_feature(TRAINRT_FEATURE_CPU));
    EXPECT_EQ(trainrt::status_string(TRAINRT_ERR_IO), std::string(trainrt_status_string(-3)));
}

// ====================================================================== Config

TEST_F(CppWrapper, ConfigGettersSettersAndDump) {
    trainrt::Config defaults;
    EXPECT_TRUE(static_cast<bool>(defaults));
    EXPECT_GT(defaults.get_int("model.vocab_size"), 0);

    trainrt::Config c = trainrt::Config::from_string(kToml, dir_);
    EXPECT_EQ(c.get_int("train.batch_size"), kB);
    EXPECT_DOUBLE_EQ(c.get_double("optim.lr"), 0.01);
    c.set("optim.lr", "0.005").set("train.steps", "9");
    EXPECT_DOUBLE_EQ(c.get_double("optim.lr"), 0.005);
    EXPECT_EQ(c.get_int("train.steps"), 9);
    EXPECT_EQ(c.get_string("data.sampler"), "random");
    EXPECT_FALSE(c.get_string("train.steps").empty());  // non-string keys as TOML text
    const std::string dump = c.dump();
    EXPECT_NE(dump.find("batch_size"), std::string::npos);
    EXPECT_NE(dump.find("[optim]"), std::string::npos);

    // A bool key: find one in the dump and read it both ways.
    std::string bool_key;
    {
        std::string section;
        std::istringstream in(dump);
        for (std::string line; std::getline(in, line);) {
            if (!line.empty() && line[0] == '[') section = line.substr(1, line.find(']') - 1);
            const auto eq = line.find(" = ");
            if (eq != std::string::npos && bool_key.empty() &&
                (line.compare(eq + 3, std::string::npos, "true") == 0 ||
                 line.compare(eq + 3, std::string::npos, "false") == 0))
                bool_key = section + "." + line.substr(0, eq);
        }
    }
    ASSERT_FALSE(bool_key.empty()) << dump;
    const bool b = c.get_bool(bool_key);
    EXPECT_EQ(c.get_string(bool_key), b ? "true" : "false");
}

TEST_F(CppWrapper, ConfigFromFile) {
    {
        std::ofstream f(dir_ + "/run.toml");
        f << kToml;
    }
    trainrt::Config c = trainrt::Config::from_file(dir_ + "/run.toml");
    EXPECT_EQ(c.get_int("train.seq_len"), kT);
    trainrt::Session s = trainrt::Session::from_file(dir_ + "/run.toml");
    EXPECT_EQ(s.step().step, 1);
}

TEST_F(CppWrapper, ConfigErrorsCarryStatusAndLibraryMessage) {
    // The same failure through the raw C API gives the expected message.
    trainrt_config* raw = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&raw, "[model\nx = ", nullptr), TRAINRT_ERR_CONFIG);
    const std::string raw_msg = trainrt_last_error_message();
    const std::string msg =
        EXPECT_TRAINRT_ERROR(trainrt::Config::from_string("[model\nx = "), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(msg, raw_msg);

    trainrt::Config c = trainrt::Config::from_string(kToml, dir_);
    const std::string unknown =
        EXPECT_TRAINRT_ERROR(c.set("optim.no_such_key", "1"), TRAINRT_ERR_CONFIG);
    EXPECT_NE(unknown.find("no_such_key"), std::string::npos) << unknown;
    EXPECT_TRAINRT_ERROR(c.set("optim.lr", "\"fast\""), TRAINRT_ERR_CONFIG);
    EXPECT_DOUBLE_EQ(c.get_double("optim.lr"), 0.01);  // unchanged after the failed set
    EXPECT_TRAINRT_ERROR(c.get_int("data.sampler"), TRAINRT_ERR_CONFIG);
    EXPECT_TRAINRT_ERROR(c.get_double("data.sampler"), TRAINRT_ERR_CONFIG);
    EXPECT_TRAINRT_ERROR(c.get_bool("data.sampler"), TRAINRT_ERR_CONFIG);
    EXPECT_TRAINRT_ERROR(c.get_string("model.nope"), TRAINRT_ERR_CONFIG);
    EXPECT_TRAINRT_ERROR(trainrt::Config::from_file(dir_ + "/missing.toml"), TRAINRT_ERR_IO);
    EXPECT_TRAINRT_ERROR(trainrt::config_from_checkpoint(dir_ + "/no_ckpt"), TRAINRT_ERR_IO);

    // A NUL inside a std::string would end the C string there: refused, nothing changed.
    using namespace std::string_literals;
    const std::string nul = EXPECT_TRAINRT_ERROR(c.set("train.out_dir", "\"out\"\0x"s),
                                                 TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(nul.find("NUL character at byte 5"), std::string::npos) << nul;
    EXPECT_TRAINRT_ERROR(trainrt::Config::from_file(dir_ + "/x\0.toml"s),
                         TRAINRT_ERR_INVALID_ARGUMENT);

    try {
        c.set("optim.no_such_key", "1");
        FAIL();
    } catch (const std::runtime_error& e) {  // catchable as the standard base
        EXPECT_NE(std::string(e.what()).find("no_such_key"), std::string::npos);
    }
}

TEST_F(CppWrapper, ModelInfo) {
    trainrt::Config c = config();
    const trainrt::ModelInfo info = trainrt::model_info(c);
    trainrt_model_info raw = TRAINRT_MODEL_INFO_INIT;
    ASSERT_EQ(trainrt_config_model_info(&raw, c.get()), TRAINRT_OK);
    EXPECT_EQ(info.parameters, raw.parameters);
    EXPECT_GT(info.parameters, 0);
    EXPECT_EQ(info.bytes_total, raw.bytes_total);
    EXPECT_EQ(c.model_info().parameters, raw.parameters);
}

// ====================================================================== Session

TEST_F(CppWrapper, SameLossesBitwiseAsTheRawCApi) {
    // Raw C.
    std::vector<trainrt_step_result> expected;
    {
        trainrt_config* c = nullptr;
        ASSERT_EQ(trainrt_config_from_string(&c, kToml, dir_.c_str()), TRAINRT_OK)
            << last_error();
        trainrt_session* s = nullptr;
        ASSERT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
        trainrt_config_destroy(c);
        for (int i = 0; i < 5; ++i) {
            trainrt_step_result r = TRAINRT_STEP_RESULT_INIT;
            ASSERT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << last_error();
            expected.push_back(r);
        }
        trainrt_session_destroy(s);
    }
    trainrt::Session s = session();
    for (int i = 0; i < 5; ++i) {
        const trainrt::StepResult r = s.step();
        EXPECT_EQ(r.step, expected[i].step);
        EXPECT_EQ(r.tokens_total, expected[i].tokens_total);
        EXPECT_TRUE(same_bits(r.loss, expected[i].loss)) << r.loss << " vs " << expected[i].loss;
        EXPECT_TRUE(same_bits(r.grad_norm, expected[i].grad_norm));
        EXPECT_TRUE(same_bits(r.lr, expected[i].lr));
    }
}

TEST_F(CppWrapper, StepTokensSyncEvalForwardMetrics) {
    trainrt::Session s = session();
    const std::vector<int32_t> batch = rows_of(kB);
    const trainrt::StepResult a = s.step_tokens(batch);
    EXPECT_EQ(a.step, 1);
    EXPECT_EQ(a.tokens, kB * kT);
    const trainrt::StepResult b = s.step_tokens(batch.data(), batch.size());
    EXPECT_EQ(b.step, 2);
    const trainrt::StepResult synced = s.sync();
    EXPECT_EQ(synced.step, 2);
    EXPECT_TRUE(same_bits(synced.loss, b.loss));

    // Masked: all ones is step_tokens (the same weights: a second session follows s).
    {
        trainrt::Session masked = session();
        const std::vector<uint8_t> ones(static_cast<size_t>(kB) * kT, 1);
        EXPECT_TRUE(same_bits(masked.step_masked(batch, ones).loss, a.loss));
        EXPECT_TRUE(same_bits(masked.step_masked(batch, {}).loss, b.loss));
        EXPECT_TRAINRT_ERROR(masked.step_masked(batch, std::vector<uint8_t>(ones.size(), 0)),
                             TRAINRT_ERR_INVALID_ARGUMENT);
        EXPECT_TRAINRT_ERROR(masked.step_masked(batch, ones, {0, 1}),
                             TRAINRT_ERR_INVALID_ARGUMENT);
    }

    const double val = s.eval();
    EXPECT_TRUE(std::isfinite(val));
    EXPECT_TRUE(same_bits(val, s.eval()));  // fresh cursor each call

    // Whole evals: of data.val, of host ids, of text (bytes; kV covers the ids used here).
    const trainrt::EvalResult w = s.eval_whole();
    EXPECT_GT(w.tokens, 0);
    EXPECT_TRUE(same_bits(w.perplexity, std::exp(w.loss)));
    const trainrt::EvalResult t = s.eval_tokens(batch);
    EXPECT_EQ(t.tokens, static_cast<int64_t>(batch.size()) - 1);
    const std::string text = "\x01\x02\x03\x01\x02";
    const trainrt::EvalResult x = s.eval_text(text);
    const trainrt::EvalResult y = s.eval_tokens(std::vector<int32_t>{1, 2, 3, 1, 2});
    EXPECT_EQ(x.tokens, 4);
    EXPECT_TRUE(same_bits(x.loss, y.loss));
    EXPECT_TRAINRT_ERROR(s.eval_tokens(std::vector<int32_t>{1}), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(s.eval_text("ab", std::string("t\0k", 3)), TRAINRT_ERR_INVALID_ARGUMENT);

    const double loss = s.forward(batch, kB, kT);
    std::vector<float> logits;
    const double loss2 = s.forward(batch, kB, kT, logits);
    EXPECT_TRUE(same_bits(loss, loss2));
    ASSERT_EQ(logits.size(), static_cast<size_t>(kB * kT * kV));
    std::vector<float> raw(logits.size());
    EXPECT_TRUE(same_bits(s.forward(batch.data(), kB, kT, raw.data(), raw.size()), loss));
    EXPECT_EQ(std::memcmp(raw.data(), logits.data(), raw.size() * sizeof(float)), 0);

    const trainrt::Metrics m = s.metrics();
    EXPECT_EQ(m.struct_size, sizeof(trainrt_metrics));
    EXPECT_EQ(m.step, 2);
    EXPECT_EQ(m.tokens_total, 2 * kB * kT);
    EXPECT_TRUE(same_bits(m.last_loss, b.loss));
    EXPECT_TRUE(same_bits(m.last_val_loss, w.loss)) << "the last eval of data.val: the whole one";

    const std::string dump = s.config_dump();
    EXPECT_NE(dump.find("seq_len = 8"), std::string::npos) << dump;
}

TEST_F(CppWrapper, SessionErrorsCarryStatusAndMessage) {
    trainrt::Session s = session();
    const std::vector<int32_t> short_batch(5, 1);
    const std::string m1 =
        EXPECT_TRAINRT_ERROR(s.step_tokens(short_batch), TRAINRT_ERR_INVALID_ARGUMENT);
    // The wrapper hands over exactly the library's text: the raw call fails the same way.
    ASSERT_EQ(trainrt_session_step_tokens(nullptr, s.get(), short_batch.data(), 5),
              TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(m1, std::string(trainrt_last_error_message()));
    EXPECT_TRAINRT_ERROR(s.forward(rows_of(1), 1, 100), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(s.load(dir_ + "/nothing_here"), TRAINRT_ERR_IO);
    EXPECT_TRAINRT_ERROR(s.sample({}, 4), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(s.save(), TRAINRT_ERR_CONFIG);  // no out_dir
    fs::create_directories(dir_ + "/exists");
    EXPECT_TRAINRT_ERROR(s.save(dir_ + "/exists"), TRAINRT_ERR_IO);
    // Still usable after every failure.
    EXPECT_EQ(s.step().step, 1);

    trainrt::Config no_val = config();
    no_val.set("data.val", "\"\"");
    trainrt::Session nv(no_val);
    EXPECT_TRAINRT_ERROR(nv.eval(), TRAINRT_ERR_CONFIG);

    trainrt::Config missing = config();
    missing.set("data.train", "\"absent.bin\"");
    EXPECT_TRAINRT_ERROR(trainrt::Session{missing}, TRAINRT_ERR_IO);
}

TEST_F(CppWrapper, SaveLoadExportLatestAndConfigFromCheckpoint) {
    trainrt::Config c = config();
    c.set("train.out_dir", "\"" + dir_ + "/out\"");
    trainrt::Session s(c);
    EXPECT_EQ(trainrt::checkpoint_latest(dir_ + "/out"), "");
    s.step();
    s.step();
    const std::string written = s.save();
    EXPECT_TRUE(fs::is_directory(written)) << written;
    EXPECT_EQ(fs::path(written).filename().string(), "step_00000002");
    EXPECT_EQ(fs::path(trainrt::checkpoint_latest(dir_ + "/out")), fs::path(written));
    const std::string explicit_dir = s.save(dir_ + "/ckpt");
    EXPECT_EQ(fs::path(explicit_dir), fs::path(dir_ + "/ckpt"));

    const trainrt::StepResult next = s.step();

    trainrt::Config from_ckpt = trainrt::config_from_checkpoint(dir_ + "/ckpt");
    EXPECT_EQ(from_ckpt.get_int("train.batch_size"), kB);
    trainrt::Session resumed(config());
    resumed.load(dir_ + "/out");  // through `latest`
    const trainrt::StepResult again = resumed.step();
    EXPECT_EQ(again.step, next.step);
    EXPECT_TRUE(same_bits(again.loss, next.loss));

    s.export_hf(dir_ + "/hf");
    EXPECT_TRUE(fs::exists(dir_ + "/hf/model.safetensors"));
    EXPECT_TRUE(fs::exists(dir_ + "/hf/config.json"));
    trainrt::checkpoint_export(dir_ + "/ckpt", dir_ + "/hf16", trainrt::Dtype::BF16);
    EXPECT_TRUE(fs::exists(dir_ + "/hf16/model.safetensors"));
    EXPECT_LT(fs::file_size(dir_ + "/hf16/model.safetensors"),
              fs::file_size(dir_ + "/hf/model.safetensors"));
    // No LoRA adapters in this run (the LoRA path itself: capi_lora_test.cpp).
    EXPECT_TRAINRT_ERROR(s.export_adapter(dir_ + "/adapter"), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(trainrt::checkpoint_export_adapter(dir_ + "/ckpt", dir_ + "/adapter"),
                         TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_FALSE(fs::exists(dir_ + "/adapter"));
}

TEST_F(CppWrapper, SampleIsDeterministicAndMatchesTheCApi) {
    trainrt::Session s = session();
    s.step();
    const std::vector<int32_t> prompt = {3, 17, 8};
    trainrt::SampleOptions o;
    o.temperature = 0.8;
    o.top_k = 5;
    o.seed = 42;
    const std::vector<int32_t> a = s.sample(prompt, 12, o);
    ASSERT_EQ(a.size(), 12u);
    for (int32_t id : a) {
        EXPECT_GE(id, 0);
        EXPECT_LT(id, kV);
    }
    EXPECT_EQ(s.sample(prompt, 12, o), a);
    trainrt_sample_options raw;
    trainrt_sample_options_init(&raw);
    raw.temperature = 0.8;
    raw.top_k = 5;
    raw.seed = 42;
    std::vector<int32_t> c(12);
    ASSERT_EQ(trainrt_session_sample(c.data(), c.size(), s.get(), prompt.data(), prompt.size(),
                                     12, &raw),
              TRAINRT_OK);
    EXPECT_EQ(c, a);
    EXPECT_EQ(s.sample(prompt, 4).size(), 4u);  // default options
}

TEST_F(CppWrapper, GenerateStopsAtAStopIdAndSampleRefusesThem) {
    trainrt::Session s = session();
    s.step();
    const std::vector<int32_t> prompt = {3, 17, 8};
    trainrt::SampleOptions o;
    o.temperature = 0;  // greedy: the first id is known from sample
    const std::vector<int32_t> a = s.sample(prompt, 5, o);
    EXPECT_EQ(s.generate(prompt, 5, o), a);  // no stop ids: max_new ids
    o.stop_ids = {a[0]};
    EXPECT_EQ(s.generate(prompt, 5, o), std::vector<int32_t>{a[0]});
    EXPECT_TRAINRT_ERROR(s.sample(prompt, 5, o), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(s.generate(prompt, 0, o).empty());
}

TEST_F(CppWrapper, ChatTemplateRendersGivesStopIdsAndPreparesChatData) {
    const std::string model = dir_ + "/model";
    write_chat_folder(model);
    const trainrt::ChatTemplate t = trainrt::ChatTemplate::load(model);
    const std::string conv = R"([{"role": "user", "content": "hi"}])";
    EXPECT_EQ(t.render(conv), "<|user|>hi<|eot|>");
    EXPECT_EQ(t.render(conv, true), "<|user|>hi<|eot|><|assistant|>");
    EXPECT_EQ(t.render(conv, false, R"({"unused": 1})"), "<|user|>hi<|eot|>");
    EXPECT_TRAINRT_ERROR(t.render("[1"), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(t.render(conv, false, "[]"), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(trainrt::ChatTemplate::load(model, "nope"),
                         TRAINRT_ERR_INVALID_ARGUMENT);
    const trainrt::Tokenizer tok = trainrt::Tokenizer::load(model);
    EXPECT_EQ(t.stop_ids(tok), std::vector<int32_t>{300});
    std::ofstream(model + "/generation_config.json") << R"({"eos_token_id": [300, 10]})";
    EXPECT_EQ(t.stop_ids(tok), (std::vector<int32_t>{300, 10}));

    const std::string chat = dir_ + "/chat.jsonl";
    std::ofstream(chat) << R"({"prompt": [{"role": "user", "content": "hi"}], )"
                           R"("completion": [{"role": "assistant", "content": "yo"}]})" "\n";
    trainrt::PrepareTextOptions po;
    po.tokenizer = model;
    po.val_fraction = 0;
    po.chat = true;
    const trainrt_prepare_result r = trainrt::prepare_text({chat}, dir_ + "/data", po);
    EXPECT_EQ(r.examples, 1);
    EXPECT_EQ(r.train_tokens, 27);
    EXPECT_EQ(r.target_tokens, 3);  // the completion: y, o, <|eot|>
    EXPECT_TRUE(fs::exists(dir_ + "/data/mask_train.bin"));
    po.loss_mask = trainrt::LossMask::All;
    EXPECT_EQ(trainrt::prepare_text({chat}, dir_ + "/data", po).target_tokens, 26);
    po.shard_tokens = 100;
    EXPECT_TRAINRT_ERROR(trainrt::prepare_text({chat}, dir_ + "/data", po),
                         TRAINRT_ERR_INVALID_ARGUMENT);
}

// ====================================================================== train

TEST_F(CppWrapper, TrainCallsTheProgressCallbackAndCanStopIt) {
    trainrt::Session s = session();
    std::vector<int64_t> steps;
    EXPECT_TRUE(s.train(3, [&](const trainrt::Progress& p) {
        if (p.kind == TRAINRT_PROGRESS_STEP) steps.push_back(p.step);
        return true;
    }));
    EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3}));
    EXPECT_TRUE(s.train(1));  // no callback
    EXPECT_EQ(s.metrics().step, 4);
    // Returning false stops after that step.
    EXPECT_FALSE(s.train(0, [&](const trainrt::Progress& p) { return p.step < 5; }));
    EXPECT_EQ(s.metrics().step, 5);
}

TEST_F(CppWrapper, RequestStopFromAnotherThreadStopsTrain) {
    trainrt::Config c = config();
    c.set("train.steps", "1000");
    trainrt::Session s(c);
    std::mutex m;
    std::condition_variable cv;
    bool first_step = false, stop_requested = false;
    std::thread stopper([&] {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return first_step; });
        s.request_stop();  // the one call safe while another thread drives the session
        stop_requested = true;
        cv.notify_all();
    });
    const bool completed = s.train(0, [&](const trainrt::Progress& p) {
        if (p.kind == TRAINRT_PROGRESS_STEP && p.step == 1) {
            std::unique_lock<std::mutex> lock(m);
            first_step = true;
            cv.notify_all();
            cv.wait(lock, [&] { return stop_requested; });
        }
        return true;  // the callback never asks to stop
    });
    stopper.join();
    EXPECT_FALSE(completed);
    const int64_t done = s.metrics().step;
    EXPECT_GE(done, 1);
    EXPECT_LE(done, 2);
}

TEST_F(CppWrapper, ExceptionInProgressCallbackPropagatesAfterTrainReturned) {
    trainrt::Session s = session();
    int calls = 0;
    try {
        s.train(0, [&](const trainrt::Progress& p) -> bool {
            ++calls;
            if (p.step == 2) throw std::logic_error("boom at step 2");
            return true;
        });
        FAIL() << "train() did not rethrow";
    } catch (const std::logic_error& e) {
        EXPECT_STREQ(e.what(), "boom at step 2");
    }
    EXPECT_EQ(calls, 2);
    // The C call returned normally (stopped after step 2); the session is intact and not busy.
    EXPECT_EQ(s.metrics().step, 2);
    EXPECT_EQ(s.step().step, 3);
    EXPECT_TRUE(s.train(1, [](const trainrt::Progress&) { return true; }));
}

// ====================================================================== logging

TEST_F(CppWrapper, LogCallbacksReceiveLines) {
    std::vector<std::string> config_lines, session_lines;
    trainrt::Config c = trainrt::Config::from_string(kToml, dir_);
    c.set_log([&](trainrt::LogLevel, std::string_view line) { config_lines.emplace_back(line); },
              trainrt::LogLevel::Debug);
    {
        trainrt::Session s(c);  // logs the resolved backend at INFO
        EXPECT_FALSE(config_lines.empty());
        s.set_log(
            [&](trainrt::LogLevel level, std::string_view line) {
                EXPECT_GE(static_cast<int>(level), TRAINRT_LOG_DEBUG);
                session_lines.emplace_back(line);
            },
            trainrt::LogLevel::Debug);
        s.train(2);  // logs each step
        EXPECT_FALSE(session_lines.empty());
        s.set_log({});  // back to the config's sink
    }
    // The default sink: set and reset (lines from a session with no sink of its own).
    std::vector<std::string> default_lines;
    trainrt::set_default_log(
        [&](trainrt::LogLevel, std::string_view line) { default_lines.emplace_back(line); },
        trainrt::LogLevel::Debug);
    {
        trainrt::Session s(trainrt::Config::from_string(kToml, dir_));
        s.train(1);
    }
    trainrt::set_default_log({});
    EXPECT_FALSE(default_lines.empty());
}

TEST_F(CppWrapper, ExceptionInLogCallbackPropagatesAfterTheCall) {
    trainrt::Config c = trainrt::Config::from_string(kToml, dir_);
    c.set_log([](trainrt::LogLevel, std::string_view) { throw std::runtime_error("log boom"); },
              trainrt::LogLevel::Debug);
    EXPECT_THROW(trainrt::Session{c}, std::runtime_error);

    trainrt::Session s = session();
    s.set_log([](trainrt::LogLevel, std::string_view) { throw std::out_of_range("log boom 2"); },
              trainrt::LogLevel::Debug);
    EXPECT_THROW(s.train(1), std::out_of_range);
    EXPECT_EQ(s.metrics().step, 1);  // the step completed
    s.set_log({}, trainrt::LogLevel::Error);
    EXPECT_EQ(s.step().step, 2);
}

// ====================================================================== moves

TEST_F(CppWrapper, ParamsAndMetadata) {
    trainrt::Session s = session();
    const auto params = s.params();
    ASSERT_FALSE(params.empty());
    EXPECT_EQ(params.front().name, "wte.weight");
    EXPECT_EQ(params.front().info.role, TRAINRT_PARAM_ROLE_TOKEN_EMBEDDING);
    size_t total = 0;
    for (const auto& p : params) total += static_cast<size_t>(p.info.numel);
    std::vector<float> flat = s.read_params();
    ASSERT_EQ(flat.size(), total);
    std::vector<float> bias = s.read_params("ln_f.bias");
    for (float& x : bias) x = 0.5f;
    s.write_params(bias, "ln_f.bias");
    EXPECT_EQ(s.read_params("ln_f.bias"), bias);
    s.write_params(flat);
    EXPECT_EQ(s.read_params(), flat);
    EXPECT_TRAINRT_ERROR(s.read_params("ln_f.bais"), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(s.write_params({1.0f}, "ln_f.bias"), TRAINRT_ERR_INVALID_ARGUMENT);
    s.set_metadata("round", "3");
    s.set_metadata("client", "a");
    bool found = false;
    EXPECT_EQ(s.metadata("round", &found), "3");
    EXPECT_TRUE(found);
    EXPECT_EQ(s.metadata_keys(), (std::vector<std::string>{"client", "round"}));
    s.erase_metadata("client");
    EXPECT_EQ(s.metadata("client", &found), "");
    EXPECT_FALSE(found);
    EXPECT_TRAINRT_ERROR(s.set_metadata("bad key", "x"), TRAINRT_ERR_INVALID_ARGUMENT);
}

TEST_F(CppWrapper, MovedFromHandlesAreInertAndDestructionIsSafe) {
    trainrt::Session a = session();
    a.step();
    trainrt::Session b(std::move(a));
    EXPECT_FALSE(static_cast<bool>(a));  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(static_cast<bool>(b));
    EXPECT_EQ(b.step().step, 2);
    EXPECT_TRAINRT_ERROR(a.step(), TRAINRT_ERR_INVALID_ARGUMENT);  // NOLINT
    EXPECT_TRAINRT_ERROR(a.metrics(), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(a.request_stop(), TRAINRT_ERR_INVALID_ARGUMENT);

    trainrt::Session c = session();
    c = std::move(b);  // destroys c's own session
    EXPECT_EQ(c.step().step, 3);
    EXPECT_FALSE(static_cast<bool>(b));  // NOLINT
    b = std::move(a);                    // inert into inert
    EXPECT_FALSE(static_cast<bool>(b));

    trainrt::Config x = config();
    trainrt::Config y(std::move(x));
    EXPECT_FALSE(static_cast<bool>(x));  // NOLINT
    EXPECT_TRAINRT_ERROR(x.get_int("train.steps"), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(x.set("train.steps", "3"), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRAINRT_ERROR(trainrt::Session{x}, TRAINRT_ERR_INVALID_ARGUMENT);
    x = std::move(y);
    EXPECT_EQ(x.get_int("train.steps"), 6);

    // A session outlives the config (and its log sink) it was made from.
    std::vector<std::string> lines;
    trainrt::Session d = [&] {
        trainrt::Config tmp = config();
        tmp.set_log([&](trainrt::LogLevel, std::string_view l) { lines.emplace_back(l); },
                    trainrt::LogLevel::Debug);
        return trainrt::Session(tmp);
    }();
    lines.clear();
    d.train(1);
    EXPECT_FALSE(lines.empty());

    // release() hands the handle over.
    trainrt::Config r = config();
    trainrt_config* raw = r.release();
    EXPECT_FALSE(static_cast<bool>(r));
    trainrt::Config adopted(raw);
    EXPECT_EQ(adopted.get_int("train.batch_size"), kB);
}

TEST_F(CppWrapper, PrepareBytes) {
    {
        std::ofstream f(dir_ + "/text.txt");
        for (int i = 0; i < 50; ++i) f << "hello trainrt ";
    }
    const trainrt::PreparedTokens t =
        trainrt::prepare_bytes(dir_ + "/text.txt", dir_ + "/shards", 0.1);
    EXPECT_EQ(t.train + t.val, 50 * 14);
    EXPECT_GT(t.val, 0);
    EXPECT_TRUE(fs::exists(dir_ + "/shards/train.bin"));
    EXPECT_TRAINRT_ERROR(trainrt::prepare_bytes(dir_ + "/none.txt", dir_ + "/s2", 0.1),
                         TRAINRT_ERR_IO);
}

}  // namespace

// ---------------------------------------------------------------- tokenizer

namespace {

TEST(CppTokenizer, EncodeDecodeLookupsErrorsAndPrepare) {
    const std::string dir = scratch_dir();
    std::ofstream(dir + "/tokenizer.json") << tiny_tokenizer_json();
    const trainrt::Tokenizer t = trainrt::Tokenizer::load(dir);  // the folder
    EXPECT_EQ(t.encode("hello hello<|eot|>"), (std::vector<int32_t>{259, ' ', 259, 300}));
    const std::string odd("a\0b \xE6\x97\xA5", 7);
    EXPECT_EQ(t.decode(t.encode(odd)), odd);
    EXPECT_EQ(t.vocab_size(), 301);
    EXPECT_EQ(t.token_id("<|eot|>"), 300);
    EXPECT_EQ(t.token_id("nope"), -1);
    try {
        t.encode("ok\xFF");
        ADD_FAILURE() << "invalid UTF-8 accepted";
    } catch (const trainrt::Error& e) {
        EXPECT_EQ(e.status(), TRAINRT_ERR_INVALID_ARGUMENT);
    }
    try {
        trainrt::Tokenizer::load(dir + "/missing.json");
        ADD_FAILURE() << "a missing file loaded";
    } catch (const trainrt::Error& e) {
        EXPECT_EQ(e.status(), TRAINRT_ERR_IO);
    }

    std::ofstream(dir + "/tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    std::ofstream(dir + "/a.txt") << "hello\nhello\n";
    std::ofstream(dir + "/b.txt") << "hello world\n";
    trainrt::PrepareTextOptions o;
    o.tokenizer = dir + "/tokenizer.json";
    o.val_fraction = 0.0;
    const trainrt_prepare_result r =
        trainrt::prepare_text({dir + "/a.txt", dir + "/b.txt"}, dir + "/shards", o);
    EXPECT_EQ(r.documents, 2);
    EXPECT_EQ(r.eos_id, 300);
    EXPECT_TRUE(fs::exists(dir + "/shards/train.bin"));
    o.shard_tokens = 2;  // numbered shards of at most 2 tokens
    const trainrt_prepare_result s =
        trainrt::prepare_text({dir + "/a.txt", dir + "/b.txt"}, dir + "/shards", o);
    EXPECT_EQ(s.train_shards, (r.train_tokens + 1) / 2);
    EXPECT_TRUE(fs::exists(dir + "/shards/train_000000.bin"));
    EXPECT_FALSE(fs::exists(dir + "/shards/train.bin"));

    // A tokenizer trained on those files, then loaded; a second run without overwrite throws.
    trainrt::TrainTokenizerOptions to;
    to.vocab_size = 262;  // 2 special + 256 bytes + 4 merges ("hello" is built 3 times)
    to.min_frequency = 1;
    to.special_tokens = {"<|eot|>", "<|pad|>"};
    const std::string trained = dir + "/trained.json";
    const trainrt_tokenizer_train_result tr =
        trainrt::train_tokenizer({dir + "/a.txt", dir + "/b.txt"}, trained, to);
    EXPECT_EQ(tr.vocab_size, 262);
    EXPECT_EQ(tr.merges, 4);
    const trainrt::Tokenizer trained_tok = trainrt::Tokenizer::load(trained);
    EXPECT_EQ(trained_tok.vocab_size(), 262);
    EXPECT_EQ(trained_tok.encode("hello").size(), 1u);
    EXPECT_EQ(trained_tok.token_id("<|pad|>"), 1);
    EXPECT_THROW(trainrt::train_tokenizer({dir + "/a.txt"}, trained, to), trainrt::Error);
}

}  // namespace
