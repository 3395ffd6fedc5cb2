// The thread count OpenBLAS uses inside a CPU kernel, whatever thread calls the kernel.
//
// OpenBLAS's OpenMP build (the one the library links, libopenblas0-openmp) keeps a
// process-wide count (blas_cpu_number) and, at every sgemm outside an *active* parallel
// region, re-syncs it to omp_get_max_threads() of the calling thread — an OpenMP ICV
// (nthreads-var) that is per thread: omp_set_num_threads() on one thread leaves every other
// thread at the process default (all cores). So a count set once when the session was created
// held only on that thread: a step run on any other thread (a Go program, whose goroutines
// move between OS threads between cgo calls; a thread pool; a C# task) used all cores. With
// runtime.threads = 1 our kernels then ran their row blocks in a team of one thread — an
// *inactive* region, where omp_in_parallel() is false — and every sgemm in it started a nested
// OpenMP team, whose worker libgomp creates and destroys on each call: one pthread_create +
// exit per matmul, 70-130x slower steps (bench/results/2026-11-25-go-signal.md).
//
// BlasThreadsScope fixes the count for the duration of a kernel: OpenBLAS's count and the
// calling thread's nthreads-var are set to `threads`, and the caller's nthreads-var is put
// back on exit (the host's own OpenMP settings are not changed by a libtrainrt call).
// OpenBLAS's count stays process-wide: sessions with different runtime.threads used at the
// same moment from two threads still share it (docs/C_API.md, "Threads").
#pragma once
#include <cblas.h>
#include <omp.h>

namespace trt::cpu {

class BlasThreadsScope {
public:
    explicit BlasThreadsScope(int threads)
        : threads_(threads < 1 ? 1 : threads), saved_(omp_get_max_threads()) {
        if (openblas_get_num_threads() != threads_) openblas_set_num_threads(threads_);
        // openblas_set_num_threads also sets this thread's nthreads-var; set it when it did not
        // run (OpenBLAS skips the re-sync once its count is 1, and reads it when it is not).
        if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
    }
    ~BlasThreadsScope() {
        if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
    }
    BlasThreadsScope(const BlasThreadsScope&) = delete;
    BlasThreadsScope& operator=(const BlasThreadsScope&) = delete;

private:
    int threads_;
    int saved_;
};

}  // namespace trt::cpu
