// The data-parallel parts of a Session (docs/DISTRIBUTED.md): which world it joins, the
// checks every rank makes together, and the gradient all-reduce.
#include "dist/communicator.h"
#include "io/sha256.h"
#include "runtime/session.h"
#include "runtime/session_dist.h"

namespace trt {

std::shared_ptr<dist::Communicator> launcher_world(const DistConfig& d) {
    switch (d.backend) {
        case DistBackend::None: return nullptr;
        case DistBackend::Mpi: return dist::join_mpi_world(d.timeout);
        case DistBackend::Auto:
            return dist::launcher_world_size() > 1 ? dist::join_mpi_world(d.timeout) : nullptr;
    }
    return nullptr;
}

void Session::require_same_config_on_every_rank() {
    // Ranks that train different models or data would still exchange gradients of the same
    // size, silently: compare the digests of the resolved configs.
    const std::string dump = config_.dump();
    const std::string mine = sha256_hex(dump.data(), dump.size());
    std::string all(mine.size() * static_cast<size_t>(world_size_), '\0');
    world_->all_gather(mine.data(), mine.size(), all.data());
    for (int64_t r = 0; r < world_size_; ++r) {
        const std::string theirs = all.substr(static_cast<size_t>(r) * mine.size(), mine.size());
        if (theirs != all.substr(0, mine.size()))
            fail(Status::Config, "data parallel: rank ", r, " runs another config than rank 0 "
                 "(sha256 of the resolved config ", theirs.substr(0, 12), " against ",
                 all.substr(0, 12), "); every rank must run the same config (the same file, "
                 "and the same overrides)");
    }
}

void Session::mark_failed() noexcept {
    if (world_size_ > 1) world_->mark_failed();
}

StepResult Session::step() {
    try {
        return step_on_this_rank();
    } catch (...) {
        mark_failed();
        throw;
    }
}

TrainOutcome Session::train(int64_t n_steps, const ProgressCallback& callback) {
    try {
        return train_on_this_rank(n_steps, callback);
    } catch (...) {
        mark_failed();
        throw;
    }
}

bool Session::any_rank(bool mine) {
    double votes = mine ? 1.0 : 0.0;
    world_->all_reduce_sum(&votes, 1);
    return votes > 0.0;
}

// Gradients and the loss sum, summed over the ranks once per step (after the micro-batch
// loop), so each rank's update is the one of the whole global batch. On a backend with its
// own memory, through a host copy (NCCL will do it in place).
void Session::all_reduce_gradients() {
    const size_t n = model_->table().grad_total();
    if (!backend_->capabilities().device_memory) {
        world_->all_reduce_sum(model_->grads(), n);
    } else {
        host_grads_.resize(n);
        backend_->copy_to_host(host_grads_.data(), model_->grads(), n * sizeof(float));
        world_->all_reduce_sum(host_grads_.data(), n);
        backend_->copy_to_device(model_->grads(), host_grads_.data(), n * sizeof(float));
    }
    StepScalars s;
    backend_->copy_to_host(&s, scalars_, sizeof s);
    world_->all_reduce_sum(&s.loss_sum, 1);
    backend_->copy_to_device(scalars_, &s, sizeof s);
}

}  // namespace trt
