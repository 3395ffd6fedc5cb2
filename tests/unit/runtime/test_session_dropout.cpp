// model.dropout and lora.dropout through the Session (issue 19): training drops and
// evaluation does not; the masks are keyed by the step, so a resumed run draws what the
// uninterrupted one does (bit-exact resume), and the memory plan counts the dropped
// probabilities attention keeps. (The masks themselves: the op cases and the PyTorch
// reference; the gradients through them: test_decoder; graph replay: test_graph_replay.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "model/lora.h"
#include "runtime/model_info.h"
#include "runtime/session.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "session_dropout" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

// A run drawing from a shard with the random sampler (the masks and the batches both depend
// on the step).
Config config(const std::string& dir, double dropout, double lora_dropout = 0.0) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<uint32_t> d(0, 16);
    std::vector<uint32_t> ids(400);
    for (uint32_t& x : ids) x = d(rng);
    write_shard(dir + "/train.bin", ids.data(), static_cast<int64_t>(ids.size()), 2);
    Config c = Config::from_string(
        "[model]\nvocab_size = 17\ncontext_length = 8\nn_layer = 2\nn_head = 2\nd_model = 8\n"
        "[train]\nbatch_size = 2\nseq_len = 6\ngrad_accum = 2\nsteps = 10\neval_every = 0\n"
        "[optim]\nlr = 0.01\nwarmup_steps = 2\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
        "");
    c.set("data.train", "\"" + dir + "/train.bin\"");
    c.set("model.dropout", std::to_string(dropout));
    if (lora_dropout > 0) {
        c.set("lora.rank", "2");
        c.set("lora.target_modules", "[\"all-linear\"]");
        c.set("lora.dropout", std::to_string(lora_dropout));
    }
    return c;
}

bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<int32_t> probe() {
    std::vector<int32_t> t(2 * 7);  // B rows of T + 1 (inputs and targets)
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>((i * 5) % 17);
    return t;
}

}  // namespace

TEST(SessionDropout, TrainingDropsAndEvaluationDoesNot) {
    const std::string dir = test_dir();
    Session plain(config(dir, 0.0), LogSink{});
    Session dropped(config(dir, 0.3), LogSink{});
    const std::vector<int32_t> p = probe();
    // The same init: evaluation (forward) never drops, so the two agree bit for bit.
    EXPECT_TRUE(same(plain.forward(p.data(), 2, 6, nullptr, 0),
                     dropped.forward(p.data(), 2, 6, nullptr, 0)));
    // The same batch, but the training loss is the dropped model's.
    const StepResult a = plain.step(), b = dropped.step();
    EXPECT_FALSE(same(a.loss, b.loss));
    // Evaluation stays deterministic after training.
    EXPECT_TRUE(same(dropped.forward(p.data(), 2, 6, nullptr, 0),
                     dropped.forward(p.data(), 2, 6, nullptr, 0)));
}

TEST(SessionDropout, ResumeIsBitExact) {
    for (const double lora_dropout : {0.0, 0.25}) {
        const std::string dir = test_dir();
        Session a(config(dir, 0.2, lora_dropout), LogSink{});
        a.step();
        a.step();
        const std::string ckpt = a.save(dir + "/step2");
        Session b(config(dir, 0.2, lora_dropout), LogSink{});
        b.load(ckpt);
        for (int s = 3; s <= 5; ++s) {
            const StepResult ra = a.step(), rb = b.step();
            EXPECT_TRUE(same(ra.loss, rb.loss)) << "step " << s << ": " << ra.loss << " vs "
                                                << rb.loss << " (lora.dropout " << lora_dropout
                                                << ")";
            EXPECT_TRUE(same(ra.grad_norm, rb.grad_norm)) << "step " << s;
        }
        const std::vector<int32_t> p = probe();
        EXPECT_TRUE(same(a.forward(p.data(), 2, 6, nullptr, 0), b.forward(p.data(), 2, 6, nullptr, 0)));
    }
}

// Attention dropout doubles the attention state (backend.h: room for P' beside the backend's
// own, which CUDA's matmul path fills): the plan (model_info) and the session's allocation
// both grow by exactly one more copy of the attention state per layer.
TEST(SessionDropout, ThePlanCountsTheDroppedProbabilities) {
    const std::string dir = test_dir();
    Session plain(config(dir, 0.0), LogSink{});
    Session dropped(config(dir, 0.1), LogSink{});
    const int64_t grew = dropped.metrics().bytes_in_use - plain.metrics().bytes_in_use;
    const auto be = make_cpu_backend(1);
    const size_t saved = be->attention_saved_floats(trt::AttentionShape::from_width(2, 6, 8, 2, 2));
    // Each layer's attention state (rounded up to 64 bytes, as every buffer of the plan)
    // doubles; two layers.
    auto rounded = [](size_t bytes) { return static_cast<int64_t>((bytes + 63) / 64 * 64); };
    EXPECT_EQ(grew, 2 * (rounded(2 * saved * 4) - rounded(saved * 4)));
    const RunConfig r0 = config(dir, 0.0).run(), r1 = config(dir, 0.1).run();
    const ModelInfo i0 = model_info(run_model_spec(r0), 2, 6, *be, nullptr, {}, Recompute::None);
    const ModelInfo i1 = model_info(run_model_spec(r1), 2, 6, *be, nullptr, {}, Recompute::None);
    EXPECT_EQ(i1.bytes_activations - i0.bytes_activations, grew);
}
