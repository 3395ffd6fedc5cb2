// Session::sample with and without the KV cache, and drawn on the host or by the backend's
// draw_token: the same tokens — greedy and drawn with a temperature — for GPT-2 and Llama
// (grouped-query, rotary), fp32 and bf16, from a prompt longer than the window and for long
// enough that the window restarts several times.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "data/prepare.h"
#include "recording_backend.h"
#include "runtime/session.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info->name();
    for (char& c : name)
        if (c == '/') c = '_';
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "session_sample" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

struct Case {
    const char* name;
    const char* model;      // the [model] keys
    const char* precision;  // runtime.precision
};

const Case kCases[] = {
    {"gpt2_fp32", "vocab_size = 23\ncontext_length = 16\nn_layer = 2\nn_head = 2\nd_model = 16\n",
     "fp32"},
    {"gpt2_bf16", "vocab_size = 23\ncontext_length = 16\nn_layer = 2\nn_head = 2\nd_model = 16\n",
     "bf16"},
    {"llama_gqa_fp32",
     "arch = \"llama\"\nvocab_size = 23\ncontext_length = 16\nn_layer = 2\nn_head = 4\n"
     "n_kv_head = 2\nd_model = 16\nd_ff = 24\n",
     "fp32"},
};

class SessionSample : public ::testing::TestWithParam<Case> {};

TEST_P(SessionSample, TheCacheGivesTheTokensOfTheWholeWindowPath) {
    const Case& c = GetParam();
    const std::string dir = test_dir();
    std::mt19937 rng(4);
    std::vector<uint32_t> ids(2000);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (i * 7 + rng() % 3) % 23;  // learnable
    write_shard(dir + "/train.bin", ids.data(), static_cast<int64_t>(ids.size()), 2);
    Config cfg = Config::from_string(
        std::string("[model]\n") + c.model +
            "[train]\nbatch_size = 4\nseq_len = 16\nsteps = 30\neval_every = 0\n"
            "[optim]\nlr = 0.01\nwarmup_steps = 2\n"
            "[runtime]\ndevice = \"cpu\"\nthreads = 1\nprecision = \"" + c.precision + "\"\n",
        "");
    cfg.set("data.train", "\"" + dir + "/train.bin\"");
    Session s(cfg, LogSink{});
    s.train(30, nullptr);
    std::vector<int32_t> prompt(40);  // longer than the window of 16
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7) % 23);
    for (double temperature : {0.0, 1.0}) {
        SCOPED_TRACE(testing::Message() << "temperature " << temperature);
        TokenSamplingOptions o;
        o.temperature = temperature;
        o.seed = 11;
        const size_t n = 70;  // window restarts every 8 tokens
        std::vector<int32_t> cached(n, -1), whole(n, -2);
        o.kv_cache = true;
        s.sample(prompt.data(), prompt.size(), n, o, cached.data());
        o.kv_cache = false;
        s.sample(prompt.data(), prompt.size(), n, o, whole.data());
        EXPECT_EQ(cached, whole);
        // Short prompt: the first restart comes after 15 tokens.
        o.kv_cache = true;
        s.sample(prompt.data(), 1, n, o, cached.data());
        o.kv_cache = false;
        s.sample(prompt.data(), 1, n, o, whole.data());
        EXPECT_EQ(cached, whole);
        // Drawn by the backend's draw_token from the logits in backend memory (what a device
        // does), cached and not: the host's tokens.
        std::vector<int32_t> by_op(n, -3);
        for (bool kv : {true, false}) {
            o.kv_cache = kv;
            o.backend_draw = false;
            s.sample(prompt.data(), prompt.size(), n, o, whole.data());
            o.backend_draw = true;
            s.sample(prompt.data(), prompt.size(), n, o, by_op.data());
            EXPECT_EQ(by_op, whole) << "kv_cache " << kv;
        }
        o.backend_draw = false;
    }
}

// The decode step as a graph (issue 43) on a backend with CUDA-graph semantics
// (recording_backend.h: a recorded op sees its host arguments as they were at capture, reads
// backend memory when replayed): each single new token runs the captured step — its position
// and draw index uploaded, its input the token drawn before it — and the tokens are the host's
// eager ones, greedy and drawn, through window restarts. A step that took the position or the
// index as a host value would replay the captured token's and part from them.
TEST_P(SessionSample, TheCapturedDecodeStepGivesTheEagerTokens) {
    const Case& c = GetParam();
    const Precision precision =
        std::string(c.precision) == "bf16" ? Precision::Bf16 : Precision::Fp32;
    const std::string dir = test_dir();
    std::vector<uint32_t> ids(2000);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (i * 7 + i / 5) % 23;
    write_shard(dir + "/train.bin", ids.data(), static_cast<int64_t>(ids.size()), 2);
    Config cfg = Config::from_string(
        std::string("[model]\n") + c.model +
            "[train]\nbatch_size = 4\nseq_len = 16\nsteps = 20\neval_every = 0\n"
            "[optim]\nlr = 0.01\nwarmup_steps = 2\n"
            "[runtime]\ndevice = \"cpu\"\nthreads = 1\nprecision = \"" +
            c.precision + "\"\n",
        "");
    cfg.set("data.train", "\"" + dir + "/train.bin\"");
    graph_test::RecordingBackend* rec = nullptr;
    BackendFactory factory = [&rec, precision](const RunConfig& run) {
        auto r = std::make_unique<graph_test::RecordingBackend>(
            make_cpu_backend(static_cast<int>(run.runtime.threads), precision));
        rec = r.get();
        BackendSelection sel;
        sel.backend = std::move(r);
        sel.precision = precision;
        return sel;
    };
    Session eager(cfg, LogSink{});
    Session graphed(cfg, LogSink{}, factory);
    eager.train(20, nullptr);
    graphed.train(20, nullptr);
    ASSERT_NE(rec, nullptr);
    std::vector<int32_t> prompt(5);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 5) % 23);
    for (double temperature : {0.0, 1.0}) {
        for (int top_k : {0, 3}) {
            SCOPED_TRACE(testing::Message() << "temperature " << temperature << " top_k " << top_k);
            TokenSamplingOptions o;
            o.temperature = temperature;
            o.top_k = top_k;
            o.seed = 21;
            const size_t n = 40;  // window restarts every 8 tokens
            std::vector<int32_t> want(n, -1), got(n, -2);
            eager.sample(prompt.data(), prompt.size(), n, o, want.data());
            const int replays = rec->replays(Session::kDecodeGraph);
            const int captures = rec->captures(Session::kDecodeGraph);
            o.backend_draw = true;
            graphed.sample(prompt.data(), prompt.size(), n, o, got.data());
            EXPECT_EQ(got, want);
            EXPECT_EQ(rec->captures(Session::kDecodeGraph), captures + 1) << "one per call";
            const std::vector<int> held = rec->graph_ids();
            EXPECT_EQ(std::count(held.begin(), held.end(), Session::kDecodeGraph), 0)
                << "the decode graph outlived its call (it holds the call's buffers)";
            // Single-token steps: all but the first token and the restarts' re-reads, less
            // the warm-up (eager) and the capture (which replays once itself).
            EXPECT_GT(rec->replays(Session::kDecodeGraph) - replays, 20);
            // A stop id: the text ends at its first occurrence on both paths (the graphed
            // one drew on ahead of the host and drops those draws).
            o.stop_ids = {want[25]};
            o.backend_draw = false;
            const size_t n_eager = eager.sample(prompt.data(), prompt.size(), n, o, want.data());
            o.backend_draw = true;
            std::fill(got.begin(), got.end(), -2);
            const size_t n_graph = graphed.sample(prompt.data(), prompt.size(), n, o, got.data());
            EXPECT_EQ(n_graph, n_eager);
            EXPECT_LE(n_eager, 26u);
            EXPECT_TRUE(std::equal(want.begin(), want.begin() + n_eager, got.begin()));
        }
    }
    EXPECT_EQ(rec->violations(), 0) << rec->last_violation();
}

INSTANTIATE_TEST_SUITE_P(Families, SessionSample, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
