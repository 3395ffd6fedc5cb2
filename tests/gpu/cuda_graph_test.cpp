// Whole-step CUDA graphs (accel.cuda_graphs) through the public C API only: the same run with
// graphs on and off must be bitwise the same on the CUDA backend. A byte-level GPT (V 256,
// T 64, L2 H4 C64; B 4, grad_accum 2, AdamW + clipping + cosine schedule with warmup, so the
// lr changes every step) on tiny Shakespeare, data.placement = "device", 20 steps:
//   per-step loss and grad_norm bits identical, evals (after step 10 and at the end)
//   identical, and the saved checkpoint's model.safetensors and optimizer.safetensors
//   byte-identical — for the random and the sequential sampler, in fp32 and bf16;
//   the graph run really used graphs: its startup log says cuda_graphs=on and nothing warns
//   (a failed capture warns and falls back to eager, which would compare eager with eager);
//   with data.placement = "host" graphs fall back to eager, the startup log says why, and
//   the run matches the eager run bitwise.
// tests/unit/runtime/test_graph_replay.cpp proves the session's capture/replay logic on the
// CPU with a recording backend; this proves the CUDA backend's graphs do what it recorded.
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
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace {

const char* const kGraphToml = R"(
[model]
vocab_size = 256
context_length = 64
n_layer = 2
n_head = 4
d_model = 64
seed = 11

[data]
train = "train.bin"
val = "val.bin"
sampler = "random"
seed = 5
placement = "device"

[train]
batch_size = 4
seq_len = 64
grad_accum = 2
steps = 20
eval_every = 0
eval_batches = 3

[optim]
lr = 3e-3
warmup_steps = 4
schedule = "cosine"
min_lr = 3e-4
grad_clip = 1.0
weight_decay = 0.1

[runtime]
device = "cuda"
log_every = 1
max_inflight = 2
)";

constexpr int kSteps = 20;
constexpr int kEvalAt = 10;

using Sets = std::vector<std::pair<std::string, std::string>>;

bool graph_cuda_required() {
    const char* e = std::getenv("TRAINRT_REQUIRE_CUDA");
    return e && *e && std::strcmp(e, "0") != 0;
}

struct LogLine {
    int32_t level;
    std::string text;
};

void collect_log(int32_t level, const char* message, void* payload) {
    static_cast<std::vector<LogLine>*>(payload)->push_back({level, message});
}

std::string joined(const std::vector<LogLine>& log) {
    std::string out;
    for (const LogLine& l : log) out += "  [" + std::to_string(l.level) + "] " + l.text + "\n";
    return out;
}

// The value of the cuda_graphs field of the startup "acceleration:" line ("" if absent).
std::string graphs_field(const std::vector<LogLine>& log) {
    for (const LogLine& l : log) {
        if (l.text.rfind("acceleration:", 0) != 0) continue;
        const size_t at = l.text.find(" cuda_graphs=");
        if (at == std::string::npos) return "";
        const size_t from = at + std::strlen(" cuda_graphs=");
        const size_t to = l.text.find(" matmul_epilogues=", from);
        return l.text.substr(from, to == std::string::npos ? std::string::npos : to - from);
    }
    return "";
}

size_t warning_count(const std::vector<LogLine>& log) {
    size_t n = 0;
    for (const LogLine& l : log) n += l.level >= TRAINRT_LOG_WARN;
    return n;
}

std::string file_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// What one run produced.
struct RunFigures {
    std::vector<double> loss, grad_norm;
    std::vector<double> val;  // after step kEvalAt and at the end
    std::string model_bytes, optimizer_bytes;
};

class CudaGraphs : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_dir();
        std::ifstream f(std::string(TRAINRT_SOURCE_DIR) + "/examples/data/tinyshakespeare.txt",
                        std::ios::binary);
        ASSERT_TRUE(f.good()) << "examples/data/tinyshakespeare.txt";
        std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        ASSERT_GE(text.size(), 120000u);
        std::vector<uint16_t> bytes(120000);
        for (size_t i = 0; i < bytes.size(); i++) bytes[i] = (unsigned char)text[i];
        write_shard(dir_ + "/train.bin", {bytes.begin(), bytes.begin() + 100000});
        write_shard(dir_ + "/val.bin", {bytes.begin() + 100000, bytes.end()});
    }
    void TearDown() override {
        for (trainrt_session* s : sessions_) trainrt_session_destroy(s);
        for (std::vector<LogLine>* l : logs_) delete l;
    }

    // A CUDA session from the base config plus `sets`, logging into *log. nullptr with skip_
    // set when there is no CUDA backend here (a failure otherwise).
    trainrt_session* cuda(const Sets& sets, std::vector<LogLine>** log) {
        auto* lines = new std::vector<LogLine>();
        logs_.push_back(lines);
        *log = lines;
        trainrt_config* c = nullptr;
        if (trainrt_config_from_string(&c, kGraphToml, dir_.c_str()) != TRAINRT_OK) {
            ADD_FAILURE() << "base config: " << last_error();
            return nullptr;
        }
        for (const auto& kv : sets) {
            if (trainrt_config_set(c, kv.first.c_str(), kv.second.c_str()) != TRAINRT_OK) {
                ADD_FAILURE() << "set " << kv.first << " = " << kv.second << ": "
                              << last_error();
                trainrt_config_destroy(c);
                return nullptr;
            }
        }
        EXPECT_EQ(trainrt_config_set_log(c, collect_log, lines, TRAINRT_LOG_DEBUG), TRAINRT_OK);
        trainrt_session* s = nullptr;
        const trainrt_status st = trainrt_session_create(&s, c);
        trainrt_config_destroy(c);
        if (st == TRAINRT_OK) {
            sessions_.push_back(s);
            return s;
        }
        if (st == TRAINRT_ERR_UNSUPPORTED && !graph_cuda_required())
            skip_ = "no CUDA backend: " + last_error();
        else
            ADD_FAILURE() << "cuda session: status " << st << ": " << last_error();
        return nullptr;
    }

    // kSteps steps (each step's figures read after sync), evals after kEvalAt and at the end,
    // then a checkpoint into dir_/tag.
    RunFigures run(trainrt_session* s, const std::string& tag) {
        RunFigures out;
        for (int i = 0; i < kSteps; i++) {
            trainrt_step_result r;
            trainrt_step_result_init(&r);
            if (trainrt_session_step(&r, s) != TRAINRT_OK) {
                ADD_FAILURE() << tag << ": step: " << last_error();
                return out;
            }
            trainrt_step_result_init(&r);
            if (trainrt_session_sync(&r, s) != TRAINRT_OK) {
                ADD_FAILURE() << tag << ": sync: " << last_error();
                return out;
            }
            EXPECT_EQ(r.step, i + 1) << tag << ": after sync, the result is the step just run";
            EXPECT_TRUE(std::isfinite(r.loss)) << tag << ": step " << r.step;
            out.loss.push_back(r.loss);
            out.grad_norm.push_back(r.grad_norm);
            if (i + 1 == kEvalAt || i + 1 == kSteps) {
                double val = 0;
                EXPECT_EQ(trainrt_session_eval(&val, s), TRAINRT_OK) << tag << ": eval: "
                                                                      << last_error();
                out.val.push_back(val);
            }
        }
        const std::string ckpt = dir_ + "/" + tag;
        EXPECT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, ckpt.c_str()), TRAINRT_OK)
            << tag << ": save: " << last_error();
        out.model_bytes = file_bytes(ckpt + "/model.safetensors");
        out.optimizer_bytes = file_bytes(ckpt + "/optimizer.safetensors");
        return out;
    }

    std::string dir_;
    std::string skip_;
    std::vector<trainrt_session*> sessions_;
    std::vector<std::vector<LogLine>*> logs_;
};

#define GRAPH_SESSION_OR_SKIP(var, log, sets) \
    std::vector<LogLine>* log = nullptr;      \
    trainrt_session* var = cuda(sets, &log);  \
    if (!var) {                               \
        if (!skip_.empty()) GTEST_SKIP() << skip_; \
        return;                               \
    }

// Every figure bitwise; prints each step so a GPU log shows where two runs part.
void expect_bitwise(const RunFigures& got, const RunFigures& want, const std::string& what) {
    ASSERT_EQ(got.loss.size(), static_cast<size_t>(kSteps)) << what;
    ASSERT_EQ(want.loss.size(), static_cast<size_t>(kSteps)) << what;
    int differing = 0;
    for (int i = 0; i < kSteps; i++) {
        const bool same = same_bits(got.loss[i], want.loss[i]) &&
                          same_bits(got.grad_norm[i], want.grad_norm[i]);
        differing += !same;
        std::printf("[  step    ] %s %2d  loss %.9f vs %.9f  norm %.9f vs %.9f%s\n",
                    what.c_str(), i + 1, got.loss[i], want.loss[i], got.grad_norm[i],
                    want.grad_norm[i], same ? "" : "  DIFFERS");
    }
    EXPECT_EQ(differing, 0) << what << ": steps whose loss or grad_norm differ in some bit";
    ASSERT_EQ(got.val.size(), want.val.size()) << what;
    for (size_t i = 0; i < want.val.size(); i++)
        EXPECT_TRUE(same_bits(got.val[i], want.val[i]))
            << what << ": eval " << i + 1 << ": " << got.val[i] << " vs " << want.val[i];
    EXPECT_TRUE(got.model_bytes == want.model_bytes) << what << ": model.safetensors differs";
    EXPECT_TRUE(got.optimizer_bytes == want.optimizer_bytes)
        << what << ": optimizer.safetensors differs";
}

struct GraphCase {
    const char* precision;
    const char* sampler;
};

// GoogleTest prints parameters with this (found by ADL): readable CTest names.
void PrintTo(const GraphCase& c, std::ostream* os) { *os << c.precision << " " << c.sampler; }

class CudaGraphsP : public CudaGraphs, public ::testing::WithParamInterface<GraphCase> {};

TEST_P(CudaGraphsP, GraphEqualsEagerBitwise) {
    const GraphCase c = GetParam();
    const Sets base = {{"runtime.precision", std::string("\"") + c.precision + "\""},
                       {"data.sampler", std::string("\"") + c.sampler + "\""}};
    Sets eager_sets = base, graph_sets = base;
    eager_sets.push_back({"accel.cuda_graphs", "false"});
    graph_sets.push_back({"accel.cuda_graphs", "true"});
    GRAPH_SESSION_OR_SKIP(eager, eager_log, eager_sets);
    GRAPH_SESSION_OR_SKIP(graph, graph_log, graph_sets);
    const std::string what = std::string(c.precision) + " " + c.sampler;
    const std::string tag = std::string(c.precision) + "_" + c.sampler;
    const RunFigures e = run(eager, "eager_" + tag);
    const RunFigures g = run(graph, "graph_" + tag);

    EXPECT_EQ(graphs_field(*graph_log).rfind("on", 0), 0u)
        << "the graph session's startup log: cuda_graphs = '" << graphs_field(*graph_log)
        << "'\n"
        << joined(*graph_log);
    EXPECT_EQ(warning_count(*graph_log), 0u)
        << "a warning (a failed capture falls back to eager silently otherwise)\n"
        << joined(*graph_log);
    EXPECT_EQ(graphs_field(*eager_log).rfind("off", 0), 0u) << joined(*eager_log);
    ASSERT_EQ(e.loss.size(), static_cast<size_t>(kSteps));
    EXPECT_LT(e.loss.back(), e.loss.front() - 0.3) << what << ": the run should learn";
    expect_bitwise(g, e, "graphs vs eager, " + what);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaGraphsP,
                         ::testing::Values(GraphCase{"fp32", "random"},
                                           GraphCase{"fp32", "sequential"},
                                           GraphCase{"bf16", "random"},
                                           GraphCase{"bf16", "sequential"}),
                         [](const ::testing::TestParamInfo<GraphCase>& info) {
                             return std::string(info.param.precision) + "_" +
                                    info.param.sampler;
                         });

TEST_F(CudaGraphs, HostPlacementFallsBackToEagerBitwise) {
    const Sets base = {{"runtime.precision", "\"fp32\""}, {"data.placement", "\"host\""}};
    Sets eager_sets = base, graph_sets = base;
    eager_sets.push_back({"accel.cuda_graphs", "false"});
    graph_sets.push_back({"accel.cuda_graphs", "true"});
    GRAPH_SESSION_OR_SKIP(eager, eager_log, eager_sets);
    GRAPH_SESSION_OR_SKIP(graph, graph_log, graph_sets);
    const RunFigures e = run(eager, "host_eager");
    const RunFigures g = run(graph, "host_graphs_asked");
    const std::string field = graphs_field(*graph_log);
    EXPECT_EQ(field.rfind("off", 0), 0u) << "cuda_graphs = '" << field << "'\n"
                                         << joined(*graph_log);
    EXPECT_NE(field.find("placement"), std::string::npos)
        << "the startup log should say graphs need data.placement = device: '" << field << "'";
    expect_bitwise(g, e, "graphs asked with placement host vs eager");
}

}  // namespace
