/* The public header alone, as strict C99 (built with -pedantic -Werror). */
#include <trainrt/trainrt.h>

int trainrt_header_c99_check(void);
int trainrt_header_c99_check(void) {
    trainrt_step_result r = TRAINRT_STEP_RESULT_INIT;
    trainrt_metrics m = TRAINRT_METRICS_INIT;
    trainrt_sample_options o = TRAINRT_SAMPLE_OPTIONS_INIT;
    trainrt_model_info i = TRAINRT_MODEL_INFO_INIT;
    return (int)(r.struct_size + m.struct_size + o.struct_size + i.struct_size);
}
