// Checked CUDA / cuBLASLt calls: every failure becomes a trainrt Error naming the call and
// the call site (GPU.md "Habits"). Kernel launches are followed by TRT_CUDA_LAUNCH_CHECK().
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/error.h"

namespace trt::cuda {

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
    // Sticky errors (illegal address, launch failure…) poison the context: the device is
    // lost for this process, which the host can still report and survive.
    const bool lost = e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure ||
                      e == cudaErrorHardwareStackError || e == cudaErrorIllegalInstruction ||
                      e == cudaErrorMisalignedAddress || e == cudaErrorInvalidAddressSpace ||
                      e == cudaErrorInvalidPc || e == cudaErrorECCUncorrectable;
    const Status st = e == cudaErrorMemoryAllocation ? Status::OutOfMemory
                      : lost                         ? Status::DeviceLost
                                                     : Status::Device;
    fail(st, "CUDA error ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ") in ", what,
         " at ", file, ":", line);
}

[[noreturn]] inline void cublas_fail(cublasStatus_t s, const char* what, const char* file,
                                     int line) {
    fail(s == CUBLAS_STATUS_ALLOC_FAILED ? Status::OutOfMemory : Status::Device,
         "cuBLASLt error ", cublasLtGetStatusName(s), " (", cublasLtGetStatusString(s), ") in ",
         what, " at ", file, ":", line);
}

}  // namespace trt::cuda

#define TRT_CUDA_CHECK(call)                                                      \
    do {                                                                          \
        const cudaError_t trt_e_ = (call);                                        \
        if (trt_e_ != cudaSuccess) ::trt::cuda::cuda_fail(trt_e_, #call, __FILE__, __LINE__); \
    } while (0)

#define TRT_CUBLAS_CHECK(call)                                                    \
    do {                                                                          \
        const cublasStatus_t trt_s_ = (call);                                     \
        if (trt_s_ != CUBLAS_STATUS_SUCCESS)                                      \
            ::trt::cuda::cublas_fail(trt_s_, #call, __FILE__, __LINE__);          \
    } while (0)

// After every kernel launch: catches bad launch configurations at the call site.
#define TRT_CUDA_LAUNCH_CHECK() TRT_CUDA_CHECK(cudaGetLastError())
