// cuDNN run-time loader (cudnn_loader.h).
#include "backend/cuda/cudnn_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <new>
#include <string>

namespace trt::cuda {
namespace {

constexpr const char* kDefaultLibrary = "libcudnn.so.9";
constexpr const char* kEnvLibrary = "TRAINRT_CUDNN_LIBRARY";

// dlsym into a typed pointer; false (and the name in *missing) when the symbol is absent.
template <typename Fn>
bool resolve(void* handle, const char* name, Fn* fn, std::string* missing) {
    dlerror();  // clear a stale error so a null result is attributable
    void* p = dlsym(handle, name);
    if (!p) {
        if (missing->empty()) *missing = name;
        return false;
    }
    *fn = reinterpret_cast<Fn>(p);
    return true;
}

void set_error(CudnnLoadError* error, CudnnLoadError value) {
    if (error) *error = value;
}

std::unique_ptr<CudnnApi> load_from(const std::string& path, std::string* why,
                                    CudnnLoadError* error) {
    // RTLD_LOCAL: cuDNN's symbols stay out of the global namespace of the host process.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* e = dlerror();
        *why = "cannot load cuDNN from '" + path + "': " + (e ? e : "dlopen failed");
        set_error(error, CudnnLoadError::NotFound);
        return nullptr;
    }
    auto api = std::make_unique<CudnnApi>();
    api->path = path;
    std::string missing;
    bool ok = true;
    ok &= resolve(handle, "cudnnGetVersion", &api->GetVersion, &missing);
    ok &= resolve(handle, "cudnnGetCudartVersion", &api->GetCudartVersion, &missing);
    ok &= resolve(handle, "cudnnGetErrorString", &api->GetErrorString, &missing);
    ok &= resolve(handle, "cudnnGetLastErrorString", &api->GetLastErrorString, &missing);
    ok &= resolve(handle, "cudnnCreate", &api->Create, &missing);
    ok &= resolve(handle, "cudnnDestroy", &api->Destroy, &missing);
    ok &= resolve(handle, "cudnnSetStream", &api->SetStream, &missing);
    ok &= resolve(handle, "cudnnBackendCreateDescriptor", &api->BackendCreateDescriptor, &missing);
    ok &= resolve(handle, "cudnnBackendDestroyDescriptor", &api->BackendDestroyDescriptor,
                  &missing);
    ok &= resolve(handle, "cudnnBackendSetAttribute", &api->BackendSetAttribute, &missing);
    ok &= resolve(handle, "cudnnBackendGetAttribute", &api->BackendGetAttribute, &missing);
    ok &= resolve(handle, "cudnnBackendFinalize", &api->BackendFinalize, &missing);
    ok &= resolve(handle, "cudnnBackendExecute", &api->BackendExecute, &missing);
    if (!ok) {
        // Not dlclosed: an arbitrary library may not support being unloaded.
        *why = "'" + path + "' is not a usable cuDNN library: it does not export " + missing;
        set_error(error, CudnnLoadError::MissingSymbol);
        return nullptr;
    }
    Dl_info info{};
    const bool located = dladdr(reinterpret_cast<const void*>(api->GetVersion), &info) != 0;
    api->file = located && info.dli_fname ? info.dli_fname : path;
    api->version = static_cast<long>(api->GetVersion());
    api->cudart_version = static_cast<long>(api->GetCudartVersion());
    if (!cudnn_version_ok(api->version)) {
        *why = "cuDNN at '" + path + "' is version " + cudnn_version_string(api->version) +
               (api->version < kMinCudnnVersion
                    ? " < min " + cudnn_version_string(kMinCudnnVersion)
                    : std::string(" (only 9.x is supported)"));
        set_error(error, CudnnLoadError::TooOld);
        return nullptr;
    }
    set_error(error, CudnnLoadError::None);
    return api;
}

}  // namespace

bool cudnn_version_ok(long version) noexcept {
    return version >= kMinCudnnVersion && version < kCudnnVersionLimit;
}

std::string cudnn_version_string(long version) {
    if (version < 0) return std::to_string(version);
    return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
           std::to_string(version % 100);
}

std::string CudnnApi::describe() const {
    // cudnnGetCudartVersion encodes major*1000 + minor*10, like CUDART_VERSION.
    const std::string cuda =
        std::to_string(cudart_version / 1000) + "." + std::to_string(cudart_version % 1000 / 10);
    return "cuDNN " + cudnn_version_string(version) + " (built for CUDA " + cuda + ") from " +
           file;
}

std::unique_ptr<CudnnApi> load_cudnn_from(const std::string& path, std::string* why,
                                          CudnnLoadError* error) noexcept {
    std::string local;
    std::string& w = why ? *why : local;
    try {
        return load_from(path, &w, error);
    } catch (const std::bad_alloc&) {
        w = "out of host memory while loading cuDNN from '" + path + "'";
    } catch (...) {
        w = "unexpected failure while loading cuDNN from '" + path + "'";
    }
    set_error(error, CudnnLoadError::NotFound);
    return nullptr;
}

std::unique_ptr<CudnnApi> load_cudnn(std::string* why, CudnnLoadError* error) noexcept {
    std::string local;
    std::string& w = why ? *why : local;
    const char* env = std::getenv(kEnvLibrary);
    if (env && *env) {
        auto api = load_cudnn_from(env, &w, error);
        if (!api) {
            try {
                w = std::string(kEnvLibrary) + "=" + env + ": " + w +
                    " (no other location is tried while it is set; unset it to use " +
                    kDefaultLibrary + " from the dynamic linker's search path)";
            } catch (...) {
            }
        }
        return api;
    }
    auto api = load_cudnn_from(kDefaultLibrary, &w, error);
    if (!api) {
        try {
            w += " (install cuDNN 9, put its lib folder on LD_LIBRARY_PATH, or set " +
                 std::string(kEnvLibrary) + " to the library file)";
        } catch (...) {
        }
    }
    return api;
}

const CudnnApi* cudnn_api(std::string* why) noexcept {
    // A function-local static is initialised once, thread-safely, and never destroyed before
    // other statics that may still call into cuDNN: leak it on purpose.
    struct Loaded {
        const CudnnApi* api = nullptr;
        std::string why;
    };
    static const Loaded* loaded = [] {
        auto* l = new (std::nothrow) Loaded;
        if (l) l->api = load_cudnn(&l->why).release();
        return l;
    }();
    if (!loaded) {
        if (why) *why = "out of host memory while loading cuDNN";
        return nullptr;
    }
    if (!loaded->api && why) {
        try {
            *why = loaded->why;
        } catch (...) {
        }
    }
    return loaded->api;
}

}  // namespace trt::cuda
