#include "cli_common.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/nearest.h"

namespace trainrt_cli {

namespace {
// True while a live progress line sits on the terminal without a newline.
bool g_progress_line_open = false;
// Data parallel: "[rank r/N] " (empty alone), and whether this process speaks for the run.
std::string g_rank_label;
bool g_lead_rank = true;
}  // namespace

bool is_lead_rank() { return g_lead_rank; }

int fail_status(const char* what, trainrt_status status) {
    std::fprintf(stderr, "trainrt: %s%s failed (%s): %s\n", g_rank_label.c_str(), what,
                 trainrt_status_string(status), trainrt_last_error_message());
    return 1;
}

int usage_error(const std::string& command, const std::string& message, const char* help) {
    const std::string who = command.empty() ? "trainrt" : "trainrt " + command;
    std::fprintf(stderr, "%s: %s\n", who.c_str(), message.c_str());
    if (help != nullptr) {
        // The usage block: from the line starting "usage:" up to the first blank line.
        const std::string text = help;
        const size_t start = text.find("usage:");
        if (start != std::string::npos) {
            const size_t end = text.find("\n\n", start);
            std::fprintf(stderr, "%s\n",
                         text.substr(start, end == std::string::npos ? end : end - start).c_str());
        }
    }
    std::fprintf(stderr, "run '%s --help' for more\n", who.c_str());
    return 2;
}

bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

void mark_progress_line_open() { g_progress_line_open = true; }

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

std::string did_you_mean(const std::string& given, const std::vector<std::string>& names) {
    const std::string near = trt::nearest(given, names);
    return near.empty() ? std::string() : "; did you mean '" + near + "'?";
}

std::string unknown_option(const std::string& given, const std::vector<std::string>& options) {
    std::vector<std::string> names = options;
    names.push_back("--help");
    const size_t eq = given.find('=');
    const std::string name = given.substr(0, eq);
    if (eq != std::string::npos && trt::nearest(name, names) == name)  // "--steps=3"
        return "unknown option '" + given + "'; did you mean '" + name + " " +
               given.substr(eq + 1) + "'?";
    return "unknown option '" + given + "'" + did_you_mean(name, names);
}

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

bool parse_run_args(int argc, char** argv, int allowed, RunArgs& out, std::string& error,
                    const std::vector<std::string>& more) {
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
        } else if ((allowed & kSteps) && a == "--steps") {
            if (i + 1 >= argc) { error = "--steps needs a number"; return false; }
            char* end = nullptr;
            out.steps = std::strtoll(argv[++i], &end, 10);
            if (*end != '\0' || out.steps < 1) {
                error = std::string("--steps needs a positive integer, got '") + argv[i] + "'";
                return false;
            }
        } else if ((allowed & kFresh) && a == "--fresh") {
            out.fresh = true;
        } else if ((allowed & kCheckpoint) && a == "--checkpoint") {
            if (i + 1 >= argc) { error = "--checkpoint needs a path"; return false; }
            out.checkpoint = argv[++i];
        } else if (!a.empty() && a[0] == '-') {
            std::vector<std::string> options = more;
            options.push_back("--set");
            if (allowed & kSteps) options.push_back("--steps");
            if (allowed & kFresh) options.push_back("--fresh");
            if (allowed & kCheckpoint) options.push_back("--checkpoint");
            error = unknown_option(a, options);
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

trainrt_session* create_session(trainrt_config* config) {
    trainrt_session* session = nullptr;
    const trainrt_status st = trainrt_session_create(&session, config);
    trainrt_config_destroy(config);  // the session keeps its own copy
    if (st != TRAINRT_OK) {
        fail_status("creating the session", st);
        return nullptr;
    }
    trainrt_metrics m = TRAINRT_METRICS_INIT;
    if (trainrt_session_metrics(&m, session) == TRAINRT_OK && m.world_size > 1) {
        g_rank_label = "[rank " + std::to_string(m.rank) + "/" + std::to_string(m.world_size) + "] ";
        g_lead_rank = m.rank == 0;
    }
    return session;
}

// The checkpoint a command should start from: `explicit_path` if given, else out_dir's
// latest (or "" when out_dir is empty or holds none). False after printing an error.
bool pick_checkpoint(trainrt_config* config, const std::string& explicit_path,
                     std::string& out) {
    if (!explicit_path.empty()) {
        out = explicit_path;
        return true;
    }
    std::string out_dir;
    if (!fetch_string(out_dir, "reading train.out_dir", [&](char* b, size_t c, size_t* n) {
            return trainrt_config_get_string(b, c, n, config, "train.out_dir");
        }))
        return false;
    if (out_dir.empty()) {
        out.clear();
        return true;
    }
    return fetch_string(out, "looking for a checkpoint", [&](char* b, size_t c, size_t* n) {
        return trainrt_checkpoint_latest(b, c, n, out_dir.c_str());
    });
}

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

trainrt_session* open_checkpoint(const std::string& path, int32_t log_level) {
    trainrt_config* config = nullptr;
    trainrt_status st = trainrt_config_from_checkpoint(&config, path.c_str());
    if (st != TRAINRT_OK) {
        fail_status(("reading checkpoint " + path).c_str(), st);
        return nullptr;
    }
    for (const char* key : {"data.train", "data.val", "train.out_dir"}) {
        if (st == TRAINRT_OK) st = trainrt_config_set(config, key, "\"\"");
    }
    if (st == TRAINRT_OK) st = trainrt_config_set(config, "train.checkpoint_every", "0");
    if (st != TRAINRT_OK) {
        trainrt_config_destroy(config);
        fail_status("preparing the checkpoint's config", st);
        return nullptr;
    }
    trainrt_config_set_log(config, log_to_stderr, nullptr, log_level);
    trainrt_session* session = create_session(config);
    if (session == nullptr) return nullptr;
    st = trainrt_session_load(session, path.c_str());
    if (st != TRAINRT_OK) {
        trainrt_session_destroy(session);
        fail_status(("loading " + path).c_str(), st);
        return nullptr;
    }
    return session;
}

bool write_file_replacing(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) return false;
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

}  // namespace trainrt_cli
