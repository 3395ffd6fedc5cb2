// NCCL, loaded at run time by libtrainrt-cuda (docs/DISTRIBUTED.md, decision 2): the module
// never links libnccl, so a machine without it still loads the module — data parallelism on
// CUDA then sums through host copies over MPI, and asking for NCCL says why it cannot.
//
// Search order: $TRAINRT_NCCL_LIBRARY (a file path; the only candidate when set), else
// "libnccl.so.2" through the dynamic linker. The few NCCL 2.x declarations used are written
// out here (nccl.h is not on every machine that builds the module); NCCL keeps them stable.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace trt::cuda {

// One rank's membership of a group of ranks (one GPU each) that sum buffers in device memory.
class NcclGroup {
public:
    static constexpr size_t kIdBytes = 128;  // ncclUniqueId
    // Whether libnccl.so.2 loads with every entry point; why not, in *why.
    static bool available(std::string* why);
    // Rank 0's id for a new group (throws Error(Unsupported) without NCCL).
    static void make_id(uint8_t* id);
    // Joins (collective over all `world` ranks), on the current device.
    NcclGroup(const uint8_t* id, int rank, int world);
    ~NcclGroup();
    NcclGroup(const NcclGroup&) = delete;
    NcclGroup& operator=(const NcclGroup&) = delete;

    // In-place sum over the ranks, enqueued on stream (a graph may capture it).
    void all_reduce_sum(float* data, size_t n, cudaStream_t stream);
    void all_reduce_sum(double* data, size_t n, cudaStream_t stream);

private:
    void* comm_ = nullptr;  // ncclComm_t
    int rank_ = 0, world_ = 1;
};

}  // namespace trt::cuda
