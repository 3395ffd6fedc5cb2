// Data parallelism (docs/DISTRIBUTED.md): the collectives a session needs from the world of
// ranks it trains in. Host memory; every rank calls the same collectives in the same order.
// A session without a communicator is a world of one.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trt::dist {

class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // data[i] = the sum over the ranks of their data[i], on every rank, the same bits on all.
    virtual void all_reduce_sum(float* data, size_t n) = 0;
    virtual void all_reduce_sum(double* data, size_t n) = 0;
    // The same over bf16 values (dist.wire_dtype = "bf16"): every partial sum is computed in
    // fp32 and rounded to bf16 (round to nearest even), as NCCL's bf16 all-reduce does.
    virtual void all_reduce_sum_bf16(uint16_t* data, size_t n) = 0;
    // all[r * bytes ...] = rank r's `mine` (bytes each), on every rank.
    virtual void all_gather(const void* mine, size_t bytes, void* all) = 0;
    // ZeRO-1 (parts cut at bounds[0] = 0 < ... <= bounds[size()], the buffer's length):
    // after reduce_scatter_sum, data[bounds[r] .. bounds[r+1]) on rank r holds the sum over
    // the ranks of that part (the rest of data is left as it was); after all_gather_parts,
    // every rank's data holds part r from rank r, for every r.
    virtual void reduce_scatter_sum(float* data, const std::vector<size_t>& bounds) = 0;
    virtual void all_gather_parts(float* data, const std::vector<size_t>& bounds) = 0;
    virtual void barrier() = 0;
    // This rank failed mid-run (its step threw): the others may wait at a collective it will
    // never reach. Later collectives here fail at once, and a world that can end its other
    // ranks (MPI) does so when this process exits instead of leaving them to dist.timeout.
    virtual void mark_failed() = 0;
    virtual std::string name() const = 0;  // for logs: "threads", "mpi"
};

// The ranks the launcher of this process says the job has (Open MPI's OMPI_COMM_WORLD_SIZE,
// PMI_SIZE of MPICH/Slurm's PMI, Slurm's SLURM_NTASKS; 1 when none is set). dist.backend =
// "auto" joins an MPI world when this is above 1.
int launcher_world_size();
// How many of the ranks share this machine (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's
// MPI_LOCALNRANKS, Slurm's SLURM_NTASKS_PER_NODE); `world` when no launcher says.
int local_world_size(int64_t world);

// Joins the MPI world this process was launched into — or host_comm, an MPI_Comm* of the
// host's (libtrainrt-mpi, loaded on first use: next to libtrainrt, or TRAINRT_MPI_MODULE).
// Error(Unsupported) when the module cannot be loaded, naming what was tried.
std::shared_ptr<Communicator> join_mpi_world(int64_t timeout_s, const void* host_comm = nullptr);

// Whether libtrainrt-mpi is found and loadable (trainrt_build_features' MPI bit).
bool mpi_module_loadable() noexcept;

// A world of n ranks inside one process, one thread per rank (world[r] is rank r's; each
// must be used from its own thread): what the tests train data-parallel with, and the model
// of the MPI module to come. Sums run in rank order, so every rank gets the same bits and a
// run repeats bit for bit. A rank left waiting more than `timeout` at a collective (another
// failed or stopped calling them) gets Error(Internal) instead of hanging.
std::vector<std::shared_ptr<Communicator>> make_thread_world(
    int n, std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace trt::dist
