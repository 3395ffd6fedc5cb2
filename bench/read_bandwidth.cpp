// How fast this machine reads a model's weights once: the floor of a decode step, which reads
// every weight once per token (bench/results/2026-11-27-sample-kv-cache.md). Sums MIB of
// floats per pass on 1..THREADS OpenMP threads, each thread its own contiguous slice, and
// prints microseconds per pass and GB/s (the median of 7 timings of 200 passes).
//   build/read_bandwidth [MIB] [THREADS]   (defaults 3.1 and every core)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
    const double mib = argc > 1 ? std::atof(argv[1]) : 3.1;
    const int max_threads = argc > 2 ? std::atoi(argv[2]) : omp_get_num_procs();
    const size_t n = static_cast<size_t>(mib * 1024 * 1024 / sizeof(float));
    if (n == 0 || max_threads < 1) {
        std::fprintf(stderr, "usage: read_bandwidth [MIB > 0] [THREADS >= 1]\n");
        return 2;
    }
    std::vector<float> a(n, 1.0f);
    double sink = 0;
    for (int threads = 1; threads <= max_threads; ++threads) {
        std::vector<double> us;
        for (int round = 0; round < 7; ++round) {
            constexpr int kPasses = 200;
            const auto t0 = std::chrono::steady_clock::now();
            for (int pass = 0; pass < kPasses; ++pass) {
                float total = 0;
#pragma omp parallel for reduction(+ : total) num_threads(threads) schedule(static)
                for (size_t i = 0; i < n; ++i) total += a[i];
                sink += total;
            }
            us.push_back(std::chrono::duration<double, std::micro>(
                             std::chrono::steady_clock::now() - t0).count() / kPasses);
        }
        std::sort(us.begin(), us.end());
        std::printf("%.1f MiB, %d thread(s): %.2f us per pass, %.1f GB/s\n", mib, threads, us[3],
                    n * sizeof(float) / us[3] / 1e3);
    }
    return sink == 0;  // keeps the sums
}
