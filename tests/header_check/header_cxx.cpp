// The public header alone, as C++ (built with -pedantic -Werror).
#include <trainrt/trainrt.h>

#include <cstddef>

static_assert(sizeof(trainrt_step_result) == 64, "trainrt_step_result layout is ABI");
static_assert(offsetof(trainrt_step_result, loss) == 16, "trainrt_step_result layout is ABI");
static_assert(sizeof(trainrt_metrics) == 128, "trainrt_metrics layout is ABI");
static_assert(offsetof(trainrt_metrics, last_val_loss) == 64, "version-1 fields never move");
static_assert(offsetof(trainrt_metrics, loss_scale) == 88, "version-2 fields never move");
static_assert(offsetof(trainrt_metrics, model_flops_per_token) == 96, "trainrt_metrics layout is ABI");
static_assert(offsetof(trainrt_metrics, mfu) == 112, "trainrt_metrics layout is ABI");
static_assert(offsetof(trainrt_metrics, world_size) == 124, "version 4 appends rank, world_size");
static_assert(sizeof(trainrt_progress) == 96, "trainrt_progress layout is ABI");
static_assert(sizeof(trainrt_sample_options) == 48, "trainrt_sample_options layout is ABI");
static_assert(offsetof(trainrt_sample_options, seed) == 24, "version-1 fields never move");
static_assert(offsetof(trainrt_sample_options, stop_ids) == 32,
              "trainrt_sample_options version 2 appends stop_ids, n_stop_ids");
static_assert(sizeof(trainrt_model_info) == 64, "trainrt_model_info layout is ABI");
static_assert(offsetof(trainrt_model_info, bytes_total) == 48, "trainrt_model_info layout is ABI");
static_assert(offsetof(trainrt_model_info, trainable_parameters) == 56,
              "trainrt_model_info version 2 appends trainable_parameters");
static_assert(sizeof(trainrt_param_info) == 72, "trainrt_param_info layout is ABI");
static_assert(offsetof(trainrt_param_info, shape) == 16, "trainrt_param_info layout is ABI");
static_assert(offsetof(trainrt_param_info, offset) == 56, "trainrt_param_info layout is ABI");
static_assert(offsetof(trainrt_param_info, trainable) == 68, "trainrt_param_info layout is ABI");

int trainrt_header_cxx_check();
int trainrt_header_cxx_check() {
    trainrt_step_result r = TRAINRT_STEP_RESULT_INIT;
    return static_cast<int>(r.struct_size);
}
