// Session-level behaviour that needs internals: grad accumulation equivalence, run-to-run
// determinism, and what the startup log says about accel.attention / accel.deterministic.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <thread>
#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "data/prepare.h"
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

// tiny_config with train and val shards of random tokens in a folder of this test's own.
Config config_with_data(int64_t eval_batches) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::filesystem::path dir = std::filesystem::path(TRAINRT_TEST_TMP) / "session" /
                                      (std::string(info->test_suite_name()) + "." + info->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const char* name : {"train.bin", "val.bin"}) {
        const std::vector<int32_t> t = random_tokens(400, name[0]);
        const std::vector<uint32_t> ids(t.begin(), t.end());
        write_shard((dir / name).string(), ids.data(), static_cast<int64_t>(ids.size()), 2);
    }
    Config c = tiny_config(2, 1);
    c.set("data.train", "\"" + (dir / "train.bin").string() + "\"");
    c.set("data.val", "\"" + (dir / "val.bin").string() + "\"");
    c.set("train.eval_batches", std::to_string(eval_batches));
    return c;
}

}  // namespace

// A stop request made before an eval is for the next train(): the eval runs to its end and
// leaves the request pending (trainrt.h). Only a request made while it runs interrupts it
// (the next test, with train.eval_batches = 2^40).
TEST(Session, ARequestMadeBeforeAnEvalIsLeftForTheNextTrain) {
    Session s(config_with_data(2), LogSink{});
    s.request_stop();
    EXPECT_TRUE(std::isfinite(s.eval()));
    EXPECT_EQ(s.train(3, {}), TrainOutcome::Stopped);
    EXPECT_EQ(s.metrics().step, 0);
}

// train.eval_batches may be 2^40: request_stop from another thread, while the eval runs,
// ends it between batches with Cancelled (no timing is asserted).
TEST(Session, RequestStopFromAnotherThreadEndsAHugeEval) {
    Session s(config_with_data(int64_t{1} << 40), LogSink{});
    std::atomic<bool> done{false};
    std::thread stopper([&] {
        while (!done.load()) {
            s.request_stop();
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    });
    try {
        s.eval();
        ADD_FAILURE() << "an eval of 2^40 batches returned";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Cancelled);
        EXPECT_NE(std::string(e.what()).find("eval: stopped on request after "), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find(" of 1099511627776 batches"), std::string::npos);
    }
    done.store(true);
    stopper.join();
}

// A stop requested during train()'s eval ends train() as stopped, not as an error; and
// n_steps = INT64_MAX ("until stopped") does not overflow step + n.
TEST(Session, StopDuringTrainsEvalStopsTrain) {
    Config c = config_with_data(int64_t{1} << 40);
    c.set("train.eval_every", "1");
    c.set("runtime.log_every", "1");
    Session s(c, LogSink{});
    int steps_seen = 0;
    const TrainOutcome out =
        s.train(std::numeric_limits<int64_t>::max(), [&](const trainrt_progress& p) {
            if (p.kind == TRAINRT_PROGRESS_STEP) {
                ++steps_seen;
                s.request_stop();  // seen by the eval that follows this step
            }
            return true;
        });
    EXPECT_EQ(out, TrainOutcome::Stopped);
    EXPECT_EQ(steps_seen, 1);
    EXPECT_EQ(s.metrics().step, 1);
}

// The non-finite policy, end to end in the session (issue 15: with optim.lr = 1e38 the run
// went on forever, skipping every step, and saved checkpoints of non-finite weights).
TEST(Session, ADivergedRunStopsAfterMaxSkippedStepsAndSavesNothing) {
    Config c = config_with_data(1);
    c.set("optim.lr", "1e38");
    c.set("optim.warmup_steps", "0");
    c.set("train.max_skipped_steps", "3");
    Session s(c, LogSink{});
    std::string message;
    int steps = 0;
    for (; steps < 50 && message.empty(); ++steps) {
        try {
            s.step();
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::NonFinite);
            message = e.what();
        }
    }
    ASSERT_FALSE(message.empty()) << "50 steps at lr 1e38 and no divergence reported";
    EXPECT_NE(message.find("3 steps in a row had a non-finite gradient"), std::string::npos)
        << message;
    EXPECT_NE(message.find("train.max_skipped_steps = 3"), std::string::npos) << message;
    EXPECT_GE(s.metrics().skipped_steps, 3);
    // Every later step reports it too, until a load.
    EXPECT_THROW(s.step(), Error);
    // The weights are not finite: no checkpoint is written from them.
    const std::string dir = std::string(TRAINRT_TEST_TMP) + "/session/diverged_ckpt";
    std::filesystem::remove_all(dir);
    try {
        s.save(dir);
        FAIL() << "saved a checkpoint of a diverged run";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::NonFinite) << e.what();
        EXPECT_NE(std::string(e.what()).find("save: the parameters: tensor '"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("nothing was written"), std::string::npos);
    }
    EXPECT_FALSE(std::filesystem::exists(dir));
}

// 0 = never stop: the steps are skipped and the run goes on.
TEST(Session, MaxSkippedStepsZeroNeverStops) {
    Config c = config_with_data(1);
    c.set("optim.lr", "1e38");
    c.set("optim.warmup_steps", "0");
    c.set("train.max_skipped_steps", "0");
    Session s(c, LogSink{});
    for (int i = 0; i < 30; ++i) s.step();
    EXPECT_GE(s.metrics().skipped_steps, 25);
}

// A checkpoint whose weights hold a NaN (manifest recomputed, as an attacker or a buggy
// tool would) is refused at load, naming the checkpoint, the file and the tensor; the
// session is left as it was.
TEST(Session, LoadRefusesNonFiniteCheckpointWeights) {
    Config c = config_with_data(1);
    Session s(c, LogSink{});
    s.step();
    const std::string root = std::string(TRAINRT_TEST_TMP) + "/session/nonfinite_ckpt";
    std::filesystem::remove_all(root);
    const std::string good = s.save(root + "/good");
    const ParamTable table(model_spec(c.run().model));
    std::vector<float> params(table.total()), m(table.total()), v(table.total());
    const CheckpointState st = read_checkpoint(good, table, params.data(), m.data(), v.data());
    const size_t at = table.at(Slot::MlpNorm, 1).offset + 2;
    for (const char* which : {"params", "m", "v"}) {
        std::vector<float> p = params, mm = m, vv = v;
        (which[0] == 'p' ? p : which[0] == 'm' ? mm : vv)[at] =
            std::numeric_limits<float>::infinity();
        const std::string bad = root + "/bad_" + which;
        write_checkpoint(bad, table, p.data(), mm.data(), vv.data(), st);
        try {
            s.load(bad);
            ADD_FAILURE() << "loaded a checkpoint with inf in " << which;
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::NonFinite);
            const std::string msg = e.what();
            EXPECT_NE(msg.find("checkpoint '" + bad + "'"), std::string::npos) << msg;
            EXPECT_NE(msg.find("tensor 'h.1.ln_2.weight' holds inf at element 2"),
                      std::string::npos) << msg;
        }
    }
    EXPECT_EQ(s.metrics().step, 1);
    s.load(good);  // a good one still loads
}

// A periodic checkpoint that fails does not end the run (issue 15 item 7): the next one
// tries again, and train() fails only when the last attempt, retried at its end, fails too.
// The failure here: out_dir/latest is a non-empty directory, so pointing it at the new
// checkpoint cannot succeed (even as root).
TEST(Session, FailedPeriodicCheckpointsAreRetriedAndFailOnlyAtTheEnd) {
    for (const bool unblock : {true, false}) {
        Config c = config_with_data(1);
        const std::string out = std::string(TRAINRT_TEST_TMP) + "/session/retry_" +
                                (unblock ? "unblocked" : "blocked");
        std::filesystem::remove_all(out);
        std::filesystem::create_directories(out + "/latest/x");
        c.set("train.out_dir", "\"" + out + "\"");
        c.set("train.checkpoint_every", "2");
        c.set("train.eval_every", "0");
        c.set("runtime.log_every", "1");
        Session s(c, LogSink{});
        auto callback = [&](const trainrt_progress& p) {
            if (unblock && p.step == 3) std::filesystem::remove_all(out + "/latest");
            return true;
        };
        if (unblock) {
            EXPECT_EQ(s.train(5, callback), TrainOutcome::Completed);  // step 4's succeeded
            EXPECT_EQ(s.metrics().step, 5);
            EXPECT_TRUE(std::filesystem::is_regular_file(out + "/latest"));
            continue;
        }
        try {
            s.train(5, callback);
            FAIL() << "train() completed with every checkpoint failing";
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::Io) << e.what();
            const std::string msg = e.what();
            EXPECT_NE(msg.find("the checkpoint at step 5 failed"), std::string::npos) << msg;
            EXPECT_NE(msg.find("as did the one before it"), std::string::npos) << msg;
        }
        EXPECT_EQ(s.metrics().step, 5);  // the run went on past the failures
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

// Each checkpoint written into out_dir is logged once, by the library (issue 38): a run that
// ends on a checkpoint_every step, then saves (as `trainrt train` does at its end), keeps
// the periodic checkpoint and must not report it twice; a save at a new step says its own.
TEST(SessionLog, EachCheckpointIsLoggedOnce) {
    Config c = config_with_data(1);
    const std::string out = std::string(TRAINRT_TEST_TMP) + "/session/logged_once";
    std::filesystem::remove_all(out);
    c.set("train.out_dir", "\"" + out + "\"");
    c.set("train.checkpoint_every", "2");
    c.set("train.eval_every", "0");
    Captured log;
    Session s(c, sink_into(log));
    ASSERT_EQ(s.train(4, nullptr), TrainOutcome::Completed);
    EXPECT_EQ(s.save(""), out + "/step_00000004");  // kept: already written at step 4
    s.step();
    EXPECT_EQ(s.save(""), out + "/step_00000005");
    std::vector<std::string> said;
    for (const auto& l : log.lines)
        if (l.second.rfind("checkpoint: ", 0) == 0) said.push_back(l.second);
    const std::vector<std::string> want = {"checkpoint: " + out + "/step_00000002",
                                           "checkpoint: " + out + "/step_00000004",
                                           "checkpoint: " + out + "/step_00000005"};
    EXPECT_EQ(said, want);
}

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
    EXPECT_NE(warn.find("the cpu backend has no cuDNN attention"), std::string::npos) << warn;
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

// metrics.jsonl's runs (FORMATS.md §5): a checkpoint of an older writer names no run, so a
// session that loads it starts a run id of its own (marked as resumed from that step), and
// its next checkpoint carries that id.
TEST(Session, LoadingACheckpointWithoutARunIdGivesTheRunANewOne) {
    Config c = config_with_data(1);
    const std::string root = std::string(TRAINRT_TEST_TMP) + "/session/run_id_ckpt";
    std::filesystem::remove_all(root);
    c.set("train.out_dir", "\"" + root + "/out\"");
    c.set("train.eval_every", "0");
    std::string old_run;
    {
        Session a(c, LogSink{});
        a.train(2, {});
        const std::string saved = a.save(root + "/with_id");
        CheckpointState st = read_checkpoint_state(saved);
        old_run = st.run_id;
        ASSERT_FALSE(old_run.empty());
        const ParamTable table(model_spec(c.run().model));
        std::vector<float> params(table.total()), m(table.total()), v(table.total());
        read_checkpoint(saved, table, params.data(), m.data(), v.data());
        st.run_id.clear();  // as an older writer wrote it
        write_checkpoint(root + "/old", table, params.data(), m.data(), v.data(), st);
    }
    Session b(c, LogSink{});
    b.load(root + "/old");
    b.train(1, {});
    std::ifstream f(root + "/out/metrics.jsonl");
    std::string line, header;
    while (std::getline(f, line))
        if (line.find("\"split\": \"run\"") != std::string::npos) header = line;
    const size_t at = header.find("\"run\": \"");
    ASSERT_NE(at, std::string::npos) << header;
    const std::string new_run = header.substr(at + 8, header.find('"', at + 8) - at - 8);
    EXPECT_FALSE(new_run.empty());
    EXPECT_NE(new_run, old_run);
    EXPECT_NE(header.find("\"step\": 2, \"split\": \"run\", \"run\": \"" + new_run +
                          "\", \"resumed_from\": 2, "),
              std::string::npos)
        << header;
    EXPECT_EQ(read_checkpoint_state(b.save(root + "/next")).run_id, new_run);
}

// Data whose ids do not fit a model read from model.init_from (issue 38): its vocabulary is
// the folder's, so the error blames the data's tokenizer, not model.vocab_size.
TEST(Session, IdsBeyondAFixedVocabularyBlameTheDataNotVocabSize) {
    Config c = config_with_data(1);
    const std::string dir = std::string(TRAINRT_TEST_TMP) + "/session/fixed_vocab";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string model = Session(c, LogSink{}).save(dir + "/model");
    const std::vector<uint32_t> ids(400, 20);  // >= vocab_size 17
    write_shard(dir + "/wide.bin", ids.data(), static_cast<int64_t>(ids.size()), 2);
    c.set("data.train", "\"" + dir + "/wide.bin\"");
    const auto message = [&](const Config& config) {
        try {
            Session s(config, LogSink{});
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::Format);
            return std::string(e.what());
        }
        ADD_FAILURE() << "the session opened data with ids >= vocab_size";
        return std::string();
    };
    EXPECT_NE(message(c).find("set model.vocab_size above the largest id"), std::string::npos);
    c.set("model.init_from", "\"" + model + "\"");
    const std::string fixed = message(c);
    EXPECT_EQ(fixed.find("set model.vocab_size"), std::string::npos) << fixed;
    for (const std::string& part :
         std::vector<std::string>{"data.train: ", "has id 20 >= vocab_size 17", "exceed the vocabulary of the model in "
          "model.init_from '" + model + "' (17 tokens, fixed by it)", "another tokenizer",
          "with the model's own tokenizer"})
        EXPECT_NE(fixed.find(part), std::string::npos) << "'" << part << "' not in: " << fixed;
    // A folder with a tokenizer: the command that prepares the data with it.
    std::ofstream(model + "/tokenizer.json") << "{}";
    EXPECT_NE(message(c).find("(trainrt prepare --tokenizer " + model + " ...)"), std::string::npos);
}

// A checkpoint that differs from the config only in [lora] (a LoRA config resuming from a
// full run's out_dir, issue 38): the error names the LoRA difference, not model.* keys.
TEST(Session, ALoraMismatchOnLoadNamesLoraNotTheModelShape) {
    const std::string dir = std::string(TRAINRT_TEST_TMP) + "/session/lora_mismatch";
    std::filesystem::remove_all(dir);
    const auto with_rank = [](int rank) {
        Config c = tiny_config(2, 1);
        if (rank > 0) c.set("lora.rank", std::to_string(rank));
        return c;
    };
    const std::string full = Session(with_rank(0), LogSink{}).save(dir + "/full");
    const std::string r4 = Session(with_rank(4), LogSink{}).save(dir + "/r4");
    const auto load_error = [](const Config& c, const std::string& path) {
        Session s(c, LogSink{});
        try {
            s.load(path);
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::Config);
            const std::string msg = e.what();
            EXPECT_EQ(msg.find("model.vocab_size"), std::string::npos) << msg;
            return msg;
        }
        ADD_FAILURE() << "loaded " << path;
        return std::string();
    };
    const std::string onto_full = load_error(with_rank(4), full);
    for (const std::string& part :
         std::vector<std::string>{"checkpoint '" + full + "'", "it is a full-model run (no LoRA "
          "adapters) and the config adds LoRA (lora.rank = 4)", "a train.out_dir of its own",
          "model.init_from = \"" + full + "\""})
        EXPECT_NE(onto_full.find(part), std::string::npos) << "'" << part << "' not in: " << onto_full;
    EXPECT_NE(load_error(with_rank(0), r4).find("it is a LoRA run"), std::string::npos);
    EXPECT_NE(load_error(with_rank(2), r4).find("its LoRA adapters have rank 4 and the config's "
                                                "lora.rank is 2: set lora.rank = 4"),
              std::string::npos);
}
