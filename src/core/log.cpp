#include "core/log.h"

#include <cstdio>
#include <mutex>

namespace trt {
namespace {
std::mutex g_default_mutex;
LogSink g_default{nullptr, nullptr, TRAINRT_LOG_WARN};

const char* level_name(LogLevel level) {
    switch (level) {
        case LogLevel::Debug: return "debug";
        case LogLevel::Info: return "info";
        case LogLevel::Warn: return "warning";
        case LogLevel::Error: return "error";
    }
    return "log";
}
}  // namespace

void set_default_log_sink(const LogSink& sink) {
    std::lock_guard<std::mutex> lock(g_default_mutex);
    g_default = sink;
}

void Logger::set_rank(int rank, int size) {
    prefix_ = cat("[rank ", rank, "/", size, "] ");
    rank_floor_ = rank == 0 ? TRAINRT_LOG_DEBUG : TRAINRT_LOG_WARN;
}

void Logger::log(LogLevel level, const std::string& text) const {
    if (static_cast<int32_t>(level) < rank_floor_) return;
    const std::string message = prefix_.empty() ? text : prefix_ + text;
    LogSink sink = sink_;
    if (sink.fn == nullptr) {
        std::lock_guard<std::mutex> lock(g_default_mutex);
        sink = g_default;
    }
    if (static_cast<int32_t>(level) < sink.min_level) return;
    if (sink.fn != nullptr) {
        sink.fn(static_cast<int32_t>(level), message.c_str(), sink.payload);
    } else {
        std::fprintf(stderr, "trainrt %s: %s\n", level_name(level), message.c_str());
    }
}

}  // namespace trt
