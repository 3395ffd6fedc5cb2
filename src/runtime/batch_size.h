// train.batch_size = "auto" and `trainrt plan --max-batch`: the largest micro-batch that fits.
// Two ways to decide "fits", by what the memory is:
//   - a backend with memory of its own (CUDA) allocates for real: a fresh backend holding the
//     model at that batch size (parameters, gradients, activations, the backend's scratch),
//     the AdamW moments and the resident train split; out of memory = too large;
//   - the host (the CPU backend; its allocator overcommits, so allocating proves nothing):
//     the estimate (runtime/model_info.h, within 5% of a real session) against a budget,
//     runtime.memory_limit or 90% of the machine's available memory.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "backend/backend.h"
#include "model/decoder.h"

namespace trt {

// The largest b in [1, hi] with fits(b), for fits monotone (true up to some b, false beyond);
// 0 when fits(1) is false. Doubling from 1, then bisection: about 2·log2(answer) calls.
int64_t largest_fitting(int64_t hi, const std::function<bool(int64_t)>& fits);

// What an estimate may use on this host: limit when > 0, else 90% of the memory the kernel
// reports available (Linux MemAvailable); 0 when that is unknown.
int64_t host_memory_budget(int64_t limit);

// What a session holds besides the model, the moments and the data (step scalars, the
// read-back ring, AdamW's segment tables, token staging): an allocation probe leaves it free.
constexpr size_t kSessionHeadroomBytes = size_t{1} << 20;

// Whether a micro-batch of B x T fits a fresh backend from `make`: the Decoder for spec at
// that size, the AdamW moments of its trainable tensors and `extra` bytes more. Only an
// Error(OutOfMemory) means false; any other error propagates. Everything is freed on return.
bool fits_by_allocation(const std::function<std::unique_ptr<Backend>()>& make,
                        const ModelSpec& spec, int B, int T, const DecoderOptions& options,
                        size_t extra);

}  // namespace trt
