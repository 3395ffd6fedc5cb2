// Backend selection and the libtrainrt-cuda loader (backend_factory.h, cuda_module.h).
#include "backend/backend_factory.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda_module.h"
#include "backend/run_resolution.h"
#include "core/error.h"
#include "core/module_candidates.h"
#include "core/version.h"

namespace trt {
namespace {

constexpr const char* kModuleFile = "libtrainrt-cuda.so";

struct LoadedModule {
    const CudaModuleTable* table = nullptr;
    std::string error;  // why loading failed (table == nullptr)
};

LoadedModule load_module() {
    const std::vector<std::string> candidates = module_candidates("TRAINRT_CUDA_MODULE", kModuleFile);
    std::string tried;
    for (const std::string& path : candidates) {
        // RTLD_LOCAL: the module's symbols (cudart is static inside it) stay its own.
        // Never dlclosed: CUDA's runtime does not support being unloaded mid-process.
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* why = dlerror();
            tried += cat(tried.empty() ? " " : "; ", why ? std::string(why) : cat(path, ": not loadable"));
            continue;
        }
        auto entry = reinterpret_cast<trainrt_cuda_module_fn>(dlsym(handle, "trainrt_cuda_module_v1"));
        if (!entry) {
            tried += cat(tried.empty() ? " " : "; ", path, ": no trainrt_cuda_module_v1 entry point "
                         "(not a libtrainrt-cuda module, or an incompatible one)");
            continue;
        }
        const CudaModuleTable* t = entry();
        if (!t || t->struct_size < sizeof(CudaModuleTable) || t->abi != kCudaModuleAbi ||
            t->backend_interface != kBackendInterfaceVersion) {
            LoadedModule m;
            m.error = cat("VERSION:", path, " was built for another libtrainrt (module table abi ",
                          t ? t->abi : 0, ", backend interface ",
                          t ? t->backend_interface : 0, ", version ",
                          t && t->trainrt_version ? t->trainrt_version : "?",
                          "); this core expects abi ", kCudaModuleAbi, ", interface ",
                          kBackendInterfaceVersion, ", version ", kVersionString,
                          ". Install the libtrainrt-cuda that matches this libtrainrt");
            return m;
        }
        LoadedModule m;
        m.table = t;
        return m;
    }
    LoadedModule m;
    m.error = cat("the CUDA backend module ", kModuleFile, " could not be loaded; tried:", tried,
                  " (install libtrainrt-cuda next to libtrainrt, or set TRAINRT_CUDA_MODULE "
                  "to its path)");
    return m;
}

const LoadedModule& module_once() {
    static std::once_flag once;
    static LoadedModule module;
    std::call_once(once, [] { module = load_module(); });
    return module;
}

}  // namespace

std::unique_ptr<Backend> load_cuda_backend(const BackendOptions& options) {
    const LoadedModule& m = module_once();
    if (!m.table) {
        if (m.error.rfind("VERSION:", 0) == 0) fail(Status::VersionMismatch, m.error.substr(8));
        fail(Status::Unsupported, m.error);
    }
    char err[1024] = {0};
    CudaDeviceInfo info{};
    if (m.table->probe(options.device, &info, err, sizeof err) != 0)
        fail(Status::Unsupported, "CUDA device ", options.device, " is not usable: ", err);
    int32_t status = TRAINRT_OK;
    Backend* be = m.table->create_backend(&options, &status, err, sizeof err);
    if (!be)
        fail(status == TRAINRT_OK ? Status::Device : static_cast<Status>(status),
             "creating the CUDA backend on device ", options.device, " (", info.name, "): ", err);
    return std::unique_ptr<Backend>(be);
}

bool cuda_device_usable(int device) noexcept {
    try {
        const LoadedModule& m = module_once();
        if (!m.table) return false;
        char err[1024] = {0};
        CudaDeviceInfo info{};
        return m.table->probe(device, &info, err, sizeof err) == 0;
    } catch (...) {
        return false;
    }
}

bool cuda_module_loadable() noexcept {
    try {
        return module_once().table != nullptr;
    } catch (...) {
        return false;
    }
}

BackendSelection select_backend(const RunConfig& run) {
    BackendSelection sel;
    // tf32 is a CUDA tensor-core mode: the CPU refuses it (run_resolution.h keeps it as asked).
    auto cpu = [&](const std::string& why_not_cuda) {
        const RunResolution res = resolve_run(run, false);
        if (res.options.precision == Precision::Tf32)
            fail(Status::Unsupported, "runtime.precision = \"tf32\": the CPU backend computes "
                 "in fp32, bf16 or fp16; set runtime.precision = \"fp32\" or \"auto\" (tf32 "
                 "needs the CUDA backend",
                 why_not_cuda.empty() ? std::string(")")
                                      : cat(", which is not available: ", why_not_cuda, ")"));
        sel.precision = res.options.precision;
        sel.backend = make_cpu_backend(res.options.threads, sel.precision, run.accel.cpu_matmul);
    };
    if (run.runtime.device == DeviceKind::Cpu) {
        cpu("");
        return sel;
    }
    const RunResolution res = resolve_run(run, true);  // cuda, or auto trying CUDA first
    try {
        sel.backend = load_cuda_backend(res.options);
        sel.precision = res.options.precision;
    } catch (const Error& e) {
        if (run.runtime.device == DeviceKind::Cuda)
            throw Error(e.status(), cat("runtime.device = \"cuda\": ", e.what(),
                                        " (use runtime.device = \"cpu\" or \"auto\")"));
        if (e.status() == Status::OutOfMemory || e.status() == Status::DeviceLost) throw;
        sel.fallback_reason = e.what();
        cpu(sel.fallback_reason);
    }
    return sel;
}

}  // namespace trt
