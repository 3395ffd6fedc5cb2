// The one meeting point of libtrainrt (core) and libtrainrt-mpi (module): a C entry point
// returning a versioned table, like libtrainrt-cuda's (backend/cuda_module.h). MPI has no
// common ABI (Open MPI's MPI_Comm is a pointer, MPICH's an int), so only code built against
// one MPI may include mpi.h: that code is the module, and the core never links MPI — CPU-only
// users need no MPI installed (docs/DISTRIBUTED.md, decision 1).
// The communicator crosses as a trt::dist::Communicator* (C++): both sides are built from the
// same communicator.h, which kMpiModuleAbi pins.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dist/communicator.h"

namespace trt::dist {

constexpr uint32_t kMpiModuleAbi = 1;  // layout of MpiModuleTable and of Communicator

struct MpiModuleTable {
    uint32_t struct_size;         // sizeof(MpiModuleTable) in the module
    uint32_t abi;                 // kMpiModuleAbi
    const char* trainrt_version;  // trt::kVersionString of the module's build
    const char* mpi_version;      // the MPI library the module runs on, for logs
    // Joins the world this process was launched into, as a communicator of its own (a
    // duplicate of MPI_COMM_WORLD, or of *host_comm — an MPI_Comm of the module's MPI — when
    // not null), initialising MPI when nobody has. A rank waiting longer than timeout_s at
    // one collective ends the job. The caller owns the result (delete through Communicator's
    // virtual destructor, which runs in the module). Null with err filled on failure; never
    // throws.
    Communicator* (*join)(const void* host_comm, int64_t timeout_s, char* err, size_t err_cap);
};

}  // namespace trt::dist

extern "C" {
// Exported by libtrainrt-mpi.so (packaging/libtrainrt-mpi.map); the name carries the ABI.
typedef const trt::dist::MpiModuleTable* (*trainrt_mpi_module_fn)(void);
__attribute__((visibility("default"))) const trt::dist::MpiModuleTable* trainrt_mpi_module_v1(void);
}
