#include "model/rope_tables.h"

#include <cmath>
#include <cstddef>

namespace trt {

RopeTables make_rope_tables(int max_pos, int hs, float theta) {
    const int half = hs / 2;
    RopeTables t;
    t.cos.resize(static_cast<size_t>(max_pos) * static_cast<size_t>(half));
    t.sin.resize(t.cos.size());
    std::vector<float> inv_freq(static_cast<size_t>(half));
    for (int i = 0; i < half; ++i) {
        // torch: 1.0 / (base ** (arange(0, hs, 2).float() / hs)), fp32 throughout.
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(hs);
        const float power = std::pow(theta, exponent);
        inv_freq[static_cast<size_t>(i)] = 1.0f / power;
    }
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
