// The row layout of cuDNN attention's length buckets (attention_plan_cache.h), as plain C++:
// the CPU twins of cast_padded_from_f32 / cast_unpadded_to_f32 (cuda_ops.h,
// kernels/padded_cast.cu), which do the same with a bf16/fp16 conversion. Host-only; the GPU
// test (tests/gpu/padded_cast_test.cpp) holds the kernels to these, the CPU unit test
// (tests/unit/cuda/attention_plan_cache_test.cpp) holds these to their definition.
//
// A call of T positions served by a plan of Tb >= T positions: B batches of rows W wide.
#pragma once
#include <cstddef>

namespace trt::cuda {

// dst [B,Tb,W] = convert(src [B,T,W]) in rows t < T of each batch, Out{} (zero) in rows
// T..Tb-1: the padded rows the plan reads. Zero rows keep the first T rows exact (causality)
// and, as dO, contribute nothing to dK/dV.
template <typename Out, typename In, typename Convert>
void pad_rows(Out* dst, const In* src, int B, int T, int Tb, int W, Convert&& convert) {
    const size_t w = static_cast<size_t>(W);
    for (size_t b = 0; b < static_cast<size_t>(B); ++b)
        for (size_t t = 0; t < static_cast<size_t>(Tb); ++t) {
            Out* d = dst + (b * Tb + t) * w;
            if (t >= static_cast<size_t>(T)) {
                for (size_t c = 0; c < w; ++c) d[c] = Out{};
                continue;
            }
            const In* s = src + (b * T + t) * w;
            for (size_t c = 0; c < w; ++c) d[c] = convert(s[c]);
        }
}

// dst [B,T,W] = convert(src [B,Tb,W]) for rows t < T of each batch; rows T..Tb-1 of src are not
// read (their outputs are discarded).
template <typename Out, typename In, typename Convert>
void unpad_rows(Out* dst, const In* src, int B, int T, int Tb, int W, Convert&& convert) {
    const size_t w = static_cast<size_t>(W);
    for (size_t b = 0; b < static_cast<size_t>(B); ++b)
        for (size_t t = 0; t < static_cast<size_t>(T); ++t) {
            Out* d = dst + (b * T + t) * w;
            const In* s = src + (b * Tb + t) * w;
            for (size_t c = 0; c < w; ++c) d[c] = convert(s[c]);
        }
}

}  // namespace trt::cuda
