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
    void write_train(const TrainLine& line);
    void write_val(int64_t step, double loss);
    // The run header (FORMATS.md §5), written by a train() call that has steps to run, as it
    // opens the log: the step it starts from (0, or the step it resumed at), the time
    // (ISO-8601 UTC), the library version, and the session's acceleration and model log
    // lines (without their prefix).
    void write_run(int64_t step, const std::string& version, const std::string& acceleration,
                   const std::string& model);

private:
    void write_line(const std::string& json);
    std::string path_;
    std::FILE* file_ = nullptr;
};

// Creates a directory and its parents (mkdir -p). Error(Io) naming the path on failure.
void make_directories(const std::string& path);

}  // namespace trt
