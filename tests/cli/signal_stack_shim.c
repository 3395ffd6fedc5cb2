/* LD_PRELOAD shim for cli_signal_stack (x86-64 Linux): stands in for a oneDNN JIT GEMM kernel
 * that points rsp into a heap buffer (oneDNN issue 4845) at the moment a signal comes.
 *
 * It wraps trainrt_session_train(), which the CLI calls with its SIGINT/SIGTERM handlers
 * installed: it fills a buffer with a pattern, moves rsp into the middle of it, sends SIGINT
 * to its own thread with a bare syscall (no stack use of its own, so anything written to
 * the buffer was written by the signal's delivery: the kernel's signal frame and the
 * handler's frame), moves rsp back, and says whether the buffer changed. Then the real
 * trainrt_session_train() runs, and stops at once: the handler asked it to. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <trainrt/trainrt.h>

#define BUF_SIZE (256 * 1024)
#define PATTERN 0x5a

/* tgkill(pid, tid, sig) with rsp at `sp` across the syscall; the signal is delivered on the
 * way back to user space, so its handler sees sp as the interrupted stack pointer. */
static long tgkill_with_sp(void* sp, long pid, long tid, long sig) {
    long ret;
    __asm__ volatile(
        "mov %%rsp, %%r12\n\t"
        "mov %[sp], %%rsp\n\t"
        "syscall\n\t"
        "mov %%r12, %%rsp\n\t"
        : "=a"(ret)
        : "0"((long)SYS_tgkill), "D"(pid), "S"(tid), "d"(sig), [sp] "r"(sp)
        : "r12", "rcx", "r11", "memory", "cc");
    return ret;
}

trainrt_status trainrt_session_train(trainrt_session* session, int64_t n_steps,
                                     trainrt_progress_fn callback, void* payload) {
    typedef trainrt_status (*train_fn)(trainrt_session*, int64_t, trainrt_progress_fn, void*);
    const train_fn real = (train_fn)dlsym(RTLD_NEXT, "trainrt_session_train");
    if (real == NULL) {
        fprintf(stderr, "signal_stack_shim: no trainrt_session_train after the shim\n");
        _exit(96);
    }
    unsigned char* buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("signal_stack_shim: mmap");
        _exit(96);
    }
    memset(buf, PATTERN, BUF_SIZE);
    if (tgkill_with_sp(buf + BUF_SIZE / 2, getpid(), syscall(SYS_gettid), SIGINT) != 0) {
        fprintf(stderr, "signal_stack_shim: tgkill failed\n");
        _exit(96);
    }
    size_t written = 0;
    for (size_t i = 0; i < BUF_SIZE; ++i) written += buf[i] != PATTERN;
    if (written == 0)
        fprintf(stderr, "signal_stack_shim: the handler left the interrupted stack alone\n");
    else
        fprintf(stderr,
                "signal_stack_shim: the handler ran on the interrupted stack: %zu bytes of "
                "the buffer rsp pointed into were written\n",
                written);
    munmap(buf, BUF_SIZE);
    return real(session, n_steps, callback, payload);
}
