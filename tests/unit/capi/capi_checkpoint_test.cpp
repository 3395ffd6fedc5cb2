// C API tests of checkpoints, export, sampling and model info: save/load resume bit-exactly
// (sequential and random samplers, grad accumulation, through train() with checkpoint_every
// and keep_last), refusals leave the session unchanged, export and sample contracts.
// A tiny GPT-2 (V 32, T_max 16, L2 H2 C16; B 2, T 8, one thread) on shards written here.
#include <trainrt/trainrt.h>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char* const kToml = R"(
[model]
vocab_size = 32
context_length = 16
n_layer = 2
n_head = 2
d_model = 16

[data]
train = "train*.bin"
val = "val.bin"
sampler = "sequential"

[train]
batch_size = 2
seq_len = 8
grad_accum = 3
steps = 12
eval_every = 0
eval_batches = 2

[optim]
lr = 0.01
schedule = "cosine"
warmup_steps = 3
min_lr = 0.001

[runtime]
threads = 1
log_every = 1
)";

using Sets = ConfigSets;

struct Figures {
    double loss, grad_norm, lr;
    int64_t step, tokens_total;
};

class CapiCheckpoint : public CapiSessionTest {
protected:
    void SetUp() override {
        CapiSessionTest::SetUp();
        // Two train shards so the sequential cursor crosses a shard boundary.
        write_shard(dir_ + "/train0.bin", lcg_tokens(200, 1, 32));
        write_shard(dir_ + "/train1.bin", lcg_tokens(150, 2, 32));
        write_shard(dir_ + "/val.bin", lcg_tokens(100, 3, 32));
    }
    trainrt_session* open(const Sets& sets = {}) { return open_from(kToml, sets); }

    static Figures step(trainrt_session* s) {
        const trainrt_step_result r = step_result(s);
        return {r.loss, r.grad_norm, r.lr, r.step, r.tokens_total};
    }

    static std::vector<Figures> steps(trainrt_session* s, int n) {
        std::vector<Figures> out;
        for (int i = 0; i < n; ++i) out.push_back(step(s));
        return out;
    }

    static std::string save(trainrt_session* s, const std::string& dir) {
        char buf[4096];
        size_t needed = 0;
        EXPECT_EQ(trainrt_session_save(buf, sizeof buf, &needed, s,
                                       dir.empty() ? nullptr : dir.c_str()),
                  TRAINRT_OK)
            << last_error();
        return std::string(buf, needed < sizeof buf ? needed : 0);
    }

    // Uninterrupted run of `total` steps vs. run `cut` steps, save, load into a new session,
    // run the rest: every figure after the cut must be bit-identical.
    void expect_bit_exact_resume(const Sets& sets, int cut, int total) {
        const std::vector<Figures> full = steps(open(sets), total);
        trainrt_session* first = open(sets);
        steps(first, cut);
        const std::string ckpt = dir_ + "/ckpt_" + std::to_string(cut);
        save(first, ckpt);
        trainrt_session* resumed = open(sets);
        ASSERT_EQ(trainrt_session_load(resumed, ckpt.c_str()), TRAINRT_OK) << last_error();
        const std::vector<Figures> rest = steps(resumed, total - cut);
        for (int i = 0; i < total - cut; ++i) {
            const Figures& a = full[cut + i];
            const Figures& b = rest[i];
            EXPECT_EQ(a.step, b.step);
            EXPECT_EQ(a.tokens_total, b.tokens_total);
            EXPECT_TRUE(same_bits(a.loss, b.loss))
                << "step " << a.step << ": " << a.loss << " vs " << b.loss;
            EXPECT_TRUE(same_bits(a.grad_norm, b.grad_norm)) << "step " << a.step;
            EXPECT_TRUE(same_bits(a.lr, b.lr)) << "step " << a.step;
        }
    }
};

TEST_F(CapiCheckpoint, ResumeIsBitExactSequentialSamplerWithGradAccum) {
    // grad_accum 3: the cursor sits mid-shard after 5 steps (15 micro-batches), and the
    // cut is inside the warmup, so the schedule position is restored too.
    expect_bit_exact_resume({}, 2, 9);
    expect_bit_exact_resume({}, 5, 12);
}

// runtime.precision = "bf16" / "fp16" on the CPU: the rounded working copy of the weights is
// rebuilt from the loaded master (and fp16's loss scale restored), so a resumed run continues
// bit for bit; and its figures stay within 2% of fp32's without being fp32's (the rounding
// happens).
TEST_F(CapiCheckpoint, LowPrecisionOnTheCpuResumesBitExactlyAndTracksFp32) {
    const std::vector<Figures> a = steps(open(), 8);
    int cut = 3;  // a checkpoint folder per precision (ckpt_<cut>)
    for (const char* precision : {"\"bf16\"", "\"fp16\""}) {
        const Sets low = {{"runtime.precision", precision}};
        expect_bit_exact_resume(low, cut++, 8);
        const std::vector<Figures> b = steps(open(low), 8);
        bool differs = false;
        for (size_t i = 0; i < a.size(); ++i) {
            EXPECT_NEAR(b[i].loss, a[i].loss, 2e-2 * a[i].loss) << precision << " step "
                                                                 << a[i].step;
            differs = differs || !same_bits(a[i].loss, b[i].loss);
        }
        EXPECT_TRUE(differs) << precision << " gave the fp32 losses bit for bit";
    }
}

TEST_F(CapiCheckpoint, ResumeIsBitExactRandomSampler) {
    expect_bit_exact_resume({{"data.sampler", "\"random\""}, {"data.seed", "7"}}, 4, 10);
}

// data.placement = "device" keeps the train split in backend memory and draws batches there
// (on the CPU backend: a copy in host memory, the same code path the CUDA backend runs). It
// must draw exactly the host sampler's batches: same figures, bit for bit.
TEST_F(CapiCheckpoint, ResidentDataDrawsTheHostSamplersBatches) {
    for (const char* sampler : {"\"sequential\"", "\"random\""}) {
        const std::vector<Figures> host =
            steps(open({{"data.sampler", sampler}, {"data.placement", "\"host\""}}), 8);
        const std::vector<Figures> device =
            steps(open({{"data.sampler", sampler}, {"data.placement", "\"device\""}}), 8);
        for (size_t i = 0; i < host.size(); ++i) {
            EXPECT_TRUE(same_bits(host[i].loss, device[i].loss))
                << sampler << " step " << host[i].step << ": " << host[i].loss << " vs "
                << device[i].loss;
            EXPECT_TRUE(same_bits(host[i].grad_norm, device[i].grad_norm)) << sampler;
        }
    }
}

TEST_F(CapiCheckpoint, ResumeIsBitExactWithResidentData) {
    expect_bit_exact_resume({{"data.placement", "\"device\""}}, 5, 9);
    expect_bit_exact_resume({{"data.placement", "\"device\""}, {"data.sampler", "\"random\""}},
                            4, 7);
}

// max_inflight only changes when figures come back, never the figures: after sync the
// last step's figures equal a synchronous run's.
TEST_F(CapiCheckpoint, MaxInflightDoesNotChangeTheRun) {
    trainrt_session* a = open({{"runtime.max_inflight", "1"}});
    trainrt_session* b = open({{"runtime.max_inflight", "4"}});
    std::vector<Figures> fa = steps(a, 6);
    steps(b, 6);
    trainrt_step_result r;
    trainrt_step_result_init(&r);
    ASSERT_EQ(trainrt_session_sync(&r, b), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.step, 6);
    EXPECT_TRUE(same_bits(r.loss, fa.back().loss));
}

// Metrics version 2: reserved bytes, skipped updates, loss scale; a version-1 host (72-byte
// struct) gets exactly its fields and nothing written past them.
TEST_F(CapiCheckpoint, MetricsVersion2Fields) {
    trainrt_session* s = open();
    steps(s, 2);
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    ASSERT_EQ(trainrt_session_metrics(&m, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(m.step, 2);
    EXPECT_GT(m.bytes_in_use, 0);
    EXPECT_GE(m.bytes_reserved, m.bytes_in_use);
    EXPECT_EQ(m.skipped_steps, 0);
    EXPECT_EQ(m.loss_scale, 1.0);  // no loss scaling outside fp16
    struct {
        trainrt_metrics v1;  // zeroed; only the first 72 bytes are the caller's
    } old{};
    old.v1.struct_size = 72;
    old.v1.version = 1;
    ASSERT_EQ(trainrt_session_metrics(&old.v1, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(old.v1.struct_size, 72u);
    EXPECT_EQ(old.v1.step, 2);
    const unsigned char* tail = reinterpret_cast<const unsigned char*>(&old.v1) + 72;
    for (size_t i = 0; i < sizeof(trainrt_metrics) - 72; ++i)
        EXPECT_EQ(tail[i], 0u) << "byte " << 72 + i;
}

// Metrics version 3: model FLOPs per token (the same 6N + 6*L*C*T as model_info, T =
// train.seq_len), the peak (none known for the CPU, runtime.peak_tflops when set) and MFU;
// a version-2 host (96-byte struct) still gets its fields and nothing past them.
TEST_F(CapiCheckpoint, MetricsVersion3And4Fields) {
    trainrt_config* c = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&c, kToml, dir_.c_str()), TRAINRT_OK);
    trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
    ASSERT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
    trainrt_config_destroy(c);

    trainrt_session* s = open();
    steps(s, 2);
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    ASSERT_EQ(trainrt_session_metrics(&m, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(m.version, 4u);
    EXPECT_EQ(m.rank, 0);  // version 4: a process alone is rank 0 of 1
    EXPECT_EQ(m.world_size, 1);
    EXPECT_GT(m.model_flops_per_token, 0.0);
    EXPECT_DOUBLE_EQ(m.model_flops_per_token, info.flops_per_token);
    EXPECT_EQ(m.peak_flops, 0.0) << "no peak is known for the CPU";
    EXPECT_EQ(m.mfu, 0.0);

    // An explicit peak: 1e-6 TFLOP/s = 1e6 FLOP/s, so the tiny model's MFU is well above 0.
    trainrt_session* p = open({{"runtime.peak_tflops", "1e-6"}});
    steps(p, 2);
    trainrt_metrics_init(&m);
    ASSERT_EQ(trainrt_session_metrics(&m, p), TRAINRT_OK) << last_error();
    EXPECT_DOUBLE_EQ(m.peak_flops, 1e6);
    EXPECT_GT(m.tokens_per_s, 0.0);
    EXPECT_GT(m.mfu, 0.0);
    EXPECT_NEAR(m.mfu, m.tokens_per_s * m.model_flops_per_token / m.peak_flops, 1e-9 * m.mfu);

    struct {
        trainrt_metrics v2;  // zeroed; only the first 96 bytes are the caller's
    } old{};
    old.v2.struct_size = 96;
    old.v2.version = 2;
    ASSERT_EQ(trainrt_session_metrics(&old.v2, p), TRAINRT_OK) << last_error();
    EXPECT_EQ(old.v2.struct_size, 96u);
    EXPECT_EQ(old.v2.step, 2);
    EXPECT_EQ(old.v2.loss_scale, 1.0) << "version-2 fields are filled";
    const unsigned char* tail = reinterpret_cast<const unsigned char*>(&old.v2) + 96;
    for (size_t i = 0; i < sizeof(trainrt_metrics) - 96; ++i)
        EXPECT_EQ(tail[i], 0u) << "byte " << 96 + i;
}

TEST_F(CapiCheckpoint, TrainWritesPeriodicCheckpointsKeepsTheLastAndResumes) {
    const Sets sets = {{"train.out_dir", "\"out\""}, {"train.checkpoint_every", "2"},
                       {"train.keep_last", "2"}};
    const std::vector<Figures> full = steps(open(sets), 12);
    fs::remove_all(dir_ + "/out");

    trainrt_session* a = open(sets);
    ASSERT_EQ(trainrt_session_train(a, 7, nullptr, nullptr), TRAINRT_OK) << last_error();
    const std::string out = dir_ + "/out";
    EXPECT_FALSE(fs::exists(out + "/step_00000002"));  // pruned: keep_last = 2
    EXPECT_TRUE(fs::exists(out + "/step_00000004"));
    EXPECT_TRUE(fs::exists(out + "/step_00000006"));
    char latest[4096];
    size_t needed = 0;
    ASSERT_EQ(trainrt_checkpoint_latest(latest, sizeof latest, &needed, out.c_str()), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(fs::path(latest).filename().string(), "step_00000006");
    close(a);  // its run is over: the folder is free for the next writer

    // Resume from the folder (its `latest`), as `trainrt train` does: step 7 again, then on.
    trainrt_session* b = open(sets);
    ASSERT_EQ(trainrt_session_load(b, out.c_str()), TRAINRT_OK) << last_error();
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    ASSERT_EQ(trainrt_session_metrics(&m, b), TRAINRT_OK);
    EXPECT_EQ(m.step, 6);
    EXPECT_EQ(m.tokens_total, 6 * 3 * 2 * 8);
    const std::vector<Figures> rest = steps(b, 6);
    for (int i = 0; i < 6; ++i) EXPECT_TRUE(same_bits(full[6 + i].loss, rest[i].loss)) << i;

    // Saving again at a step this session loaded keeps that directory.
    trainrt_session* c = open(sets);
    ASSERT_EQ(trainrt_session_load(c, out.c_str()), TRAINRT_OK) << last_error();
    EXPECT_EQ(fs::path(save(c, "")).filename().string(), "step_00000006");
}

TEST_F(CapiCheckpoint, SaveIntoOutDirReplacesAStaleCheckpointOfAnotherRun) {
    const Sets sets = {{"train.out_dir", "\"out\""}};
    trainrt_session* a = open(sets);
    steps(a, 2);
    save(a, "");
    close(a);  // one writer per out_dir at a time
    // A different run (another lr) reaching step 2 replaces step_00000002.
    trainrt_session* b = open({{"train.out_dir", "\"out\""}, {"optim.lr", "0.05"}});
    steps(b, 2);
    const std::string path = save(b, "");
    EXPECT_EQ(fs::path(path).filename().string(), "step_00000002");
    trainrt_session* check_b = open({{"optim.lr", "0.05"}});
    ASSERT_EQ(trainrt_session_load(check_b, path.c_str()), TRAINRT_OK) << last_error();
    EXPECT_TRUE(same_bits(step(check_b).loss, step(b).loss));
    EXPECT_FALSE(fs::exists(path + ".old"));
    EXPECT_FALSE(fs::exists(path + ".new"));
}

// Two sessions writing into one train.out_dir would interleave checkpoints and metrics: the
// first to write holds the folder until it is destroyed; the other gets BUSY naming the
// holder and writes nothing there. Saving elsewhere, and reading, stay open to it.
TEST_F(CapiCheckpoint, OutDirHasOneWriterAtATime) {
    const Sets sets = {{"train.out_dir", "\"out\""}, {"train.eval_every", "0"}};
    trainrt_session* a = open(sets);
    ASSERT_EQ(trainrt_session_train(a, 1, nullptr, nullptr), TRAINRT_OK) << last_error();
    trainrt_session* b = open(sets);
    EXPECT_EQ(trainrt_session_train(b, 1, nullptr, nullptr), TRAINRT_ERR_BUSY);
    EXPECT_NE(last_error().find("is in use by another run (pid " + std::to_string(::getpid())),
              std::string::npos) << last_error();
    EXPECT_EQ(trainrt_session_save(nullptr, 0, nullptr, b, nullptr), TRAINRT_ERR_BUSY);
    EXPECT_FALSE(fs::exists(dir_ + "/out/step_00000000"));
    steps(b, 1);
    EXPECT_FALSE(save(b, dir_ + "/elsewhere").empty()) << "saving outside out_dir is free";
    const std::string a_ckpt = save(a, "");
    EXPECT_EQ(trainrt_session_load(b, a_ckpt.c_str()), TRAINRT_OK) << last_error();
    close(a);
    EXPECT_EQ(trainrt_session_train(b, 1, nullptr, nullptr), TRAINRT_OK) << last_error();
}

TEST_F(CapiCheckpoint, SaveWithoutOutDirOrIntoAnExistingDirFails) {
    trainrt_session* s = open();
    steps(s, 1);
    EXPECT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, nullptr), TRAINRT_ERR_CONFIG);
    EXPECT_TRUE(names(last_error(), "train.out_dir")) << last_error();
    fs::create_directories(dir_ + "/taken");
    EXPECT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, (dir_ + "/taken").c_str()),
              TRAINRT_ERR_IO);
    EXPECT_NE(last_error().find("exists"), std::string::npos) << last_error();
}

TEST_F(CapiCheckpoint, LoadRefusesAnotherModelShapeAndLeavesTheSessionAlone) {
    trainrt_session* a = open();
    steps(a, 2);
    save(a, dir_ + "/ckpt");
    trainrt_session* b = open({{"model.n_layer", "1"}});
    steps(b, 1);
    EXPECT_EQ(trainrt_session_load(b, (dir_ + "/ckpt").c_str()), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("n_layer"), std::string::npos) << last_error();
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    ASSERT_EQ(trainrt_session_metrics(&m, b), TRAINRT_OK);
    EXPECT_EQ(m.step, 1);
    trainrt_session* c = open({{"model.d_model", "32"}});
    EXPECT_EQ(trainrt_session_load(c, (dir_ + "/ckpt").c_str()), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("d_model"), std::string::npos) << last_error();
}

TEST_F(CapiCheckpoint, LoadRefusesACorruptCheckpointNamingTheFile) {
    trainrt_session* a = open();
    steps(a, 1);
    const std::string ckpt = dir_ + "/ckpt";
    save(a, ckpt);
    {
        std::fstream f(ckpt + "/optimizer.safetensors", std::ios::in | std::ios::out |
                                                            std::ios::binary);
        f.seekp(-3, std::ios::end);
        f.put('\x7f');
    }
    trainrt_session* b = open();
    EXPECT_EQ(trainrt_session_load(b, ckpt.c_str()), TRAINRT_ERR_FORMAT);
    EXPECT_NE(last_error().find("corrupt checkpoint"), std::string::npos) << last_error();
    EXPECT_NE(last_error().find("optimizer.safetensors"), std::string::npos) << last_error();
    const std::string ckpt2 = dir_ + "/ckpt2";
    save(a, ckpt2);
    fs::remove(ckpt2 + "/state.json");
    EXPECT_EQ(trainrt_session_load(b, ckpt2.c_str()), TRAINRT_ERR_FORMAT);
    EXPECT_NE(last_error().find("state.json"), std::string::npos) << last_error();
    EXPECT_NE(trainrt_session_load(b, (dir_ + "/nowhere").c_str()), TRAINRT_OK);
}

TEST_F(CapiCheckpoint, LatestIsEmptyWhenThereIsNoCheckpoint) {
    char buf[16] = "x";
    size_t needed = 99;
    ASSERT_EQ(trainrt_checkpoint_latest(buf, sizeof buf, &needed, dir_.c_str()), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(needed, 0u);
    EXPECT_STREQ(buf, "");
}

TEST_F(CapiCheckpoint, ConfigFromCheckpointIsTheTrainingConfig) {
    trainrt_session* a = open({{"optim.lr", "0.02"}});
    steps(a, 1);
    save(a, dir_ + "/ckpt");
    trainrt_config* c = nullptr;
    ASSERT_EQ(trainrt_config_from_checkpoint(&c, (dir_ + "/ckpt").c_str()), TRAINRT_OK)
        << last_error();
    double lr = 0;
    EXPECT_EQ(trainrt_config_get_double(&lr, c, "optim.lr"), TRAINRT_OK);
    EXPECT_EQ(lr, 0.02);
    int64_t layers = 0;
    EXPECT_EQ(trainrt_config_get_int(&layers, c, "model.n_layer"), TRAINRT_OK);
    EXPECT_EQ(layers, 2);
    trainrt_config_destroy(c);
}

TEST_F(CapiCheckpoint, ExportWritesSafetensorsAndConfig) {
    trainrt_session* a = open();
    steps(a, 1);
    EXPECT_EQ(trainrt_session_export(a, (dir_ + "/hf").c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
        << last_error();
    EXPECT_TRUE(fs::exists(dir_ + "/hf/model.safetensors"));
    EXPECT_TRUE(fs::exists(dir_ + "/hf/config.json"));
    save(a, dir_ + "/ckpt");
    EXPECT_EQ(trainrt_checkpoint_export((dir_ + "/ckpt").c_str(), (dir_ + "/hf16").c_str(),
                                        TRAINRT_DTYPE_BF16),
              TRAINRT_OK)
        << last_error();
    // bf16 halves the tensor bytes.
    EXPECT_LT(fs::file_size(dir_ + "/hf16/model.safetensors"),
              fs::file_size(dir_ + "/hf/model.safetensors") * 6 / 10);
    EXPECT_EQ(trainrt_session_export(a, (dir_ + "/x").c_str(), 7), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("dtype"), std::string::npos);
}

TEST_F(CapiCheckpoint, SampleIsDeterministicGreedyIsArgmaxAndStateIsUntouched) {
    trainrt_session* a = open();
    trainrt_session* twin = open();
    steps(a, 3);
    steps(twin, 3);
    const int32_t prompt[] = {3, 17, 8};
    trainrt_sample_options o;
    trainrt_sample_options_init(&o);
    o.temperature = 0.9;
    o.top_k = 5;
    o.seed = 42;
    std::vector<int32_t> x(20), y(20);
    ASSERT_EQ(trainrt_session_sample(x.data(), x.size(), a, prompt, 3, 20, &o), TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_sample(y.data(), y.size(), a, prompt, 3, 20, &o), TRAINRT_OK);
    EXPECT_EQ(x, y);
    for (int32_t id : x) EXPECT_TRUE(id >= 0 && id < 32);

    // Greedy: the first token is the argmax of the forward logits at the prompt's end.
    o.temperature = 0;
    int32_t g = -1;
    ASSERT_EQ(trainrt_session_sample(&g, 1, a, prompt, 3, 1, &o), TRAINRT_OK);
    const int32_t rows[] = {3, 17, 8, 0};
    std::vector<float> logits(3 * 32);
    ASSERT_EQ(trainrt_session_forward(nullptr, logits.data(), logits.size(), a, rows, 1, 3),
              TRAINRT_OK)
        << last_error();
    int best = 0;
    for (int v = 1; v < 32; ++v)
        if (logits[2 * 32 + v] > logits[2 * 32 + best]) best = v;
    EXPECT_EQ(g, best);

    // Longer than seq_len: the window slides.
    std::vector<int32_t> longer(40);
    ASSERT_EQ(trainrt_session_sample(longer.data(), longer.size(), a, prompt, 3, 40, nullptr),
              TRAINRT_OK)
        << last_error();

    // Sampling did not change the training state.
    EXPECT_TRUE(same_bits(step(a).loss, step(twin).loss));
}

TEST_F(CapiCheckpoint, SampleRejectsBadArguments) {
    trainrt_session* a = open();
    const int32_t bad[] = {3, 32};
    int32_t out[4];
    EXPECT_EQ(trainrt_session_sample(out, 4, a, bad, 2, 4, nullptr), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("32"), std::string::npos) << last_error();
    const int32_t ok[] = {3};
    EXPECT_EQ(trainrt_session_sample(out, 2, a, ok, 1, 4, nullptr), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(trainrt_session_sample(out, 4, a, ok, 0, 4, nullptr), TRAINRT_ERR_INVALID_ARGUMENT);
    trainrt_sample_options o;
    trainrt_sample_options_init(&o);
    o.temperature = -1;
    EXPECT_EQ(trainrt_session_sample(out, 4, a, ok, 1, 4, &o), TRAINRT_ERR_INVALID_ARGUMENT);
    o.temperature = 1;
    o.struct_size = 4;
    EXPECT_EQ(trainrt_session_sample(out, 4, a, ok, 1, 4, &o), TRAINRT_ERR_INVALID_ARGUMENT);
}

TEST_F(CapiCheckpoint, ModelInfoMatchesTheSession) {
    trainrt_config* c = nullptr;
    ASSERT_EQ(trainrt_config_from_string(&c, kToml, dir_.c_str()), TRAINRT_OK);
    trainrt_model_info info;
    info.struct_size = sizeof info;
    info.version = TRAINRT_MODEL_INFO_VERSION;
    ASSERT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
    trainrt_config_destroy(c);
    // V*C + T_max*C + L*(12 C^2 + 13 C) + 2C
    const int64_t C = 16, L = 2;
    EXPECT_EQ(info.parameters, 32 * C + 16 * C + L * (12 * C * C + 13 * C) + 2 * C);
    EXPECT_DOUBLE_EQ(info.flops_per_token, 6.0 * info.parameters + 6.0 * L * C * 8);
    EXPECT_EQ(info.bytes_total,
              info.bytes_parameters + info.bytes_optimizer + info.bytes_activations);
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    ASSERT_EQ(trainrt_session_metrics(&m, open()), TRAINRT_OK);
    // The estimate is within 10% of what the session really holds.
    EXPECT_NEAR(static_cast<double>(info.bytes_total), static_cast<double>(m.bytes_in_use),
                0.10 * static_cast<double>(m.bytes_in_use));
}

// The same in bf16 on the CPU: activations take half the bytes, and the working copy of
// the weights the matmuls read is counted with the parameters: fp32-held for OpenBLAS (4 bytes
// per parameter), bf16 for oneDNN (2 bytes; what "auto" takes on a CPU with native bf16).
TEST_F(CapiCheckpoint, ModelInfoMatchesTheSessionInBf16) {
    auto info_of = [&](const char* precision, const char* matmul) {
        trainrt_config* c = nullptr;
        EXPECT_EQ(trainrt_config_from_string(&c, kToml, dir_.c_str()), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "runtime.precision", precision), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "accel.cpu_matmul", matmul), TRAINRT_OK);
        trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
        EXPECT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
        trainrt_config_destroy(c);
        return info;
    };
    const trainrt_model_info fp32 = info_of("\"fp32\"", "\"auto\"");
    for (const char* matmul : {"\"openblas\"", "\"auto\""}) {
        SCOPED_TRACE(matmul);
        const trainrt_model_info bf16 = info_of("\"bf16\"", matmul);
        EXPECT_EQ(bf16.parameters, fp32.parameters);
        const int64_t copy = bf16.bytes_parameters - fp32.bytes_parameters;
        if (std::string(matmul) == "\"openblas\"")
            EXPECT_EQ(copy, fp32.bytes_parameters);  // the fp32-held copy
        else  // oneDNN where this CPU has native bf16, else OpenBLAS
            EXPECT_TRUE(2 * copy == fp32.bytes_parameters || copy == fp32.bytes_parameters)
                << copy << " bytes of working copy for " << fp32.bytes_parameters;
        EXPECT_LT(bf16.bytes_activations, fp32.bytes_activations);
        trainrt_metrics m;
        trainrt_metrics_init(&m);
        trainrt_session* s =
            open({{"runtime.precision", "\"bf16\""}, {"accel.cpu_matmul", matmul}});
        ASSERT_NE(s, nullptr);
        ASSERT_EQ(trainrt_session_metrics(&m, s), TRAINRT_OK);
        close(s);  // releases train.out_dir for the next mode
        EXPECT_NEAR(static_cast<double>(bf16.bytes_total), static_cast<double>(m.bytes_in_use),
                    0.10 * static_cast<double>(m.bytes_in_use));
    }
}

// A run sized for CUDA (device = cuda: sizing needs no GPU) in bf16: a 2-byte working copy,
// fp32 activations, unless accel.lowp_activations stores them in bf16 as the CPU does. (The
// matmul attention here, so that only the activations' type differs: cuDNN's sizing below.)
TEST_F(CapiCheckpoint, ModelInfoSizesCudaBf16ActivationsWhenAskedFor) {
    auto info_of = [&](const char* device, const char* precision, const char* lowp_acts) {
        trainrt_config* c = nullptr;
        EXPECT_EQ(trainrt_config_from_string(&c, kToml, dir_.c_str()), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "runtime.device", device), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "runtime.precision", precision), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "accel.lowp_activations", lowp_acts), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "accel.attention", "\"matmul\""), TRAINRT_OK);
        trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
        EXPECT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
        trainrt_config_destroy(c);
        return info;
    };
    const trainrt_model_info cpu_fp32 = info_of("\"cpu\"", "\"fp32\"", "false");
    const trainrt_model_info cpu_bf16 = info_of("\"cpu\"", "\"bf16\"", "false");
    const trainrt_model_info cuda_bf16 = info_of("\"cuda\"", "\"bf16\"", "false");
    const trainrt_model_info cuda_bf16_acts = info_of("\"cuda\"", "\"bf16\"", "true");
    // CUDA's bf16 working copy: 2 bytes per fp32 parameter of the (vocabulary-padded) buffer.
    const int64_t copy = cuda_bf16.bytes_parameters - cpu_fp32.bytes_parameters;
    EXPECT_EQ(2 * copy, cpu_fp32.bytes_parameters);
    EXPECT_GE(copy, 2 * cpu_fp32.parameters);
    EXPECT_EQ(cuda_bf16.bytes_activations, cpu_fp32.bytes_activations);
    EXPECT_EQ(cuda_bf16_acts.bytes_parameters, cuda_bf16.bytes_parameters);
    EXPECT_EQ(cuda_bf16_acts.bytes_activations, cpu_bf16.bytes_activations);
    EXPECT_LT(cuda_bf16_acts.bytes_activations, cuda_bf16.bytes_activations);
    for (const trainrt_model_info& i : {cuda_bf16, cuda_bf16_acts})
        EXPECT_EQ(i.bytes_total, i.bytes_parameters + i.bytes_optimizer + i.bytes_activations);
    // No effect on the CPU, or under fp32.
    const trainrt_model_info cpu_bf16_acts = info_of("\"cpu\"", "\"bf16\"", "true");
    EXPECT_EQ(cpu_bf16_acts.bytes_total, cpu_bf16.bytes_total);
    const trainrt_model_info cuda_fp32_acts = info_of("\"cuda\"", "\"fp32\"", "true");
    EXPECT_EQ(cuda_fp32_acts.bytes_total, cpu_fp32.bytes_total);
}

// A CUDA run on cuDNN attention (accel.attention auto, the default, or cudnn; bf16/fp16;
// multi-head) keeps O and the softmax statistics, not the T×T matrices of the matmul path:
// the estimate sizes it so (backend/cudnn_attention_sizes.h). On an H100 the estimate came
// within 5 % of GPT-2's allocation this way, where it had been 2x (docs/STATUS.md).
TEST_F(CapiCheckpoint, ModelInfoSizesCudnnAttentionForACudaRun) {
    auto info_of = [&](const char* device, const char* precision, const char* attention) {
        trainrt_config* c = nullptr;
        EXPECT_EQ(trainrt_config_from_string(&c, kToml, dir_.c_str()), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "runtime.device", device), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "runtime.precision", precision), TRAINRT_OK);
        EXPECT_EQ(trainrt_config_set(c, "train.seq_len", "16"), TRAINRT_OK);  // T×T matters
        if (attention)
            EXPECT_EQ(trainrt_config_set(c, "accel.attention", attention), TRAINRT_OK);
        trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
        EXPECT_EQ(trainrt_config_model_info(&info, c), TRAINRT_OK) << last_error();
        trainrt_config_destroy(c);
        return info;
    };
    const trainrt_model_info by_default = info_of("\"cuda\"", "\"bf16\"", nullptr);
    const trainrt_model_info cudnn = info_of("\"cuda\"", "\"bf16\"", "\"cudnn\"");
    const trainrt_model_info matmul = info_of("\"cuda\"", "\"bf16\"", "\"matmul\"");
    EXPECT_EQ(by_default.bytes_activations, cudnn.bytes_activations);
    EXPECT_NE(cudnn.bytes_activations, matmul.bytes_activations);
    EXPECT_EQ(cudnn.bytes_parameters, matmul.bytes_parameters);
    EXPECT_EQ(cudnn.bytes_total,
              cudnn.bytes_parameters + cudnn.bytes_optimizer + cudnn.bytes_activations);
    // fp32 (cuDNN attention is bf16/fp16 only) and the CPU: the attention switch changes nothing.
    EXPECT_EQ(info_of("\"cuda\"", "\"fp32\"", "\"cudnn\"").bytes_total,
              info_of("\"cuda\"", "\"fp32\"", "\"matmul\"").bytes_total);
    EXPECT_EQ(info_of("\"cpu\"", "\"bf16\"", "\"cudnn\"").bytes_total,
              info_of("\"cpu\"", "\"bf16\"", "\"matmul\"").bytes_total);
}

TEST_F(CapiCheckpoint, NullArguments) {
    trainrt_session* a = open();
    int32_t id = 0, out = 0;
    trainrt_config* c = nullptr;
    trainrt_model_info info;
    info.struct_size = sizeof info;
    info.version = TRAINRT_MODEL_INFO_VERSION;
    EXPECT_NULL_ARG(trainrt_session_save(nullptr, 0, nullptr, nullptr, "x"), "session");
    EXPECT_NULL_ARG(trainrt_session_save(nullptr, 5, nullptr, a, "x"), "path_buf");
    EXPECT_NULL_ARG(trainrt_session_load(nullptr, "x"), "session");
    EXPECT_NULL_ARG(trainrt_session_load(a, nullptr), "path");
    EXPECT_NULL_ARG(trainrt_checkpoint_latest(nullptr, 0, nullptr, nullptr), "out_dir");
    EXPECT_NULL_ARG(trainrt_config_from_checkpoint(nullptr, "x"), "out");
    EXPECT_NULL_ARG(trainrt_config_from_checkpoint(&c, nullptr), "path");
    EXPECT_NULL_ARG(trainrt_session_export(nullptr, "x", 0), "session");
    EXPECT_NULL_ARG(trainrt_session_export(a, nullptr, 0), "out_dir");
    EXPECT_NULL_ARG(trainrt_checkpoint_export(nullptr, "x", 0), "path");
    EXPECT_NULL_ARG(trainrt_checkpoint_export("x", nullptr, 0), "out_dir");
    EXPECT_NULL_ARG(trainrt_session_sample(&out, 1, nullptr, &id, 1, 1, nullptr), "session");
    EXPECT_NULL_ARG(trainrt_session_sample(&out, 1, a, nullptr, 1, 1, nullptr), "prompt");
    EXPECT_NULL_ARG(trainrt_session_sample(nullptr, 1, a, &id, 1, 1, nullptr), "out");
    EXPECT_NULL_ARG(trainrt_config_model_info(nullptr, c), "out");
    EXPECT_NULL_ARG(trainrt_config_model_info(&info, nullptr), "config");
    trainrt_sample_options_init(nullptr);  // accepted, does nothing
}

}  // namespace
