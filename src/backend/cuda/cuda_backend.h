// CudaBackend: the Backend interface on one CUDA device. Device memory (tracked, one
// allocation per buffer, all made at session creation), a compute stream and a copy stream,
// the cuBLASLt handle and workspace, the bf16/fp16 working copy of the parameters, the
// read-back ring of StepScalars, and dispatch to the launchers of cuda_ops.h.
#pragma once
#include <memory>

#include "backend/backend.h"

namespace trt::cuda {

// Throws Error (Unsupported: no device / too old; Device; OutOfMemory).
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace trt::cuda
