// Dropout masks from a counter-based RNG (model.dropout, lora.dropout): whether element i of a
// dropout site is kept is a pure function of (seed, step, micro-step, site, i), the same on
// the host and the device, so the CPU and CUDA drop the same elements, a replayed CUDA graph
// draws the step's own mask (the step is read from backend memory), the backward regenerates
// the forward's mask instead of storing it, and a resumed run draws what an uninterrupted one
// would. tests/reference/reference_common.py draws the same masks in numpy.
//
// Elements 4q .. 4q+3 of a site take lanes 0..3 of
//   Philox4x32-10(counter = (q, site, micro_step, step), key = (lo32 seed, hi32 seed ^ salt))
// (the salt keeps these streams apart from the random sampler's, which is keyed by data.seed);
// element i is kept iff its lane >= threshold = floor(p · 2³²), and a kept element is scaled
// by 1 / (1 - p) (computed in float). q must fit 32 bits: a site has at most 2³⁴ elements.
#pragma once
#include <cstdint>

#include "core/philox.h"

namespace trt {

constexpr uint32_t kDropoutKeySalt = 0x64726F70u;  // "drop"
constexpr uint64_t kDropoutMaxElements = uint64_t{1} << 34;

TRT_HOST_DEVICE inline uint32_t dropout_threshold(float p) {
    const double t = static_cast<double>(p) * 4294967296.0;
    return t >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<uint32_t>(t);
}

TRT_HOST_DEVICE inline float dropout_scale(float p) { return 1.0f / (1.0f - p); }

// The four uniforms of elements 4q .. 4q+3 of a site's stream.
TRT_HOST_DEVICE inline Philox4x32 dropout_uniforms(uint64_t seed, int64_t step,
                                                   uint32_t micro_step, uint32_t site,
                                                   uint64_t q) {
    return philox4x32_10(static_cast<uint32_t>(q), site, micro_step,
                         static_cast<uint32_t>(step), static_cast<uint32_t>(seed),
                         static_cast<uint32_t>(seed >> 32) ^ kDropoutKeySalt);
}

}  // namespace trt
