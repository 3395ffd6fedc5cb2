// The C-API misuse suite (issue 15): every exported entry point called the way a careless or
// hostile host would — NULL handles and out-pointers, bad struct_size fields, out-of-range
// numbers (negative, huge, INT64_MAX/MIN, NaN/inf), enum values outside their range,
// non-UTF-8 and very long strings, paths that are directories, FIFOs or devices, calls in the
// wrong order, several threads on one handle, and calls back into the library from inside its
// own log and progress callbacks. Each case asserts the documented status and that
// trainrt_last_error_message() names the argument (or key, or function) at fault; nothing may
// crash, hang, leak or race (CI runs this under ASan + UBSan, scripts/sanitize.sh). What the
// library does NOT guarantee is listed in docs/C_API.md, "The caller's contract".
//
// The list of entry points this suite covers (kSuiteEntryPoints) is checked against the
// TRAINRT_API declarations of include/trainrt/trainrt.h, parsed at test time: a new export
// without misuse cases here fails CapiMisuseCoverage.
//
// A tiny GPT-2 (V 32, T_max 16, L1 H2 C16; B 2, T 8, one thread) on shards written here.
// Written against include/trainrt/trainrt.h only.
#include <trainrt/trainrt.h>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

// ====================================================================== the entry points

using AnyFn = void (*)();
struct EntryPoint {
    const char* name;
    AnyFn fn;  // taken from the declaration, so a misspelt name does not compile
};
#define TRT_ENTRY(f) EntryPoint{#f, reinterpret_cast<AnyFn>(&f)}

// Every entry point the tests below call with bad arguments. Add the new one here — and
// misuse cases for it — when the header gains an export.
const EntryPoint kSuiteEntryPoints[] = {
    TRT_ENTRY(trainrt_version_string),        TRT_ENTRY(trainrt_abi_version),
    TRT_ENTRY(trainrt_build_features),        TRT_ENTRY(trainrt_status_string),
    TRT_ENTRY(trainrt_last_error_message),    TRT_ENTRY(trainrt_log_set_default),
    TRT_ENTRY(trainrt_config_create),         TRT_ENTRY(trainrt_config_from_file),
    TRT_ENTRY(trainrt_config_from_string),    TRT_ENTRY(trainrt_config_destroy),
    TRT_ENTRY(trainrt_config_set),            TRT_ENTRY(trainrt_config_get_int),
    TRT_ENTRY(trainrt_config_get_double),     TRT_ENTRY(trainrt_config_get_bool),
    TRT_ENTRY(trainrt_config_get_string),     TRT_ENTRY(trainrt_config_dump),
    TRT_ENTRY(trainrt_config_set_log),        TRT_ENTRY(trainrt_config_set_mpi_comm),        TRT_ENTRY(trainrt_step_result_init),
    TRT_ENTRY(trainrt_metrics_init),          TRT_ENTRY(trainrt_session_create),
    TRT_ENTRY(trainrt_session_destroy),       TRT_ENTRY(trainrt_session_set_log),
    TRT_ENTRY(trainrt_session_step),          TRT_ENTRY(trainrt_session_step_tokens),
    TRT_ENTRY(trainrt_session_sync),          TRT_ENTRY(trainrt_session_eval),
    TRT_ENTRY(trainrt_session_forward),       TRT_ENTRY(trainrt_session_train),
    TRT_ENTRY(trainrt_session_request_stop),  TRT_ENTRY(trainrt_session_metrics),
    TRT_ENTRY(trainrt_session_config_dump),   TRT_ENTRY(trainrt_session_save),
    TRT_ENTRY(trainrt_session_profile),       TRT_ENTRY(trainrt_session_profile_reset),
    TRT_ENTRY(trainrt_session_load),          TRT_ENTRY(trainrt_checkpoint_latest),
    TRT_ENTRY(trainrt_config_from_checkpoint), TRT_ENTRY(trainrt_session_export),
    TRT_ENTRY(trainrt_checkpoint_export),     TRT_ENTRY(trainrt_sample_options_init),
    TRT_ENTRY(trainrt_session_sample),        TRT_ENTRY(trainrt_config_model_info),
    TRT_ENTRY(trainrt_config_model_summary),  TRT_ENTRY(trainrt_prepare_bytes),
    TRT_ENTRY(trainrt_tokenizer_load),        TRT_ENTRY(trainrt_tokenizer_destroy),
    TRT_ENTRY(trainrt_tokenizer_encode),      TRT_ENTRY(trainrt_tokenizer_decode),
    TRT_ENTRY(trainrt_tokenizer_vocab_size),  TRT_ENTRY(trainrt_tokenizer_token_id),
    TRT_ENTRY(trainrt_prepare_options_init),  TRT_ENTRY(trainrt_prepare_result_init),
    TRT_ENTRY(trainrt_prepare_text),          TRT_ENTRY(trainrt_tokenizer_train_options_init),
    TRT_ENTRY(trainrt_tokenizer_train_result_init), TRT_ENTRY(trainrt_tokenizer_train),
    TRT_ENTRY(trainrt_session_export_adapter), TRT_ENTRY(trainrt_checkpoint_export_adapter),
    TRT_ENTRY(trainrt_param_info_init),       TRT_ENTRY(trainrt_session_param_count),
    TRT_ENTRY(trainrt_session_param_info),    TRT_ENTRY(trainrt_session_read_params),
    TRT_ENTRY(trainrt_session_write_params),  TRT_ENTRY(trainrt_session_set_metadata),
    TRT_ENTRY(trainrt_session_get_metadata),  TRT_ENTRY(trainrt_session_metadata_count),
    TRT_ENTRY(trainrt_session_metadata_key),  TRT_ENTRY(trainrt_eval_result_init),
    TRT_ENTRY(trainrt_session_eval_whole),    TRT_ENTRY(trainrt_session_eval_tokens),
    TRT_ENTRY(trainrt_session_eval_text),     TRT_ENTRY(trainrt_session_step_masked),
    TRT_ENTRY(trainrt_session_generate),      TRT_ENTRY(trainrt_chat_template_load),
    TRT_ENTRY(trainrt_chat_template_destroy), TRT_ENTRY(trainrt_chat_template_render),
    TRT_ENTRY(trainrt_chat_template_stop_ids), TRT_ENTRY(trainrt_chat_template_generation_spans),
    TRT_ENTRY(trainrt_checkpoint_export_gguf), TRT_ENTRY(trainrt_checkpoint_export_gguf_lora),
};
#undef TRT_ENTRY

// ====================================================================== helpers

// `word` appears in `text`: as a whole identifier when it is one (so "out" is not found in
// "out_dir"), else as a substring ("data.train", "struct_size = 0").
bool mentions(const std::string& text, const std::string& word) {
    const bool identifier = std::regex_match(word, std::regex("[A-Za-z_][A-Za-z0-9_]*"));
    return identifier ? names(text, word) : text.find(word) != std::string::npos;
}

// The call returns `status` and the thread's last error names `word`.
#define EXPECT_MISUSE(call, status, word)                                                   \
    do {                                                                                    \
        const trainrt_status st_ = (call);                                                  \
        const std::string msg_ = trainrt_last_error_message();                              \
        EXPECT_EQ(st_, (status)) << #call << " gave " << trainrt_status_string(st_) << ": "  \
                                 << msg_;                                                   \
        EXPECT_TRUE(mentions(msg_, (word)))                                                 \
            << #call << ": the message does not name '" << (word) << "': " << msg_;         \
    } while (0)

// A failure is one of the error statuses (never OK, never a crash).
#define EXPECT_FAILS(call)                                                                  \
    do {                                                                                    \
        const trainrt_status st_ = (call);                                                  \
        EXPECT_LT(st_, 0) << #call << " succeeded";                                         \
        EXPECT_STRNE(trainrt_last_error_message(), "") << #call;                            \
    } while (0)

const char* const kToml = kTinyGpt2Toml;

constexpr int kV = 32, kB = 2, kT = 8;
constexpr size_t kStepTokens = static_cast<size_t>(kB) * (kT + 1);

using Sets = std::vector<std::pair<std::string, std::string>>;

std::vector<int32_t> valid_rows(int rows = kB, int T = kT) {
    std::vector<int32_t> out;
    for (int i = 0; i < rows * (T + 1); ++i) out.push_back((i * 7 + 3) % kV);
    return out;
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    ASSERT_TRUE(f.good()) << path;
}

// A FIFO nobody writes to: opening it for reading without O_NONBLOCK waits forever, so a
// library call that does so hangs (the test would time out).
std::string make_fifo(const std::string& path) {
    fs::remove(path);
    EXPECT_EQ(::mkfifo(path.c_str(), 0644), 0) << path << ": " << std::strerror(errno);
    return path;
}

std::string long_path(const std::string& dir, size_t n) {
    std::string p = dir + "/";
    while (p.size() < n) p += std::string(200, 'x') + "/";
    return p + "leaf";
}

int64_t step_of(trainrt_session* s) {
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    EXPECT_EQ(trainrt_session_metrics(&m, s), TRAINRT_OK) << last_error();
    return m.step;
}

std::string session_dump(trainrt_session* s) {
    size_t needed = 0;
    EXPECT_EQ(trainrt_session_config_dump(nullptr, 0, &needed, s), TRAINRT_OK);
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

struct DefaultLogGuard {
    ~DefaultLogGuard() { trainrt_log_set_default(nullptr, nullptr, TRAINRT_LOG_WARN); }
};

// ====================================================================== fixture

class CapiMisuse : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_dir();
        write_shard(dir_ + "/train.bin", lcg_tokens(4096, 1, kV));
        write_shard(dir_ + "/val.bin", lcg_tokens(512, 2, kV));
    }
    void TearDown() override {
        for (trainrt_session* s : sessions_) trainrt_session_destroy(s);
        for (trainrt_config* c : configs_) trainrt_config_destroy(c);
    }

    trainrt_config* make_config(const Sets& sets = {}) {
        trainrt_config* c = nullptr;
        if (trainrt_config_from_string(&c, kToml, dir_.c_str()) != TRAINRT_OK) {
            ADD_FAILURE() << "base config: " << last_error();
            return nullptr;
        }
        configs_.push_back(c);
        for (const auto& kv : sets)
            if (trainrt_config_set(c, kv.first.c_str(), kv.second.c_str()) != TRAINRT_OK) {
                ADD_FAILURE() << "set " << kv.first << " = " << kv.second << ": " << last_error();
                return nullptr;
            }
        return c;
    }
    trainrt_session* make_session(const Sets& sets = {}) {
        trainrt_config* c = make_config(sets);
        if (c == nullptr) return nullptr;
        trainrt_session* s = nullptr;
        if (trainrt_session_create(&s, c) != TRAINRT_OK) {
            ADD_FAILURE() << "session_create: " << last_error();
            return nullptr;
        }
        sessions_.push_back(s);
        return s;
    }
    // session_create's status for the base config plus `sets`; out untouched on failure.
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
    // A checkpoint of a fresh session after one step, in dir_/name.
    std::string make_checkpoint(const std::string& name) {
        trainrt_session* s = make_session();
        if (s == nullptr) return "";
        EXPECT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
        const std::string path = dir_ + "/" + name;
        EXPECT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, path.c_str()), TRAINRT_OK)
            << last_error();
        return path;
    }

    std::string dir_;
    std::vector<trainrt_config*> configs_;
    std::vector<trainrt_session*> sessions_;
};

}  // namespace

// ====================================================================== coverage

TEST(CapiMisuseCoverage, EveryExportedEntryPointIsInTheSuite) {
    const std::string header = std::string(TRAINRT_SOURCE_DIR) + "/include/trainrt/trainrt.h";
    std::ifstream f(header);
    ASSERT_TRUE(f.good()) << header;
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    // TRAINRT_API <return type> <name>( — declarations may span lines.
    const std::regex decl(R"(TRAINRT_API\s+[^;(]*?\b(trainrt_[A-Za-z0-9_]+)\s*\()");
    std::set<std::string> declared;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), decl);
         it != std::sregex_iterator(); ++it)
        declared.insert((*it)[1].str());
    std::set<std::string> covered;
    for (const EntryPoint& e : kSuiteEntryPoints) {
        EXPECT_TRUE(covered.insert(e.name).second) << e.name << " listed twice";
        EXPECT_NE(e.fn, nullptr) << e.name;
    }
    EXPECT_GE(declared.size(), 40u) << "the header parse found too few declarations";
    for (const std::string& name : declared)
        EXPECT_TRUE(covered.count(name))
            << name << " is exported by trainrt.h but has no misuse cases in this suite";
    for (const std::string& name : covered)
        EXPECT_TRUE(declared.count(name)) << name << " is listed here but not declared";
    // And each is really exported by the library this test runs against.
    for (const std::string& name : declared)
        EXPECT_NE(::dlsym(RTLD_DEFAULT, name.c_str()), nullptr) << name << " is not exported";
}

// ====================================================================== core

TEST(CapiMisuseCore, StatusStringOfAnyCodeIsStaticNonNullText) {
    // Far from the codes in use (new ones are appended next to them).
    const int32_t unknown[] = {INT32_MIN, -65536, -1000, 1000, 65536, INT32_MAX};
    for (const int32_t code : unknown) {
        const char* t = trainrt_status_string(code);
        ASSERT_NE(t, nullptr) << code;
        EXPECT_STREQ(t, "unknown status") << code;
    }
    for (int32_t code = TRAINRT_ERR_DEVICE_LOST; code <= TRAINRT_STOPPED; ++code) {
        const char* t = trainrt_status_string(code);
        ASSERT_NE(t, nullptr) << code;
        EXPECT_STRNE(t, "unknown status") << code;
    }
}

TEST(CapiMisuseCore, ProcessWideQueriesFromManyThreadsAtOnce) {
    const std::string version = trainrt_version_string();
    const uint64_t features = trainrt_build_features();
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 200; ++i) {
                if (version != trainrt_version_string()) ++mismatches;
                if (trainrt_abi_version() != TRAINRT_ABI_VERSION) ++mismatches;
                if (trainrt_build_features() != features) ++mismatches;
                if (trainrt_status_string(i - 100) == nullptr) ++mismatches;
                if (trainrt_last_error_message() == nullptr) ++mismatches;
            }
        });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(mismatches.load(), 0);
}

TEST(CapiMisuseCore, LastErrorIsNeverNullAndBelongsToTheFailingThread) {
    EXPECT_NE(trainrt_last_error_message(), nullptr);
    EXPECT_MISUSE(trainrt_config_create(nullptr), TRAINRT_ERR_INVALID_ARGUMENT, "out");
    std::string other = "unset";
    std::thread([&] { other = trainrt_last_error_message(); }).join();
    EXPECT_EQ(other, "") << "another thread sees this thread's error";
}

TEST(CapiMisuseCore, LogSetDefaultRefusesLevelsOutsideTheEnum) {
    DefaultLogGuard restore;
    for (const int32_t level : {-1, 4, 99, -7, INT32_MIN, INT32_MAX}) {
        SCOPED_TRACE(level);
        EXPECT_MISUSE(trainrt_log_set_default(nullptr, nullptr, level),
                      TRAINRT_ERR_INVALID_ARGUMENT, "min_level");
        auto fn = [](int32_t, const char*, void*) {};
        EXPECT_MISUSE(trainrt_log_set_default(fn, nullptr, level), TRAINRT_ERR_INVALID_ARGUMENT,
                      "min_level");
    }
    // A NULL callback with a payload is the built-in sink (the payload is ignored).
    int dummy = 0;
    EXPECT_EQ(trainrt_log_set_default(nullptr, &dummy, TRAINRT_LOG_ERROR), TRAINRT_OK);
}

TEST(CapiMisuseCore, InitFunctionsAcceptNullAndOverwriteGarbage) {
    trainrt_step_result_init(nullptr);
    trainrt_metrics_init(nullptr);
    trainrt_sample_options_init(nullptr);
    trainrt_step_result r;
    std::memset(&r, 0xA5, sizeof r);
    trainrt_step_result_init(&r);
    EXPECT_EQ(r.struct_size, sizeof r);
    EXPECT_EQ(r.version, static_cast<uint32_t>(TRAINRT_STEP_RESULT_VERSION));
    trainrt_metrics m;
    std::memset(&m, 0xA5, sizeof m);
    trainrt_metrics_init(&m);
    EXPECT_EQ(m.struct_size, sizeof m);
    trainrt_sample_options o;
    std::memset(&o, 0xA5, sizeof o);
    trainrt_sample_options_init(&o);
    EXPECT_EQ(o.struct_size, sizeof o);
    EXPECT_EQ(o.reserved, 0);
    trainrt_prepare_options_init(nullptr);
    trainrt_prepare_result_init(nullptr);
    trainrt_prepare_options po;
    std::memset(&po, 0xA5, sizeof po);
    trainrt_prepare_options_init(&po);
    EXPECT_EQ(po.struct_size, sizeof po);
    EXPECT_EQ(po.version, static_cast<uint32_t>(TRAINRT_PREPARE_OPTIONS_VERSION));
    EXPECT_EQ(po.tokenizer, nullptr);
    EXPECT_EQ(po.progress, nullptr);
    EXPECT_EQ(po.shard_tokens, 0);
    trainrt_prepare_result pr;
    std::memset(&pr, 0xA5, sizeof pr);
    trainrt_prepare_result_init(&pr);
    EXPECT_EQ(pr.struct_size, sizeof pr);
    EXPECT_EQ(pr.documents, 0);
}

// ====================================================================== config

TEST_F(CapiMisuse, ConfigNullHandlesAndOutPointers) {
    trainrt_config* const sentinel = reinterpret_cast<trainrt_config*>(uintptr_t{0x5e});
    trainrt_config* c = sentinel;
    trainrt_config* ok = make_config();
    ASSERT_NE(ok, nullptr);
    EXPECT_NULL_ARG(trainrt_config_create(nullptr), "out");
    EXPECT_NULL_ARG(trainrt_config_from_file(nullptr, "x.toml"), "out");
    EXPECT_NULL_ARG(trainrt_config_from_file(&c, nullptr), "path");
    EXPECT_NULL_ARG(trainrt_config_from_string(nullptr, "", nullptr), "out");
    EXPECT_NULL_ARG(trainrt_config_from_string(&c, nullptr, nullptr), "toml");
    EXPECT_EQ(c, sentinel);
    trainrt_config_destroy(nullptr);
    EXPECT_NULL_ARG(trainrt_config_set(nullptr, "optim.lr", "1"), "config");
    EXPECT_NULL_ARG(trainrt_config_set(ok, nullptr, "1"), "key");
    EXPECT_NULL_ARG(trainrt_config_set(ok, "optim.lr", nullptr), "toml_value");
    int64_t i = -5;
    double d = -5;
    int32_t b = -5;
    EXPECT_NULL_ARG(trainrt_config_get_int(nullptr, ok, "train.steps"), "out");
    EXPECT_NULL_ARG(trainrt_config_get_int(&i, nullptr, "train.steps"), "config");
    EXPECT_NULL_ARG(trainrt_config_get_int(&i, ok, nullptr), "key");
    EXPECT_NULL_ARG(trainrt_config_get_double(nullptr, ok, "optim.lr"), "out");
    EXPECT_NULL_ARG(trainrt_config_get_double(&d, nullptr, "optim.lr"), "config");
    EXPECT_NULL_ARG(trainrt_config_get_double(&d, ok, nullptr), "key");
    EXPECT_NULL_ARG(trainrt_config_get_bool(nullptr, ok, "accel.cuda_graphs"), "out");
    EXPECT_NULL_ARG(trainrt_config_get_bool(&b, nullptr, "accel.cuda_graphs"), "config");
    EXPECT_NULL_ARG(trainrt_config_get_bool(&b, ok, nullptr), "key");
    EXPECT_EQ(i, -5);
    EXPECT_EQ(d, -5);
    EXPECT_EQ(b, -5);
    char buf[8] = "keep";
    size_t needed = 77;
    EXPECT_NULL_ARG(trainrt_config_get_string(buf, sizeof buf, &needed, nullptr, "optim.lr"),
                    "config");
    EXPECT_NULL_ARG(trainrt_config_get_string(buf, sizeof buf, &needed, ok, nullptr), "key");
    EXPECT_NULL_ARG(trainrt_config_get_string(nullptr, 5, &needed, ok, "optim.lr"), "buf");
    EXPECT_NULL_ARG(trainrt_config_dump(buf, sizeof buf, &needed, nullptr), "config");
    EXPECT_NULL_ARG(trainrt_config_dump(nullptr, 5, &needed, ok), "buf");
    EXPECT_STREQ(buf, "keep");
    EXPECT_NULL_ARG(trainrt_config_set_log(nullptr, nullptr, nullptr, TRAINRT_LOG_INFO), "config");
    EXPECT_NULL_ARG(trainrt_config_set_mpi_comm(nullptr, nullptr), "config");
    trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
    EXPECT_NULL_ARG(trainrt_config_model_info(nullptr, ok), "out");
    EXPECT_NULL_ARG(trainrt_config_model_info(&info, nullptr), "config");
    EXPECT_NULL_ARG(trainrt_config_model_summary(buf, sizeof buf, &needed, nullptr), "config");
    EXPECT_NULL_ARG(trainrt_config_model_summary(nullptr, 5, &needed, ok), "buf");
    EXPECT_STREQ(buf, "keep");
    // The size query with a NULL needed is legal and does nothing.
    EXPECT_EQ(trainrt_config_dump(nullptr, 0, nullptr, ok), TRAINRT_OK);
    EXPECT_EQ(trainrt_config_model_summary(nullptr, 0, nullptr, ok), TRAINRT_OK);
    EXPECT_EQ(trainrt_config_get_string(nullptr, 0, nullptr, ok, "optim.lr"), TRAINRT_OK);
}

TEST(CapiMisuseTokenizer, NullArgumentsAndNullHandles) {
    trainrt_tokenizer* t = nullptr;
    EXPECT_NULL_ARG(trainrt_tokenizer_load(nullptr, "x.json"), "out");
    EXPECT_NULL_ARG(trainrt_tokenizer_load(&t, nullptr), "path");
    EXPECT_EQ(t, nullptr);
    trainrt_tokenizer_destroy(nullptr);  // accepted, does nothing
    size_t needed = 0;
    int32_t id = 0;
    EXPECT_NULL_ARG(trainrt_tokenizer_encode(nullptr, 0, &needed, nullptr, "a", 1), "tokenizer");
    EXPECT_NULL_ARG(trainrt_tokenizer_decode(nullptr, 0, &needed, nullptr, &id, 1), "tokenizer");
    EXPECT_NULL_ARG(trainrt_tokenizer_vocab_size(nullptr, nullptr), "out");
    EXPECT_NULL_ARG(trainrt_tokenizer_vocab_size(&id, nullptr), "tokenizer");
    EXPECT_NULL_ARG(trainrt_tokenizer_token_id(nullptr, nullptr, "a"), "out");
    EXPECT_NULL_ARG(trainrt_tokenizer_token_id(&id, nullptr, "a"), "tokenizer");
}

TEST(CapiMisuseTokenizer, TrainNullArgumentsAndStructSizes) {
    const std::string dir = scratch_dir();
    const std::string text = dir + "/t.txt", out = dir + "/trained.json";
    std::ofstream(text) << "hello hello hello\n";
    const char* inputs[] = {text.c_str()};
    const char* null_input[] = {nullptr};
    trainrt_tokenizer_train_options o = TRAINRT_TOKENIZER_TRAIN_OPTIONS_INIT;
    o.vocab_size = 300;
    EXPECT_NULL_ARG(trainrt_tokenizer_train(nullptr, inputs, 1, out.c_str(), nullptr), "options");
    EXPECT_NULL_ARG(trainrt_tokenizer_train(nullptr, inputs, 1, nullptr, &o), "out_path");
    EXPECT_NULL_ARG(trainrt_tokenizer_train(nullptr, nullptr, 1, out.c_str(), &o), "inputs");
    EXPECT_MISUSE(trainrt_tokenizer_train(nullptr, null_input, 1, out.c_str(), &o),
                  TRAINRT_ERR_INVALID_ARGUMENT, "inputs[0]");
    EXPECT_MISUSE(trainrt_tokenizer_train(nullptr, inputs, 0, out.c_str(), &o),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_inputs");
    trainrt_tokenizer_train_options tiny = o;
    tiny.struct_size = 4;
    EXPECT_MISUSE(trainrt_tokenizer_train(nullptr, inputs, 1, out.c_str(), &tiny),
                  TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
    trainrt_tokenizer_train_options no_vocab = o;
    no_vocab.vocab_size = 0;
    EXPECT_MISUSE(trainrt_tokenizer_train(nullptr, inputs, 1, out.c_str(), &no_vocab),
                  TRAINRT_ERR_INVALID_ARGUMENT, "vocab_size");
    trainrt_tokenizer_train_options bad_specials = o;
    bad_specials.n_special_tokens = 2;  // special_tokens NULL
    EXPECT_MISUSE(trainrt_tokenizer_train(nullptr, inputs, 1, out.c_str(), &bad_specials),
                  TRAINRT_ERR_INVALID_ARGUMENT, "special_tokens");
    trainrt_tokenizer_train_result r = TRAINRT_TOKENIZER_TRAIN_RESULT_INIT;
    r.struct_size = 3;
    EXPECT_MISUSE(trainrt_tokenizer_train(&r, inputs, 1, out.c_str(), &o),
                  TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
    trainrt_tokenizer_train_options_init(nullptr);  // accepted, does nothing
    trainrt_tokenizer_train_result_init(nullptr);
}

TEST(CapiMisuseTokenizer, PrepareTextNullArgumentsAndStructSizes) {
    const std::string dir = scratch_dir();
    const std::string text = dir + "/t.txt", tok = dir + "/tokenizer.json";
    std::ofstream(text) << "hello\n";
    std::ofstream(tok) << tiny_tokenizer_json();
    std::ofstream(dir + "/tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    const char* inputs[] = {text.c_str()};
    const char* null_input[] = {nullptr};
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = tok.c_str();
    const std::string out = dir + "/out";
    EXPECT_NULL_ARG(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), nullptr), "options");
    EXPECT_NULL_ARG(trainrt_prepare_text(nullptr, inputs, 1, nullptr, &o), "out_dir");
    EXPECT_NULL_ARG(trainrt_prepare_text(nullptr, nullptr, 1, out.c_str(), &o), "inputs");
    EXPECT_MISUSE(trainrt_prepare_text(nullptr, null_input, 1, out.c_str(), &o),
                  TRAINRT_ERR_INVALID_ARGUMENT, "inputs[0]");
    EXPECT_MISUSE(trainrt_prepare_text(nullptr, inputs, 0, out.c_str(), &o),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_inputs");
    trainrt_prepare_options tiny = o;
    tiny.struct_size = 4;
    EXPECT_MISUSE(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &tiny),
                  TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
    trainrt_prepare_options negative = o;
    negative.threads = -2;
    EXPECT_MISUSE(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &negative),
                  TRAINRT_ERR_INVALID_ARGUMENT, "threads");
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    r.struct_size = 3;
    EXPECT_MISUSE(trainrt_prepare_text(&r, inputs, 1, out.c_str(), &o),
                  TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
    // A result struct from an older header: only the fields it has are written.
    trainrt_prepare_result old;
    std::memset(&old, 0x7f, sizeof old);
    old.struct_size = offsetof(trainrt_prepare_result, val_tokens);
    ASSERT_EQ(trainrt_prepare_text(&old, inputs, 1, out.c_str(), &o), TRAINRT_OK) << last_error();
    EXPECT_EQ(old.documents, 1);
    EXPECT_EQ(old.train_tokens, 3);  // <|eot|>, hello, newline
    EXPECT_EQ(old.val_tokens, 0x7f7f7f7f7f7f7f7f) << "a field past struct_size was written";
}

// prepare_text with chat = 1 (version 3): the options that do not go with chat data, a
// loss_mask outside TRAINRT_LOSS_MASK_*, bad template names and variables, lines that are no
// conversation; and version-2 callers (no chat fields) still prepare plain text.
TEST(CapiMisuseTokenizer, PrepareChatRefusesOptionsThatDoNotFitChatData) {
    const std::string dir = scratch_dir();
    const std::string model = dir + "/model", out = dir + "/out";
    write_chat_folder(model);
    const std::string chat = dir + "/chat.jsonl", text = dir + "/t.txt";
    std::ofstream(chat) << R"({"messages": [{"role": "user", "content": "hi"},)"
                           R"( {"role": "assistant", "content": "yo"}]})" "\n";
    std::ofstream(text) << "hello\n";
    const char* inputs[] = {chat.c_str()};
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = model.c_str();
    o.chat = 1;
    for (const int32_t c : {2, -1, INT32_MAX}) {
        trainrt_prepare_options bad = o;
        bad.chat = c;
        EXPECT_MISUSE(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &bad),
                      TRAINRT_ERR_INVALID_ARGUMENT, "chat");
    }
    for (const int32_t m : {-1, 4, INT32_MIN, INT32_MAX}) {
        trainrt_prepare_options bad = o;
        bad.loss_mask = m;
        EXPECT_MISUSE(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &bad),
                      TRAINRT_ERR_INVALID_ARGUMENT, "loss_mask");
    }
    trainrt_prepare_options field = o;
    field.jsonl_field = "text";
    EXPECT_MISUSE(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &field),
                  TRAINRT_ERR_INVALID_ARGUMENT, "jsonl_field");
    trainrt_prepare_options shards = o;
    shards.shard_tokens = 1000;
    EXPECT_MISUSE(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &shards),
                  TRAINRT_ERR_INVALID_ARGUMENT, "shard_tokens");
    trainrt_prepare_options name = o;
    name.chat_template = "no-such-template";
    EXPECT_FAILS(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &name));
    EXPECT_TRUE(mentions(last_error(), "no-such-template")) << last_error();
    for (const char* vars : {"[1, 2]", "{not json", "7"}) {
        SCOPED_TRACE(vars);
        trainrt_prepare_options bad = o;
        bad.template_vars = vars;
        EXPECT_MISUSE(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &bad),
                      TRAINRT_ERR_INVALID_ARGUMENT, "template_vars");
    }
    // A folder with a tokenizer but no chat template.
    const std::string plain = dir + "/plain";
    write_chat_folder(plain, R"({"eos_token": "<|eot|>"})");
    trainrt_prepare_options no_template = o;
    no_template.tokenizer = plain.c_str();
    EXPECT_FAILS(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &no_template));
    EXPECT_TRUE(mentions(last_error(), "chat_template")) << last_error();
    // A line that is not a conversation.
    const std::string odd = dir + "/odd.jsonl";
    std::ofstream(odd) << "[1, 2, 3]\n";
    const char* odd_inputs[] = {odd.c_str()};
    EXPECT_FAILS(trainrt_prepare_text(nullptr, odd_inputs, 1, out.c_str(), &o));
    EXPECT_TRUE(mentions(last_error(), "odd.jsonl")) << last_error();
    EXPECT_FALSE(fs::exists(out + "/mask_train.bin")) << "a refused call wrote masks";
    // A version-2 caller (no chat fields): plain text, the fields past its size never read
    // (0xA5 there would be chat = -1515870811).
    trainrt_prepare_options v2;
    trainrt_prepare_options_init(&v2);
    v2.struct_size = offsetof(trainrt_prepare_options, chat);
    std::memset(&v2.chat, 0xA5, sizeof v2 - offsetof(trainrt_prepare_options, chat));
    v2.tokenizer = model.c_str();
    const char* text_inputs[] = {text.c_str()};
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    ASSERT_EQ(trainrt_prepare_text(&r, text_inputs, 1, out.c_str(), &v2), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(r.documents, 1);
    EXPECT_EQ(r.examples, 0);
    EXPECT_FALSE(fs::exists(out + "/mask_train.bin"));
}

// The chat-template entry points: NULL arguments, a folder without a template, a template
// name that does not exist, conversations and variables of the wrong JSON kind, NULL buffers
// with a capacity, folders that name no end-of-turn token.
TEST(CapiMisuseChat, TemplateLoadRenderAndStopIdsRefuseBadArguments) {
    const std::string dir = scratch_dir();
    write_chat_folder(dir);
    trainrt_chat_template* const sentinel = reinterpret_cast<trainrt_chat_template*>(uintptr_t{0x5e});
    trainrt_chat_template* t = sentinel;
    EXPECT_NULL_ARG(trainrt_chat_template_load(nullptr, dir.c_str(), nullptr), "out");
    EXPECT_NULL_ARG(trainrt_chat_template_load(&t, nullptr, nullptr), "folder");
    EXPECT_EQ(t, sentinel);
    trainrt_chat_template_destroy(nullptr);  // accepted, does nothing
    // No template in the folder; a folder that does not exist; a name that is not there.
    const std::string plain = dir + "/plain";
    write_chat_folder(plain, R"({"eos_token": "<|eot|>"})");
    EXPECT_FAILS(trainrt_chat_template_load(&t, plain.c_str(), nullptr));
    EXPECT_TRUE(mentions(last_error(), "chat_template")) << last_error();
    EXPECT_FAILS(trainrt_chat_template_load(&t, (dir + "/missing").c_str(), nullptr));
    EXPECT_FAILS(trainrt_chat_template_load(&t, dir.c_str(), "no-such-template"));
    EXPECT_TRUE(mentions(last_error(), "no-such-template")) << last_error();
    EXPECT_EQ(t, sentinel) << "a refused load wrote *out";
    // A template the engine cannot parse is refused at load.
    const std::string broken = dir + "/broken";
    write_chat_folder(broken, R"({"chat_template": "{% for m in messages %}"})");
    EXPECT_FAILS(trainrt_chat_template_load(&t, broken.c_str(), nullptr));

    ASSERT_EQ(trainrt_chat_template_load(&t, dir.c_str(), nullptr), TRAINRT_OK) << last_error();
    char buf[8] = "keep";
    size_t needed = 0;
    const char* conv = R"([{"role": "user", "content": "hi"}])";
    EXPECT_NULL_ARG(trainrt_chat_template_render(buf, sizeof buf, &needed, nullptr, conv, 0,
                                                 nullptr), "tmpl");
    EXPECT_NULL_ARG(trainrt_chat_template_render(buf, sizeof buf, &needed, t, nullptr, 0,
                                                 nullptr), "conversation_json");
    EXPECT_NULL_ARG(trainrt_chat_template_render(nullptr, 5, &needed, t, conv, 0, nullptr),
                    "buf");
    EXPECT_MISUSE(trainrt_chat_template_render(buf, sizeof buf, &needed, t, "[{\"role\": ", 0,
                                               nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "conversation_json");
    for (const char* not_a_conversation : {"7", "\"text\"", "null", "true"}) {
        SCOPED_TRACE(not_a_conversation);
        EXPECT_MISUSE(trainrt_chat_template_render(buf, sizeof buf, &needed, t,
                                                   not_a_conversation, 0, nullptr),
                      TRAINRT_ERR_INVALID_ARGUMENT, "list");
    }
    EXPECT_MISUSE(trainrt_chat_template_render(buf, sizeof buf, &needed, t, "{\"tools\": []}", 0,
                                               nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "messages");
    EXPECT_MISUSE(trainrt_chat_template_render(buf, sizeof buf, &needed, t,
                                               "{\"messages\": {\"role\": \"user\"}}", 0,
                                               nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "list");
    for (const char* vars : {"[]", "\"x\"", "1"}) {
        SCOPED_TRACE(vars);
        EXPECT_MISUSE(trainrt_chat_template_render(buf, sizeof buf, &needed, t, conv, 0, vars),
                      TRAINRT_ERR_INVALID_ARGUMENT, "vars_json");
    }
    EXPECT_MISUSE(trainrt_chat_template_render(buf, sizeof buf, &needed, t, conv, 0, "{oops"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "vars_json");
    EXPECT_STREQ(buf, "keep") << "a refused render wrote buf";
    // Any add_generation_prompt value is a bool; a NULL needed with a size query is legal.
    EXPECT_EQ(trainrt_chat_template_render(nullptr, 0, nullptr, t, conv, INT32_MIN, nullptr),
              TRAINRT_OK) << last_error();
    // generation_spans takes render's arguments and refuses them alike.
    size_t ranges[4] = {7, 7, 7, 7};
    EXPECT_NULL_ARG(trainrt_chat_template_generation_spans(ranges, 4, &needed, nullptr, conv, 0,
                                                           nullptr), "tmpl");
    EXPECT_NULL_ARG(trainrt_chat_template_generation_spans(ranges, 4, &needed, t, nullptr, 0,
                                                           nullptr), "conversation_json");
    EXPECT_NULL_ARG(trainrt_chat_template_generation_spans(nullptr, 4, &needed, t, conv, 0,
                                                           nullptr), "ranges");
    EXPECT_MISUSE(trainrt_chat_template_generation_spans(ranges, 4, &needed, t, "{\"tools\": []}",
                                                         0, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "messages");
    EXPECT_MISUSE(trainrt_chat_template_generation_spans(ranges, 4, &needed, t, conv, 0, "[]"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "vars_json");
    EXPECT_EQ(ranges[0], 7u) << "a refused call wrote ranges";
    // A template without generation blocks has none.
    needed = 99;
    EXPECT_EQ(trainrt_chat_template_generation_spans(nullptr, 0, &needed, t, conv, 0, nullptr),
              TRAINRT_OK) << last_error();
    EXPECT_EQ(needed, 0u);

    trainrt_tokenizer* tok = nullptr;
    ASSERT_EQ(trainrt_tokenizer_load(&tok, dir.c_str()), TRAINRT_OK) << last_error();
    int32_t ids[4] = {-1, -1, -1, -1};
    EXPECT_NULL_ARG(trainrt_chat_template_stop_ids(ids, 4, &needed, nullptr, tok), "tmpl");
    EXPECT_NULL_ARG(trainrt_chat_template_stop_ids(ids, 4, &needed, t, nullptr), "tokenizer");
    EXPECT_MISUSE(trainrt_chat_template_stop_ids(nullptr, 2, &needed, t, tok),
                  TRAINRT_ERR_INVALID_ARGUMENT, "ids");
    EXPECT_EQ(ids[0], -1);
    // cap 0 with ids: nothing stored, the count given; NULL needed is legal.
    needed = 0;
    EXPECT_EQ(trainrt_chat_template_stop_ids(ids, 0, &needed, t, tok), TRAINRT_OK);
    EXPECT_EQ(needed, 1u);
    EXPECT_EQ(ids[0], -1);
    EXPECT_EQ(trainrt_chat_template_stop_ids(ids, 4, nullptr, t, tok), TRAINRT_OK);
    EXPECT_EQ(ids[0], 300);
    trainrt_chat_template_destroy(t);

    // Folders whose end-of-turn token cannot be found: none named, one the tokenizer lacks,
    // generation_config ids out of the tokenizer's range or not numbers.
    const struct {
        const char* config;
        const char* generation;  // nullptr: no generation_config.json
        const char* word;
    } cases[] = {
        {R"({"chat_template": "x"})", nullptr, "eos_token"},
        {R"({"chat_template": "x", "eos_token": "<|nope|>"})", nullptr, "<|nope|>"},
        {R"({"chat_template": "x"})", R"({"eos_token_id": 301})", "eos_token_id"},
        {R"({"chat_template": "x"})", R"({"eos_token_id": [300, -1]})", "eos_token_id"},
        {R"({"chat_template": "x"})", R"({"eos_token_id": "300"})", "eos_token_id"},
    };
    int k = 0;
    for (const auto& c : cases) {
        SCOPED_TRACE(c.config);
        const std::string sub = dir + "/eot" + std::to_string(k++);
        write_chat_folder(sub, c.config);
        if (c.generation) std::ofstream(sub + "/generation_config.json") << c.generation;
        trainrt_chat_template* st = nullptr;
        ASSERT_EQ(trainrt_chat_template_load(&st, sub.c_str(), nullptr), TRAINRT_OK)
            << last_error();
        EXPECT_MISUSE(trainrt_chat_template_stop_ids(ids, 4, &needed, st, tok),
                      TRAINRT_ERR_INVALID_ARGUMENT, c.word);
        trainrt_chat_template_destroy(st);
    }
    trainrt_tokenizer_destroy(tok);
}

TEST(CapiMisuseTokenizer, BadPathsBuffersAndIds) {
    const std::string dir = scratch_dir();
    trainrt_tokenizer* t = nullptr;
    EXPECT_FAILS(trainrt_tokenizer_load(&t, dir.c_str()));  // a folder without tokenizer.json
    EXPECT_FAILS(trainrt_tokenizer_load(&t, (dir + "/nothing.json").c_str()));
    EXPECT_FAILS(trainrt_tokenizer_load(&t, "/dev/null"));
    EXPECT_EQ(t, nullptr);
    const std::string path = dir + "/tokenizer.json";
    std::ofstream(path) << tiny_tokenizer_json();
    ASSERT_EQ(trainrt_tokenizer_load(&t, path.c_str()), TRAINRT_OK) << last_error();
    size_t needed = 0;
    int32_t ids[4] = {0, 0, 0, 0};
    EXPECT_NULL_ARG(trainrt_tokenizer_encode(nullptr, 3, &needed, t, "a", 1), "ids");
    EXPECT_NULL_ARG(trainrt_tokenizer_encode(ids, 4, &needed, t, nullptr, 2), "text");
    EXPECT_EQ(trainrt_tokenizer_encode(ids, 4, nullptr, t, nullptr, 0), TRAINRT_OK);
    char buf[8] = "keep";
    EXPECT_NULL_ARG(trainrt_tokenizer_decode(nullptr, 5, &needed, t, ids, 1), "buf");
    EXPECT_NULL_ARG(trainrt_tokenizer_decode(buf, sizeof buf, &needed, t, nullptr, 1), "ids");
    EXPECT_STREQ(buf, "keep");
    const int32_t bad[] = {0, 1 << 30};
    EXPECT_MISUSE(trainrt_tokenizer_decode(buf, sizeof buf, &needed, t, bad, 2),
                  TRAINRT_ERR_INVALID_ARGUMENT, "out of range");
    EXPECT_NULL_ARG(trainrt_tokenizer_token_id(ids, t, nullptr), "token");
    trainrt_tokenizer_destroy(t);
}

TEST_F(CapiMisuse, ConfigFromFileRefusesDirectoriesFifosDevicesAndBadPaths) {
    trainrt_config* const sentinel = reinterpret_cast<trainrt_config*>(uintptr_t{0x5e});
    trainrt_config* c = sentinel;
    EXPECT_MISUSE(trainrt_config_from_file(&c, dir_.c_str()), TRAINRT_ERR_IO, "directory");
    const std::string fifo = make_fifo(dir_ + "/run.toml");
    EXPECT_MISUSE(trainrt_config_from_file(&c, fifo.c_str()), TRAINRT_ERR_IO, "run.toml");
    EXPECT_MISUSE(trainrt_config_from_file(&c, "/dev/zero"), TRAINRT_ERR_IO, "/dev/zero");
    EXPECT_MISUSE(trainrt_config_from_file(&c, ""), TRAINRT_ERR_IO, "''");
    EXPECT_MISUSE(trainrt_config_from_file(&c, long_path(dir_, 5000).c_str()), TRAINRT_ERR_IO,
                  "leaf");
    EXPECT_MISUSE(trainrt_config_from_file(&c, (dir_ + "/\xff\xfe.toml").c_str()),
                  TRAINRT_ERR_IO, ".toml");
    write_text(dir_ + "/notdir", "x");
    EXPECT_MISUSE(trainrt_config_from_file(&c, (dir_ + "/notdir/run.toml").c_str()),
                  TRAINRT_ERR_IO, "run.toml");
    EXPECT_EQ(c, sentinel);
}

TEST_F(CapiMisuse, ConfigFromStringRefusesBadTomlWithoutTouchingOut) {
    trainrt_config* const sentinel = reinterpret_cast<trainrt_config*>(uintptr_t{0x5e});
    trainrt_config* c = sentinel;
    // A syntax error is placed by line and column.
    EXPECT_MISUSE(trainrt_config_from_string(&c, "[model\nvocab_size = 1", nullptr),
                  TRAINRT_ERR_CONFIG, "<string>:1:");
    EXPECT_MISUSE(trainrt_config_from_string(&c, "[train]\nbatch_size = -3\n", nullptr),
                  TRAINRT_ERR_CONFIG, "train.batch_size");
    EXPECT_MISUSE(trainrt_config_from_string(&c, "[optim]\nlr = nan\n", nullptr),
                  TRAINRT_ERR_CONFIG, "optim.lr");
    EXPECT_MISUSE(trainrt_config_from_string(&c, "[optim]\nlr = inf\n", nullptr),
                  TRAINRT_ERR_CONFIG, "optim.lr");
    EXPECT_MISUSE(trainrt_config_from_string(&c, "[bogus]\nx = 1\n", nullptr),
                  TRAINRT_ERR_CONFIG, "bogus");
    // Invalid UTF-8 in a string value and in a comment (TOML documents are UTF-8).
    EXPECT_EQ(trainrt_config_from_string(&c, "[data]\ntrain = \"\xff\xfe\"\n", nullptr),
              TRAINRT_ERR_CONFIG)
        << last_error();
    EXPECT_EQ(trainrt_config_from_string(&c, "# \xc3\x28\n", nullptr), TRAINRT_ERR_CONFIG)
        << last_error();
    EXPECT_EQ(c, sentinel);
    // A base_dir that is not a folder only anchors paths; the config itself is fine.
    trainrt_config* d = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&d, kToml, "/dev/null"), TRAINRT_OK) << last_error();
    configs_.push_back(d);
    ASSERT_EQ(trainrt_config_from_string(&d, kToml, "\xff\xfe"), TRAINRT_OK) << last_error();
    configs_.push_back(d);
}

// toml++ 3.3.0 reaches __builtin_unreachable on this 2-byte input (issue 15 item 4, upstream
// issue #295; UBSan stopped the process in is_non_ascii_horizontal_whitespace): the config
// parser must refuse it before toml++ sees it.
TEST_F(CapiMisuse, ConfigFromStringRefusesAnIncompleteUtf8SequenceAtTheEnd) {
    trainrt_config* const sentinel = reinterpret_cast<trainrt_config*>(uintptr_t{0x5e});
    trainrt_config* c = sentinel;
    EXPECT_EQ(trainrt_config_from_string(&c, "\xcc\x82", nullptr), TRAINRT_ERR_CONFIG)
        << last_error();
    EXPECT_EQ(trainrt_config_from_string(&c, "a = \"\xe2\x82", nullptr), TRAINRT_ERR_CONFIG)
        << last_error();
    EXPECT_EQ(c, sentinel);
}

TEST_F(CapiMisuse, ConfigSetRefusesBadKeysAndValuesAndLeavesTheConfigAlone) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    const std::string before = config_dump(c);
    // Keys.
    EXPECT_MISUSE(trainrt_config_set(c, "", "1"), TRAINRT_ERR_CONFIG, "key");
    EXPECT_EQ(trainrt_config_set(c, "\xff\xfe", "1"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(trainrt_config_set(c, "train.", "1"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(trainrt_config_set(c, ".train", "1"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(trainrt_config_set(c, "train..batch_size", "1"), TRAINRT_ERR_CONFIG);
    EXPECT_MISUSE(trainrt_config_set(c, "train.batch_size.x", "1"), TRAINRT_ERR_CONFIG,
                  "train.batch_size");
    EXPECT_MISUSE(trainrt_config_set(c, "train.batchsize", "1"), TRAINRT_ERR_CONFIG,
                  "batch_size");  // did you mean
    const std::string huge_key = "train." + std::string(1 << 20, 'k');
    EXPECT_EQ(trainrt_config_set(c, huge_key.c_str(), "1"), TRAINRT_ERR_CONFIG);
    EXPECT_LT(std::strlen(trainrt_last_error_message()), 4096u)
        << "a 1 MiB key is echoed back in full";
    // Values: malformed, wrong type, out of range, non-finite, enum values outside the set.
    struct Case {
        const char* key;
        const char* value;
    };
    const Case cases[] = {
        {"optim.lr", ""},
        {"optim.lr", "1 2"},
        {"optim.lr", "nan"},
        {"optim.lr", "+nan"},
        {"optim.lr", "inf"},
        {"optim.lr", "-inf"},
        {"optim.lr", "-1"},
        {"optim.lr", "0"},
        {"optim.lr", "1e400"},
        {"optim.lr", "\"fast\""},
        {"optim.weight_decay", "nan"},
        {"optim.grad_clip", "-inf"},
        {"optim.betas", "[nan, 0.9]"},
        {"optim.betas", "[0.9]"},
        {"train.batch_size", "0"},
        {"train.batch_size", "-1"},
        {"train.batch_size", "9223372036854775807"},   // INT64_MAX
        {"train.batch_size", "-9223372036854775808"},  // INT64_MIN
        {"train.batch_size", "9223372036854775808"},   // past INT64_MAX
        {"train.batch_size", "4294967297"},            // 2^32 + 1 (issue 15 item 1)
        {"train.batch_size", "1.5"},
        {"train.batch_size", "true"},
        {"train.steps", "0"},
        {"train.steps", "9223372036854775807"},
        {"train.grad_accum", "4611686018427387904"},  // 2^62
        {"train.eval_batches", "1099511627777"},      // 2^40 + 1
        {"model.vocab_size", "0"},
        {"model.vocab_size", "2147483647"},
        {"model.context_length", "4294967296"},
        {"model.n_layer", "4294967297"},
        {"model.d_model", "4294967300"},
        {"model.n_head", "-2"},
        {"runtime.threads", "-1"},
        {"runtime.threads", "9223372036854775807"},
        {"runtime.log_every", "0"},
        {"runtime.max_inflight", "0"},
        {"runtime.device", "\"tpu\""},
        {"runtime.device", "7"},
        {"runtime.precision", "\"fp8\""},
        {"optim.schedule", "\"bogus\""},
        {"data.sampler", "\"shuffled\""},
        {"data.placement", "\"gpu\""},
        {"data.train", "\"\xff\xfe\""},
        {"data.train", "3"},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE(testing::Message() << k.key << " = " << k.value);
        EXPECT_MISUSE(trainrt_config_set(c, k.key, k.value), TRAINRT_ERR_CONFIG, k.key);
    }
    EXPECT_EQ(config_dump(c), before) << "a refused set changed the config";
}

TEST_F(CapiMisuse, ConfigGettersRefuseUnknownKeysWrongTypesAndTinyBuffers) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    int64_t i = -5;
    double d = -5;
    int32_t b = -5;
    EXPECT_MISUSE(trainrt_config_get_int(&i, c, ""), TRAINRT_ERR_CONFIG, "key");
    EXPECT_EQ(trainrt_config_get_int(&i, c, "\xff"), TRAINRT_ERR_CONFIG);
    const std::string huge_key(1 << 20, 'k');
    EXPECT_EQ(trainrt_config_get_double(&d, c, huge_key.c_str()), TRAINRT_ERR_CONFIG);
    EXPECT_MISUSE(trainrt_config_get_int(&i, c, "optim.lr"), TRAINRT_ERR_CONFIG, "optim.lr");
    EXPECT_MISUSE(trainrt_config_get_double(&d, c, "data.train"), TRAINRT_ERR_CONFIG,
                  "data.train");
    EXPECT_MISUSE(trainrt_config_get_bool(&b, c, "train.steps"), TRAINRT_ERR_CONFIG,
                  "train.steps");
    EXPECT_MISUSE(trainrt_config_get_int(&i, c, "train"), TRAINRT_ERR_CONFIG, "train");
    EXPECT_EQ(i, -5);
    EXPECT_EQ(d, -5);
    EXPECT_EQ(b, -5);
    // cap 1: only the NUL; needed says how much there is.
    char one[1] = {'z'};
    size_t needed = 0;
    EXPECT_EQ(trainrt_config_get_string(one, 1, &needed, c, "optim.schedule"), TRAINRT_OK);
    EXPECT_EQ(one[0], '\0');
    EXPECT_EQ(needed, std::strlen("constant"));
    char small[4];
    EXPECT_EQ(trainrt_config_dump(small, sizeof small, &needed, c), TRAINRT_OK);
    EXPECT_EQ(std::strlen(small), 3u);
    EXPECT_GT(needed, 100u);
    char buf[8] = "keep";
    EXPECT_MISUSE(trainrt_config_get_string(buf, sizeof buf, &needed, c, "nope.nope"),
                  TRAINRT_ERR_CONFIG, "nope.nope");
    EXPECT_STREQ(buf, "keep");
}

TEST_F(CapiMisuse, ConfigSetLogRefusesLevelsOutsideTheEnum) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    for (const int32_t level : {-1, 4, INT32_MIN, INT32_MAX})
        EXPECT_MISUSE(trainrt_config_set_log(c, nullptr, nullptr, level),
                      TRAINRT_ERR_INVALID_ARGUMENT, "min_level");
    EXPECT_EQ(trainrt_config_set_log(c, nullptr, this, TRAINRT_LOG_DEBUG), TRAINRT_OK);
}

TEST_F(CapiMisuse, ModelInfoRefusesTooSmallStructSizesAndWritesOnlyTheCallersBytes) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    for (const uint32_t size : {0u, 1u, 7u}) {
        trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
        info.struct_size = size;
        info.parameters = -42;
        EXPECT_MISUSE(trainrt_config_model_info(&info, c), TRAINRT_ERR_INVALID_ARGUMENT,
                      "struct_size");
        EXPECT_EQ(info.parameters, -42);
        EXPECT_EQ(info.struct_size, size);
    }
    // A struct_size larger than the library's struct: only sizeof(trainrt_model_info) bytes
    // are written, the caller's struct_size is kept.
    struct Bigger {
        trainrt_model_info info;
        unsigned char tail[64];
    } big;
    std::memset(&big, 0xA5, sizeof big);
    big.info.struct_size = UINT32_MAX;
    big.info.version = 999;
    ASSERT_EQ(trainrt_config_model_info(&big.info, c), TRAINRT_OK) << last_error();
    EXPECT_EQ(big.info.struct_size, UINT32_MAX);
    EXPECT_EQ(big.info.version, static_cast<uint32_t>(TRAINRT_MODEL_INFO_VERSION));
    EXPECT_GT(big.info.parameters, 0);
    for (unsigned char ch : big.tail) ASSERT_EQ(ch, 0xA5) << "written past the library's struct";
    // Only the header: accepted, nothing else written.
    trainrt_model_info head;
    std::memset(&head, 0xA5, sizeof head);
    head.struct_size = 8;
    ASSERT_EQ(trainrt_config_model_info(&head, c), TRAINRT_OK) << last_error();
    EXPECT_EQ(head.struct_size, 8u);
    const unsigned char* raw = reinterpret_cast<const unsigned char*>(&head);
    for (size_t k = 8; k < sizeof head; ++k) ASSERT_EQ(raw[k], 0xA5) << "byte " << k;
}

// ====================================================================== session creation

TEST_F(CapiMisuse, SessionCreateRefusesDataPathsThatAreDirectoriesFifosOrDevices) {
    fs::create_directories(dir_ + "/adir");
    make_fifo(dir_ + "/fifo.bin");
    EXPECT_MISUSE(create_status({{"data.train", "\"adir\""}}), TRAINRT_ERR_IO, "adir");
    EXPECT_MISUSE(create_status({{"data.val", "\"adir\""}}), TRAINRT_ERR_IO, "adir");
    EXPECT_MISUSE(create_status({{"data.train", "\"fifo.bin\""}}), TRAINRT_ERR_IO, "fifo.bin");
    EXPECT_MISUSE(create_status({{"data.val", "\"fifo.bin\""}}), TRAINRT_ERR_IO, "fifo.bin");
    EXPECT_MISUSE(create_status({{"data.train", "\"/dev/zero\""}}), TRAINRT_ERR_IO, "/dev/zero");
    EXPECT_MISUSE(create_status({{"data.train", "\"" + long_path(dir_, 5000) + "\""}}),
                  TRAINRT_ERR_IO, "leaf");
    EXPECT_MISUSE(create_status({{"data.train", "\"\xef\xbf\xbf\xf0\x9f\x98\x80.bin\""}}),
                  TRAINRT_ERR_IO, "data.train");
}

TEST_F(CapiMisuse, SessionCreateRefusesInitFromThatIsADirectoryOrAFifo) {
    fs::create_directories(dir_ + "/weights.safetensors");
    make_fifo(dir_ + "/fifo.safetensors");
    EXPECT_MISUSE(create_status({{"model.init_from", "\"weights.safetensors\""}}),
                  TRAINRT_ERR_IO, "weights.safetensors");
    EXPECT_MISUSE(create_status({{"model.init_from", "\"fifo.safetensors\""}}), TRAINRT_ERR_IO,
                  "fifo.safetensors");
}

// An llm.c checkpoint given as a FIFO: src/model/llmc_import.cpp opens it without O_NONBLOCK.
TEST_F(CapiMisuse, SessionCreateRefusesAnLlmcInitFromThatIsAFifo) {
    make_fifo(dir_ + "/fifo.bin");
    EXPECT_MISUSE(create_status({{"model.init_from", "\"fifo.bin\""}}), TRAINRT_ERR_IO,
                  "fifo.bin");
}

TEST_F(CapiMisuse, SessionCreateFromManyThreadsOnOneConfigRunsOrSaysBusy) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    std::mutex m;
    std::vector<trainrt_session*> made;
    std::vector<std::string> problems;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 3; ++i) {
                trainrt_session* s = nullptr;
                const trainrt_status st = trainrt_session_create(&s, c);
                std::lock_guard<std::mutex> lock(m);
                if (st == TRAINRT_OK)
                    made.push_back(s);
                else if (st != TRAINRT_ERR_BUSY)
                    problems.push_back(trainrt_last_error_message());
                else if (!names(trainrt_last_error_message(), "trainrt_session_create"))
                    problems.push_back(std::string("BUSY: ") + trainrt_last_error_message());
            }
        });
    for (std::thread& t : threads) t.join();
    EXPECT_TRUE(problems.empty()) << problems.front();
    EXPECT_FALSE(made.empty());
    for (trainrt_session* s : made) {
        EXPECT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
        trainrt_session_destroy(s);
    }
}

// ====================================================================== session calls

TEST_F(CapiMisuse, SessionNullHandlesAndOutPointers) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> rows = valid_rows();
    trainrt_step_result r;
    trainrt_step_result_init(&r);
    r.step = -4242;
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    m.step = -4242;
    double loss = -3.25;
    char buf[8] = "keep";
    size_t needed = 77;
    int32_t out[4] = {-1, -1, -1, -1};
    EXPECT_NULL_ARG(trainrt_session_set_log(nullptr, nullptr, nullptr, 1), "session");
    EXPECT_NULL_ARG(trainrt_session_step(&r, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_step_tokens(&r, nullptr, rows.data(), rows.size()),
                    "session");
    EXPECT_NULL_ARG(trainrt_session_step_tokens(&r, s, nullptr, rows.size()), "tokens");
    EXPECT_NULL_ARG(trainrt_session_step_tokens(&r, s, nullptr, 0), "tokens");
    EXPECT_NULL_ARG(trainrt_session_step_masked(&r, nullptr, rows.data(), rows.size(), nullptr,
                                                nullptr, 0),
                    "session");
    EXPECT_NULL_ARG(trainrt_session_step_masked(&r, s, nullptr, rows.size(), nullptr, nullptr, 0),
                    "tokens");
    EXPECT_NULL_ARG(trainrt_session_sync(&r, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_eval(nullptr, s), "out_loss");
    EXPECT_NULL_ARG(trainrt_session_eval(&loss, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_forward(&loss, nullptr, 0, nullptr, rows.data(), kB, kT),
                    "session");
    EXPECT_NULL_ARG(trainrt_session_forward(&loss, nullptr, 0, s, nullptr, kB, kT), "tokens");
    EXPECT_NULL_ARG(trainrt_session_train(nullptr, 1, nullptr, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_request_stop(nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_metrics(nullptr, s), "out");
    EXPECT_NULL_ARG(trainrt_session_metrics(&m, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_config_dump(buf, sizeof buf, &needed, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_config_dump(nullptr, 3, &needed, s), "buf");
    EXPECT_NULL_ARG(trainrt_session_profile(buf, sizeof buf, &needed, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_profile_reset(nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_save(nullptr, 0, nullptr, nullptr, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_save(nullptr, 3, nullptr, s, nullptr), "path_buf");
    EXPECT_NULL_ARG(trainrt_session_load(nullptr, dir_.c_str()), "session");
    EXPECT_NULL_ARG(trainrt_session_load(s, nullptr), "path");
    EXPECT_NULL_ARG(trainrt_session_export(nullptr, dir_.c_str(), TRAINRT_DTYPE_F32), "session");
    EXPECT_NULL_ARG(trainrt_session_export(s, nullptr, TRAINRT_DTYPE_F32), "out_dir");
    EXPECT_NULL_ARG(trainrt_session_sample(out, 4, nullptr, rows.data(), 1, 4, nullptr),
                    "session");
    EXPECT_NULL_ARG(trainrt_session_sample(out, 4, s, nullptr, 1, 4, nullptr), "prompt");
    EXPECT_NULL_ARG(trainrt_session_sample(nullptr, 4, s, rows.data(), 1, 4, nullptr), "out");
    EXPECT_NULL_ARG(trainrt_checkpoint_latest(buf, sizeof buf, &needed, nullptr), "out_dir");
    EXPECT_NULL_ARG(trainrt_checkpoint_latest(nullptr, 3, &needed, dir_.c_str()), "buf");
    trainrt_config* c = nullptr;
    EXPECT_NULL_ARG(trainrt_config_from_checkpoint(nullptr, dir_.c_str()), "out");
    EXPECT_NULL_ARG(trainrt_config_from_checkpoint(&c, nullptr), "path");
    EXPECT_NULL_ARG(trainrt_checkpoint_export(nullptr, dir_.c_str(), 0), "path");
    EXPECT_NULL_ARG(trainrt_checkpoint_export(dir_.c_str(), nullptr, 0), "out_dir");
    EXPECT_NULL_ARG(trainrt_session_export_adapter(nullptr, dir_.c_str(), 0), "session");
    EXPECT_NULL_ARG(trainrt_session_export_adapter(s, nullptr, 0), "out_dir");
    EXPECT_NULL_ARG(trainrt_checkpoint_export_adapter(nullptr, dir_.c_str(), 0), "path");
    EXPECT_NULL_ARG(trainrt_checkpoint_export_adapter(dir_.c_str(), nullptr, 0), "out_dir");
    EXPECT_NULL_ARG(trainrt_prepare_bytes(nullptr, nullptr, nullptr, dir_.c_str(), 0.1),
                    "text_path");
    EXPECT_NULL_ARG(trainrt_prepare_bytes(nullptr, nullptr, "x.txt", nullptr, 0.1), "out_dir");
    trainrt_session* const sentinel = reinterpret_cast<trainrt_session*>(uintptr_t{0x51});
    trainrt_session* out_s = sentinel;
    EXPECT_NULL_ARG(trainrt_session_create(nullptr, configs_.front()), "out");
    EXPECT_NULL_ARG(trainrt_session_create(&out_s, nullptr), "config");
    EXPECT_EQ(out_s, sentinel);
    trainrt_session_destroy(nullptr);
    // Nothing was written and nothing ran.
    EXPECT_EQ(r.step, -4242);
    EXPECT_EQ(m.step, -4242);
    EXPECT_EQ(loss, -3.25);
    EXPECT_STREQ(buf, "keep");
    EXPECT_EQ(needed, 77u);
    EXPECT_EQ(out[0], -1);
    EXPECT_EQ(c, nullptr);
    EXPECT_EQ(step_of(s), 0);
}

TEST_F(CapiMisuse, SessionSetLogRefusesLevelsOutsideTheEnum) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    for (const int32_t level : {-1, 4, INT32_MIN, INT32_MAX})
        EXPECT_MISUSE(trainrt_session_set_log(s, nullptr, nullptr, level),
                      TRAINRT_ERR_INVALID_ARGUMENT, "min_level");
}

TEST_F(CapiMisuse, StepResultStructSizeTooSmallIsRefusedBeforeAnyWork) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> rows = valid_rows();
    for (const uint32_t size : {0u, 4u, 7u}) {
        SCOPED_TRACE(size);
        trainrt_step_result r;
        trainrt_step_result_init(&r);
        r.struct_size = size;
        r.step = -4242;
        EXPECT_MISUSE(trainrt_session_step(&r, s), TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
        EXPECT_MISUSE(trainrt_session_step_tokens(&r, s, rows.data(), rows.size()),
                      TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
        EXPECT_MISUSE(trainrt_session_step_masked(&r, s, rows.data(), rows.size(), nullptr,
                                                  nullptr, 0),
                      TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
        EXPECT_MISUSE(trainrt_session_sync(&r, s), TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
        EXPECT_EQ(r.step, -4242);
        EXPECT_EQ(r.struct_size, size);
    }
    EXPECT_EQ(step_of(s), 0) << "a refused step ran";
    // struct_size past the library's struct (a newer header): only the known bytes written.
    struct Bigger {
        trainrt_step_result r;
        unsigned char tail[64];
    } big;
    std::memset(&big, 0xA5, sizeof big);
    big.r.struct_size = UINT32_MAX;
    ASSERT_EQ(trainrt_session_step(&big.r, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(big.r.struct_size, UINT32_MAX);
    EXPECT_EQ(big.r.step, 1);
    for (unsigned char ch : big.tail) ASSERT_EQ(ch, 0xA5) << "written past the library's struct";
}

TEST_F(CapiMisuse, MetricsStructSizeTooSmallIsRefused) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    for (const uint32_t size : {0u, 1u, 7u}) {
        trainrt_metrics m;
        trainrt_metrics_init(&m);
        m.struct_size = size;
        m.step = -4242;
        EXPECT_MISUSE(trainrt_session_metrics(&m, s), TRAINRT_ERR_INVALID_ARGUMENT,
                      "struct_size");
        EXPECT_EQ(m.step, -4242);
    }
    struct Bigger {
        trainrt_metrics m;
        unsigned char tail[64];
    } big;
    std::memset(&big, 0xA5, sizeof big);
    big.m.struct_size = UINT32_MAX;
    ASSERT_EQ(trainrt_session_metrics(&big.m, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(big.m.step, 0);
    for (unsigned char ch : big.tail) ASSERT_EQ(ch, 0xA5) << "written past the library's struct";
}

TEST_F(CapiMisuse, StepTokensRefusesWrongCountsAndOutOfRangeIds) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    std::vector<int32_t> rows = valid_rows();
    ASSERT_EQ(rows.size(), kStepTokens);
    for (const size_t n : {size_t{0}, kStepTokens - 1, kStepTokens + 1, SIZE_MAX / 4, SIZE_MAX}) {
        SCOPED_TRACE(n);
        EXPECT_MISUSE(trainrt_session_step_tokens(nullptr, s, rows.data(), n),
                      TRAINRT_ERR_INVALID_ARGUMENT, "tokens");
    }
    for (const int32_t id : {-1, kV, INT32_MAX, INT32_MIN}) {
        SCOPED_TRACE(id);
        rows[7] = id;
        EXPECT_MISUSE(trainrt_session_step_tokens(nullptr, s, rows.data(), rows.size()),
                      TRAINRT_ERR_INVALID_ARGUMENT, std::to_string(id));
        EXPECT_TRUE(names(last_error(), "7")) << "index 7 in: " << last_error();
    }
    EXPECT_EQ(step_of(s), 0);
}

// trainrt_session_step_masked: wrong counts of tokens and of mask/positions values, ids out
// of range (masked or not), a mask that counts nothing, positions that do not start at 0 or
// jump — each refused before anything runs; then what passes, packed rows included.
TEST_F(CapiMisuse, StepMaskedRefusesWrongSizesEmptyMasksAndBadPositions) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    std::vector<int32_t> rows = valid_rows();
    constexpr size_t kMask = static_cast<size_t>(kB) * kT;
    std::vector<uint8_t> mask(kMask, 1);
    std::vector<int32_t> pos(kMask);
    for (size_t i = 0; i < kMask; ++i) pos[i] = static_cast<int32_t>(i % kT);
    for (const size_t n : {size_t{0}, kStepTokens - 1, kStepTokens + 1, SIZE_MAX}) {
        SCOPED_TRACE(n);
        EXPECT_MISUSE(trainrt_session_step_masked(nullptr, s, rows.data(), n, mask.data(),
                                                  nullptr, kMask),
                      TRAINRT_ERR_INVALID_ARGUMENT, "tokens");
    }
    for (const size_t n : {size_t{0}, kMask - 1, kMask + 1, kStepTokens, SIZE_MAX}) {
        SCOPED_TRACE(n);
        EXPECT_MISUSE(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(),
                                                  mask.data(), nullptr, n),
                      TRAINRT_ERR_INVALID_ARGUMENT, "n_mask");
        EXPECT_MISUSE(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), nullptr,
                                                  pos.data(), n),
                      TRAINRT_ERR_INVALID_ARGUMENT, "n_mask");
    }
    EXPECT_MISUSE(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), nullptr,
                                              nullptr, kMask - 1),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_mask");
    for (const int32_t id : {-1, -100, kV, INT32_MIN}) {  // a masked target is still an id
        SCOPED_TRACE(id);
        std::vector<int32_t> bad = rows;
        bad[kT] = id;  // row 0's last target
        std::vector<uint8_t> m = mask;
        m[kT - 1] = 0;
        EXPECT_MISUSE(trainrt_session_step_masked(nullptr, s, bad.data(), bad.size(), m.data(),
                                                  nullptr, kMask),
                      TRAINRT_ERR_INVALID_ARGUMENT, std::to_string(id));
    }
    const std::vector<uint8_t> none(kMask, 0);
    EXPECT_MISUSE(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), none.data(),
                                              nullptr, kMask),
                  TRAINRT_ERR_INVALID_ARGUMENT, "ignored");
    std::vector<int32_t> p = pos;
    p[kT] = 3;  // row 1 starts at 3
    EXPECT_MISUSE(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), mask.data(),
                                              p.data(), kMask),
                  TRAINRT_ERR_INVALID_ARGUMENT, "row 1, column 0");
    p = pos;
    p[2] = -1;
    EXPECT_MISUSE(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), mask.data(),
                                              p.data(), kMask),
                  TRAINRT_ERR_INVALID_ARGUMENT, "column 2");
    EXPECT_EQ(step_of(s), 0);
    // What passes: NULL mask and positions (n_mask 0 or the count), the plain positions.
    EXPECT_EQ(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), nullptr, nullptr,
                                          0),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), mask.data(),
                                          pos.data(), kMask),
              TRAINRT_OK)
        << last_error();
    p = pos;
    p[4] = 0;  // 0 1 2 3 0 1 2 3: a second sequence in row 0 (packed examples)
    p[5] = 1;
    p[6] = 2;
    p[7] = 3;
    EXPECT_EQ(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), mask.data(),
                                          p.data(), kMask),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(step_of(s), 3);
}

TEST_F(CapiMisuse, ForwardRefusesExtremeShapesAndShortLogitBuffers) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> rows = valid_rows();
    const size_t n = static_cast<size_t>(kB) * kT * kV;
    std::vector<float> logits(n, 7.0f);
    double loss = -3.25;
    for (const int64_t bad : {int64_t{0}, int64_t{-1}, INT64_MIN, INT64_MAX,
                              int64_t{1} << 32, int64_t{1} << 62}) {
        SCOPED_TRACE(bad);
        EXPECT_MISUSE(trainrt_session_forward(&loss, logits.data(), n, s, rows.data(), bad, kT),
                      TRAINRT_ERR_INVALID_ARGUMENT, "rows");
        EXPECT_MISUSE(trainrt_session_forward(&loss, logits.data(), n, s, rows.data(), kB, bad),
                      TRAINRT_ERR_INVALID_ARGUMENT, "seq_len");
    }
    EXPECT_MISUSE(trainrt_session_forward(&loss, logits.data(), n, s, rows.data(), kB + 1, kT),
                  TRAINRT_ERR_INVALID_ARGUMENT, "rows");
    EXPECT_MISUSE(trainrt_session_forward(&loss, logits.data(), n, s, rows.data(), kB, kT + 1),
                  TRAINRT_ERR_INVALID_ARGUMENT, "seq_len");
    for (const size_t cap : {size_t{0}, size_t{1}, n - 1})
        EXPECT_MISUSE(trainrt_session_forward(&loss, logits.data(), cap, s, rows.data(), kB, kT),
                      TRAINRT_ERR_INVALID_ARGUMENT, "logits");
    std::vector<int32_t> bad = rows;
    bad[kT] = INT32_MIN;
    EXPECT_MISUSE(trainrt_session_forward(&loss, nullptr, 0, s, bad.data(), kB, kT),
                  TRAINRT_ERR_INVALID_ARGUMENT, std::to_string(kT));
    EXPECT_EQ(loss, -3.25);
    for (float v : logits) ASSERT_EQ(v, 7.0f);
    // No logits buffer: any cap is ignored.
    EXPECT_EQ(trainrt_session_forward(&loss, nullptr, SIZE_MAX, s, rows.data(), kB, kT),
              TRAINRT_OK)
        << last_error();
    EXPECT_TRUE(std::isfinite(loss));
}

TEST_F(CapiMisuse, SampleRefusesBadBuffersCountsAndOptions) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const int32_t prompt[] = {3, 17, 8};
    int32_t out[8];
    std::fill(std::begin(out), std::end(out), -1);
    EXPECT_MISUSE(trainrt_session_sample(out, 8, s, prompt, 0, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "prompt");
    EXPECT_MISUSE(trainrt_session_sample(nullptr, 8, s, prompt, 3, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "out");
    EXPECT_MISUSE(trainrt_session_sample(out, 3, s, prompt, 3, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_new");
    EXPECT_MISUSE(trainrt_session_sample(out, 0, s, prompt, 3, 1, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_new");
    // Counts no buffer can hold: refused before anything is allocated or read.
    EXPECT_MISUSE(trainrt_session_sample(out, SIZE_MAX, s, prompt, 3, SIZE_MAX, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_new");
    EXPECT_MISUSE(trainrt_session_sample(out, SIZE_MAX / 2, s, prompt, 3, SIZE_MAX / 2, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_new");
    EXPECT_MISUSE(trainrt_session_sample(out, 8, s, prompt, SIZE_MAX, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_prompt");
    const int32_t bad_prompt[] = {3, kV, 8};
    EXPECT_MISUSE(trainrt_session_sample(out, 8, s, bad_prompt, 3, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, std::to_string(kV));
    for (const uint32_t size : {0u, 4u, 7u}) {
        trainrt_sample_options o;
        trainrt_sample_options_init(&o);
        o.struct_size = size;
        EXPECT_MISUSE(trainrt_session_sample(out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
    }
    for (const double t : {std::nan(""), -std::nan(""), HUGE_VAL, -HUGE_VAL, -1.0, -0.0001}) {
        SCOPED_TRACE(t);
        trainrt_sample_options o;
        trainrt_sample_options_init(&o);
        o.temperature = t;
        EXPECT_MISUSE(trainrt_session_sample(out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "temperature");
    }
    // The version field of an input struct is not checked (struct_size says what is there).
    for (const uint32_t version : {0u, 999u, UINT32_MAX}) {
        trainrt_sample_options o;
        trainrt_sample_options_init(&o);
        o.version = version;
        o.top_k = -1;  // still read and refused: the struct was read whatever its version
        EXPECT_MISUSE(trainrt_session_sample(out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "top_k");
    }
    for (const int32_t k : {-1, INT32_MIN}) {
        trainrt_sample_options o;
        trainrt_sample_options_init(&o);
        o.top_k = k;
        EXPECT_MISUSE(trainrt_session_sample(out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "top_k");
    }
    for (int32_t v : out) ASSERT_EQ(v, -1) << "out written by a refused call";
    // Accepted extremes: top_k past the vocabulary (all tokens), a huge struct_size (only the
    // known fields are read), n_new = 0 with no buffer, a prompt longer than the context.
    struct Bigger {
        trainrt_sample_options o;
        unsigned char tail[64];
    } big;
    std::memset(&big, 0xA5, sizeof big);
    trainrt_sample_options_init(&big.o);
    big.o.struct_size = UINT32_MAX;
    big.o.top_k = INT32_MAX;
    ASSERT_EQ(trainrt_session_sample(out, 8, s, prompt, 3, 8, &big.o), TRAINRT_OK) << last_error();
    for (int32_t v : out) EXPECT_TRUE(v >= 0 && v < kV) << v;
    EXPECT_EQ(trainrt_session_sample(nullptr, 0, s, prompt, 3, 0, nullptr), TRAINRT_OK)
        << last_error();
    std::vector<int32_t> long_prompt(1000, 5);
    EXPECT_EQ(trainrt_session_sample(out, 2, s, long_prompt.data(), long_prompt.size(), 2, nullptr),
              TRAINRT_OK)
        << last_error();
}

// trainrt_session_generate: what sample refuses, plus out_n, stop ids without their array or
// too many of them; and sample refuses stop ids (they go to generate).
TEST_F(CapiMisuse, GenerateRefusesWhatSampleRefusesAndBadStopIds) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const int32_t prompt[] = {3, 17, 8};
    int32_t out[8];
    std::fill(std::begin(out), std::end(out), -1);
    size_t n = 77;
    EXPECT_NULL_ARG(trainrt_session_generate(nullptr, out, 8, s, prompt, 3, 4, nullptr), "out_n");
    EXPECT_NULL_ARG(trainrt_session_generate(&n, out, 8, nullptr, prompt, 3, 4, nullptr),
                    "session");
    EXPECT_EQ(n, 0u) << "*out_n is 0 after a refused call";
    EXPECT_NULL_ARG(trainrt_session_generate(&n, out, 8, s, nullptr, 3, 4, nullptr), "prompt");
    EXPECT_NULL_ARG(trainrt_session_generate(&n, nullptr, 8, s, prompt, 3, 4, nullptr), "out");
    EXPECT_MISUSE(trainrt_session_generate(&n, out, 8, s, prompt, 0, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "prompt");
    EXPECT_MISUSE(trainrt_session_generate(&n, out, 3, s, prompt, 3, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_new");
    EXPECT_MISUSE(trainrt_session_generate(&n, out, SIZE_MAX, s, prompt, 3, SIZE_MAX, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_new");
    EXPECT_MISUSE(trainrt_session_generate(&n, out, 8, s, prompt, SIZE_MAX, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "n_prompt");
    const int32_t bad_prompt[] = {3, kV, 8};
    EXPECT_MISUSE(trainrt_session_generate(&n, out, 8, s, bad_prompt, 3, 4, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, std::to_string(kV));
    const int32_t stops[] = {5, 6};
    {
        trainrt_sample_options o;
        trainrt_sample_options_init(&o);
        o.n_stop_ids = 2;  // stop_ids NULL
        EXPECT_MISUSE(trainrt_session_generate(&n, out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "stop_ids");
        o.stop_ids = stops;
        o.n_stop_ids = SIZE_MAX;
        EXPECT_MISUSE(trainrt_session_generate(&n, out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "n_stop_ids");
        o.n_stop_ids = 2;
        o.temperature = -1.0;
        EXPECT_MISUSE(trainrt_session_generate(&n, out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "temperature");
        // sample generates exactly n_new ids: stop ids are refused, naming generate.
        o.temperature = 1.0;
        EXPECT_MISUSE(trainrt_session_sample(out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "trainrt_session_generate");
        EXPECT_MISUSE(trainrt_session_sample(out, 8, s, prompt, 3, 4, &o),
                      TRAINRT_ERR_INVALID_ARGUMENT, "n_stop_ids");
    }
    for (int32_t v : out) ASSERT_EQ(v, -1) << "out written by a refused call";
    // A version-1 caller (32 bytes, no stop fields): whatever follows is not read.
    trainrt_sample_options v1;
    trainrt_sample_options_init(&v1);
    v1.struct_size = offsetof(trainrt_sample_options, stop_ids);
    std::memset(&v1.stop_ids, 0xA5, sizeof v1 - offsetof(trainrt_sample_options, stop_ids));
    ASSERT_EQ(trainrt_session_generate(&n, out, 8, s, prompt, 3, 4, &v1), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(n, 4u);
    ASSERT_EQ(trainrt_session_sample(out, 8, s, prompt, 3, 4, &v1), TRAINRT_OK) << last_error();
    // max_new = 0 with no buffer; stop ids outside the vocabulary (they never match).
    EXPECT_EQ(trainrt_session_generate(&n, nullptr, 0, s, prompt, 3, 0, nullptr), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(n, 0u);
    const int32_t far[] = {-5, kV, INT32_MAX};
    trainrt_sample_options o;
    trainrt_sample_options_init(&o);
    o.stop_ids = far;
    o.n_stop_ids = 3;
    ASSERT_EQ(trainrt_session_generate(&n, out, 8, s, prompt, 3, 6, &o), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(n, 6u);
}

TEST_F(CapiMisuse, TrainTakesAnyStepCount) {
    trainrt_session* s = make_session({{"train.steps", "2"}});
    ASSERT_NE(s, nullptr);
    // n_steps <= 0: up to train.steps.
    EXPECT_EQ(trainrt_session_train(s, INT64_MIN, nullptr, nullptr), TRAINRT_OK) << last_error();
    EXPECT_EQ(step_of(s), 2);
    EXPECT_EQ(trainrt_session_train(s, -1, nullptr, nullptr), TRAINRT_OK) << last_error();
    EXPECT_EQ(step_of(s), 2);
    // INT64_MAX: "until stopped" (no overflow of step + n); the callback stops it.
    auto stop_at_once = [](const trainrt_progress*, void*) -> int32_t { return 1; };
    EXPECT_EQ(trainrt_session_train(s, INT64_MAX, stop_at_once, nullptr), TRAINRT_STOPPED)
        << last_error();
    EXPECT_EQ(step_of(s), 3);
    EXPECT_EQ(trainrt_session_train(s, INT64_MAX - 2, stop_at_once, nullptr), TRAINRT_STOPPED)
        << last_error();
    EXPECT_EQ(step_of(s), 4);
}

TEST_F(CapiMisuse, CallsBeforeAnyStepAndAfterStopsAreWellDefined) {
    trainrt_session* s = make_session({{"train.out_dir", "\"out\""}});
    ASSERT_NE(s, nullptr);
    trainrt_step_result r;
    trainrt_step_result_init(&r);
    ASSERT_EQ(trainrt_session_sync(&r, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.step, 0) << "no step completed yet";
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    ASSERT_EQ(trainrt_session_metrics(&m, s), TRAINRT_OK);
    EXPECT_EQ(m.step, 0);
    EXPECT_TRUE(std::isnan(m.last_loss));
    EXPECT_TRUE(std::isnan(m.last_val_loss));
    double loss = 0;
    EXPECT_EQ(trainrt_session_eval(&loss, s), TRAINRT_OK) << last_error();
    const int32_t prompt[] = {1};
    int32_t out[2];
    EXPECT_EQ(trainrt_session_sample(out, 2, s, prompt, 1, 2, nullptr), TRAINRT_OK);
    EXPECT_EQ(trainrt_session_export(s, (dir_ + "/hf0").c_str(), TRAINRT_DTYPE_BF16), TRAINRT_OK)
        << last_error();
    char path[4096];
    EXPECT_EQ(trainrt_session_save(path, sizeof path, nullptr, s, nullptr), TRAINRT_OK)
        << last_error();
    EXPECT_NE(std::string(path).find("step_00000000"), std::string::npos) << path;
    // Stop requests with no train running: any number of them stop the next train at once.
    EXPECT_EQ(trainrt_session_request_stop(s), TRAINRT_OK);
    EXPECT_EQ(trainrt_session_request_stop(s), TRAINRT_OK);
    EXPECT_EQ(trainrt_session_train(s, 5, nullptr, nullptr), TRAINRT_STOPPED);
    EXPECT_EQ(step_of(s), 0);
    // Used up: train after the stopped train runs.
    EXPECT_EQ(trainrt_session_train(s, 2, nullptr, nullptr), TRAINRT_OK) << last_error();
    EXPECT_EQ(step_of(s), 2);
    // A failed load leaves the session usable.
    EXPECT_EQ(trainrt_session_load(s, (dir_ + "/missing").c_str()), TRAINRT_ERR_IO);
    EXPECT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(step_of(s), 3);
}

// trainrt.h: a stop request made while no train() runs "stops the next one at once", and
// request_stop "interrupts a running eval". An eval that starts after the request was made is
// not running when it arrives: it must not be cancelled by it (nor use it up).
// (Found by this suite: eval once used up a pending request and cancelled itself.)
TEST_F(CapiMisuse, AStopRequestMadeBeforeAnEvalDoesNotCancelIt) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_request_stop(s), TRAINRT_OK);
    double loss = -1;
    EXPECT_EQ(trainrt_session_eval(&loss, s), TRAINRT_OK) << last_error();
    EXPECT_TRUE(std::isfinite(loss));
    // The request is still there for the next train().
    EXPECT_EQ(trainrt_session_train(s, 3, nullptr, nullptr), TRAINRT_STOPPED);
    EXPECT_EQ(step_of(s), 0);
}

TEST_F(CapiMisuse, TrainRefusesAMetricsFileThatIsAFifo) {
    fs::create_directories(dir_ + "/out");
    make_fifo(dir_ + "/out/metrics.jsonl");
    trainrt_session* s = make_session({{"train.out_dir", "\"out\""}});
    ASSERT_NE(s, nullptr);
    EXPECT_MISUSE(trainrt_session_train(s, 2, nullptr, nullptr), TRAINRT_ERR_IO, "metrics.jsonl");
    EXPECT_EQ(step_of(s), 0);
}

// The whole evals: NULLs, a struct_size too small (refused before any work, the struct
// untouched), one larger than the library's (only its bytes written), too few tokens, ids
// out of range, text that is not UTF-8, a tokenizer that does not load.
TEST_F(CapiMisuse, WholeEvalRefusesNullsStructSizesAndBadInput) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> rows = valid_rows();
    trainrt_eval_result e;
    trainrt_eval_result_init(&e);
    EXPECT_EQ(e.struct_size, sizeof e);
    EXPECT_EQ(e.version, static_cast<uint32_t>(TRAINRT_EVAL_RESULT_VERSION));
    trainrt_eval_result_init(nullptr);  // accepted, does nothing
    EXPECT_NULL_ARG(trainrt_session_eval_whole(nullptr, s), "out");
    EXPECT_NULL_ARG(trainrt_session_eval_whole(&e, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_eval_tokens(nullptr, s, rows.data(), rows.size()), "out");
    EXPECT_NULL_ARG(trainrt_session_eval_tokens(&e, nullptr, rows.data(), rows.size()), "session");
    EXPECT_NULL_ARG(trainrt_session_eval_tokens(&e, s, nullptr, rows.size()), "tokens");
    EXPECT_NULL_ARG(trainrt_session_eval_text(nullptr, s, "ab", 2, nullptr), "out");
    EXPECT_NULL_ARG(trainrt_session_eval_text(&e, nullptr, "ab", 2, nullptr), "session");
    EXPECT_MISUSE(trainrt_session_eval_text(&e, s, nullptr, 2, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "text");
    for (const uint32_t size : {0u, 4u, 7u}) {
        SCOPED_TRACE(size);
        trainrt_eval_result r;
        trainrt_eval_result_init(&r);
        r.struct_size = size;
        r.tokens = -4242;
        EXPECT_MISUSE(trainrt_session_eval_whole(&r, s), TRAINRT_ERR_INVALID_ARGUMENT,
                      "struct_size");
        EXPECT_MISUSE(trainrt_session_eval_tokens(&r, s, rows.data(), rows.size()),
                      TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
        EXPECT_MISUSE(trainrt_session_eval_text(&r, s, "ab", 2, nullptr),
                      TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
        EXPECT_EQ(r.tokens, -4242);
        EXPECT_EQ(r.struct_size, size);
    }
    struct Bigger {
        trainrt_eval_result r;
        unsigned char tail[64];
    } big;
    std::memset(&big, 0xA5, sizeof big);
    big.r.struct_size = UINT32_MAX;
    ASSERT_EQ(trainrt_session_eval_tokens(&big.r, s, rows.data(), rows.size()), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(big.r.struct_size, UINT32_MAX);
    EXPECT_EQ(big.r.tokens, static_cast<int64_t>(rows.size()) - 1);
    for (unsigned char ch : big.tail) ASSERT_EQ(ch, 0xA5) << "written past the library's struct";
    // A caller's older, smaller struct: only its fields are written.
    struct Old {
        trainrt_eval_result r;  // only its first 16 bytes are the caller's
    } old;
    std::memset(&old, 0xA5, sizeof old);
    old.r.struct_size = 16;
    ASSERT_EQ(trainrt_session_eval_tokens(&old.r, s, rows.data(), rows.size()), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(old.r.struct_size, 16u);
    EXPECT_GT(old.r.loss, 0.0);
    const unsigned char* past = reinterpret_cast<const unsigned char*>(&old.r) + 16;
    for (size_t i = 0; i < sizeof old - 16; ++i) ASSERT_EQ(past[i], 0xA5) << "byte " << 16 + i;

    trainrt_eval_result r = TRAINRT_EVAL_RESULT_INIT;
    r.tokens = -4242;
    for (const size_t n : {size_t{0}, size_t{1}})
        EXPECT_MISUSE(trainrt_session_eval_tokens(&r, s, rows.data(), n),
                      TRAINRT_ERR_INVALID_ARGUMENT, "at least 2");
    EXPECT_MISUSE(trainrt_session_eval_text(&r, s, "\x01", 1, nullptr), TRAINRT_ERR_INVALID_ARGUMENT,
                  "at least 2");
    std::vector<int32_t> bad = rows;
    for (const int32_t id : {-1, kV, INT32_MAX, INT32_MIN}) {
        SCOPED_TRACE(id);
        bad[5] = id;
        EXPECT_MISUSE(trainrt_session_eval_tokens(&r, s, bad.data(), bad.size()),
                      TRAINRT_ERR_INVALID_ARGUMENT, std::to_string(id));
    }
    EXPECT_MISUSE(trainrt_session_eval_text(&r, s, "ab", 2, (dir_ + "/no-such-tok").c_str()),
                  TRAINRT_ERR_IO, "no-such-tok");
    EXPECT_EQ(r.tokens, -4242) << "a refused eval wrote its result";
}

TEST_F(CapiMisuse, EvalAndStepWithoutDataAreConfigErrors) {
    trainrt_session* s = make_session({{"data.val", "\"\""}, {"data.train", "\"\""}});
    ASSERT_NE(s, nullptr);
    double loss = -3.25;
    EXPECT_MISUSE(trainrt_session_eval(&loss, s), TRAINRT_ERR_CONFIG, "data.val");
    EXPECT_EQ(loss, -3.25);
    trainrt_eval_result e = TRAINRT_EVAL_RESULT_INIT;
    EXPECT_MISUSE(trainrt_session_eval_whole(&e, s), TRAINRT_ERR_CONFIG, "data.val");
    EXPECT_MISUSE(trainrt_session_step(nullptr, s), TRAINRT_ERR_CONFIG, "data.train");
    EXPECT_MISUSE(trainrt_session_train(s, 3, nullptr, nullptr), TRAINRT_ERR_CONFIG, "data.train");
    EXPECT_EQ(step_of(s), 0);
}

// ====================================================================== checkpoints, export

TEST_F(CapiMisuse, SaveRefusesExistingDirsAndUnreachablePaths) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    char path[64] = "keep";
    size_t needed = 77;
    EXPECT_MISUSE(trainrt_session_save(path, sizeof path, &needed, s, nullptr), TRAINRT_ERR_CONFIG,
                  "train.out_dir");
    EXPECT_MISUSE(trainrt_session_save(path, sizeof path, &needed, s, ""), TRAINRT_ERR_CONFIG,
                  "train.out_dir");
    EXPECT_MISUSE(trainrt_session_save(path, sizeof path, &needed, s, dir_.c_str()),
                  TRAINRT_ERR_IO, dir_);
    write_text(dir_ + "/file", "x");
    EXPECT_MISUSE(trainrt_session_save(path, sizeof path, &needed, s, (dir_ + "/file").c_str()),
                  TRAINRT_ERR_IO, "file");
    EXPECT_MISUSE(trainrt_session_save(path, sizeof path, &needed, s, (dir_ + "/file/ck").c_str()),
                  TRAINRT_ERR_IO, "file/ck");
    EXPECT_MISUSE(trainrt_session_save(path, sizeof path, &needed, s,
                                       long_path(dir_, 5000).c_str()),
                  TRAINRT_ERR_IO, "leaf");
    EXPECT_STREQ(path, "keep");
    EXPECT_EQ(needed, 77u);
    // cap 1: the path is cut to "", needed says how long it is.
    const std::string ck = dir_ + "/ck";
    char one[1] = {'z'};
    ASSERT_EQ(trainrt_session_save(one, 1, &needed, s, ck.c_str()), TRAINRT_OK) << last_error();
    EXPECT_EQ(one[0], '\0');
    EXPECT_EQ(needed, ck.size());
}

TEST_F(CapiMisuse, LoadRefusesMissingFilesFifosAndGarbageAndLeavesTheSessionAlone) {
    const std::string ck = make_checkpoint("ck");
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK);
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/missing").c_str()), TRAINRT_ERR_IO, "missing");
    EXPECT_MISUSE(trainrt_session_load(s, ""), TRAINRT_ERR_IO, "checkpoint");
    write_text(dir_ + "/file", "x");
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/file").c_str()), TRAINRT_ERR_IO, "file");
    make_fifo(dir_ + "/fifo");
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/fifo").c_str()), TRAINRT_ERR_IO, "fifo");
    fs::create_directories(dir_ + "/empty");
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/empty").c_str()), TRAINRT_ERR_IO, "empty");
    EXPECT_MISUSE(trainrt_session_load(s, long_path(dir_, 5000).c_str()), TRAINRT_ERR_IO, "leaf");
    // A run folder whose `latest` is garbage, a FIFO, a directory, or names nothing.
    fs::create_directories(dir_ + "/run1");
    write_text(dir_ + "/run1/latest", "../../etc\n");
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/run1").c_str()), TRAINRT_ERR_FORMAT, "latest");
    write_text(dir_ + "/run1/latest", std::string(100000, 'a'));
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/run1").c_str()), TRAINRT_ERR_FORMAT, "latest");
    write_text(dir_ + "/run1/latest", "step_00000009\n");
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/run1").c_str()), TRAINRT_ERR_FORMAT,
                  "step_00000009");
    fs::create_directories(dir_ + "/run2");
    make_fifo(dir_ + "/run2/latest");
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/run2").c_str()), TRAINRT_ERR_FORMAT, "latest");
    fs::create_directories(dir_ + "/run3/latest");
    EXPECT_MISUSE(trainrt_session_load(s, (dir_ + "/run3").c_str()), TRAINRT_ERR_FORMAT, "latest");
    EXPECT_EQ(step_of(s), 2) << "a refused load changed the session";
    ASSERT_EQ(trainrt_session_load(s, ck.c_str()), TRAINRT_OK) << last_error();
    EXPECT_EQ(step_of(s), 1);
}

// A checkpoint file swapped for a FIFO: refused as corrupt (the manifest check wants regular
// files), never opened and waited on.
TEST_F(CapiMisuse, LoadRefusesACheckpointWhoseFilesAreFifos) {
    const std::string ck = make_checkpoint("ck");
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    for (const char* name : {"model.safetensors", "optimizer.safetensors", "state.json",
                             "config.json", "MANIFEST.sha256"}) {
        SCOPED_TRACE(name);
        const std::string copy = dir_ + "/ck_" + name;
        fs::copy(ck, copy, fs::copy_options::recursive);
        ASSERT_TRUE(fs::exists(copy + "/" + name)) << "the checkpoint has no " << name;
        make_fifo(copy + "/" + name);
        EXPECT_FAILS(trainrt_session_load(s, copy.c_str()));
        EXPECT_NE(last_error().find(name), std::string::npos) << last_error();
        EXPECT_FAILS(trainrt_checkpoint_export(copy.c_str(), (dir_ + "/hf").c_str(), 0));
        EXPECT_NE(last_error().find(name), std::string::npos) << last_error();
        trainrt_config* c = nullptr;
        EXPECT_FAILS(trainrt_config_from_checkpoint(&c, copy.c_str()));
        EXPECT_NE(last_error().find(name), std::string::npos) << last_error();
        EXPECT_EQ(c, nullptr);
    }
    EXPECT_EQ(step_of(s), 0);
}

TEST_F(CapiMisuse, CheckpointLatestOfOddFolders) {
    char buf[64] = "keep";
    size_t needed = 77;
    // No folder, or no `latest` yet: "" and OK.
    EXPECT_EQ(trainrt_checkpoint_latest(buf, sizeof buf, &needed, (dir_ + "/none").c_str()),
              TRAINRT_OK)
        << last_error();
    EXPECT_STREQ(buf, "");
    EXPECT_EQ(needed, 0u);
    write_text(dir_ + "/file", "x");
    EXPECT_EQ(trainrt_checkpoint_latest(buf, sizeof buf, &needed, (dir_ + "/file").c_str()),
              TRAINRT_OK)
        << last_error();
    std::strcpy(buf, "keep");
    needed = 77;
    make_fifo(dir_ + "/latest");
    EXPECT_MISUSE(trainrt_checkpoint_latest(buf, sizeof buf, &needed, dir_.c_str()),
                  TRAINRT_ERR_FORMAT, "latest");
    fs::remove(dir_ + "/latest");
    write_text(dir_ + "/latest", "step_1\nstep_2\n");
    EXPECT_MISUSE(trainrt_checkpoint_latest(buf, sizeof buf, &needed, dir_.c_str()),
                  TRAINRT_ERR_FORMAT, "latest");
    EXPECT_STREQ(buf, "keep");
    EXPECT_EQ(needed, 77u);
    EXPECT_EQ(trainrt_checkpoint_latest(nullptr, 0, nullptr, ""), TRAINRT_OK) << last_error();
}

TEST_F(CapiMisuse, ConfigFromCheckpointRefusesWhatIsNotACheckpoint) {
    trainrt_config* const sentinel = reinterpret_cast<trainrt_config*>(uintptr_t{0x5e});
    trainrt_config* c = sentinel;
    EXPECT_MISUSE(trainrt_config_from_checkpoint(&c, (dir_ + "/missing").c_str()), TRAINRT_ERR_IO,
                  "missing");
    EXPECT_MISUSE(trainrt_config_from_checkpoint(&c, (dir_ + "/train.bin").c_str()),
                  TRAINRT_ERR_IO, "train.bin");
    EXPECT_MISUSE(trainrt_config_from_checkpoint(&c, dir_.c_str()), TRAINRT_ERR_IO, dir_);
    EXPECT_EQ(c, sentinel);
}

// trainrt_checkpoint_export_gguf: NULLs, an empty file name, a type outside the four, a notes
// buffer without its pointer, a checkpoint that is not one, an unwritable place: each an
// error naming it, nothing written, no crash.
TEST_F(CapiMisuse, GgufExportRefusesBadArgumentsAndWritesNothing) {
    const std::string ck = make_checkpoint("ck");
    const std::string out = dir_ + "/m.gguf";
    char notes[64];
    size_t needed = 777;
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf(nullptr, 0, nullptr, nullptr, out.c_str(), "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "path");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf(nullptr, 0, nullptr, ck.c_str(), nullptr, "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "gguf_path");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf(nullptr, 0, nullptr, ck.c_str(), "", "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "gguf_path");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf(nullptr, 0, nullptr, ck.c_str(), out.c_str(), nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "type");
    for (const char* type : {"", "q4_0", "F16", "fp16"})
        EXPECT_MISUSE(trainrt_checkpoint_export_gguf(nullptr, 0, nullptr, ck.c_str(), out.c_str(), type),
                      TRAINRT_ERR_INVALID_ARGUMENT, "f32, f16, bf16 or q8_0");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf(nullptr, 8, &needed, ck.c_str(), out.c_str(), "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "notes");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf(notes, sizeof notes, &needed,
                                                 (dir_ + "/missing").c_str(), out.c_str(), "f16"),
                  TRAINRT_ERR_IO, "missing");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf(notes, sizeof notes, &needed, ck.c_str(),
                                                 (dir_ + "/no/such/dir/m.gguf").c_str(), "f16"),
                  TRAINRT_ERR_IO, "m.gguf");
    EXPECT_EQ(needed, 777u);
    EXPECT_FALSE(fs::exists(out));
    // And the call that works: the file, and a note (this run had no tokenizer).
    ASSERT_EQ(trainrt_checkpoint_export_gguf(notes, sizeof notes, &needed, ck.c_str(), out.c_str(),
                                             "q8_0"),
              TRAINRT_OK)
        << trainrt_last_error_message();
    EXPECT_TRUE(fs::exists(out));
    EXPECT_GT(needed, 0u);
    EXPECT_EQ(std::string(notes).size(), std::min(needed, sizeof notes - 1));
}

// trainrt_checkpoint_export_gguf_lora: the same refusals, and a run without adapters (this
// checkpoint's) is one too; nothing written.
TEST_F(CapiMisuse, GgufLoraExportRefusesBadArgumentsAndWritesNothing) {
    const std::string ck = make_checkpoint("ck");
    const std::string out = dir_ + "/a.gguf";
    char notes[64];
    size_t needed = 777;
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf_lora(nullptr, 0, nullptr, nullptr, out.c_str(),
                                                      "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "path");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf_lora(nullptr, 0, nullptr, ck.c_str(), nullptr,
                                                      "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "gguf_path");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf_lora(nullptr, 0, nullptr, ck.c_str(), "", "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "gguf_path");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf_lora(nullptr, 0, nullptr, ck.c_str(), out.c_str(),
                                                      nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, "type");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf_lora(nullptr, 0, nullptr, ck.c_str(), out.c_str(),
                                                      "q4_0"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "f32, f16, bf16 or q8_0");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf_lora(nullptr, 8, &needed, ck.c_str(), out.c_str(),
                                                      "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "notes");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf_lora(notes, sizeof notes, &needed,
                                                      (dir_ + "/missing").c_str(), out.c_str(),
                                                      "f16"),
                  TRAINRT_ERR_IO, "missing");
    EXPECT_MISUSE(trainrt_checkpoint_export_gguf_lora(notes, sizeof notes, &needed, ck.c_str(),
                                                      out.c_str(), "f16"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "lora.rank = 0");
    EXPECT_EQ(needed, 777u);
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(CapiMisuse, ExportRefusesDtypesOutsideTheEnumAndUnwritablePlaces) {
    const std::string ck = make_checkpoint("ck");
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    for (const int32_t dtype : {-1, 2, 3, INT32_MIN, INT32_MAX}) {
        SCOPED_TRACE(dtype);
        EXPECT_MISUSE(trainrt_session_export(s, (dir_ + "/hf").c_str(), dtype),
                      TRAINRT_ERR_INVALID_ARGUMENT, "dtype");
        EXPECT_MISUSE(trainrt_checkpoint_export(ck.c_str(), (dir_ + "/hf").c_str(), dtype),
                      TRAINRT_ERR_INVALID_ARGUMENT, "dtype");
        EXPECT_MISUSE(trainrt_session_export_adapter(s, (dir_ + "/hf").c_str(), dtype),
                      TRAINRT_ERR_INVALID_ARGUMENT, "dtype");
        EXPECT_MISUSE(trainrt_checkpoint_export_adapter(ck.c_str(), (dir_ + "/hf").c_str(), dtype),
                      TRAINRT_ERR_INVALID_ARGUMENT, "dtype");
    }
    // A run without LoRA adapters has none to export (and writes nothing).
    EXPECT_MISUSE(trainrt_session_export_adapter(s, (dir_ + "/hf").c_str(), TRAINRT_DTYPE_F32),
                  TRAINRT_ERR_INVALID_ARGUMENT, "lora.rank = 0");
    EXPECT_MISUSE(trainrt_checkpoint_export_adapter(ck.c_str(), (dir_ + "/hf").c_str(),
                                                    TRAINRT_DTYPE_F32),
                  TRAINRT_ERR_INVALID_ARGUMENT, "lora.rank = 0");
    EXPECT_MISUSE(trainrt_session_export_adapter(s, "", TRAINRT_DTYPE_F32),
                  TRAINRT_ERR_INVALID_ARGUMENT, "out_dir");
    EXPECT_FALSE(fs::exists(dir_ + "/hf"));
    write_text(dir_ + "/file", "x");
    EXPECT_MISUSE(trainrt_session_export(s, (dir_ + "/file").c_str(), TRAINRT_DTYPE_F32),
                  TRAINRT_ERR_IO, "file");
    EXPECT_MISUSE(trainrt_session_export(s, (dir_ + "/file/hf").c_str(), TRAINRT_DTYPE_F32),
                  TRAINRT_ERR_IO, "file/hf");
    EXPECT_MISUSE(trainrt_session_export(s, "", TRAINRT_DTYPE_F32), TRAINRT_ERR_INVALID_ARGUMENT,
                  "out_dir");
    EXPECT_MISUSE(trainrt_checkpoint_export(ck.c_str(), "", TRAINRT_DTYPE_F32),
                  TRAINRT_ERR_INVALID_ARGUMENT, "out_dir");
    EXPECT_MISUSE(trainrt_session_export(s, long_path(dir_, 5000).c_str(), TRAINRT_DTYPE_F32),
                  TRAINRT_ERR_IO, "leaf");
    EXPECT_MISUSE(trainrt_checkpoint_export((dir_ + "/missing").c_str(), (dir_ + "/hf").c_str(),
                                            TRAINRT_DTYPE_F32),
                  TRAINRT_ERR_IO, "missing");
    EXPECT_MISUSE(trainrt_checkpoint_export(ck.c_str(), (dir_ + "/file").c_str(),
                                            TRAINRT_DTYPE_BF16),
                  TRAINRT_ERR_IO, "file");
    // out_dir holding a FIFO where model.safetensors goes: written atomically (temp + rename),
    // never opened for writing in place.
    fs::create_directories(dir_ + "/hf2");
    make_fifo(dir_ + "/hf2/model.safetensors");
    EXPECT_EQ(trainrt_session_export(s, (dir_ + "/hf2").c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
        << last_error();
    // A FIFO at an earlier version's fixed temporary name: never opened (each writer creates
    // a fresh name with O_EXCL), never waited on, and not removed (it is no file of ours).
    fs::create_directories(dir_ + "/hf3");
    make_fifo(dir_ + "/hf3/model.safetensors.tmp");
    EXPECT_EQ(trainrt_session_export(s, (dir_ + "/hf3").c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
        << last_error();
    EXPECT_TRUE(fs::exists(dir_ + "/hf3/model.safetensors"));
    EXPECT_TRUE(fs::is_fifo(dir_ + "/hf3/model.safetensors.tmp"));
}

// ====================================================================== prepare

TEST_F(CapiMisuse, PrepareBytesRefusesBadFractionsAndOddInputs) {
    write_text(dir_ + "/in.txt", std::string(4000, 'q'));
    const std::string in = dir_ + "/in.txt", out = dir_ + "/prep";
    int64_t nt = -9, nv = -9;
    for (const double f : {std::nan(""), HUGE_VAL, -HUGE_VAL, -0.1, 1.0000001, 1.5, -0.0 - 1e-300}) {
        SCOPED_TRACE(f);
        EXPECT_MISUSE(trainrt_prepare_bytes(&nt, &nv, in.c_str(), out.c_str(), f),
                      TRAINRT_ERR_INVALID_ARGUMENT, "val_fraction");
    }
    EXPECT_MISUSE(trainrt_prepare_bytes(&nt, &nv, dir_.c_str(), out.c_str(), 0.1), TRAINRT_ERR_IO,
                  "directory");
    make_fifo(dir_ + "/fifo.txt");
    EXPECT_MISUSE(trainrt_prepare_bytes(&nt, &nv, (dir_ + "/fifo.txt").c_str(), out.c_str(), 0.1),
                  TRAINRT_ERR_IO, "fifo.txt");
    EXPECT_MISUSE(trainrt_prepare_bytes(&nt, &nv, "/dev/zero", out.c_str(), 0.1), TRAINRT_ERR_IO,
                  "/dev/zero");
    EXPECT_MISUSE(trainrt_prepare_bytes(&nt, &nv, long_path(dir_, 5000).c_str(), out.c_str(), 0.1),
                  TRAINRT_ERR_IO, "leaf");
    write_text(dir_ + "/file", "x");
    EXPECT_MISUSE(trainrt_prepare_bytes(&nt, &nv, in.c_str(), (dir_ + "/file").c_str(), 0.1),
                  TRAINRT_ERR_IO, "file");
    EXPECT_MISUSE(trainrt_prepare_bytes(&nt, &nv, in.c_str(), (dir_ + "/file/x").c_str(), 0.1),
                  TRAINRT_ERR_IO, "file/x");
    EXPECT_EQ(nt, -9);
    EXPECT_EQ(nv, -9);
    EXPECT_FALSE(fs::exists(out + "/train.bin"));
    // Non-UTF-8 bytes are just bytes to the byte-level tokenizer.
    write_text(dir_ + "/bin.txt", std::string("\xff\xfe\x00\x80", 4) + std::string(100, '\xc3'));
    EXPECT_EQ(trainrt_prepare_bytes(&nt, nullptr, (dir_ + "/bin.txt").c_str(), out.c_str(), 0.0),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(nt, 104);
}

// ====================================================================== concurrency

// Several threads drive one session with every kind of call: each call runs or says BUSY
// (naming the function), nothing crashes or races (ASan), and the steps that ran are exactly
// the steps the session counts.
TEST_F(CapiMisuse, ManyThreadsOnOneSessionRunOrSayBusy) {
    trainrt_session* s = make_session({{"train.out_dir", "\"out\""}, {"train.eval_batches", "1"}});
    ASSERT_NE(s, nullptr);
    const std::vector<int32_t> rows = valid_rows();
    std::atomic<int64_t> steps_ran{0};    // by calls that returned OK
    std::atomic<int64_t> steps_at_most{0};  // + what the trains a stop request cut short asked for
    std::atomic<int> busy{0}, saves{0};
    std::mutex m;
    std::vector<std::string> problems;
    auto note = [&](const char* what, trainrt_status st, int64_t steps_if_ok) {
        if (st == TRAINRT_OK) {
            steps_ran += steps_if_ok;
            steps_at_most += steps_if_ok;
            return;
        }
        // A stop request from another thread ends a train() early (after 0 to n steps).
        if (st == TRAINRT_STOPPED && std::string(what) == "trainrt_session_train") {
            steps_at_most += steps_if_ok;
            return;
        }
        std::lock_guard<std::mutex> lock(m);
        // A stop request that lands while an eval runs cancels it (trainrt.h, request_stop).
        const bool cancelled_eval =
            st == TRAINRT_ERR_CANCELLED && std::string(what) == "trainrt_session_eval";
        if (cancelled_eval) return;
        if (st != TRAINRT_ERR_BUSY)
            problems.push_back(std::string(what) + ": " + trainrt_status_string(st) + ": " +
                               trainrt_last_error_message());
        else if (!names(trainrt_last_error_message(), what))
            problems.push_back(std::string(what) + ": BUSY without naming it: " +
                               trainrt_last_error_message());
        else
            ++busy;
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            trainrt_step_result r;
            trainrt_metrics mt;
            double loss = 0;
            char buf[256];
            size_t needed = 0;
            int32_t out[2];
            const int32_t prompt[] = {1, 2};
            for (int i = 0; i < 24; ++i) {
                trainrt_step_result_init(&r);
                trainrt_metrics_init(&mt);
                switch ((i + t) % 12) {
                    case 0: note("trainrt_session_step", trainrt_session_step(&r, s), 1); break;
                    case 1:
                        note("trainrt_session_step_tokens",
                             trainrt_session_step_tokens(&r, s, rows.data(), rows.size()), 1);
                        break;
                    case 2: note("trainrt_session_sync", trainrt_session_sync(&r, s), 0); break;
                    case 3: note("trainrt_session_eval", trainrt_session_eval(&loss, s), 0); break;
                    case 4:
                        note("trainrt_session_forward",
                             trainrt_session_forward(&loss, nullptr, 0, s, rows.data(), kB, kT), 0);
                        break;
                    case 5:
                        note("trainrt_session_train", trainrt_session_train(s, 2, nullptr, nullptr),
                             2);
                        break;
                    case 6:
                        note("trainrt_session_metrics", trainrt_session_metrics(&mt, s), 0);
                        break;
                    case 7:
                        note("trainrt_session_config_dump",
                             trainrt_session_config_dump(buf, sizeof buf, &needed, s), 0);
                        break;
                    case 8:
                        note("trainrt_session_sample",
                             trainrt_session_sample(out, 2, s, prompt, 2, 2, nullptr), 0);
                        break;
                    case 9:
                        note("trainrt_session_set_log",
                             trainrt_session_set_log(s, nullptr, nullptr, TRAINRT_LOG_ERROR), 0);
                        break;
                    case 10:
                        if (saves.fetch_add(1) < 3)
                            note("trainrt_session_save",
                                 trainrt_session_save(nullptr, 0, nullptr, s, nullptr), 0);
                        break;
                    case 11:
                        EXPECT_EQ(trainrt_session_request_stop(s), TRAINRT_OK);
                        break;
                }
            }
        });
    for (std::thread& t : threads) t.join();
    EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first: " << problems.front();
    // Every step that a call reported is counted once; stopped trains may add some of theirs.
    const int64_t counted = step_of(s);
    EXPECT_GE(counted, steps_ran.load());
    EXPECT_LE(counted, steps_at_most.load());
    EXPECT_GT(counted, 0);
    std::printf("[          ] %lld steps ran, %d calls said BUSY\n",
                static_cast<long long>(counted), busy.load());
    trainrt_session_request_stop(s);  // drain any pending request
    trainrt_session_train(s, 1, nullptr, nullptr);
    const int64_t before = step_of(s);
    EXPECT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(step_of(s), before + 1);
}

// Stop requests from several threads while one thread trains "forever": the train stops
// (STOPPED), whatever the interleaving; the probing threads' other calls say BUSY.
TEST_F(CapiMisuse, StopRequestsFromManyThreadsEndAnEndlessTrain) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    std::atomic<bool> started{false}, done{false};
    auto cb = [](const trainrt_progress*, void* payload) -> int32_t {
        static_cast<std::atomic<bool>*>(payload)->store(true);
        return 0;
    };
    trainrt_status status = 12345;
    std::thread trainer([&] {
        status = trainrt_session_train(s, INT64_MAX, cb, &started);
        done = true;
    });
    std::atomic<int> bad{0};
    std::vector<std::thread> stoppers;
    for (int t = 0; t < 3; ++t)
        stoppers.emplace_back([&] {
            while (!started) std::this_thread::yield();
            while (!done) {
                if (trainrt_session_request_stop(s) != TRAINRT_OK) ++bad;
                trainrt_metrics m;
                trainrt_metrics_init(&m);
                const trainrt_status st = trainrt_session_metrics(&m, s);
                if (st != TRAINRT_OK && st != TRAINRT_ERR_BUSY) ++bad;
                std::this_thread::yield();
            }
        });
    trainer.join();
    for (std::thread& t : stoppers) t.join();
    EXPECT_EQ(status, TRAINRT_STOPPED) << trainrt_status_string(status);
    EXPECT_EQ(bad.load(), 0);
    EXPECT_GE(step_of(s), 1);
}

TEST_F(CapiMisuse, ManyThreadsOnOneConfigRunOrSayBusy) {
    trainrt_config* c = make_config({{"train.steps", "7"}});
    ASSERT_NE(c, nullptr);
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                trainrt_status st = TRAINRT_OK;
                int64_t v = 0;
                trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
                char buf[64];
                size_t needed = 0;
                switch ((i + t) % 6) {
                    case 0: st = trainrt_config_set(c, "train.steps", i % 2 ? "7" : "9"); break;
                    case 1: st = trainrt_config_get_int(&v, c, "train.steps"); break;
                    case 2: st = trainrt_config_model_info(&info, c); break;
                    case 3: st = trainrt_config_dump(buf, sizeof buf, &needed, c); break;
                    case 4:
                        st = trainrt_config_set_log(c, nullptr, nullptr, TRAINRT_LOG_WARN);
                        break;
                    case 5: st = trainrt_config_model_summary(buf, sizeof buf, &needed, c); break;
                }
                if (st != TRAINRT_OK && st != TRAINRT_ERR_BUSY) ++bad;
                if (st == TRAINRT_OK && (i + t) % 6 == 1 && v != 7 && v != 9) ++bad;
            }
        });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(bad.load(), 0);
}

// ====================================================================== calls from callbacks

namespace {

// What a progress or log callback saw when it called back into its own session.
struct Reentry {
    std::string dir;  // where the probes' save/load/export point (a scratch folder)
    trainrt_session* s = nullptr;
    trainrt_session* other = nullptr;  // a second session the callback may drive
    int calls = 0;
    std::vector<std::pair<std::string, trainrt_status>> results;
    std::vector<std::string> messages;
    trainrt_status other_step = 12345;
    trainrt_status stop = 12345;

    void record(const char* what, trainrt_status st) {
        results.emplace_back(what, st);
        messages.emplace_back(trainrt_last_error_message());
    }
    // Every session entry point on the session whose call is in progress.
    void probe_all(const std::string& dir) {
        const int32_t rows[kStepTokens] = {};
        trainrt_step_result r;
        trainrt_step_result_init(&r);
        trainrt_metrics m;
        trainrt_metrics_init(&m);
        double loss = 0;
        char buf[64];
        size_t needed = 0;
        int32_t out[2];
        const int32_t prompt[] = {1};
        record("trainrt_session_train", trainrt_session_train(s, 1, nullptr, nullptr));
        record("trainrt_session_step", trainrt_session_step(&r, s));
        record("trainrt_session_step_tokens", trainrt_session_step_tokens(&r, s, rows, kStepTokens));
        record("trainrt_session_sync", trainrt_session_sync(&r, s));
        record("trainrt_session_eval", trainrt_session_eval(&loss, s));
        trainrt_eval_result e = TRAINRT_EVAL_RESULT_INIT;
        record("trainrt_session_eval_whole", trainrt_session_eval_whole(&e, s));
        record("trainrt_session_eval_tokens", trainrt_session_eval_tokens(&e, s, rows, 2));
        record("trainrt_session_eval_text", trainrt_session_eval_text(&e, s, "ab", 2, nullptr));
        record("trainrt_session_forward",
               trainrt_session_forward(&loss, nullptr, 0, s, rows, kB, kT));
        record("trainrt_session_sample", trainrt_session_sample(out, 2, s, prompt, 1, 2, nullptr));
        record("trainrt_session_metrics", trainrt_session_metrics(&m, s));
        record("trainrt_session_config_dump",
               trainrt_session_config_dump(buf, sizeof buf, &needed, s));
        record("trainrt_session_profile", trainrt_session_profile(buf, sizeof buf, &needed, s));
        record("trainrt_session_profile_reset", trainrt_session_profile_reset(s));
        record("trainrt_session_set_log", trainrt_session_set_log(s, nullptr, nullptr, 1));
        record("trainrt_session_save",
               trainrt_session_save(nullptr, 0, nullptr, s, (dir + "/reentrant_ck").c_str()));
        record("trainrt_session_load", trainrt_session_load(s, dir.c_str()));
        record("trainrt_session_export",
               trainrt_session_export(s, (dir + "/reentrant_hf").c_str(), 0));
    }
};

void expect_all_refused_as_reentrant(const Reentry& rec) {
    ASSERT_FALSE(rec.results.empty()) << "the callback never ran";
    for (size_t i = 0; i < rec.results.size(); ++i) {
        SCOPED_TRACE(rec.results[i].first);
        EXPECT_EQ(rec.results[i].second, TRAINRT_ERR_BUSY)
            << trainrt_status_string(rec.results[i].second) << ": " << rec.messages[i];
        EXPECT_TRUE(names(rec.messages[i], rec.results[i].first)) << rec.messages[i];
        // Clear about what happened: the same thread, from inside a callback.
        EXPECT_NE(rec.messages[i].find("callback"), std::string::npos) << rec.messages[i];
        EXPECT_EQ(rec.messages[i].find("another thread"), std::string::npos)
            << "a re-entrant call is blamed on another thread: " << rec.messages[i];
    }
}

}  // namespace

TEST_F(CapiMisuse, ProgressCallbackCallingIntoItsOwnSessionIsRefusedNotDeadlocked) {
    trainrt_session* s = make_session();
    trainrt_session* other = make_session();
    ASSERT_NE(s, nullptr);
    ASSERT_NE(other, nullptr);
    Reentry rec;
    rec.dir = dir_ + "/inside";
    rec.s = s;
    rec.other = other;
    rec.probe_all(dir_ + "/outside");  // sanity: outside a callback the same calls run
    for (size_t i = 0; i < rec.results.size(); ++i)
        EXPECT_NE(rec.results[i].second, TRAINRT_ERR_BUSY) << rec.results[i].first;
    rec.results.clear();
    rec.messages.clear();
    const int64_t before = step_of(s);
    auto cb = [](const trainrt_progress*, void* payload) -> int32_t {
        auto* r = static_cast<Reentry*>(payload);
        if (r->calls++ > 0) return 0;
        r->probe_all(r->dir);
        r->other_step = trainrt_session_step(nullptr, r->other);  // another session: fine
        r->stop = trainrt_session_request_stop(r->s);             // the one safe call
        return 0;
    };
    EXPECT_EQ(trainrt_session_train(s, 1000, cb, &rec), TRAINRT_STOPPED) << last_error();
    expect_all_refused_as_reentrant(rec);
    EXPECT_EQ(rec.other_step, TRAINRT_OK);
    EXPECT_EQ(rec.stop, TRAINRT_OK);
    EXPECT_EQ(step_of(s), before + 1) << "stopped after the step it reported";
    EXPECT_FALSE(fs::exists(rec.dir)) << "a refused call wrote files";
    // The session is free again.
    EXPECT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
}

TEST_F(CapiMisuse, LogCallbackCallingIntoItsOwnSessionIsRefusedNotDeadlocked) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    Reentry rec;
    rec.dir = dir_ + "/inside";
    rec.s = s;
    auto log = [](int32_t, const char* message, void* payload) {
        auto* r = static_cast<Reentry*>(payload);
        if (r->calls++ > 0 || message == nullptr) return;
        r->probe_all(r->dir);
        // Process-wide calls and other handles are fine from a log callback.
        r->record("trainrt_log_set_default", trainrt_log_set_default(nullptr, nullptr, 2));
        trainrt_config* c = nullptr;
        r->record("trainrt_config_create", trainrt_config_create(&c));
        trainrt_config_destroy(c);
        r->stop = trainrt_session_request_stop(r->s);
    };
    ASSERT_EQ(trainrt_session_set_log(s, log, &rec, TRAINRT_LOG_DEBUG), TRAINRT_OK);
    // train() logs "train: steps ..." before its first step, inside the call.
    EXPECT_EQ(trainrt_session_train(s, 5, nullptr, nullptr), TRAINRT_STOPPED) << last_error();
    ASSERT_GE(rec.results.size(), 2u);
    EXPECT_EQ(rec.results[rec.results.size() - 1].second, TRAINRT_OK);  // config_create
    EXPECT_EQ(rec.results[rec.results.size() - 2].second, TRAINRT_OK);  // log_set_default
    rec.results.resize(rec.results.size() - 2);
    rec.messages.resize(rec.messages.size() - 2);
    expect_all_refused_as_reentrant(rec);
    EXPECT_EQ(rec.stop, TRAINRT_OK);
    EXPECT_FALSE(fs::exists(rec.dir)) << "a refused call wrote files";
    EXPECT_LE(step_of(s), 1);
    ASSERT_EQ(trainrt_session_set_log(s, nullptr, nullptr, TRAINRT_LOG_WARN), TRAINRT_OK);
    EXPECT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
}

// The log callback of a load ("resumed from ...") calling load again on the same session.
TEST_F(CapiMisuse, LogCallbackOfALoadCallingLoadIsRefused) {
    const std::string ck = make_checkpoint("ck");
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    struct Ctx {
        trainrt_session* s;
        std::string ck;
        std::vector<trainrt_status> st;
    } ctx{s, ck, {}};
    auto log = [](int32_t, const char*, void* payload) {
        auto* c = static_cast<Ctx*>(payload);
        c->st.push_back(trainrt_session_load(c->s, c->ck.c_str()));
    };
    ASSERT_EQ(trainrt_session_set_log(s, log, &ctx, TRAINRT_LOG_DEBUG), TRAINRT_OK);
    ASSERT_EQ(trainrt_session_load(s, ck.c_str()), TRAINRT_OK) << last_error();
    ASSERT_FALSE(ctx.st.empty()) << "load logged nothing";
    for (trainrt_status st : ctx.st) EXPECT_EQ(st, TRAINRT_ERR_BUSY);
    EXPECT_EQ(step_of(s), 1);
}

// Session creation logs through the config's sink outside the config's guard: the callback
// may read and change the config and even create a second session from it.
TEST_F(CapiMisuse, ConfigLogCallbackDuringSessionCreateMayUseTheConfig) {
    trainrt_config* c = make_config();
    ASSERT_NE(c, nullptr);
    struct Ctx {
        trainrt_config* c;
        int depth = 0;
        std::vector<trainrt_status> st;
        std::vector<trainrt_session*> nested;
    } ctx{c};
    auto log = [](int32_t, const char*, void* payload) {
        auto* x = static_cast<Ctx*>(payload);
        if (x->depth > 0 || !x->nested.empty()) return;
        ++x->depth;
        int64_t v = 0;
        x->st.push_back(trainrt_config_get_int(&v, x->c, "train.steps"));
        x->st.push_back(trainrt_config_set(x->c, "train.steps", "77"));
        trainrt_session* n = nullptr;
        x->st.push_back(trainrt_session_create(&n, x->c));
        if (n != nullptr) x->nested.push_back(n);
        --x->depth;
    };
    ASSERT_EQ(trainrt_config_set_log(c, log, &ctx, TRAINRT_LOG_INFO), TRAINRT_OK);
    trainrt_session* s = nullptr;
    ASSERT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
    sessions_.push_back(s);
    ASSERT_EQ(ctx.st.size(), 3u) << "session_create logged nothing at INFO";
    for (trainrt_status st : ctx.st) EXPECT_EQ(st, TRAINRT_OK) << last_error();
    for (trainrt_session* n : ctx.nested) sessions_.push_back(n);
    int64_t steps = 0;
    ASSERT_EQ(trainrt_config_get_int(&steps, c, "train.steps"), TRAINRT_OK);
    EXPECT_EQ(steps, 77);
}

// The process-wide sink's callback replacing the process-wide sink (no lock is held while
// it runs).
TEST_F(CapiMisuse, DefaultLogCallbackMayReplaceTheDefaultSink) {
    DefaultLogGuard restore;
    struct Ctx {
        int calls = 0;
        trainrt_status st = 12345;
    } ctx;
    auto log = [](int32_t, const char*, void* payload) {
        auto* x = static_cast<Ctx*>(payload);
        if (x->calls++ == 0) x->st = trainrt_log_set_default(nullptr, nullptr, TRAINRT_LOG_ERROR);
    };
    ASSERT_EQ(trainrt_log_set_default(log, &ctx, TRAINRT_LOG_DEBUG), TRAINRT_OK);
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(ctx.calls, 1) << "the replaced sink was called again";
    EXPECT_EQ(ctx.st, TRAINRT_OK);
}

TEST_F(CapiMisuse, ParamsAndMetadataRefuseNullsBadIndicesSizesNamesAndValues) {
    trainrt_session* s = make_session();
    ASSERT_NE(s, nullptr);
    int64_t tensors = -1, numel = -1;
    ASSERT_EQ(trainrt_session_param_count(&tensors, &numel, s), TRAINRT_OK) << last_error();
    ASSERT_GT(tensors, 0);
    std::vector<float> before(static_cast<size_t>(numel)), after(before.size());
    ASSERT_EQ(trainrt_session_read_params(before.data(), before.size(), s, nullptr), TRAINRT_OK);
    trainrt_param_info info;
    trainrt_param_info_init(&info);
    char buf[8] = "keep";
    size_t needed = 77;
    EXPECT_NULL_ARG(trainrt_session_param_count(&tensors, &numel, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_param_info(nullptr, buf, sizeof buf, &needed, s, 0), "out");
    EXPECT_NULL_ARG(trainrt_session_param_info(&info, buf, sizeof buf, &needed, nullptr, 0),
                    "session");
    EXPECT_NULL_ARG(trainrt_session_param_info(&info, nullptr, 3, &needed, s, 0), "buf");
    EXPECT_NULL_ARG(trainrt_session_read_params(nullptr, 4, s, nullptr), "out");
    EXPECT_NULL_ARG(trainrt_session_read_params(after.data(), 4, nullptr, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_write_params(nullptr, nullptr, after.data(), 4), "session");
    EXPECT_NULL_ARG(trainrt_session_write_params(s, nullptr, nullptr, 4), "values");
    EXPECT_NULL_ARG(trainrt_session_set_metadata(nullptr, "k", "v"), "session");
    EXPECT_NULL_ARG(trainrt_session_set_metadata(s, nullptr, "v"), "key");
    EXPECT_NULL_ARG(trainrt_session_get_metadata(buf, sizeof buf, &needed, nullptr, nullptr, "k"),
                    "session");
    EXPECT_NULL_ARG(trainrt_session_get_metadata(buf, sizeof buf, &needed, nullptr, s, nullptr),
                    "key");
    EXPECT_NULL_ARG(trainrt_session_metadata_count(nullptr, s), "out");
    EXPECT_NULL_ARG(trainrt_session_metadata_count(&tensors, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_metadata_key(buf, sizeof buf, &needed, nullptr, 0), "session");
    EXPECT_STREQ(buf, "keep");
    EXPECT_EQ(needed, 77u);
    // Indices out of range, wrong sizes, unknown names (with a suggestion), non-finite values.
    EXPECT_MISUSE(trainrt_session_param_info(&info, nullptr, 0, nullptr, s, tensors),
                  TRAINRT_ERR_INVALID_ARGUMENT, "out of range");
    EXPECT_MISUSE(trainrt_session_param_info(&info, nullptr, 0, nullptr, s, -1),
                  TRAINRT_ERR_INVALID_ARGUMENT, "out of range");
    trainrt_param_info tiny;
    trainrt_param_info_init(&tiny);
    tiny.struct_size = 4;
    EXPECT_MISUSE(trainrt_session_param_info(&tiny, buf, sizeof buf, &needed, s, 0),
                  TRAINRT_ERR_INVALID_ARGUMENT, "struct_size");
    EXPECT_STREQ(buf, "keep");
    EXPECT_MISUSE(trainrt_session_read_params(after.data(), after.size() - 1, s, nullptr),
                  TRAINRT_ERR_INVALID_ARGUMENT, std::to_string(numel));
    EXPECT_MISUSE(trainrt_session_read_params(after.data(), 1, s, "wte.weigth"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "did you mean 'wte.weight'");
    EXPECT_MISUSE(trainrt_session_read_params(after.data(), 1, s, ""),
                  TRAINRT_ERR_INVALID_ARGUMENT, "no tensor");
    EXPECT_MISUSE(trainrt_session_write_params(s, "wte.weight", before.data(), 3),
                  TRAINRT_ERR_INVALID_ARGUMENT, "wte.weight");
    std::vector<float> poisoned = before;
    poisoned.back() = std::numeric_limits<float>::quiet_NaN();
    EXPECT_MISUSE(trainrt_session_write_params(s, nullptr, poisoned.data(), poisoned.size()),
                  TRAINRT_ERR_NON_FINITE, "nothing was written");
    poisoned = before;
    poisoned[0] = std::numeric_limits<float>::infinity();
    EXPECT_MISUSE(trainrt_session_write_params(s, "wte.weight", poisoned.data(), 32 * 16),
                  TRAINRT_ERR_NON_FINITE, "wte.weight");
    ASSERT_EQ(trainrt_session_read_params(after.data(), after.size(), s, nullptr), TRAINRT_OK);
    EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0)
        << "a refused write changed the weights";
    // Metadata keys and values outside the rules.
    EXPECT_MISUSE(trainrt_session_set_metadata(s, "", "v"), TRAINRT_ERR_INVALID_ARGUMENT,
                  "1 to 128");
    EXPECT_MISUSE(trainrt_session_set_metadata(s, std::string(129, 'k').c_str(), "v"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "1 to 128");
    EXPECT_MISUSE(trainrt_session_set_metadata(s, "a key", "v"), TRAINRT_ERR_INVALID_ARGUMENT,
                  "letters");
    EXPECT_MISUSE(trainrt_session_set_metadata(s, "k", "\xff\xfe"), TRAINRT_ERR_INVALID_ARGUMENT,
                  "UTF-8");
    EXPECT_MISUSE(trainrt_session_set_metadata(s, "k", std::string(65537, 'v').c_str()),
                  TRAINRT_ERR_INVALID_ARGUMENT, "65536");
    for (int i = 0; i < 256; ++i)
        ASSERT_EQ(trainrt_session_set_metadata(s, ("k" + std::to_string(i)).c_str(), "v"),
                  TRAINRT_OK) << last_error();
    EXPECT_MISUSE(trainrt_session_set_metadata(s, "one-too-many", "v"),
                  TRAINRT_ERR_INVALID_ARGUMENT, "256");
    EXPECT_EQ(trainrt_session_set_metadata(s, "k0", "replaced"), TRAINRT_OK) << last_error();
    EXPECT_EQ(trainrt_session_set_metadata(s, "absent", nullptr), TRAINRT_OK) << last_error();
    // Values of control characters (6 bytes each in JSON) reach the 16 MiB in all that keeps
    // a checkpoint readable long before 256 keys: refused there, naming the limit.
    trainrt_session* t = make_session();
    ASSERT_NE(t, nullptr);
    const std::string control(65536, '\x01');
    int accepted = 0;
    trainrt_status st = TRAINRT_OK;
    while (accepted < 256 &&
           (st = trainrt_session_set_metadata(t, ("c" + std::to_string(accepted)).c_str(),
                                              control.c_str())) == TRAINRT_OK)
        ++accepted;
    EXPECT_EQ(st, TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(mentions(trainrt_last_error_message(), "16777216")) << last_error();
    EXPECT_EQ(accepted, 42);  // 42 x (6 x 65536 + keys) <= 16 MiB < 43 x ...
    EXPECT_EQ(trainrt_session_save(nullptr, 0, nullptr, t, (dir_ + "/big").c_str()), TRAINRT_OK)
        << last_error();
    trainrt_session* u = make_session();
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(trainrt_session_load(u, (dir_ + "/big").c_str()), TRAINRT_OK) << last_error();
    // Removing a key that could never be set is not an error either (nothing to remove).
    EXPECT_EQ(trainrt_session_set_metadata(s, "a key", nullptr), TRAINRT_OK) << last_error();
    EXPECT_EQ(trainrt_session_set_metadata(s, "", nullptr), TRAINRT_OK) << last_error();
    int64_t keys = 0;
    ASSERT_EQ(trainrt_session_metadata_count(&keys, s), TRAINRT_OK);
    EXPECT_EQ(keys, 256);
    EXPECT_MISUSE(trainrt_session_metadata_key(nullptr, 0, &needed, s, 256),
                  TRAINRT_ERR_INVALID_ARGUMENT, "out of range");
    EXPECT_MISUSE(trainrt_session_metadata_key(nullptr, 0, &needed, s, -1),
                  TRAINRT_ERR_INVALID_ARGUMENT, "out of range");
}
