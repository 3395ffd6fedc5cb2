// Whole-step graphs (accel.cuda_graphs) proven on the CPU: a Session driving a
// RecordingBackend (recording_backend.h: CUDA-graph semantics over the CPU backend — ops
// between begin_capture and end_capture are recorded with their host arguments frozen, and
// replay_graph re-runs them reading backend memory afresh) must train exactly like an eager
// session on the plain CPU backend:
//   per-step loss, grad_norm and lr bitwise equal, an eval in the middle and a forward at the
//   end bitwise equal, and the saved model and optimizer tensors byte-identical;
//   for both resident samplers, grad_accum 1 and 3, fused and per-tensor AdamW, a cosine
//   schedule with warmup (the lr changes every step) and clipping that bites;
//   the recorder captured exactly once and replayed every step after the warm-up, so no
//   case can pass by running eagerly;
//   graphs asked for with data.placement = "host" stay off, and the startup log says why;
//   a capture that throws is discarded (end_capture(-1)), warned about, and the run carries
//   on eagerly with the eager results;
//   load() into a session whose step is already captured, and a resumed graph session,
//   continue the eager run bitwise;
//   and the comparison itself catches a backend that bakes per-step values into the graph
//   (the recorder's bake_* mutants).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <ostream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "config/config.h"
#include "data/prepare.h"
#include "runtime/recording_backend.h"
#include "runtime/session.h"

namespace fs = std::filesystem;
using trt::graph_test::RecordingBackend;

namespace {

constexpr int kVocab = 96;
constexpr int kSteps = 12;
constexpr int kEvalAt = 6;  // an eval between replays (it reuses the model's buffers), and one at the end
constexpr double kGradClip = 0.5;

// A folder for the running test, with train shards of 1500 and 900 tokens (the sequential
// cursor crosses a shard boundary and wraps within 12 steps of 3 x 4 x 16) and a val shard.
std::string make_data_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name)
        if (c == '/') c = '_';
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "graph_replay" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::mt19937 gen(42);
    // Low-entropy text (a few repeated motifs plus noise) so the model learns something.
    std::uniform_int_distribution<uint32_t> noise(0, kVocab - 1), pick(0, 9);
    auto shard = [&](const std::string& file, int64_t n) {
        std::vector<uint32_t> t(static_cast<size_t>(n));
        for (size_t i = 0; i < t.size(); ++i)
            t[i] = pick(gen) < 7 ? static_cast<uint32_t>((i * 7 + i / 5) % 23) : noise(gen);
        trt::write_shard((dir / file).string(), t.data(), n, 2);
    };
    shard("train_0.bin", 1500);
    shard("train_1.bin", 900);
    shard("val.bin", 600);
    return dir.string();
}

struct Variant {
    std::string sampler = "random";
    int grad_accum = 1;
    bool fused_adamw = true;
    std::string placement = "device";
    double dropout = 0.0;  // model.dropout: masks keyed by the step in backend memory
};

trt::Config make_config(const std::string& dir, const Variant& v, bool graphs) {
    trt::Config c = trt::Config::from_string(
        "[model]\nvocab_size = 96\ncontext_length = 16\nn_layer = 2\nn_head = 2\n"
        "d_model = 32\nseed = 5\n"
        "[data]\ntrain = \"train_*.bin\"\nval = \"val.bin\"\nseed = 3\n"
        "[train]\nbatch_size = 4\nseq_len = 16\nsteps = 12\neval_every = 0\n"
        "eval_batches = 3\n"
        "[optim]\nlr = 3e-3\nwarmup_steps = 3\nschedule = \"cosine\"\nmin_lr = 3e-4\n"
        "grad_clip = 0.5\nweight_decay = 0.1\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\nlog_every = 1\n",
        dir);
    c.set("data.sampler", "\"" + v.sampler + "\"");
    c.set("data.placement", "\"" + v.placement + "\"");
    c.set("train.grad_accum", std::to_string(v.grad_accum));
    c.set("accel.fused_adamw", v.fused_adamw ? "true" : "false");
    c.set("accel.cuda_graphs", graphs ? "true" : "false");
    c.set("model.dropout", std::to_string(v.dropout));
    return c;
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

std::string read_bytes(const fs::path& path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// One graph the recorder holds.
struct GraphStats {
    int id = 0, captures = 0, replays = 0;
    std::vector<std::string> ops;
    bool has(const std::string& op) const {
        for (const std::string& o : ops)
            if (o == op) return true;
        return false;
    }
};

// What the recorder saw, copied out before the session (which owns it) goes.
struct RecorderStats {
    bool present = false;
    int begin_captures = 0, captures = 0, discards = 0, replays = 0;
    bool capturing = false;
    int violations = 0;  // calls CUDA forbids inside a capture
    std::string last_violation;
    std::vector<GraphStats> graphs;
    // The train-step graph: the one that ends the step (the session may hold others, e.g.
    // an eval forward). nullptr if none was captured.
    const GraphStats* step_graph() const {
        for (const GraphStats& g : graphs)
            if (g.has("end_step")) return &g;
        return nullptr;
    }
};

RecorderStats stats_of(const RecordingBackend* rec) {
    RecorderStats st;
    if (!rec) return st;
    st.present = true;
    st.begin_captures = rec->begin_captures();
    st.captures = rec->captures();
    st.discards = rec->discards();
    st.replays = rec->replays();
    st.capturing = rec->capturing();
    st.violations = rec->violations();
    st.last_violation = rec->last_violation();
    for (int id : rec->graph_ids()) {
        GraphStats g;
        g.id = id;
        g.captures = rec->captures(id);
        g.replays = rec->replays(id);
        g.ops = rec->graph_op_names(id);
        st.graphs.push_back(g);
    }
    return st;
}

// Everything a run produces that a graph could get wrong.
struct Trace {
    std::vector<trt::StepResult> steps;
    std::vector<double> val_losses;  // evals after step kEvalAt and after the last step
    double probe_loss = std::numeric_limits<double>::quiet_NaN();
    std::vector<float> probe_logits;
    std::string model_bytes, optimizer_bytes;
    std::vector<LogLine> log;
    RecorderStats rec;  // present when the run had a RecordingBackend
};

// Steps a session n times (each step's own figures, read after sync), evaluating after
// step eval_at (0 = never).
void run_steps(trt::Session& s, int n, int eval_at, Trace& t) {
    for (int i = 0; i < n; ++i) {
        s.step();
        t.steps.push_back(s.sync());
        if (eval_at > 0 && t.steps.back().step == eval_at) t.val_losses.push_back(s.eval());
    }
}

// A final eval, a forward on fixed tokens, and the saved checkpoint's tensors.
void finish_trace(trt::Session& s, const std::string& ckpt_dir, Trace& t) {
    t.val_losses.push_back(s.eval());
    constexpr int B = 4, T = 16;
    std::mt19937 gen(7);
    std::uniform_int_distribution<int32_t> d(0, kVocab - 1);
    std::vector<int32_t> probe(B * (T + 1));
    for (auto& x : probe) x = d(gen);
    t.probe_logits.assign(static_cast<size_t>(B) * T * kVocab, 0.0f);
    t.probe_loss = s.forward(probe.data(), B, T, t.probe_logits.data(), t.probe_logits.size());
    s.save(ckpt_dir);
    t.model_bytes = read_bytes(fs::path(ckpt_dir) / "model.safetensors");
    t.optimizer_bytes = read_bytes(fs::path(ckpt_dir) / "optimizer.safetensors");
}

// A factory handing the session a RecordingBackend over a CPU backend; *out sees it.
trt::BackendFactory recorder_factory(RecordingBackend** out, RecordingBackend::Knobs knobs = {}) {
    return [out, knobs](const trt::RunConfig& run) {
        auto rec = std::make_unique<RecordingBackend>(
            trt::make_cpu_backend(static_cast<int>(run.runtime.threads)), knobs);
        *out = rec.get();
        trt::BackendSelection sel;
        sel.backend = std::move(rec);
        sel.precision = trt::Precision::Fp32;
        return sel;
    };
}

// One whole run: kSteps steps with an eval midway, then the final trace.
// knobs: run on a RecordingBackend with these knobs; none: the plain CPU backend.
Trace full_run(const std::string& dir, const trt::Config& config,
               const std::optional<RecordingBackend::Knobs>& knobs, const std::string& tag) {
    Trace t;
    RecordingBackend* rec = nullptr;
    trt::LogSink sink;
    sink.fn = collect_log;
    sink.payload = &t.log;
    sink.min_level = TRAINRT_LOG_DEBUG;
    trt::Session s(config, sink, knobs ? recorder_factory(&rec, *knobs) : trt::BackendFactory{});
    run_steps(s, kSteps, kEvalAt, t);
    finish_trace(s, (fs::path(dir) / ("ckpt_" + tag)).string(), t);
    t.rec = stats_of(rec);
    return t;
}

// Number of steps whose loss, grad_norm or lr differ in any bit (and -1 if the counts
// differ); expect_equal reports each difference as a failure.
int compare_traces(const Trace& got, const Trace& want, bool expect_equal,
                   const std::string& what) {
    if (got.steps.size() != want.steps.size()) {
        if (expect_equal)
            ADD_FAILURE() << what << ": " << got.steps.size() << " steps vs "
                          << want.steps.size();
        return -1;
    }
    int differing = 0;
    for (size_t i = 0; i < want.steps.size(); ++i) {
        const trt::StepResult &g = got.steps[i], &w = want.steps[i];
        const bool same = g.step == w.step && same_bits(g.loss, w.loss) &&
                          same_bits(g.grad_norm, w.grad_norm) && same_bits(g.lr, w.lr);
        if (!same) ++differing;
        if (!same && expect_equal)
            ADD_FAILURE() << what << ": step " << w.step << " (got step " << g.step
                          << "): loss " << g.loss << " vs " << w.loss << ", grad_norm "
                          << g.grad_norm << " vs " << w.grad_norm << ", lr " << g.lr << " vs "
                          << w.lr;
    }
    return differing;
}

void expect_same_results(const Trace& got, const Trace& want, const std::string& what) {
    compare_traces(got, want, true, what);
    ASSERT_EQ(got.val_losses.size(), want.val_losses.size()) << what;
    for (size_t i = 0; i < want.val_losses.size(); ++i)
        EXPECT_TRUE(same_bits(got.val_losses[i], want.val_losses[i]))
            << what << ": eval " << i + 1 << ": " << got.val_losses[i] << " vs "
            << want.val_losses[i];
    EXPECT_TRUE(same_bits(got.probe_loss, want.probe_loss))
        << what << ": probe loss " << got.probe_loss << " vs " << want.probe_loss;
    EXPECT_TRUE(got.probe_logits.size() == want.probe_logits.size() &&
                std::memcmp(got.probe_logits.data(), want.probe_logits.data(),
                            want.probe_logits.size() * sizeof(float)) == 0)
        << what << ": the final parameters differ (probe logits)";
    EXPECT_TRUE(got.model_bytes == want.model_bytes)
        << what << ": model.safetensors differs";
    EXPECT_TRUE(got.optimizer_bytes == want.optimizer_bytes)
        << what << ": optimizer.safetensors differs";
}

// Warning lines (WARN and above).
std::vector<std::string> warnings(const std::vector<LogLine>& log) {
    std::vector<std::string> out;
    for (const LogLine& l : log)
        if (l.level >= TRAINRT_LOG_WARN) out.push_back(l.text);
    return out;
}

std::string variant_name(const Variant& v) {
    return v.sampler + "_ga" + std::to_string(v.grad_accum) +
           (v.fused_adamw ? "" : "_per_tensor_adamw") + (v.dropout > 0 ? "_dropout" : "");
}
// GoogleTest prints parameters with this (found by ADL): readable CTest names.
void PrintTo(const Variant& v, std::ostream* os) { *os << variant_name(v); }

// ------------------------------------------------------------------ graph == eager

// The step graph of a clean graph run: captured once, replayed for every step after the
// warm-up, holding the whole step and none of the eager per-step writes.
void expect_step_graph(const Trace& graph, int grad_accum) {
    const RecorderStats& rec = graph.rec;
    ASSERT_TRUE(rec.present);
    const GraphStats* step = rec.step_graph();
    ASSERT_NE(step, nullptr) << "no train-step graph was captured\n" << joined(graph.log);
    // Step 1 eager, step 2 captured (recorded, not run) and replayed, steps 3.. replayed. A
    // capture executes nothing, so the captured step can only run by a replay.
    EXPECT_EQ(step->captures, 1) << joined(graph.log);
    EXPECT_EQ(step->replays, kSteps - 1) << joined(graph.log);
    EXPECT_EQ(rec.discards, 0) << joined(graph.log);
    EXPECT_FALSE(rec.capturing);
    EXPECT_EQ(rec.violations, 0) << rec.last_violation;
    EXPECT_TRUE(warnings(graph.log).empty()) << joined(graph.log);
    EXPECT_EQ(graphs_field(graph.log).rfind("on", 0), 0u)
        << "startup log: cuda_graphs = '" << graphs_field(graph.log) << "'\n"
        << joined(graph.log);

    const std::vector<std::string>& ops = step->ops;
    int draws = 0, begin_steps = 0, adamw = 0, end_steps = 0, losses = 0;
    for (const std::string& op : ops) {
        draws += op == "sample_window" || op == "sample_random";
        begin_steps += op == "begin_step";
        adamw += op == "adamw_step";
        end_steps += op == "end_step";
        losses += op == "accumulate_loss";
    }
    EXPECT_EQ(ops.front(), "zero") << "the graph starts by zeroing the gradients";
    EXPECT_EQ(ops.back(), "end_step");
    EXPECT_EQ(draws, grad_accum);
    EXPECT_EQ(losses, grad_accum);
    EXPECT_EQ(begin_steps, 0) << "begin_step belongs outside the graph (it carries the lr)";
    EXPECT_GE(adamw, 1);
    EXPECT_EQ(end_steps, 1);
    // Any other graph (an eval forward) touches neither the step's scalars nor the weights.
    for (const GraphStats& g : rec.graphs) {
        if (&g == step) continue;
        EXPECT_FALSE(g.has("begin_step") || g.has("adamw_step") || g.has("end_step") ||
                     g.has("sample_random") || g.has("sample_window"))
            << "graph " << g.id << " holds step ops";
    }
}

class GraphEqualsEager : public ::testing::TestWithParam<Variant> {};

TEST_P(GraphEqualsEager, Bitwise) {
    const Variant v = GetParam();
    const std::string dir = make_data_dir();
    const Trace eager = full_run(dir, make_config(dir, v, false), std::nullopt, "eager");
    const Trace graph =
        full_run(dir, make_config(dir, v, true), RecordingBackend::Knobs{}, "graph");
    expect_step_graph(graph, v.grad_accum);

    // The case exercises what it claims: the lr moves every step and clipping bites.
    std::set<double> lrs;
    bool clipped = false;
    for (const trt::StepResult& r : eager.steps) {
        lrs.insert(r.lr);
        clipped = clipped || r.grad_norm > kGradClip;
    }
    EXPECT_EQ(lrs.size(), static_cast<size_t>(kSteps)) << "the lr should change every step";
    EXPECT_TRUE(clipped) << "no step's gradient norm exceeded optim.grad_clip";
    EXPECT_LT(eager.steps.back().loss, eager.steps.front().loss) << "the eager run should learn";

    expect_same_results(graph, eager, "graph vs eager, " + variant_name(v));
}

INSTANTIATE_TEST_SUITE_P(
    Samplers, GraphEqualsEager,
    ::testing::Values(Variant{"random", 1, true}, Variant{"random", 3, true},
                      Variant{"sequential", 1, true}, Variant{"sequential", 3, true},
                      Variant{"random", 3, false}, Variant{"sequential", 3, false},
                      Variant{"random", 3, true, "device", 0.2},
                      Variant{"sequential", 1, true, "device", 0.2}),
    [](const ::testing::TestParamInfo<Variant>& info) { return variant_name(info.param); });

// ------------------------------------------------------------------ the comparison catches
// a backend that freezes a per-step value into the graph (mutation checks, kept as tests)

struct Mutant {
    std::string sampler;
    bool bake_sampler_inputs;
    bool bake_lr;
    bool bake_dropout_step = false;  // with model.dropout on
};

std::string mutant_name(const Mutant& m) {
    return m.sampler + (m.bake_dropout_step ? "_baked_dropout_step"
                        : m.bake_lr         ? "_baked_lr"
                                            : "_baked_sampler");
}
void PrintTo(const Mutant& m, std::ostream* os) { *os << mutant_name(m); }

class BakedValuesAreCaught : public ::testing::TestWithParam<Mutant> {};

TEST_P(BakedValuesAreCaught, GraphRunDiffers) {
    const Mutant m = GetParam();
    Variant v;
    v.sampler = m.sampler;
    v.grad_accum = 2;
    v.dropout = m.bake_dropout_step ? 0.2 : 0.0;
    const std::string dir = make_data_dir();
    const Trace eager = full_run(dir, make_config(dir, v, false), std::nullopt, "eager");
    RecordingBackend::Knobs knobs;
    knobs.bake_sampler_inputs = m.bake_sampler_inputs;
    knobs.bake_lr = m.bake_lr;
    knobs.bake_dropout_step = m.bake_dropout_step;
    const Trace graph = full_run(dir, make_config(dir, v, true), knobs, "graph");
    const GraphStats* step = graph.rec.step_graph();
    ASSERT_NE(step, nullptr) << joined(graph.log);
    ASSERT_EQ(step->replays, kSteps - 1) << joined(graph.log);
    const int differing = compare_traces(graph, eager, false, "mutant");
    EXPECT_GT(differing, 0) << "a graph that bakes "
                            << (m.bake_dropout_step ? "the dropout step"
                                : m.bake_lr         ? "the lr"
                                                    : "the sampler inputs")
                            << " went unnoticed: the comparison cannot fail";
    // Steps 1 (eager) and 2 (captured with its own values) are still right.
    ASSERT_GE(graph.steps.size(), 2u);
    EXPECT_TRUE(same_bits(graph.steps[1].loss, eager.steps[1].loss));
    EXPECT_FALSE(graph.model_bytes == eager.model_bytes);
}

INSTANTIATE_TEST_SUITE_P(Mutants, BakedValuesAreCaught,
                         ::testing::Values(Mutant{"random", true, false},
                                           Mutant{"sequential", true, false},
                                           Mutant{"random", false, true},
                                           Mutant{"sequential", false, false, true}),
                         [](const ::testing::TestParamInfo<Mutant>& info) {
                             return mutant_name(info.param);
                         });

// ------------------------------------------------------------------ when graphs stay off

TEST(GraphReplay, HostPlacementRunsEagerlyAndSaysWhy) {
    Variant v;
    v.grad_accum = 2;
    v.placement = "host";
    const std::string dir = make_data_dir();
    const Trace eager = full_run(dir, make_config(dir, v, false), std::nullopt, "eager");
    const Trace graph =
        full_run(dir, make_config(dir, v, true), RecordingBackend::Knobs{}, "graph");
    EXPECT_EQ(graph.rec.begin_captures, 0) << joined(graph.log);
    EXPECT_EQ(graph.rec.replays, 0);
    const std::string field = graphs_field(graph.log);
    EXPECT_EQ(field.rfind("off", 0), 0u) << "cuda_graphs = '" << field << "'\n"
                                         << joined(graph.log);
    EXPECT_NE(field.find("placement"), std::string::npos)
        << "the startup log should say graphs need data.placement = device: '" << field
        << "'\n"
        << joined(graph.log);
    expect_same_results(graph, eager, "graphs asked, placement host, vs eager");
}

TEST(GraphReplay, NotRequestedMeansNoCapture) {
    Variant v;
    v.grad_accum = 2;
    const std::string dir = make_data_dir();
    const Trace t = full_run(dir, make_config(dir, v, false), RecordingBackend::Knobs{}, "rec");
    EXPECT_EQ(t.rec.begin_captures, 0);
    EXPECT_EQ(t.rec.replays, 0);
    EXPECT_EQ(graphs_field(t.log).rfind("off", 0), 0u) << joined(t.log);
}

// ------------------------------------------------------------------ a capture that fails

// The step's capture (the first one: step 2 comes before any eval) throws at recorded op
// fail_at (-1 = the last op of a clean step capture). The session must end it with
// end_capture(-1), warn once with the backend's reason, run that step and all later ones
// eagerly, and so match the eager run.
void step_capture_failure_case(const std::string& sampler, int64_t fail_at) {
    Variant v;
    v.sampler = sampler;
    v.grad_accum = 2;
    const std::string dir = make_data_dir();
    const Trace eager = full_run(dir, make_config(dir, v, false), std::nullopt, "eager");
    if (fail_at < 0) {
        const Trace clean =
            full_run(dir, make_config(dir, v, true), RecordingBackend::Knobs{}, "clean");
        ASSERT_NE(clean.rec.step_graph(), nullptr);
        fail_at = static_cast<int64_t>(clean.rec.step_graph()->ops.size()) - 1;
    }
    RecordingBackend::Knobs knobs;
    knobs.fail_at_op = fail_at;
    knobs.fail_in_capture = 1;
    const Trace graph = full_run(dir, make_config(dir, v, true), knobs, "failing");
    const RecorderStats& rec = graph.rec;
    EXPECT_EQ(rec.step_graph(), nullptr) << "the failed step capture was kept";
    EXPECT_EQ(rec.discards, 1) << "the failed capture is ended with end_capture(-1)\n"
                               << joined(graph.log);
    EXPECT_EQ(rec.begin_captures - rec.captures - rec.discards, 0)
        << "a capture was left unended";
    for (const GraphStats& g : rec.graphs)
        EXPECT_FALSE(g.has("sample_random") || g.has("sample_window") || g.has("end_step"))
            << "the step was captured again after the failure";
    EXPECT_FALSE(rec.capturing) << "the capture was left open";
    EXPECT_EQ(rec.violations, 0) << rec.last_violation;
    const std::vector<std::string> warned = warnings(graph.log);
    ASSERT_EQ(warned.size(), 1u) << joined(graph.log);
    EXPECT_NE(warned[0].find("injected capture failure"), std::string::npos)
        << "the warning should carry the backend's reason: " << warned[0];
    expect_same_results(graph, eager,
                        "step capture failed at op " + std::to_string(fail_at) + ", vs eager");
}

TEST(GraphReplay, CaptureFailingAtFirstOpFallsBackToEager) {
    step_capture_failure_case("sequential", 0);
}
TEST(GraphReplay, CaptureFailingMidStepFallsBackToEager) {
    step_capture_failure_case("random", 7);
}
TEST(GraphReplay, CaptureFailingAtLastOpFallsBackToEager) {
    step_capture_failure_case("sequential", -1);
}

// A later capture (the session's eval forward, if it captures one) that fails leaves the
// step graph alone and the results eager-exact.
TEST(GraphReplay, LaterCaptureFailingKeepsTheStepGraph) {
    Variant v;
    v.grad_accum = 2;
    const std::string dir = make_data_dir();
    const Trace eager = full_run(dir, make_config(dir, v, false), std::nullopt, "eager");
    const Trace clean =
        full_run(dir, make_config(dir, v, true), RecordingBackend::Knobs{}, "clean");
    if (clean.rec.begin_captures < 2)
        GTEST_SKIP() << "the session captures only the train step";
    RecordingBackend::Knobs knobs;
    knobs.fail_at_op = 2;
    knobs.fail_in_capture = 2;
    const Trace graph = full_run(dir, make_config(dir, v, true), knobs, "failing");
    const GraphStats* step = graph.rec.step_graph();
    ASSERT_NE(step, nullptr) << joined(graph.log);
    EXPECT_EQ(step->replays, kSteps - 1);
    EXPECT_EQ(graph.rec.discards, 1);
    EXPECT_FALSE(graph.rec.capturing);
    EXPECT_EQ(graph.rec.violations, 0) << graph.rec.last_violation;
    EXPECT_EQ(warnings(graph.log).size(), 1u) << joined(graph.log);
    expect_same_results(graph, eager, "second capture failed, vs eager");
}

// ------------------------------------------------------------------ checkpoints and graphs

// Replays of the live recorder's step graph (0 when there is none).
int step_replays(const RecordingBackend& rec) {
    const RecorderStats st = stats_of(&rec);
    return st.step_graph() ? st.step_graph()->replays : 0;
}

// load() into a session whose step is already captured (the graph keeps its buffers: load
// copies into them), and a fresh graph session resuming from a checkpoint: both continue the
// eager run bitwise (the sequential cursor comes back from the checkpoint).
TEST(GraphReplay, LoadAndResumeContinueTheEagerRun) {
    Variant v;
    v.sampler = "sequential";
    v.grad_accum = 2;
    const std::string dir = make_data_dir();
    const std::string ckpt = (fs::path(dir) / "eager_step6").string();
    Trace eager;
    {
        trt::Session s(make_config(dir, v, false), trt::LogSink{});
        run_steps(s, kEvalAt, 0, eager);
        s.save(ckpt);
        run_steps(s, kSteps - kEvalAt, 0, eager);
    }
    Trace eager_tail;
    eager_tail.steps.assign(eager.steps.begin() + kEvalAt, eager.steps.end());

    {  // load into a live graph
        RecordingBackend* rec = nullptr;
        Trace t;
        trt::Session s(make_config(dir, v, true), trt::LogSink{}, recorder_factory(&rec));
        run_steps(s, 3, 0, t);
        ASSERT_EQ(step_replays(*rec), 2);
        s.load(ckpt);
        Trace tail;
        run_steps(s, kSteps - kEvalAt, 0, tail);
        EXPECT_EQ(rec->begin_captures(), 1) << "load() should not need a new capture";
        EXPECT_EQ(step_replays(*rec), 2 + kSteps - kEvalAt);
        compare_traces(tail, eager_tail, true, "graph session after load()");
    }
    {  // a fresh graph session resuming
        RecordingBackend* rec = nullptr;
        trt::Session s(make_config(dir, v, true), trt::LogSink{}, recorder_factory(&rec));
        s.load(ckpt);
        Trace tail;
        run_steps(s, kSteps - kEvalAt, 0, tail);
        EXPECT_EQ(rec->begin_captures(), 1);
        EXPECT_EQ(step_replays(*rec), kSteps - kEvalAt - 1);
        compare_traces(tail, eager_tail, true, "resumed graph session");
    }
}

// ------------------------------------------------------------------ the recorder itself

TEST(RecordingBackend, RecordsInsteadOfRunningAndRefusesWhatCudaForbids) {
    RecordingBackend be(trt::make_cpu_backend(1));
    // The recorded op: s->loss_sum += sum of four ones.
    auto* s = static_cast<trt::StepScalars*>(be.alloc(sizeof(trt::StepScalars), "scalars"));
    auto* x = static_cast<float*>(be.alloc(4 * sizeof(float), "x"));
    const float ones[4] = {1, 1, 1, 1};
    be.copy_to_device(x, ones, sizeof ones);
    auto loss_sum = [&] {
        trt::StepScalars host;
        be.copy_to_host(&host, s, sizeof host);
        return host.loss_sum;
    };
    be.begin_capture();
    trt::optimizer_step_of(be).accumulate_loss(s, x, 4);  // recorded
    EXPECT_THROW(be.alloc(8, "y"), trt::Error);
    EXPECT_THROW(be.copy_to_host(nullptr, x, 0), trt::Error);
    EXPECT_THROW(be.synchronize(), trt::Error);
    EXPECT_THROW(be.upload_step_inputs(x, ones, sizeof ones), trt::Error);
    EXPECT_THROW(trt::optimizer_step_of(be).read_scalars(0), trt::Error);
    EXPECT_EQ(be.violations(), 5);
    EXPECT_THROW(be.end_capture(3), trt::Error) << "a forbidden call invalidates the capture";
    EXPECT_FALSE(be.capturing());
    be.begin_capture();
    trt::optimizer_step_of(be).accumulate_loss(s, x, 4);  // recorded
    be.end_capture(3);
    EXPECT_EQ(loss_sum(), 0.0) << "a recorded op must not run at capture";
    be.replay_graph(3);
    be.replay_graph(3);
    EXPECT_EQ(loss_sum(), 8.0);
    EXPECT_EQ(be.replays(), 2);
    EXPECT_EQ(be.captures(), 1);
    EXPECT_THROW(be.replay_graph(0), trt::Error);
    be.begin_capture();
    be.zero(s, sizeof(trt::StepScalars));
    be.end_capture(-1);  // discarded: nothing recorded survives, nothing ran
    EXPECT_EQ(be.discards(), 1);
    EXPECT_EQ(loss_sum(), 8.0);
    EXPECT_THROW(be.end_capture(0), trt::Error) << "no capture in progress";
    be.free(x);
    be.free(s);
}

}  // namespace
