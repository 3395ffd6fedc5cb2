// cuDNN, loaded at run time: libtrainrt-cuda never links against it, so a machine without
// cuDNN still loads the module and simply runs the matmul attention (docs/CUDNN_ATTENTION.md).
//
// Search order: $TRAINRT_CUDNN_LIBRARY (a file path; when set it is the only candidate, and a
// failure there is reported, never papered over by another copy), else "libcudnn.so.9"
// through the dynamic linker (LD_LIBRARY_PATH, the module's runpath, ld.so.cache).
//
// Host-only C++: needs the cuDNN headers for types but neither the CUDA runtime nor cuDNN at
// link time (the CPU test tests/unit/cuda/cudnn_loader_test.cpp links it alone). Nothing here
// throws; every failure comes back as a sentence naming the path(s) tried and what went wrong.
#pragma once
#include <cudnn_graph.h>

#include <memory>
#include <string>

namespace trt::cuda {

// cuDNN 9.10.2, as cudnnGetVersion() encodes it (major*10000 + minor*100 + patch).
// Why this floor:
//  - the fused attention is built from backend descriptors as the classic SDPA op graph
//    (cudnn_attention.cpp); graphs of that shape run on every 9.x, but below 9.10 they need
//    version-specific detours this code does not carry: an fp32 dQ accumulator that the caller
//    must zero (< 9.6), a second padding select in the backward (9.0-9.9), FLT_LOWEST instead
//    of -inf as the mask value (< 9.10);
//  - 9.10.0 and 9.10.1 have known wrong-result bugs in the bf16/fp16 SDPA forward;
//  - the deployment target runs cuDNN 9.14.
constexpr long kMinCudnnVersion = 91002;
// Only the 9.x ABI is known (the loader asks for libcudnn.so.9): refuse 10.0 and later.
constexpr long kCudnnVersionLimit = 100000;

// version within [kMinCudnnVersion, kCudnnVersionLimit).
bool cudnn_version_ok(long version) noexcept;
// 91400 -> "9.14.0".
std::string cudnn_version_string(long version);

// Why a load failed (for callers and tests that act on the kind, not the sentence).
enum class CudnnLoadError { None, NotFound, MissingSymbol, TooOld };

// The entry points this project uses, resolved from one loaded libcudnn. Types come from the
// cuDNN headers, so a signature change shows up at compile time.
struct CudnnApi {
    std::string path;          // as passed to dlopen
    std::string file;          // the file the dynamic linker loaded (path when unknown)
    long version = 0;          // cudnnGetVersion()
    long cudart_version = 0;   // cudnnGetCudartVersion(): the CUDA it was built for
    decltype(&::cudnnGetVersion) GetVersion = nullptr;
    decltype(&::cudnnGetCudartVersion) GetCudartVersion = nullptr;
    decltype(&::cudnnGetErrorString) GetErrorString = nullptr;
    decltype(&::cudnnGetLastErrorString) GetLastErrorString = nullptr;
    decltype(&::cudnnCreate) Create = nullptr;
    decltype(&::cudnnDestroy) Destroy = nullptr;
    decltype(&::cudnnSetStream) SetStream = nullptr;
    decltype(&::cudnnBackendCreateDescriptor) BackendCreateDescriptor = nullptr;
    decltype(&::cudnnBackendDestroyDescriptor) BackendDestroyDescriptor = nullptr;
    decltype(&::cudnnBackendSetAttribute) BackendSetAttribute = nullptr;
    decltype(&::cudnnBackendGetAttribute) BackendGetAttribute = nullptr;
    decltype(&::cudnnBackendFinalize) BackendFinalize = nullptr;
    decltype(&::cudnnBackendExecute) BackendExecute = nullptr;

    // "cuDNN 9.19.0 (built for CUDA 13.1) from /usr/local/cuda/lib64/libcudnn.so.9", for logs.
    std::string describe() const;
};

// Loads exactly `path` (a file path or a bare soname for the dynamic linker) and resolves
// every entry point; not cached. nullptr with *why / *error on failure. The library is never
// dlclosed (loaded code may have registered process-wide state).
std::unique_ptr<CudnnApi> load_cudnn_from(const std::string& path, std::string* why,
                                          CudnnLoadError* error = nullptr) noexcept;

// The search order above (reads $TRAINRT_CUDNN_LIBRARY now); not cached.
std::unique_ptr<CudnnApi> load_cudnn(std::string* why, CudnnLoadError* error = nullptr) noexcept;

// load_cudnn() once per process (thread-safe); the same table or the same reason ever after.
const CudnnApi* cudnn_api(std::string* why) noexcept;

}  // namespace trt::cuda
