#include "runtime/metrics_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <random>

#include "core/error.h"

namespace trt {
namespace {

// JSON has no NaN/Inf: write null for them. 9 significant digits round-trip a float.
std::string number(double x) {
    if (!std::isfinite(x)) return "null";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    return buf;
}

// A JSON string literal: quotes, backslashes and control characters escaped; other bytes
// (UTF-8) as they are.
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (const char ch : s) {
        const unsigned char c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

// Now in UTC, to the second, as strftime `format` writes it.
std::string utc_now(const char* format = "%Y-%m-%dT%H:%M:%SZ") {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    char buf[32] = "";
    if (::gmtime_r(&t, &tm) != nullptr) std::strftime(buf, sizeof buf, format, &tm);
    return buf;
}

}  // namespace


std::string new_run_id() {
    // random_device draws from the kernel (getrandom): two sessions started in the same
    // second, on one machine or several, still get different ids.
    std::random_device rd;
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(rd()));
    return utc_now("%Y%m%dT%H%M%SZ") + "-" + hex;
}

void make_directories(const std::string& path) {
    if (path.empty()) return;
    for (size_t pos = 1; pos <= path.size(); ++pos) {
        if (pos != path.size() && path[pos] != '/') continue;
        const std::string prefix = path.substr(0, pos);
        if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
            fail(Status::Io, "cannot create directory '", prefix, "': ", std::strerror(errno));
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        fail(Status::Io, "'", path, "' exists but is not a directory");
}

MetricsLog::MetricsLog(const std::string& out_dir) : path_(out_dir + "/metrics.jsonl") {
    make_directories(out_dir);
    // O_NONBLOCK: a FIFO in its place must fail at once (ENXIO without a reader) instead of
    // waiting for one; anything but a regular file is refused.
    const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK,
                          0666);
    if (fd < 0)
        fail(Status::Io, "cannot open '", path_, "' for appending: ", std::strerror(errno),
             " (check train.out_dir)");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(Status::Io, "cannot append to '", path_, "': not a regular file (check "
             "train.out_dir)");
    }
    had_history_ = st.st_size > 0;
    file_ = ::fdopen(fd, "a");
    if (file_ == nullptr) {
        const int e = errno;
        ::close(fd);
        fail(Status::Io, "cannot open '", path_, "' for appending: ", std::strerror(e),
             " (check train.out_dir)");
    }
}

MetricsLog::~MetricsLog() {
    if (file_ != nullptr) std::fclose(file_);
}

void MetricsLog::write_train(const TrainLine& l) {
    write_line(cat("{\"step\": ", l.step, ", \"split\": \"train\", \"loss\": ", number(l.loss),
                   ", \"lr\": ", number(l.lr), ", \"grad_norm\": ", number(l.grad_norm),
                   ", \"tokens\": ", l.tokens, ", \"tokens_total\": ", l.tokens_total,
                   ", \"ms\": ", number(l.ms), ", \"tok_per_s\": ", number(l.tok_per_s),
                   l.mfu >= 0 ? cat(", \"mfu\": ", number(l.mfu)) : std::string(), "}"));
}

void MetricsLog::write_val(int64_t step, double loss) {
    write_line(cat("{\"step\": ", step, ", \"split\": \"val\", \"loss\": ", number(loss), "}"));
}

void MetricsLog::write_run(int64_t step, const std::string& run_id, int64_t resumed_from,
                           const std::string& version, const std::string& acceleration,
                           const std::string& model) {
    write_line(cat("{\"step\": ", step, ", \"split\": \"run\", \"run\": ", quoted(run_id),
                   ", \"resumed_from\": ", resumed_from >= 0 ? cat(resumed_from) : "null",
                   ", \"time\": ", quoted(utc_now()),
                   ", \"version\": ", quoted(version), ", \"acceleration\": ",
                   quoted(acceleration), ", \"model\": ", quoted(model), "}"));
}

void MetricsLog::write_line(const std::string& json) {
    if (file_ == nullptr) return;
    if (std::fprintf(file_, "%s\n", json.c_str()) < 0 || std::fflush(file_) != 0)
        fail(Status::Io, "cannot write '", path_, "': ", std::strerror(errno));
}

}  // namespace trt
