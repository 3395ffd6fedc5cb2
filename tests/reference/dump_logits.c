/* Test helper for export_check.py: trainrt's logits for a batch, from a checkpoint.
 *   dump_logits CHECKPOINT TOKENS.i32 ROWS SEQ_LEN OUT.f32
 * TOKENS.i32 holds ROWS * (SEQ_LEN + 1) little-endian int32 ids (rows as in
 * trainrt_session_forward); OUT.f32 receives ROWS * SEQ_LEN * vocab_size float32 logits. */
#include <stdio.h>
#include <stdlib.h>
#include <trainrt/trainrt.h>

static int fail(const char* what, trainrt_status st) {
    fprintf(stderr, "dump_logits: %s: %s: %s\n", what, trainrt_status_string(st),
            trainrt_last_error_message());
    return 1;
}

int main(int argc, char** argv) {
    trainrt_config* config = NULL;
    trainrt_session* session = NULL;
    trainrt_status st;
    long rows, seq;
    int64_t vocab = 0;
    size_t n_tokens, n_logits;
    int32_t* tokens;
    float* logits;
    FILE* f;
    if (argc != 6) {
        fprintf(stderr, "usage: dump_logits CHECKPOINT TOKENS.i32 ROWS SEQ_LEN OUT.f32\n");
        return 2;
    }
    rows = strtol(argv[3], NULL, 10);
    seq = strtol(argv[4], NULL, 10);
    if ((st = trainrt_config_from_checkpoint(&config, argv[1])) != TRAINRT_OK)
        return fail("config_from_checkpoint", st);
    /* The weights come from the checkpoint; no data is needed. */
    trainrt_config_set(config, "data.train", "\"\"");
    trainrt_config_set(config, "data.val", "\"\"");
    trainrt_config_set(config, "train.out_dir", "\"\"");
    trainrt_config_set(config, "train.checkpoint_every", "0");
    trainrt_config_get_int(&vocab, config, "model.vocab_size");
    st = trainrt_session_create(&session, config);
    trainrt_config_destroy(config);
    if (st != TRAINRT_OK) return fail("session_create", st);
    if ((st = trainrt_session_load(session, argv[1])) != TRAINRT_OK) return fail("load", st);

    n_tokens = (size_t)rows * (size_t)(seq + 1);
    n_logits = (size_t)rows * (size_t)seq * (size_t)vocab;
    tokens = malloc(n_tokens * sizeof *tokens);
    logits = malloc(n_logits * sizeof *logits);
    f = fopen(argv[2], "rb");
    if (!tokens || !logits || !f || fread(tokens, sizeof *tokens, n_tokens, f) != n_tokens) {
        fprintf(stderr, "dump_logits: cannot read %zu ids from %s\n", n_tokens, argv[2]);
        return 1;
    }
    fclose(f);
    st = trainrt_session_forward(NULL, logits, n_logits, session, tokens, rows, seq);
    if (st != TRAINRT_OK) return fail("forward", st);
    f = fopen(argv[5], "wb");
    if (!f || fwrite(logits, sizeof *logits, n_logits, f) != n_logits || fclose(f) != 0) {
        fprintf(stderr, "dump_logits: cannot write %s\n", argv[5]);
        return 1;
    }
    trainrt_session_destroy(session);
    free(tokens);
    free(logits);
    return 0;
}
