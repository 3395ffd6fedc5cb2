// C API: versions, features, status text, last error, default logging.
#include <string>

#include "backend/backend_factory.h"
#include "backend/cpu/cpu_onednn_gemm.h"
#include "capi/barrier.h"
#include "core/log.h"
#include "core/version.h"
#include "dist/communicator.h"

namespace trt::capi {
namespace {
thread_local std::string t_last_error;
}

trainrt_status set_error(trainrt_status status, const std::string& message) {
    try {
        t_last_error = message;
    } catch (...) {
        // Out of memory while recording the message: keep the status, drop the text.
    }
    return status;
}

void copy_string(char* buf, size_t cap, size_t* needed, const std::string& text,
                 const char* function) {
    if (buf == nullptr && cap != 0)
        fail(Status::InvalidArgument, function, ": buf is NULL but cap is ", cap);
    if (needed != nullptr) *needed = text.size();
    if (cap == 0) return;
    const size_t n = text.size() < cap - 1 ? text.size() : cap - 1;
    text.copy(buf, n);
    buf[n] = '\0';
}

}  // namespace trt::capi

using namespace trt;

extern "C" {

TRAINRT_API const char* trainrt_version_string(void) { return kVersionString; }

TRAINRT_API uint32_t trainrt_abi_version(void) { return TRAINRT_ABI_VERSION; }

static bool onednn_usable() noexcept {
    try {
        return cpu::OnednnGemm::availability(DType::F32).empty();
    } catch (...) {  // (an allocation failure of the probe: report no oneDNN)
        return false;
    }
}

TRAINRT_API uint64_t trainrt_build_features(void) {
    // The CUDA and MPI bits are run-time facts (the module is a separate file): looked up once. oneDNN:
    // linked in, and its fp32 matmul creatable on this CPU (probed once).
    return TRAINRT_FEATURE_CPU | TRAINRT_FEATURE_OPENMP | TRAINRT_FEATURE_OPENBLAS |
           (cuda_module_loadable() ? TRAINRT_FEATURE_CUDA_MODULE : 0) |
           (onednn_usable() ? TRAINRT_FEATURE_ONEDNN : 0) |
           (dist::mpi_module_loadable() ? TRAINRT_FEATURE_MPI : 0);
}

TRAINRT_API const char* trainrt_status_string(trainrt_status status) {
    switch (status) {
        case TRAINRT_OK: return "ok";
        case TRAINRT_STOPPED: return "stopped on request";
        case TRAINRT_ERR_INVALID_ARGUMENT: return "invalid argument";
        case TRAINRT_ERR_CONFIG: return "configuration error";
        case TRAINRT_ERR_IO: return "i/o error";
        case TRAINRT_ERR_FORMAT: return "malformed or corrupt file";
        case TRAINRT_ERR_OUT_OF_MEMORY: return "out of memory";
        case TRAINRT_ERR_DEVICE: return "device error";
        case TRAINRT_ERR_UNSUPPORTED: return "unsupported";
        case TRAINRT_ERR_BUSY: return "busy";
        case TRAINRT_ERR_CANCELLED: return "cancelled";
        case TRAINRT_ERR_VERSION_MISMATCH: return "version mismatch";
        case TRAINRT_ERR_INTERNAL: return "internal error";
        case TRAINRT_ERR_DEVICE_LOST: return "device lost";
        case TRAINRT_ERR_NON_FINITE: return "non-finite values";
        default: return "unknown status";
    }
}

TRAINRT_API const char* trainrt_last_error_message(void) {
    return capi::t_last_error.c_str();
}

TRAINRT_API trainrt_status trainrt_log_set_default(trainrt_log_fn fn, void* payload,
                                                   int32_t min_level) {
    return capi::guarded("trainrt_log_set_default", [&] {
        capi::require_log_level(min_level, "trainrt_log_set_default");
        LogSink sink;
        sink.fn = fn;
        sink.payload = payload;
        // Without a callback the built-in stderr sink keeps to warnings and errors
        // unless asked for more.
        sink.min_level = min_level;
        set_default_log_sink(sink);
        return TRAINRT_OK;
    });
}

}  // extern "C"
