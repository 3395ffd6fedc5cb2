// End to end through the public C API only (like tests/unit/capi): a byte-level GPT
// (V 256, T 64, L2 H4 C64; B 4, grad_accum 2, AdamW + clipping + cosine schedule, random
// sampler) on a shard of tiny Shakespeare written here, trained 30 steps with
// runtime.device = "cuda" and "cpu" from the same seed. Per-step losses are read after
// trainrt_session_sync (the step's own figures; an asynchronous backend may lag in step()).
//   CUDA vs CPU per-step loss, relative: fp32 1e-4, tf32 2e-3, bf16 / fp16 3e-2 (TESTING.md);
//   the same on an awkward shape (V 67, C 40, NH 5, T 17, B 3);
//   CUDA run to run: bitwise (two sessions, every precision);
//   (graph-captured vs eager comes with CUDA graphs, which are not built yet);
//   data.placement device vs host (random and sequential samplers): bitwise in fp32;
//   checkpoint written on CUDA, loaded on the CPU (and the reverse): the following steps'
//   losses within 1e-4 of continuing on the first device (fp32);
//   resume on CUDA (save at 10, load in a fresh session, 10 more): bitwise;
//   fine-tuning (LoRA on every linear, a trainable final norm, block recompute) vs the CPU,
//   and recompute bitwise equal to none on CUDA;
//   QLoRA (a quantised base: nf4, int8) vs the CPU, and run to run bitwise.
// Without a CUDA backend (runtime.device = "cuda" gives TRAINRT_ERR_UNSUPPORTED) every case
// is skipped with the library's message; TRAINRT_REQUIRE_CUDA=1 turns that into a failure.
#include <trainrt/trainrt.h>

#include "capi/capi_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace {

const char* const kToml = R"(
[model]
vocab_size = 256
context_length = 64
n_layer = 2
n_head = 4
d_model = 64
seed = 7

[data]
train = "train.bin"
val = "val.bin"
sampler = "random"
seed = 3

[train]
batch_size = 4
seq_len = 64
grad_accum = 2
steps = 30
eval_every = 0
eval_batches = 2

[optim]
lr = 3e-3
warmup_steps = 5
schedule = "cosine"
min_lr = 3e-4
grad_clip = 1.0
weight_decay = 0.1

[runtime]
device = "cpu"
threads = 4
log_every = 1
)";

// Small and awkward: C 40 with 5 heads (hs 8), T 17, B 3, V 67 (ids from lcg_tokens). In an
// order where every intermediate config is valid (each set is validated).
const std::vector<std::pair<std::string, std::string>> kAwkward = {
    {"train.seq_len", "17"},    {"model.context_length", "24"}, {"model.vocab_size", "67"},
    {"model.n_layer", "1"},     {"model.d_model", "40"},        {"model.n_head", "5"},
    {"train.batch_size", "3"},  {"train.grad_accum", "1"},
    {"data.train", "\"awk_train.bin\""}, {"data.val", "\"awk_val.bin\""}};

using Sets = std::vector<std::pair<std::string, std::string>>;

bool cuda_required() {
    const char* e = std::getenv("TRAINRT_REQUIRE_CUDA");
    return e && *e && std::strcmp(e, "0") != 0;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

double tol_for(const std::string& precision) {
    if (precision == "fp32") return 1e-4;
    if (precision == "tf32") return 2e-3;
    return 3e-2;  // bf16, fp16
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

class CudaE2E : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_dir();
        // Byte-level tokens of tiny Shakespeare: 100 000 for training, 20 000 for val.
        std::ifstream f(std::string(TRAINRT_SOURCE_DIR) + "/examples/data/tinyshakespeare.txt",
                        std::ios::binary);
        ASSERT_TRUE(f.good()) << "examples/data/tinyshakespeare.txt";
        std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        ASSERT_GE(text.size(), 120000u);
        std::vector<uint16_t> bytes(120000);
        for (size_t i = 0; i < bytes.size(); i++) bytes[i] = (unsigned char)text[i];
        write_shard(dir_ + "/train.bin", {bytes.begin(), bytes.begin() + 100000});
        write_shard(dir_ + "/val.bin", {bytes.begin() + 100000, bytes.end()});
        write_shard(dir_ + "/awk_train.bin", lcg_tokens(20000, 5, 67));
        write_shard(dir_ + "/awk_val.bin", lcg_tokens(2000, 6, 67));
    }
    void TearDown() override {
        for (trainrt_session* s : sessions_) trainrt_session_destroy(s);
    }

    // Creates a session from the base config plus `sets`; nullptr and the status on failure.
    trainrt_session* create(const Sets& sets, trainrt_status* status) {
        trainrt_config* c = nullptr;
        *status = trainrt_config_from_string(&c, kToml, dir_.c_str());
        if (*status != TRAINRT_OK) {
            ADD_FAILURE() << "base config: " << last_error();
            return nullptr;
        }
        for (const auto& kv : sets) {
            *status = trainrt_config_set(c, kv.first.c_str(), kv.second.c_str());
            if (*status != TRAINRT_OK) {
                ADD_FAILURE() << "set " << kv.first << " = " << kv.second << ": " << last_error();
                trainrt_config_destroy(c);
                return nullptr;
            }
        }
        trainrt_session* s = nullptr;
        *status = trainrt_session_create(&s, c);
        trainrt_config_destroy(c);
        if (*status != TRAINRT_OK) return nullptr;
        sessions_.push_back(s);
        return s;
    }
    trainrt_session* cpu(Sets sets = {}) {
        sets.push_back({"runtime.device", "\"cpu\""});
        sets.push_back({"runtime.precision", "\"fp32\""});
        trainrt_status st;
        trainrt_session* s = create(sets, &st);
        EXPECT_NE(s, nullptr) << "cpu session: " << last_error();
        return s;
    }
    // A CUDA session; nullptr with skip_ set when there is no CUDA backend here.
    trainrt_session* cuda(const std::string& precision, Sets sets = {}) {
        sets.push_back({"runtime.device", "\"cuda\""});
        sets.push_back({"runtime.precision", quoted(precision)});
        trainrt_status st;
        trainrt_session* s = create(sets, &st);
        if (s) return s;
        if (st == TRAINRT_ERR_UNSUPPORTED && !cuda_required()) {
            skip_ = "no CUDA backend: " + last_error();
        } else {
            ADD_FAILURE() << "cuda session (" << precision << "): status " << st << ": "
                          << last_error();
        }
        return nullptr;
    }

    // n steps; each step's loss read after sync. grad_norms (optional) receives the norms.
    std::vector<double> run(trainrt_session* s, int n, std::vector<double>* grad_norms = nullptr) {
        std::vector<double> out;
        int64_t first = -1;
        for (int i = 0; i < n; i++) {
            trainrt_step_result r;
            trainrt_step_result_init(&r);
            if (trainrt_session_step(&r, s) != TRAINRT_OK) {
                ADD_FAILURE() << "step: " << last_error();
                break;
            }
            trainrt_step_result_init(&r);
            if (trainrt_session_sync(&r, s) != TRAINRT_OK) {
                ADD_FAILURE() << "sync: " << last_error();
                break;
            }
            if (first < 0) first = r.step;
            EXPECT_EQ(r.step, first + i) << "after sync, the result is the step just run";
            EXPECT_TRUE(std::isfinite(r.loss)) << "step " << r.step;
            out.push_back(r.loss);
            if (grad_norms) grad_norms->push_back(r.grad_norm);
        }
        return out;
    }

    std::string dir_;
    std::string skip_;
    std::vector<trainrt_session*> sessions_;
};

#define CUDA_SESSION_OR_SKIP(var, ...)          \
    trainrt_session* var = cuda(__VA_ARGS__);   \
    if (!var) {                                 \
        if (!skip_.empty()) GTEST_SKIP() << skip_; \
        return;                                 \
    }

// Max relative per-step difference; prints every step.
double compare(const std::string& what, const std::vector<double>& got,
               const std::vector<double>& want, size_t steps) {
    double worst = 0;
    for (size_t i = 0; i < steps && i < got.size() && i < want.size(); i++) {
        const double e = std::fabs(got[i] - want[i]) / std::fabs(want[i]);
        if (!(e <= worst)) worst = e;  // NaN propagates
        std::printf("[  loss    ] %s step %2zu  cuda %.7f  cpu %.7f  rel %.2e\n", what.c_str(),
                    i + 1, got[i], want[i], e);
    }
    std::printf("[  relerr  ] %-40s %.3e (max over %zu steps)\n", what.c_str(), worst, steps);
    return worst;
}

// fp16: a step whose scaled gradient overflowed is skipped (GradScaler) and the runs part;
// compare up to and including it (of `steps`), and require most of the run.
size_t steps_to_compare(const std::string& p, const std::vector<double>& norms, size_t steps) {
    for (size_t i = 0; i < norms.size() && i < steps; i++)
        if (!std::isfinite(norms[i])) {
            std::printf("[  info    ] %s: step %zu skipped (non-finite gradient)\n", p.c_str(),
                        i + 1);
            steps = i + 1;
            break;
        }
    EXPECT_GE(steps, 20u) << p << ": a step was skipped too early to compare the run";
    return steps;
}

class CudaE2EP : public CudaE2E, public ::testing::WithParamInterface<std::string> {};

TEST_P(CudaE2EP, LossesMatchCpu) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(g, p);
    trainrt_session* c = cpu();
    ASSERT_NE(c, nullptr);
    std::vector<double> norms;
    const auto lg = run(g, 30, &norms);
    const auto lc = run(c, 30);
    ASSERT_EQ(lg.size(), 30u);
    ASSERT_EQ(lc.size(), 30u);
    EXPECT_LT(lc.back(), lc.front() - 0.3) << "the CPU run should learn (not a flat line)";
    const size_t steps = steps_to_compare(p, norms, 30);
    EXPECT_LE(compare("cuda " + p + " vs cpu", lg, lc, steps), tol_for(p));
}

TEST_P(CudaE2EP, AwkwardShapeLossesMatchCpu) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(g, p, kAwkward);
    trainrt_session* c = cpu(kAwkward);
    ASSERT_NE(c, nullptr);
    const auto lg = run(g, 20), lc = run(c, 20);
    ASSERT_EQ(lg.size(), 20u);
    ASSERT_EQ(lc.size(), 20u);
    EXPECT_LE(compare("awkward cuda " + p + " vs cpu", lg, lc, 20), tol_for(p));
}

TEST_P(CudaE2EP, RunToRunBitwise) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(a, p);
    CUDA_SESSION_OR_SKIP(b, p);
    const auto la = run(a, 30), lb = run(b, 30);
    ASSERT_EQ(la.size(), 30u);
    EXPECT_TRUE(same_bits(la, lb)) << p << ": two identical CUDA runs differ";
    compare("cuda " + p + " run 1 vs run 2", la, lb, 30);
}

// Generation with the KV cache (attention_cached_forward on the GPU, the default) gives the
// tokens of the whole-window path (TRAINRT_CUDA_KV_CACHE=0): greedy and seeded, from a prompt longer than the window (restarts included).
TEST_P(CudaE2EP, SampleWithTheKvCacheGivesTheWholeWindowTokens) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(s, p);
    ASSERT_EQ(run(s, 20).size(), 20u);
    std::vector<int32_t> prompt(80);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(32 + i % 90);
    for (double temperature : {0.0, 1.0}) {
        trainrt_sample_options o;
        trainrt_sample_options_init(&o);
        o.temperature = temperature;
        o.seed = 5;
        std::vector<int32_t> whole(150, -1), cached(150, -2);
        ::setenv("TRAINRT_CUDA_KV_CACHE", "0", 1);
        const trainrt_status sw = trainrt_session_sample(whole.data(), whole.size(), s,
                                                         prompt.data(), prompt.size(),
                                                         whole.size(), &o);
        ::unsetenv("TRAINRT_CUDA_KV_CACHE");
        ASSERT_EQ(sw, TRAINRT_OK) << last_error();
        const trainrt_status st = trainrt_session_sample(cached.data(), cached.size(), s,
                                                         prompt.data(), prompt.size(),
                                                         cached.size(), &o);
        ASSERT_EQ(st, TRAINRT_OK) << last_error();
        // bf16/fp16 round differently on the two paths (one row vs a window of rows): the
        // tokens may part once the logits of two candidates are within rounding; count how
        // far they agree rather than failing on the first step.
        size_t agree = 0;
        while (agree < whole.size() && whole[agree] == cached[agree]) ++agree;
        if (p == "fp32" || p == "tf32")
            EXPECT_EQ(cached, whole) << p << " temperature " << temperature;
        else
            EXPECT_GE(agree, 20u) << p << " temperature " << temperature;
        std::printf("[ sample ] %s temperature %.1f: the cached path agrees for %zu of %zu "
                    "tokens\n", p.c_str(), temperature, agree, whole.size());
    }
}

// Each token drawn on the GPU (draw_token, TRAINRT_CUDA_DEVICE_DRAW=1: off by default until
// this passes) gives the host draw's tokens: the same logits (the same session and weights),
// the same arithmetic (core/token_draw.h); only the id comes back, not the row.
TEST_P(CudaE2EP, SampleDrawnOnTheDeviceGivesTheHostsTokens) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(s, p);
    ASSERT_EQ(run(s, 20).size(), 20u);
    std::vector<int32_t> prompt(80);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(32 + i % 90);
    for (double temperature : {0.0, 0.8}) {
        for (int top_k : {0, 40}) {
            trainrt_sample_options o;
            trainrt_sample_options_init(&o);
            o.temperature = temperature;
            o.top_k = top_k;
            o.seed = 9;
            std::vector<int32_t> host(120, -1), device(120, -2);
            ASSERT_EQ(trainrt_session_sample(host.data(), host.size(), s, prompt.data(),
                                             prompt.size(), host.size(), &o),
                      TRAINRT_OK)
                << last_error();
            ::setenv("TRAINRT_CUDA_DEVICE_DRAW", "1", 1);
            const trainrt_status st = trainrt_session_sample(
                device.data(), device.size(), s, prompt.data(), prompt.size(), device.size(), &o);
            ::unsetenv("TRAINRT_CUDA_DEVICE_DRAW");
            ASSERT_EQ(st, TRAINRT_OK) << last_error();
            EXPECT_EQ(device, host) << p << " temperature " << temperature << " top_k " << top_k;
        }
    }
}

// Graph-captured vs eager steps (bitwise): cuda_graph_test.cpp. The sessions here run the
// library's defaults (graphs, epilogues, cuDNN attention where it serves, bf16/fp16
// activations under bf16/fp16): what a user gets.

TEST_P(CudaE2EP, ResumeBitwise) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(whole, p);
    CUDA_SESSION_OR_SKIP(first, p);
    CUDA_SESSION_OR_SKIP(second, p);
    const auto lw = run(whole, 20);
    run(first, 10);
    const std::string ckpt = dir_ + "/ckpt_" + p;
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, first, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_load(second, ckpt.c_str()), TRAINRT_OK) << last_error();
    const auto lr = run(second, 10);
    ASSERT_EQ(lw.size(), 20u);
    ASSERT_EQ(lr.size(), 10u);
    const std::vector<double> tail(lw.begin() + 10, lw.end());
    EXPECT_TRUE(same_bits(tail, lr)) << p << ": resumed run differs from the uninterrupted one";
    compare("cuda " + p + " resumed vs whole (steps 11-20)", lr, tail, 10);
}

// Fine-tuning (issue 19): LoRA adapters on every linear layer with the base frozen and a
// trainable final norm, block recompute — the column-slice kernels, null weight gradients,
// the compact AdamW runs and the recomputed blocks on CUDA — against the CPU twin, and
// recompute bitwise equal to none on CUDA itself. With dropout everywhere (the same
// counter-based masks on both backends, replayed by the CUDA graph with each step's own).
const Sets kFineTune = {{"lora.rank", "4"}, {"lora.alpha", "8.0"},
                        {"lora.target_modules", "[\"all-linear\"]"},
                        {"lora.dropout", "0.1"}, {"model.dropout", "0.1"},
                        {"train.trainable", "[\"ln_f.*\"]"}, {"train.recompute", "\"block\""}};

TEST_P(CudaE2EP, FineTuningLossesMatchCpu) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(g, p, kFineTune);
    trainrt_session* c = cpu(kFineTune);
    ASSERT_NE(c, nullptr);
    std::vector<double> norms;
    const auto lg = run(g, 30, &norms), lc = run(c, 30);
    ASSERT_EQ(lg.size(), 30u);
    ASSERT_EQ(lc.size(), 30u);
    const size_t steps = steps_to_compare(p, norms, 30);
    EXPECT_LE(compare("lora+frozen+recompute+dropout cuda " + p + " vs cpu", lg, lc, steps),
              tol_for(p));
    Sets none = kFineTune;
    none.back() = {"train.recompute", "\"none\""};
    trainrt_session* g2 = cuda(p, none);
    ASSERT_NE(g2, nullptr);
    EXPECT_TRUE(same_bits(run(g2, 30), lg)) << "recompute changed the CUDA losses";
}

// Issue 39's families and shapes in one model: qwen2 (q/k/v biases as the fused matmul's
// bias), grouped-query attention, an explicit head_dim (4 heads of 24 over d_model 64: the
// attention is 96 wide, o_proj maps it back), llama3 RoPE scaling, an untied head. Verified
// on the CPU against PyTorch (reference.pytorch_llama_families); here CUDA against the CPU.
// (In an order where every intermediate config is valid: the band before "llama3".)
const Sets kFamilies = {{"model.arch", "\"qwen2\""},           {"model.n_kv_head", "2"},
                        {"model.head_dim", "24"},                {"model.d_ff", "96"},
                        {"model.tie_embeddings", "false"},       {"model.rope_scaling_factor", "8.0"},
                        {"model.rope_original_context", "32"},   {"model.rope_scaling", "\"llama3\""}};

TEST_P(CudaE2EP, FamiliesLossesMatchCpu) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(g, p, kFamilies);
    trainrt_session* c = cpu(kFamilies);
    ASSERT_NE(c, nullptr);
    std::vector<double> norms;
    const auto lg = run(g, 30, &norms), lc = run(c, 30);
    ASSERT_EQ(lg.size(), 30u);
    ASSERT_EQ(lc.size(), 30u);
    const size_t steps = steps_to_compare(p, norms, 30);
    EXPECT_LE(compare("qwen2 head_dim llama3-rope cuda " + p + " vs cpu", lg, lc, steps),
              tol_for(p));
}

// QLoRA (issue 44): LoRA on every linear over a base quantised as it is read from
// model.init_from — NF4 with double quantisation on GPT-2 (every linear biased: the biased
// low-precision forward's fp32 chunks) and on the families' model (qwen2's q/k/v bias,
// grouped-query, an untied bf16 head), int8 on the latter — against the CPU twin, and run to
// run bitwise. CUDA runs these ops only when asked (TRAINRT_CUDA_QUANTISED_BASE=1, set here).
TEST_P(CudaE2EP, QuantisedBaseLossesMatchCpu) {
    const std::string p = GetParam();
    setenv("TRAINRT_CUDA_QUANTISED_BASE", "1", 1);
    struct Case {
        const char* name;
        Sets model;
        const char* base_dtype;
    };
    for (const Case& k : {Case{"gpt2 nf4", {}, "nf4"}, Case{"families nf4", kFamilies, "nf4"},
                          Case{"families int8", kFamilies, "int8"}}) {
        // The pretrained base: the CPU's random init of this model, saved.
        trainrt_session* init = cpu(k.model);
        ASSERT_NE(init, nullptr);
        const std::string base =
            dir_ + "/base_" + p + "_" + k.base_dtype + (k.model.empty() ? "_gpt2" : "_families");
        ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, init, base.c_str()), TRAINRT_OK)
            << last_error();
        Sets sets = k.model;
        for (const auto& kv : Sets{{"model.init_from", quoted(base + "/model.safetensors")},
                                   {"lora.rank", "4"},
                                   {"lora.alpha", "8.0"},
                                   {"lora.target_modules", "[\"all-linear\"]"},
                                   {"lora.base_dtype", quoted(k.base_dtype)}})
            sets.push_back(kv);
        CUDA_SESSION_OR_SKIP(g, p, sets);
        CUDA_SESSION_OR_SKIP(again, p, sets);
        trainrt_session* c = cpu(sets);
        ASSERT_NE(c, nullptr);
        std::vector<double> norms;
        const auto lg = run(g, 30, &norms), la = run(again, 30), lc = run(c, 30);
        ASSERT_EQ(lg.size(), 30u);
        ASSERT_EQ(lc.size(), 30u);
        const size_t steps = steps_to_compare(p, norms, 30);
        EXPECT_LE(compare(std::string("qlora ") + k.name + " cuda " + p + " vs cpu", lg, lc, steps),
                  tol_for(p));
        EXPECT_TRUE(same_bits(lg, la)) << k.name << " " << p << ": two CUDA runs differ";
    }
    unsetenv("TRAINRT_CUDA_QUANTISED_BASE");
}

INSTANTIATE_TEST_SUITE_P(Precision, CudaE2EP, ::testing::Values("fp32", "tf32", "bf16", "fp16"),
                         [](const auto& info) { return info.param; });

// accel.lowp_activations: CUDA stores activations in bf16/fp16. The reference is the CPU in
// the same precision (the same rounding points, docs/PRECISION.md), held tighter than the
// fp32 CPU is against CUDA's cast-per-matmul mode; run to run and resume stay bitwise.
class CudaE2ELowpActs : public CudaE2E, public ::testing::WithParamInterface<std::string> {};

const Sets kLowpActs = {{"accel.lowp_activations", "true"}};  // the default, said explicitly
const Sets kFp32Acts = {{"accel.lowp_activations", "false"}};

TEST_P(CudaE2ELowpActs, LossesMatchTheCpuTwin) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(g, p, kLowpActs);
    trainrt_status st;
    trainrt_session* c =
        create({{"runtime.device", "\"cpu\""}, {"runtime.precision", quoted(p)}}, &st);
    ASSERT_NE(c, nullptr) << "cpu " << p << " session: " << last_error();
    // The switch took effect: the activations (most of this model's memory) take half the
    // bytes of a CUDA session with fp32 activations.
    CUDA_SESSION_OR_SKIP(fp32_acts, p, kFp32Acts);
    trainrt_metrics with{}, without{};
    trainrt_metrics_init(&with);
    trainrt_metrics_init(&without);
    ASSERT_EQ(trainrt_session_metrics(&with, g), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_session_metrics(&without, fp32_acts), TRAINRT_OK) << last_error();
    EXPECT_LT(with.bytes_in_use, without.bytes_in_use)
        << p << ": accel.lowp_activations did not shrink the session's memory";
    std::vector<double> norms;
    const auto lg = run(g, 30, &norms);
    const auto lc = run(c, 30);
    ASSERT_EQ(lg.size(), 30u);
    ASSERT_EQ(lc.size(), 30u);
    const size_t steps = steps_to_compare(p, norms, 30);
    EXPECT_LE(compare("cuda " + p + " acts vs cpu " + p, lg, lc, steps), 2e-2);
}

TEST_P(CudaE2ELowpActs, RunToRunAndResumeBitwise) {
    const std::string p = GetParam();
    CUDA_SESSION_OR_SKIP(a, p, kLowpActs);
    CUDA_SESSION_OR_SKIP(b, p, kLowpActs);
    CUDA_SESSION_OR_SKIP(first, p, kLowpActs);
    CUDA_SESSION_OR_SKIP(second, p, kLowpActs);
    const auto la = run(a, 20), lb = run(b, 20);
    ASSERT_EQ(la.size(), 20u);
    EXPECT_TRUE(same_bits(la, lb)) << p << " acts: two identical CUDA runs differ";
    run(first, 10);
    const std::string ckpt = dir_ + "/ckpt_acts_" + p;
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, first, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_load(second, ckpt.c_str()), TRAINRT_OK) << last_error();
    const auto lr = run(second, 10);
    ASSERT_EQ(lr.size(), 10u);
    const std::vector<double> tail(la.begin() + 10, la.end());
    EXPECT_TRUE(same_bits(tail, lr)) << p << " acts: resumed run differs from the whole one";
}

INSTANTIATE_TEST_SUITE_P(Precision, CudaE2ELowpActs, ::testing::Values("bf16", "fp16"),
                         [](const auto& info) { return info.param; });

// runtime.profile_ops on CUDA (issue 43): each op timed on the device by events (nothing
// synchronized between the ops), the op times inside the profiled wall time, the losses the
// same bits as without the profile, and the libraries' choices listed: cuBLASLt's algorithm
// and workspace per GEMM shape, cuDNN's engine per attention plan (forward and backward).
TEST_F(CudaE2E, ProfileTimesEachOpOnTheDeviceAndListsTheChoices) {
    CUDA_SESSION_OR_SKIP(plain, "bf16");
    CUDA_SESSION_OR_SKIP(profiled, "bf16", Sets{{"runtime.profile_ops", "true"}});
    const auto lp = run(plain, 4), lq = run(profiled, 4);
    ASSERT_EQ(lq.size(), 4u);
    EXPECT_TRUE(same_bits(lp, lq)) << "the profile changed the losses";
    size_t needed = 0;
    ASSERT_EQ(trainrt_session_profile(nullptr, 0, &needed, profiled), TRAINRT_OK) << last_error();
    std::string json(needed + 1, '\0');
    ASSERT_EQ(trainrt_session_profile(&json[0], json.size(), &needed, profiled), TRAINRT_OK);
    json.resize(needed);
    std::printf("%s\n", json.c_str());
    EXPECT_NE(json.find("\"timing\": \"device\""), std::string::npos);
    auto number = [&](const char* key) {
        const size_t at = json.find(std::string("\"") + key + "\": ");
        return at == std::string::npos ? -1.0 : std::atof(json.c_str() + at + std::strlen(key) + 4);
    };
    const double wall = number("wall_s"), ops = number("op_s");
    EXPECT_GT(ops, 0.0);
    EXPECT_LE(ops, wall) << "device op times outside the profiled interval";
    auto count = [&](const std::string& s) {
        size_t n = 0;
        for (size_t at = json.find(s); at != std::string::npos; at = json.find(s, at + 1)) n++;
        return n;
    };
    EXPECT_GE(count("{\"op\": \"matmul (cuBLASLt)\""), 4u);
    EXPECT_EQ(count("{\"op\": \"matmul (cuBLASLt)\""),
              count("\"choice\": \"id ") + count("\"choice\": \"falls back"));
    EXPECT_EQ(count("{\"op\": \"attention fwd (cuDNN)\""),
              count("{\"op\": \"attention bwd (cuDNN)\""));
    EXPECT_EQ(count("{\"op\": \"attention fwd (cuDNN)\"") * 2, count("\"choice\": \"engine "));
}

TEST_F(CudaE2E, PlacementDeviceEqualsHost) {
    for (const char* sampler : {"\"random\"", "\"sequential\""}) {
        CUDA_SESSION_OR_SKIP(dev, "fp32",
                             Sets{{"data.placement", "\"device\""}, {"data.sampler", sampler}});
        CUDA_SESSION_OR_SKIP(host, "fp32",
                             Sets{{"data.placement", "\"host\""}, {"data.sampler", sampler}});
        const auto ld = run(dev, 30), lh = run(host, 30);
        ASSERT_EQ(ld.size(), 30u);
        EXPECT_TRUE(same_bits(ld, lh)) << "sampler " << sampler
                                       << ": device and host placement give different losses";
        compare(std::string("placement device vs host, sampler ") + sampler, ld, lh, 30);
    }
}

TEST_F(CudaE2E, CheckpointFromCudaLoadsOnCpu) {
    CUDA_SESSION_OR_SKIP(g, "fp32");
    trainrt_session* c = cpu();
    ASSERT_NE(c, nullptr);
    run(g, 10);
    const std::string ckpt = dir_ + "/from_cuda";
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, g, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_load(c, ckpt.c_str()), TRAINRT_OK) << last_error();
    const auto lg = run(g, 5), lc = run(c, 5);
    ASSERT_EQ(lg.size(), 5u);
    ASSERT_EQ(lc.size(), 5u);
    const double first = std::fabs(lg[0] - lc[0]) / lc[0];
    std::printf("[  relerr  ] step 11 after a CUDA checkpoint, cuda vs cpu: %.3e\n", first);
    EXPECT_LE(first, 1e-4);
    EXPECT_LE(compare("checkpoint cuda -> cpu, steps 11-15", lg, lc, 5), 1e-4);
}

TEST_F(CudaE2E, CheckpointFromCpuLoadsOnCuda) {
    CUDA_SESSION_OR_SKIP(g, "fp32");
    trainrt_session* c = cpu();
    ASSERT_NE(c, nullptr);
    run(c, 10);
    const std::string ckpt = dir_ + "/from_cpu";
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, c, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_load(g, ckpt.c_str()), TRAINRT_OK) << last_error();
    const auto lc = run(c, 5), lg = run(g, 5);
    ASSERT_EQ(lg.size(), 5u);
    ASSERT_EQ(lc.size(), 5u);
    EXPECT_LE(compare("checkpoint cpu -> cuda, steps 11-15", lg, lc, 5), 1e-4);
}

}  // namespace
