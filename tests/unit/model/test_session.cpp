// Session-level behaviour that needs internals: grad accumulation equivalence, run-to-run
// determinism, and what the startup log says about accel.attention / accel.deterministic.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/session.h"

using namespace trt;

namespace {

Config tiny_config(int64_t batch, int64_t grad_accum) {
    Config c = Config::from_string(
        "[model]\nvocab_size = 17\ncontext_length = 8\nn_layer = 2\nn_head = 2\nd_model = 8\n"
        "[train]\nseq_len = 6\nsteps = 10\n[optim]\nlr = 0.01\nwarmup_steps = 2\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
        "");
    c.set("train.batch_size", std::to_string(batch));
    c.set("train.grad_accum", std::to_string(grad_accum));
    return c;
}

std::vector<int32_t> random_tokens(size_t n, int seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(0, 16);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = d(rng);
    return t;
}

}  // namespace

// 2 micro-batches of 2 rows == 1 micro-batch of 4 rows (same tokens): same loss, same
// update up to float summation order.
TEST(Session, GradAccumEqualsLargerBatch) {
    Session accum(tiny_config(2, 2), LogSink{});
    Session whole(tiny_config(4, 1), LogSink{});
    for (int s = 0; s < 3; ++s) {
        const std::vector<int32_t> tokens = random_tokens(4 * 7, s);
        const StepResult a = accum.step_tokens(tokens.data(), tokens.size());
        const StepResult b = whole.step_tokens(tokens.data(), tokens.size());
        EXPECT_NEAR(a.loss, b.loss, 1e-6 * b.loss) << "step " << s + 1;
        EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-5 * b.grad_norm) << "step " << s + 1;
        EXPECT_EQ(a.tokens, b.tokens);
        EXPECT_DOUBLE_EQ(a.lr, b.lr);
    }
    // Same parameters afterwards: compare through a forward on fixed tokens.
    const std::vector<int32_t> probe = random_tokens(2 * 7, 99);
    const double la = accum.forward(probe.data(), 2, 6, nullptr, 0);
    const double lb = whole.forward(probe.data(), 2, 6, nullptr, 0);
    EXPECT_NEAR(la, lb, 1e-5 * lb);
}

TEST(Session, IdenticalRunsAreBitwiseEqual) {
    Session a(tiny_config(2, 2), LogSink{});
    Session b(tiny_config(2, 2), LogSink{});
    for (int s = 0; s < 4; ++s) {
        const std::vector<int32_t> tokens = random_tokens(4 * 7, 10 + s);
        EXPECT_EQ(a.step_tokens(tokens.data(), tokens.size()).loss,
                  b.step_tokens(tokens.data(), tokens.size()).loss);
    }
}

TEST(Session, StepWithoutTrainDataIsAConfigError) {
    Session s(tiny_config(2, 1), LogSink{});
    try {
        s.step();
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config);
        EXPECT_NE(std::string(e.what()).find("data.train"), std::string::npos);
    }
}

namespace {

struct Captured {
    std::vector<std::pair<LogLevel, std::string>> lines;
    static void fn(int32_t level, const char* message, void* payload) {
        static_cast<Captured*>(payload)->lines.emplace_back(static_cast<LogLevel>(level),
                                                            message);
    }
    // The first line starting with prefix ("" if none).
    std::string starting(const std::string& prefix) const {
        for (const auto& l : lines)
            if (l.second.rfind(prefix, 0) == 0) return l.second;
        return "";
    }
    size_t warnings() const {
        size_t n = 0;
        for (const auto& l : lines) n += l.first == LogLevel::Warn;
        return n;
    }
};

LogSink sink_into(Captured& c) { return LogSink{&Captured::fn, &c, TRAINRT_LOG_DEBUG}; }

}  // namespace

// accel.attention = "cudnn" not taken: the reason is a WARN line of its own, besides the
// acceleration line's bracket (a WARN-only sink still learns it). The CPU has no cuDNN.
TEST(SessionLog, CudnnAttentionNotTakenIsAWarning) {
    Config c = tiny_config(2, 1);
    c.set("accel.attention", "\"cudnn\"");
    Captured log;
    Session s(c, sink_into(log));
    const std::string accel = log.starting("acceleration:");
    EXPECT_NE(accel.find(" attention=matmul (cudnn)"), std::string::npos) << accel;
    ASSERT_EQ(log.warnings(), 1u);
    const std::string warn = log.starting("attention:");
    EXPECT_NE(warn.find("accel.attention = \"cudnn\""), std::string::npos) << warn;
    EXPECT_NE(warn.find("runs on the matmul path"), std::string::npos) << warn;
    EXPECT_NE(warn.find("CPU backend has no cuDNN attention"), std::string::npos) << warn;
    for (const auto& l : log.lines)
        if (l.second == warn) EXPECT_EQ(l.first, LogLevel::Warn);

    // Not asked for: no warning.
    Captured quiet;
    Session q(tiny_config(2, 1), sink_into(quiet));
    EXPECT_EQ(quiet.warnings(), 0u);
    EXPECT_EQ(quiet.starting("attention:"), "");
}

// accel.deterministic is reported; the CPU is deterministic whatever it is set to.
TEST(SessionLog, DeterministicIsReportedAndAlwaysOnForTheCpu) {
    Captured on;
    Session a(tiny_config(2, 1), sink_into(on));
    EXPECT_NE(on.starting("acceleration:").find(" deterministic=on "), std::string::npos)
        << on.starting("acceleration:");
    Config c = tiny_config(2, 1);
    c.set("accel.deterministic", "false");
    Captured off;
    Session b(c, sink_into(off));
    EXPECT_NE(off.starting("acceleration:")
                  .find(" deterministic=on (off; cpu: always deterministic) "),
              std::string::npos)
        << off.starting("acceleration:");
}
