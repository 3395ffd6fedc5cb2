// The libtrainrt-mpi loader and the launcher's world size (communicator.h, mpi_module.h).
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/error.h"
#include "core/module_candidates.h"
#include "core/version.h"
#include "dist/communicator.h"
#include "dist/mpi_module.h"

namespace trt::dist {
namespace {

constexpr const char* kModuleFile = "libtrainrt-mpi.so";

struct LoadedModule {
    const MpiModuleTable* table = nullptr;
    Status status = Status::Unsupported;
    std::string error;  // why loading failed (table == nullptr)
};

LoadedModule load_module() {
    LoadedModule m;
    std::string tried;
    for (const std::string& path : module_candidates("TRAINRT_MPI_MODULE", kModuleFile)) {
        // RTLD_GLOBAL: Open MPI loads its own components (mca_*.so) with dlopen and they
        // resolve symbols of libmpi against the global scope. Never dlclosed: MPI cannot be
        // initialised twice in a process.
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!handle) {
            const char* why = dlerror();
            tried += cat(tried.empty() ? " " : "; ", why ? std::string(why) : cat(path, ": not loadable"));
            continue;
        }
        auto entry = reinterpret_cast<trainrt_mpi_module_fn>(dlsym(handle, "trainrt_mpi_module_v1"));
        const MpiModuleTable* t = entry ? entry() : nullptr;
        if (!t || t->struct_size < sizeof(MpiModuleTable) || t->abi != kMpiModuleAbi) {
            m.status = Status::VersionMismatch;
            m.error = cat(path, " is not a libtrainrt-mpi this libtrainrt can use (module abi ",
                          t ? t->abi : 0, ", version ",
                          t && t->trainrt_version ? t->trainrt_version : "?",
                          "; this core expects abi ", kMpiModuleAbi, ", version ", kVersionString,
                          "). Install the libtrainrt-mpi that matches this libtrainrt");
            return m;
        }
        m.table = t;
        return m;
    }
    m.error = cat("data parallel over MPI needs the module ", kModuleFile, ", which could not be "
                  "loaded; tried:", tried, " (install libtrainrt-mpi and Open MPI next to "
                  "libtrainrt, or set TRAINRT_MPI_MODULE to its path; dist.backend = \"none\" "
                  "trains in this process alone)");
    return m;
}

int env_int(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) return 0;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return end && *end == '\0' && n > 0 && n < (1L << 30) ? static_cast<int>(n) : 0;
}

const LoadedModule& module_once() {
    static std::once_flag once;
    static LoadedModule module;
    std::call_once(once, [] { module = load_module(); });
    return module;
}

}  // namespace

bool mpi_module_loadable() noexcept {
    try {
        return module_once().table != nullptr;
    } catch (...) {
        return false;
    }
}

int launcher_world_size() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
        if (const int n = env_int(name); n > 0) return n;
    return 1;
}

int local_world_size(int64_t world) {
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
        if (const int n = env_int(name); n > 0) return n;
    return static_cast<int>(world);
}

std::shared_ptr<Communicator> join_mpi_world(int64_t timeout_s, const void* host_comm) {
    const LoadedModule& module = module_once();
    if (!module.table) fail(module.status, module.error);
    char err[1024] = {0};
    Communicator* c = module.table->join(host_comm, timeout_s, err, sizeof err);
    if (!c) fail(Status::Internal, "joining the MPI world (", module.table->mpi_version, "): ", err);
    return std::shared_ptr<Communicator>(c);
}

}  // namespace trt::dist
