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

private:
    void write_line(const std::string& json);
    std::string path_;
    std::FILE* file_ = nullptr;
};

// Creates a directory and its parents (mkdir -p). Error(Io) naming the path on failure.
void make_directories(const std::string& path);

}  // namespace trt
