// A stop request seen between the micro-batches of a step (issue 37: a run with
// train.grad_accum = 10^6 outlived `timeout 120` by 25 minutes): train() abandons the step in
// flight and returns Stopped with the session exactly as after the previous step — weights,
// AdamW state, step count and sampler cursor — so a checkpoint taken then is the one an
// uninterrupted run writes at that step, and training on (in the same session, or resumed
// from that checkpoint) gives the uninterrupted run's losses and bytes.
// The stop is requested from inside a chosen micro-batch through the RecordingBackend's
// on_op hook (recording_backend.h), so where it lands is exact; no timing is involved.
// With accel.cuda_graphs the eager warm-up step is abandoned the same way, while the step
// being recorded is not (a recording must hold every micro-batch).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "config/config.h"
#include "data/prepare.h"
#include "runtime/recording_backend.h"
#include "runtime/session.h"

namespace fs = std::filesystem;
using trt::graph_test::RecordingBackend;

namespace {

constexpr int kGradAccum = 3;
constexpr int kSteps = 6;

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name)
        if (c == '/') c = '_';
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "session_stop" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::mt19937 gen(11);
    std::uniform_int_distribution<uint32_t> d(0, 63);
    // Two shards: the sequential cursor crosses a boundary within the run.
    for (auto [file, n] : {std::pair<const char*, int64_t>{"train_0.bin", 700},
                           std::pair<const char*, int64_t>{"train_1.bin", 500}}) {
        std::vector<uint32_t> t(static_cast<size_t>(n));
        for (auto& x : t) x = d(gen);
        trt::write_shard((dir / file).string(), t.data(), n, 2);
    }
    return dir.string();
}

trt::Config make_config(const std::string& dir, const std::string& sampler,
                        bool resident = false, bool graphs = false) {
    trt::Config c = trt::Config::from_string(
        "[model]\nvocab_size = 64\ncontext_length = 16\nn_layer = 2\nn_head = 2\n"
        "d_model = 16\nseed = 3\n"
        "[data]\ntrain = \"train_*.bin\"\nseed = 5\n"
        "[train]\nbatch_size = 2\nseq_len = 16\nsteps = 6\neval_every = 0\n"
        "[optim]\nlr = 3e-3\nwarmup_steps = 2\nschedule = \"cosine\"\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\nlog_every = 1\n",
        dir);
    c.set("train.grad_accum", std::to_string(kGradAccum));
    c.set("data.sampler", "\"" + sampler + "\"");
    c.set("data.placement", resident ? "\"device\"" : "\"host\"");
    c.set("accel.cuda_graphs", graphs ? "true" : "false");
    return c;
}

// A session on a RecordingBackend whose on_op hook runs `hook(rec, op)`.
struct Rig {
    RecordingBackend* rec = nullptr;
    std::function<void(RecordingBackend&, const char*)> hook;
    std::vector<std::string> log;
    std::unique_ptr<trt::Session> session;

    Rig(const trt::Config& config, bool device_memory) {
        trt::LogSink sink;
        sink.fn = [](int32_t, const char* message, void* payload) {
            static_cast<std::vector<std::string>*>(payload)->push_back(message);
        };
        sink.payload = &log;
        sink.min_level = TRAINRT_LOG_INFO;
        trt::BackendFactory factory = [this, device_memory](const trt::RunConfig& run) {
            RecordingBackend::Knobs knobs;
            knobs.device_memory = device_memory;
            knobs.on_op = [this](const char* op) {
                if (hook) hook(*rec, op);
            };
            auto r = std::make_unique<RecordingBackend>(
                trt::make_cpu_backend(static_cast<int>(run.runtime.threads)), knobs);
            rec = r.get();
            trt::BackendSelection sel;
            sel.backend = std::move(r);
            sel.precision = trt::Precision::Fp32;
            return sel;
        };
        session = std::make_unique<trt::Session>(config, sink, factory);
    }
    // Requests a stop while the n-th micro-batch from now runs eagerly (1-based), once.
    void stop_in_micro_batch(int n) {
        auto left = std::make_shared<int>(n);
        hook = [this, left](RecordingBackend& r, const char* op) {
            if (*left > 0 && !r.capturing() && std::strcmp(op, "accumulate_loss") == 0 &&
                --*left == 0)
                session->request_stop();
        };
    }
    bool logged(const std::string& text) const {
        for (const std::string& l : log)
            if (l.find(text) != std::string::npos) return true;
        return false;
    }
};

// train(n) with every step's loss (log_every = 1) appended to `losses`, as IEEE bits.
trt::TrainOutcome train(trt::Session& s, int64_t n, std::vector<uint64_t>& losses) {
    return s.train(n, [&](const trainrt_progress& p) {
        if (p.kind == TRAINRT_PROGRESS_STEP) {
            uint64_t bits;
            std::memcpy(&bits, &p.loss, sizeof bits);
            losses.push_back(bits);
        }
        return true;
    });
}

std::string read_bytes(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// state.json without its "run" line: the metrics run id (FORMATS.md §4) is drawn per fresh
// session, so two independent sessions differ there and nowhere else.
std::string without_run_id(std::string json) {
    const size_t at = json.find("\n  \"run\": ");
    if (at != std::string::npos) json.erase(at, json.find('\n', at + 1) - at);
    return json;
}

// The same state: the weights, AdamW moments and (same config) state.json — step, tokens,
// sampler cursor, loss scale — byte for byte (but for the run id).
void expect_same_checkpoint(const std::string& got, const std::string& want,
                            const std::string& what, bool same_config = true) {
    for (const char* file : {"model.safetensors", "optimizer.safetensors"})
        EXPECT_TRUE(read_bytes(fs::path(got) / file) == read_bytes(fs::path(want) / file))
            << what << ": " << file << " differs from the uninterrupted run's";
    if (same_config)
        EXPECT_EQ(without_run_id(read_bytes(fs::path(got) / "state.json")),
                  without_run_id(read_bytes(fs::path(want) / "state.json")))
            << what << ": state.json differs from the uninterrupted run's";
}

// The uninterrupted run: its losses, and checkpoints after step `at` and at the end.
struct Reference {
    std::vector<uint64_t> losses;
    std::string at_step, at_end;
};

Reference reference_run(const std::string& dir, const trt::Config& config, int at,
                        bool device_memory) {
    Reference ref;
    Rig rig(config, device_memory);
    EXPECT_EQ(train(*rig.session, at, ref.losses), trt::TrainOutcome::Completed);
    ref.at_step = (fs::path(dir) / "ref_at_step").string();
    rig.session->save(ref.at_step);
    EXPECT_EQ(train(*rig.session, kSteps - at, ref.losses), trt::TrainOutcome::Completed);
    ref.at_end = (fs::path(dir) / "ref_at_end").string();
    rig.session->save(ref.at_end);
    EXPECT_EQ(ref.losses.size(), static_cast<size_t>(kSteps));
    return ref;
}

class StopMidStep : public ::testing::TestWithParam<std::string> {};

TEST_P(StopMidStep, AbandonsTheStepAndResumesBitExactly) {
    const std::string dir = test_dir();
    const trt::Config config = make_config(dir, GetParam());
    const Reference ref = reference_run(dir, config, 2, false);

    // Stopped inside micro-batch 2 of step 3: seen before micro-batch 3, the step abandoned.
    Rig a(config, false);
    a.stop_in_micro_batch(2 * kGradAccum + 2);
    std::vector<uint64_t> losses;
    EXPECT_EQ(train(*a.session, kSteps, losses), trt::TrainOutcome::Stopped);
    EXPECT_EQ(a.session->metrics().step, 2);
    EXPECT_EQ(a.session->last_step().step, 2);
    EXPECT_EQ(losses.size(), 2u);
    EXPECT_TRUE(a.logged("train: stopped on request during step 3 (before micro-batch 3 of "
                         "train.grad_accum = 3); that step was abandoned"))
        << "the log does not say where the step stopped";
    const std::string ckpt = (fs::path(dir) / "stopped").string();
    a.session->save(ckpt);
    expect_same_checkpoint(ckpt, ref.at_step, "the checkpoint after the abandoned step");

    // Training on in the same session: the uninterrupted run.
    EXPECT_EQ(train(*a.session, kSteps - 2, losses), trt::TrainOutcome::Completed);
    EXPECT_EQ(losses, ref.losses) << "training on after the abandoned step diverged";
    const std::string end_a = (fs::path(dir) / "end_same_session").string();
    a.session->save(end_a);
    expect_same_checkpoint(end_a, ref.at_end, "the same session at the end");

    // Resumed from the checkpoint in a fresh session: the uninterrupted run too.
    Rig b(config, false);
    b.session->load(ckpt);
    std::vector<uint64_t> tail;
    EXPECT_EQ(train(*b.session, kSteps - 2, tail), trt::TrainOutcome::Completed);
    EXPECT_EQ(tail, std::vector<uint64_t>(ref.losses.begin() + 2, ref.losses.end()))
        << "the run resumed from the stop's checkpoint diverged";
    const std::string end_b = (fs::path(dir) / "end_resumed").string();
    b.session->save(end_b);
    expect_same_checkpoint(end_b, ref.at_end, "the resumed session at the end");
}

INSTANTIATE_TEST_SUITE_P(Samplers, StopMidStep, ::testing::Values("sequential", "random"));

// A request made before a step's first micro-batch (here: in the last micro-batch of step 1,
// so the loop's own check before step 2 sees it) stops between steps as before.
TEST(StopMidStep, ARequestDuringTheLastMicroBatchStopsAfterThatStep) {
    const std::string dir = test_dir();
    Rig a(make_config(dir, "sequential"), false);
    a.stop_in_micro_batch(kGradAccum);
    std::vector<uint64_t> losses;
    EXPECT_EQ(train(*a.session, kSteps, losses), trt::TrainOutcome::Stopped);
    EXPECT_EQ(a.session->metrics().step, 1);
    EXPECT_TRUE(a.logged("train: stopped on request after step 1"));
}

// step() is no part of train(): a pending request does not abandon it (it is for the next
// train()).
TEST(StopMidStep, AStandaloneStepIsNotAbandoned) {
    const std::string dir = test_dir();
    Rig a(make_config(dir, "sequential"), false);
    a.stop_in_micro_batch(1);
    a.session->step();
    EXPECT_EQ(a.session->sync().step, 1);
    std::vector<uint64_t> losses;
    EXPECT_EQ(train(*a.session, kSteps, losses), trt::TrainOutcome::Stopped);
    EXPECT_EQ(a.session->metrics().step, 1);
}

// accel.cuda_graphs (data resident, the recorder standing in for CUDA): the warm-up step runs
// eagerly and is abandoned like any other; the recorded step is not (its micro-batches are
// recorded, not run, and a replay runs them all). Either way the run goes on bitwise as the
// eager uninterrupted one, captured once.
TEST(StopMidStep, GraphWarmUpIsAbandonedTheCaptureIsNot) {
    const std::string dir = test_dir();
    const trt::Config eager = make_config(dir, "sequential", true, false);
    const trt::Config graphs = make_config(dir, "sequential", true, true);
    const Reference ref = reference_run(dir, eager, 2, false);

    Rig a(graphs, true);
    a.stop_in_micro_batch(2);  // step 1, the warm-up
    std::vector<uint64_t> losses;
    EXPECT_EQ(train(*a.session, kSteps, losses), trt::TrainOutcome::Stopped);
    EXPECT_EQ(a.session->metrics().step, 0);
    EXPECT_EQ(a.rec->begin_captures(), 0);
    EXPECT_TRUE(a.logged("train: stopped on request during step 1 (before micro-batch 3"));

    // A request while step 2 is recorded: the step completes (captured), train stops after it.
    auto armed = std::make_shared<bool>(true);
    a.hook = [&a, armed](RecordingBackend& r, const char* op) {
        if (*armed && r.capturing() && std::strcmp(op, "accumulate_loss") == 0) {
            a.session->request_stop();
            *armed = false;
        }
    };
    EXPECT_EQ(train(*a.session, kSteps, losses), trt::TrainOutcome::Stopped);
    EXPECT_EQ(a.session->metrics().step, 2);
    EXPECT_EQ(a.rec->captures(), 1);
    EXPECT_EQ(a.rec->discards(), 0);
    const std::string ckpt = (fs::path(dir) / "graph_at_2").string();
    a.session->save(ckpt);
    expect_same_checkpoint(ckpt, ref.at_step, "the graph session at step 2", false);

    EXPECT_EQ(train(*a.session, kSteps - 2, losses), trt::TrainOutcome::Completed);
    EXPECT_EQ(losses, ref.losses) << "the graph session diverged from the eager run";
    EXPECT_EQ(a.rec->begin_captures(), 1);
    EXPECT_EQ(a.rec->replays(), kSteps - 1);  // the capture's own replay, then one a step
}

}  // namespace
