// `trainrt report`'s view of one run folder (train.out_dir): its metrics.jsonl read, split
// into runs and each resolved into one line per step (docs/FORMATS.md §5: each fresh start is
// a run of its own; a resumed run appends, the later line wins), the figures the terminal
// summary and the page show, and the run config of its latest checkpoint (through the
// public C API).
#pragma once
#include <cstdint>
#include <istream>
#include <string>
#include <utility>
#include <vector>

namespace trainrt_cli {

// One train line. NaN = absent, null or non-finite in the file (plotted as a gap).
struct TrainPoint {
    int64_t step = 0;
    double loss, lr, grad_norm, tokens_total, ms, tok_per_s, mfu;
    double loss_ema;  // the smoothed loss (ema_loss), NaN where loss is
    int64_t line = 0;  // 1-based line number in metrics.jsonl
};

struct ValPoint {
    int64_t step = 0;
    double loss;
    double tokens_total;  // of the train step it follows (interpolated when not logged)
    int64_t line = 0;
};

// A {"split": "run"} header: what a session said of itself when it opened the log.
struct RunHeader {
    int64_t step = 0;
    std::string run;            // its run id; "" from an older writer
    int64_t resumed_from = -1;  // the checkpoint step it resumed from; -1: fresh or unknown
    std::string time, version, acceleration, model;
    int64_t line = 0;
};

// One run of a metrics.jsonl (FORMATS.md §5): a fresh start and the resumes that continue it.
struct RunData {
    std::string label, dir, metrics_path;
    std::string run_id;     // "" when its headers carry none (an older writer, or none at all)
    int index = 1;          // its place among the runs of its file (1-based), in order begun
    int runs_in_file = 1;
    std::vector<TrainPoint> train;  // by step, one per step
    std::vector<ValPoint> val;      // by step, one per step
    std::vector<RunHeader> headers;
    int64_t lines = 0;      // lines in the file
    int64_t ignored = 0;    // well-formed lines of another split (a newer writer's)
    std::vector<int64_t> malformed_lines;  // skipped: not a JSON object, or no usable step
    std::vector<std::string> malformed_why;  // parallel to malformed_lines
    int64_t replaced = 0;   // lines a later line for the same step replaced (resumes)
    int64_t dropped = 0;    // lines of steps a resume went back before and never reached again
    int resumes = 0;        // continuations from a checkpoint (a run header that resumed, or a
                            // step going back in a log without headers)
    bool mfu_logged = false;    // the train lines carry "mfu"
    bool mfu_computed = false;  // else computed from runtime.peak_tflops (one device)
    double ema_window = 1;      // ema_loss's window, in logged steps

    // From the folder's latest checkpoint, for the run it belongs to (config_error says why
    // not, and the page shows it).
    std::string checkpoint, config_toml, config_error;
    std::vector<std::pair<std::string, std::string>> facts;  // ("model", "gpt2, 4 layers, ...")
};

// Reads dir/metrics.jsonl into one RunData per run it holds, in the order they began
// (`base` gives dir and label; with several runs each is labelled "LABEL run N"). A fresh
// start begins a run: a header with a new run id, or, from an older writer, a header at step
// 0 after earlier lines. A header of a known run id, or one without an id at step > 0,
// resumes the run it names (or the current one). Malformed and unknown lines count for the
// run they fall in; a run without a train line is left out. false with `error` (naming the
// file and what to do) when the folder or the file is missing or unreadable, or the file
// holds no train line.
bool read_metrics(const RunData& base, std::vector<RunData>& runs, std::string& error);
// The same, from a stream (base.metrics_path set by the caller; what the fuzzer feeds).
bool read_metrics_from(const RunData& base, std::istream& in, std::vector<RunData>& runs,
                       std::string& error);

// The run config of the folder's latest checkpoint (runs: all of one folder's): config_toml
// and facts go to the run the checkpoint belongs to (state.json's "run"; the last run when it
// names none), the others get config_error. Computes that run's MFU series from
// runtime.peak_tflops when its lines carry none.
void read_run_config(std::vector<RunData>& runs);

// The figures of the terminal summary and the page's table.
struct RunSummary {
    int64_t steps = 0;           // the last step logged
    double tokens = 0;           // tokens_total at it
    double last_loss_ema, best_loss_ema;  // smoothed train loss: last, lowest
    int64_t best_loss_step = 0;
    double last_val, best_val;   // NaN when no eval
    int64_t best_val_step = 0;
    double tok_per_s, mfu;       // means over the tail (NaN: none)
    int64_t tail_from = 0;       // ... from this step on
    double train_seconds = 0;    // sum of step times (ms x steps each line stands for)
};
RunSummary summarize(const RunData& run);

// Text from a run folder (metrics.jsonl, a checkpoint's config), safe to show: control
// characters (C0 but newline and tab when keep_lines, DEL, C1), the line and paragraph
// separators, the bidirectional overrides and bytes that are not UTF-8 become visible
// escapes ("\x1b", "\u202e"), so a file cannot move the cursor, retitle or clear a terminal.
std::string printable(const std::string& s, bool keep_lines = false);

// "1.23k", "4.5M": a count for people.
std::string short_count(double v);
// "1m05s", "2h03m".
std::string short_duration(double seconds);

}  // namespace trainrt_cli
