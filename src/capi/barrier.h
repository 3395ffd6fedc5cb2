// The exception barrier every C entry point runs inside: C++ exceptions become a
// trainrt_status plus the thread-local message, and nothing else reaches the host.
#pragma once
#include <atomic>
#include <new>
#include <string>
#include <thread>

#include "core/error.h"

namespace trt::capi {

// Records a failure for trainrt_last_error_message() and returns its status.
trainrt_status set_error(trainrt_status status, const std::string& message);

template <typename Fn>
trainrt_status guarded(const char* function, Fn&& fn) noexcept {
    try {
        return fn();
    } catch (const Error& e) {
        return set_error(static_cast<trainrt_status>(e.status()), e.what());
    } catch (const std::bad_alloc&) {
        return set_error(TRAINRT_ERR_OUT_OF_MEMORY,
                         cat(function, ": out of host memory"));
    } catch (const std::exception& e) {
        return set_error(TRAINRT_ERR_INTERNAL,
                         cat(function, ": internal error: ", e.what(), " (please report this)"));
    } catch (...) {
        return set_error(TRAINRT_ERR_INTERNAL,
                         cat(function, ": unknown internal error (please report this)"));
    }
}

// Throws InvalidArgument naming the argument when ptr is NULL.
inline void require(const void* ptr, const char* function, const char* argument) {
    if (ptr == nullptr)
        fail(Status::InvalidArgument, function, ": ", argument, " must not be NULL");
}

// Throws InvalidArgument unless level is one of TRAINRT_LOG_DEBUG..TRAINRT_LOG_ERROR.
inline void require_log_level(int32_t level, const char* function) {
    if (level < TRAINRT_LOG_DEBUG || level > TRAINRT_LOG_ERROR)
        fail(Status::InvalidArgument, function, ": min_level = ", level, " is not a log level; "
             "use TRAINRT_LOG_DEBUG (0), INFO (1), WARN (2) or ERROR (3)");
}

// The in-use mark of a handle: set for the duration of every call that uses it (BusyGuard).
// `owner` is the thread holding it, recorded only to word the BUSY message: a call made from
// inside a log or progress callback of a call on the same handle (the same thread) is told
// so, instead of being blamed on another thread.
struct BusyFlag {
    std::atomic<bool> busy{false};
    std::atomic<std::thread::id> owner{};
};

// Marks a handle in use for the scope; a second call — from another thread, or re-entrant
// from a callback — gets TRAINRT_ERR_BUSY. Never blocks, so a re-entrant call cannot deadlock.
class BusyGuard {
public:
    BusyGuard(BusyFlag& flag, const char* function) : flag_(flag) {
        if (flag_.busy.exchange(true)) {
            // The holder sets owner after taking the flag and clears it before releasing it,
            // so this thread reads its own id only when it is the holder itself.
            if (flag_.owner.load() == std::this_thread::get_id())
                fail(Status::Busy, function, ": the handle is already in use by a call on this "
                     "thread (a call from inside a log or progress callback of that call); the "
                     "library is not re-entrant on one handle: return from the callback first "
                     "(trainrt_session_request_stop() is the one call allowed there)");
            fail(Status::Busy, function, ": the handle is in use by another thread "
                 "(a handle must not be used by two threads at once)");
        }
        flag_.owner.store(std::this_thread::get_id());
    }
    ~BusyGuard() {
        flag_.owner.store(std::thread::id{});
        flag_.busy.store(false);
    }
    BusyGuard(const BusyGuard&) = delete;
    BusyGuard& operator=(const BusyGuard&) = delete;

private:
    BusyFlag& flag_;
};

// Copies text into (buf, cap) with the size-query convention of trainrt.h.
void copy_string(char* buf, size_t cap, size_t* needed, const std::string& text,
                 const char* function);

}  // namespace trt::capi
