// The run's resolution (run_resolution.h): one place for the rules select_backend and the
// memory plan share.
#include "backend/run_resolution.h"

#include "backend/backend_factory.h"

namespace trt {
namespace {

bool low_precision(Precision p) { return p == Precision::Bf16 || p == Precision::Fp16; }

}  // namespace

RunResolution resolve_run(const RunConfig& run, bool cuda_usable) {
    RunResolution res;
    res.cuda = run.runtime.device == DeviceKind::Cuda ||
               (run.runtime.device == DeviceKind::Auto && cuda_usable);
    const Precision asked = run.runtime.precision;
    BackendOptions& opts = res.options;
    opts.threads = static_cast<int>(run.runtime.threads);
    opts.device = 0;
    // The CPU computes in fp32, bf16 or fp16 (the last a slow twin of CUDA's); auto stays
    // fp32 there (the session's log says when the CPU has native bf16). CUDA's auto is bf16.
    const Precision auto_precision = res.cuda ? Precision::Bf16 : Precision::Fp32;
    opts.precision = asked == Precision::Auto ? auto_precision : asked;
    // accel.attention = "auto" and "cudnn" both ask for cuDNN attention (the CPU has none);
    // where it cannot run, the matmul path serves, with a WARN only when "cudnn" was asked.
    opts.accel.cudnn_attention = run.accel.attention != AttentionKind::Matmul;
    opts.accel.cudnn_grouped_query = run.accel.attention == AttentionKind::Cudnn;
    opts.accel.cudnn_sliding_window = run.accel.attention == AttentionKind::Cudnn;
    opts.accel.matmul_epilogues = run.accel.matmul_epilogues;
    opts.accel.fused_classifier = run.accel.fused_classifier;
    opts.accel.deterministic = run.accel.deterministic;
    opts.accel.lowp_activations = run.accel.lowp_activations;

    const bool lowp = low_precision(opts.precision);
    if (!res.cuda) {
        res.sizing_precision = lowp ? opts.precision : Precision::Fp32;
        return res;
    }
    res.sizing_precision = lowp && run.accel.lowp_activations ? opts.precision : Precision::Fp32;
    const bool multi_head = run.model.n_kv_head == 0 || run.model.n_kv_head == run.model.n_head;
    res.cudnn_attention_sizes = lowp && multi_head && opts.accel.cudnn_attention;
    res.cuda_working_copy_bytes_per_param = lowp ? 2 : 0;
    res.head_chunk_logits = kDeviceHeadChunkLogits;  // the CUDA backend's capabilities()
    return res;
}

RunResolution resolve_run(const RunConfig& run) {
    return resolve_run(run, run.runtime.device == DeviceKind::Auto && cuda_device_usable(0));
}

}  // namespace trt
