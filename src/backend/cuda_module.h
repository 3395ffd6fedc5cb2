// The one meeting point of libtrainrt (core) and libtrainrt-cuda (module): a C entry point
// returning a versioned table. The core checks struct_size, abi and the backend interface
// version before using anything else in it, and refuses a mismatch with a clear error.
// The backend object itself crosses as a trt::Backend* (C++): both sides must be built from
// the same backend.h, which is what backend_interface pins (kBackendInterfaceVersion).
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace trt {

constexpr uint32_t kCudaModuleAbi = 1;  // layout of CudaModuleTable

struct CudaDeviceInfo {
    char name[256];
    int32_t ordinal;
    int32_t sm_major, sm_minor;
    int32_t multiprocessors;
    uint64_t total_bytes, free_bytes;
    int32_t driver_version, runtime_version;  // CUDA versions, e.g. 13000
};

struct CudaModuleTable {
    uint32_t struct_size;         // sizeof(CudaModuleTable) in the module
    uint32_t abi;                 // kCudaModuleAbi
    uint32_t backend_interface;   // kBackendInterfaceVersion the module was built with
    uint32_t reserved;
    const char* trainrt_version;  // trt::kVersionString of the module's build
    const char* build_info;       // CUDA toolkit version and architectures, for logs
    // Fills *info for device `ordinal`. Returns 0, or non-zero with a message in err (never
    // throws): "no CUDA-capable device", driver too old, ...
    int (*probe)(int ordinal, CudaDeviceInfo* info, char* err, size_t err_cap);
    // Creates the backend (caller owns it; delete through Backend's virtual destructor, which
    // runs in the module). Returns nullptr with err filled and *status set (a trainrt_status)
    // on failure; never throws.
    Backend* (*create_backend)(const BackendOptions* options, int32_t* status, char* err,
                               size_t err_cap);
};

}  // namespace trt

extern "C" {
// Exported by libtrainrt-cuda.so (packaging/libtrainrt-cuda.map); the name carries the ABI.
typedef const trt::CudaModuleTable* (*trainrt_cuda_module_fn)(void);
__attribute__((visibility("default"))) const trt::CudaModuleTable* trainrt_cuda_module_v1(void);
}
