// What a run's config becomes on the backend it gets: CPU or CUDA, the precision `auto`
// resolves to, the options the backend is created with, and what a memory plan of the run
// must size (the precision activations are stored at, cuDNN attention's buffers, CUDA's
// working copy of the weights).
//
// Why one owner, here: these are the backends' own rules, and three places used to re-derive
// them — select_backend (the session's backend), trainrt_config_model_info (`trainrt plan`,
// `info`, `bench` and `report` through the C API) and the planner's tests. Each backend
// change had to be followed in all of them. They are pure functions of the config and of
// whether CUDA is usable, so they sit beside the factory in backend/ (below runtime/ and
// capi/, which ask) and are tested without a GPU by passing cuda_usable.
#pragma once
#include <cstddef>

#include "backend/backend.h"
#include "config/run_config.h"

namespace trt {

struct RunResolution {
    bool cuda = false;  // the CUDA backend serves the run (else the CPU)
    // What the backend is created with; options.precision is runtime.precision resolved
    // (auto: bf16 on CUDA, fp32 on the CPU; tf32 stays tf32, which the CPU then refuses).
    BackendOptions options;
    // The memory plan sizes the run with a CPU backend at this precision: the dtype its
    // activations are stored in. The CPU: bf16/fp16 as resolved, else fp32. CUDA: bf16/fp16
    // only with accel.lowp_activations (else fp32 activations, matmul operands cast).
    Precision sizing_precision = Precision::Fp32;
    // cuDNN attention's buffers (backend/cudnn_attention_sizes.h) replace the matmul path's:
    // CUDA, bf16/fp16, accel.attention "auto" or "cudnn", and multi-head. A grouped-query
    // model is sized on the matmul path even where an explicit "cudnn" takes cuDNN (the
    // larger figure); windows, documents and dropout, which keep cuDNN out, are not looked at.
    bool cudnn_attention_sizes = false;
    // CUDA's working copy of the weights, bytes a parameter: 2 under bf16/fp16, else 0. It
    // replaces the sizing CPU backend's own (which depends on the CPU's matmul library).
    size_t cuda_working_copy_bytes_per_param = 0;
    // Logits per chunk of the output head where accel.head_chunk_rows is 0: the resolved
    // backend's BackendCaps::head_chunk_logits (kDeviceHeadChunkLogits on CUDA).
    size_t head_chunk_logits = kHostHeadChunkLogits;
};

// cuda_usable is read only under runtime.device = "auto": "cuda" resolves to CUDA whatever
// it says (creating the backend is where that fails), "cpu" to the CPU.
RunResolution resolve_run(const RunConfig& run, bool cuda_usable);

// The same, asking the CUDA module whether GPU 0 is usable only under device = "auto" (what
// a run of the config gets here, without creating a backend). Never loads it otherwise.
RunResolution resolve_run(const RunConfig& run);

}  // namespace trt
