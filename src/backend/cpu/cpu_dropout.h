// The CPU's dropout masks (core/dropout_mask.h), shared by the elementwise dropout op and
// attention's dropped probabilities.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/backend.h"
#include "core/dropout_mask.h"
#include "core/error.h"

namespace trt::cpu {

struct DropoutDraw;
// dst[j] = src[j] · keep(i + j) · scale for j < n, i the stream index of element 0 (in place
// allowed): cpu_elementwise.cpp, whole Philox groups computed 16 at a time so they vectorise.
void dropout_span(const DropoutDraw& d, float* dst, const float* src, size_t n, uint64_t i);

// A DropoutMask with its per-call constants resolved (the step read from host memory).
struct DropoutDraw {
    uint64_t seed;
    int64_t step;
    uint32_t micro_step, site, threshold;
    float scale;
    uint64_t index0;

    explicit DropoutDraw(const DropoutMask& m)
        : seed(m.seed), step(m.scalars != nullptr ? m.scalars->step : 0),
          micro_step(m.micro_step), site(m.site), threshold(dropout_threshold(m.p)),
          scale(dropout_scale(m.p)), index0(m.index0) {
        TRT_CHECK(m.scalars != nullptr, "dropout: no step scalars");
        TRT_CHECK(m.p >= 0.0f && m.p < 1.0f, "dropout: p = ", m.p, " outside [0, 1)");
    }

    // Before a parallel region (apply never throws): the call's elements fit the stream.
    void check(uint64_t n) const {
        TRT_CHECK(index0 + n <= kDropoutMaxElements, "dropout over ", index0 + n,
                  " elements: a site has at most 2^34");
    }

    // dst[j] = src[j] · keep(index0 + idx + j) · scale for j < n (in place allowed).
    void apply(float* dst, const float* src, size_t n, uint64_t idx) const {
        dropout_span(*this, dst, src, n, idx + index0);
    }
};

}  // namespace trt::cpu
