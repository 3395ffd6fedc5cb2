// C API tests without a session: versions, status text, the thread-local error message,
// struct init functions, the default log sink's argument handling, trainrt_config_* and
// trainrt_prepare_bytes. Written against include/trainrt/trainrt.h only.
#include <trainrt/trainrt.h>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

// A fresh, empty scratch folder for the running test.
void write_text(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    ASSERT_TRUE(f.good()) << path;
}

std::string read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}


// The resolved config as text (what dump gives), "" with a test failure on error.
std::string dump(const trainrt_config* c) {
    size_t needed = 0;
    if (trainrt_config_dump(nullptr, 0, &needed, c) != TRAINRT_OK) {
        ADD_FAILURE() << "dump size query failed: " << last_error();
        return "";
    }
    std::string text(needed + 1, '\0');
    size_t needed2 = 0;
    if (trainrt_config_dump(&text[0], text.size(), &needed2, c) != TRAINRT_OK) {
        ADD_FAILURE() << "dump failed: " << last_error();
        return "";
    }
    EXPECT_EQ(needed2, needed);
    text.resize(needed);
    return text;
}

std::string get_string(const trainrt_config* c, const char* key) {
    size_t needed = 0;
    if (trainrt_config_get_string(nullptr, 0, &needed, c, key) != TRAINRT_OK) {
        ADD_FAILURE() << "get_string(" << key << ") failed: " << last_error();
        return "";
    }
    std::string text(needed + 1, '\0');
    EXPECT_EQ(trainrt_config_get_string(&text[0], text.size(), &needed, c, key), TRAINRT_OK);
    text.resize(needed);
    return text;
}

struct ConfigHandle {
    trainrt_config* c = nullptr;
    ~ConfigHandle() { trainrt_config_destroy(c); }
};

trainrt_config* const kSentinelConfig = reinterpret_cast<trainrt_config*>(uintptr_t{0x5e});

const int32_t kAllStatuses[] = {
    TRAINRT_OK,                 TRAINRT_STOPPED,           TRAINRT_ERR_INVALID_ARGUMENT,
    TRAINRT_ERR_CONFIG,         TRAINRT_ERR_IO,            TRAINRT_ERR_FORMAT,
    TRAINRT_ERR_OUT_OF_MEMORY,  TRAINRT_ERR_DEVICE,        TRAINRT_ERR_UNSUPPORTED,
    TRAINRT_ERR_BUSY,           TRAINRT_ERR_CANCELLED,     TRAINRT_ERR_VERSION_MISMATCH,
    TRAINRT_ERR_INTERNAL,       TRAINRT_ERR_DEVICE_LOST,   TRAINRT_ERR_NON_FINITE,
};

}  // namespace

// ====================================================================== versions

TEST(CapiVersion, VersionStringMatchesHeaderMacros) {
    const char* v = trainrt_version_string();
    ASSERT_NE(v, nullptr);
    char expected[64];
    std::snprintf(expected, sizeof expected, "%d.%d.%d", TRAINRT_VERSION_MAJOR,
                  TRAINRT_VERSION_MINOR, TRAINRT_VERSION_PATCH);
    EXPECT_STREQ(v, expected);
    EXPECT_EQ(trainrt_version_string(), v) << "a static string: the same pointer every call";
}

TEST(CapiVersion, AbiVersionMatchesHeaderMacro) {
    EXPECT_EQ(trainrt_abi_version(), static_cast<uint32_t>(TRAINRT_ABI_VERSION));
}

TEST(CapiVersion, BuildFeaturesAreKnownBitsWithCpuAlwaysSet) {
    const uint64_t known = TRAINRT_FEATURE_CPU | TRAINRT_FEATURE_OPENMP |
                           TRAINRT_FEATURE_OPENBLAS | TRAINRT_FEATURE_CUDA_MODULE |
                           TRAINRT_FEATURE_CUDNN | TRAINRT_FEATURE_NCCL | TRAINRT_FEATURE_MPI |
                           TRAINRT_FEATURE_ONEDNN;
    const uint64_t f = trainrt_build_features();
    EXPECT_NE(f & TRAINRT_FEATURE_CPU, 0u) << "the CPU backend is always there";
    EXPECT_EQ(f & ~known, 0u) << "bits outside the documented ones: " << std::hex << f;
    // cuDNN attention and NCCL are parts of the CUDA module: without it they cannot be there.
    if ((f & TRAINRT_FEATURE_CUDA_MODULE) == 0) {
        EXPECT_EQ(f & TRAINRT_FEATURE_CUDNN, 0u);
        EXPECT_EQ(f & TRAINRT_FEATURE_NCCL, 0u);
    }
    EXPECT_EQ(trainrt_build_features(), f) << "stable between calls";
}

// ====================================================================== status text

TEST(CapiStatus, EveryCodeHasItsOwnNonEmptyText) {
    const char* unknown = trainrt_status_string(-1000);
    ASSERT_NE(unknown, nullptr);
    std::set<std::string> seen;
    for (const int32_t code : kAllStatuses) {
        const char* s = trainrt_status_string(code);
        ASSERT_NE(s, nullptr) << code;
        EXPECT_GT(std::strlen(s), 0u) << code;
        EXPECT_STRNE(s, unknown) << "code " << code << " reads like an unknown code";
        EXPECT_TRUE(seen.insert(s).second) << "code " << code << " shares its text: " << s;
        EXPECT_EQ(trainrt_status_string(code), s) << "static text: same pointer each call";
    }
    EXPECT_EQ(seen.size(), sizeof kAllStatuses / sizeof kAllStatuses[0]);
}

TEST(CapiStatus, UnknownCodesGiveNonNullText) {
    for (const int32_t code : {-14, -15, 2, 3, 1000, -1000, std::numeric_limits<int32_t>::min(),
                               std::numeric_limits<int32_t>::max()}) {
        const char* s = trainrt_status_string(code);
        ASSERT_NE(s, nullptr) << code;
        EXPECT_GT(std::strlen(s), 0u) << code;
        for (const int32_t known : kAllStatuses)
            EXPECT_STRNE(s, trainrt_status_string(known)) << code << " vs " << known;
    }
}

// ====================================================================== last error

TEST(CapiLastError, EmptyOnAFreshThreadAndNeverNull) {
    std::string seen = "not run";
    bool was_null = true;
    std::thread t([&] {
        const char* m = trainrt_last_error_message();
        was_null = m == nullptr;
        if (m) seen = m;
    });
    t.join();
    EXPECT_FALSE(was_null);
    EXPECT_EQ(seen, "");
}

TEST(CapiLastError, SetByAFailedCallAndThreadLocal) {
    trainrt_config* c = kSentinelConfig;
    ASSERT_EQ(trainrt_config_from_string(&c, "[model]\nvocab_size = 0\n", nullptr),
              TRAINRT_ERR_CONFIG);
    const std::string mine = last_error();
    EXPECT_NE(mine.find("model.vocab_size"), std::string::npos) << mine;

    // Another thread fails differently; neither sees the other's text.
    std::string other_before = "not run", other_after;
    std::thread t([&] {
        other_before = trainrt_last_error_message();
        (void)trainrt_config_create(nullptr);
        other_after = trainrt_last_error_message();
    });
    t.join();
    EXPECT_EQ(other_before, "");
    EXPECT_TRUE(names(other_after, "out")) << other_after;
    EXPECT_EQ(last_error(), mine) << "this thread's message changed by another thread's call";
}

// ====================================================================== struct init

TEST(CapiStructs, StepResultInitMatchesMacro) {
    trainrt_step_result r;
    std::memset(&r, 0x7f, sizeof r);
    trainrt_step_result_init(&r);
    const trainrt_step_result m = TRAINRT_STEP_RESULT_INIT;
    EXPECT_EQ(r.struct_size, sizeof(trainrt_step_result));
    EXPECT_EQ(r.version, static_cast<uint32_t>(TRAINRT_STEP_RESULT_VERSION));
    EXPECT_EQ(m.struct_size, r.struct_size);
    EXPECT_EQ(m.version, r.version);
    EXPECT_EQ(r.step, 0);
    EXPECT_EQ(r.loss, 0.0);
    EXPECT_EQ(r.lr, 0.0);
    EXPECT_EQ(r.grad_norm, 0.0);
    EXPECT_EQ(r.tokens, 0);
    EXPECT_EQ(r.tokens_total, 0);
    EXPECT_EQ(r.ms, 0.0);
    trainrt_step_result_init(nullptr);  // must not crash
}

TEST(CapiStructs, MetricsInitMatchesMacro) {
    trainrt_metrics r;
    std::memset(&r, 0x7f, sizeof r);
    trainrt_metrics_init(&r);
    const trainrt_metrics m = TRAINRT_METRICS_INIT;
    EXPECT_EQ(r.struct_size, sizeof(trainrt_metrics));
    EXPECT_EQ(r.version, static_cast<uint32_t>(TRAINRT_METRICS_VERSION));
    EXPECT_EQ(m.struct_size, r.struct_size);
    EXPECT_EQ(m.version, r.version);
    EXPECT_EQ(r.step, 0);
    EXPECT_EQ(r.tokens_total, 0);
    EXPECT_EQ(r.bytes_in_use, 0);
    EXPECT_EQ(r.step_ms_p50, 0.0);
    EXPECT_EQ(r.model_flops_per_token, 0.0);
    EXPECT_EQ(r.peak_flops, 0.0);
    EXPECT_EQ(r.mfu, 0.0);
    EXPECT_EQ(m.mfu, 0.0);
    trainrt_metrics_init(nullptr);  // must not crash
}

TEST(CapiStructs, PublicStructLayoutIsFixedWidth) {
    // The ABI promise: struct_size and version lead, 64-bit fields after.
    EXPECT_EQ(offsetof(trainrt_step_result, struct_size), 0u);
    EXPECT_EQ(offsetof(trainrt_step_result, version), 4u);
    EXPECT_EQ(offsetof(trainrt_step_result, step), 8u);
    EXPECT_EQ(sizeof(trainrt_step_result), 64u);
    EXPECT_EQ(offsetof(trainrt_metrics, step), 8u);
    EXPECT_EQ(sizeof(trainrt_metrics), 128u);  // versions 2 and 3 appended three fields each, 4 two
    EXPECT_EQ(offsetof(trainrt_metrics, bytes_reserved), 72u);
    EXPECT_EQ(offsetof(trainrt_metrics, model_flops_per_token), 96u);
    EXPECT_EQ(offsetof(trainrt_metrics, peak_flops), 104u);
    EXPECT_EQ(offsetof(trainrt_metrics, mfu), 112u);
    EXPECT_EQ(offsetof(trainrt_metrics, rank), 120u);
    EXPECT_EQ(offsetof(trainrt_metrics, world_size), 124u);
    EXPECT_EQ(offsetof(trainrt_progress, kind), 8u);
    EXPECT_EQ(offsetof(trainrt_progress, step), 16u);
}

// ====================================================================== default log sink

TEST(CapiLog, SetDefaultAcceptsCallbackAndNull) {
    auto fn = [](int32_t, const char*, void*) {};
    EXPECT_EQ(trainrt_log_set_default(fn, nullptr, TRAINRT_LOG_DEBUG), TRAINRT_OK);
    EXPECT_EQ(trainrt_log_set_default(nullptr, nullptr, TRAINRT_LOG_WARN), TRAINRT_OK);
}

// Levels outside TRAINRT_LOG_DEBUG..TRAINRT_LOG_ERROR are refused by every sink setter (they
// were accepted before: 99 silenced everything, -7 let everything through, undocumented).
TEST(CapiLog, LevelsOutsideDebugToErrorAreRefused) {
    auto fn = [](int32_t, const char*, void*) {};
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_create(&h.c), TRAINRT_OK);
    for (const int32_t bad : {-7, -1, 4, 99}) {
        EXPECT_EQ(trainrt_log_set_default(fn, nullptr, bad), TRAINRT_ERR_INVALID_ARGUMENT) << bad;
        EXPECT_TRUE(names(last_error(), "min_level")) << last_error();
        EXPECT_EQ(trainrt_config_set_log(h.c, fn, nullptr, bad), TRAINRT_ERR_INVALID_ARGUMENT)
            << bad;
        EXPECT_TRUE(names(last_error(), "trainrt_config_set_log")) << last_error();
    }
    for (int32_t ok = TRAINRT_LOG_DEBUG; ok <= TRAINRT_LOG_ERROR; ++ok) {
        EXPECT_EQ(trainrt_config_set_log(h.c, fn, nullptr, ok), TRAINRT_OK) << ok;
        EXPECT_EQ(trainrt_log_set_default(nullptr, nullptr, ok), TRAINRT_OK) << ok;
    }
    EXPECT_EQ(trainrt_log_set_default(nullptr, nullptr, TRAINRT_LOG_WARN), TRAINRT_OK);
}

// ====================================================================== config: create

TEST(CapiConfig, CreateGivesAllDefaults) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_create(&h.c), TRAINRT_OK) << last_error();
    ASSERT_NE(h.c, nullptr);
    int64_t i = 0;
    double d = 0;
    int32_t b = -1;
    EXPECT_EQ(trainrt_config_get_int(&i, h.c, "model.vocab_size"), TRAINRT_OK);
    EXPECT_EQ(i, 256);
    EXPECT_EQ(trainrt_config_get_int(&i, h.c, "train.batch_size"), TRAINRT_OK);
    EXPECT_EQ(i, 8);
    EXPECT_EQ(trainrt_config_get_double(&d, h.c, "optim.lr"), TRAINRT_OK);
    EXPECT_DOUBLE_EQ(d, 3e-4);
    EXPECT_EQ(trainrt_config_get_bool(&b, h.c, "accel.fused_adamw"), TRAINRT_OK);
    EXPECT_EQ(b, 1);
    EXPECT_EQ(get_string(h.c, "data.sampler"), "random");
    EXPECT_EQ(get_string(h.c, "data.train"), "");
}

TEST(CapiConfig, CreateNullOut) {
    EXPECT_NULL_ARG(trainrt_config_create(nullptr), "out");
}

TEST(CapiConfig, DestroyNullIsANoOp) {
    trainrt_config_destroy(nullptr);
    SUCCEED();
}

// ====================================================================== config: from_string

TEST(CapiConfig, FromStringReadsValuesAndResolvesPathsAgainstBaseDir) {
    const std::string dir = scratch_dir();
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_from_string(&h.c,
                                         "[model]\nvocab_size = 64\n"
                                         "[data]\ntrain = \"shards/train.bin\"\n"
                                         "[optim]\nlr = 0.002\n",
                                         dir.c_str()),
              TRAINRT_OK)
        << last_error();
    int64_t v = 0;
    double lr = 0;
    EXPECT_EQ(trainrt_config_get_int(&v, h.c, "model.vocab_size"), TRAINRT_OK);
    EXPECT_EQ(v, 64);
    EXPECT_EQ(trainrt_config_get_double(&lr, h.c, "optim.lr"), TRAINRT_OK);
    EXPECT_DOUBLE_EQ(lr, 0.002);
    EXPECT_EQ(fs::path(get_string(h.c, "data.train")).lexically_normal(),
              (fs::path(dir) / "shards/train.bin").lexically_normal());
}

TEST(CapiConfig, FromStringNullBaseDirLeavesRelativePathsRelativeToCwd) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_from_string(&h.c, "[data]\ntrain = \"t.bin\"\n", nullptr),
              TRAINRT_OK)
        << last_error();
    const std::string p = get_string(h.c, "data.train");
    // Either kept relative or made absolute against the current directory: same file.
    EXPECT_EQ(fs::absolute(p).lexically_normal(), fs::absolute("t.bin").lexically_normal())
        << p;
}

TEST(CapiConfig, FromStringNullArguments) {
    trainrt_config* c = kSentinelConfig;
    EXPECT_NULL_ARG(trainrt_config_from_string(nullptr, "", nullptr), "out");
    EXPECT_NULL_ARG(trainrt_config_from_string(&c, nullptr, nullptr), "toml");
    EXPECT_EQ(c, kSentinelConfig) << "output written on failure";
}

TEST(CapiConfig, FromStringErrorsAreConfigErrorsAndLeaveOutUntouched) {
    struct Case {
        const char* toml;
        const char* must_mention;
    };
    const Case cases[] = {
        {"[model\nvocab_size = 3\n", "syntax"},                     // TOML syntax
        {"[model]\nvocab_size = \"big\"\n", "model.vocab_size"},   // wrong type
        {"[model]\nvocab_size = 0\n", "model.vocab_size"},         // out of range
        {"[model]\nvocab_sise = 3\n", "vocab_sise"},               // unknown key
        {"[modle]\nvocab_size = 3\n", "modle"},                    // unknown section
        {"[model]\nn_head = 3\nd_model = 16\n", "model.d_model"},  // cross-key
        {"[train]\nseq_len = 300\n", "train.seq_len"},             // > context_length
        {"[optim]\nlr = 0.001\nmin_lr = 0.01\n", "optim.min_lr"},  // cross-key
        {"[data]\nsampler = \"randum\"\n", "data.sampler"},        // bad enum
        {"[optim]\nbetas = [0.9]\n", "optim.betas"},               // bad array
    };
    for (const Case& k : cases) {
        trainrt_config* c = kSentinelConfig;
        EXPECT_EQ(trainrt_config_from_string(&c, k.toml, nullptr), TRAINRT_ERR_CONFIG) << k.toml;
        EXPECT_EQ(c, kSentinelConfig) << k.toml;
        const std::string msg = last_error();
        EXPECT_NE(msg.find(k.must_mention), std::string::npos)
            << "config:\n" << k.toml << "message: " << msg;
    }
}

// ====================================================================== config: from_file

TEST(CapiConfig, FromFileResolvesPathsAgainstTheFilesFolder) {
    const std::string dir = scratch_dir();
    fs::create_directories(dir + "/cfg");
    write_text(dir + "/cfg/run.toml",
               "[data]\ntrain = \"shards/train.bin\"\nval = \"/abs/val.bin\"\n"
               "[train]\nsteps = 7\n");
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_from_file(&h.c, (dir + "/cfg/run.toml").c_str()), TRAINRT_OK)
        << last_error();
    int64_t steps = 0;
    EXPECT_EQ(trainrt_config_get_int(&steps, h.c, "train.steps"), TRAINRT_OK);
    EXPECT_EQ(steps, 7);
    EXPECT_EQ(fs::path(get_string(h.c, "data.train")).lexically_normal(),
              (fs::path(dir) / "cfg/shards/train.bin").lexically_normal());
    EXPECT_EQ(get_string(h.c, "data.val"), "/abs/val.bin");
}

TEST(CapiConfig, FromFileMissingIsIoError) {
    const std::string dir = scratch_dir();
    const std::string path = dir + "/nope.toml";
    trainrt_config* c = kSentinelConfig;
    EXPECT_EQ(trainrt_config_from_file(&c, path.c_str()), TRAINRT_ERR_IO);
    EXPECT_EQ(c, kSentinelConfig);
    EXPECT_NE(last_error().find("nope.toml"), std::string::npos) << last_error();
}

TEST(CapiConfig, FromFileOnADirectoryIsIoError) {
    const std::string dir = scratch_dir();
    trainrt_config* c = kSentinelConfig;
    EXPECT_EQ(trainrt_config_from_file(&c, dir.c_str()), TRAINRT_ERR_IO);
    EXPECT_EQ(c, kSentinelConfig);
    EXPECT_GT(last_error().size(), 0u);
}

TEST(CapiConfig, FromFileInvalidNamesFileAndKey) {
    const std::string dir = scratch_dir();
    const std::string path = dir + "/bad.toml";
    write_text(path, "[train]\nsteps = 5\nbatch_size = -2\n");
    trainrt_config* c = kSentinelConfig;
    EXPECT_EQ(trainrt_config_from_file(&c, path.c_str()), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(c, kSentinelConfig);
    const std::string msg = last_error();
    EXPECT_NE(msg.find("bad.toml"), std::string::npos) << msg;
    EXPECT_NE(msg.find("train.batch_size"), std::string::npos) << msg;
    EXPECT_NE(msg.find(":3"), std::string::npos) << "line 3 expected in: " << msg;
}

TEST(CapiConfig, FromFileNullArguments) {
    trainrt_config* c = kSentinelConfig;
    EXPECT_NULL_ARG(trainrt_config_from_file(nullptr, "x.toml"), "out");
    EXPECT_NULL_ARG(trainrt_config_from_file(&c, nullptr), "path");
    EXPECT_EQ(c, kSentinelConfig);
}

// ====================================================================== config: set

TEST(CapiConfig, SetGoodValuesOfEveryType) {
    const std::string dir = scratch_dir();
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_from_string(&h.c, "", dir.c_str()), TRAINRT_OK);
    EXPECT_EQ(trainrt_config_set(h.c, "optim.lr", "1e-3"), TRAINRT_OK) << last_error();
    EXPECT_EQ(trainrt_config_set(h.c, "train.batch_size", "4"), TRAINRT_OK) << last_error();
    EXPECT_EQ(trainrt_config_set(h.c, "accel.cuda_graphs", "false"), TRAINRT_OK);
    EXPECT_EQ(trainrt_config_set(h.c, "optim.betas", "[0.8, 0.99]"), TRAINRT_OK);
    EXPECT_EQ(trainrt_config_set(h.c, "data.sampler", "\"sequential\""), TRAINRT_OK);
    EXPECT_EQ(trainrt_config_set(h.c, "data.train", "\"s/t.bin\""), TRAINRT_OK);
    EXPECT_EQ(trainrt_config_set(h.c, "optim.lr", "0.005"), TRAINRT_OK) << "set twice";

    double lr = 0;
    int64_t bs = 0;
    int32_t graphs = -1;
    EXPECT_EQ(trainrt_config_get_double(&lr, h.c, "optim.lr"), TRAINRT_OK);
    EXPECT_DOUBLE_EQ(lr, 0.005);
    EXPECT_EQ(trainrt_config_get_int(&bs, h.c, "train.batch_size"), TRAINRT_OK);
    EXPECT_EQ(bs, 4);
    EXPECT_EQ(trainrt_config_get_bool(&graphs, h.c, "accel.cuda_graphs"), TRAINRT_OK);
    EXPECT_EQ(graphs, 0);
    EXPECT_EQ(get_string(h.c, "optim.betas"), "[0.8, 0.99]");
    EXPECT_EQ(get_string(h.c, "data.sampler"), "sequential");
    EXPECT_EQ(fs::path(get_string(h.c, "data.train")).lexically_normal(),
              (fs::path(dir) / "s/t.bin").lexically_normal())
        << "a path given through set resolves against the base dir";
}

// A config handle used by two threads at once: every call either runs or says BUSY, and a
// read never sees a value being replaced (before the getters, dump and model_info took the
// handle's guard, get_string/dump racing set read freed memory: ASan, issue 15).
TEST(CapiConfig, ConcurrentSetAndReadsGiveOkOrBusyNeverATornValue) {
    const std::string dir = scratch_dir();
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_from_string(&h.c, "", dir.c_str()), TRAINRT_OK);
    const std::string a(600, 'a'), b(600, 'b');
    const std::string qa = "\"" + a + "\"", qb = "\"" + b + "\"";
    ASSERT_EQ(trainrt_config_set(h.c, "train.out_dir", qa.c_str()), TRAINRT_OK);
    std::atomic<bool> writer_done{false};
    std::atomic<int> bad_writer_status{0};
    std::thread writer([&] {
        for (int i = 0; i < 3000; ++i) {
            const trainrt_status st =
                trainrt_config_set(h.c, "train.out_dir", (i % 2 ? qa : qb).c_str());
            if (st != TRAINRT_OK && st != TRAINRT_ERR_BUSY) bad_writer_status = st;
        }
        writer_done = true;
    });
    int ok_reads = 0, busy_reads = 0;
    std::vector<std::string> problems;
    std::vector<char> buf(4096);
    while (!writer_done || ok_reads == 0) {
        size_t needed = 0;
        trainrt_status st = trainrt_config_get_string(buf.data(), buf.size(), &needed, h.c,
                                                      "train.out_dir");
        if (st == TRAINRT_OK) {
            ++ok_reads;
            const std::string v(buf.data());
            const std::string leaf = fs::path(v).filename().string();
            if (leaf != a && leaf != b)
                problems.push_back("torn value: " + v.substr(0, 80));
        } else if (st == TRAINRT_ERR_BUSY) {
            ++busy_reads;
            if (!names(trainrt_last_error_message(), "trainrt_config_get_string"))
                problems.push_back(std::string("BUSY without the function: ") +
                                   trainrt_last_error_message());
        } else {
            problems.push_back("get_string: status " + std::to_string(st));
        }
        st = trainrt_config_dump(buf.data(), buf.size(), &needed, h.c);
        if (st != TRAINRT_OK && st != TRAINRT_ERR_BUSY)
            problems.push_back("dump: status " + std::to_string(st));
        double lr = 0;
        st = trainrt_config_get_double(&lr, h.c, "optim.lr");
        if (st != TRAINRT_OK && st != TRAINRT_ERR_BUSY)
            problems.push_back("get_double: status " + std::to_string(st));
        trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
        st = trainrt_config_model_info(&info, h.c);
        if (st != TRAINRT_OK && st != TRAINRT_ERR_BUSY)
            problems.push_back("model_info: status " + std::to_string(st));
        if (problems.size() > 5) break;
    }
    writer.join();
    EXPECT_EQ(bad_writer_status.load(), 0);
    EXPECT_TRUE(problems.empty()) << problems.front();
    EXPECT_GT(ok_reads, 0);
    // Informative: how often the two threads met.
    std::printf("[          ] %d reads ran, %d said BUSY\n", ok_reads, busy_reads);
    // Alone again, every call runs.
    size_t needed = 0;
    EXPECT_EQ(trainrt_config_get_string(buf.data(), buf.size(), &needed, h.c, "train.out_dir"),
              TRAINRT_OK);
    EXPECT_EQ(fs::path(buf.data()).filename().string(), a) << "the last set wins";
}

TEST(CapiConfig, FailedSetLeavesConfigUnchanged) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_from_string(&h.c, "[model]\nn_head = 4\nd_model = 32\n", nullptr),
              TRAINRT_OK);
    const std::string before = dump(h.c);
    ASSERT_FALSE(before.empty());
    struct Case {
        const char* key;
        const char* value;
        const char* must_mention;
    };
    const Case cases[] = {
        {"optim.lrr", "0.1", "optim.lrr"},           // unknown key (with suggestion)
        {"nosection", "1", "nosection"},             // no dot
        {"model.vocab_size", "0", "model.vocab_size"},        // out of range
        {"model.vocab_size", "12.5", "model.vocab_size"},     // wrong type
        {"model.vocab_size", "\"256\"", "model.vocab_size"},  // string for int
        {"optim.lr", "-1", "optim.lr"},              // out of range
        {"optim.lr", "abc def", "optim.lr"},         // not a TOML value
        {"data.train", "shards/x.bin", "data.train"},  // string without quotes
        {"data.sampler", "\"shuffled\"", "data.sampler"},  // not an enum value
        {"accel.fused_adamw", "1", "accel.fused_adamw"},   // int for bool
        {"optim.betas", "[0.9, 1.5]", "optim.betas"},      // element out of range
        {"model.d_model", "30", "model.d_model"},          // cross-key: not divisible by 4
        {"train.seq_len", "1000", "train.seq_len"},        // cross-key: > context_length
        {"optim.min_lr", "1.0", "optim.min_lr"},           // cross-key: > lr
    };
    for (const Case& k : cases) {
        EXPECT_EQ(trainrt_config_set(h.c, k.key, k.value), TRAINRT_ERR_CONFIG)
            << k.key << " = " << k.value;
        const std::string msg = last_error();
        EXPECT_NE(msg.find(k.must_mention), std::string::npos)
            << k.key << " = " << k.value << ": " << msg;
        EXPECT_EQ(dump(h.c), before) << "config changed by failed set " << k.key;
    }
    // Still usable after all the failures.
    EXPECT_EQ(trainrt_config_set(h.c, "model.d_model", "64"), TRAINRT_OK) << last_error();
    EXPECT_NE(dump(h.c), before);
}

TEST(CapiConfig, SetNullArguments) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_create(&h.c), TRAINRT_OK);
    const std::string before = dump(h.c);
    EXPECT_NULL_ARG(trainrt_config_set(nullptr, "optim.lr", "0.1"), "config");
    EXPECT_NULL_ARG(trainrt_config_set(h.c, nullptr, "0.1"), "key");
    EXPECT_NULL_ARG(trainrt_config_set(h.c, "optim.lr", nullptr), "toml_value");
    EXPECT_EQ(dump(h.c), before);
}

// ====================================================================== config: getters

TEST(CapiConfig, GettersOfWrongTypeOrUnknownKeyFailAndLeaveOutputUntouched) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_create(&h.c), TRAINRT_OK);
    int64_t i = -77;
    double d = -77.5;
    int32_t b = -77;
    EXPECT_EQ(trainrt_config_get_int(&i, h.c, "optim.lr"), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("optim.lr"), std::string::npos) << last_error();
    EXPECT_EQ(trainrt_config_get_int(&i, h.c, "data.train"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(trainrt_config_get_int(&i, h.c, "accel.fused_adamw"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(trainrt_config_get_int(&i, h.c, "model.nope"), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("model.nope"), std::string::npos) << last_error();
    EXPECT_EQ(i, -77);
    EXPECT_EQ(trainrt_config_get_double(&d, h.c, "accel.fused_adamw"), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("accel.fused_adamw"), std::string::npos) << last_error();
    EXPECT_EQ(trainrt_config_get_double(&d, h.c, "data.sampler"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(trainrt_config_get_double(&d, h.c, "optim.betas"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(trainrt_config_get_double(&d, h.c, ""), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(d, -77.5);
    EXPECT_EQ(trainrt_config_get_bool(&b, h.c, "model.vocab_size"), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("model.vocab_size"), std::string::npos) << last_error();
    EXPECT_EQ(trainrt_config_get_bool(&b, h.c, "runtime.device"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(trainrt_config_get_bool(&b, h.c, "accel"), TRAINRT_ERR_CONFIG);
    EXPECT_EQ(b, -77);

    char buf[8] = "XXXXXXX";
    size_t needed = 12345;
    EXPECT_EQ(trainrt_config_get_string(buf, sizeof buf, &needed, h.c, "optim.nope"),
              TRAINRT_ERR_CONFIG);
    EXPECT_STREQ(buf, "XXXXXXX");
    EXPECT_EQ(needed, 12345u);
}

TEST(CapiConfig, GetStringGivesTomlTextOfNonStringKeys) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_create(&h.c), TRAINRT_OK);
    EXPECT_EQ(get_string(h.c, "optim.betas"), "[0.9, 0.95]");
    EXPECT_EQ(get_string(h.c, "accel.fused_adamw"), "true");
    EXPECT_EQ(get_string(h.c, "model.n_layer"), "4");
    EXPECT_EQ(get_string(h.c, "runtime.device"), "auto");
    EXPECT_EQ(get_string(h.c, "optim.schedule"), "cosine");
    // A float's text reads back as the same number.
    EXPECT_DOUBLE_EQ(std::stod(get_string(h.c, "optim.lr")), 3e-4);
}

TEST(CapiConfig, GetStringBufferConvention) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_from_string(&h.c, "[data]\ntrain = \"/a/bcdef.bin\"\n", nullptr),
              TRAINRT_OK);
    const std::string full = "/a/bcdef.bin";  // 12 bytes
    // Size query: cap 0, NULL buf.
    size_t needed = 999;
    ASSERT_EQ(trainrt_config_get_string(nullptr, 0, &needed, h.c, "data.train"), TRAINRT_OK);
    EXPECT_EQ(needed, full.size());

    // Small cap: cap-1 bytes and a NUL; needed still the full length; no write past cap.
    char buf[32];
    std::memset(buf, '#', sizeof buf);
    needed = 0;
    ASSERT_EQ(trainrt_config_get_string(buf, 5, &needed, h.c, "data.train"), TRAINRT_OK);
    EXPECT_EQ(needed, full.size());
    EXPECT_STREQ(buf, "/a/b");
    EXPECT_EQ(buf[5], '#');

    // cap == length: one byte short, truncated.
    std::memset(buf, '#', sizeof buf);
    ASSERT_EQ(trainrt_config_get_string(buf, full.size(), &needed, h.c, "data.train"),
              TRAINRT_OK);
    EXPECT_EQ(std::string(buf), full.substr(0, full.size() - 1));
    EXPECT_EQ(buf[full.size()], '#');

    // Exact: length + 1.
    std::memset(buf, '#', sizeof buf);
    ASSERT_EQ(trainrt_config_get_string(buf, full.size() + 1, &needed, h.c, "data.train"),
              TRAINRT_OK);
    EXPECT_EQ(std::string(buf), full);
    EXPECT_EQ(buf[full.size() + 1], '#');

    // cap 1: just the NUL.
    std::memset(buf, '#', sizeof buf);
    ASSERT_EQ(trainrt_config_get_string(buf, 1, &needed, h.c, "data.train"), TRAINRT_OK);
    EXPECT_EQ(buf[0], '\0');
    EXPECT_EQ(buf[1], '#');
    EXPECT_EQ(needed, full.size());

    // An empty string value: needed 0, buf "".
    std::memset(buf, '#', sizeof buf);
    ASSERT_EQ(trainrt_config_get_string(buf, sizeof buf, &needed, h.c, "data.val"), TRAINRT_OK);
    EXPECT_EQ(needed, 0u);
    EXPECT_EQ(buf[0], '\0');
}

TEST(CapiConfig, GetterNullArguments) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_create(&h.c), TRAINRT_OK);
    int64_t i = 5;
    double d = 5;
    int32_t b = 5;
    char buf[16] = "unchanged";
    size_t needed = 777;
    EXPECT_NULL_ARG(trainrt_config_get_int(nullptr, h.c, "model.n_layer"), "out");
    EXPECT_NULL_ARG(trainrt_config_get_int(&i, nullptr, "model.n_layer"), "config");
    EXPECT_NULL_ARG(trainrt_config_get_int(&i, h.c, nullptr), "key");
    EXPECT_NULL_ARG(trainrt_config_get_double(nullptr, h.c, "optim.lr"), "out");
    EXPECT_NULL_ARG(trainrt_config_get_double(&d, nullptr, "optim.lr"), "config");
    EXPECT_NULL_ARG(trainrt_config_get_double(&d, h.c, nullptr), "key");
    EXPECT_NULL_ARG(trainrt_config_get_bool(nullptr, h.c, "accel.cuda_graphs"), "out");
    EXPECT_NULL_ARG(trainrt_config_get_bool(&b, nullptr, "accel.cuda_graphs"), "config");
    EXPECT_NULL_ARG(trainrt_config_get_bool(&b, h.c, nullptr), "key");
    EXPECT_NULL_ARG(trainrt_config_get_string(buf, sizeof buf, &needed, nullptr, "data.train"),
                    "config");
    EXPECT_NULL_ARG(trainrt_config_get_string(buf, sizeof buf, &needed, h.c, nullptr), "key");
    EXPECT_NULL_ARG(trainrt_config_get_string(nullptr, 8, &needed, h.c, "optim.lr"), "buf");
    EXPECT_EQ(i, 5);
    EXPECT_EQ(d, 5);
    EXPECT_EQ(b, 5);
    EXPECT_STREQ(buf, "unchanged");
    EXPECT_EQ(needed, 777u);
}

// ====================================================================== config: dump

TEST(CapiConfig, DumpListsEveryKeyAndLoadsBackToTheSameValues) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_from_string(
                  &h.c, "[model]\nvocab_size = 50\n[optim]\nlr = 0.0123\nbetas = [0.8, 0.9]\n",
                  nullptr),
              TRAINRT_OK);
    const std::string text = dump(h.c);
    for (const char* section : {"[model]", "[data]", "[train]", "[optim]", "[runtime]", "[accel]"})
        EXPECT_NE(text.find(section), std::string::npos) << section << " missing:\n" << text;
    EXPECT_NE(text.find("vocab_size = 50"), std::string::npos) << text;
    EXPECT_NE(text.find("n_layer = 4"), std::string::npos) << "defaults included:\n" << text;
    EXPECT_NE(text.find("lr = 0.0123"), std::string::npos) << text;

    ConfigHandle back;
    ASSERT_EQ(trainrt_config_from_string(&back.c, text.c_str(), ""), TRAINRT_OK) << last_error();
    EXPECT_EQ(dump(back.c), text);
    double lr = 0;
    EXPECT_EQ(trainrt_config_get_double(&lr, back.c, "optim.lr"), TRAINRT_OK);
    EXPECT_EQ(lr, 0.0123);
}

TEST(CapiConfig, DumpBufferConventionAndNulls) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_create(&h.c), TRAINRT_OK);
    const std::string full = dump(h.c);
    ASSERT_GT(full.size(), 100u);
    std::vector<char> buf(full.size() + 8, '#');
    size_t needed = 0;
    ASSERT_EQ(trainrt_config_dump(buf.data(), 11, &needed, h.c), TRAINRT_OK);
    EXPECT_EQ(needed, full.size());
    EXPECT_EQ(std::string(buf.data()), full.substr(0, 10));
    EXPECT_EQ(buf[11], '#');
    std::fill(buf.begin(), buf.end(), '#');
    ASSERT_EQ(trainrt_config_dump(buf.data(), full.size() + 1, &needed, h.c), TRAINRT_OK);
    EXPECT_EQ(std::string(buf.data()), full);
    EXPECT_EQ(buf[full.size() + 1], '#');

    needed = 4242;
    EXPECT_NULL_ARG(trainrt_config_dump(buf.data(), buf.size(), &needed, nullptr), "config");
    EXPECT_NULL_ARG(trainrt_config_dump(nullptr, 16, &needed, h.c), "buf");
    EXPECT_EQ(needed, 4242u);
}

// ====================================================================== config: set_log

TEST(CapiConfig, SetLogAcceptsCallbackAndNullAndRejectsNullConfig) {
    ConfigHandle h;
    ASSERT_EQ(trainrt_config_create(&h.c), TRAINRT_OK);
    auto fn = [](int32_t, const char*, void*) {};
    EXPECT_EQ(trainrt_config_set_log(h.c, fn, nullptr, TRAINRT_LOG_INFO), TRAINRT_OK);
    EXPECT_EQ(trainrt_config_set_log(h.c, nullptr, nullptr, TRAINRT_LOG_INFO), TRAINRT_OK);
    EXPECT_NULL_ARG(trainrt_config_set_log(nullptr, fn, nullptr, TRAINRT_LOG_INFO), "config");
}

// ====================================================================== prepare_bytes

namespace {

std::string sample_text(size_t n) {
    std::string s;
    s.reserve(n);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        s.push_back(static_cast<char>((x >> 16) & 0xff));  // every byte value, incl. 0 and 255
    }
    return s;
}

// Checks one shard written by prepare: header and body = the given bytes as uint16.
void expect_shard(const std::string& path, const std::string& bytes) {
    const std::string file = read_bytes(path);
    ASSERT_EQ(file.size(), 1024 + 2 * bytes.size()) << path;
    int32_t header[256];
    std::memcpy(header, file.data(), sizeof header);
    EXPECT_EQ(header[0], 20240520);
    EXPECT_EQ(header[1], 1);
    EXPECT_EQ(header[2], static_cast<int32_t>(bytes.size()));
    for (int i = 3; i < 256; ++i) ASSERT_EQ(header[i], 0) << "header slot " << i;
    for (size_t i = 0; i < bytes.size(); ++i) {
        uint16_t t;
        std::memcpy(&t, file.data() + 1024 + 2 * i, 2);
        ASSERT_EQ(t, static_cast<unsigned char>(bytes[i])) << path << " token " << i;
    }
}

}  // namespace

TEST(CapiPrepare, SplitsBytesIntoTrainAndValShards) {
    const std::string dir = scratch_dir();
    const std::string text = sample_text(1000);
    write_text(dir + "/in.txt", text);
    int64_t n_train = -1, n_val = -1;
    ASSERT_EQ(trainrt_prepare_bytes(&n_train, &n_val, (dir + "/in.txt").c_str(),
                                    (dir + "/out").c_str(), 0.1),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(n_train, 900);
    EXPECT_EQ(n_val, 100);
    expect_shard(dir + "/out/train.bin", text.substr(0, 900));
    expect_shard(dir + "/out/val.bin", text.substr(900));
    // Files appear only when complete: nothing else (no temporaries, no lock file) is left
    // behind but the manifest of the set (docs/FORMATS.md §1).
    std::set<std::string> files;
    for (const auto& e : fs::directory_iterator(dir + "/out")) files.insert(e.path().filename());
    EXPECT_EQ(files, (std::set<std::string>{"prepare.json", "train.bin", "val.bin"}));
}

TEST(CapiPrepare, CountsMayBeNullAndOutDirIsCreated) {
    const std::string dir = scratch_dir();
    write_text(dir + "/in.txt", sample_text(200));
    const std::string out = dir + "/a/b/c";
    ASSERT_EQ(trainrt_prepare_bytes(nullptr, nullptr, (dir + "/in.txt").c_str(), out.c_str(),
                                    0.25),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(fs::file_size(out + "/train.bin"), 1024u + 2 * 150);
    EXPECT_EQ(fs::file_size(out + "/val.bin"), 1024u + 2 * 50);
    int64_t n_val = -1;
    ASSERT_EQ(trainrt_prepare_bytes(nullptr, &n_val, (dir + "/in.txt").c_str(), out.c_str(), 0.5),
              TRAINRT_OK);
    EXPECT_EQ(n_val, 100);
    EXPECT_EQ(fs::file_size(out + "/train.bin"), 1024u + 2 * 100) << "overwritten";
}

TEST(CapiPrepare, ZeroFractionPutsEverythingInTrain) {
    const std::string dir = scratch_dir();
    write_text(dir + "/in.txt", sample_text(64));
    int64_t n_train = -1, n_val = -1;
    ASSERT_EQ(trainrt_prepare_bytes(&n_train, &n_val, (dir + "/in.txt").c_str(), dir.c_str(), 0.0),
              TRAINRT_OK)
        << last_error();
    EXPECT_EQ(n_train, 64);
    EXPECT_EQ(n_val, 0);
    EXPECT_EQ(fs::file_size(dir + "/train.bin"), 1024u + 128);
}

TEST(CapiPrepare, NullArguments) {
    const std::string dir = scratch_dir();
    write_text(dir + "/in.txt", sample_text(100));
    int64_t n_train = -9, n_val = -9;
    EXPECT_NULL_ARG(trainrt_prepare_bytes(&n_train, &n_val, nullptr, dir.c_str(), 0.1),
                    "text_path");
    EXPECT_NULL_ARG(
        trainrt_prepare_bytes(&n_train, &n_val, (dir + "/in.txt").c_str(), nullptr, 0.1),
        "out_dir");
    EXPECT_EQ(n_train, -9);
    EXPECT_EQ(n_val, -9);
    EXPECT_FALSE(fs::exists(dir + "/train.bin"));
}

TEST(CapiPrepare, BadFractionIsInvalidArgument) {
    const std::string dir = scratch_dir();
    write_text(dir + "/in.txt", sample_text(100));
    for (const double f : {-0.1, 1.0000001, 1.5, std::nan("")}) {
        int64_t n_train = -9, n_val = -9;
        EXPECT_EQ(trainrt_prepare_bytes(&n_train, &n_val, (dir + "/in.txt").c_str(),
                                        (dir + "/out").c_str(), f),
                  TRAINRT_ERR_INVALID_ARGUMENT)
            << f;
        EXPECT_NE(last_error().find("val_fraction"), std::string::npos) << last_error();
        EXPECT_EQ(n_train, -9);
        EXPECT_EQ(n_val, -9);
    }
    EXPECT_FALSE(fs::exists(dir + "/out/train.bin"));
}

TEST(CapiPrepare, MissingTextFileIsIoError) {
    const std::string dir = scratch_dir();
    int64_t n_train = -9, n_val = -9;
    EXPECT_EQ(trainrt_prepare_bytes(&n_train, &n_val, (dir + "/missing.txt").c_str(),
                                    (dir + "/out").c_str(), 0.1),
              TRAINRT_ERR_IO);
    EXPECT_NE(last_error().find("missing.txt"), std::string::npos) << last_error();
    EXPECT_EQ(n_train, -9);
    EXPECT_EQ(n_val, -9);
    EXPECT_FALSE(fs::exists(dir + "/out/train.bin"));
}

TEST(CapiPrepare, EmptyTextFails) {
    const std::string dir = scratch_dir();
    write_text(dir + "/empty.txt", "");
    int64_t n_train = -9;
    EXPECT_LT(trainrt_prepare_bytes(&n_train, nullptr, (dir + "/empty.txt").c_str(),
                                    (dir + "/o1").c_str(), 0.1),
              0);
    EXPECT_NE(last_error().find("empty.txt"), std::string::npos) << last_error();
    EXPECT_EQ(n_train, -9);
    EXPECT_FALSE(fs::exists(dir + "/o1/train.bin"));
}

// ====================================================================== config: MPI communicator

// trainrt_config_set_mpi_comm: the comm is read when a session is created, and with
// dist.backend = "none" never (a pointer that is no MPI_Comm is then harmless). The MPI runs
// themselves (a world of every rank, worlds of one): tests/cli/dist_mpirun.sh.
TEST(CapiConfig, SetMpiCommIsReadOnlyBySessionsThatJoinMpi) {
    EXPECT_NULL_ARG(trainrt_config_set_mpi_comm(nullptr, nullptr), "config");
    trainrt_config* c = nullptr;
    ASSERT_EQ(trainrt_config_create(&c), TRAINRT_OK);
    ASSERT_EQ(trainrt_config_set(c, "runtime.device", "\"cpu\""), TRAINRT_OK);
    const int not_a_comm = 0;
    EXPECT_EQ(trainrt_config_set_mpi_comm(c, &not_a_comm), TRAINRT_OK);
    ASSERT_EQ(trainrt_config_set(c, "dist.backend", "\"none\""), TRAINRT_OK);
    trainrt_session* s = nullptr;
    ASSERT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << trainrt_last_error_message();
    trainrt_metrics m = TRAINRT_METRICS_INIT;
    ASSERT_EQ(trainrt_session_metrics(&m, s), TRAINRT_OK);
    EXPECT_EQ(m.rank, 0);
    EXPECT_EQ(m.world_size, 1);
    trainrt_session_destroy(s);
    EXPECT_EQ(trainrt_config_set_mpi_comm(c, nullptr), TRAINRT_OK);  // back to the default
    trainrt_config_destroy(c);
}
