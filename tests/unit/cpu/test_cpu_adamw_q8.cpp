// optim.state_dtype = "int8" (core/q8_moments.h): the codes, and adamw_step_q8 on the CPU
// backend — from zero moments it is adamw_step bit for bit; after that every element's update
// is adamw_step's on the decoded moments (a double reference of the same decode → update →
// encode), the codes stay within one step of the reference's, and a decoded state encodes to
// itself (what makes save + load bit-exact).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "core/q8_moments.h"

using namespace trt;

namespace {

const Q8Tables& tables() {
    static const Q8Tables t = make_q8_tables();
    return t;
}

}  // namespace

TEST(Q8Codes, TablesAreIncreasingAndTopIsOne) {
    const Q8Tables& t = tables();
    EXPECT_EQ(t.m_value[127], 1.0f);
    EXPECT_EQ(t.v_value[255], 1.0f);
    for (int k = 2; k < 128; ++k) {
        EXPECT_LT(t.m_value[k - 1], t.m_mid[k]);
        EXPECT_LT(t.m_mid[k], t.m_value[k]);
    }
    for (int k = 2; k < 256; ++k) {
        EXPECT_LT(t.v_value[k - 1], t.v_mid[k]);
        EXPECT_LT(t.v_mid[k], t.v_value[k]);
    }
}

// The encoder's shortcut (exponent + significand against one octave's boundaries) picks what a
// search of the boundary tables picks, at the boundaries themselves too.
TEST(Q8Codes, FastCodeEqualsTheTableSearch) {
    const Q8Tables& t = tables();
    for (const auto& [mid, n] : {std::pair<const float*, int>{t.m_mid, 128}, {t.v_mid, 256}}) {
        for (int k = 1; k < n; ++k)
            for (float r : {mid[k], std::nextafter(mid[k], 0.0f), std::nextafter(mid[k], 2.0f)})
                ASSERT_EQ(q8_code_fast(t, mid, n - 1, r), q8_code(mid, n, r)) << k << " " << r;
        std::mt19937 rng(n);
        std::uniform_real_distribution<double> e(-40.0, 0.0);
        for (int i = 0; i < 100000; ++i) {
            const float r = static_cast<float>(std::exp2(e(rng)));
            ASSERT_EQ(q8_code_fast(t, mid, n - 1, r), q8_code(mid, n, r)) << r;
        }
        for (float r : {0.0f, 1.0f, 1e-30f})
            ASSERT_EQ(q8_code_fast(t, mid, n - 1, r), q8_code(mid, n, r)) << r;
    }
}

TEST(Q8Codes, NearestCodeWithinHalfAStepAndDecodedValuesEncodeToThemselves) {
    const Q8Tables& t = tables();
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> expo(-15.0, 0.0), expv(-31.0, 0.0);
    const float scale = 3.0f;
    const double half_step = std::exp2(1.0 / 16.0) - 1.0;  // ±4.4%
    for (int i = 0; i < 20000; ++i) {
        const float m = (i % 2 ? -1.0f : 1.0f) * scale * static_cast<float>(std::exp2(expo(rng)));
        const uint8_t cm = q8_encode_m(t, m, scale);
        const float dm = q8_decode_m(t, cm, scale);
        ASSERT_LE(std::fabs(dm - m), half_step * 1.0001 * std::fabs(m)) << m;
        ASSERT_EQ(q8_encode_m(t, dm, scale), cm) << m;
        const float v = scale * static_cast<float>(std::exp2(expv(rng)));
        const uint8_t cv = q8_encode_v(t, v, scale);
        const float dv = q8_decode_v(t, cv, scale);
        ASSERT_LE(std::fabs(dv - v), half_step * 1.0001 * v) << v;
        ASSERT_EQ(q8_encode_v(t, dv, scale), cv) << v;
    }
    // The block's largest magnitude is exact; zero (and -0, and a zero block) is code 0.
    EXPECT_EQ(q8_decode_m(t, q8_encode_m(t, -scale, scale), scale), -scale);
    EXPECT_EQ(q8_encode_m(t, -0.0f, scale), 0);
    EXPECT_EQ(q8_encode_m(t, 0.0f, 0.0f), 0);
    EXPECT_EQ(q8_encode_v(t, 0.0f, 0.0f), 0);
    EXPECT_EQ(q8_decode_m(t, 0, scale), 0.0f);
}

namespace {

struct State {
    size_t n;
    std::vector<float> params, grads, ms, vs;
    std::vector<uint8_t> m8, v8;
    std::vector<int64_t> ends{1000, 1001, 1300, 1301};  // 4 segments, blocks straddle them
    std::vector<float> decay{0.1f, 0.0f, 0.1f, 0.0f};
    explicit State(size_t count) : n(count), params(count), grads(count), m8(count), v8(count) {
        ms.assign(static_cast<size_t>(q8_blocks(static_cast<int64_t>(n))), 0.0f);
        vs = ms;
        std::mt19937 rng(7);
        std::normal_distribution<float> d(0.0f, 1.0f);
        for (size_t i = 0; i < n; ++i) params[i] = d(rng);
    }
    void new_grads(int seed) {
        std::mt19937 rng(static_cast<unsigned>(seed));
        std::normal_distribution<float> d(0.0f, 1.0f);
        // Magnitudes over six decades, so blocks hold large and tiny moments side by side.
        for (size_t i = 0; i < n; ++i) grads[i] = d(rng) * std::pow(10.0f, -static_cast<float>(i % 7));
    }
    ParamSegments segments() const {
        return ParamSegments{ends.data(), decay.data(), static_cast<int32_t>(ends.size())};
    }
};

}  // namespace

TEST(CpuAdamWQ8, FromZeroMomentsItIsAdamWBitwiseThenTheDecodedUpdate) {
    auto be = make_cpu_backend(2);
    const size_t n = 1301;
    State q(n);
    std::vector<float> p32 = q.params, m32(n, 0.0f), v32(n, 0.0f);
    const AdamWConfig hp{0.9f, 0.95f, 1e-8f};
    StepScalars s;
    s.lr = 1e-3f;
    s.clip_scale = 0.5f;
    for (int64_t step = 1; step <= 3; ++step) {
        s.step = step;
        q.new_grads(static_cast<int>(step));
        // The reference: decode, adamw (double), encode with the new scales.
        std::vector<double> ref_p(n), ref_m(n), ref_v(n);
        const double bc1 = 1.0 - std::pow(0.9f, static_cast<double>(step));
        const double bc2 = 1.0 - std::pow(0.95f, static_cast<double>(step));
        for (size_t i = 0; i < n; ++i) {
            const size_t b = i / kQ8Block;
            size_t sg = 0;
            while (static_cast<size_t>(q.ends[sg]) <= i) ++sg;
            const double g = static_cast<double>(q.grads[i]) * 0.5;
            const double m = q8_decode_m(tables(), q.m8[i], q.ms[b]) * 0.9 + (1 - 0.9) * g;
            const double v = q8_decode_v(tables(), q.v8[i], q.vs[b]) * 0.95 + (1 - 0.95) * g * g;
            ref_m[i] = m;
            ref_v[i] = v;
            ref_p[i] = q.params[i] * (1.0 - 1e-3 * q.decay[sg]) -
                       (1e-3 / bc1) * m / (std::sqrt(v) / std::sqrt(bc2) + 1e-8);
        }
        const std::vector<float> before = q.params;
        trt::optimizer_step_of(*be).adamw_step_q8(q.params.data(), q.grads.data(), q.m8.data(),
                                                  q.v8.data(), q.ms.data(), q.vs.data(), &tables(),
                                                  n, q.segments(), hp, &s);
        if (step == 1) {  // zero moments: exactly adamw_step
            trt::optimizer_step_of(*be).adamw_step(p32.data(), q.grads.data(), m32.data(),
                                                   v32.data(), n, q.segments(), hp, &s);
            ASSERT_EQ(std::memcmp(p32.data(), q.params.data(), n * sizeof(float)), 0);
        }
        for (size_t i = 0; i < n; ++i) {
            const size_t b = i / kQ8Block;
            ASSERT_NEAR(q.params[i], ref_p[i], 1e-6 * std::fabs(ref_p[i]) + 1e-9)
                << "step " << step << " element " << i;
            const double dm = q8_decode_m(tables(), q.m8[i], q.ms[b]);
            const double dv = q8_decode_v(tables(), q.v8[i], q.vs[b]);
            // Within half a code step (and a float's rounding) of the unquantized moments,
            // or zero when below the block's range.
            ASSERT_LE(std::fabs(dm - ref_m[i]), 0.045 * std::fabs(ref_m[i]) + 2e-5 * q.ms[b]) << i;
            ASSERT_LE(std::fabs(dv - ref_v[i]), 0.045 * ref_v[i] + 4e-10 * q.vs[b]) << i;
        }
        ASSERT_NE(before, q.params);
    }
    // A non-finite step changes nothing.
    s.nonfinite = 1;
    const State kept = q;
    trt::optimizer_step_of(*be).adamw_step_q8(q.params.data(), q.grads.data(), q.m8.data(),
                                              q.v8.data(), q.ms.data(), q.vs.data(), &tables(), n,
                                              q.segments(), hp, &s);
    EXPECT_EQ(kept.params, q.params);
    EXPECT_EQ(kept.m8, q.m8);
    EXPECT_EQ(kept.vs, q.vs);
}
