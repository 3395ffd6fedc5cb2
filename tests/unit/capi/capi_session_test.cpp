// C API tests of trainrt_session_*: create, step, step_tokens, sync, eval, forward, train,
// request_stop, metrics, config dump, logging, concurrency and determinism. A tiny GPT-2
// (V 32, T_max 16, L1 H2 C16; B 2, T 8, one thread) on small shards written here.
// Written against include/trainrt/trainrt.h only.
#include <trainrt/trainrt.h>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <algorithm>

#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr int kV = 32;  // model.vocab_size
constexpr int kB = 2;   // train.batch_size
constexpr int kT = 8;   // train.seq_len
constexpr double kLr = 0.01;

// The base config of every session here; tests vary it with trainrt_config_set.
const char* const kBaseToml = kTinyGpt2Toml;

using Sets = std::vector<std::pair<std::string, std::string>>;

// A period-8 sequence: each id determines the next, so a model can learn it quickly.
const int32_t kPattern[8] = {3, 17, 8, 25, 1, 30, 12, 6};

// step_tokens input: grad_accum micro-batches of kB rows of kT + 1 ids from the pattern.
std::vector<int32_t> pattern_batch(int grad_accum = 1) {
    std::vector<int32_t> out;
    for (int k = 0; k < grad_accum; ++k)
        for (int b = 0; b < kB; ++b)
            for (int t = 0; t <= kT; ++t) out.push_back(kPattern[(3 * b + k + t) % 8]);
    return out;
}

// Rows of (kT + 1) ids as the sequential sampler takes them (FORMATS.md §1): window
// tokens[start, start + B*T + 1), row b = tokens[start + b*T, start + b*T + T].
std::vector<int32_t> window_rows(const std::vector<uint16_t>& tokens, size_t start, int rows,
                                 int T) {
    std::vector<int32_t> out;
    for (int b = 0; b < rows; ++b)
        for (int t = 0; t <= T; ++t) out.push_back(tokens[start + static_cast<size_t>(b) * T + t]);
    return out;
}

trainrt_step_result new_result() {
    trainrt_step_result r;
    trainrt_step_result_init(&r);
    return r;
}

// A result pre-filled with values no call writes, to see that a failed call left it alone.
trainrt_step_result sentinel_result() {
    trainrt_step_result r = new_result();
    r.step = -4242;
    r.loss = -1.5;
    r.tokens_total = -7;
    return r;
}

void expect_sentinel(const trainrt_step_result& r) {
    EXPECT_EQ(r.struct_size, sizeof(trainrt_step_result));
    EXPECT_EQ(r.step, -4242);
    EXPECT_EQ(r.loss, -1.5);
    EXPECT_EQ(r.tokens_total, -7);
}

trainrt_metrics metrics_of(trainrt_session* s) {
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    EXPECT_EQ(trainrt_session_metrics(&m, s), TRAINRT_OK) << last_error();
    return m;
}

std::string session_dump(trainrt_session* s) {
    size_t needed = 0;
    EXPECT_EQ(trainrt_session_config_dump(nullptr, 0, &needed, s), TRAINRT_OK) << last_error();
    std::string text(needed + 1, '\0');
    EXPECT_EQ(trainrt_session_config_dump(&text[0], text.size(), &needed, s), TRAINRT_OK);
    text.resize(needed);
    return text;
}

std::string config_dump(const trainrt_config* c) {
    size_t needed = 0;
    EXPECT_EQ(trainrt_config_dump(nullptr, 0, &needed, c), TRAINRT_OK) << last_error();
    std::string text(needed + 1, '\0');
    EXPECT_EQ(trainrt_config_dump(&text[0], text.size(), &needed, c), TRAINRT_OK);
    text.resize(needed);
    return text;
}

// Mean cross-entropy, in double, of `logits` ([n, V]) against targets.
double mean_cross_entropy(const float* logits, const std::vector<int32_t>& targets, int V) {
    double sum = 0;
    for (size_t i = 0; i < targets.size(); ++i) {
        const float* row = logits + i * V;
        double mx = row[0];
        for (int v = 1; v < V; ++v) mx = std::max(mx, static_cast<double>(row[v]));
        double z = 0;
        for (int v = 0; v < V; ++v) z += std::exp(static_cast<double>(row[v]) - mx);
        sum += mx + std::log(z) - static_cast<double>(row[targets[i]]);
    }
    return sum / static_cast<double>(targets.size());
}

// Targets of rows of (T + 1) ids: each row's last T ids.
std::vector<int32_t> targets_of(const std::vector<int32_t>& rows, int n_rows, int T) {
    std::vector<int32_t> out;
    for (int b = 0; b < n_rows; ++b)
        for (int t = 1; t <= T; ++t) out.push_back(rows[static_cast<size_t>(b) * (T + 1) + t]);
    return out;
}

// ---------------------------------------------------------------- log and progress capture

struct LogCapture {
    std::mutex m;
    std::vector<std::pair<int32_t, std::string>> lines;

    static void fn(int32_t level, const char* message, void* payload) {
        auto* self = static_cast<LogCapture*>(payload);
        std::lock_guard<std::mutex> lock(self->m);
        self->lines.emplace_back(level, message ? message : "<NULL message>");
    }
    size_t size() {
        std::lock_guard<std::mutex> lock(m);
        return lines.size();
    }
    bool has_prefix(const std::string& prefix) {
        std::lock_guard<std::mutex> lock(m);
        for (const auto& l : lines)
            if (l.second.rfind(prefix, 0) == 0) return true;
        return false;
    }
    std::string all() {
        std::lock_guard<std::mutex> lock(m);
        std::string s;
        for (const auto& l : lines) s += std::to_string(l.first) + ": " + l.second + "\n";
        return s;
    }
};

// Restores the built-in default log sink when the test ends, however it ends.
struct DefaultLogGuard {
    ~DefaultLogGuard() { trainrt_log_set_default(nullptr, nullptr, TRAINRT_LOG_WARN); }
};

struct ProgressLog {
    std::vector<trainrt_progress> events;
    int stop_after_calls = -1;  // return non-zero from this call on (1-based); -1 never

    static int32_t fn(const trainrt_progress* p, void* payload) {
        auto* self = static_cast<ProgressLog*>(payload);
        self->events.push_back(*p);
        return self->stop_after_calls > 0 &&
                       static_cast<int>(self->events.size()) >= self->stop_after_calls
                   ? 1
                   : 0;
    }
    std::vector<int64_t> steps(int32_t kind) const {
        std::vector<int64_t> out;
        for (const auto& e : events)
            if (e.kind == kind) out.push_back(e.step);
        return out;
    }
};

// ---------------------------------------------------------------- metrics.jsonl

std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream f(path);
    std::vector<std::string> out;
    std::string line;
    while (std::getline(f, line))
        if (!line.empty()) out.push_back(line);
    return out;
}

bool json_has(const std::string& line, const std::string& key) {
    return line.find("\"" + key + "\":") != std::string::npos;
}

double json_number(const std::string& line, const std::string& key) {
    const size_t at = line.find("\"" + key + "\":");
    if (at == std::string::npos) return std::nan("");
    const char* p = line.c_str() + at + key.size() + 3;
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    return end == p ? std::nan("") : v;
}

std::string json_string(const std::string& line, const std::string& key) {
    const size_t at = line.find("\"" + key + "\":");
    if (at == std::string::npos) return "<missing>";
    const size_t q1 = line.find('"', at + key.size() + 3);
    const size_t q2 = q1 == std::string::npos ? q1 : line.find('"', q1 + 1);
    if (q2 == std::string::npos) return "<bad>";
    return line.substr(q1 + 1, q2 - q1 - 1);
}

// ---------------------------------------------------------------- fixture

class CapiSession : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_dir();
        train_tokens_ = lcg_tokens(4096, 1, kV);
        val_tokens_ = lcg_tokens(512, 2, kV);
        write_shard(dir_ + "/train.bin", train_tokens_);
        write_shard(dir_ + "/val.bin", val_tokens_);
    }
    void TearDown() override {
        for (trainrt_session* s : sessions_) trainrt_session_destroy(s);
        for (trainrt_config* c : configs_) trainrt_config_destroy(c);
    }

    // The base config plus `sets`, owned by the fixture; NULL (and a failure) on error.
    trainrt_config* make_config(const Sets& sets = {}) {
        trainrt_config* c = nullptr;
        if (trainrt_config_from_string(&c, kBaseToml, dir_.c_str()) != TRAINRT_OK) {
            ADD_FAILURE() << "base config: " << last_error();
            return nullptr;
        }
        configs_.push_back(c);
        for (const auto& kv : sets) {
            if (trainrt_config_set(c, kv.first.c_str(), kv.second.c_str()) != TRAINRT_OK) {
                ADD_FAILURE() << "set " << kv.first << " = " << kv.second << ": " << last_error();
                return nullptr;
            }
        }
        return c;
    }

    trainrt_session* make_session(const Sets& sets = {}) {
        trainrt_config* c = make_config(sets);
        if (c == nullptr) return nullptr;
        return make_session_from(c);
    }

    trainrt_session* make_session_from(const trainrt_config* c) {
        trainrt_session* s = nullptr;
        if (trainrt_session_create(&s, c) != TRAINRT_OK) {
            ADD_FAILURE() << "session_create: " << last_error();
            return nullptr;
        }
        sessions_.push_back(s);
        return s;
    }

    // session_create's status for the base config plus `sets`; the out pointer must stay
    // untouched on failure.
    trainrt_status create_status(const Sets& sets) {
        trainrt_config* c = make_config(sets);
        if (c == nullptr) return TRAINRT_ERR_INTERNAL;
        trainrt_session* const sentinel = reinterpret_cast<trainrt_session*>(uintptr_t{0x51});
        trainrt_session* s = sentinel;
        const trainrt_status st = trainrt_session_create(&s, c);
        if (st == TRAINRT_OK)
            sessions_.push_back(s);
        else
            EXPECT_EQ(s, sentinel) << "out written by a failed create";
        return st;
    }

    std::string dir_;
    std::vector<uint16_t> train_tokens_, val_tokens_;
    std::vector<trainrt_config*> configs_;
    std::vector<trainrt_session*> sessions_;
};

}  // namespace

// ====================================================================== create / destroy

TEST_F(CapiSession, CreateAndDestroy) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    trainrt_session* s = nullptr;
    ASSERT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
    ASSERT_NE(s, nullptr);
    trainrt_session_destroy(s);
    trainrt_session_destroy(nullptr);  // accepted
}

TEST_F(CapiSession, CreateNullArguments) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    trainrt_session* const sentinel = reinterpret_cast<trainrt_session*>(uintptr_t{0x51});
    trainrt_session* s = sentinel;
    EXPECT_NULL_ARG(trainrt_session_create(nullptr, c), "out");
    EXPECT_NULL_ARG(trainrt_session_create(&s, nullptr), "config");
    EXPECT_EQ(s, sentinel);
}

TEST_F(CapiSession, SessionOutlivesItsConfig) {
    trainrt_config* c = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&c, kBaseToml, dir_.c_str()), TRAINRT_OK);
    trainrt_session* s = nullptr;
    ASSERT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
    sessions_.push_back(s);
    trainrt_config_destroy(c);
    trainrt_step_result r = new_result();
    EXPECT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.step, 1);
    EXPECT_NE(session_dump(s).find("vocab_size = 32"), std::string::npos);
}

TEST_F(CapiSession, CudaDeviceIsUnsupportedOnThisBuild) {
    if (trainrt_build_features() & TRAINRT_FEATURE_CUDA_MODULE)
        GTEST_SKIP() << "this build has the CUDA module";
    EXPECT_EQ(create_status({{"runtime.device", "\"cuda\""}}), TRAINRT_ERR_UNSUPPORTED);
    EXPECT_NE(last_error().find("runtime.device"), std::string::npos) << last_error();
}

TEST_F(CapiSession, Tf32IsUnsupportedOnCpu) {
    for (const char* p : {"\"tf32\""}) {
        EXPECT_EQ(create_status({{"runtime.device", "\"cpu\""}, {"runtime.precision", p}}),
                  TRAINRT_ERR_UNSUPPORTED)
            << p;
        EXPECT_NE(last_error().find("runtime.precision"), std::string::npos) << last_error();
    }
    // The accepted ones.
    for (const char* p : {"\"fp32\"", "\"bf16\"", "\"fp16\""})
        EXPECT_EQ(create_status({{"runtime.device", "\"cpu\""}, {"runtime.precision", p}}),
                  TRAINRT_OK)
            << p << ": " << last_error();
    EXPECT_EQ(create_status({{"runtime.precision", "\"auto\""}}), TRAINRT_OK) << last_error();
}

TEST_F(CapiSession, MissingShardIsIoError) {
    EXPECT_EQ(create_status({{"data.train", "\"nope/missing.bin\""}}), TRAINRT_ERR_IO);
    EXPECT_NE(last_error().find("missing.bin"), std::string::npos) << last_error();
    EXPECT_NE(last_error().find("data.train"), std::string::npos) << last_error();
    EXPECT_EQ(create_status({{"data.val", "\"missing_val.bin\""}}), TRAINRT_ERR_IO);
    EXPECT_NE(last_error().find("data.val"), std::string::npos) << last_error();
    EXPECT_EQ(create_status({{"data.train", "\"none_*.bin\""}}), TRAINRT_ERR_IO)
        << "a glob matching nothing";
}

TEST_F(CapiSession, TokenIdAtOrBeyondVocabIsFormatError) {
    std::vector<uint16_t> bad = train_tokens_;
    bad[100] = kV;  // == vocab_size: one past the last valid id
    write_shard(dir_ + "/bad_train.bin", bad);
    EXPECT_EQ(create_status({{"data.train", "\"bad_train.bin\""}}), TRAINRT_ERR_FORMAT);
    EXPECT_NE(last_error().find("bad_train.bin"), std::string::npos) << last_error();
    EXPECT_NE(last_error().find("vocab"), std::string::npos) << last_error();

    std::vector<uint16_t> bad_val = val_tokens_;
    bad_val.back() = 65535;
    write_shard(dir_ + "/bad_val.bin", bad_val);
    EXPECT_EQ(create_status({{"data.val", "\"bad_val.bin\""}}), TRAINRT_ERR_FORMAT);
    EXPECT_NE(last_error().find("bad_val.bin"), std::string::npos) << last_error();
    // The same shard is fine for a model whose vocab covers the id.
    EXPECT_EQ(create_status({{"data.val", "\"bad_val.bin\""}, {"model.vocab_size", "65536"}}),
              TRAINRT_OK)
        << last_error();
}

TEST_F(CapiSession, MalformedShardsAreFormatErrors) {
    write_shard(dir_ + "/magic.bin", train_tokens_, 12345, 1);
    EXPECT_EQ(create_status({{"data.train", "\"magic.bin\""}}), TRAINRT_ERR_FORMAT);
    EXPECT_NE(last_error().find("magic.bin"), std::string::npos) << last_error();
    write_shard(dir_ + "/version.bin", train_tokens_, 20240520, 3);
    EXPECT_EQ(create_status({{"data.train", "\"version.bin\""}}), TRAINRT_ERR_FORMAT);
    write_shard(dir_ + "/truncated.bin", train_tokens_, 20240520, 1,
                static_cast<int64_t>(train_tokens_.size()) + 10);
    EXPECT_EQ(create_status({{"data.train", "\"truncated.bin\""}}), TRAINRT_ERR_FORMAT);
    write_shard(dir_ + "/trailing.bin", train_tokens_, 20240520, 1,
                static_cast<int64_t>(train_tokens_.size()) - 10);
    EXPECT_EQ(create_status({{"data.train", "\"trailing.bin\""}}), TRAINRT_ERR_FORMAT);
    {
        std::ofstream f(dir_ + "/tiny.bin", std::ios::binary);
        f << "not a shard";
    }
    EXPECT_EQ(create_status({{"data.val", "\"tiny.bin\""}}), TRAINRT_ERR_FORMAT);
}

TEST_F(CapiSession, ShardTooShortForOneBatchIsConfigError) {
    // Sequential windows (every eval) need B*T + 1 = 17 tokens; the random sampler T + 1 = 9.
    write_shard(dir_ + "/short_val.bin", lcg_tokens(16, 3, kV));
    EXPECT_EQ(create_status({{"data.val", "\"short_val.bin\""}}), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("data.val"), std::string::npos) << last_error();
    write_shard(dir_ + "/short_train.bin", lcg_tokens(8, 4, kV));
    EXPECT_EQ(create_status({{"data.train", "\"short_train.bin\""}}), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("data.train"), std::string::npos) << last_error();
    // Just enough for each.
    write_shard(dir_ + "/ok_val.bin", lcg_tokens(17, 3, kV));
    write_shard(dir_ + "/ok_train.bin", lcg_tokens(9, 4, kV));
    EXPECT_EQ(create_status({{"data.val", "\"ok_val.bin\""}, {"data.train", "\"ok_train.bin\""}}),
              TRAINRT_OK)
        << last_error();
}

TEST_F(CapiSession, DestroyFromAnotherThread) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    trainrt_session* s = nullptr;
    ASSERT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    trainrt_config* c2 = nullptr;
    ASSERT_EQ(trainrt_config_create(&c2), TRAINRT_OK);
    std::thread t([&] {
        trainrt_session_destroy(s);
        trainrt_config_destroy(c2);
    });
    t.join();
    SUCCEED();
}

// ====================================================================== step

TEST_F(CapiSession, StepResultFields) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    for (int i = 1; i <= 3; ++i) {
        trainrt_step_result r = new_result();
        ASSERT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << last_error();
        EXPECT_EQ(r.struct_size, sizeof(trainrt_step_result));
        EXPECT_EQ(r.version, static_cast<uint32_t>(TRAINRT_STEP_RESULT_VERSION));
        EXPECT_EQ(r.step, i);
        EXPECT_EQ(r.tokens, kB * kT);
        EXPECT_EQ(r.tokens_total, i * kB * kT);
        EXPECT_TRUE(std::isfinite(r.loss));
        EXPECT_TRUE(std::isfinite(r.grad_norm));
        EXPECT_GT(r.grad_norm, 0.0);
        EXPECT_EQ(r.lr, kLr) << "constant schedule, no warmup";
        EXPECT_GE(r.ms, 0.0);
        if (i == 1) {
            // Near-uniform predictions of a freshly initialised GPT-2: loss ~ ln V.
            EXPECT_NEAR(r.loss, std::log(static_cast<double>(kV)), 0.3);
        }
    }
}

TEST_F(CapiSession, StepOutMayBeNull) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(trainrt_session_step_tokens(nullptr, s, pattern_batch().data(),
                                          pattern_batch().size()),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(metrics_of(s).step, 2);
}

TEST_F(CapiSession, StepNullSession) {
    trainrt_step_result r = sentinel_result();
    EXPECT_NULL_ARG(trainrt_session_step(&r, nullptr), "session");
    expect_sentinel(r);
}

TEST_F(CapiSession, StepWithoutTrainDataIsConfigError) {
    trainrt_session* s = make_session({{"data.train", "\"\""}});
    ASSERT_NE(s, nullptr);
    trainrt_step_result r = sentinel_result();
    EXPECT_EQ(trainrt_session_step(&r, s), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("data.train"), std::string::npos) << last_error();
    expect_sentinel(r);
    // Host tokens still train.
    const std::vector<int32_t> batch = pattern_batch();
    r = new_result();
    EXPECT_EQ(trainrt_session_step_tokens(&r, s, batch.data(), batch.size()), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(r.step, 1);
}

TEST_F(CapiSession, StepCountsGradAccumTokens) {
    trainrt_session* s = make_session({{"train.grad_accum", "2"}});
    ASSERT_NE(s, nullptr);
    trainrt_step_result r = new_result();
    ASSERT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.tokens, 2 * kB * kT);
    const std::vector<int32_t> batch = pattern_batch(2);
    ASSERT_EQ(batch.size(), static_cast<size_t>(2 * kB * (kT + 1)));
    ASSERT_EQ(trainrt_session_step_tokens(&r, s, batch.data(), batch.size()), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(r.step, 2);
    EXPECT_EQ(r.tokens, 2 * kB * kT);
    EXPECT_EQ(r.tokens_total, 4 * kB * kT);
    // One micro-batch's worth is the wrong count now.
    const std::vector<int32_t> one = pattern_batch(1);
    EXPECT_EQ(trainrt_session_step_tokens(&r, s, one.data(), one.size()),
              TRAINRT_ERR_INVALID_ARGUMENT);
}

TEST_F(CapiSession, GradAccumLossIsTheMeanOverMicroBatches) {
    // Two sessions from one config start from the same weights: one measures each
    // micro-batch with forward, the other trains on both in one step.
    trainrt_session* probe = make_session({{"train.grad_accum", "2"}});
    trainrt_session* s = make_session({{"train.grad_accum", "2"}});
    ASSERT_NE(probe, nullptr);
    ASSERT_NE(s, nullptr);
    std::vector<int32_t> batch = pattern_batch(1);
    const std::vector<int32_t> second = window_rows(val_tokens_, 3, kB, kT);
    batch.insert(batch.end(), second.begin(), second.end());
    double l0 = 0, l1 = 0;
    ASSERT_EQ(trainrt_session_forward(&l0, nullptr, 0, probe, batch.data(), kB, kT), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_forward(&l1, nullptr, 0, probe, batch.data() + kB * (kT + 1), kB,
                                      kT),
              TRAINRT_OK);
    EXPECT_GT(std::fabs(l0 - l1), 1e-4) << "pick micro-batches with different losses";
    trainrt_step_result r = new_result();
    ASSERT_EQ(trainrt_session_step_tokens(&r, s, batch.data(), batch.size()), TRAINRT_OK)
        << last_error();
    EXPECT_NEAR(r.loss, 0.5 * (l0 + l1), 1e-6 * std::fabs(r.loss));
}

TEST_F(CapiSession, SequentialSamplerTakesTheFirstWindowFirst) {
    // FORMATS.md §1: the first micro-batch is tokens[0, B*T + 1) as B rows of T.
    trainrt_session* probe = make_session();
    trainrt_session* s = make_session({{"data.sampler", "\"sequential\""}});
    ASSERT_NE(probe, nullptr);
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> rows = window_rows(train_tokens_, 0, kB, kT);
    double expected = -1;
    ASSERT_EQ(trainrt_session_forward(&expected, nullptr, 0, probe, rows.data(), kB, kT),
              TRAINRT_OK)
        << last_error();
    trainrt_step_result r = new_result();
    ASSERT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << last_error();
    EXPECT_NEAR(r.loss, expected, 1e-6 * std::fabs(expected))
        << "the step's loss is the loss of its batch before the update";
}

TEST_F(CapiSession, LearningRateFollowsTheSchedule) {
    // docs/CONFIG.md: linear warmup from 0 to lr over warmup_steps, then decay (cosine or
    // linear) from lr to min_lr at train.steps, or constant lr.
    const double lr = 0.01, min_lr = 0.001;
    const int64_t steps = 10, warmup = 2;
    for (const char* schedule : {"cosine", "linear", "constant"}) {
        SCOPED_TRACE(schedule);
        trainrt_session* s = make_session({{"optim.schedule", std::string("\"") + schedule + "\""},
                                           {"optim.lr", "0.01"},
                                           {"optim.min_lr", "0.001"},
                                           {"optim.warmup_steps", "2"},
                                           {"train.steps", "10"}});
        ASSERT_NE(s, nullptr);
        const std::vector<int32_t> batch = pattern_batch();
        for (int64_t k = 1; k <= steps; ++k) {
            trainrt_step_result r = new_result();
            ASSERT_EQ(trainrt_session_step_tokens(&r, s, batch.data(), batch.size()), TRAINRT_OK);
            double want;
            if (k <= warmup) {
                want = lr * static_cast<double>(k) / static_cast<double>(warmup);
            } else {
                const double progress =
                    static_cast<double>(k - warmup) / static_cast<double>(steps - warmup);
                if (std::strcmp(schedule, "cosine") == 0)
                    want = min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * progress));
                else if (std::strcmp(schedule, "linear") == 0)
                    want = lr - (lr - min_lr) * progress;
                else
                    want = lr;
            }
            EXPECT_NEAR(r.lr, want, 1e-12) << "step " << k;
        }
    }
}

TEST_F(CapiSession, LossDecreasesOnARepetitiveSequence) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> batch = pattern_batch();
    std::vector<double> losses;
    for (int i = 0; i < 30; ++i) {
        trainrt_step_result r = new_result();
        ASSERT_EQ(trainrt_session_step_tokens(&r, s, batch.data(), batch.size()), TRAINRT_OK)
            << last_error();
        ASSERT_TRUE(std::isfinite(r.loss)) << "step " << r.step;
        losses.push_back(r.loss);
    }
    EXPECT_NEAR(losses.front(), std::log(static_cast<double>(kV)), 0.3);
    EXPECT_LT(losses.back(), 0.5 * losses.front())
        << "first " << losses.front() << ", last " << losses.back();
    // The last 10 steps average below the first 10.
    double first = 0, last = 0;
    for (int i = 0; i < 10; ++i) {
        first += losses[i];
        last += losses[20 + i];
    }
    EXPECT_LT(last, first);
}

// ====================================================================== step_tokens

TEST_F(CapiSession, StepTokensRejectsBadInputAndStaysUsable) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> good = pattern_batch();
    const size_t n = good.size();  // 2 x 9 = 18
    ASSERT_EQ(n, 18u);
    trainrt_step_result r = sentinel_result();

    for (const size_t wrong : {n - 1, n + 1, size_t{0}}) {
        EXPECT_EQ(trainrt_session_step_tokens(&r, s, good.data(), wrong),
                  TRAINRT_ERR_INVALID_ARGUMENT)
            << wrong;
        EXPECT_NE(last_error().find("18"), std::string::npos)
            << "the expected count in: " << last_error();
    }
    std::vector<int32_t> neg = good;
    neg[5] = -1;
    EXPECT_EQ(trainrt_session_step_tokens(&r, s, neg.data(), n), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(names(last_error(), "5")) << "index 5 in: " << last_error();
    EXPECT_NE(last_error().find("-1"), std::string::npos) << last_error();

    std::vector<int32_t> big = good;
    big[13] = kV;
    EXPECT_EQ(trainrt_session_step_tokens(&r, s, big.data(), n), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(names(last_error(), "13")) << "index 13 in: " << last_error();
    EXPECT_TRUE(names(last_error(), "32")) << last_error();

    big[13] = 1 << 30;
    EXPECT_EQ(trainrt_session_step_tokens(&r, s, big.data(), n), TRAINRT_ERR_INVALID_ARGUMENT);

    EXPECT_NULL_ARG(trainrt_session_step_tokens(&r, s, nullptr, n), "tokens");
    EXPECT_NULL_ARG(trainrt_session_step_tokens(&r, nullptr, good.data(), n), "session");
    expect_sentinel(r);

    // Nothing above counted as a step; the session trains normally afterwards.
    EXPECT_EQ(metrics_of(s).step, 0);
    r = new_result();
    ASSERT_EQ(trainrt_session_step_tokens(&r, s, good.data(), n), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.step, 1);
    EXPECT_EQ(r.tokens_total, kB * kT);
    ASSERT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.step, 2);
}

// ====================================================================== step_masked

namespace {

std::vector<float> params_of(trainrt_session* s) {
    int64_t tensors = 0, numel = 0;
    EXPECT_EQ(trainrt_session_param_count(&tensors, &numel, s), TRAINRT_OK) << last_error();
    std::vector<float> p(static_cast<size_t>(numel));
    EXPECT_EQ(trainrt_session_read_params(p.data(), p.size(), s, nullptr), TRAINRT_OK)
        << last_error();
    return p;
}

}  // namespace

// A mask of all ones (and a NULL mask) is step_tokens bit for bit, over grad accumulation.
TEST_F(CapiSession, StepMaskedOfAllOnesIsStepTokensBitForBit) {
    trainrt_session* a = make_session({{"train.grad_accum", "2"}});
    trainrt_session* b = make_session({{"train.grad_accum", "2"}});
    trainrt_session* c = make_session({{"train.grad_accum", "2"}});
    ASSERT_TRUE(a && b && c);
    const std::vector<int32_t> batch = pattern_batch(2);
    const std::vector<uint8_t> ones(2 * kB * kT, 1);
    for (int step = 1; step <= 3; ++step) {
        trainrt_step_result ra = new_result(), rb = new_result(), rc = new_result();
        ASSERT_EQ(trainrt_session_step_tokens(&ra, a, batch.data(), batch.size()), TRAINRT_OK);
        ASSERT_EQ(trainrt_session_step_masked(&rb, b, batch.data(), batch.size(), ones.data(),
                                              nullptr, ones.size()),
                  TRAINRT_OK)
            << last_error();
        ASSERT_EQ(trainrt_session_step_masked(&rc, c, batch.data(), batch.size(), nullptr,
                                              nullptr, 0),
                  TRAINRT_OK)
            << last_error();
        EXPECT_TRUE(same_bits(ra.loss, rb.loss) && same_bits(ra.loss, rc.loss)) << step;
        EXPECT_TRUE(same_bits(ra.grad_norm, rb.grad_norm)) << step;
        EXPECT_EQ(ra.tokens, rb.tokens);
    }
    const std::vector<float> pa = params_of(a), pb = params_of(b), pc = params_of(c);
    EXPECT_EQ(0, std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(pa.data(), pc.data(), pa.size() * sizeof(float)));
}

// An ignored target's id changes nothing: rows whose last target (an id that is no input) is
// masked train bit for bit alike with another id there. Masking changes the step.
TEST_F(CapiSession, AMaskedTargetsIdChangesNothing) {
    trainrt_session* a = make_session();
    trainrt_session* b = make_session();
    trainrt_session* unmasked = make_session();
    ASSERT_TRUE(a && b && unmasked);
    const std::vector<int32_t> batch = pattern_batch();
    std::vector<int32_t> other = batch;
    std::vector<uint8_t> mask(kB * kT, 1);
    for (int r = 0; r < kB; ++r) {
        mask[static_cast<size_t>(r) * kT + kT - 1] = 0;  // row r's last target ...
        mask[static_cast<size_t>(r) * kT + 2] = 0;       // ... and its third
        int32_t& last = other[static_cast<size_t>(r) * (kT + 1) + kT];
        last = (last + 11) % kV;  // ... is another id here
    }
    double masked_loss = 0, unmasked_loss = 0;
    for (int step = 1; step <= 2; ++step) {
        trainrt_step_result ra = new_result(), rb = new_result(), ru = new_result();
        ASSERT_EQ(trainrt_session_step_masked(&ra, a, batch.data(), batch.size(), mask.data(),
                                              nullptr, mask.size()),
                  TRAINRT_OK)
            << last_error();
        ASSERT_EQ(trainrt_session_step_masked(&rb, b, other.data(), other.size(), mask.data(),
                                              nullptr, mask.size()),
                  TRAINRT_OK)
            << last_error();
        ASSERT_EQ(trainrt_session_step_tokens(&ru, unmasked, batch.data(), batch.size()),
                  TRAINRT_OK);
        EXPECT_TRUE(same_bits(ra.loss, rb.loss)) << step;
        EXPECT_TRUE(same_bits(ra.grad_norm, rb.grad_norm)) << step;
        EXPECT_EQ(ra.tokens, kB * kT);  // processed, counted or not
        masked_loss = ra.loss;
        unmasked_loss = ru.loss;
    }
    EXPECT_NE(masked_loss, unmasked_loss);
    const std::vector<float> pa = params_of(a), pb = params_of(b);
    EXPECT_EQ(0, std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)));
}

// ====================================================================== struct_size

TEST_F(CapiSession, StepResultFromAnOldHostIsFilledOnlyUpToItsSize) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    // An old host whose trainrt_step_result ended after `loss`.
    const uint32_t old_size = static_cast<uint32_t>(offsetof(trainrt_step_result, lr));
    alignas(8) unsigned char buf[256];
    std::memset(buf, 0xA5, sizeof buf);
    trainrt_step_result head;
    head.struct_size = old_size;
    head.version = 0;
    std::memcpy(buf, &head, 8);
    ASSERT_EQ(trainrt_session_step(reinterpret_cast<trainrt_step_result*>(buf), s), TRAINRT_OK)
        << last_error();
    uint32_t size_after, version_after;
    int64_t step_after;
    double loss_after;
    std::memcpy(&size_after, buf + offsetof(trainrt_step_result, struct_size), 4);
    std::memcpy(&version_after, buf + offsetof(trainrt_step_result, version), 4);
    std::memcpy(&step_after, buf + offsetof(trainrt_step_result, step), 8);
    std::memcpy(&loss_after, buf + offsetof(trainrt_step_result, loss), 8);
    EXPECT_EQ(size_after, old_size) << "struct_size is the caller's";
    EXPECT_EQ(version_after, static_cast<uint32_t>(TRAINRT_STEP_RESULT_VERSION));
    EXPECT_EQ(step_after, 1);
    EXPECT_TRUE(std::isfinite(loss_after));
    for (size_t i = old_size; i < sizeof buf; ++i)
        ASSERT_EQ(buf[i], 0xA5) << "byte " << i << " written past struct_size " << old_size;

    // Only the header: nothing but struct_size/version.
    std::memset(buf, 0xA5, sizeof buf);
    head.struct_size = 8;
    std::memcpy(buf, &head, 8);
    ASSERT_EQ(trainrt_session_sync(reinterpret_cast<trainrt_step_result*>(buf), s), TRAINRT_OK)
        << last_error();
    for (size_t i = 8; i < sizeof buf; ++i)
        ASSERT_EQ(buf[i], 0xA5) << "byte " << i << " written past struct_size 8";
}

TEST_F(CapiSession, StepResultFromANewerHostKeepsItsExtraBytes) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    alignas(8) unsigned char buf[256];
    std::memset(buf, 0xA5, sizeof buf);
    trainrt_step_result r = new_result();
    r.struct_size = sizeof(trainrt_step_result) + 32;
    std::memcpy(buf, &r, sizeof r);
    ASSERT_EQ(trainrt_session_step(reinterpret_cast<trainrt_step_result*>(buf), s), TRAINRT_OK)
        << last_error();
    trainrt_step_result got;
    std::memcpy(&got, buf, sizeof got);
    EXPECT_EQ(got.step, 1);
    EXPECT_EQ(got.tokens, kB * kT);
    for (size_t i = sizeof(trainrt_step_result); i < sizeof buf; ++i)
        ASSERT_EQ(buf[i], 0xA5) << "byte " << i << " is past what this library knows";
}

TEST_F(CapiSession, TooSmallStructSizeIsInvalidArgumentAndDoesNoWork) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> batch = pattern_batch();
    for (const uint32_t size : {0u, 4u, 7u}) {
        SCOPED_TRACE(size);
        alignas(8) unsigned char buf[128];
        std::memset(buf, 0xA5, sizeof buf);
        std::memcpy(buf, &size, 4);
        unsigned char before[128];
        std::memcpy(before, buf, sizeof buf);
        auto* out = reinterpret_cast<trainrt_step_result*>(buf);
        EXPECT_EQ(trainrt_session_step(out, s), TRAINRT_ERR_INVALID_ARGUMENT);
        EXPECT_NE(last_error().find("struct_size"), std::string::npos) << last_error();
        EXPECT_EQ(trainrt_session_step_tokens(out, s, batch.data(), batch.size()),
                  TRAINRT_ERR_INVALID_ARGUMENT);
        EXPECT_EQ(trainrt_session_sync(out, s), TRAINRT_ERR_INVALID_ARGUMENT);
        EXPECT_EQ(trainrt_session_metrics(reinterpret_cast<trainrt_metrics*>(buf), s),
                  TRAINRT_ERR_INVALID_ARGUMENT);
        EXPECT_NE(last_error().find("struct_size"), std::string::npos) << last_error();
        EXPECT_EQ(std::memcmp(buf, before, sizeof buf), 0) << "output written on failure";
    }
    EXPECT_EQ(metrics_of(s).step, 0) << "a rejected call ran a step";
}

TEST_F(CapiSession, MetricsFromAnOldHostIsFilledOnlyUpToItsSize) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    const uint32_t old_size = static_cast<uint32_t>(offsetof(trainrt_metrics, tokens_per_s));
    alignas(8) unsigned char buf[256];
    std::memset(buf, 0xA5, sizeof buf);
    std::memcpy(buf, &old_size, 4);
    ASSERT_EQ(trainrt_session_metrics(reinterpret_cast<trainrt_metrics*>(buf), s), TRAINRT_OK)
        << last_error();
    int64_t step, tokens_total;
    uint32_t size_after, version;
    std::memcpy(&size_after, buf, 4);
    std::memcpy(&version, buf + 4, 4);
    std::memcpy(&step, buf + offsetof(trainrt_metrics, step), 8);
    std::memcpy(&tokens_total, buf + offsetof(trainrt_metrics, tokens_total), 8);
    EXPECT_EQ(size_after, old_size);
    EXPECT_EQ(version, static_cast<uint32_t>(TRAINRT_METRICS_VERSION));
    EXPECT_EQ(step, 1);
    EXPECT_EQ(tokens_total, kB * kT);
    for (size_t i = old_size; i < sizeof buf; ++i)
        ASSERT_EQ(buf[i], 0xA5) << "byte " << i << " written past struct_size " << old_size;
}

// ====================================================================== sync

TEST_F(CapiSession, SyncReportsTheLastCompletedStep) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    trainrt_step_result r = new_result();
    r.step = 99;
    ASSERT_EQ(trainrt_session_sync(&r, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.step, 0) << "no step completed yet";
    EXPECT_EQ(r.tokens_total, 0);

    const std::vector<int32_t> batch = pattern_batch();
    trainrt_step_result stepped = new_result();
    ASSERT_EQ(trainrt_session_step_tokens(&stepped, s, batch.data(), batch.size()), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_step(&stepped, s), TRAINRT_OK);
    trainrt_step_result synced = new_result();
    ASSERT_EQ(trainrt_session_sync(&synced, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(synced.step, 2);
    EXPECT_EQ(synced.step, stepped.step);
    EXPECT_EQ(synced.loss, stepped.loss);
    EXPECT_EQ(synced.lr, stepped.lr);
    EXPECT_EQ(synced.grad_norm, stepped.grad_norm);
    EXPECT_EQ(synced.tokens, stepped.tokens);
    EXPECT_EQ(synced.tokens_total, stepped.tokens_total);
    EXPECT_EQ(trainrt_session_sync(nullptr, s), TRAINRT_OK) << "out may be NULL";

    trainrt_step_result untouched = sentinel_result();
    EXPECT_NULL_ARG(trainrt_session_sync(&untouched, nullptr), "session");
    expect_sentinel(untouched);
}

// ====================================================================== eval

TEST_F(CapiSession, EvalWithoutValDataIsConfigError) {
    trainrt_session* s = make_session({{"data.val", "\"\""}});
    ASSERT_NE(s, nullptr);
    double loss = -3.25;
    EXPECT_EQ(trainrt_session_eval(&loss, s), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("data.val"), std::string::npos) << last_error();
    EXPECT_EQ(loss, -3.25);
    // Still usable.
    EXPECT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
}

TEST_F(CapiSession, EvalIsDeterministicAndTracksTraining) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    double a = -1, b = -2;
    ASSERT_EQ(trainrt_session_eval(&a, s), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_session_eval(&b, s), TRAINRT_OK);
    EXPECT_TRUE(std::isfinite(a));
    EXPECT_EQ(a, b) << "each eval reads the same windows with the same weights";
    EXPECT_NEAR(a, std::log(static_cast<double>(kV)), 0.3);
    trainrt_metrics m = metrics_of(s);
    EXPECT_EQ(m.last_val_loss, b);
    EXPECT_EQ(m.step, 0) << "eval is not a step";

    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    double c = -3;
    ASSERT_EQ(trainrt_session_eval(&c, s), TRAINRT_OK);
    EXPECT_NE(c, a) << "a step changed the weights, so the val loss";
}

TEST_F(CapiSession, EvalIsTheMeanLossOverSequentialValWindows) {
    // eval_batches = 2: windows val[0, 17) and val[16, 33) (FORMATS.md §1).
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    double w0 = 0, w1 = 0, ev = 0;
    const std::vector<int32_t> r0 = window_rows(val_tokens_, 0, kB, kT);
    const std::vector<int32_t> r1 = window_rows(val_tokens_, kB * kT, kB, kT);
    ASSERT_EQ(trainrt_session_forward(&w0, nullptr, 0, s, r0.data(), kB, kT), TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_forward(&w1, nullptr, 0, s, r1.data(), kB, kT), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_eval(&ev, s), TRAINRT_OK) << last_error();
    EXPECT_NEAR(ev, 0.5 * (w0 + w1), 1e-9 * std::fabs(ev));
}

TEST_F(CapiSession, EvalNullArguments) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    double loss = -3.25;
    EXPECT_NULL_ARG(trainrt_session_eval(nullptr, s), "out_loss");
    EXPECT_NULL_ARG(trainrt_session_eval(&loss, nullptr), "session");
    EXPECT_EQ(loss, -3.25);
}

// ====================================================================== forward

TEST_F(CapiSession, ForwardLossIsTheMeanCrossEntropyOfItsLogits) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    // Train a little so that the logits are far from uniform.
    const std::vector<int32_t> batch = pattern_batch();
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(trainrt_session_step_tokens(nullptr, s, batch.data(), batch.size()), TRAINRT_OK);

    struct Shape {
        int rows, T;
    };
    for (const Shape sh : {Shape{kB, kT}, Shape{1, kT}, Shape{kB, 5}, Shape{1, 1}}) {
        SCOPED_TRACE(testing::Message() << "rows " << sh.rows << " seq_len " << sh.T);
        const std::vector<int32_t> rows = window_rows(val_tokens_, 7, sh.rows, sh.T);
        const size_t n = static_cast<size_t>(sh.rows) * sh.T * kV;
        std::vector<float> logits(n + 16, std::nanf(""));
        double loss = -1;
        ASSERT_EQ(trainrt_session_forward(&loss, logits.data(), n, s, rows.data(), sh.rows, sh.T),
                  TRAINRT_OK)
            << last_error();
        for (size_t i = 0; i < n; ++i) ASSERT_TRUE(std::isfinite(logits[i])) << "logit " << i;
        for (size_t i = n; i < logits.size(); ++i)
            ASSERT_TRUE(std::isnan(logits[i])) << "written past rows*seq_len*V at " << i;
        const double ce = mean_cross_entropy(logits.data(), targets_of(rows, sh.rows, sh.T), kV);
        EXPECT_TRUE(std::isfinite(loss));
        EXPECT_NEAR(loss, ce, 1e-5 * std::fabs(ce)) << "loss vs CE recomputed from the logits";
        // Without a logits buffer the loss is the same.
        double loss2 = -2;
        ASSERT_EQ(trainrt_session_forward(&loss2, nullptr, 0, s, rows.data(), sh.rows, sh.T),
                  TRAINRT_OK);
        EXPECT_EQ(loss2, loss);
    }
}

TEST_F(CapiSession, ForwardDoesNotTrain) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    double ev0 = 0, ev1 = 0, f0 = 0, f1 = 0;
    ASSERT_EQ(trainrt_session_eval(&ev0, s), TRAINRT_OK);
    const std::vector<int32_t> rows = pattern_batch();
    ASSERT_EQ(trainrt_session_forward(&f0, nullptr, 0, s, rows.data(), kB, kT), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_forward(&f1, nullptr, 0, s, rows.data(), kB, kT), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_eval(&ev1, s), TRAINRT_OK);
    EXPECT_EQ(f0, f1);
    EXPECT_EQ(ev0, ev1);
    const trainrt_metrics m = metrics_of(s);
    EXPECT_EQ(m.step, 1);
    EXPECT_EQ(m.tokens_total, kB * kT);
}

TEST_F(CapiSession, ForwardRejectsBadArgumentsAndStaysUsable) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> rows = pattern_batch();
    const size_t n = static_cast<size_t>(kB) * kT * kV;
    std::vector<float> logits(n, 7.0f);
    double loss = -3.25;
    struct Case {
        int64_t rows, T;
        size_t cap;
        const char* mention;
    };
    const Case cases[] = {
        {0, kT, n, "rows"},          {-1, kT, n, "rows"},      {kB + 1, kT, n, "rows"},
        {kB, 0, n, "seq_len"},       {kB, -3, n, "seq_len"},   {kB, kT + 1, n, "seq_len"},
        {kB, kT, n - 1, "logits"},   {kB, kT, 0, "logits"},    {1, 1, kV - 1, "logits"},
    };
    for (const Case& k : cases) {
        EXPECT_EQ(trainrt_session_forward(&loss, logits.data(), k.cap, s, rows.data(), k.rows, k.T),
                  TRAINRT_ERR_INVALID_ARGUMENT)
            << "rows " << k.rows << " seq_len " << k.T << " cap " << k.cap;
        EXPECT_NE(last_error().find(k.mention), std::string::npos) << last_error();
    }
    std::vector<int32_t> bad = rows;
    bad[10] = kV;
    EXPECT_EQ(trainrt_session_forward(&loss, logits.data(), n, s, bad.data(), kB, kT),
              TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(names(last_error(), "10")) << "index 10 in: " << last_error();
    bad[10] = -7;
    EXPECT_EQ(trainrt_session_forward(&loss, logits.data(), n, s, bad.data(), kB, kT),
              TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NULL_ARG(trainrt_session_forward(&loss, logits.data(), n, nullptr, rows.data(), kB, kT),
                    "session");
    EXPECT_NULL_ARG(trainrt_session_forward(&loss, logits.data(), n, s, nullptr, kB, kT),
                    "tokens");
    EXPECT_EQ(loss, -3.25);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(logits[i], 7.0f) << "logits written on failure";

    ASSERT_EQ(trainrt_session_forward(&loss, logits.data(), n, s, rows.data(), kB, kT),
              TRAINRT_OK)
        << last_error();
    EXPECT_TRUE(std::isfinite(loss));
}

TEST_F(CapiSession, ForwardNullOutLossReturnsOnlyLogits) {
    // trainrt.h: forward's out_loss "(may be NULL)" — a host may want the logits alone.
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> rows = pattern_batch();
    std::vector<float> logits(static_cast<size_t>(kB) * kT * kV, 7.0f);
    ASSERT_EQ(trainrt_session_forward(nullptr, logits.data(), logits.size(), s, rows.data(), kB,
                                      kT),
              TRAINRT_OK)
        << last_error();
    std::vector<float> again(logits.size(), 0.0f);
    double loss = 0;
    ASSERT_EQ(trainrt_session_forward(&loss, again.data(), again.size(), s, rows.data(), kB, kT),
              TRAINRT_OK);
    EXPECT_EQ(logits, again) << "the same logits with or without out_loss";
}

// ====================================================================== train

TEST_F(CapiSession, TrainCallsBackAndWritesMetricsJsonl) {
    trainrt_session* s = make_session({{"runtime.log_every", "2"},
                                       {"train.eval_every", "3"},
                                       {"train.out_dir", "\"run/out\""}});
    ASSERT_NE(s, nullptr);
    ProgressLog log;
    ASSERT_EQ(trainrt_session_train(s, 5, ProgressLog::fn, &log), TRAINRT_OK) << last_error();
    EXPECT_EQ(metrics_of(s).step, 5);

    const std::vector<int64_t> step_events = log.steps(TRAINRT_PROGRESS_STEP);
    const std::vector<int64_t> eval_events = log.steps(TRAINRT_PROGRESS_EVAL);
    // STEP every log_every (2, 4); the end of the run (5) may be logged too.
    ASSERT_GE(step_events.size(), 2u);
    EXPECT_EQ(step_events[0], 2);
    EXPECT_EQ(step_events[1], 4);
    for (const int64_t st : step_events) EXPECT_TRUE(st % 2 == 0 || st == 5) << st;
    // EVAL every eval_every (3) and at the end (5).
    EXPECT_EQ(eval_events, (std::vector<int64_t>{3, 5}));

    double last_eval = std::nan("");
    for (const trainrt_progress& p : log.events) {
        SCOPED_TRACE(testing::Message() << "kind " << p.kind << " step " << p.step);
        EXPECT_EQ(p.struct_size, sizeof(trainrt_progress));
        EXPECT_EQ(p.version, static_cast<uint32_t>(TRAINRT_PROGRESS_VERSION));
        EXPECT_EQ(p.steps_total, 1000);
        EXPECT_EQ(p.tokens_total, p.step * kB * kT);
        EXPECT_TRUE(std::isfinite(p.loss));
        EXPECT_EQ(p.lr, kLr);
        EXPECT_TRUE(std::isfinite(p.grad_norm));
        EXPECT_GE(p.elapsed_s, 0.0);
        EXPECT_GE(p.eta_s, 0.0);
        EXPECT_GE(p.tokens_per_s, 0.0);
        if (p.kind == TRAINRT_PROGRESS_EVAL) last_eval = p.loss;
    }
    // The final EVAL is the loss of the final weights.
    double ev = 0;
    ASSERT_EQ(trainrt_session_eval(&ev, s), TRAINRT_OK);
    EXPECT_EQ(ev, last_eval);

    // metrics.jsonl (FORMATS.md §5): one train line per logged step, one val line per eval.
    const std::string path = dir_ + "/run/out/metrics.jsonl";
    ASSERT_TRUE(fs::exists(path)) << path;
    std::vector<int64_t> train_steps, val_steps, run_steps;
    std::vector<double> val_losses;
    for (const std::string& line : read_lines(path)) {
        SCOPED_TRACE(line);
        EXPECT_EQ(line.front(), '{');
        EXPECT_EQ(line.back(), '}');
        const std::string split = json_string(line, "split");
        if (split == "train") {
            for (const char* key : {"step", "loss", "lr", "grad_norm", "tokens", "tokens_total",
                                    "ms", "tok_per_s"})
                EXPECT_TRUE(json_has(line, key)) << key;
            const int64_t st = static_cast<int64_t>(json_number(line, "step"));
            train_steps.push_back(st);
            EXPECT_EQ(json_number(line, "tokens"), kB * kT);
            EXPECT_EQ(json_number(line, "tokens_total"), st * kB * kT);
            EXPECT_NEAR(json_number(line, "lr"), kLr, 1e-9);
            EXPECT_TRUE(std::isfinite(json_number(line, "loss")));
        } else if (split == "val") {
            EXPECT_TRUE(json_has(line, "step"));
            EXPECT_TRUE(json_has(line, "loss"));
            val_steps.push_back(static_cast<int64_t>(json_number(line, "step")));
            val_losses.push_back(json_number(line, "loss"));
        } else if (split == "run") {  // the header a session writes when it opens the log
            for (const char* key : {"step", "time", "version", "acceleration", "model"})
                EXPECT_TRUE(json_has(line, key)) << key;
            EXPECT_EQ(json_string(line, "version"), trainrt_version_string());
            EXPECT_EQ(json_string(line, "acceleration").rfind("device=cpu", 0), 0u);
            EXPECT_EQ(json_string(line, "time").size(), 20u);  // 2025-01-31T12:34:56Z
            // A fresh session's run: a new id, resumed from nothing.
            EXPECT_TRUE(std::regex_match(json_string(line, "run"),
                                         std::regex("[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}")));
            EXPECT_NE(line.find("\"resumed_from\": null"), std::string::npos);
            run_steps.push_back(static_cast<int64_t>(json_number(line, "step")));
        } else {
            ADD_FAILURE() << "unknown split '" << split << "'";
        }
    }
    EXPECT_EQ(run_steps, (std::vector<int64_t>{0}));
    EXPECT_EQ(train_steps, step_events);
    EXPECT_EQ(val_steps, eval_events);
    ASSERT_EQ(val_losses.size(), 2u);
    EXPECT_NEAR(val_losses[1], last_eval, 1e-7 * std::fabs(last_eval));

    // A second run appends.
    ASSERT_EQ(trainrt_session_train(s, 2, nullptr, nullptr), TRAINRT_OK) << last_error();
    EXPECT_EQ(metrics_of(s).step, 7);
    const std::vector<std::string> after = read_lines(path);
    EXPECT_GT(after.size(), train_steps.size() + val_steps.size());
    EXPECT_EQ(json_number(after.back(), "step"), 7);
    // ... without a second run header: a session training in chunks is one run.
    size_t headers = 0;
    for (const std::string& line : after) headers += json_string(line, "split") == "run";
    EXPECT_EQ(headers, 1u);
    // A load starts a run from its checkpoint: the next train() writes a header at its step.
    const std::string ckpt = dir_ + "/chunk_ckpt";
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, ckpt.c_str()), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_load(s, ckpt.c_str()), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_session_train(s, 1, nullptr, nullptr), TRAINRT_OK) << last_error();
    const std::vector<std::string> resumed = read_lines(path);
    ASSERT_GE(resumed.size(), after.size() + 2);
    const std::string& header = resumed[after.size()];
    EXPECT_EQ(json_string(header, "split"), "run");
    EXPECT_EQ(json_number(header, "step"), 7);
    // ... of the same run (the checkpoint carries its id), resumed from its step.
    EXPECT_EQ(json_string(header, "run"), json_string(resumed[0], "run"));
    EXPECT_EQ(json_number(header, "resumed_from"), 7);
}

// A fresh session in an out_dir that has history appends a run of its own (a new id; the
// earlier lines stay, trainrt report keeps them) and says so once; a load continues the run
// of its checkpoint, whichever session wrote it (FORMATS.md §5).
TEST_F(CapiSession, FreshSessionsAppendRunsOfTheirOwnAndLoadsContinueOne) {
    const std::string path = dir_ + "/out/metrics.jsonl";
    const Sets sets = {{"train.out_dir", "\"out\""}, {"train.eval_every", "0"}};
    trainrt_session* first = make_session(sets);
    ASSERT_NE(first, nullptr);
    LogCapture first_log;
    ASSERT_EQ(trainrt_session_set_log(first, LogCapture::fn, &first_log, TRAINRT_LOG_INFO),
              TRAINRT_OK);
    ASSERT_EQ(trainrt_session_train(first, 3, nullptr, nullptr), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, first, nullptr), TRAINRT_OK);
    EXPECT_FALSE(first_log.has_prefix("metrics: appending")) << first_log.all();
    // (It holds the folder's lock until it is destroyed.)
    sessions_.erase(std::find(sessions_.begin(), sessions_.end(), first));
    trainrt_session_destroy(first);
    const std::string run1 = json_string(read_lines(path).front(), "run");

    trainrt_session* second = make_session(sets);
    ASSERT_NE(second, nullptr);
    LogCapture second_log;
    ASSERT_EQ(trainrt_session_set_log(second, LogCapture::fn, &second_log, TRAINRT_LOG_INFO),
              TRAINRT_OK);
    ASSERT_EQ(trainrt_session_train(second, 2, nullptr, nullptr), TRAINRT_OK) << last_error();
    std::vector<std::string> lines = read_lines(path);
    ASSERT_EQ(lines.size(), 4u + 3u);  // nothing of the first run removed
    const std::string run2 = json_string(lines[4], "run");
    EXPECT_EQ(json_string(lines[4], "split"), "run");
    EXPECT_NE(run2, run1);
    EXPECT_NE(lines[4].find("\"resumed_from\": null"), std::string::npos) << lines[4];
    EXPECT_TRUE(second_log.has_prefix("metrics: appending a new run (" + run2 + ") to ")) << second_log.all();
    EXPECT_NE(second_log.all().find("; earlier runs are kept; load a checkpoint to continue one"),
              std::string::npos) << second_log.all();

    // The first run's step-3 checkpoint: the second session goes on with the first run.
    ASSERT_EQ(trainrt_session_load(second, (dir_ + "/out/step_00000003").c_str()), TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_train(second, 1, nullptr, nullptr), TRAINRT_OK) << last_error();
    lines = read_lines(path);
    ASSERT_EQ(lines.size(), 7u + 2u);
    EXPECT_EQ(json_string(lines[7], "run"), run1);
    EXPECT_EQ(json_number(lines[7], "resumed_from"), 3);
    size_t appending = 0;
    for (const auto& [level, message] : second_log.lines)
        appending += message.rfind("metrics: appending", 0) == 0 && level == TRAINRT_LOG_INFO;
    EXPECT_EQ(appending, 1u) << second_log.all();
}

TEST_F(CapiSession, TrainWithoutStepsRunsUpToTrainSteps) {
    trainrt_session* s = make_session({{"train.steps", "4"}, {"train.out_dir", "\"out\""}});
    ASSERT_NE(s, nullptr);
    ProgressLog log;
    ASSERT_EQ(trainrt_session_train(s, 0, ProgressLog::fn, &log), TRAINRT_OK) << last_error();
    EXPECT_EQ(metrics_of(s).step, 4);
    EXPECT_EQ(log.steps(TRAINRT_PROGRESS_STEP), (std::vector<int64_t>{1, 2, 3, 4}));
    // eval_every = 0 and no EVAL: the run header, then a line per step.
    const std::vector<std::string> lines = read_lines(dir_ + "/out/metrics.jsonl");
    ASSERT_EQ(lines.size(), 5u);
    EXPECT_EQ(json_string(lines[0], "split"), "run");
    for (size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(json_string(lines[i], "split"), "train");
    // Already there: nothing more to do (and no run header for it).
    ASSERT_EQ(trainrt_session_train(s, -1, ProgressLog::fn, &log), TRAINRT_OK) << last_error();
    EXPECT_EQ(metrics_of(s).step, 4);
    EXPECT_EQ(log.events.size(), 4u);
    EXPECT_EQ(read_lines(dir_ + "/out/metrics.jsonl").size(), 5u);
}

TEST_F(CapiSession, TrainEvalEveryZeroNeverEvaluates) {
    // docs/CONFIG.md, train.eval_every: "0 disables evals in train()".
    trainrt_session* s = make_session({{"train.eval_every", "0"}});
    ASSERT_NE(s, nullptr);
    ProgressLog log;
    ASSERT_EQ(trainrt_session_train(s, 3, ProgressLog::fn, &log), TRAINRT_OK) << last_error();
    EXPECT_TRUE(log.steps(TRAINRT_PROGRESS_EVAL).empty());
    EXPECT_EQ(log.steps(TRAINRT_PROGRESS_STEP).size(), 3u);
}

TEST_F(CapiSession, TrainCallbackReturningNonZeroStops) {
    trainrt_session* s = make_session({{"runtime.log_every", "2"}});
    ASSERT_NE(s, nullptr);
    ProgressLog log;
    log.stop_after_calls = 1;
    EXPECT_EQ(trainrt_session_train(s, 100, ProgressLog::fn, &log), TRAINRT_STOPPED)
        << last_error();
    EXPECT_EQ(log.events.size(), 1u);
    EXPECT_EQ(metrics_of(s).step, 2) << "stops right after the step it reported";
    // The next train continues from step 3.
    ProgressLog more;
    EXPECT_EQ(trainrt_session_train(s, 4, ProgressLog::fn, &more), TRAINRT_OK) << last_error();
    EXPECT_EQ(more.steps(TRAINRT_PROGRESS_STEP), (std::vector<int64_t>{4, 6}));
    EXPECT_EQ(metrics_of(s).step, 6);
}

TEST_F(CapiSession, TrainErrors) {
    EXPECT_NULL_ARG(trainrt_session_train(nullptr, 1, nullptr, nullptr), "session");
    trainrt_session* s = make_session({{"data.train", "\"\""}});
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(trainrt_session_train(s, 2, nullptr, nullptr), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("data.train"), std::string::npos) << last_error();
    EXPECT_EQ(metrics_of(s).step, 0);
}

TEST_F(CapiSession, TrainOutDirThatIsAFileIsIoError) {
    {
        std::ofstream f(dir_ + "/occupied");
        f << "x";
    }
    trainrt_session* s = make_session({{"train.out_dir", "\"occupied\""}});
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(trainrt_session_train(s, 2, nullptr, nullptr), TRAINRT_ERR_IO);
    EXPECT_NE(last_error().find("occupied"), std::string::npos) << last_error();
}

// ====================================================================== request_stop

namespace {

// Synchronises a train() on a worker thread with the test thread through the callback, so
// that nothing depends on timing.
struct Rendezvous {
    std::mutex m;
    std::condition_variable cv;
    bool in_callback = false;  // the worker is parked inside its first callback
    bool release = false;      // the test thread lets it go on
    std::vector<int64_t> steps;
    int32_t return_value = 0;  // what the first callback returns

    static int32_t fn(const trainrt_progress* p, void* payload) {
        auto* self = static_cast<Rendezvous*>(payload);
        std::unique_lock<std::mutex> lock(self->m);
        self->steps.push_back(p->step);
        if (self->steps.size() == 1) {
            self->in_callback = true;
            self->cv.notify_all();
            self->cv.wait(lock, [&] { return self->release; });
            return self->return_value;
        }
        return 0;
    }
    void wait_in_callback() {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return in_callback; });
    }
    void let_go() {
        std::lock_guard<std::mutex> lock(m);
        release = true;
        cv.notify_all();
    }
};

}  // namespace

TEST_F(CapiSession, RequestStopFromAnotherThreadStopsALongTrain) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    Rendezvous rv;
    trainrt_status status = 12345;
    std::thread worker([&] { status = trainrt_session_train(s, 1000000, Rendezvous::fn, &rv); });
    rv.wait_in_callback();  // step 1 done; train is running
    EXPECT_EQ(trainrt_session_request_stop(s), TRAINRT_OK);
    rv.let_go();
    worker.join();
    EXPECT_EQ(status, TRAINRT_STOPPED) << trainrt_status_string(status);
    EXPECT_EQ(rv.steps, (std::vector<int64_t>{1}));
    EXPECT_EQ(metrics_of(s).step, 1) << "stopped after the step in flight";

    // A later train continues from the next step and is not stopped again.
    ProgressLog log;
    EXPECT_EQ(trainrt_session_train(s, 3, ProgressLog::fn, &log), TRAINRT_OK) << last_error();
    EXPECT_EQ(log.steps(TRAINRT_PROGRESS_STEP), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(metrics_of(s).step, 4);
}

TEST_F(CapiSession, RequestStopBeforeTrainStopsTheNextTrainAtOnce) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(trainrt_session_request_stop(s), TRAINRT_OK);
    ProgressLog log;
    EXPECT_EQ(trainrt_session_train(s, 5, ProgressLog::fn, &log), TRAINRT_STOPPED);
    EXPECT_EQ(metrics_of(s).step, 0);
    EXPECT_TRUE(log.events.empty());
    // The request is used up: the one after runs in full.
    EXPECT_EQ(trainrt_session_train(s, 5, ProgressLog::fn, &log), TRAINRT_OK) << last_error();
    EXPECT_EQ(metrics_of(s).step, 5);
    EXPECT_EQ(log.steps(TRAINRT_PROGRESS_STEP), (std::vector<int64_t>{1, 2, 3, 4, 5}));
}

TEST_F(CapiSession, RequestStopDuringTheLastStepDoesNotStopTheNextTrain) {
    // trainrt.h: a request made while train() runs asks *that* train() to stop; only a
    // request made while no train() runs stops the next one.
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    struct Ctx {
        trainrt_session* s;
        int32_t stop_status = 12345;
    } ctx{s};
    auto stop_cb = [](const trainrt_progress*, void* payload) -> int32_t {
        auto* c = static_cast<Ctx*>(payload);
        c->stop_status = trainrt_session_request_stop(c->s);
        return 0;
    };
    const trainrt_status first = trainrt_session_train(s, 1, stop_cb, &ctx);
    EXPECT_TRUE(first == TRAINRT_OK || first == TRAINRT_STOPPED) << first;
    EXPECT_EQ(ctx.stop_status, TRAINRT_OK);
    EXPECT_EQ(metrics_of(s).step, 1);
    ProgressLog log;
    const trainrt_status second = trainrt_session_train(s, 2, ProgressLog::fn, &log);
    EXPECT_EQ(second, TRAINRT_OK) << last_error();
    EXPECT_EQ(metrics_of(s).step, 3);
}

TEST_F(CapiSession, RequestStopDuringATrainStoppedByItsCallbackDoesNotStopTheNextTrain) {
    // The same rule when the callback ends the run: the request was for that train().
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    struct Ctx {
        trainrt_session* s;
        int32_t stop_status = 12345;
    } ctx{s};
    auto stop_cb = [](const trainrt_progress*, void* payload) -> int32_t {
        auto* c = static_cast<Ctx*>(payload);
        c->stop_status = trainrt_session_request_stop(c->s);
        return 1;
    };
    EXPECT_EQ(trainrt_session_train(s, 10, stop_cb, &ctx), TRAINRT_STOPPED);
    EXPECT_EQ(ctx.stop_status, TRAINRT_OK);
    EXPECT_EQ(metrics_of(s).step, 1);
    ProgressLog log;
    const trainrt_status second = trainrt_session_train(s, 2, ProgressLog::fn, &log);
    EXPECT_EQ(second, TRAINRT_OK) << last_error();
    EXPECT_EQ(log.steps(TRAINRT_PROGRESS_STEP), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(metrics_of(s).step, 3);
}

TEST_F(CapiSession, RequestStopNullSession) {
    EXPECT_NULL_ARG(trainrt_session_request_stop(nullptr), "session");
}

// ====================================================================== metrics

TEST_F(CapiSession, MetricsBeforeAndAfterSteps) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    trainrt_metrics m = metrics_of(s);
    EXPECT_EQ(m.struct_size, sizeof(trainrt_metrics));
    EXPECT_EQ(m.version, static_cast<uint32_t>(TRAINRT_METRICS_VERSION));
    EXPECT_EQ(m.step, 0);
    EXPECT_EQ(m.tokens_total, 0);
    EXPECT_TRUE(std::isnan(m.last_loss)) << m.last_loss;
    EXPECT_TRUE(std::isnan(m.last_val_loss)) << m.last_val_loss;
    EXPECT_GT(m.bytes_in_use, 0) << "the model lives on the backend";

    trainrt_step_result r = new_result();
    for (int i = 0; i < 4; ++i) ASSERT_EQ(trainrt_session_step(&r, s), TRAINRT_OK);
    m = metrics_of(s);
    EXPECT_EQ(m.step, 4);
    EXPECT_EQ(m.tokens_total, 4 * kB * kT);
    EXPECT_EQ(m.last_loss, r.loss);
    EXPECT_TRUE(std::isnan(m.last_val_loss));
    EXPECT_GE(m.step_ms_p50, 0.0);
    EXPECT_LE(m.step_ms_p50, m.step_ms_p95);
    EXPECT_GE(m.tokens_per_s, 0.0);
    EXPECT_GT(m.bytes_in_use, 0);
    double ev = 0;
    ASSERT_EQ(trainrt_session_eval(&ev, s), TRAINRT_OK);
    EXPECT_EQ(metrics_of(s).last_val_loss, ev);
}

TEST_F(CapiSession, MetricsNullArguments) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    m.step = -99;
    EXPECT_NULL_ARG(trainrt_session_metrics(nullptr, s), "out");
    EXPECT_NULL_ARG(trainrt_session_metrics(&m, nullptr), "session");
    EXPECT_EQ(m.step, -99);
}

// ====================================================================== config dump

TEST_F(CapiSession, SessionConfigDumpIsTheConfigItWasCreatedFrom) {
    trainrt_config* c = make_config({{"optim.lr", "0.0025"}});
    ASSERT_NE(c, nullptr);
    trainrt_session* s = make_session_from(c);
    ASSERT_NE(s, nullptr);
    const std::string text = session_dump(s);
    EXPECT_EQ(text, config_dump(c));
    EXPECT_NE(text.find("vocab_size = 32"), std::string::npos) << text;
    EXPECT_NE(text.find("lr = 0.0025"), std::string::npos) << text;
    // The session holds a copy: changing the config afterwards does not change it.
    ASSERT_EQ(trainrt_config_set(c, "optim.lr", "0.5"), TRAINRT_OK);
    EXPECT_EQ(session_dump(s), text);

    // (buf, cap, needed): size query, truncation, exact.
    size_t needed = 0;
    ASSERT_EQ(trainrt_session_config_dump(nullptr, 0, &needed, s), TRAINRT_OK);
    EXPECT_EQ(needed, text.size());
    std::vector<char> buf(text.size() + 8, '#');
    ASSERT_EQ(trainrt_session_config_dump(buf.data(), 6, &needed, s), TRAINRT_OK);
    EXPECT_EQ(std::string(buf.data()), text.substr(0, 5));
    EXPECT_EQ(buf[6], '#');
    EXPECT_EQ(needed, text.size());
    std::fill(buf.begin(), buf.end(), '#');
    ASSERT_EQ(trainrt_session_config_dump(buf.data(), text.size() + 1, &needed, s), TRAINRT_OK);
    EXPECT_EQ(std::string(buf.data()), text);
    EXPECT_EQ(buf[text.size() + 1], '#');

    needed = 31337;
    EXPECT_NULL_ARG(trainrt_session_config_dump(buf.data(), buf.size(), &needed, nullptr),
                    "session");
    EXPECT_NULL_ARG(trainrt_session_config_dump(nullptr, 4, &needed, s), "buf");
    EXPECT_EQ(needed, 31337u);
}

// ====================================================================== logging

TEST_F(CapiSession, ConfigLogReceivesTheSessionsStartupLines) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    LogCapture cap;
    ASSERT_EQ(trainrt_config_set_log(c, LogCapture::fn, &cap, TRAINRT_LOG_INFO), TRAINRT_OK);
    trainrt_session* s = make_session_from(c);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(cap.has_prefix("acceleration:")) << cap.all();
    ASSERT_GT(cap.size(), 0u);
    for (const auto& l : cap.lines) {
        EXPECT_GE(l.first, TRAINRT_LOG_INFO) << l.second;
        EXPECT_LE(l.first, TRAINRT_LOG_ERROR) << l.second;
        EXPECT_FALSE(l.second.empty());
        EXPECT_EQ(l.second.find('\n'), std::string::npos) << "one line, no newline: " << l.second;
    }
}

TEST_F(CapiSession, LogMinLevelFiltersInfoLines) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    LogCapture warn_only, debug;
    ASSERT_EQ(trainrt_config_set_log(c, LogCapture::fn, &warn_only, TRAINRT_LOG_WARN),
              TRAINRT_OK);
    trainrt_session* s = make_session_from(c);
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_train(s, 2, nullptr, nullptr), TRAINRT_OK);
    for (const auto& l : warn_only.lines) EXPECT_GE(l.first, TRAINRT_LOG_WARN) << l.second;
    EXPECT_FALSE(warn_only.has_prefix("acceleration:"));

    ASSERT_EQ(trainrt_config_set_log(c, LogCapture::fn, &debug, TRAINRT_LOG_DEBUG), TRAINRT_OK);
    trainrt_session* s2 = make_session_from(c);
    ASSERT_NE(s2, nullptr);
    EXPECT_TRUE(debug.has_prefix("acceleration:")) << debug.all();
}

TEST_F(CapiSession, SessionSetLogRedirectsTheSessionsLines) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    LogCapture from_config, from_session;
    ASSERT_EQ(trainrt_config_set_log(c, LogCapture::fn, &from_config, TRAINRT_LOG_INFO),
              TRAINRT_OK);
    trainrt_session* s = make_session_from(c);
    ASSERT_NE(s, nullptr);
    const size_t startup = from_config.size();
    ASSERT_GT(startup, 0u);

    ASSERT_EQ(trainrt_session_set_log(s, LogCapture::fn, &from_session, TRAINRT_LOG_INFO),
              TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_train(s, 2, nullptr, nullptr), TRAINRT_OK);
    EXPECT_GT(from_session.size(), 0u) << "train() logs at INFO";
    EXPECT_TRUE(from_session.has_prefix("train:")) << from_session.all();
    EXPECT_EQ(from_config.size(), startup) << "old sink still called:\n" << from_config.all();

    EXPECT_NULL_ARG(trainrt_session_set_log(nullptr, LogCapture::fn, &from_session,
                                            TRAINRT_LOG_INFO),
                    "session");
    // A level outside DEBUG..ERROR is refused, and the sink in place stays.
    for (const int32_t bad : {-7, -1, 4, 99}) {
        EXPECT_EQ(trainrt_session_set_log(s, nullptr, nullptr, bad), TRAINRT_ERR_INVALID_ARGUMENT)
            << bad;
        EXPECT_TRUE(names(last_error(), "min_level")) << last_error();
    }
    const size_t before = from_session.size();
    ASSERT_EQ(trainrt_session_train(s, 1, nullptr, nullptr), TRAINRT_OK);
    EXPECT_GT(from_session.size(), before) << "a refused set_log replaced the sink";
}

TEST_F(CapiSession, DefaultLogSinkIsUsedWithoutASessionSinkUntilRestored) {
    DefaultLogGuard restore;
    LogCapture def;
    ASSERT_EQ(trainrt_log_set_default(LogCapture::fn, &def, TRAINRT_LOG_INFO), TRAINRT_OK);
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(def.has_prefix("acceleration:")) << def.all();

    // A session with a sink of its own does not use the default.
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    LogCapture own;
    ASSERT_EQ(trainrt_config_set_log(c, LogCapture::fn, &own, TRAINRT_LOG_INFO), TRAINRT_OK);
    size_t before = def.size();
    ASSERT_NE(make_session_from(c), nullptr);
    EXPECT_EQ(def.size(), before);
    EXPECT_GT(own.size(), 0u);

    // session_set_log(NULL) falls back to the process default.
    trainrt_session* s_own = sessions_.back();
    ASSERT_EQ(trainrt_session_set_log(s_own, nullptr, nullptr, TRAINRT_LOG_INFO), TRAINRT_OK);
    const size_t own_before = own.size();
    ASSERT_EQ(trainrt_session_train(s_own, 1, nullptr, nullptr), TRAINRT_OK);
    EXPECT_EQ(own.size(), own_before);
    EXPECT_GT(def.size(), before);

    // Restoring the built-in default: the callback hears nothing more.
    ASSERT_EQ(trainrt_log_set_default(nullptr, nullptr, TRAINRT_LOG_WARN), TRAINRT_OK);
    before = def.size();
    ASSERT_NE(make_session(), nullptr);
    ASSERT_EQ(trainrt_session_train(s, 1, nullptr, nullptr), TRAINRT_OK);
    EXPECT_EQ(def.size(), before);
}

TEST_F(CapiSession, LibraryNeverWritesToStdout) {
    DefaultLogGuard restore;
    ASSERT_EQ(trainrt_log_set_default(nullptr, nullptr, TRAINRT_LOG_DEBUG), TRAINRT_OK);
    testing::internal::CaptureStdout();
    {
        trainrt_session* s = make_session({{"train.eval_every", "2"}});
        if (s != nullptr) {
            trainrt_session_train(s, 3, nullptr, nullptr);
            double loss = 0;
            trainrt_session_eval(&loss, s);
            trainrt_session_step_tokens(nullptr, s, nullptr, 0);  // an error
        }
        create_status({{"runtime.precision", "\"tf32\""}});   // an error at create
        trainrt_prepare_bytes(nullptr, nullptr, (dir_ + "/none.txt").c_str(), dir_.c_str(), 0.1);
    }
    std::fflush(stdout);
    const std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(out, "");
}

// ====================================================================== concurrency

TEST_F(CapiSession, SecondThreadGetsBusyWhileTrainRuns) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    Rendezvous rv;
    rv.return_value = 1;  // stop the run once the probes are done
    trainrt_status status = 12345;
    std::thread worker([&] { status = trainrt_session_train(s, 1000000, Rendezvous::fn, &rv); });
    rv.wait_in_callback();  // train() holds the session now

    trainrt_step_result r = sentinel_result();
    const std::vector<int32_t> batch = pattern_batch();
    double loss = -3.25;
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    m.step = -99;
    char buf[16] = "unchanged";
    size_t needed = 777;
    LogCapture cap;
    EXPECT_EQ(trainrt_session_step(&r, s), TRAINRT_ERR_BUSY);
    EXPECT_GT(last_error().size(), 0u);
    EXPECT_EQ(trainrt_session_step_tokens(&r, s, batch.data(), batch.size()), TRAINRT_ERR_BUSY);
    EXPECT_EQ(trainrt_session_sync(&r, s), TRAINRT_ERR_BUSY);
    EXPECT_EQ(trainrt_session_eval(&loss, s), TRAINRT_ERR_BUSY);
    EXPECT_EQ(trainrt_session_forward(&loss, nullptr, 0, s, batch.data(), kB, kT),
              TRAINRT_ERR_BUSY);
    EXPECT_EQ(trainrt_session_train(s, 1, nullptr, nullptr), TRAINRT_ERR_BUSY);
    EXPECT_EQ(trainrt_session_metrics(&m, s), TRAINRT_ERR_BUSY);
    EXPECT_EQ(trainrt_session_config_dump(buf, sizeof buf, &needed, s), TRAINRT_ERR_BUSY);
    EXPECT_EQ(trainrt_session_set_log(s, LogCapture::fn, &cap, TRAINRT_LOG_INFO),
              TRAINRT_ERR_BUSY);
    expect_sentinel(r);
    EXPECT_EQ(loss, -3.25);
    EXPECT_EQ(m.step, -99);
    EXPECT_STREQ(buf, "unchanged");
    EXPECT_EQ(needed, 777u);

    rv.let_go();
    worker.join();
    EXPECT_EQ(status, TRAINRT_STOPPED);
    EXPECT_EQ(metrics_of(s).step, 1) << "the BUSY calls did not run";
    // Free again.
    r = new_result();
    EXPECT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.step, 2);
}

TEST_F(CapiSession, CallFromInsideTheProgressCallbackIsBusy) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    struct Ctx {
        trainrt_session* s;
        trainrt_status step_status = 12345;
        trainrt_status stop_status = 12345;
    } ctx{s};
    auto cb = [](const trainrt_progress*, void* payload) -> int32_t {
        auto* c = static_cast<Ctx*>(payload);
        c->step_status = trainrt_session_step(nullptr, c->s);
        return 1;
    };
    EXPECT_EQ(trainrt_session_train(s, 10, cb, &ctx), TRAINRT_STOPPED);
    EXPECT_EQ(ctx.step_status, TRAINRT_ERR_BUSY);
    EXPECT_EQ(metrics_of(s).step, 1);
}

// ====================================================================== determinism

TEST_F(CapiSession, SameConfigGivesBitwiseIdenticalLosses) {
    trainrt_session* a = make_session();
    trainrt_session* b = make_session();
    trainrt_session* other_seed = make_session({{"data.seed", "2"}});
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_NE(other_seed, nullptr);
    bool any_differs = false;
    for (int i = 1; i <= 5; ++i) {
        trainrt_step_result ra = new_result(), rb = new_result(), rc = new_result();
        ASSERT_EQ(trainrt_session_step(&ra, a), TRAINRT_OK) << last_error();
        ASSERT_EQ(trainrt_session_step(&rb, b), TRAINRT_OK) << last_error();
        ASSERT_EQ(trainrt_session_step(&rc, other_seed), TRAINRT_OK) << last_error();
        EXPECT_EQ(std::memcmp(&ra.loss, &rb.loss, sizeof(double)), 0)
            << "step " << i << ": " << ra.loss << " vs " << rb.loss;
        EXPECT_EQ(std::memcmp(&ra.grad_norm, &rb.grad_norm, sizeof(double)), 0) << "step " << i;
        any_differs = any_differs || ra.loss != rc.loss;
    }
    EXPECT_TRUE(any_differs) << "data.seed does not change the random sampler's batches";
    double ea = 0, eb = 0;
    ASSERT_EQ(trainrt_session_eval(&ea, a), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_eval(&eb, b), TRAINRT_OK);
    EXPECT_EQ(std::memcmp(&ea, &eb, sizeof(double)), 0) << ea << " vs " << eb;
}

// ====================================================================== signal stack

namespace {
// What a progress callback (on the calling thread, inside trainrt_session_train) sees of the
// thread's alternate signal stack.
struct StackSeen {
    int calls = 0, enabled = 0;
    void* sp = nullptr;
    static int32_t fn(const trainrt_progress*, void* payload) {
        auto* seen = static_cast<StackSeen*>(payload);
        stack_t ss{};
        if (sigaltstack(nullptr, &ss) == 0 && !(ss.ss_flags & SS_DISABLE)) {
            seen->enabled++;
            seen->sp = ss.ss_sp;
        }
        seen->calls++;
        return 0;
    }
};
bool has_signal_stack() {
    stack_t ss{};
    return sigaltstack(nullptr, &ss) == 0 && !(ss.ss_flags & SS_DISABLE);
}
}  // namespace

// oneDNN's JIT f32 GEMM runs with rsp in a heap buffer, so a signal taken on the calling thread
// would write its frame into the heap (src/capi/signal_stack.h). While a call computes, a
// thread without an alternate signal stack has the library's, and loses it on return; a
// thread with its own keeps it.
TEST_F(CapiSession, ComputingCallsGiveTheThreadAnAlternateSignalStack) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    std::thread([&] {
        // A thread without one (sanitizer runtimes give every thread one of theirs: put it
        // aside for the test and back at the end).
        stack_t saved{};
        ASSERT_EQ(sigaltstack(nullptr, &saved), 0);
        stack_t off{};
        off.ss_flags = SS_DISABLE;
        ASSERT_EQ(sigaltstack(&off, nullptr), 0);
        ASSERT_FALSE(has_signal_stack());
        StackSeen seen;
        ASSERT_EQ(trainrt_session_train(s, 2, StackSeen::fn, &seen), TRAINRT_OK) << last_error();
        EXPECT_GT(seen.calls, 0);
        EXPECT_EQ(seen.enabled, seen.calls) << "the call ran without an alternate stack";
        EXPECT_FALSE(has_signal_stack()) << "the library's stack outlived the call";

        std::vector<char> own(256 * 1024);
        stack_t mine{};
        mine.ss_sp = own.data();
        mine.ss_size = own.size();
        ASSERT_EQ(sigaltstack(&mine, nullptr), 0);
        StackSeen again;
        ASSERT_EQ(trainrt_session_train(s, 2, StackSeen::fn, &again), TRAINRT_OK)
            << last_error();
        EXPECT_EQ(again.enabled, again.calls);
        EXPECT_EQ(again.sp, own.data()) << "the host's own stack was replaced";
        stack_t after{};
        ASSERT_EQ(sigaltstack(nullptr, &after), 0);
        EXPECT_EQ(after.ss_sp, own.data()) << "the host's own stack was taken down";
        // A stack the host installs during the call (from a callback) is the host's: kept.
        ASSERT_EQ(sigaltstack(&off, nullptr), 0);
        struct InstallOwn {
            stack_t* mine;
            static int32_t fn(const trainrt_progress*, void* payload) {
                sigaltstack(static_cast<InstallOwn*>(payload)->mine, nullptr);
                return 0;
            }
        } install{&mine};
        ASSERT_EQ(trainrt_session_train(s, 1, InstallOwn::fn, &install), TRAINRT_OK)
            << last_error();
        ASSERT_EQ(sigaltstack(nullptr, &after), 0);
        EXPECT_FALSE(after.ss_flags & SS_DISABLE) << "the host's stack, set in a callback, was "
                                                     "taken down";
        EXPECT_EQ(after.ss_sp, own.data());
        if (saved.ss_flags & SS_DISABLE)
            sigaltstack(&off, nullptr);
        else
            sigaltstack(&saved, nullptr);
    }).join();
}
