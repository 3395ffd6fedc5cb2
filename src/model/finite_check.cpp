#include "model/finite_check.h"

#include <cmath>

#include "core/error.h"

namespace trt {

namespace {

void check_tensors(const ParamTable& table, const float* host, bool compact,
                   const std::string& source, const std::string& advice) {
    for (const ParamTensor& t : table.tensors()) {
        if (compact && !t.trainable) continue;
        const float* p = host + (compact ? t.grad_offset : t.offset);
        // Summing x - x is 0 for every finite x and NaN otherwise: a branch-free scan that
        // vectorises; the slow search for the element runs only when it fails.
        float probe = 0.0f;
        for (size_t i = 0; i < t.numel; ++i) probe += p[i] - p[i];
        if (probe == 0.0f) continue;
        for (size_t i = 0; i < t.numel; ++i)
            if (!std::isfinite(p[i]))
                fail(Status::NonFinite, source, ": tensor '", t.name, "' holds ",
                     std::isnan(p[i]) ? "nan" : (p[i] > 0 ? "inf" : "-inf"), " at element ",
                     i, " of ", t.numel, "; ", advice);
    }
}

}  // namespace

void require_finite(const ParamTable& table, const float* host, const std::string& source,
                    const std::string& advice) {
    check_tensors(table, host, false, source, advice);
}

void require_finite_trainable(const ParamTable& table, const float* host,
                              const std::string& source, const std::string& advice) {
    check_tensors(table, host, true, source, advice);
}

}  // namespace trt
