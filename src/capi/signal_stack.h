// An alternate signal stack for the calling thread while a C API call computes.
//
// oneDNN's JIT f32 GEMM (2.6, which the library links; fixed upstream after 3.11.1, oneDNN
// issue 4845) points rsp into a heap buffer while it runs. A signal delivered to that thread
// then has its frame — and its handler's — written into the heap: silent heap corruption, or a
// crash much later. Hosts catch signals on the threads that call in (Python's SIGINT handler,
// a profiler's SIGPROF), and most of them install their handlers with SA_ONSTACK (CPython,
// Go's runtime) but give the thread no alternate stack, so the kernel uses the interrupted rsp.
// For the duration of a computing call, a thread with no alternate stack gets one of the
// library's (per thread, mapped once, with a guard page), and loses it again on return; a
// thread with its own (Go's, the CLI's) keeps it. A handler installed without SA_ONSTACK still
// runs on the interrupted stack: docs/C_API.md, "Threads", says what a host should do.
// The library's worker threads block every asynchronous signal (src/backend/cpu/cpu_pool.h).
#pragma once

namespace trt::capi {

class SignalStackScope {
public:
    SignalStackScope() noexcept;
    ~SignalStackScope();
    SignalStackScope(const SignalStackScope&) = delete;
    SignalStackScope& operator=(const SignalStackScope&) = delete;

private:
    bool installed_ = false;
};

// Whether the calling thread has an alternate signal stack now (for tests).
bool thread_has_signal_stack() noexcept;

}  // namespace trt::capi
