// AdamW over the flat parameter buffer, torch.optim.AdamW semantics, with global-norm
// gradient clipping as torch.nn.utils.clip_grad_norm_ and the GPT-2 decay convention.
// Only trainable tensors (train.trainable) are updated: the gradients and the moments are
// compact buffers of table.grad_total() floats (each tensor at its grad_offset), and the
// global norm is over them alone (torch: the parameters given to the optimizer).
// Everything it reads and writes per step (lr, step, norm, clip factor, loss scale) is in
// the backend's StepScalars, so an update is enqueued with no host round-trip.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"
#include "model/param_table.h"

namespace trt {

// ZeRO-1 (dist.zero = 1, docs/DISTRIBUTED.md): this rank's share of the optimizer state.
// The compact buffer is cut into `world` contiguous shards at multiples of the int8 state's
// 256-element blocks from each run's start (so a shard's blocks are the unsharded state's).
struct ZeroShard {
    int rank = 0, world = 1;
};

class AdamW {
public:
    // dynamic_loss_scale: fp16 (GradScaler semantics in end_step). fused (accel.fused_adamw):
    // one adamw_step over the flat buffer; else one per tensor (the slower reference path,
    // same arithmetic per element, so the same bits). shard: the part of the compact buffer
    // this optimizer owns (moments, and the parameters it updates); all of it by default.
    AdamW(Backend& backend, const ParamTable& table, const OptimConfig& config,
          bool dynamic_loss_scale, bool fused = true, ZeroShard shard = {});
    ~AdamW();
    AdamW(const AdamW&) = delete;
    AdamW& operator=(const AdamW&) = delete;

    // Enqueues grad norm → clip → AdamW → loss-scale update on s (begin_step was
    // called with the step's lr and number). Skips the weight update on a non-finite
    // gradient (s->nonfinite, counted in s->skipped_steps).
    void update(float* params, const float* grads, StepScalars* s);
    // update() in two halves, for ZeRO-1 (whose ranks combine their norms in between):
    // clip() computes the norm and clip factor of the shard's gradients into s; apply()
    // updates the shard's parameters and the loss scale.
    void clip(const float* grads, StepScalars* s);
    void apply(float* params, const float* grads, StepScalars* s);

    // ZeRO-1: the shards' cut points in the compact buffer (world + 1 of them, from 0 to
    // table.grad_total()); this optimizer owns [bounds[rank], bounds[rank + 1]).
    const std::vector<size_t>& shard_bounds() const { return bounds_; }
    // ZeRO-1 host copies in compact order: the shard's parameters into compact[grad_offset],
    // and every trainable parameter back from compact (the gathered shards).
    void pack_shard_params(const float* params, float* compact) const;
    void unpack_params(const float* compact, float* params) const;

    // The fp32 state's moments in backend memory (null under optim.state_dtype = "int8").
    float* m() { return m_; }
    float* v() { return v_; }
    // The moments as fp32 on the host, compact (table.grad_total() floats each): decoded
    // from int8 codes under optim.state_dtype = "int8" (what checkpoints hold), and back.
    // Encoding a decoded state gives its codes again, so save + load is bit-exact. A shard
    // writes and reads only its own part of the arrays.
    void moments_to_host(float* m, float* v) const;
    void moments_from_host(const float* m, const float* v);
    // Backend bytes of the moments (and their scales) for this table and dtype.
    static size_t moment_bytes(const ParamTable& table, StateDType dtype);

private:
    Backend& be_;
    const ParamTable& table_;
    OptimConfig config_;
    LossScalePolicy policy_;
    std::vector<size_t> bounds_;  // ZeRO-1 cut points; {0, grad_total} alone
    size_t lo_ = 0, hi_ = 0;      // the compact range this optimizer owns
    float* m_ = nullptr;  // first moments, hi_ - lo_ floats (fp32 state), element g at g - lo_
    float* v_ = nullptr;  // second moments
    // int8 state (core/q8_moments.h): codes [grad_total], per-block scales [blocks_], each
    // run's blocks starting at its run's block_offset, and the encoding tables.
    uint8_t* m8_ = nullptr;
    uint8_t* v8_ = nullptr;
    float* m_scale_ = nullptr;
    float* v_scale_ = nullptr;
    Q8Tables* tables_ = nullptr;
    Q8Tables host_tables_{};
    size_t blocks_ = 0;
    bool fused_ = true;
    // The trainable tensors as ranges: each tensor, and a vocab matrix's padding rows, at its
    // offset in the parameters and in the compact gradient/moment buffers.
    struct Range {
        size_t offset, grad_offset, numel;
        float decay;
    };
    std::vector<Range> ranges_;       // this shard's (clipped to [lo_, hi_))
    std::vector<Range> all_ranges_;   // every trainable tensor's
    // Fused: one adamw_step per run of ranges adjacent in both buffers (one run when
    // everything trains), its segments the run's ranges with run-relative ends.
    struct Run {
        size_t offset, grad_offset, numel;
        ParamSegments segments;
        size_t block_offset = 0;  // int8 state: its first block's scales
    };
    std::vector<Run> runs_;
    void* segment_ends_ = nullptr;   // backend memory: every run's relative ends, in order
    void* segment_decay_ = nullptr;  // backend memory: each range's decay
    // Unfused: range i alone, as a one-segment table: its length (backend memory).
    void* tensor_numel_ = nullptr;
};

}  // namespace trt
