// C API: trainrt_config_model_info — what a config's model costs, without building it.
#include "capi/barrier.h"
#include "capi/handles.h"
#include "capi/versioned.h"
#include "backend/run_resolution.h"
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
        const ModelInfo m = run_model_info(r, resolve_run(r));
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
