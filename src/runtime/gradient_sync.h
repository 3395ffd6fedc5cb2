// GradientSync: a data-parallel session's update of the whole global batch
// (docs/DISTRIBUTED.md): the ranks' gradients and loss sums summed before AdamW — on the
// device (NCCL), through host copies over MPI, in bf16 on the wire, block by block as the
// backward finishes them (dist.overlap) — and ZeRO-1's sharded update. A world of one has
// none: its update is the optimizer's alone.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"
#include "core/log.h"
#include "dist/communicator.h"
#include "model/decoder.h"
#include "runtime/optimizer.h"

namespace trt {

class GradientSync {
public:
    // Joins the device collectives where the backend has them (every rank takes the same
    // path) and plans dist.overlap; logs which way the gradients go. zero: ZeRO-1 (the
    // optimizer owns this rank's shard).
    GradientSync(Backend& backend, Decoder& model, AdamW& optimizer, dist::Communicator& world,
                 const RunConfig& run, bool zero, Logger& log);

    // The gradients are summed by the backend (NCCL), inside a step's stream.
    bool device_sum() const { return device_ != nullptr; }
    // dist.overlap: the last micro-batch's backward hands each finished block to sum_block.
    bool overlaps() const { return overlap_; }
    void sum_block(int layer) { sum_range(layer_ranges_[static_cast<size_t>(layer)]); }
    // After the micro-batch loop: the gradients and the step's loss sum summed over the
    // ranks, then the update (ZeRO-1: each rank its shard, with the norm of all of them,
    // then the ranks swap their parameters).
    void update(StepScalars* scalars);

private:
    // One range of the compact gradients [lo, hi).
    struct GradRange {
        size_t lo = 0, hi = 0;
    };
    void join_device_collectives();
    void plan_overlap();
    void all_reduce_gradients(StepScalars* scalars);
    void sum_gradients_over_mpi(float* grads);
    void sum_range(const GradRange& r);
    void combine_shard_norms(StepScalars* scalars);
    void gather_shard_params();

    Backend& backend_;
    Decoder& model_;
    AdamW& optimizer_;
    dist::Communicator& world_;
    const RunConfig& run_;
    Logger& log_;
    const int64_t rank_, world_size_;
    const bool zero_;
    DeviceCollectives* device_ = nullptr;  // the backend's, when it sums the gradients (NCCL)
    std::vector<float> host_grads_;  // all_reduce_gradients' staging (device memory only)
    std::vector<uint16_t> wire_;  // dist.wire_dtype = "bf16": the gradients as summed
    // dist.overlap: each block's compact gradient range, summed when its backward is done, and
    // the ranges left for after the backward (embeddings, final norm, head).
    bool overlap_ = false;
    std::vector<GradRange> layer_ranges_, rest_ranges_;
    std::vector<float> zero_params_;  // ZeRO-1: the compact staging of the parameters' all-gather
};

}  // namespace trt
