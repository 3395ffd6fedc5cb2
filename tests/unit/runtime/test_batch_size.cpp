// train.batch_size = "auto" (issue 19): the search (largest_fitting), the host's estimate
// against runtime.memory_limit, the allocation probe of a backend with its own memory (a
// recording backend playing a GPU of a fixed size), and what the session records.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "model/lora.h"
#include "runtime/batch_size.h"
#include "runtime/model_info.h"
#include "runtime/recording_backend.h"
#include "runtime/session.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "batch_size" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

Config auto_config(const std::string& dir, int64_t memory_limit, const char* sampler = "random",
                   int64_t tokens = 5000) {
    std::mt19937 rng(3);
    std::uniform_int_distribution<uint32_t> d(0, 63);
    std::vector<uint32_t> ids(static_cast<size_t>(tokens));
    for (uint32_t& x : ids) x = d(rng);
    write_shard(dir + "/train.bin", ids.data(), tokens, 2);
    Config c = Config::from_string(
        "[model]\nvocab_size = 64\ncontext_length = 32\nn_layer = 2\nn_head = 2\nd_model = 16\n"
        "[train]\nbatch_size = \"auto\"\nseq_len = 16\nsteps = 4\neval_every = 0\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
        "");
    c.set("data.train", "\"" + dir + "/train.bin\"");
    c.set("data.sampler", std::string("\"") + sampler + "\"");
    c.set("runtime.memory_limit", std::to_string(memory_limit));
    return c;
}

int64_t estimate(const Config& c, int B) {
    const RunConfig r = c.run();
    const auto be = make_cpu_backend(1);
    return model_info(run_model_spec(r), B, static_cast<int>(r.train.seq_len), *be, nullptr,
                      r.train.trainable, r.train.recompute)
        .bytes_total;
}

}  // namespace

TEST(LargestFitting, FindsTheBoundaryWithFewCalls) {
    for (int64_t answer : {1, 2, 3, 7, 8, 9, 100, 1000, 4095, 4096}) {
        int calls = 0;
        const int64_t got = largest_fitting(4096, [&](int64_t b) {
            ++calls;
            return b <= answer;
        });
        EXPECT_EQ(got, answer);
        EXPECT_LE(calls, 26) << "answer " << answer;
    }
    EXPECT_EQ(largest_fitting(4096, [](int64_t) { return false; }), 0);
    EXPECT_EQ(largest_fitting(5, [](int64_t) { return true; }), 5);
    EXPECT_EQ(largest_fitting(0, [](int64_t) { return true; }), 0);
}

// The host: the largest B whose estimate fits runtime.memory_limit, recorded in the
// session's config (so its checkpoints hold the number).
TEST(AutoBatchSize, TheEstimateWithinTheMemoryLimit) {
    const std::string dir = test_dir();
    Config c = auto_config(dir, 0);
    const int64_t e10 = estimate(c, 10), e11 = estimate(c, 11);
    ASSERT_LT(e10, e11);
    c = auto_config(dir, (e10 + e11) / 2);
    Session s(c, LogSink{});
    const std::string dump = s.config().dump();
    EXPECT_NE(dump.find("\nbatch_size = 10\n"), std::string::npos) << dump;
    EXPECT_GE(s.step().tokens, 0);
    // The plan's estimate is what the session holds, within the estimate's 5%.
    const double held = static_cast<double>(s.metrics().bytes_in_use);
    EXPECT_NEAR(held, static_cast<double>(e10), 0.05 * static_cast<double>(e10));
}

TEST(AutoBatchSize, TheSequentialSamplerNeedsAWindowPerRow) {
    const std::string dir = test_dir();
    // 16 * 20 + 1 tokens: 20 rows of 16 fit one shard, 21 do not.
    Session s(auto_config(dir, int64_t{1} << 40, "sequential", 16 * 20 + 1), LogSink{});
    EXPECT_NE(s.config().dump().find("\nbatch_size = 20\n"), std::string::npos);
}

TEST(AutoBatchSize, NothingFitsIsAnOutOfMemoryError) {
    const std::string dir = test_dir();
    try {
        Session s(auto_config(dir, 1000), LogSink{});
        FAIL() << "a 1000-byte budget fitted a model";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::OutOfMemory);
        EXPECT_NE(std::string(e.what()).find("train.batch_size = \"auto\""), std::string::npos)
            << e.what();
    }
}

// A backend with its own memory is probed by allocating: here a recording backend playing a
// device of a fixed size. The chosen B fits (the session runs in it) and B + 1 does not.
TEST(AutoBatchSize, ADeviceIsProbedByAllocation) {
    const std::string dir = test_dir();
    Config c = auto_config(dir, 0);
    const size_t cap = static_cast<size_t>(estimate(c, 12)) + kSessionHeadroomBytes;
    graph_test::RecorderKnobs knobs;
    knobs.memory_cap = cap;
    knobs.device_memory = true;
    auto make = [&] {
        return std::unique_ptr<Backend>(
            new graph_test::RecordingBackend(make_cpu_backend(1), knobs));
    };
    const BackendFactory factory = [&](const RunConfig&) {
        BackendSelection s;
        s.backend = make();
        s.precision = Precision::Fp32;
        return s;
    };
    c.set("accel.cuda_graphs", "false");
    Session s(c, LogSink{}, factory);
    const RunConfig r = s.config().run();
    const int B = static_cast<int>(r.train.batch_size);
    ASSERT_GE(B, 1);
    EXPECT_LE(B, 12);
    s.step();
    const ModelSpec spec = run_model_spec(r);
    const DecoderOptions options(r.train.trainable, r.train.recompute, r.model.seed);
    // The train split, resident on a device, and what the session holds besides.
    const size_t resident = 5000 * 2 + kSessionHeadroomBytes;
    EXPECT_TRUE(fits_by_allocation(make, spec, B, 16, options, resident));
    EXPECT_FALSE(fits_by_allocation(make, spec, B + 1, 16, options, resident));
}
