#include "runtime/perf.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace trt {

double flops_per_token(int64_t n_params, int64_t L, int64_t C, int64_t T) {
    return 6.0 * static_cast<double>(n_params) +
           6.0 * static_cast<double>(L) * static_cast<double>(C) * static_cast<double>(T);
}

namespace {

// Dense tensor-core TFLOP/s per precision (bf16 and fp16 alike, fp32 accumulate), from the
// vendors' datasheets, whose headline numbers are "with sparsity" (2x these).
struct PeakRow {
    const char* must_contain;      // lower case
    const char* must_not_contain;  // lower case; "" = nothing excluded
    double bf16, tf32, fp32;       // TFLOP/s
};

// First match wins, so narrower names come first. H100/H200 NVL and L40 (non-S) have
// other clocks and are deliberately absent (0 = unknown, never a wrong figure).
constexpr PeakRow kPeaks[] = {
    // NVIDIA H100 PCIe datasheet: 1,513 / 756 TFLOPS sparse bf16 / tf32, fp32 51.
    {"h100 pcie", "", 756.0, 378.0, 51.0},
    // H100 SXM5 (reports as "NVIDIA H100 80GB HBM3"): 1,979 / 989 sparse, fp32 67 (66.9).
    {"h100", "nvl", 989.4, 494.7, 66.9},
    // H200 SXM: the H100 SXM's compute with more, faster memory.
    {"h200", "nvl", 989.4, 494.7, 66.9},
    // A100 (SXM4 and PCIe, 40/80 GB): 312 / 156 dense, fp32 19.5.
    {"a100", "", 312.0, 156.0, 19.5},
    // L40S datasheet: 733 / 366 TFLOPS sparse bf16 / tf32, fp32 91.6.
    {"l40s", "", 362.05, 183.0, 91.6},
    // RTX 4090 (Ada whitepaper, GeForce: fp32 accumulate at half the fp16-accumulate rate):
    // 165.2 bf16/fp16, tf32 82.6, fp32 82.6.
    {"rtx 4090", "", 165.2, 82.6, 82.6},
};

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

}  // namespace

double peak_flops(const std::string& device_name, Precision precision) {
    const std::string name = lower(device_name);
    for (const PeakRow& row : kPeaks) {
        if (name.find(row.must_contain) == std::string::npos) continue;
        if (row.must_not_contain[0] != '\0' && name.find(row.must_not_contain) != std::string::npos)
            continue;
        switch (precision) {
            case Precision::Bf16:
            case Precision::Fp16: return row.bf16 * 1e12;
            case Precision::Tf32: return row.tf32 * 1e12;
            case Precision::Fp32: return row.fp32 * 1e12;
            case Precision::Auto: return 0.0;
        }
        return 0.0;
    }
    return 0.0;
}

namespace {

// Datasheet memory bandwidth, GB/s. A name matches when it holds both strings (`also` "" =
// nothing more) and not `without`; first match wins, so narrower names come first.
struct BandwidthRow {
    const char* must_contain;
    const char* also;
    const char* must_not_contain;
    double gbs;
};
constexpr BandwidthRow kBandwidths[] = {
    {"h100 pcie", "", "", 2000.0},     // H100 PCIe 80GB: 2 TB/s HBM2e
    {"h100", "", "nvl", 3350.0},       // H100 SXM5: 3.35 TB/s HBM3
    {"h200", "", "nvl", 4800.0},       // H200 SXM: 4.8 TB/s HBM3e
    {"a100", "80gb", "pcie", 2039.0},  // A100 SXM4 80GB
    {"a100", "80gb", "", 1935.0},      // A100 PCIe 80GB
    {"a100", "", "", 1555.0},          // A100 40GB (SXM4 and PCIe)
    {"l40s", "", "", 864.0},           // L40S: 864 GB/s GDDR6
    {"rtx 4090", "", "", 1008.0},      // RTX 4090: 1,008 GB/s GDDR6X
};

}  // namespace

double peak_bytes_per_s(const std::string& device_name) {
    const std::string name = lower(device_name);
    auto has = [&](const char* s) { return s[0] == '\0' || name.find(s) != std::string::npos; };
    for (const BandwidthRow& row : kBandwidths) {
        if (!has(row.must_contain) || !has(row.also)) continue;
        if (row.must_not_contain[0] != '\0' && has(row.must_not_contain)) continue;
        return row.gbs * 1e9;
    }
    return 0.0;
}

double mfu(double tokens_per_s, double flops_per_token, double peak_flops) {
    if (!(peak_flops > 0)) return 0.0;
    return tokens_per_s * flops_per_token / peak_flops;
}

double percentile(std::vector<double> samples, double q) {
    if (samples.empty()) return 0.0;
    std::sort(samples.begin(), samples.end());
    const double qc = q > 0 ? std::min(q, 1.0) : 0.0;  // NaN -> 0
    // 1-based rank; the 1e-9 keeps a product like 0.07 * 100 = 7.000000000000001 at 7.
    const double rank = std::ceil(qc * static_cast<double>(samples.size()) - 1e-9);
    const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
    return samples[std::min(i, samples.size() - 1)];
}

}  // namespace trt
