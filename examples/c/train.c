/* Train a model from a TOML config through the C API: the smallest complete host program.
 *   example_train_c examples/configs/shakespeare.toml [steps]
 * Build against an installed libtrainrt: cc train.c $(pkg-config --cflags --libs trainrt) */
#include <stdio.h>
#include <stdlib.h>
#include <trainrt/trainrt.h>

static void on_log(int32_t level, const char* message, void* payload) {
    (void)payload;
    fprintf(stderr, "[%s] %s\n", level >= TRAINRT_LOG_WARN ? "warn" : "info", message);
}

static int check(trainrt_status status, const char* what) {
    if (status < 0) {
        fprintf(stderr, "%s: %s: %s\n", what, trainrt_status_string(status),
                trainrt_last_error_message());
        return 1;
    }
    return 0;
}

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "examples/configs/shakespeare.toml";
    const long steps = argc > 2 ? strtol(argv[2], NULL, 10) : 20;
    trainrt_config* config = NULL;
    trainrt_session* session = NULL;
    int failed = 0;

    printf("libtrainrt %s\n", trainrt_version_string());
    if (check(trainrt_config_from_file(&config, path), "config")) return 1;
    /* Settings can be changed from code too: any key, a TOML value. */
    failed = check(trainrt_config_set(config, "train.out_dir", "\"\""), "config_set") ||
             check(trainrt_config_set_log(config, on_log, NULL, TRAINRT_LOG_INFO), "log") ||
             check(trainrt_session_create(&session, config), "session");
    trainrt_config_destroy(config); /* the session keeps its own copy */

    for (long i = 0; !failed && i < steps; ++i) {
        trainrt_step_result r;
        trainrt_step_result_init(&r);
        failed = check(trainrt_session_step(&r, session), "step");
        if (!failed && (r.step % 5 == 0 || r.step == 1))
            printf("step %lld: loss %.4f lr %.2e grad norm %.3f (%.1f ms)\n", (long long)r.step,
                   r.loss, r.lr, r.grad_norm, r.ms);
    }
    if (!failed) {
        double val = 0;
        trainrt_metrics m = TRAINRT_METRICS_INIT;
        failed = check(trainrt_session_eval(&val, session), "eval") ||
                 check(trainrt_session_metrics(&m, session), "metrics");
        if (!failed)
            printf("val loss %.4f after %lld steps, %.0f tokens/s\n", val, (long long)m.step,
                   m.tokens_per_s);
    }
    trainrt_session_destroy(session); /* accepts NULL */
    return failed;
}
