// Error: the one exception type inside libtrainrt. The C API barrier (src/capi/barrier.h)
// turns it into a trainrt_status plus the thread-local message; nothing else may escape.
#pragma once
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "trainrt/trainrt.h"

namespace trt {

enum class Status : int32_t {
    Ok = TRAINRT_OK,
    InvalidArgument = TRAINRT_ERR_INVALID_ARGUMENT,
    Config = TRAINRT_ERR_CONFIG,
    Io = TRAINRT_ERR_IO,
    Format = TRAINRT_ERR_FORMAT,
    OutOfMemory = TRAINRT_ERR_OUT_OF_MEMORY,
    Device = TRAINRT_ERR_DEVICE,
    Unsupported = TRAINRT_ERR_UNSUPPORTED,
    Busy = TRAINRT_ERR_BUSY,
    Cancelled = TRAINRT_ERR_CANCELLED,
    VersionMismatch = TRAINRT_ERR_VERSION_MISMATCH,
    Internal = TRAINRT_ERR_INTERNAL,
    DeviceLost = TRAINRT_ERR_DEVICE_LOST,
    NonFinite = TRAINRT_ERR_NON_FINITE,
};

class Error : public std::runtime_error {
public:
    Error(Status status, std::string message)
        : std::runtime_error(std::move(message)), status_(status) {}
    Status status() const noexcept { return status_; }

private:
    Status status_;
};

// Concatenate anything streamable: cat("bad value ", 3, " at ", path).
template <typename... Args>
std::string cat(Args&&... args) {
    std::ostringstream os;
    (os << ... << std::forward<Args>(args));
    return os.str();
}

// fail(Status::Format, "shard ", path, ": bad magic ", m) — throws Error.
template <typename... Args>
[[noreturn]] void fail(Status status, Args&&... args) {
    throw Error(status, cat(std::forward<Args>(args)...));
}

// Internal invariant check that throws (never aborts the host).
#define TRT_CHECK(cond, ...)                                                                 \
    do {                                                                                     \
        if (!(cond))                                                                         \
            ::trt::fail(::trt::Status::Internal, "internal check failed (", #cond, ") at ",  \
                        __FILE__, ":", __LINE__, ": ", ##__VA_ARGS__);                       \
    } while (0)

}  // namespace trt
