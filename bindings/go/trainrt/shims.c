#include "shims.h"
#include "_cgo_export.h"

trainrt_status trgo_log_set_default(uintptr_t handle, int32_t min_level) {
    if (handle == 0) return trainrt_log_set_default(NULL, NULL, min_level);
    return trainrt_log_set_default((trainrt_log_fn)trainrtGoLog, (void*)handle, min_level);
}

trainrt_status trgo_config_set_log(trainrt_config* config, uintptr_t handle, int32_t min_level) {
    if (handle == 0) return trainrt_config_set_log(config, NULL, NULL, min_level);
    return trainrt_config_set_log(config, (trainrt_log_fn)trainrtGoLog, (void*)handle,
                                  min_level);
}

trainrt_status trgo_session_set_log(trainrt_session* session, uintptr_t handle,
                                    int32_t min_level) {
    if (handle == 0) return trainrt_session_set_log(session, NULL, NULL, min_level);
    return trainrt_session_set_log(session, (trainrt_log_fn)trainrtGoLog, (void*)handle,
                                   min_level);
}

trainrt_status trgo_session_train(trainrt_session* session, int64_t n_steps, uintptr_t handle) {
    if (handle == 0) return trainrt_session_train(session, n_steps, NULL, NULL);
    return trainrt_session_train(session, n_steps, (trainrt_progress_fn)trainrtGoProgress,
                                 (void*)handle);
}

trainrt_status trgo_prepare_text(trainrt_prepare_result* out, char** inputs, size_t n_inputs,
                                 const char* out_dir, trainrt_prepare_options* options,
                                 uintptr_t handle) {
    if (handle != 0) {
        /* No cast: the compiler checks the exported Go function against
         * int32_t (*)(int64_t, int64_t, void*). */
        options->progress = trainrtGoPrepareProgress;
        options->progress_payload = (void*)handle;
    }
    return trainrt_prepare_text(out, (const char* const*)inputs, n_inputs, out_dir, options);
}
