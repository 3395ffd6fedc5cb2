// C API: trainrt_config_model_info — what a config's model costs, without building it.
#include "capi/barrier.h"
#include "capi/handles.h"
#include "capi/versioned.h"
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
        const ModelSpec shape = model_spec(r.model);
        // A CPU backend sizes the attention buffers, in bf16 when the run asks for it (its
        // activations and working copy); a CUDA run's figures are the CPU's at that precision.
        const Precision p = r.runtime.precision == Precision::Bf16 ? Precision::Bf16
                                                                    : Precision::Fp32;
        const auto backend = make_cpu_backend(static_cast<int>(r.runtime.threads), p);
        const ModelInfo m = model_info(shape, static_cast<int>(r.train.batch_size),
                                       static_cast<int>(r.train.seq_len), *backend);
        trainrt_model_info full{};
        full.struct_size = sizeof full;
        full.version = TRAINRT_MODEL_INFO_VERSION;
        full.parameters = m.parameters;
        full.flops_per_token = m.flops_per_token;
        full.bytes_parameters = m.bytes_parameters;
        full.bytes_optimizer = m.bytes_optimizer;
        full.bytes_activations = m.bytes_activations;
        full.bytes_total = m.bytes_total;
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
