// optim.state_dtype = "int8": AdamW's moments in 8 bits per element (the idea of
// bitsandbytes' 8-bit Adam, with codes of our own). A run of the compact moment buffer is cut
// into blocks of kQ8Block elements; each block keeps its largest magnitude as an fp32 scale
// and each element a code of |x| / scale on a log scale, 8 codes per octave (adjacent codes
// 2^(1/8) apart: at most ~4.4% off, relative), so small moments next to large ones keep
// their size instead of rounding to zero as a linear int8 code would:
//   m (signed):  bit 7 the sign, k = bits 0..6: |m| = scale · 2^((k - 127) / 8); k = 0 is 0
//                (below 2^-15.8 · scale)
//   v (>= 0):    k = 0..255: v = scale · 2^((k - 255) / 8); k = 0 is 0 (below 2^-31.8 · scale)
// The element of largest magnitude gets the top code, exactly 1 · scale, so decoding a block
// and encoding it again gives the same codes and scale (a checkpoint stores the decoded fp32
// moments; resume is bit-exact). Encoding picks the code whose geometric midpoints bracket
// |x| / scale, from the ratio's exponent and its significand against the 8 boundaries of an
// octave — a table the host computes once (make_q8_tables) and every backend reads, so all
// backends pick the same codes.
#pragma once
#include <cstdint>

#include "core/float_bits.h"

#if defined(__CUDACC__)
#define TRT_Q8_HD __host__ __device__
#else
#define TRT_Q8_HD
#endif

namespace trt {

constexpr int kQ8Block = 256;

struct Q8Tables {
    float m_value[128];  // |m| / scale of code k
    float m_mid[128];    // [k]: the boundary between codes k - 1 and k ([0] unused)
    float v_value[256];
    float v_mid[256];
    // The boundaries within one octave, as significands in [1, 2): a ratio r = 2^e · s
    // (s in [1, 2)) is past the j-th boundary of its octave when s >= octave[j]. The tables
    // above are these scaled by powers of two (exact in float), so the fast encoding below
    // and a search of the tables always agree.
    float octave[8];
};

// Host: the tables above (in double, rounded to float once, scaled exactly).
Q8Tables make_q8_tables();

// The largest k in [1, n) with r >= mid[k], else 0 (mid increasing from index 1): a search of
// the table, for tests; q8_code_fast computes the same.
TRT_Q8_HD inline int q8_code(const float* mid, int n, float r) {
    int lo = 0, hi = n - 1;  // invariant: the answer is in [lo, hi]
    while (lo < hi) {
        const int k = (lo + hi + 1) >> 1;
        if (r >= mid[k]) lo = k;
        else hi = k - 1;
    }
    return lo;
}

// The code of r in [0, 1] for codes 0 .. top (top = n - 1; value[k] = 2^((k - top) / 8)):
// 8 codes per octave above the octave of r's exponent, plus how many of the octave's
// boundaries r's significand passes; 0 below mid[1].
TRT_Q8_HD inline int q8_code_fast(const Q8Tables& t, const float* mid, int top, float r) {
    if (!(r >= mid[1])) return 0;
    const uint32_t u = float_bits(r);
    const int e = static_cast<int>((u >> 23) & 0xFF) - 127;  // r = 2^e · s, s in [1, 2)
    const float sig = bits_float((u & 0x7FFFFFu) | 0x3F800000u);
    int c = 0;
    for (int j = 0; j < 8; ++j) c += sig >= t.octave[j] ? 1 : 0;
    const int k = top + 8 * e + c;
    return k < 1 ? 1 : (k > top ? top : k);
}

TRT_Q8_HD inline uint8_t q8_encode_m(const Q8Tables& t, float x, float scale) {
    const float r = scale > 0.0f ? (x < 0.0f ? -x : x) / scale : 0.0f;
    const int k = q8_code_fast(t, t.m_mid, 127, r);
    return static_cast<uint8_t>(k == 0 ? 0 : ((x < 0.0f ? 0x80 : 0) | k));
}
TRT_Q8_HD inline float q8_decode_m(const Q8Tables& t, uint8_t code, float scale) {
    const float mag = t.m_value[code & 0x7F] * scale;
    return (code & 0x80) ? -mag : mag;
}
TRT_Q8_HD inline uint8_t q8_encode_v(const Q8Tables& t, float x, float scale) {
    const float r = scale > 0.0f ? x / scale : 0.0f;
    return static_cast<uint8_t>(q8_code_fast(t, t.v_mid, 255, r));
}
TRT_Q8_HD inline float q8_decode_v(const Q8Tables& t, uint8_t code, float scale) {
    return t.v_value[code] * scale;
}

// Blocks of a run of n elements.
TRT_Q8_HD inline int64_t q8_blocks(int64_t n) { return (n + kQ8Block - 1) / kQ8Block; }

}  // namespace trt
