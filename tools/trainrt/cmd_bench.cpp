// trainrt bench: training throughput through the public C API. W warm-up steps (untimed),
// then N timed steps run by trainrt_session_train with a progress callback at every step
// (so every step's loss comes back, however far the device runs ahead), then a sync.
// Reports tokens/s, step time mean/p50/p95, MFU (metrics v3) and the losses, as a table on
// stdout and optionally one JSON object (fields: bench/README.md).
#include <trainrt/trainrt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_profile.h"
#include "cli_common.h"

using namespace trainrt_cli;

namespace {

const char* kBenchUsage =
    "usage: trainrt bench CONFIG [--steps N] [--warmup W] [--set KEY=VALUE]... [--json FILE]\n"
    "                            [--profile [--rounds R]]\n"
    "(trainrt bench --help for details)\n";
constexpr long long kDefaultSteps = 20;
constexpr long long kDefaultProfileSteps = 5;  // --profile: per thread count, each op synced
constexpr long long kDefaultWarmup = 3;
constexpr int kExitOutOfMemory = 3;  // the ladder retries a smaller batch on this

int bench_usage_error(const std::string& message) {
    return usage_error("bench", message, kBenchUsage);
}

struct BenchArgs {
    RunArgs run;  // CONFIG, --set, --steps
    long long warmup = kDefaultWarmup;
    std::string json_path;
    bool profile = false;  // the per-op profile (bench_profile.h) instead of the throughput
    long long rounds = 0;  // --profile's sessions per thread count (0: not given, 1)
};

bool parse_bench_args(int argc, char** argv, BenchArgs& out, std::string& error) {
    std::vector<char*> rest;  // CONFIG, --set and --steps go to the shared parser
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--warmup") {
            if (i + 1 >= argc) { error = "--warmup needs a number"; return false; }
            char* end = nullptr;
            out.warmup = std::strtoll(argv[++i], &end, 10);
            if (*end != '\0' || argv[i][0] == '\0' || out.warmup < 0) {
                error = std::string("--warmup needs a non-negative integer, got '") + argv[i] + "'";
                return false;
            }
        } else if (a == "--profile") {
            out.profile = true;
        } else if (a == "--rounds") {
            if (i + 1 >= argc) {
                error = "--rounds needs a number";
                return false;
            }
            char* end = nullptr;
            out.rounds = std::strtoll(argv[++i], &end, 10);
            if (*end != '\0' || argv[i][0] == '\0' || out.rounds < 1 || out.rounds > 1000) {
                error =
                    std::string("--rounds needs an integer in [1, 1000], got '") + argv[i] + "'";
                return false;
            }
        } else if (a == "--json") {
            if (i + 1 >= argc) { error = "--json needs a file name"; return false; }
            out.json_path = argv[++i];
        } else {
            rest.push_back(argv[i]);
        }
    }
    if (!parse_run_args(static_cast<int>(rest.size()), rest.data(), kSteps, out.run, error,
                        {"--warmup", "--json", "--profile", "--rounds"}))
        return false;
    if (out.rounds > 0 && !out.profile) {
        error = "--rounds is for --profile (the throughput bench runs one session)";
        return false;
    }
    if (out.run.steps == 0) out.run.steps = out.profile ? kDefaultProfileSteps : kDefaultSteps;
    return true;
}

// The session's log lines go to stderr as for every command, and are kept for the report
// (the startup lines say which device, precision and fast paths the run really used).
struct LogCapture {
    std::vector<std::string> lines;
};

void log_and_capture(int32_t level, const char* message, void* payload) {
    log_to_stderr(level, message, nullptr);
    static_cast<LogCapture*>(payload)->lines.emplace_back(message);
}

// "acceleration: device=cuda precision=bf16 ..." -> value of `key` ("" when absent).
std::string logged_value(const std::vector<std::string>& lines, const std::string& key) {
    for (const std::string& line : lines) {
        if (line.rfind("acceleration:", 0) != 0) continue;
        const size_t at = line.find(" " + key + "=");
        if (at == std::string::npos) continue;
        const size_t begin = at + key.size() + 2;
        return line.substr(begin, line.find(' ', begin) - begin);
    }
    return "";
}

struct TimedStep {
    int64_t step;
    double loss, ms;
};

int32_t record_step(const trainrt_progress* p, void* payload) {
    if (p->kind == TRAINRT_PROGRESS_STEP)
        static_cast<std::vector<TimedStep>*>(payload)->push_back({p->step, p->loss, p->ms});
    return 0;
}

// Nearest rank: sorted[ceil(q*n) - 1], the rule of src/runtime/perf.h (SessionMetrics).
double nearest_rank(std::vector<double> x, double q) {
    if (x.empty()) return 0.0;
    std::sort(x.begin(), x.end());
    const double rank = std::ceil(q * static_cast<double>(x.size()) - 1e-9);
    const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
    return x[std::min(i, x.size() - 1)];
}

// ---------------------------------------------------------------- JSON output

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

// JSON has no NaN or infinity: those are written as null.
std::string json_number(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

// One "key": value member per line, in order.
class JsonObject {
public:
    void raw(const char* key, const std::string& value) {
        text_ += (text_.empty() ? "{\n  " : ",\n  ") + json_string(key) + ": " + value;
    }
    void str(const char* key, const std::string& v) { raw(key, json_string(v)); }
    void num(const char* key, double v) { raw(key, json_number(v)); }
    void integer(const char* key, long long v) { raw(key, std::to_string(v)); }
    std::string text() const { return text_ + "\n}\n"; }

private:
    std::string text_;
};

template <typename T, typename Fn>
std::string json_array(const std::vector<T>& items, Fn&& item) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + item(items[i]);
    return out + "]";
}

// ---------------------------------------------------------------- the run

struct Shape {
    int64_t vocab = 0, context = 0, layers = 0, heads = 0, d_model = 0;
    int64_t batch = 0, seq_len = 0, grad_accum = 0;
    int64_t world = 1;  // data-parallel ranks (each with batch rows)
    int64_t tokens_per_step() const { return world * batch * seq_len * grad_accum; }
};

Shape read_shape(const trainrt_config* c) {
    Shape s;
    trainrt_config_get_int(&s.vocab, c, "model.vocab_size");
    trainrt_config_get_int(&s.context, c, "model.context_length");
    trainrt_config_get_int(&s.layers, c, "model.n_layer");
    trainrt_config_get_int(&s.heads, c, "model.n_head");
    trainrt_config_get_int(&s.d_model, c, "model.d_model");
    trainrt_config_get_int(&s.batch, c, "train.batch_size");
    trainrt_config_get_int(&s.seq_len, c, "train.seq_len");
    trainrt_config_get_int(&s.grad_accum, c, "train.grad_accum");
    return s;
}

std::string config_string(const trainrt_config* c, const char* key) {
    std::string v;
    fetch_string(v, key, [&](char* b, size_t cap, size_t* n) {
        return trainrt_config_get_string(b, cap, n, c, key);
    });
    return v;
}

// The figures of one bench run.
struct Report {
    std::string device, device_asked, precision, precision_asked;
    Shape shape;
    int64_t parameters = 0;
    long long warmup = 0, steps = 0;
    double wall_s = 0;
    std::vector<TimedStep> timed;
    trainrt_metrics metrics{};

    double tokens_per_s() const {
        return wall_s > 0 ? static_cast<double>(steps * shape.tokens_per_step()) / wall_s : 0;
    }
    double steps_per_s() const { return wall_s > 0 ? static_cast<double>(steps) / wall_s : 0; }
    double step_ms_mean() const { return steps > 0 ? 1000.0 * wall_s / static_cast<double>(steps) : 0; }
    std::vector<double> step_ms() const {
        std::vector<double> ms;
        for (const TimedStep& t : timed) ms.push_back(t.ms);
        return ms;
    }
    double mfu() const {
        return metrics.peak_flops > 0
                   ? tokens_per_s() * metrics.model_flops_per_token / metrics.peak_flops
                   : 0.0;
    }
    double first_loss() const { return timed.empty() ? NAN : timed.front().loss; }
    double last_loss() const { return timed.empty() ? NAN : timed.back().loss; }
};

void print_report(const Report& r, const BenchArgs& args) {
    const std::vector<double> ms = r.step_ms();
    std::printf("trainrt bench: %s", args.run.config_path.c_str());
    for (const auto& kv : args.run.sets) std::printf(" --set %s=%s", kv.first.c_str(), kv.second.c_str());
    std::printf("\n\n");
    std::printf("| figure | value |\n|---|---|\n");
    std::printf("| device | %s (asked: %s) |\n", r.device.c_str(), r.device_asked.c_str());
    std::printf("| precision | %s (asked: %s) |\n", r.precision.c_str(), r.precision_asked.c_str());
    std::printf("| model | %lld parameters; V%lld L%lld H%lld C%lld |\n", (long long)r.parameters,
                (long long)r.shape.vocab, (long long)r.shape.layers, (long long)r.shape.heads,
                (long long)r.shape.d_model);
    std::printf("| tokens per step | %lld = ranks %lld x grad_accum %lld x batch %lld x seq_len %lld |\n",
                (long long)r.shape.tokens_per_step(), (long long)r.shape.world,
                (long long)r.shape.grad_accum, (long long)r.shape.batch,
                (long long)r.shape.seq_len);
    std::printf("| steps | %lld warm-up (untimed) + %lld timed, %.3f s wall |\n", r.warmup, r.steps,
                r.wall_s);
    std::printf("| throughput | %.0f tokens/s, %.3f steps/s |\n", r.tokens_per_s(), r.steps_per_s());
    std::printf("| step ms | mean %.3f, p50 %.3f, p95 %.3f, min %.3f, max %.3f |\n",
                r.step_ms_mean(), nearest_rank(ms, 0.5), nearest_rank(ms, 0.95),
                nearest_rank(ms, 0.0), nearest_rank(ms, 1.0));
    std::printf("| FLOPs per token | %.4g (6N + 6*L*C*T) |\n", r.metrics.model_flops_per_token);
    if (r.metrics.peak_flops > 0)
        std::printf("| MFU | %.2f %% of %.4g TFLOP/s |\n", 100.0 * r.mfu(),
                    r.metrics.peak_flops / 1e12);
    else
        std::printf("| MFU | n/a: peak unknown for this device (set runtime.peak_tflops) |\n");
    std::printf("| loss | first %.4f, last %.4f |\n", r.first_loss(), r.last_loss());
    std::printf("| memory | %.1f MiB in use, %.1f MiB reserved |\n",
                r.metrics.bytes_in_use / 1048576.0, r.metrics.bytes_reserved / 1048576.0);
    std::printf("\n| step | loss | ms |\n|---|---|---|\n");
    for (const TimedStep& t : r.timed)
        std::printf("| %lld | %.6f | %.3f |\n", (long long)t.step, t.loss, t.ms);
}

std::string report_json(const Report& r, const BenchArgs& args, const LogCapture& log) {
    const std::vector<double> ms = r.step_ms();
    JsonObject o;
    o.str("schema", "trainrt-bench/1");
    o.str("library_version", trainrt_version_string());
    o.str("config", args.run.config_path);
    o.raw("sets", json_array(args.run.sets, [](const std::pair<std::string, std::string>& kv) {
              return json_string(kv.first + "=" + kv.second);
          }));
    o.str("device", r.device);
    o.str("device_requested", r.device_asked);
    o.str("precision", r.precision);
    o.str("precision_requested", r.precision_asked);
    o.integer("parameters", r.parameters);
    o.integer("vocab_size", r.shape.vocab);
    o.integer("n_layer", r.shape.layers);
    o.integer("n_head", r.shape.heads);
    o.integer("d_model", r.shape.d_model);
    o.integer("batch_size", r.shape.batch);
    o.integer("seq_len", r.shape.seq_len);
    o.integer("grad_accum", r.shape.grad_accum);
    o.integer("world_size", r.shape.world);
    o.integer("tokens_per_step", r.shape.tokens_per_step());
    o.integer("warmup_steps", r.warmup);
    o.integer("timed_steps", r.steps);
    o.num("wall_s", r.wall_s);
    o.num("tokens_per_s", r.tokens_per_s());
    o.num("steps_per_s", r.steps_per_s());
    o.num("step_ms_mean", r.step_ms_mean());
    o.num("step_ms_p50", nearest_rank(ms, 0.5));
    o.num("step_ms_p95", nearest_rank(ms, 0.95));
    o.num("step_ms_min", nearest_rank(ms, 0.0));
    o.num("step_ms_max", nearest_rank(ms, 1.0));
    o.num("model_flops_per_token", r.metrics.model_flops_per_token);
    o.num("peak_flops", r.metrics.peak_flops);
    o.num("mfu", r.mfu());
    o.num("mfu_session_window", r.metrics.mfu);
    o.num("first_loss", r.first_loss());
    o.num("last_loss", r.last_loss());
    o.integer("first_step", r.timed.empty() ? 0 : r.timed.front().step);
    o.raw("losses", json_array(r.timed, [](const TimedStep& t) { return json_number(t.loss); }));
    o.raw("step_ms", json_array(r.timed, [](const TimedStep& t) { return json_number(t.ms); }));
    o.integer("skipped_steps", r.metrics.skipped_steps);
    o.num("loss_scale", r.metrics.loss_scale);
    o.integer("bytes_in_use", r.metrics.bytes_in_use);
    o.integer("bytes_reserved", r.metrics.bytes_reserved);
    o.raw("log", json_array(log.lines, [](const std::string& s) { return json_string(s); }));
    return o.text();
}

// What the bench sets over CONFIG and --set: log every step (the callback sees every loss),
// and no evals, checkpoints or metrics.jsonl inside the timed steps.
const char* const kBenchSets[][2] = {
    {"runtime.log_every", "1"},
    {"train.eval_every", "0"},
    {"train.checkpoint_every", "0"},
    {"train.out_dir", "\"\""},
};

int fail_run(const char* what, trainrt_status st) {
    fail_status(what, st);
    return st == TRAINRT_ERR_OUT_OF_MEMORY ? kExitOutOfMemory : 1;
}

}  // namespace

int trainrt_cli::cmd_bench(int argc, char** argv) {
    BenchArgs args;
    std::string error;
    if (!parse_bench_args(argc, argv, args, error)) return bench_usage_error(error);
    if (args.profile) {
        BenchProfileArgs p;
        p.run = args.run;
        p.warmup = args.warmup;
        p.rounds = args.rounds > 0 ? args.rounds : 1;
        p.json_path = args.json_path;
        return bench_profile(p);
    }
    trainrt_config* config = load_config(args.run);
    if (config == nullptr) return 1;
    for (const auto& kv : kBenchSets) {
        const trainrt_status st = trainrt_config_set(config, kv[0], kv[1]);
        if (st != TRAINRT_OK) {
            trainrt_config_destroy(config);
            return fail_status(kv[0], st);
        }
    }
    LogCapture log;
    trainrt_config_set_log(config, log_and_capture, &log, TRAINRT_LOG_INFO);

    Report r;
    r.shape = read_shape(config);
    r.warmup = args.warmup;
    r.steps = args.run.steps;
    r.device_asked = config_string(config, "runtime.device");
    r.precision_asked = config_string(config, "runtime.precision");
    trainrt_model_info info = TRAINRT_MODEL_INFO_INIT;
    trainrt_status st = trainrt_config_model_info(&info, config);
    if (st != TRAINRT_OK) {
        trainrt_config_destroy(config);
        return fail_run("model info", st);
    }
    r.parameters = info.parameters;

    trainrt_session* session = nullptr;
    st = trainrt_session_create(&session, config);
    trainrt_config_destroy(config);  // the session keeps its own copy
    if (st != TRAINRT_OK) return fail_run("creating the session", st);
    r.device = logged_value(log.lines, "device");
    r.precision = logged_value(log.lines, "precision");
    if (r.device.empty()) r.device = r.device_asked;
    if (r.precision.empty()) r.precision = r.precision_asked;

    // Warm-up: train() syncs after its last step, so the timed steps start on an idle device.
    if (args.warmup > 0) {
        st = trainrt_session_train(session, args.warmup, nullptr, nullptr);
        if (st != TRAINRT_OK) {
            trainrt_session_destroy(session);
            return fail_run("the warm-up steps", st);
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    st = trainrt_session_train(session, args.run.steps, record_step, &r.timed);
    if (st == TRAINRT_OK) st = trainrt_session_sync(nullptr, session);
    const auto t1 = std::chrono::steady_clock::now();
    if (st != TRAINRT_OK) {
        trainrt_session_destroy(session);
        return fail_run("the timed steps", st);
    }
    r.wall_s = std::chrono::duration<double>(t1 - t0).count();
    trainrt_metrics_init(&r.metrics);
    st = trainrt_session_metrics(&r.metrics, session);
    trainrt_session_destroy(session);
    if (st != TRAINRT_OK) return fail_status("reading the metrics", st);
    // Data parallel: every rank timed the same steps; rank 0 reports for the world.
    if (r.metrics.world_size > 1) r.shape.world = r.metrics.world_size;
    if (r.metrics.rank != 0) return 0;
    // A library older than metrics v3 leaves the field 0; model_info has the same 6N + 6LCT.
    if (!(r.metrics.model_flops_per_token > 0))
        r.metrics.model_flops_per_token = info.flops_per_token;
    if (static_cast<long long>(r.timed.size()) != r.steps)
        std::fprintf(stderr, "trainrt bench: warning: %zu step reports for %lld timed steps\n",
                     r.timed.size(), r.steps);

    print_report(r, args);
    if (!args.json_path.empty() &&
        !write_file_replacing(args.json_path, report_json(r, args, log))) {
        std::fprintf(stderr, "trainrt bench: cannot write %s\n", args.json_path.c_str());
        return 1;
    }
    return 0;
}
