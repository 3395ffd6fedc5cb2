// Gpt: GPT-2 forward/backward orchestration, written once against the Backend op set.
// Owns the flat parameter and gradient buffers and the activations (sized for the largest
// micro-batch B x T) on the backend. It knows nothing of optimizers, data or files.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/param_table.h"

namespace trt {

class Gpt {
public:
    // Allocates params (zero), grads (zero) and activations for micro-batches up to B x T.
    Gpt(Backend& backend, const GptShape& shape, int B, int T);
    ~Gpt();
    Gpt(const Gpt&) = delete;
    Gpt& operator=(const Gpt&) = delete;

    const ParamTable& table() const { return table_; }
    float* params() { return params_; }  // backend memory, table().total() floats
    float* grads() { return grads_; }
    int max_batch() const { return B_; }
    int max_seq() const { return T_; }

    // Forward on a micro-batch already in backend memory: inputs/targets int32 [B, T].
    // Writes per-position losses (backend memory: losses(), or mean_loss() to read them).
    // With backward, scales d(loss) by dloss_scale (times scalars->loss_scale, read on the
    // backend, when scalars is given) and ACCUMULATES into grads().
    // The logits stay in logits() ([B, T, Vp], Vp = table().padded_vocab(); columns >= V are
    // padding) when backward is false.
    void forward(const int32_t* inputs, const int32_t* targets, int B, int T);
    void forward_backward(const int32_t* inputs, const int32_t* targets, int B, int T,
                          float dloss_scale, const StepScalars* scalars = nullptr);
    const float* losses() const { return losses_; }  // backend memory [B*T] of the last forward
    // Mean over B*T positions of the last forward's losses, summed in double.
    double mean_loss(int B, int T);
    const float* logits() const { return logits_; }
    void zero_grads();

    // Host <-> backend staging for one micro-batch of token ids.
    int32_t* inputs_buffer() { return inputs_; }    // backend memory [B*T]
    int32_t* targets_buffer() { return targets_; }  // backend memory [B*T]

    size_t activation_floats() const { return act_floats_; }

private:
    struct Layer {  // activations of one block, each [B*T, ...]
        float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att_saved, *attproj, *residual2;
        float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *fcproj, *residual3;
    };
    void run_forward(const int32_t* inputs, const int32_t* targets, int B, int T,
                     float dloss_scale, bool write_grad, const StepScalars* scalars);
    void run_backward(const int32_t* inputs, int B, int T);
    float* p(const ParamTensor& t) { return params_ + t.offset; }
    float* g(const ParamTensor& t) { return grads_ + t.offset; }

    Backend& be_;
    ParamTable table_;
    int B_, T_;
    float* params_ = nullptr;
    float* grads_ = nullptr;
    float* acts_ = nullptr;  // one allocation, carved into the views below
    size_t act_floats_ = 0;
    int32_t* inputs_ = nullptr;
    int32_t* targets_ = nullptr;

    float* encoded_ = nullptr;  // [B*T, C]
    std::vector<Layer> layers_;
    float *lnf_ = nullptr, *lnf_mean_ = nullptr, *lnf_rstd_ = nullptr;
    float* logits_ = nullptr;  // [B*T, Vp]; becomes dlogits in forward_backward
    float* losses_ = nullptr;  // [B*T]
    // Backward scratch, reused by every layer.
    float *dresidual_ = nullptr, *dln_ = nullptr, *datty_ = nullptr, *dqkv_ = nullptr;
    float *dfch_ = nullptr, *dfch_gelu_ = nullptr, *att_scratch_ = nullptr;
    std::vector<float> host_losses_;
};

}  // namespace trt
