// OpenBLAS and oneDNN run single-threaded inside our kernels, whatever thread calls them.
//
// Every parallel loop of the CPU kernels is ours (cpu_pool.h); a product split over threads
// is split by us into blocks, each one single-threaded sgemm or oneDNN matmul. Both
// libraries are OpenMP builds that take their thread count from the *calling* thread's
// OpenMP setting (nthreads-var, a per-thread ICV): OpenBLAS re-syncs its process-wide count
// to omp_get_max_threads() at every sgemm outside an active parallel region (and skips the
// re-sync once its count is 1), oneDNN sizes its team by it. Left at the default (all
// cores), either would start an OpenMP team of its own inside our part: libgomp threads that
// spin at barriers, the collapse beside other work that the pool exists to avoid.
//
// The pool's workers set their nthreads-var to 1 once (cpu_pool.cpp). SerialLibrariesScope
// does it for the calling thread, for the duration of a kernel, and puts the caller's value
// back on exit (the host's own OpenMP settings are not changed by a libtrainrt call).
// OpenBLAS's count is process-wide: it is left at 1, as OpenBLAS itself would leave it
// (docs/C_API.md, "Threads").
#pragma once
#include <cblas.h>
#include <omp.h>

namespace trt::cpu {

class SerialLibrariesScope {
public:
    SerialLibrariesScope() : saved_(omp_get_max_threads()) {
        if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
        // openblas_set_num_threads also sets this thread's nthreads-var; set it when it did not
        // run.
        if (omp_get_max_threads() != 1) omp_set_num_threads(1);
    }
    ~SerialLibrariesScope() {
        if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
    }
    SerialLibrariesScope(const SerialLibrariesScope&) = delete;
    SerialLibrariesScope& operator=(const SerialLibrariesScope&) = delete;

private:
    int saved_;
};

}  // namespace trt::cpu
