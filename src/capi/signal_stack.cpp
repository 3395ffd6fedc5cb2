#include "capi/signal_stack.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

namespace trt::capi {
namespace {

// Room for the kernel's signal frame (with AVX-512 state, ~3.5 KiB) and any handler a host
// runs, instrumented builds' included, many times over.
constexpr size_t kStackSize = 256 * 1024;

// This thread's stack: mapped on first need, unmapped when the thread exits (never while it is
// installed: the scope takes it down before the call returns).
struct ThreadStack {
    void* base = nullptr;  // the guard page; the stack is above it
    size_t page = 0;
    void* stack() {
        if (base == nullptr) {
            page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
            void* m = ::mmap(nullptr, kStackSize + page, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
            if (m == MAP_FAILED) return nullptr;
            ::mprotect(m, page, PROT_NONE);  // stacks grow down: an overflow faults
            base = m;
        }
        return static_cast<char*>(base) + page;
    }
    bool installed() const {
        stack_t current{};
        return base != nullptr && ::sigaltstack(nullptr, &current) == 0 &&
               !(current.ss_flags & SS_DISABLE) && current.ss_sp == static_cast<char*>(base) + page;
    }
    ~ThreadStack() {
        if (base == nullptr) return;
        // Still installed (a handler that longjmp'd out of a call skipped the scope's end):
        // taken down before its memory goes.
        if (installed()) disable();
        ::munmap(base, kStackSize + page);
    }
    static void disable() {
        stack_t off{};
        off.ss_flags = SS_DISABLE;
        ::sigaltstack(&off, nullptr);
    }
};
thread_local ThreadStack t_stack;

}  // namespace

bool thread_has_signal_stack() noexcept {
    stack_t current{};
    return ::sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE);
}

SignalStackScope::SignalStackScope() noexcept {
    if (thread_has_signal_stack()) return;  // the host's own (or an enclosing call's)
    stack_t ss{};
    ss.ss_sp = t_stack.stack();
    if (ss.ss_sp == nullptr) return;  // no memory for it: calls run as before
    ss.ss_size = kStackSize;
    installed_ = ::sigaltstack(&ss, nullptr) == 0;
}

SignalStackScope::~SignalStackScope() {
    // Only ours: a callback during the call may have installed the host's own.
    if (installed_ && t_stack.installed()) ThreadStack::disable();
}

}  // namespace trt::capi
