#include "model/rope_tables.h"

#include <cmath>
#include <cstddef>

namespace trt {

namespace {

// transformers' _compute_llama3_parameters, operation by operation in fp32 (torch's
// `scalar / tensor` is the tensor's reciprocal times the scalar).
float llama3_scaled(float inv_freq, const RopeScalingSpec& r) {
    const float pi2 = static_cast<float>(2.0 * 3.14159265358979323846);
    const float wavelen = (1.0f / inv_freq) * pi2;
    const float old_context = static_cast<float>(r.original_context);
    const float low_wavelen = static_cast<float>(static_cast<double>(r.original_context) /
                                                 static_cast<double>(r.low_freq_factor));
    const float high_wavelen = static_cast<float>(static_cast<double>(r.original_context) /
                                                  static_cast<double>(r.high_freq_factor));
    // Long wavelengths (low frequencies) are divided by the factor, short ones kept ...
    const float scaled = wavelen > low_wavelen ? inv_freq / r.factor : inv_freq;
    if (wavelen < high_wavelen || wavelen > low_wavelen) return scaled;
    // ... and the band between blends the two by where the wavelength falls in it.
    const float band = static_cast<float>(static_cast<double>(r.high_freq_factor) -
                                          static_cast<double>(r.low_freq_factor));
    const float smooth = ((1.0f / wavelen) * old_context - r.low_freq_factor) / band;
    return (1.0f - smooth) * scaled / r.factor + smooth * scaled;
}

}  // namespace

std::vector<float> rope_inv_freq(int hs, float theta, const RopeScalingSpec& scaling) {
    const int half = hs / 2;
    std::vector<float> inv_freq(static_cast<size_t>(half));
    for (int i = 0; i < half; ++i) {
        // torch: 1.0 / (base ** (arange(0, hs, 2).float() / hs)), fp32 throughout.
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(hs);
        const float power = std::pow(theta, exponent);
        float f = 1.0f / power;
        if (scaling.kind == RopeScaling::Linear) f = f / scaling.factor;
        if (scaling.kind == RopeScaling::Llama3) f = llama3_scaled(f, scaling);
        inv_freq[static_cast<size_t>(i)] = f;
    }
    return inv_freq;
}

RopeTables make_rope_tables(int max_pos, int hs, float theta, const RopeScalingSpec& scaling) {
    const int half = hs / 2;
    const std::vector<float> inv_freq = rope_inv_freq(hs, theta, scaling);
    RopeTables t;
    t.cos.resize(static_cast<size_t>(max_pos) * static_cast<size_t>(half));
    t.sin.resize(t.cos.size());
    for (int p = 0; p < max_pos; ++p) {
        for (int i = 0; i < half; ++i) {
            const float angle = static_cast<float>(p) * inv_freq[static_cast<size_t>(i)];
            const size_t k = static_cast<size_t>(p) * static_cast<size_t>(half) + static_cast<size_t>(i);
            t.cos[k] = static_cast<float>(std::cos(static_cast<double>(angle)));
            t.sin[k] = static_cast<float>(std::sin(static_cast<double>(angle)));
        }
    }
    return t;
}

}  // namespace trt
