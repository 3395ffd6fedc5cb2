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

class AdamW {
public:
    // dynamic_loss_scale: fp16 (GradScaler semantics in end_step). fused (accel.fused_adamw):
    // one adamw_step over the flat buffer; else one per tensor (the slower reference path,
    // same arithmetic per element, so the same bits).
    AdamW(Backend& backend, const ParamTable& table, const OptimConfig& config,
          bool dynamic_loss_scale, bool fused = true);
    ~AdamW();
    AdamW(const AdamW&) = delete;
    AdamW& operator=(const AdamW&) = delete;

    // Enqueues grad norm → clip → AdamW → loss-scale update on s (begin_step was
    // called with the step's lr and number). Skips the weight update on a non-finite
    // gradient (s->nonfinite, counted in s->skipped_steps).
    void update(float* params, const float* grads, StepScalars* s);

    // The fp32 state's moments in backend memory (null under optim.state_dtype = "int8").
    float* m() { return m_; }
    float* v() { return v_; }
    // The moments as fp32 on the host, compact (table.grad_total() floats each): decoded
    // from int8 codes under optim.state_dtype = "int8" (what checkpoints hold), and back.
    // Encoding a decoded state gives its codes again, so save + load is bit-exact.
    void moments_to_host(float* m, float* v) const;
    void moments_from_host(const float* m, const float* v);
    // Backend bytes of the moments (and their scales) for this table and dtype.
    static size_t moment_bytes(const ParamTable& table, StateDType dtype);

private:
    Backend& be_;
    const ParamTable& table_;
    OptimConfig config_;
    LossScalePolicy policy_;
    float* m_ = nullptr;  // first moments, table.grad_total() floats (fp32 state)
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
    std::vector<Range> ranges_;
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
