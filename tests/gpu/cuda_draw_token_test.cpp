// draw_token on CUDA (kernels/draw_token.cu) against the host's draw (core/token_draw.h,
// what sample_token runs): the same token from the same logits, for fp32 and bf16
// activations, vocabularies from 1 to Llama 3's 128,256, greedy and sampled, every top-k
// regime (1, a few, the radix-sorted whole row), ties, signed zeros and a wide range; and the
// non-finite flag. The exponentials are the one thing the two sides do not share (libm's and
// CUDA's exp may differ in the last bit), which can move a draw only when u lands within
// ~1e-16 of a boundary: no such case is expected among these draws, so any difference fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/token_draw.h"
#include "gpu_test_util.h"

namespace {

using trt::Precision;

struct Row {
    std::vector<float> logits;  // as the backend stores them (bf16-rounded for bf16 acts)
    std::vector<uint16_t> bf16;
};

// Normal logits (shape 0), rounded to integers (1: many ties), zeros of both signs among
// rounded values (2), a wide range (3).
Row make_row(int V, int shape, std::mt19937& rng, bool bf16) {
    Row r;
    r.logits.resize(static_cast<size_t>(V));
    std::normal_distribution<float> normal(0.0f, shape == 3 ? 30.0f : 2.0f);
    for (int i = 0; i < V; ++i) {
        float x = normal(rng);
        if (shape == 1) x = std::round(x);
        if (shape == 2) x = (i % 3 == 0) ? 0.0f : (i % 3 == 1 ? -0.0f : std::round(x));
        r.logits[static_cast<size_t>(i)] = x;
    }
    if (bf16) {
        r.bf16.resize(r.logits.size());
        for (size_t i = 0; i < r.logits.size(); ++i) {
            r.bf16[i] = trt::float_to_bf16(r.logits[i]);
            r.logits[i] = trt::bf16_to_float(r.bf16[i]);
        }
    }
    return r;
}

class CudaDrawToken : public ::testing::TestWithParam<Precision> {
protected:
    void SetUp() override {
        trt::AccelOptions accel;
        accel.lowp_activations = true;  // bf16: logits stored in bf16, as the model keeps them
        TRT_CUDA_BACKEND_WITH_OR_SKIP(cuda_, GetParam(), accel);
        gpu::Cover cover;
        cover.add(1, 1, 8, 1, kMaxV);
        cuda_->reserve(cover.dims());
        bf16_ = cuda_->activation_dtype() == trt::DType::BF16;
        logits_ = cuda_->alloc(sizeof(float) * kMaxV, "logits");
        out_ = static_cast<int32_t*>(cuda_->alloc(2 * sizeof(int32_t), "draw"));
    }
    void TearDown() override {
        if (cuda_) {
            cuda_->free(logits_);
            cuda_->free(out_);
        }
    }
    // The token and flag CUDA draws from row r.
    std::pair<int32_t, int32_t> draw(const Row& r, const trt::TokenDraw& d) {
        const int V = static_cast<int>(r.logits.size());
        if (bf16_)
            cuda_->copy_to_device(logits_, r.bf16.data(), r.bf16.size() * sizeof(uint16_t));
        else
            cuda_->copy_to_device(logits_, r.logits.data(), r.logits.size() * sizeof(float));
        cuda_->draw_token(out_, trt::ConstAct(logits_, cuda_->activation_dtype()), V, d);
        int32_t got[2] = {-1, -1};
        cuda_->copy_to_host(got, out_, sizeof got);
        return {got[0], got[1]};
    }

    static constexpr int kMaxV = 128256;
    std::unique_ptr<trt::Backend> cuda_;
    bool bf16_ = false;
    void* logits_ = nullptr;
    int32_t* out_ = nullptr;
};

TEST_P(CudaDrawToken, DrawsTheHostsToken) {
    std::mt19937 rng(5);
    int draws = 0;
    for (int V : {1, 2, 7, 256, 1000, 50257, kMaxV}) {
        for (int shape = 0; shape < 4; ++shape) {
            const Row r = make_row(V, shape, rng, bf16_);
            for (double temperature : {0.0, 0.8, 5.0}) {
                for (int top_k : {0, 1, 5, 40, V - 1, V}) {
                    if (temperature == 0.0 && top_k != 0) continue;  // greedy ignores it
                    trt::TokenDraw d;
                    d.temperature = temperature;
                    d.top_k = std::max(0, top_k);
                    d.seed = 11 + static_cast<uint64_t>(V);
                    for (uint64_t index = 0; index < (V > 1000 ? 4u : 12u); ++index) {
                        d.index = index;
                        const int32_t want = trt::draw_token_on_host(r.logits.data(), V, d);
                        const auto got = draw(r, d);
                        ASSERT_EQ(got.second, 0) << "V " << V << " shape " << shape;
                        ASSERT_EQ(got.first, want)
                            << "V " << V << " shape " << shape << " temperature " << temperature
                            << " top_k " << top_k << " draw " << index;
                        ++draws;
                    }
                }
            }
        }
    }
    std::printf("[  draws   ] %d draws, every one the host's token (%s)\n", draws,
                bf16_ ? "bf16 logits" : "fp32 logits");
}

TEST_P(CudaDrawToken, FlagsANonFiniteLogit) {
    std::mt19937 rng(6);
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity()}) {
        Row r = make_row(50257, 0, rng, bf16_);
        r.logits[31337] = bad;
        if (bf16_) r.bf16[31337] = trt::float_to_bf16(bad);
        for (double temperature : {0.0, 1.0}) {
            trt::TokenDraw d;
            d.temperature = temperature;
            const auto got = draw(r, d);
            EXPECT_EQ(got.second, 1) << bad << " at temperature " << temperature;
            EXPECT_EQ(got.first, 0) << bad << " at temperature " << temperature;
        }
    }
    // The flag does not stick: the next row is drawn.
    const Row ok = make_row(300, 0, rng, bf16_);
    trt::TokenDraw d;
    d.temperature = 0.0;
    const auto got = draw(ok, d);
    EXPECT_EQ(got.second, 0);
    EXPECT_EQ(got.first, trt::draw_token_on_host(ok.logits.data(), 300, d));
}

INSTANTIATE_TEST_SUITE_P(Precision, CudaDrawToken,
                         ::testing::Values(Precision::Fp32, Precision::Bf16),
                         [](const ::testing::TestParamInfo<Precision>& i) {
                             return std::string(trt::to_string(i.param));
                         });

}  // namespace
