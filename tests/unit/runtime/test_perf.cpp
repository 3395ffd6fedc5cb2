// Throughput arithmetic (src/runtime/perf.h): FLOPs per token against hand-computed GPT-2
// figures and model_info, the peak table's lookups, MFU, nearest-rank percentiles.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/backend.h"
#include "runtime/model_info.h"
#include "model/param_table.h"
#include "runtime/perf.h"

using namespace trt;

// ---------------------------------------------------------------- FLOPs per token

TEST(Perf, FlopsPerTokenOfGpt2SmallByHand) {
    // GPT-2 124M: N = 124,439,808 (tied wte 50257x768, wpe 1024x768), L12 C768, T = 1024.
    // 6N = 746,638,848; 6·L·C·T = 6·12·768·1024 = 56,623,104.
    EXPECT_DOUBLE_EQ(flops_per_token(124439808, 12, 768, 1024), 803261952.0);
}

TEST(Perf, FlopsPerTokenTermsAreSeparate) {
    EXPECT_DOUBLE_EQ(flops_per_token(1000, 0, 768, 1024), 6000.0);      // 6N alone
    EXPECT_DOUBLE_EQ(flops_per_token(0, 2, 3, 5), 180.0);               // 6·L·C·T alone
    EXPECT_DOUBLE_EQ(flops_per_token(0, 2, 3, 10), 2 * 180.0);          // linear in T
    // No 32-bit overflow in L·C·T for large shapes.
    EXPECT_DOUBLE_EQ(flops_per_token(0, 96, 12288, 8192), 6.0 * 96 * 12288 * 8192);
}

TEST(Perf, FlopsPerTokenAgreesWithModelInfo) {
    // model_info (trainrt info, trainrt_config_model_info) must report the same figure for
    // the parameter count it computes.
    const ModelSpec tiny = gpt2_spec(256, 256, 6, 6, 384);
    const ModelSpec gpt2 = gpt2_spec(50257, 1024, 12, 12, 768);
    auto be = make_cpu_backend(1);
    for (const ModelSpec& s : {tiny, gpt2}) {
        const int T = s.maxT;
        const ModelInfo m = model_info(s, 2, T, *be);
        EXPECT_DOUBLE_EQ(m.flops_per_token, flops_per_token(m.parameters, s.L, s.C, T))
            << "V" << s.V << " L" << s.L;
    }
    EXPECT_EQ(model_info(gpt2, 1, 1024, *be).parameters, 124439808);
}

// ---------------------------------------------------------------- peak table

TEST(Perf, PeakOfH100SxmByPrecision) {
    const std::string h100 = "NVIDIA H100 80GB HBM3";  // what the SXM part reports
    EXPECT_DOUBLE_EQ(peak_flops(h100, Precision::Bf16), 989.4e12);
    EXPECT_DOUBLE_EQ(peak_flops(h100, Precision::Fp16), 989.4e12);
    EXPECT_DOUBLE_EQ(peak_flops(h100, Precision::Tf32), 494.7e12);
    EXPECT_DOUBLE_EQ(peak_flops(h100, Precision::Fp32), 66.9e12);
    EXPECT_DOUBLE_EQ(peak_flops(h100, Precision::Auto), 0.0);  // unresolved: unknown
}

TEST(Perf, PeakTableRows) {
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA H100 PCIe", Precision::Bf16), 756e12);
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA H100 PCIe", Precision::Tf32), 378e12);
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA H100 PCIe", Precision::Fp32), 51e12);
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA H200", Precision::Bf16), 989.4e12);
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA A100-SXM4-80GB", Precision::Bf16), 312e12);
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA A100-PCIE-40GB", Precision::Tf32), 156e12);
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA A100 80GB PCIe", Precision::Fp32), 19.5e12);
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA L40S", Precision::Bf16), 362.05e12);
    EXPECT_DOUBLE_EQ(peak_flops("NVIDIA GeForce RTX 4090", Precision::Bf16), 165.2e12);
    EXPECT_DOUBLE_EQ(peak_flops("nvidia h100 80gb hbm3", Precision::Bf16), 989.4e12)
        << "the match ignores case";
}

TEST(Perf, PeakIsZeroWhenUnknown) {
    EXPECT_EQ(peak_flops("cpu", Precision::Fp32), 0.0);
    EXPECT_EQ(peak_flops("", Precision::Bf16), 0.0);
    EXPECT_EQ(peak_flops("NVIDIA GeForce GTX 1080", Precision::Fp32), 0.0);
    // Same family, other clocks: left out rather than given the SXM figure.
    EXPECT_EQ(peak_flops("NVIDIA H100 NVL", Precision::Bf16), 0.0);
    EXPECT_EQ(peak_flops("NVIDIA L40", Precision::Bf16), 0.0);
}

// The bandwidth table (the profile's roofline): each row, and unknown names give 0.
TEST(Perf, PeakBandwidthRows) {
    const struct {
        const char* name;
        double gbs;
    } rows[] = {
        {"NVIDIA H100 80GB HBM3", 3350},
        {"NVIDIA H100 PCIe", 2000},
        {"NVIDIA H200", 4800},
        {"NVIDIA A100-SXM4-80GB", 2039},
        {"NVIDIA A100 80GB PCIe", 1935},
        {"NVIDIA A100-SXM4-40GB", 1555},
        {"NVIDIA A100-PCIE-40GB", 1555},
        {"NVIDIA L40S", 864},
        {"NVIDIA GeForce RTX 4090", 1008},
        // unknown: other clocks of the same family, the CPU
        {"NVIDIA H100 NVL", 0},
        {"NVIDIA H200 NVL", 0},
        {"cpu", 0},
        {"", 0},
    };
    for (const auto& r : rows) EXPECT_DOUBLE_EQ(peak_bytes_per_s(r.name), r.gbs * 1e9) << r.name;
}

// ---------------------------------------------------------------- MFU

TEST(Perf, MfuIsAchievedOverPeak) {
    // 500k tok/s of GPT-2 124M on an H100 in bf16: 500e3 · 803261952 / 989.4e12 ≈ 0.406.
    EXPECT_NEAR(mfu(500e3, 803261952.0, 989.4e12), 0.40593, 1e-5);
    EXPECT_DOUBLE_EQ(mfu(1.0, 2.0, 4.0), 0.5);
    EXPECT_EQ(mfu(500e3, 803261952.0, 0.0), 0.0) << "unknown peak -> 0";
    EXPECT_EQ(mfu(500e3, 803261952.0, -1.0), 0.0);
    EXPECT_EQ(mfu(500e3, 803261952.0, std::numeric_limits<double>::quiet_NaN()), 0.0);
}

// ---------------------------------------------------------------- percentiles

TEST(Perf, PercentileIsNearestRank) {
    const std::vector<double> x = {5, 1, 4, 2, 3};  // unsorted on purpose
    EXPECT_EQ(percentile(x, 0.0), 1.0);
    EXPECT_EQ(percentile(x, 0.2), 1.0);   // ceil(1.0) = rank 1
    EXPECT_EQ(percentile(x, 0.21), 2.0);  // ceil(1.05) = rank 2
    EXPECT_EQ(percentile(x, 0.5), 3.0);   // ceil(2.5) = rank 3: the median
    EXPECT_EQ(percentile(x, 0.95), 5.0);
    EXPECT_EQ(percentile(x, 1.0), 5.0);
    // Even count: nearest rank takes the lower middle, no interpolation.
    EXPECT_EQ(percentile({10, 20, 30, 40}, 0.5), 20.0);
    EXPECT_EQ(percentile({10, 20, 30, 40}, 0.95), 40.0);
}

TEST(Perf, PercentileOf100SamplesAndRounding) {
    std::vector<double> x;
    for (int i = 100; i >= 1; --i) x.push_back(i);  // 1..100, reversed
    EXPECT_EQ(percentile(x, 0.50), 50.0);
    EXPECT_EQ(percentile(x, 0.95), 95.0);
    EXPECT_EQ(percentile(x, 0.07), 7.0) << "0.07 * 100 is 7.000000000000001 in double";
    EXPECT_EQ(percentile(x, 0.99), 99.0);
}

TEST(Perf, PercentileEdgeCases) {
    EXPECT_EQ(percentile({}, 0.5), 0.0);
    EXPECT_EQ(percentile({7}, 0.0), 7.0);
    EXPECT_EQ(percentile({7}, 0.95), 7.0);
    EXPECT_EQ(percentile({1, 2, 3}, -1.0), 1.0);  // clamped
    EXPECT_EQ(percentile({1, 2, 3}, 2.0), 3.0);
    EXPECT_EQ(percentile({1, 2, 3}, std::numeric_limits<double>::quiet_NaN()), 1.0);
}
