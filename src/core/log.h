// Logger: where a session's log lines go (a C callback or the process default).
// The library never writes to stdout; the built-in default sends WARN/ERROR to stderr.
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"

namespace trt {

enum class LogLevel : int32_t {
    Debug = TRAINRT_LOG_DEBUG,
    Info = TRAINRT_LOG_INFO,
    Warn = TRAINRT_LOG_WARN,
    Error = TRAINRT_LOG_ERROR,
};

struct LogSink {
    trainrt_log_fn fn = nullptr;  // nullptr = the process default
    void* payload = nullptr;
    int32_t min_level = TRAINRT_LOG_INFO;
};

// Process default sink (thread-safe to set and read).
void set_default_log_sink(const LogSink& sink);

class Logger {
public:
    Logger() = default;
    explicit Logger(LogSink sink) : sink_(sink) {}
    void set_sink(const LogSink& sink) { sink_ = sink; }
    // Data parallelism: every line starts "[rank r/N] ", and ranks other than 0 keep only
    // warnings and errors (rank 0 speaks for the run).
    void set_rank(int rank, int size);
    void log(LogLevel level, const std::string& message) const;
    template <typename... Args>
    void info(Args&&... a) const { log(LogLevel::Info, cat(std::forward<Args>(a)...)); }
    template <typename... Args>
    void warn(Args&&... a) const { log(LogLevel::Warn, cat(std::forward<Args>(a)...)); }
    template <typename... Args>
    void error(Args&&... a) const { log(LogLevel::Error, cat(std::forward<Args>(a)...)); }
    template <typename... Args>
    void debug(Args&&... a) const { log(LogLevel::Debug, cat(std::forward<Args>(a)...)); }

private:
    LogSink sink_;
    std::string prefix_;
    int32_t rank_floor_ = TRAINRT_LOG_DEBUG;  // levels below are dropped on this rank
};

}  // namespace trt
