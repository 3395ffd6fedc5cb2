#include "runtime/batch_size.h"

#include <fstream>
#include <string>

#include "core/error.h"

namespace trt {

int64_t largest_fitting(int64_t hi, const std::function<bool(int64_t)>& fits) {
    if (hi < 1 || !fits(1)) return 0;
    // Invariant: fits(good), and bad > hi or !fits(bad).
    int64_t good = 1, bad = hi + 1;
    while (good * 2 <= hi) {
        if (!fits(good * 2)) {
            bad = good * 2;
            break;
        }
        good *= 2;
    }
    while (bad - good > 1) {
        const int64_t mid = good + (bad - good) / 2;
        (fits(mid) ? good : bad) = mid;
    }
    return good;
}

int64_t host_memory_budget(int64_t limit) {
    if (limit > 0) return limit;
    std::ifstream f("/proc/meminfo");
    std::string key, unit;
    int64_t kb = 0;
    while (f >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb / 10 * 9 * 1024;
    return 0;
}

bool fits_by_allocation(const std::function<std::unique_ptr<Backend>()>& make,
                        const ModelSpec& spec, int B, int T, const DecoderOptions& options,
                        size_t extra) {
    try {
        std::unique_ptr<Backend> backend = make();
        Decoder model(*backend, spec, B, T, options);
        // AdamW's m and v over the trainable tensors (runtime/optimizer.h), then the rest.
        const size_t moments = 2 * model.table().grad_total() * sizeof(float);
        void* held = backend->alloc(moments + extra, "batch-size probe: moments and data");
        backend->free(held);
        return true;
    } catch (const Error& e) {
        if (e.status() == Status::OutOfMemory) return false;
        throw;
    }
}

}  // namespace trt
