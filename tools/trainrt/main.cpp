// trainrt: the command-line client of libtrainrt. Uses the public C API only.
//   trainrt prepare --text FILE --out DIR [--val-fraction F]
//   trainrt train CONFIG [--set KEY=VALUE]... [--steps N]
//   trainrt eval CONFIG [--set KEY=VALUE]...
//   trainrt config CONFIG [--set KEY=VALUE]...
//   trainrt info
#include <trainrt/trainrt.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* kUsage =
    "usage: trainrt <command> [options]\n"
    "\n"
    "commands:\n"
    "  prepare --text FILE --out DIR [--val-fraction F]\n"
    "        byte-level tokenize a text file into DIR/train.bin and DIR/val.bin\n"
    "        (F defaults to 0.1)\n"
    "  train CONFIG [--set KEY=VALUE]... [--steps N]\n"
    "        train as CONFIG says (N more steps, default: up to train.steps);\n"
    "        Ctrl-C stops after the current step\n"
    "  eval CONFIG [--set KEY=VALUE]...\n"
    "        mean val loss of the model CONFIG describes\n"
    "  config CONFIG [--set KEY=VALUE]...\n"
    "        print the resolved config (every key, defaults included)\n"
    "  info  version and build features\n"
    "\n"
    "--set takes a TOML value: --set optim.lr=1e-3 --set 'data.train=\"shards/*.bin\"'\n"
    "(a bare word that is not a number or boolean is taken as a string).\n";

int fail_usage(const std::string& message) {
    std::fprintf(stderr, "trainrt: %s\n\n%s", message.c_str(), kUsage);
    return 2;
}

int fail_status(const char* what, trainrt_status status) {
    std::fprintf(stderr, "trainrt: %s failed (%s): %s\n", what, trainrt_status_string(status),
                 trainrt_last_error_message());
    return 1;
}

bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

// True while a live progress line sits on the terminal without a newline.
bool g_progress_line_open = false;

void end_progress_line() {
    if (g_progress_line_open) {
        std::fputc('\n', stderr);
        g_progress_line_open = false;
    }
}

void log_to_stderr(int32_t level, const char* message, void*) {
    end_progress_line();
    const char* tag = level >= TRAINRT_LOG_ERROR ? "error: "
                      : level == TRAINRT_LOG_WARN ? "warning: "
                                                  : "";
    std::fprintf(stderr, "[trainrt] %s%s\n", tag, message);
}

std::string format_duration(double seconds) {
    if (!(seconds >= 0)) return "?";
    const long s = static_cast<long>(seconds + 0.5);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60)
        std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%lds", s);
    return buf;
}

int32_t on_progress(const trainrt_progress* p, void*) {
    if (p->kind == TRAINRT_PROGRESS_EVAL) {
        end_progress_line();
        std::fprintf(stderr, "step %lld/%lld | val loss %.4f\n", (long long)p->step,
                     (long long)p->steps_total, p->loss);
        return 0;
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "step %lld/%lld | loss %.4f | lr %.3e | norm %.3f | %.0f tok/s | %.1f ms | "
                  "ETA %s",
                  (long long)p->step, (long long)p->steps_total, p->loss, p->lr, p->grad_norm,
                  p->tokens_per_s, p->ms, format_duration(p->eta_s).c_str());
    if (stderr_is_tty()) {
        std::fprintf(stderr, "\r\033[K%s", line);  // redraw one live line
        g_progress_line_open = true;
    } else {
        std::fprintf(stderr, "%s\n", line);
    }
    std::fflush(stderr);
    return 0;
}

trainrt_session* g_session = nullptr;
volatile std::sig_atomic_t g_signal = 0;

void on_signal(int sig) {
    g_signal = sig;
    if (g_session != nullptr) trainrt_session_request_stop(g_session);  // atomic store only
}

// A --set value: TOML as given, except a bare word (not a number, bool, array, string,
// table) is quoted so paths and enum names need no shell gymnastics.
std::string as_toml_value(const std::string& v) {
    if (v.empty()) return "\"\"";
    const char c = v[0];
    if (c == '"' || c == '\'' || c == '[' || c == '{' || v == "true" || v == "false") return v;
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    if (end != nullptr && *end == '\0') return v;  // a number
    std::string quoted = "\"";
    for (char ch : v) {
        if (ch == '"' || ch == '\\') quoted += '\\';
        quoted += ch;
    }
    return quoted + "\"";
}

struct RunArgs {
    std::string config_path;
    std::vector<std::pair<std::string, std::string>> sets;
    long long steps = 0;
};

// Parses CONFIG [--set K=V]... [--steps N] (steps only when allow_steps).
bool parse_run_args(int argc, char** argv, bool allow_steps, RunArgs& out, std::string& error) {
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--set" || a.rfind("--set=", 0) == 0) {
            std::string kv = a == "--set" ? (i + 1 < argc ? argv[++i] : "") : a.substr(6);
            const size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) {
                error = "--set needs KEY=VALUE, got '" + kv + "'";
                return false;
            }
            out.sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else if (allow_steps && a == "--steps") {
            if (i + 1 >= argc) { error = "--steps needs a number"; return false; }
            char* end = nullptr;
            out.steps = std::strtoll(argv[++i], &end, 10);
            if (*end != '\0' || out.steps < 1) {
                error = std::string("--steps needs a positive integer, got '") + argv[i] + "'";
                return false;
            }
        } else if (!a.empty() && a[0] == '-') {
            error = "unknown option '" + a + "'";
            return false;
        } else if (out.config_path.empty()) {
            out.config_path = a;
        } else {
            error = "unexpected argument '" + a + "'";
            return false;
        }
    }
    if (out.config_path.empty()) {
        error = "missing CONFIG (a TOML file)";
        return false;
    }
    return true;
}

// Loads the config and applies --set; returns NULL after printing the error.
trainrt_config* load_config(const RunArgs& args) {
    trainrt_config* config = nullptr;
    trainrt_status st = trainrt_config_from_file(&config, args.config_path.c_str());
    if (st != TRAINRT_OK) {
        fail_status("loading the config", st);
        return nullptr;
    }
    for (const auto& kv : args.sets) {
        st = trainrt_config_set(config, kv.first.c_str(), as_toml_value(kv.second).c_str());
        if (st != TRAINRT_OK) {
            fail_status(("--set " + kv.first).c_str(), st);
            trainrt_config_destroy(config);
            return nullptr;
        }
    }
    trainrt_config_set_log(config, log_to_stderr, nullptr, TRAINRT_LOG_INFO);
    return config;
}

// Config + --set + session; returns NULL after printing the error.
trainrt_session* open_session(const RunArgs& args) {
    trainrt_config* config = load_config(args);
    if (config == nullptr) return nullptr;
    trainrt_session* session = nullptr;
    const trainrt_status st = trainrt_session_create(&session, config);
    trainrt_config_destroy(config);  // the session keeps its own copy
    if (st != TRAINRT_OK) {
        fail_status("creating the session", st);
        return nullptr;
    }
    return session;
}

int cmd_prepare(int argc, char** argv) {
    std::string text, out;
    double fraction = 0.1;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return fail_usage("option '" + a + "' needs a value");
        if (a == "--text") text = argv[++i];
        else if (a == "--out") out = argv[++i];
        else if (a == "--val-fraction") {
            char* end = nullptr;
            fraction = std::strtod(argv[++i], &end);
            if (*end != '\0') return fail_usage(std::string("bad --val-fraction '") + argv[i] + "'");
        } else return fail_usage("unknown option '" + a + "'");
    }
    if (text.empty() || out.empty()) return fail_usage("prepare needs --text FILE and --out DIR");
    int64_t n_train = 0, n_val = 0;
    const trainrt_status st =
        trainrt_prepare_bytes(&n_train, &n_val, text.c_str(), out.c_str(), fraction);
    if (st != TRAINRT_OK) return fail_status("prepare", st);
    std::printf("wrote %s/train.bin (%lld tokens) and %s/val.bin (%lld tokens)\n", out.c_str(),
                (long long)n_train, out.c_str(), (long long)n_val);
    return 0;
}

int cmd_train(int argc, char** argv) {
    RunArgs args;
    std::string error;
    if (!parse_run_args(argc, argv, true, args, error)) return fail_usage(error);
    trainrt_session* session = open_session(args);
    if (session == nullptr) return 1;

    g_session = session;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    trainrt_status st = trainrt_session_train(session, args.steps, on_progress, nullptr);
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    g_session = nullptr;
    end_progress_line();

    int code = 0;
    if (st < 0) {
        code = fail_status("training", st);
    } else {
        trainrt_metrics m = TRAINRT_METRICS_INIT;
        trainrt_session_metrics(&m, session);
        // NaN means "not measured in this run" (no step yet, or no eval): leave it out.
        std::string summary = "step " + std::to_string(m.step);
        char part[96];
        if (m.last_loss == m.last_loss) {
            std::snprintf(part, sizeof part, " | loss %.4f", m.last_loss);
            summary += part;
        }
        if (m.last_val_loss == m.last_val_loss) {
            std::snprintf(part, sizeof part, " | val loss %.4f", m.last_val_loss);
            summary += part;
        }
        std::snprintf(part, sizeof part, " | %lld tokens | %.0f tok/s (p50 step %.1f ms)",
                      (long long)m.tokens_total, m.tokens_per_s, m.step_ms_p50);
        std::printf("%s%s\n", summary.c_str(), part);
        if (st == TRAINRT_STOPPED) {
            std::fprintf(stderr, "trainrt: stopped at step %lld\n", (long long)m.step);
            code = g_signal == SIGTERM ? 143 : g_signal == SIGINT ? 130 : 0;
        }
    }
    trainrt_session_destroy(session);
    return code;
}

int cmd_eval(int argc, char** argv) {
    RunArgs args;
    std::string error;
    if (!parse_run_args(argc, argv, false, args, error)) return fail_usage(error);
    trainrt_session* session = open_session(args);
    if (session == nullptr) return 1;
    double loss = 0;
    const trainrt_status st = trainrt_session_eval(&loss, session);
    trainrt_session_destroy(session);
    if (st != TRAINRT_OK) return fail_status("eval", st);
    std::printf("val loss %.6f\n", loss);
    return 0;
}

int cmd_config(int argc, char** argv) {
    RunArgs args;
    std::string error;
    if (!parse_run_args(argc, argv, false, args, error)) return fail_usage(error);
    trainrt_config* config = load_config(args);
    if (config == nullptr) return 1;
    size_t needed = 0;
    trainrt_status st = trainrt_config_dump(nullptr, 0, &needed, config);
    std::string text(needed + 1, '\0');
    if (st == TRAINRT_OK) st = trainrt_config_dump(&text[0], text.size(), &needed, config);
    trainrt_config_destroy(config);
    if (st != TRAINRT_OK) return fail_status("config dump", st);
    std::fputs(text.c_str(), stdout);
    return 0;
}

int cmd_info() {
    const uint64_t f = trainrt_build_features();
    std::printf("libtrainrt %s (ABI %u; header %d.%d.%d)\n", trainrt_version_string(),
                trainrt_abi_version(), TRAINRT_VERSION_MAJOR, TRAINRT_VERSION_MINOR,
                TRAINRT_VERSION_PATCH);
    std::printf("features:%s%s%s%s%s%s%s\n", f & TRAINRT_FEATURE_CPU ? " cpu" : "",
                f & TRAINRT_FEATURE_OPENMP ? " openmp" : "",
                f & TRAINRT_FEATURE_OPENBLAS ? " openblas" : "",
                f & TRAINRT_FEATURE_CUDA_MODULE ? " cuda" : "",
                f & TRAINRT_FEATURE_CUDNN ? " cudnn" : "", f & TRAINRT_FEATURE_NCCL ? " nccl" : "",
                f & TRAINRT_FEATURE_MPI ? " mpi" : "");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return fail_usage("missing command");
    const std::string cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (trainrt_abi_version() != TRAINRT_ABI_VERSION) {
        std::fprintf(stderr, "trainrt: libtrainrt ABI %u does not match this tool's %d\n",
                     trainrt_abi_version(), TRAINRT_ABI_VERSION);
        return 1;
    }
    if (cmd == "prepare") return cmd_prepare(argc - 2, argv + 2);
    if (cmd == "train") return cmd_train(argc - 2, argv + 2);
    if (cmd == "eval") return cmd_eval(argc - 2, argv + 2);
    if (cmd == "config") return cmd_config(argc - 2, argv + 2);
    if (cmd == "info") return cmd_info();
    return fail_usage("unknown command '" + cmd + "'");
}
