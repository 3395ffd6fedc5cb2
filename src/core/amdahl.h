// Amdahl's law for the per-op profile (backend/op_profiler.h, `trainrt bench --profile`):
// from two timings of the same work, at 1 and at n threads, the fraction that runs in
// parallel, and the time that fraction projects to at m threads. Header-only, std only (the
// CLI compiles it in: it is not part of the C API).
#pragma once
#include <algorithm>

namespace trt {

// p = (1 - tn/t1) / (1 - 1/n), clamped to [0, 1] (noise can push it past either end);
// 0 when t1 is not positive or n <= 1 (nothing to compare).
inline double parallel_fraction(double t1, double tn, int n) {
    if (!(t1 > 0) || n <= 1) return 0.0;
    const double p = (1.0 - tn / t1) / (1.0 - 1.0 / n);
    return std::min(1.0, std::max(0.0, p));
}

// The time at m threads of work taking t1 at 1 thread with parallel fraction p.
inline double amdahl_seconds(double t1, double p, int m) {
    return m <= 0 ? t1 : t1 * ((1.0 - p) + p / m);
}

}  // namespace trt
