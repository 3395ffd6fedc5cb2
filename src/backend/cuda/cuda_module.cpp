// The module's one exported entry point (packaging/libtrainrt-cuda.map): the function table
// of src/backend/cuda_module.h. Nothing here throws across the boundary.
#include "backend/cuda_module.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <exception>

#include "backend/cuda/cuda_backend.h"
#include "core/error.h"
#include "core/version.h"

namespace trt::cuda {
namespace {

void copy_message(char* dst, size_t cap, const char* msg) {
    if (!dst || cap == 0) return;
    std::snprintf(dst, cap, "%s", msg);
}

int probe(int ordinal, CudaDeviceInfo* info, char* err, size_t err_cap) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        char msg[512];
        std::snprintf(msg, sizeof msg, "%s (%s)",
                      e == cudaErrorNoDevice ? "no CUDA-capable device is present"
                      : e == cudaErrorInsufficientDriver
                          ? "the NVIDIA driver is missing or older than this CUDA runtime"
                          : "cudaGetDeviceCount failed",
                      cudaGetErrorString(e));
        copy_message(err, err_cap, msg);
        return 1;
    }
    if (ordinal < 0 || ordinal >= count) {
        char msg[128];
        std::snprintf(msg, sizeof msg, "device %d requested but %d CUDA device(s) present",
                      ordinal, count);
        copy_message(err, err_cap, msg);
        return 1;
    }
    cudaDeviceProp prop{};
    if ((e = cudaGetDeviceProperties(&prop, ordinal)) != cudaSuccess) {
        copy_message(err, err_cap, cudaGetErrorString(e));
        return 1;
    }
    if (info) {
        std::memset(info, 0, sizeof *info);
        std::snprintf(info->name, sizeof info->name, "%s", prop.name);
        info->ordinal = ordinal;
        info->sm_major = prop.major;
        info->sm_minor = prop.minor;
        info->multiprocessors = prop.multiProcessorCount;
        info->total_bytes = prop.totalGlobalMem;
        cudaDriverGetVersion(&info->driver_version);
        cudaRuntimeGetVersion(&info->runtime_version);
    }
    return 0;
}

Backend* create_backend(const BackendOptions* options, int32_t* status, char* err,
                        size_t err_cap) {
    try {
        return make_cuda_backend(*options).release();
    } catch (const Error& e) {
        if (status) *status = static_cast<int32_t>(e.status());
        copy_message(err, err_cap, e.what());
    } catch (const std::bad_alloc&) {
        if (status) *status = TRAINRT_ERR_OUT_OF_MEMORY;
        copy_message(err, err_cap, "out of host memory creating the CUDA backend");
    } catch (const std::exception& e) {
        if (status) *status = TRAINRT_ERR_INTERNAL;
        copy_message(err, err_cap, e.what());
    } catch (...) {
        if (status) *status = TRAINRT_ERR_INTERNAL;
        copy_message(err, err_cap, "unknown exception creating the CUDA backend");
    }
    return nullptr;
}

#define TRT_STR2(x) #x
#define TRT_STR(x) TRT_STR2(x)
const CudaModuleTable kTable = {
    sizeof(CudaModuleTable),
    kCudaModuleAbi,
    kBackendInterfaceVersion,
    0,
    kVersionString,
    "CUDA runtime " TRT_STR(CUDART_VERSION) " (static), cuBLASLt",
    &probe,
    &create_backend,
};

}  // namespace
}  // namespace trt::cuda

extern "C" const trt::CudaModuleTable* trainrt_cuda_module_v1(void) { return &trt::cuda::kTable; }
