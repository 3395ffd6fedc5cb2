// The output head's chunk of rows (model/activations.h head_chunk_rows): a backend's own
// logits per chunk (a device's larger chunk: BackendCaps::head_chunk_logits, played here by a
// recording backend), accel.head_chunk_rows over it, the log line that says which, and the
// memory plan (model_info, run_model_info) counting the same logits buffer the session holds.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "backend/run_resolution.h"
#include "data/prepare.h"
#include "model/activations.h"
#include "model/lora.h"
#include "model/trainable.h"
#include "runtime/model_info.h"
#include "runtime/recording_backend.h"
#include "runtime/session.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

constexpr int kB = 8, kT = 16, kN = kB * kT;  // 128 rows a step
constexpr int kVp = 128;                      // vocab_size 100, padded

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "head_chunk" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

Config config(const std::string& dir) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<uint32_t> d(0, 99);
    std::vector<uint32_t> ids(4000);
    for (uint32_t& x : ids) x = d(rng);
    write_shard(dir + "/train.bin", ids.data(), ids.size(), 2);
    Config c = Config::from_string(
        "[model]\nvocab_size = 100\ncontext_length = 16\nn_layer = 2\nn_head = 2\nd_model = 16\n"
        "[train]\nbatch_size = 8\nseq_len = 16\nsteps = 4\neval_every = 0\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\n[accel]\ncuda_graphs = false\n",
        "");
    c.set("data.train", "\"" + dir + "/train.bin\"");
    return c;
}

void collect_line(int32_t, const char* line, void* payload) {
    static_cast<std::vector<std::string>*>(payload)->push_back(line);
}

struct Trace {
    std::vector<std::string> log;
    int64_t bytes_in_use = 0;
    double loss = 0;
    std::string acceleration;  // the "acceleration: ..." line
};

// Two steps of the config on a recording backend whose capabilities() give head_logits (0:
// the CPU's own).
Trace run_twice(const Config& c, size_t head_logits) {
    Trace out;
    graph_test::RecorderKnobs knobs;
    knobs.head_chunk_logits = head_logits;
    const BackendFactory factory = [&](const RunConfig&) {
        BackendSelection s;
        s.backend = std::make_unique<graph_test::RecordingBackend>(make_cpu_backend(1), knobs);
        s.precision = Precision::Fp32;
        return s;
    };
    Session s(c, LogSink{collect_line, &out.log, TRAINRT_LOG_INFO}, factory);
    s.step();
    out.loss = s.step().loss;
    out.bytes_in_use = s.metrics().bytes_in_use;
    for (const std::string& l : out.log)
        if (l.find("acceleration: ") != std::string::npos) out.acceleration = l;
    return out;
}

int64_t planned_activations(const Config& c, HeadChunking head) {
    const RunConfig r = c.run();
    const auto be = make_cpu_backend(1);
    return model_info(run_model_spec(r), kB, kT, *be, nullptr, {}, Recompute::None,
                      StateDType::Fp32, head)
        .bytes_activations;
}

}  // namespace

// The CPU's 32 Mi logits hold all 128 rows: one chunk. A backend that asks for 3 rows' worth
// gets chunks of 3 rows; the session holds 125 rows of logits less, and the plan, told the
// same logits per chunk, counts the same difference. The losses agree (only the order of the
// head's gradient sums differs).
TEST(HeadChunk, TheBackendsLogitsPerChunkAndThePlanAgree) {
    const std::string dir = test_dir();
    const Config c = config(dir);
    const Trace whole = run_twice(c, 0);
    const Trace small = run_twice(c, 3 * kVp);
    EXPECT_NE(whole.acceleration.find(" head_chunk_rows=128 (auto)"), std::string::npos)
        << whole.acceleration;
    EXPECT_NE(small.acceleration.find(" head_chunk_rows=3 (auto)"), std::string::npos)
        << small.acceleration;
    const int64_t logits_bytes = int64_t{kN - 3} * kVp * 4;  // fp32 activations
    EXPECT_EQ(whole.bytes_in_use - small.bytes_in_use, logits_bytes);
    EXPECT_EQ(planned_activations(c, {}) - planned_activations(c, {0, 3 * kVp}), logits_bytes);
    EXPECT_NEAR(small.loss, whole.loss, 1e-5 * std::fabs(whole.loss));
}

// accel.head_chunk_rows wins over the backend's figure, in the session and in the plan.
TEST(HeadChunk, TheKeyOverridesTheBackend) {
    const std::string dir = test_dir();
    Config c = config(dir);
    c.set("accel.head_chunk_rows", "5");
    const Trace five = run_twice(c, 3 * kVp);
    EXPECT_NE(five.acceleration.find(" head_chunk_rows=5 "), std::string::npos)
        << five.acceleration;
    EXPECT_EQ(planned_activations(c, {5, 3 * kVp}), planned_activations(c, {5, 0}));
    c.set("accel.head_chunk_rows", "100000");  // more than a step has: one chunk
    const Trace all = run_twice(c, 3 * kVp);
    EXPECT_NE(all.acceleration.find(" head_chunk_rows=128 "), std::string::npos)
        << all.acceleration;
    EXPECT_THROW(c.set("accel.head_chunk_rows", "-1"), Error);
}

// `trainrt plan` of a CUDA run counts CUDA's chunk (resolve_run), not the sizing CPU
// backend's: a GPT-2-sized head at B 64 x T 1024 holds 10,624 rows of logits, not 640.
TEST(HeadChunk, ThePlanOfACudaRunCountsTheDevicesChunk) {
    Config c = Config::from_string(
        "[model]\nvocab_size = 50257\ncontext_length = 1024\nn_layer = 1\nn_head = 12\n"
        "d_model = 768\n[train]\nbatch_size = 64\nseq_len = 1024\n"
        "[runtime]\ndevice = \"cuda\"\nprecision = \"bf16\"\n",
        "");
    c.set("runtime.device", "\"cpu\"");
    EXPECT_EQ(resolve_run(c.run(), true).head_chunk_logits, kHostHeadChunkLogits);
    c.set("runtime.device", "\"cuda\"");
    const RunResolution cuda = resolve_run(c.run(), true);
    EXPECT_EQ(cuda.head_chunk_logits, kDeviceHeadChunkLogits);
    const int64_t plan_auto = run_model_info(c.run(), cuda).bytes_activations;
    c.set("accel.head_chunk_rows", "640");
    const int64_t plan_640 = run_model_info(c.run(), cuda).bytes_activations;
    EXPECT_EQ(plan_auto - plan_640, int64_t{10624 - 640} * 50304 * 2);  // bf16 logits
}

// A head without a weight gradient (LoRA's frozen base, a quantised head) takes at most the
// host's chunk on a device too: the larger chunk only saves that gradient's traffic. In the
// session (a recording backend asking for more than the host's figure) and in the plan; a
// trainable head keeps the device's figure.
TEST(HeadChunk, AFrozenHeadKeepsTheHostsChunk) {
    ModelSpec gpt2 = gpt2_spec(100, 16, 2, 2, 16);
    EXPECT_EQ(head_chunk_logits(ParamTable(gpt2), kDeviceHeadChunkLogits), kDeviceHeadChunkLogits);
    LoraConfig l;
    l.rank = 4;
    l.target_modules = {"all-linear"};
    ModelSpec lora = gpt2;
    lora.lora = lora_spec(l, gpt2);
    ParamTable frozen(lora);
    frozen.set_trainable(trainable_flags(frozen, {}));
    EXPECT_FALSE(frozen.head().trainable);
    EXPECT_EQ(head_chunk_logits(frozen, kDeviceHeadChunkLogits), kHostHeadChunkLogits);
    EXPECT_EQ(head_chunk_logits(frozen, 3 * kVp), size_t{3} * kVp);  // a smaller figure stays
    ModelSpec qlora = llama_spec(100, 16, 2, 2, 2, 16, 32, /*tied=*/false);
    l.base_dtype = BaseDType::Nf4;
    qlora.lora = lora_spec(l, qlora);
    EXPECT_EQ(head_chunk_logits(ParamTable(qlora), kDeviceHeadChunkLogits), kHostHeadChunkLogits);

    // The plan of a CUDA LoRA run: GPT-2's head at B 64 x T 1024 in the host's 640 rows.
    Config c = Config::from_string(
        "[model]\nvocab_size = 50257\ncontext_length = 1024\nn_layer = 1\nn_head = 12\n"
        "d_model = 768\n[train]\nbatch_size = 64\nseq_len = 1024\n"
        "[runtime]\ndevice = \"cuda\"\nprecision = \"bf16\"\n[lora]\nrank = 4\n",
        "");
    const RunResolution cuda = resolve_run(c.run(), true);
    const int64_t plan_auto = run_model_info(c.run(), cuda).bytes_activations;
    c.set("accel.head_chunk_rows", "640");
    EXPECT_EQ(run_model_info(c.run(), cuda).bytes_activations, plan_auto);
    c.set("accel.head_chunk_rows", "10624");  // the device's chunk, asked for
    EXPECT_EQ(run_model_info(c.run(), cuda).bytes_activations - plan_auto,
              int64_t{10624 - 640} * 50304 * 2);
}
