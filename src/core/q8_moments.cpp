#include "core/q8_moments.h"

#include <cmath>

namespace trt {

Q8Tables make_q8_tables() {
    Q8Tables t{};
    // One octave's codes and boundaries as significands: code offset j (0..7) of an octave is
    // 2^(j / 8); the boundary below it 2^((j - 0.5) / 8) (j = 0: that of the octave below,
    // scaled up, 2^(7.5 / 8) / 2).
    float sig_value[8], sig_mid[8];
    for (int j = 0; j < 8; ++j) {
        sig_value[j] = static_cast<float>(std::exp2(j / 8.0));
        sig_mid[j] = static_cast<float>(std::exp2((j - 0.5) / 8.0 + (j == 0 ? 1.0 : 0.0)));
    }
    // octave[j]: the boundary crossed into code offset j + 1 within [1, 2): 2^((j + 0.5) / 8).
    for (int j = 0; j < 8; ++j) t.octave[j] = j < 7 ? sig_mid[j + 1] : sig_mid[0];
    auto fill = [&](float* value, float* mid, int n) {
        const int top = n - 1;
        value[0] = 0.0f;
        mid[0] = 0.0f;
        for (int k = 1; k < n; ++k) {
            // k - top = 8q + j with j in [0, 8): value 2^q · 2^(j/8), exactly scaled.
            const int d = k - top, q = (d >= 0 ? d : d - 7) / 8, j = d - 8 * q;
            value[k] = std::ldexp(sig_value[j], q);
            // The boundary below code k: 2^((d - 0.5) / 8); for j = 0 it is the top boundary
            // of the octave below.
            mid[k] = j == 0 ? std::ldexp(sig_mid[0], q - 1) : std::ldexp(sig_mid[j], q);
        }
        mid[1] = value[1] / 2.0f;  // below the smallest code: halfway to 0
    };
    fill(t.m_value, t.m_mid, 128);
    fill(t.v_value, t.v_mid, 256);
    return t;
}

}  // namespace trt
