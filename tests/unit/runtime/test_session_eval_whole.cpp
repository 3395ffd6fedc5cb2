// Whole-split evaluation (data/eval_windows.h, runtime/session_eval.cpp): every target of the
// stream scored exactly once — N tokens give N - 1 targets, whatever B and T — and the mean
// equals a brute-force forward of each window on its own; shards are one stream; an empty
// train split evaluates but does not train.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "data/eval_windows.h"
#include "data/prepare.h"
#include "runtime/session.h"

using namespace trt;

namespace {

std::vector<int32_t> random_tokens(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(0, 16);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = d(rng);
    return t;
}

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::filesystem::path dir = std::filesystem::path(TRAINRT_TEST_TMP) / "eval_whole" /
                                      info->name();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
}

void write_ids(const std::string& path, const std::vector<int32_t>& t) {
    const std::vector<uint32_t> ids(t.begin(), t.end());
    write_shard(path, ids.data(), static_cast<int64_t>(ids.size()), 2);
}

Config config(int64_t B, int64_t T, const std::string& val = "", const std::string& mode = "") {
    Config c = Config::from_string(
        "[model]\nvocab_size = 17\ncontext_length = 8\nn_layer = 2\nn_head = 2\nd_model = 8\n"
        "[train]\nsteps = 10\nbatch_size = " + std::to_string(B) + "\nseq_len = " +
            std::to_string(T) + "\n[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
        "");
    if (!val.empty()) c.set("data.val", "\"" + val + "\"");
    if (!mode.empty()) c.set("train.eval_mode", "\"" + mode + "\"");
    return c;
}

// Window by window, one forward each: the sum of its targets' losses over all N - 1 of them.
double brute_force_mean(Session& s, const std::vector<int32_t>& t, int64_t T) {
    const int64_t N = static_cast<int64_t>(t.size());
    double sum = 0;
    int64_t counted = 0;
    for (int64_t start = 0; start + 1 < N; start += T) {
        const int64_t len = std::min(T, N - 1 - start);
        sum += s.forward(t.data() + start, 1, len, nullptr, 0) * static_cast<double>(len);
        counted += len;
    }
    EXPECT_EQ(counted, N - 1);
    return sum / static_cast<double>(counted);
}

}  // namespace

TEST(EvalWindows, CoverEveryTargetOnce) {
    for (int64_t N : {0, 1, 2, 3, 7, 8, 9, 40, 41}) {
        for (int64_t T : {1, 3, 6, 8}) {
            const int64_t W = whole_eval_windows(N, T);
            std::vector<int> scored(static_cast<size_t>(N), 0);
            for (int64_t k = 0; k < W; ++k) {
                const EvalWindow w = whole_eval_window(N, T, k);
                EXPECT_EQ(w.start, k * T);
                EXPECT_GE(w.len, 1);
                EXPECT_LE(w.len, T);
                if (k + 1 < W) EXPECT_EQ(w.len, T) << "only the last window is shorter";
                ASSERT_LE(w.start + w.len + 1, std::max<int64_t>(N, 1)) << "reads past the end";
                for (int64_t i = w.start + 1; i <= w.start + w.len; ++i) scored[i]++;
            }
            for (int64_t i = 0; i < N; ++i)
                EXPECT_EQ(scored[i], i == 0 ? 0 : 1) << N << " " << T << " " << i;
        }
    }
}

// N - 1 targets whatever B, T and N mod T (a partial last window, a last forward with fewer
// rows, exactly full windows, a stream shorter than one window), and the mean is the brute
// force's; the host-token path and the data.val path agree bitwise.
TEST(SessionEvalWhole, CountsEachTargetOnceAndMatchesBruteForce) {
    const std::string dir = test_dir();
    struct Case {
        int64_t B, T, N;
    };
    for (const Case c : {Case{2, 6, 40}, Case{2, 6, 37}, Case{3, 6, 40}, Case{4, 8, 2},
                         Case{2, 8, 6}, Case{1, 5, 23}}) {
        SCOPED_TRACE(testing::Message() << "B " << c.B << " T " << c.T << " N " << c.N);
        const std::vector<int32_t> t = random_tokens(static_cast<size_t>(c.N), 7 + c.N);
        const std::string val = dir + "/val_" + std::to_string(c.N) + ".bin";
        write_ids(val, t);
        Session s(config(c.B, c.T, val, "whole"), LogSink{});
        const WholeEvalResult r = s.eval_whole();
        EXPECT_EQ(r.tokens, c.N - 1);
        EXPECT_EQ(r.windows, (c.N - 1 + c.T - 1) / c.T);
        const double brute = brute_force_mean(s, t, c.T);
        EXPECT_NEAR(r.loss, brute, 1e-6 * brute);
        EXPECT_DOUBLE_EQ(r.perplexity, std::exp(r.loss));
        const WholeEvalResult h = s.eval_whole_tokens(t.data(), t.size());
        EXPECT_EQ(h.loss, r.loss);
        EXPECT_EQ(h.tokens, r.tokens);
        EXPECT_EQ(s.eval(), r.loss) << "train.eval_mode = \"whole\": eval() is the whole eval";
        EXPECT_EQ(s.metrics().last_val_loss, r.loss);
    }
}

// The shards of a split are one stream: cut anywhere, the same windows and the same figures
// (prepare's --shard-tokens cuts a text wherever a shard fills).
TEST(SessionEvalWhole, ShardsAreOneStream) {
    const std::string dir = test_dir();
    const std::vector<int32_t> t = random_tokens(50, 3);
    write_ids(dir + "/one.bin", t);
    write_ids(dir + "/val_000000.bin", std::vector<int32_t>(t.begin(), t.begin() + 17));
    write_ids(dir + "/val_000001.bin", std::vector<int32_t>(t.begin() + 17, t.begin() + 20));
    write_ids(dir + "/val_000002.bin", std::vector<int32_t>(t.begin() + 20, t.end()));
    Session one(config(2, 6, dir + "/one.bin", "whole"), LogSink{});
    Session many(config(2, 6, dir + "/val_*.bin", "whole"), LogSink{});
    const WholeEvalResult a = one.eval_whole(), b = many.eval_whole();
    EXPECT_EQ(a.tokens, 49);
    EXPECT_EQ(b.tokens, 49);
    EXPECT_EQ(a.loss, b.loss);
}

// A val split smaller than one sampled eval batch (B*T + 1) is refused in the sampled mode,
// with the way out named, and taken whole.
TEST(SessionEvalWhole, ASmallValSplitNeedsTheWholeMode) {
    const std::string dir = test_dir();
    write_ids(dir + "/val.bin", random_tokens(10, 5));
    try {
        Session s(config(2, 6, dir + "/val.bin"), LogSink{});
        FAIL() << "expected a Config error";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config);
        EXPECT_NE(std::string(e.what()).find("train.eval_mode = \"whole\""), std::string::npos)
            << e.what();
    }
    Session s(config(2, 6, dir + "/val.bin", "whole"), LogSink{});
    EXPECT_EQ(s.eval_whole().tokens, 9);
}

TEST(SessionEvalWhole, FewerThanTwoTokensAreRefused) {
    Session s(config(2, 6), LogSink{});
    const int32_t one = 3;
    for (size_t n : {size_t{0}, size_t{1}}) {
        try {
            s.eval_whole_tokens(&one, n);
            FAIL() << "expected an error";
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::InvalidArgument);
            EXPECT_NE(std::string(e.what()).find("at least 2"), std::string::npos) << e.what();
        }
    }
    const int32_t bad[] = {1, 17};
    EXPECT_THROW(s.eval_whole_tokens(bad, 2), Error);  // 17 >= vocab_size
    try {
        s.eval_whole();
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config);
        EXPECT_NE(std::string(e.what()).find("data.val is not set"), std::string::npos);
    }
}

// An evaluation-only folder (prepare --val-fraction 1): its empty train.bin does not stop a
// session from evaluating, but step() and train() refuse, naming the split; train() before
// it leaves any trace.
TEST(SessionEvalWhole, AnEmptyTrainSplitEvaluatesButDoesNotTrain) {
    const std::string dir = test_dir();
    const std::string text = dir + "/in.txt";
    {
        std::FILE* f = std::fopen(text.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        std::fputs("a small text, all of it for evaluation", f);
        std::fclose(f);
    }
    const PrepareResult p = prepare_bytes(text, dir + "/data", 1.0);
    ASSERT_EQ(p.train_tokens, 0);
    Config c = Config::from_string(
        "[model]\nvocab_size = 256\ncontext_length = 8\nn_layer = 1\nn_head = 2\nd_model = 8\n"
        "[train]\nbatch_size = 2\nseq_len = 8\nsteps = 10\n[runtime]\ndevice = \"cpu\"\n"
        "threads = 1\n",
        "");
    c.set("data.train", "\"" + dir + "/data/train.bin\"");
    c.set("data.val", "\"" + dir + "/data/val.bin\"");
    c.set("train.out_dir", "\"" + dir + "/out\"");
    Session s(c, LogSink{});
    const WholeEvalResult r = s.eval_whole();
    EXPECT_EQ(r.tokens, p.val_tokens - 1);
    EXPECT_TRUE(std::isfinite(r.loss));
    for (int which = 0; which < 2; ++which) {
        try {
            if (which == 0) s.step();
            else s.train(1, {});
            FAIL() << "expected a Config error";
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::Config);
            EXPECT_NE(std::string(e.what()).find("holds no tokens"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("train.bin"), std::string::npos) << e.what();
        }
    }
    EXPECT_FALSE(std::filesystem::exists(dir + "/out/metrics.jsonl"));
}

// request_stop from another thread ends a long whole eval between forwards with Cancelled,
// as it does a sampled one (no timing is asserted: the stopper asks until the eval returns).
TEST(SessionEvalWhole, RequestStopFromAnotherThreadEndsIt) {
    Session s(config(2, 6), LogSink{});
    const std::vector<int32_t> t = random_tokens(size_t{1} << 21, 11);
    std::atomic<bool> done{false};
    std::thread stopper([&] {
        while (!done.load()) {
            s.request_stop();
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    try {
        s.eval_whole_tokens(t.data(), t.size());
        ADD_FAILURE() << "the eval ran to its end";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Cancelled) << e.what();
        EXPECT_NE(std::string(e.what()).find("stopped on request"), std::string::npos);
    }
    done.store(true);
    stopper.join();
}
