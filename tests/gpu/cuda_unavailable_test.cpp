// runtime.device = "cuda" through the public C API, on whatever machine runs it (labelled
// cpu: it runs everywhere, CI included):
//   - without a usable CUDA backend (no libtrainrt-cuda, or no GPU): session_create fails with
//     TRAINRT_ERR_UNSUPPORTED, a message that names runtime.device and says why, and leaves
//     the out pointer untouched; runtime.device = "auto" falls back to the CPU and trains;
//     "auto" with precision "bf16" then fails (the CPU computes in fp32 only), naming
//     runtime.precision;
//   - with one: the cuda session trains (finite losses, step counter after sync) and the
//     build reports TRAINRT_FEATURE_CUDA_MODULE.
// Which case applies is decided by trying, so the test really checks one of the two on
// every machine. TRAINRT_REQUIRE_CUDA=1 makes "no CUDA backend" a failure (GPU machines).
#include <trainrt/trainrt.h>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

const char* const kToml = R"(
[model]
vocab_size = 32
context_length = 16
n_layer = 1
n_head = 2
d_model = 16

[data]
train = "train.bin"

[train]
batch_size = 2
seq_len = 8
steps = 100
eval_every = 0

[optim]
lr = 0.01

[runtime]
threads = 1
)";

using Sets = std::vector<std::pair<std::string, std::string>>;

class CudaDevice : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_dir();
        write_shard(dir_ + "/train.bin", lcg_tokens(2048, 1, 32));
    }
    void TearDown() override {
        for (trainrt_session* s : sessions_) trainrt_session_destroy(s);
    }
    // session_create's status for the base config plus `sets`; *out untouched on failure.
    trainrt_status create(const Sets& sets, trainrt_session** out) {
        trainrt_config* c = nullptr;
        if (trainrt_config_from_string(&c, kToml, dir_.c_str()) != TRAINRT_OK) {
            ADD_FAILURE() << last_error();
            return TRAINRT_ERR_INTERNAL;
        }
        for (const auto& kv : sets)
            if (trainrt_config_set(c, kv.first.c_str(), kv.second.c_str()) != TRAINRT_OK) {
                ADD_FAILURE() << kv.first << ": " << last_error();
                trainrt_config_destroy(c);
                return TRAINRT_ERR_INTERNAL;
            }
        const trainrt_status st = trainrt_session_create(out, c);
        trainrt_config_destroy(c);
        if (st == TRAINRT_OK) sessions_.push_back(*out);
        return st;
    }
    void train_a_little(trainrt_session* s, const char* what) {
        for (int i = 1; i <= 3; i++) {
            trainrt_step_result r;
            trainrt_step_result_init(&r);
            ASSERT_EQ(trainrt_session_step(&r, s), TRAINRT_OK) << what << ": " << last_error();
            trainrt_step_result_init(&r);
            ASSERT_EQ(trainrt_session_sync(&r, s), TRAINRT_OK) << what << ": " << last_error();
            EXPECT_EQ(r.step, i) << what;
            EXPECT_TRUE(std::isfinite(r.loss)) << what;
            EXPECT_GT(r.loss, 0.0) << what;
        }
    }
    static bool required() {
        const char* e = std::getenv("TRAINRT_REQUIRE_CUDA");
        return e && *e && std::strcmp(e, "0") != 0;
    }

    std::string dir_;
    std::vector<trainrt_session*> sessions_;
};

trainrt_session* const kSentinel = reinterpret_cast<trainrt_session*>(uintptr_t{0x51});

TEST_F(CudaDevice, CudaEitherWorksOrIsUnsupportedWithAReason) {
    trainrt_session* s = kSentinel;
    const trainrt_status st = create({{"runtime.device", "\"cuda\""}}, &s);
    if (st == TRAINRT_OK) {
        std::printf("[  info    ] a CUDA backend is available: checking that it trains\n");
        EXPECT_NE(trainrt_build_features() & TRAINRT_FEATURE_CUDA_MODULE, 0u)
            << "device = cuda works but the build does not report the CUDA module";
        train_a_little(s, "device = cuda");
        return;
    }
    const std::string msg = last_error();
    std::printf("[  info    ] no CUDA backend here: %s\n", msg.c_str());
    EXPECT_FALSE(required()) << "TRAINRT_REQUIRE_CUDA is set but device = cuda fails: " << msg;
    EXPECT_EQ(st, TRAINRT_ERR_UNSUPPORTED) << msg;
    EXPECT_EQ(s, kSentinel) << "a failed create wrote its out pointer";
    EXPECT_NE(msg.find("runtime.device"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
    EXPECT_GT(msg.size(), std::string("runtime.device = \"cuda\": ").size() + 10)
        << "the message should say why: " << msg;
    // Asking again gives the same answer (the loader's result is cached, not half-loaded).
    trainrt_session* s2 = kSentinel;
    EXPECT_EQ(create({{"runtime.device", "\"cuda\""}, {"runtime.precision", "\"fp32\""}}, &s2),
              TRAINRT_ERR_UNSUPPORTED);
    EXPECT_EQ(s2, kSentinel);
}

TEST_F(CudaDevice, AutoAlwaysGivesAWorkingSession) {
    trainrt_session* probe = kSentinel;
    const bool have_cuda = create({{"runtime.device", "\"cuda\""}}, &probe) == TRAINRT_OK;
    trainrt_session* s = nullptr;
    ASSERT_EQ(create({{"runtime.device", "\"auto\""}}, &s), TRAINRT_OK) << last_error();
    train_a_little(s, have_cuda ? "device = auto (cuda)" : "device = auto (cpu fallback)");
    trainrt_session* f = nullptr;
    ASSERT_EQ(create({{"runtime.device", "\"auto\""}, {"runtime.precision", "\"fp32\""}}, &f),
              TRAINRT_OK)
        << last_error();
    train_a_little(f, "device = auto, precision = fp32");
}

// device = auto with a precision: bf16 runs on CUDA, or on the CPU (which stores bf16
// activations too); tf32 needs CUDA — without it an error, never a silent fp32 run.
TEST_F(CudaDevice, AutoWithALowPrecisionRunsItOrSaysWhy) {
    trainrt_session* probe = kSentinel;
    const bool have_cuda = create({{"runtime.device", "\"cuda\""}}, &probe) == TRAINRT_OK;
    trainrt_session* s = kSentinel;
    ASSERT_EQ(create({{"runtime.device", "\"auto\""}, {"runtime.precision", "\"bf16\""}}, &s),
              TRAINRT_OK)
        << last_error();
    train_a_little(s, have_cuda ? "device = auto, precision = bf16 (cuda)"
                                : "device = auto, precision = bf16 (cpu fallback)");
    trainrt_session* h = kSentinel;
    const trainrt_status st =
        create({{"runtime.device", "\"auto\""}, {"runtime.precision", "\"tf32\""}}, &h);
    if (have_cuda) {
        ASSERT_EQ(st, TRAINRT_OK) << last_error();
        train_a_little(h, "device = auto, precision = tf32 (cuda)");
        return;
    }
    EXPECT_EQ(st, TRAINRT_ERR_UNSUPPORTED) << last_error();
    EXPECT_EQ(h, kSentinel);
    EXPECT_NE(last_error().find("runtime.precision"), std::string::npos) << last_error();
}

}  // namespace
