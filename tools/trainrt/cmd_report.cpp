// `trainrt report OUT_DIR... [--html FILE] [--label NAME]...`: a summary of training runs on
// the terminal and one self-contained HTML page of their curves (report_data.h: reading a
// run folder; report_svg.h: the charts; report_html.h: the page). Public C API only.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cmd_report.h"
#include "report_data.h"
#include "report_html.h"

namespace trainrt_cli {

const char* const kReportHelp =
    "usage: trainrt report OUT_DIR [OUT_DIR...] [--html FILE] [--label NAME]...\n"
    "\n"
    "Summarises training runs: each OUT_DIR is a run's train.out_dir (its metrics.jsonl,\n"
    "docs/FORMATS.md §5, and its latest checkpoint). Prints per run: steps, tokens, the\n"
    "train loss smoothed (EMA: last, best), the best val loss and its step, mean tokens/s\n"
    "and MFU over the last fifth of the steps, train time, resumes detected, the key facts\n"
    "of the run config and the session's acceleration line. Writes one self-contained HTML\n"
    "page (inline SVG, no network; the curves need no JavaScript): loss vs step and vs\n"
    "tokens (raw, smoothed, val), learning rate, gradient norm, tokens/s and MFU, several\n"
    "runs overlaid in distinct colours, then each run's config (from its latest checkpoint)\n"
    "and acceleration/precision line.\n"
    "  --html FILE   where the page goes (default: OUT_DIR/report.html for one OUT_DIR,\n"
    "                report.html in the current folder for several)\n"
    "  --label NAME  the name of the next OUT_DIR in the legend (in order; default: the\n"
    "                folder's name; a folder of several runs: NAME run 1, NAME run 2, ...)\n"
    "A resumed run's metrics.jsonl repeats the steps after the checkpoint it resumed from:\n"
    "the later line wins (the page says how many were replaced). A fresh start in a folder\n"
    "with history (a new run id, FORMATS.md §5) is a run of its own, shown as \"LABEL run N\"\n"
    "next to the earlier ones. Malformed lines are skipped with a warning naming them;\n"
    "missing or non-finite values are gaps in the curves; series longer than 4000 points are\n"
    "reduced keeping each stretch's min and max.\n"
    "Exit status: 0 ok (warnings included), 1 a run folder without a readable metrics.jsonl\n"
    "with training steps, or the page cannot be written, 2 bad usage.\n"
    "A page of two runs: docs/images/report.png in the source tree.\n";

namespace {

// "trainrt report: MESSAGE", the usage lines and where the help is (cli_common.h); 2.
int report_usage(const std::string& message) {
    return usage_error("report", message, kReportHelp);
}

// The folder's own name: "runs/a/" -> "a"; the path as given when it has none ("/", ".").
std::string folder_name(const std::string& dir) {
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    const size_t slash = d.rfind('/');
    std::string name = slash == std::string::npos ? d : d.substr(slash + 1);
    return name.empty() || name == "." || name == ".." ? dir : name;
}

std::string fixed(const char* f, double v) {
    if (!std::isfinite(v)) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

void warn_malformed(const RunData& r) {
    const size_t n = r.malformed_lines.size();
    for (size_t i = 0; i < n && i < 5; ++i)
        std::fprintf(stderr, "trainrt: warning: %s:%lld: skipped a malformed line (%s)\n",
                     printable(r.metrics_path).c_str(), (long long)r.malformed_lines[i],
                     printable(r.malformed_why[i]).c_str());
    if (n > 5)
        std::fprintf(stderr, "trainrt: warning: %s: %zu more malformed lines skipped (the page "
                     "lists them)\n", printable(r.metrics_path).c_str(), n - 5);
}

// Every string below may come from the run folder: shown through printable().
void print_summary(const RunData& r) {
    const RunSummary s = summarize(r);
    std::printf("== %s (%s)\n", printable(r.label).c_str(), printable(r.metrics_path).c_str());
    std::printf("  steps        %lld (%zu logged; %d resume%s, %lld line%s replaced, %lld "
                "dropped, %zu malformed)\n",
                (long long)s.steps, r.train.size(), r.resumes, r.resumes == 1 ? "" : "s",
                (long long)r.replaced, r.replaced == 1 ? "" : "s", (long long)r.dropped,
                r.malformed_lines.size());
    if (r.runs_in_file > 1 || !r.run_id.empty()) {
        std::string where;
        if (r.runs_in_file > 1)
            where = std::to_string(r.index) + " of " + std::to_string(r.runs_in_file) +
                    " in this metrics.jsonl";
        if (!r.headers.empty() && !r.headers.front().time.empty())
            where += (where.empty() ? "begun " : ", begun ") + r.headers.front().time;
        std::printf("  run          %s%s\n",
                    r.run_id.empty() ? "without an id (an older writer's)"
                                     : printable(r.run_id).c_str(),
                    where.empty() ? "" : (" (" + printable(where) + ")").c_str());
    }
    std::printf("  tokens       %s\n", short_count(s.tokens).c_str());
    std::printf("  train loss   %s last, %s best (step %lld); %s\n",
                fixed("%.4f", s.last_loss_ema).c_str(), fixed("%.4f", s.best_loss_ema).c_str(),
                (long long)s.best_loss_step,
                r.ema_window > 1
                    ? ("EMA over ~" + fixed("%.0f", r.ema_window) + " logged steps").c_str()
                    : "not smoothed (too few steps)");
    if (std::isfinite(s.best_val))
        std::printf("  val loss     %s best (step %lld), %s last (%zu evals)\n",
                    fixed("%.4f", s.best_val).c_str(), (long long)s.best_val_step,
                    fixed("%.4f", s.last_val).c_str(), r.val.size());
    else
        std::printf("  val loss     no eval\n");
    std::printf("  throughput   %s tok/s, MFU %s (mean from step %lld on)\n",
                short_count(s.tok_per_s).c_str(),
                std::isfinite(s.mfu)
                    ? (fixed("%.1f%%", s.mfu * 100) + (r.mfu_computed ? " (runtime.peak_tflops)"
                                                                      : ""))
                          .c_str()
                    : "n/a",
                (long long)s.tail_from);
    std::printf("  train time   %s (the sum of the step times)\n",
                short_duration(s.train_seconds).c_str());
    for (const auto& [k, v] : r.facts)
        if (k != "checkpoint")
            std::printf("  %-12s %s\n", printable(k).c_str(), printable(v).c_str());
    if (!r.headers.empty()) {
        const RunHeader& h = r.headers.back();
        std::printf("  acceleration %s\n", printable(h.acceleration).c_str());
        std::printf("  version      libtrainrt %s (session from step %lld, %s)\n",
                    printable(h.version).c_str(), (long long)h.step, printable(h.time).c_str());
    } else {
        std::printf("  acceleration not recorded (no run header in metrics.jsonl)\n");
    }
    if (!r.checkpoint.empty())
        std::printf("  config       %s\n", printable(r.checkpoint).c_str());
    else
        std::printf("  config       %s\n", printable(r.config_error).c_str());
}

bool write_file(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) {
        std::fprintf(stderr, "trainrt: report: cannot write %s: %s\n", tmp.c_str(),
                     std::strerror(errno));
        return false;
    }
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    const int e = errno;
    if (std::fclose(f) != 0 || !ok) {
        std::fprintf(stderr, "trainrt: report: cannot write %s: %s\n", tmp.c_str(),
                     std::strerror(ok ? errno : e));
        std::remove(tmp.c_str());
        return false;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::fprintf(stderr, "trainrt: report: cannot write %s: %s\n", path.c_str(),
                     std::strerror(errno));
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

}  // namespace

int cmd_report(int argc, char** argv) {
    std::vector<std::string> dirs, labels;
    std::string html;
    for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--html" || a == "--label") {
            if (i + 1 >= argc) return report_usage("option '" + a + "' needs a value");
            const std::string v = argv[++i];
            if (v.empty()) return report_usage("option '" + a + "' needs a non-empty value");
            if (a == "--html") html = v;
            else labels.push_back(v);
        } else if (!a.empty() && a[0] == '-') {
            return report_usage(unknown_option(a, {"--html", "--label"}));
        } else {
            dirs.push_back(a);
        }
    }
    if (dirs.empty()) return report_usage("needs at least one OUT_DIR (a run's train.out_dir)");
    if (labels.size() > dirs.size())
        return report_usage(std::to_string(labels.size()) + " --label for " +
                           std::to_string(dirs.size()) + " OUT_DIR: one label per run at most");

    std::vector<std::string> names(dirs.size());
    for (size_t i = 0; i < dirs.size(); ++i)
        names[i] = i < labels.size() ? labels[i] : folder_name(dirs[i]);
    // Default labels that collide (runs/a/out, runs/b/out) become the paths as given.
    for (size_t i = labels.size(); i < dirs.size(); ++i)
        for (size_t j = 0; j < dirs.size(); ++j)
            if (j != i && (j < labels.size() ? labels[j] : folder_name(dirs[j])) == names[i]) {
                names[i] = dirs[i];
                break;
            }

    // Each folder's runs (a fresh start in it is a run of its own), overlaid like folders.
    std::vector<RunData> runs;
    for (size_t i = 0; i < dirs.size(); ++i) {
        RunData base;
        base.dir = dirs[i];
        base.label = names[i];
        std::vector<RunData> found;
        std::string error;
        if (!read_metrics(base, found, error)) {
            std::fprintf(stderr, "trainrt: report: %s\n", printable(error).c_str());
            return 1;
        }
        for (const RunData& r : found) warn_malformed(r);
        read_run_config(found);
        for (RunData& r : found) runs.push_back(std::move(r));
    }

    for (const RunData& r : runs) print_summary(r);

    if (html.empty()) html = dirs.size() == 1 ? dirs[0] + "/report.html" : "report.html";
    const std::string page = render_report(runs);
    if (!write_file(html, page)) return 1;
    std::printf("wrote %s (%.0f KiB, %d charts, %zu run%s)\n", html.c_str(),
                static_cast<double>(page.size()) / 1024.0, kReportCharts, runs.size(),
                runs.size() == 1 ? "" : "s");
    return 0;
}

}  // namespace trainrt_cli
