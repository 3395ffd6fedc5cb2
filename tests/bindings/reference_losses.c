/* The reference the bindings are held to: the per-step figures of a config through the C API
 * itself. Prints one line per step, "STEP LOSS_BITS" with LOSS_BITS the IEEE-754 bits of the
 * double loss in 16 hex digits, so every language can compare bit for bit without parsing
 * decimal or hex-float text.
 *   reference_losses CONFIG.toml STEPS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <trainrt/trainrt.h>

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: reference_losses CONFIG.toml STEPS\n");
        return 2;
    }
    const int steps = atoi(argv[2]);
    trainrt_config* config = NULL;
    trainrt_session* session = NULL;
    if (trainrt_config_from_file(&config, argv[1]) != TRAINRT_OK ||
        trainrt_session_create(&session, config) != TRAINRT_OK) {
        fprintf(stderr, "reference_losses: %s\n", trainrt_last_error_message());
        trainrt_config_destroy(config);
        return 1;
    }
    trainrt_config_destroy(config);
    for (int i = 0; i < steps; ++i) {
        trainrt_step_result r;
        trainrt_step_result_init(&r);
        if (trainrt_session_step(NULL, session) != TRAINRT_OK ||
            trainrt_session_sync(&r, session) != TRAINRT_OK) {
            fprintf(stderr, "reference_losses: step %d: %s\n", i + 1,
                    trainrt_last_error_message());
            trainrt_session_destroy(session);
            return 1;
        }
        uint64_t bits;
        memcpy(&bits, &r.loss, sizeof bits);
        printf("%lld %016llx\n", (long long)r.step, (unsigned long long)bits);
    }
    trainrt_session_destroy(session);
    return 0;
}
