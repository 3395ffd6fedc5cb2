// Size limits: the upper bound of every integer config key, and the check of the sizes formed
// from several keys — in one place, so that no shape reaching the runtime can overflow.
//
// Why these numbers: shapes reach the model and the kernels as `int` (row and column indices
// are 32-bit, BLAS and cuBLAS take int dimensions), so every dimension and every row count
// (B*T) must fit an int32; everything formed from them (parameter and activation counts,
// bytes) is computed in int64/size_t, which the byte limit below keeps far from overflowing.
// Counts of steps are bounded so that step arithmetic (step + n, step * tokens) stays exact.
// docs/CONFIG.md lists the same bounds.
#pragma once
#include <cstdint>
#include <string>

namespace trt {

struct RunConfig;

namespace limits {

constexpr int64_t kMaxVocab = 2147483520;              // 2^31 - 128: padded to 128, an int
constexpr int64_t kMaxContext = int64_t{1} << 24;      // rows of wpe; positions are int
constexpr int64_t kMaxLayers = 16384;                  // per-layer tables stay small
constexpr int64_t kMaxHeads = 65536;
constexpr int64_t kMaxWidth = int64_t{1} << 20;        // d_model; 4*d_model stays an int
constexpr int64_t kMaxMlpWidth = int64_t{1} << 22;     // d_ff; 2*d_ff (gate|up) is an int
constexpr int64_t kMaxBatch = int64_t{1} << 24;        // B
constexpr int64_t kMaxGradAccum = int64_t{1} << 20;    // micro-batches per step
constexpr int64_t kMaxSteps = int64_t{1} << 40;        // steps, intervals, eval batches
constexpr int64_t kMaxKeepLast = int64_t{1} << 20;
constexpr int64_t kMaxThreads = 4096;
constexpr int64_t kMaxLoraRank = 65536;
constexpr int64_t kMaxInflight = 1024;
constexpr int64_t kMaxMemoryLimit = int64_t{1} << 52;  // runtime.memory_limit, bytes
constexpr int64_t kMaxDistTimeout = 604800;            // dist.timeout, seconds (a week)
// train.batch_size = "auto" searches at most up to this many rows per micro-batch.
constexpr int64_t kMaxAutoBatch = 4096;
constexpr int64_t kMaxRows = 2147483647;               // B*T: rows of every activation
constexpr double kMaxBytes = 4503599627370496.0;       // 2^52 bytes (4 PiB), see below
// Float keys reach fp32 kernels: each must be a finite float (FLT_MAX).
constexpr double kMaxFloat = 3.4028234663852886e38;

// Memory a run of this config needs at least (parameters, gradients, AdamW m and v, and
// the activations of one micro-batch), in bytes — an estimate in double, used only to refuse
// shapes no machine can hold before any int64 product could overflow. Smaller shapes that
// do not fit still fail cleanly, later, as OUT_OF_MEMORY from the allocator.
double estimated_bytes(const RunConfig& r);

// "" when the shapes formed from several keys fit the limits above; else the problem, naming
// the keys and what to lower.
std::string size_problem(const RunConfig& r);

}  // namespace limits
}  // namespace trt
