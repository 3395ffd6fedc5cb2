// MetricsLog: appends one JSON object per line to <out_dir>/metrics.jsonl (FORMATS.md §5),
// flushed per line so a crash loses at most the line being written.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace trt {

struct TrainLine {
    int64_t step;
    double loss, lr, grad_norm;
    int64_t tokens, tokens_total;
    double ms, tok_per_s;
    double mfu = -1;  // model FLOPs utilisation; < 0: the device's peak is unknown (omitted)
};

class MetricsLog {
public:
    MetricsLog() = default;
    // Creates out_dir if needed and opens metrics.jsonl for appending. Error(Io) on failure.
    explicit MetricsLog(const std::string& out_dir);
    ~MetricsLog();
    MetricsLog(const MetricsLog&) = delete;
    MetricsLog& operator=(const MetricsLog&) = delete;

    bool is_open() const { return file_ != nullptr; }
    // The file held lines when it was opened (an earlier session's).
    bool had_history() const { return had_history_; }
    const std::string& path() const { return path_; }
    void write_train(const TrainLine& line);
    void write_val(int64_t step, double loss);
    // The run header (FORMATS.md §5), written by a train() call that has steps to run, as it
    // opens the log: the step it starts from (0, or the step it resumed at), the run id
    // (new_run_id(), or the loaded checkpoint's), the checkpoint step it resumed from (< 0: a
    // fresh start, null), the time (ISO-8601 UTC), the library version, and the session's
    // acceleration and model log lines (without their prefix).
    void write_run(int64_t step, const std::string& run_id, int64_t resumed_from,
                   const std::string& version, const std::string& acceleration,
                   const std::string& model);

private:
    void write_line(const std::string& json);
    std::string path_;
    std::FILE* file_ = nullptr;
    bool had_history_ = false;
};

// A new run id: the UTC time to the second and 32 random bits, "20261206T123456Z-3f9a1c2e"
// (FORMATS.md §5). Time first, so ids sort by when their runs began.
std::string new_run_id();

// Creates a directory and its parents (mkdir -p). Error(Io) naming the path on failure.
void make_directories(const std::string& path);

}  // namespace trt
