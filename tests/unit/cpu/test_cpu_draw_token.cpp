// draw_token on the CPU backend (backend_ops.def): the token the host's draw gives from the
// same logits (core/token_draw.h, what sample_token runs; fp32, and bf16 activations widened
// first, so the draw sees the stored values), and the non-finite flag. The CUDA twin is checked
// against the same host draw in tests/gpu/cuda_draw_token_test.cpp; the op's cost in
// tests/unit/model/test_op_profiler.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "core/bf16.h"
#include "core/token_draw.h"

namespace trt {
namespace {

std::vector<float> logits_row(int V, uint32_t seed, float spread) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, spread);
    std::vector<float> v(static_cast<size_t>(V));
    for (float& x : v) x = normal(rng);
    return v;
}

TEST(CpuDrawToken, DrawsSampleTokensTokenInFp32AndBf16) {
    for (Precision p : {Precision::Fp32, Precision::Bf16}) {
        auto be = make_cpu_backend(1, p);
        const bool bf16 = be->activation_dtype() == DType::BF16;
        for (int V : {1, 3, 256, 50257}) {
            std::vector<float> row = logits_row(V, 7u + static_cast<uint32_t>(V), 3.0f);
            std::vector<uint16_t> stored(row.size());
            if (bf16)
                for (size_t i = 0; i < row.size(); ++i) {
                    stored[i] = float_to_bf16(row[i]);
                    row[i] = bf16_to_float(stored[i]);  // what the draw must see
                }
            const ConstAct act = bf16 ? ConstAct(stored.data(), DType::BF16) : ConstAct(row.data());
            for (double temperature : {0.0, 0.7, 2.0})
                for (int top_k : {0, 1, 10}) {
                    TokenDraw d;
                    d.temperature = temperature;
                    d.top_k = top_k;
                    d.seed = 99;
                    for (uint64_t index = 0; index < 8; ++index) {
                        d.index = index;
                        int32_t out[2] = {-1, -1};
                        be->draw_token(out, act, V, d);
                        EXPECT_EQ(out[1], 0);
                        EXPECT_EQ(out[0], draw_token_on_host(row.data(), V, d))
                            << (bf16 ? "bf16" : "fp32") << " V " << V << " t " << temperature
                            << " k " << top_k << " draw " << index;
                    }
                }
        }
    }
}

TEST(CpuDrawToken, FlagsANonFiniteLogit) {
    auto be = make_cpu_backend(1);
    std::vector<float> row = logits_row(100, 3, 1.0f);
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        row[42] = bad;
        int32_t out[2] = {-1, -1};
        TokenDraw d;
        be->draw_token(out, ConstAct(row.data()), 100, d);
        EXPECT_EQ(out[0], 0);
        EXPECT_EQ(out[1], 1);
    }
}

}  // namespace
}  // namespace trt
