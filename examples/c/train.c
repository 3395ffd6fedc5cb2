/* Train a model from a TOML config through the C API, save a checkpoint, load it into a new
 * session and check that both continue identically, then sample from the model.
 *   example_train_c CONFIG [STEPS [CHECKPOINT_DIR]]
 * e.g. example_train_c examples/configs/shakespeare.toml 20 /tmp/ckpt
 * Build against an installed libtrainrt: cc train.c $(pkg-config --cflags --libs trainrt) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <trainrt/trainrt.h>

/* Every library log line passes through here (level, one line of text, our payload). */
static void on_log(int32_t level, const char* message, void* payload) {
    const char* who = (const char*)payload;
    fprintf(stderr, "[%s %s] %s\n", who, level >= TRAINRT_LOG_WARN ? "warn" : "info", message);
}

static int check(trainrt_status status, const char* what) {
    if (status < 0) {
        fprintf(stderr, "%s: %s: %s\n", what, trainrt_status_string(status),
                trainrt_last_error_message());
        return 1;
    }
    return 0;
}

/* A session from the config file, its log lines tagged with `who`. */
static trainrt_session* open_session(const char* path, const char* who) {
    trainrt_config* config = NULL;
    trainrt_session* session = NULL;
    if (check(trainrt_config_from_file(&config, path), "config")) return NULL;
    /* Settings can be changed from code too: any key, a TOML value. This example writes no
     * metrics or periodic checkpoints into the config's out_dir (it saves to its own
     * CHECKPOINT_DIR), and periodic checkpoints need an out_dir: clear both. */
    if (check(trainrt_config_set(config, "train.out_dir", "\"\""), "config_set") ||
        check(trainrt_config_set(config, "train.checkpoint_every", "0"), "config_set") ||
        check(trainrt_config_set_log(config, on_log, (void*)who, TRAINRT_LOG_INFO), "log") ||
        check(trainrt_session_create(&session, config), "session"))
        session = NULL;
    trainrt_config_destroy(config); /* the session keeps its own copy */
    return session;
}

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "examples/configs/shakespeare.toml";
    const long steps = argc > 2 ? strtol(argv[2], NULL, 10) : 20;
    const char* ckpt = argc > 3 ? argv[3] : "example_checkpoint";
    trainrt_session* session = NULL;
    trainrt_session* resumed = NULL;
    trainrt_step_result a, b;
    int failed = 0;

    printf("libtrainrt %s\n", trainrt_version_string());
    session = open_session(path, "run");
    failed = session == NULL;

    /* 1. The training loop: one optimizer step per call. */
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

    /* 2. Save, load into a fresh session: the next step must match bit for bit. */
    if (!failed) {
        char written[4096];
        failed = check(trainrt_session_save(written, sizeof written, NULL, session, ckpt), "save");
        if (!failed) printf("saved %s\n", written);
    }
    if (!failed) {
        resumed = open_session(path, "resumed");
        failed = resumed == NULL || check(trainrt_session_load(resumed, ckpt), "load");
    }
    if (!failed) {
        trainrt_step_result_init(&a);
        trainrt_step_result_init(&b);
        failed = check(trainrt_session_step(&a, session), "step") ||
                 check(trainrt_session_step(&b, resumed), "step (resumed)");
    }
    if (!failed) {
        printf("next step: original loss %.9g, resumed loss %.9g\n", a.loss, b.loss);
        if (a.step != b.step || memcmp(&a.loss, &b.loss, sizeof a.loss) != 0) {
            fprintf(stderr, "resumed session diverged: step %lld vs %lld\n", (long long)a.step,
                    (long long)b.step);
            failed = 1;
        }
    }

    /* 3. Sample 64 tokens after a prompt (byte-level models: the ids are bytes). */
    if (!failed) {
        const char* prompt = "ROMEO:";
        int32_t ids[16], out[64];
        size_t n = strlen(prompt), i;
        trainrt_sample_options options;
        trainrt_sample_options_init(&options);
        options.temperature = 0.8;
        options.top_k = 40;
        for (i = 0; i < n; ++i) ids[i] = (unsigned char)prompt[i];
        failed = check(trainrt_session_sample(out, 64, resumed, ids, n, 64, &options), "sample");
        if (!failed) {
            printf("sample: %s", prompt);
            for (i = 0; i < 64; ++i) putchar(out[i] >= 32 && out[i] < 127 ? out[i] : ' ');
            putchar('\n');
        }
    }
    trainrt_session_destroy(resumed); /* accepts NULL */
    trainrt_session_destroy(session);
    return failed;
}
