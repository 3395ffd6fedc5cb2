// Data parallelism (docs/DISTRIBUTED.md): the collectives a session needs from the world of
// ranks it trains in. Host memory; every rank calls the same collectives in the same order.
// A session without a communicator is a world of one.
#pragma once
#include <chrono>
#include <cstddef>
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
    virtual void barrier() = 0;
    virtual std::string name() const = 0;  // for logs: "threads", "mpi"
};

// A world of n ranks inside one process, one thread per rank (world[r] is rank r's; each
// must be used from its own thread): what the tests train data-parallel with, and the model
// of the MPI module to come. Sums run in rank order, so every rank gets the same bits and a
// run repeats bit for bit. A rank left waiting more than `timeout` at a collective (another
// failed or stopped calling them) gets Error(Internal) instead of hanging.
std::vector<std::shared_ptr<Communicator>> make_thread_world(
    int n, std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace trt::dist
