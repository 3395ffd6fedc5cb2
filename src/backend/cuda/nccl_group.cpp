#include "backend/cuda/nccl_group.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "core/error.h"

namespace trt::cuda {
namespace {

// NCCL 2.x's C ABI, as nccl.h declares it.
using ncclResult = int;                         // ncclResult_t; 0 = ncclSuccess
struct ncclId { char internal[NcclGroup::kIdBytes]; };  // ncclUniqueId
constexpr int kNcclFloat32 = 7, kNcclFloat64 = 8;  // ncclDataType_t
constexpr int kNcclSum = 0;                         // ncclRedOp_t

struct NcclApi {
    std::string error;  // why it is unusable (empty: usable)
    ncclResult (*GetVersion)(int*) = nullptr;
    ncclResult (*GetUniqueId)(ncclId*) = nullptr;
    ncclResult (*CommInitRank)(void**, int, ncclId, int) = nullptr;
    ncclResult (*CommDestroy)(void*) = nullptr;
    ncclResult (*AllReduce)(const void*, void*, size_t, int, int, void*, cudaStream_t) = nullptr;
    const char* (*GetErrorString)(ncclResult) = nullptr;
    int version = 0;
};

NcclApi load() {
    NcclApi api;
    const char* env = std::getenv("TRAINRT_NCCL_LIBRARY");
    const std::string path = env && *env ? env : "libnccl.so.2";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed
    if (!h) {
        const char* why = dlerror();
        api.error = cat("NCCL could not be loaded from '", path, "': ",
                        why ? why : "dlopen failed",
                        " (install libnccl2, or set TRAINRT_NCCL_LIBRARY to libnccl.so.2)");
        return api;
    }
    auto sym = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
        if (!fn && api.error.empty()) api.error = cat(path, " has no ", name, " (not NCCL 2.x?)");
    };
    sym(api.GetVersion, "ncclGetVersion");
    sym(api.GetUniqueId, "ncclGetUniqueId");
    sym(api.CommInitRank, "ncclCommInitRank");
    sym(api.CommDestroy, "ncclCommDestroy");
    sym(api.AllReduce, "ncclAllReduce");
    sym(api.GetErrorString, "ncclGetErrorString");
    if (api.error.empty() && api.GetVersion(&api.version) != 0) api.error = cat(path, ": ncclGetVersion failed");
    if (api.error.empty() && api.version < 20000)
        api.error = cat(path, " is NCCL ", api.version, "; libtrainrt-cuda needs NCCL 2");
    return api;
}

const NcclApi& api() {
    static std::once_flag once;
    static NcclApi a;
    std::call_once(once, [] { a = load(); });
    return a;
}

const NcclApi& usable_api() {
    const NcclApi& a = api();
    if (!a.error.empty()) fail(Status::Unsupported, a.error);
    return a;
}

void check(ncclResult r, const char* what) {
    if (r != 0)
        fail(Status::Device, "NCCL: ", what, " failed: ", usable_api().GetErrorString(r));
}

}  // namespace

bool NcclGroup::available(std::string* why) {
    const NcclApi& a = api();
    if (why) *why = a.error;
    return a.error.empty();
}

void NcclGroup::make_id(uint8_t* id) {
    ncclId u{};
    check(usable_api().GetUniqueId(&u), "ncclGetUniqueId");
    std::memcpy(id, u.internal, kIdBytes);
}

NcclGroup::NcclGroup(const uint8_t* id, int rank, int world) : rank_(rank), world_(world) {
    ncclId u{};
    std::memcpy(u.internal, id, kIdBytes);
    check(usable_api().CommInitRank(&comm_, world, u, rank), "ncclCommInitRank");
}

NcclGroup::~NcclGroup() {
    if (comm_ && api().CommDestroy) api().CommDestroy(comm_);
}

void NcclGroup::all_reduce_sum(float* data, size_t n, cudaStream_t stream) {
    check(usable_api().AllReduce(data, data, n, kNcclFloat32, kNcclSum, comm_, stream), "ncclAllReduce");
}

void NcclGroup::all_reduce_sum(double* data, size_t n, cudaStream_t stream) {
    check(usable_api().AllReduce(data, data, n, kNcclFloat64, kNcclSum, comm_, stream), "ncclAllReduce");
}

}  // namespace trt::cuda
