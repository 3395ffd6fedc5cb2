// Creating the backend a run asks for: runtime.device = cpu | cuda | auto. The CUDA backend
// lives in the separately built module libtrainrt-cuda.so (cuda_module.h), loaded on first
// use and never unloaded; the core itself has no link dependency on CUDA.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"
#include "config/run_config.h"

namespace trt {

// Loads libtrainrt-cuda and creates a CUDA backend. Throws Error: Unsupported when the
// module cannot be found or loaded (the message lists the paths tried and dlerror), or no
// CUDA device is present; VersionMismatch when the module was built for another core;
// Device / OutOfMemory for failures creating the context. Search order: $TRAINRT_CUDA_MODULE
// (a file path), then libtrainrt-cuda.so next to the file holding libtrainrt's code, then
// the dynamic linker's search path.
std::unique_ptr<Backend> load_cuda_backend(const BackendOptions& options);

// True when libtrainrt-cuda is found, loads and matches this core (no device is touched).
// Never throws.
bool cuda_module_loadable() noexcept;
// True when, in addition, CUDA device `device` can be used (the module's probe: what
// runtime.device = "auto" decides by). Never throws.
bool cuda_device_usable(int device) noexcept;

// The backend for a run, and what it resolved to.
struct BackendSelection {
    std::unique_ptr<Backend> backend;
    Precision precision = Precision::Fp32;  // resolved (auto: fp32 on CPU, bf16 on CUDA)
    std::string fallback_reason;            // non-empty: device = auto fell back to CPU (why)
};
// device = cuda: the CUDA backend or an Error; cpu: the CPU backend (fp32, bf16, fp16); auto: CUDA
// when it loads, else CPU with fallback_reason set (the session logs it once).
BackendSelection select_backend(const RunConfig& run);

}  // namespace trt
