// Throughput arithmetic: model FLOPs per token, the peak FLOP rate of a device, MFU and
// step-time percentiles. Pure functions of their arguments (bench/README.md states the
// formula; SessionMetrics and `trainrt bench` report what they compute).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace trt {

// Training FLOPs per token of a GPT-2 model: 6N + 6·L·C·T.
//   6N     forward (2N) + backward (4N) through every parameter once per token; N counts
//          all parameters, embeddings included (the tied wte is also the classifier);
//   6·L·C·T attention scores and weighted sums, which hold no parameters: Q·Kᵀ and P·V
//          cost 2·T·C FLOPs each per layer and token forward over the full T×T square,
//          halved by the causal mask -> 2·L·C·T forward, x3 with the backward (Kaplan et
//          al. 2020, §2.1; llm.c's estimate uses the same expression). T is the sequence
//          length trained on (train.seq_len).
double flops_per_token(int64_t n_params, int64_t L, int64_t C, int64_t T);

// Dense (no structured sparsity) peak FLOP/s of one device for matmuls in `precision`,
// from a table of vendor datasheet figures keyed on the device's name as the backend
// reports it (e.g. "NVIDIA H100 80GB HBM3"); case-insensitive substring match. 0 when the
// device or the precision is not in the table: the CPU, unknown GPUs, Precision::Auto.
double peak_flops(const std::string& device_name, Precision precision);

// Peak memory bandwidth of one device in bytes/s (datasheet, DRAM/HBM), keyed like
// peak_flops; 0 when unknown (the CPU, unknown GPUs). The roofline floor of an op is
// max(FLOPs / peak_flops, bytes / peak_bytes_per_s) (the profile's "floor").
double peak_bytes_per_s(const std::string& device_name);

// Model FLOPs utilisation: achieved model FLOP/s over the peak. 0 when peak <= 0 (unknown).
// Normally in [0, 1]; above 1 means the peak is wrong (e.g. runtime.peak_tflops set low).
double mfu(double tokens_per_s, double flops_per_token, double peak_flops);

// Nearest-rank percentile (no interpolation): the smallest sample x such that at least
// q·n samples are <= x, i.e. sorted[ceil(q·n) - 1]; q is clamped to [0, 1] and q = 0 gives
// the minimum. 0 for an empty sample. The same rule as SessionMetrics' step_ms_p50/p95.
double percentile(std::vector<double> samples, double q);

}  // namespace trt
