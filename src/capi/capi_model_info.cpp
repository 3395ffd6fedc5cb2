// C API: trainrt_config_model_info — what a config's model costs, without building it.
#include "capi/barrier.h"
#include "capi/handles.h"
#include "capi/versioned.h"
#include "backend/backend_factory.h"
#include "backend/cudnn_attention_sizes.h"
#include "model/lora.h"
#include "model/param_table.h"
#include "runtime/model_info.h"

using namespace trt;
using capi::guarded;
using capi::require;

extern "C" {

TRAINRT_API trainrt_status trainrt_config_model_info(trainrt_model_info* out,
                                                     const trainrt_config* config) {
    return guarded("trainrt_config_model_info", [&] {
        require(out, "trainrt_config_model_info", "out");
        require(config, "trainrt_config_model_info", "config");
        RunConfig r;  // a copy, taken under the handle's guard
        {
            capi::BusyGuard busy(config->busy, "trainrt_config_model_info");
            r = config->config.run();
        }
        if (r.train.batch_size == 0)
            fail(Status::Config, "trainrt_config_model_info: train.batch_size = \"auto\" is "
                 "resolved by a session, on its device; size a number of rows (trainrt plan "
                 "shows what \"auto\" becomes here)");
        const ModelSpec shape = run_model_spec(r);
        // A CPU backend sizes the attention buffers. A run on the CPU is sized at its own
        // precision (bf16/fp16 store activations in that type and hold a working copy). One
        // that goes to CUDA (device = cuda, or auto with a usable GPU; auto precision is bf16
        // there) holds a 2-byte working copy under bf16/fp16, and keeps fp32 activations — the
        // CPU's fp32 plan — unless accel.lowp_activations stores them in the low precision too:
        // then the CPU's plan at that precision, whose own working copy is replaced by CUDA's.
        const bool on_cpu = r.runtime.device == DeviceKind::Cpu ||
                            (r.runtime.device == DeviceKind::Auto && !cuda_device_usable(0));
        const Precision asked = r.runtime.precision;
        const bool lowp = asked == Precision::Bf16 || asked == Precision::Fp16;
        const bool cuda_lowp = !on_cpu && (lowp || asked == Precision::Auto);
        Precision sizing = Precision::Fp32;
        if (on_cpu && lowp) sizing = asked;
        if (cuda_lowp && r.accel.lowp_activations) sizing = lowp ? asked : Precision::Bf16;
        const auto backend = make_cpu_backend(static_cast<int>(r.runtime.threads), sizing,
                                              r.accel.cpu_matmul);
        const int B = static_cast<int>(r.train.batch_size), T = static_cast<int>(r.train.seq_len);
        // cuDNN attention (accel.attention auto or cudnn, under bf16/fp16, multi-head) keeps
        // O and the softmax statistics instead of the T×T matrices the matmul path keeps:
        // sized as the CUDA backend sizes it (backend/cudnn_attention_sizes.h). Where cuDNN
        // then refuses the shape, the run falls back and needs more than this.
        const bool mha = shape.NKV == 0 || shape.NKV == shape.NH;
        AttentionSizing cudnn;
        const AttentionSizing* attention = nullptr;
        if (cuda_lowp && mha && r.accel.attention != AttentionKind::Matmul) {
            cudnn.saved_floats = cudnn_sizes::saved_floats(B, T, shape.C, shape.NH);
            cudnn.scratch_floats = cudnn_sizes::scratch_floats(B, T, shape.C, shape.NH);
            cudnn.op_scratch_bytes =
                cudnn_sizes::op_scratch_bytes_without_workspace(B, T, shape.C, shape.NH);
            attention = &cudnn;
        }
        ModelInfo m = model_info(shape, B, T, *backend, attention, r.train.trainable,
                                 r.train.recompute, r.optim.state_dtype);
        if (cuda_lowp) {
            const size_t n = ParamTable(shape).total();
            const int64_t working = 2 * static_cast<int64_t>(n) -
                                    static_cast<int64_t>(backend->working_copy_bytes(n));
            m.bytes_parameters += working;
            m.bytes_total += working;
        }
        trainrt_model_info full{};
        full.struct_size = sizeof full;
        full.version = TRAINRT_MODEL_INFO_VERSION;
        full.parameters = m.parameters;
        full.flops_per_token = m.flops_per_token;
        full.bytes_parameters = m.bytes_parameters;
        full.bytes_optimizer = m.bytes_optimizer;
        full.bytes_activations = m.bytes_activations;
        full.bytes_total = m.bytes_total;
        full.trainable_parameters = m.trainable_parameters;
        capi::fill_versioned(out, full, "trainrt_config_model_info");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_model_summary(char* buf, size_t cap, size_t* needed,
                                                        const trainrt_config* config) {
    return guarded("trainrt_config_model_summary", [&] {
        require(config, "trainrt_config_model_summary", "config");
        RunConfig r;
        {
            capi::BusyGuard busy(config->busy, "trainrt_config_model_summary");
            r = config->config.run();
        }
        capi::copy_string(buf, cap, needed, model_summary(model_spec(r.model)),
                          "trainrt_config_model_summary");
        return TRAINRT_OK;
    });
}

}  // extern "C"
