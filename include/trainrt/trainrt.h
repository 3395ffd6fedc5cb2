/*
 * libtrainrt — a training runtime for transformer language models.
 *
 * This is the only public header. It is C99, self-contained and free of CUDA or C++ types,
 * so every language can bind it. Conventions (see docs/C_API.md):
 *   - names are trainrt_<object>_<verb>; outputs come first, then the object, then inputs;
 *   - every fallible call returns a trainrt_status: 0 OK, negative = error, small positive =
 *     a non-error outcome; on error trainrt_last_error_message() says what, where, what to do,
 *     and the outputs are left untouched;
 *   - no exception, abort or exit ever reaches the host;
 *   - strings come back through (buf, cap, &needed): the call copies at most cap-1 bytes plus
 *     a NUL and stores the full length (without the NUL) in *needed (needed may be NULL;
 *     buf = NULL with cap = 0 is a size query);
 *   - output structs begin with struct_size and version; the library fills only the fields
 *     that struct_size covers, so fields can be appended without breaking old hosts.
 *   - a handle may move between threads but must not be used by two threads at once
 *     (concurrent use returns TRAINRT_ERR_BUSY). trainrt_session_request_stop() is the one
 *     call that is safe from another thread while a session is in use.
 */
#ifndef TRAINRT_TRAINRT_H
#define TRAINRT_TRAINRT_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  define TRAINRT_API __declspec(dllexport)
#elif defined(__GNUC__)
#  define TRAINRT_API __attribute__((visibility("default")))
#else
#  define TRAINRT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- versions */
#define TRAINRT_VERSION_MAJOR 0
#define TRAINRT_VERSION_MINOR 1
#define TRAINRT_VERSION_PATCH 0
/* Bumped only on an ABI break; equals the shared library's SONAME number. */
#define TRAINRT_ABI_VERSION 0

/* "MAJOR.MINOR.PATCH" of the library actually loaded (static string). */
TRAINRT_API const char* trainrt_version_string(void);
/* The ABI version of the library actually loaded; compare with TRAINRT_ABI_VERSION. */
TRAINRT_API uint32_t trainrt_abi_version(void);

/* Bits of trainrt_build_features(). */
#define TRAINRT_FEATURE_CPU         (UINT64_C(1) << 0) /* CPU backend (always) */
/* CPU ops multi-threaded (runtime.threads): by the library's own pool now, no longer
 * OpenMP; the name stays for compatibility. */
#define TRAINRT_FEATURE_OPENMP      (UINT64_C(1) << 1)
#define TRAINRT_FEATURE_OPENBLAS    (UINT64_C(1) << 2) /* matmuls through OpenBLAS */
#define TRAINRT_FEATURE_CUDA_MODULE (UINT64_C(1) << 3) /* libtrainrt-cuda found and loadable */
#define TRAINRT_FEATURE_CUDNN       (UINT64_C(1) << 4) /* cuDNN attention available */
#define TRAINRT_FEATURE_NCCL        (UINT64_C(1) << 5) /* multi-GPU through NCCL */
#define TRAINRT_FEATURE_MPI         (UINT64_C(1) << 6) /* multi-process through MPI */
#define TRAINRT_FEATURE_ONEDNN      (UINT64_C(1) << 7) /* CPU matmuls can run on oneDNN (accel.cpu_matmul) */
TRAINRT_API uint64_t trainrt_build_features(void);

/* ---------------------------------------------------------------- status */
typedef int32_t trainrt_status;
/* Never renumbered; new codes are appended. */
#define TRAINRT_OK                        0
#define TRAINRT_STOPPED                   1  /* train() ended early on request (not an error) */
#define TRAINRT_ERR_INVALID_ARGUMENT     -1  /* NULL pointer, bad size, misuse of the API */
#define TRAINRT_ERR_CONFIG               -2  /* bad TOML, unknown key, wrong type, bad value */
#define TRAINRT_ERR_IO                   -3  /* a file could not be opened, read or written */
#define TRAINRT_ERR_FORMAT               -4  /* a file is malformed, truncated or corrupt */
#define TRAINRT_ERR_OUT_OF_MEMORY        -5
#define TRAINRT_ERR_DEVICE               -6  /* the device failed; see also DEVICE_LOST */
#define TRAINRT_ERR_UNSUPPORTED          -7  /* valid request this build/machine cannot honour */
#define TRAINRT_ERR_BUSY                 -8  /* the handle is in use by another thread, or
                                                 train.out_dir by another run */
#define TRAINRT_ERR_CANCELLED            -9
#define TRAINRT_ERR_VERSION_MISMATCH    -10
#define TRAINRT_ERR_INTERNAL            -11  /* a bug in libtrainrt: please report it */
#define TRAINRT_ERR_DEVICE_LOST         -12  /* sticky: every later call on the session fails */
#define TRAINRT_ERR_NON_FINITE          -13  /* NaN/inf: in weights read from a file, in the
                                                 weights a save would write, or a run that
                                                 skipped train.max_skipped_steps in a row */

/* Static English text for a status code ("invalid argument", ...). Never NULL. */
TRAINRT_API const char* trainrt_status_string(trainrt_status status);
/* Text of the last failed call on this thread; "" if none. Never NULL. Valid until the
 * next libtrainrt call on this thread. */
TRAINRT_API const char* trainrt_last_error_message(void);

/* ---------------------------------------------------------------- logging */
#define TRAINRT_LOG_DEBUG 0
#define TRAINRT_LOG_INFO  1
#define TRAINRT_LOG_WARN  2
#define TRAINRT_LOG_ERROR 3
/* message is a single line without a trailing newline, valid only during the call. */
typedef void (*trainrt_log_fn)(int32_t level, const char* message, void* payload);

/* Process-wide default log sink, used by sessions that have none of their own: lines at
 * min_level and above go to fn. fn = NULL selects the built-in sink, which writes those lines
 * to stderr (initially min_level = TRAINRT_LOG_WARN). The library never writes to stdout.
 * min_level is TRAINRT_LOG_DEBUG..TRAINRT_LOG_ERROR, else TRAINRT_ERR_INVALID_ARGUMENT (here
 * and in trainrt_config_set_log / trainrt_session_set_log). */
TRAINRT_API trainrt_status trainrt_log_set_default(trainrt_log_fn fn, void* payload,
                                                   int32_t min_level);

/* ---------------------------------------------------------------- config */
/* A run configuration: a TOML document (see docs/CONFIG.md for every key), validated on
 * every change. Keys are dotted TOML paths: "optim.lr", "train.batch_size". */
typedef struct trainrt_config trainrt_config;

/* All defaults. */
TRAINRT_API trainrt_status trainrt_config_create(trainrt_config** out);
/* Relative paths inside the file resolve against the file's folder. */
TRAINRT_API trainrt_status trainrt_config_from_file(trainrt_config** out, const char* path);
/* base_dir (may be NULL = current directory) anchors relative paths. */
TRAINRT_API trainrt_status trainrt_config_from_string(trainrt_config** out, const char* toml,
                                                      const char* base_dir);
/* Accepts NULL. */
TRAINRT_API void trainrt_config_destroy(trainrt_config* config);

/* Set one key from a TOML value: ("optim.betas", "[0.9, 0.95]"), ("data.train",
 * "\"shards/train.bin\""). On error the config is unchanged. */
TRAINRT_API trainrt_status trainrt_config_set(trainrt_config* config, const char* key,
                                              const char* toml_value);
/* Typed getters of the resolved value (defaults applied). Getting a key of another type is
 * TRAINRT_ERR_CONFIG. get_string also returns any non-string key as its TOML text.
 * train.batch_size = "auto" reads as 0 through get_int (a session resolves it; its
 * trainrt_session_config_dump holds the number). */
TRAINRT_API trainrt_status trainrt_config_get_int(int64_t* out, const trainrt_config* config,
                                                  const char* key);
TRAINRT_API trainrt_status trainrt_config_get_double(double* out, const trainrt_config* config,
                                                     const char* key);
TRAINRT_API trainrt_status trainrt_config_get_bool(int32_t* out, const trainrt_config* config,
                                                   const char* key);
TRAINRT_API trainrt_status trainrt_config_get_string(char* buf, size_t cap, size_t* needed,
                                                     const trainrt_config* config,
                                                     const char* key);
/* The whole resolved config as TOML (every key, defaults included). */
TRAINRT_API trainrt_status trainrt_config_dump(char* buf, size_t cap, size_t* needed,
                                               const trainrt_config* config);
/* Log sink for sessions created from this config (so the session's first lines reach it).
 * fn = NULL: use the process default. */
TRAINRT_API trainrt_status trainrt_config_set_log(trainrt_config* config, trainrt_log_fn fn,
                                                  void* payload, int32_t min_level);
/* Data parallelism for a host that runs MPI itself (docs/DISTRIBUTED.md): sessions created from
 * this config train with the ranks of the communicator *comm — a pointer to an MPI_Comm of the
 * MPI libtrainrt-mpi was built against (Open MPI), read during trainrt_session_create only —
 * instead of MPI_COMM_WORLD, unless dist.backend = "none". The host initialised MPI with
 * MPI_THREAD_SERIALIZED or more and finalises it. comm = NULL restores the default. */
TRAINRT_API trainrt_status trainrt_config_set_mpi_comm(trainrt_config* config, const void* comm);

/* ---------------------------------------------------------------- session */
/* One training run: model, optimizer state, data, sampler, backend, metrics. */
typedef struct trainrt_session trainrt_session;

/* Figures of one completed optimizer step. */
typedef struct trainrt_step_result {
    uint32_t struct_size;  /* sizeof(trainrt_step_result) as the caller compiled it */
    uint32_t version;      /* TRAINRT_STEP_RESULT_VERSION */
    int64_t step;          /* 1-based number of the step; 0 = no step completed yet */
    double loss;           /* mean train loss over the step's micro-batches (nats/token;
                              step_masked: over its counted targets) */
    double lr;             /* learning rate the step used */
    double grad_norm;      /* global L2 norm of the gradient before clipping */
    int64_t tokens;        /* tokens this step trained on (grad_accum * B * T) */
    int64_t tokens_total;  /* tokens trained on since step 1 */
    double ms;             /* wall time of the step in milliseconds */
} trainrt_step_result;
#define TRAINRT_STEP_RESULT_VERSION 1
#define TRAINRT_STEP_RESULT_INIT \
    { (uint32_t)sizeof(trainrt_step_result), TRAINRT_STEP_RESULT_VERSION, 0, 0, 0, 0, 0, 0, 0 }
TRAINRT_API void trainrt_step_result_init(trainrt_step_result* result);

/* Running figures of a session. */
typedef struct trainrt_metrics {
    uint32_t struct_size;
    uint32_t version;          /* TRAINRT_METRICS_VERSION */
    int64_t step;              /* optimizer steps completed */
    int64_t tokens_total;      /* tokens trained on */
    double tokens_per_s;       /* over the recent steps (window of up to 100) */
    double step_ms_p50;        /* median step time over the same window */
    double step_ms_p95;
    int64_t bytes_in_use;      /* backend memory held by the session */
    double last_loss;          /* NaN before the first step */
    double last_val_loss;      /* NaN before the first eval */
    /* ---- version 2 */
    int64_t bytes_reserved;    /* backend memory reserved (>= bytes_in_use: allocator slack) */
    int64_t skipped_steps;     /* updates skipped for a non-finite gradient */
    double loss_scale;         /* current dynamic loss scale (fp16), else 1 */
    /* ---- version 3 */
    double model_flops_per_token; /* training FLOPs per token, 6N + 6*L*C*T (N = all
                                     parameters, T = train.seq_len); the MFU numerator */
    double peak_flops;         /* the device's dense peak FLOP/s in the run's precision:
                                  runtime.peak_tflops * 1e12 when set, else a built-in table
                                  (H100/H200/A100/L40S/RTX 4090); 0 = unknown (the CPU) */
    double mfu;                /* model FLOPs utilisation = tokens_per_s * model_flops_per_token
                                  / peak_flops, normally in [0, 1]; 0 when the peak is unknown */
    /* ---- version 4 */
    int32_t rank;              /* data parallel (dist.backend): this process's rank, 0 alone */
    int32_t world_size;        /* the ranks training together (tokens_* count all of them) */
} trainrt_metrics;
#define TRAINRT_METRICS_VERSION 4
#define TRAINRT_METRICS_INIT \
    { (uint32_t)sizeof(trainrt_metrics), TRAINRT_METRICS_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, \
      0, 0, 0, 0, 0, 0, 0, 1 }
TRAINRT_API void trainrt_metrics_init(trainrt_metrics* metrics);

/* What trainrt_session_train() reports to its callback. */
#define TRAINRT_PROGRESS_STEP 0  /* a train step was logged (every runtime.log_every) */
#define TRAINRT_PROGRESS_EVAL 1  /* an eval finished: every train.eval_every steps and after
                                    the last step of train(); never when eval_every = 0 */
typedef struct trainrt_progress {
    uint32_t struct_size;
    uint32_t version;       /* TRAINRT_PROGRESS_VERSION */
    int32_t kind;           /* TRAINRT_PROGRESS_STEP or TRAINRT_PROGRESS_EVAL */
    int32_t reserved;
    int64_t step;           /* last completed step */
    int64_t steps_total;    /* train.steps */
    double loss;            /* STEP: train loss of that step; EVAL: val loss */
    double lr;
    double grad_norm;
    int64_t tokens_total;
    double ms;              /* STEP: that step's time */
    double tokens_per_s;    /* recent throughput */
    double elapsed_s;       /* since train() began */
    double eta_s;           /* estimated seconds to train.steps */
} trainrt_progress;
#define TRAINRT_PROGRESS_VERSION 1
/* Return 0 to continue, non-zero to stop (train() then returns TRAINRT_STOPPED). */
typedef int32_t (*trainrt_progress_fn)(const trainrt_progress* progress, void* payload);

/* Builds model, optimizer, data and backend from a copy of config. Logs the resolved
 * backend and every acceleration switch at INFO. */
TRAINRT_API trainrt_status trainrt_session_create(trainrt_session** out,
                                                  const trainrt_config* config);
/* Accepts NULL; any thread. Do not destroy a session another thread is still using:
 * request_stop, wait for that call to return, then destroy. */
TRAINRT_API void trainrt_session_destroy(trainrt_session* session);

/* Log sink for this session (overrides the config's / the process default). */
TRAINRT_API trainrt_status trainrt_session_set_log(trainrt_session* session, trainrt_log_fn fn,
                                                   void* payload, int32_t min_level);

/* Enqueue one optimizer step on batches drawn by the session's sampler. out (may be NULL)
 * receives the figures of the most recent *completed* step — on the CPU backend, the step
 * just run; on an asynchronous backend it may lag (call sync first to get this one). */
TRAINRT_API trainrt_status trainrt_session_step(trainrt_step_result* out,
                                                trainrt_session* session);
/* Like step, on tokens from the host: grad_accum * batch_size * (seq_len + 1) int32 ids,
 * micro-batch by micro-batch, row by row; each row's first seq_len ids are the inputs and
 * its last seq_len ids the targets. Every id must be in [0, vocab_size). n_tokens must equal
 * that count exactly. The sampler does not advance. */
TRAINRT_API trainrt_status trainrt_session_step_tokens(trainrt_step_result* out,
                                                       trainrt_session* session,
                                                       const int32_t* tokens, size_t n_tokens);
/* Like step_tokens, training on some targets only (instruction tuning: the completions, not
 * the prompts). tokens as step_tokens (n_tokens = grad_accum * batch_size * (seq_len + 1)).
 * loss_mask: grad_accum * batch_size * seq_len bytes, or NULL (every target counts);
 * loss_mask[k, b, t] != 0 makes the target tokens[k, b, t + 1] count, 0 leaves it an input
 * only (no loss, no gradient; its id must still be in [0, vocab_size)). positions: as many
 * int32 values, or NULL (0 .. seq_len - 1 in every row); each row starts at 0 and each value is
 * 0 or the previous + 1. A row that restarts holds several examples (packing): each attends
 * only to itself and its positions start again at 0. n_mask: that length, grad_accum * batch_size * seq_len (0 is also accepted
 * when both are NULL). The loss and its gradient are the mean over the step's counted targets
 * — every micro-batch and, under data parallelism, every rank — so grad_accum and the world
 * size do not change the result; a mask of all ones is step_tokens bit for bit. out->loss is
 * that mean, out->tokens still the tokens processed. A step with no counted target (on any
 * rank) is TRAINRT_ERR_INVALID_ARGUMENT and changes nothing. */
TRAINRT_API trainrt_status trainrt_session_step_masked(trainrt_step_result* out,
                                                       trainrt_session* session,
                                                       const int32_t* tokens, size_t n_tokens,
                                                       const uint8_t* loss_mask,
                                                       const int32_t* positions, size_t n_mask);
/* Wait for all queued work; then out (may be NULL) holds the last step's figures. */
TRAINRT_API trainrt_status trainrt_session_sync(trainrt_step_result* out,
                                                trainrt_session* session);
/* Mean loss over train.eval_batches sequential windows from the start of data.val
 * (a fresh cursor each call); with train.eval_mode = "whole", trainrt_session_eval_whole's. TRAINRT_ERR_CONFIG when no val data is configured;
 * TRAINRT_ERR_CANCELLED when trainrt_session_request_stop interrupted it. */
TRAINRT_API trainrt_status trainrt_session_eval(double* out_loss, trainrt_session* session);
/* A whole evaluation: every token of a stream but the first scored exactly once as a target,
 * in disjoint windows of train.seq_len targets (window k: inputs tokens[k*T, k*T + T), targets
 * one further), train.batch_size windows per forward; the last window, if shorter, runs at its
 * own length. Never wraps, never counts a token twice. The stream is data.val (its shards back
 * to back, in the order they are read), or tokens/text given by the host. */
typedef struct trainrt_eval_result {
    uint32_t struct_size;  /* sizeof(trainrt_eval_result) as the caller compiled it */
    uint32_t version;      /* TRAINRT_EVAL_RESULT_VERSION */
    double loss;           /* mean loss over the scored targets (nats/token) */
    double perplexity;     /* exp(loss) */
    int64_t tokens;        /* targets scored: the stream's tokens - 1 */
    int64_t windows;       /* windows run: ceil(tokens / train.seq_len) */
} trainrt_eval_result;
#define TRAINRT_EVAL_RESULT_VERSION 1
#define TRAINRT_EVAL_RESULT_INIT \
    { (uint32_t)sizeof(trainrt_eval_result), TRAINRT_EVAL_RESULT_VERSION, 0, 0, 0, 0 }
TRAINRT_API void trainrt_eval_result_init(trainrt_eval_result* result);
/* Whole evaluation of data.val (also what trainrt_session_eval returns, as loss, when
 * train.eval_mode = "whole"). TRAINRT_ERR_CONFIG without val data; TRAINRT_ERR_INVALID_ARGUMENT
 * for a split of fewer than 2 tokens; TRAINRT_ERR_CANCELLED as trainrt_session_eval. */
TRAINRT_API trainrt_status trainrt_session_eval_whole(trainrt_eval_result* out,
                                                      trainrt_session* session);
/* Whole evaluation of n_tokens (>= 2) host ids, each in [0, vocab_size), taken as one stream. */
TRAINRT_API trainrt_status trainrt_session_eval_tokens(trainrt_eval_result* out,
                                                       trainrt_session* session,
                                                       const int32_t* tokens, size_t n_tokens);
/* Whole evaluation of raw text (len bytes), tokenized in memory as trainrt_prepare_text lays out
 * one text file: with tokenizer (a tokenizer.json or .model, or a model folder) the
 * end-of-text token, then the text's ids (the text must be UTF-8); tokenizer NULL: byte-level,
 * one id per byte, as trainrt_prepare_bytes. The same text prepared with val_fraction 1 and
 * evaluated with trainrt_session_eval_whole gives the same figures. */
TRAINRT_API trainrt_status trainrt_session_eval_text(trainrt_eval_result* out,
                                                     trainrt_session* session, const char* text,
                                                     size_t len, const char* tokenizer);
/* Loss of the current model on host tokens, no update: rows of (seq_len + 1) ids as in
 * step_tokens, 1 <= rows <= batch_size, 1 <= seq_len <= train.seq_len. out_loss (may be
 * NULL) receives the mean loss; logits (may be NULL) receives rows * seq_len * vocab_size
 * floats; logits_cap is its size in floats. */
TRAINRT_API trainrt_status trainrt_session_forward(double* out_loss, float* logits,
                                                   size_t logits_cap, trainrt_session* session,
                                                   const int32_t* tokens, int64_t rows,
                                                   int64_t seq_len);
/* Run the training loop: n_steps more steps (n_steps <= 0: until train.steps; more than
 * 2^40 count as 2^40, so INT64_MAX means "until stopped"), with the
 * config's log / eval cadence, appending to <train.out_dir>/metrics.jsonl when out_dir is
 * set, calling callback (may be NULL) at each logged step and eval. Returns TRAINRT_OK,
 * or TRAINRT_STOPPED when request_stop or the callback ended it early (the callback: after
 * the step it reports; request_stop: see there). */
TRAINRT_API trainrt_status trainrt_session_train(trainrt_session* session, int64_t n_steps,
                                                 trainrt_progress_fn callback, void* payload);
/* Ask a running train() to stop. Safe from any thread (and from a signal handler). It is
 * seen before each step and, with one rank, between the micro-batches of a step
 * (train.grad_accum): that step is then abandoned — weights, optimizer state, step count and
 * sampler position stay as after the previous step, so a checkpoint saved next resumes
 * exactly as if it never ran. (A step replayed as a CUDA graph, accel.cuda_graphs, or one of
 * several ranks runs to its end first.) A request made while no train() runs stops the next
 * one at once; one that arrives during the last micro-batch of a train() that then completes
 * is discarded. It also interrupts a running eval between batches: trainrt_session_eval then
 * returns TRAINRT_ERR_CANCELLED, and a train() whose eval it interrupted returns
 * TRAINRT_STOPPED. */
TRAINRT_API trainrt_status trainrt_session_request_stop(trainrt_session* session);
TRAINRT_API trainrt_status trainrt_session_metrics(trainrt_metrics* out,
                                                   trainrt_session* session);
/* The session's resolved config as TOML (what it actually runs with). */
TRAINRT_API trainrt_status trainrt_session_config_dump(char* buf, size_t cap, size_t* needed,
                                                       trainrt_session* session);
/* The per-op profile of the train steps (step, step_tokens, step_masked, train) run since the
 * session was created or since trainrt_session_profile_reset, as JSON into (buf, cap, needed)
 * as trainrt_config_dump: every backend op by layer and label (the products by shape), with
 * its calls, seconds, FLOPs and bytes (docs/C_API.md, "Per-op profile"). Needs a session
 * created with runtime.profile_ops = true (TRAINRT_ERR_CONFIG otherwise), whose steps run
 * eagerly: each op synchronized and timed on the host clock, or on CUDA timed by events on
 * the GPU; the JSON also gives the device's roofline peaks and the libraries' choices per
 * shape (cuBLASLt algorithm, cuDNN engine, oneDNN implementation). */
TRAINRT_API trainrt_status trainrt_session_profile(char* buf, size_t cap, size_t* needed,
                                                   trainrt_session* session);
/* Forgets the profile so far (e.g. after warm-up steps); TRAINRT_ERR_CONFIG as above. */
TRAINRT_API trainrt_status trainrt_session_profile_reset(trainrt_session* session);

/* ---------------------------------------------------------------- checkpoints */
/* A checkpoint is a directory (docs/FORMATS.md §4): fp32 weights + HF config (so it is also a
 * Hugging Face export), AdamW moments, the step, tokens, sampler cursor and run config, and a
 * SHA-256 manifest. It is written as NAME.tmp/ and renamed into place, so a directory named
 * like a checkpoint is always complete. Resuming from one continues bit-identically to the
 * uninterrupted run (same config, same thread count). */

/* Write a checkpoint of the session's current state. dir = NULL or "": into train.out_dir as
 * step_<8 digits>/, then train.out_dir/latest names it and only the newest train.keep_last
 * checkpoints are kept (TRAINRT_ERR_CONFIG if out_dir is empty); each one written there is
 * logged (info, "checkpoint: DIR"). A step_ directory this
 * session already wrote or loaded is kept as it is (and not logged again); one left by another
 * run (e.g. after `train --fresh`) is replaced. Otherwise exactly dir, which must not exist (TRAINRT_ERR_IO). The directory written goes to (path_buf, cap, needed), which may be
 * NULL, 0, NULL. */
TRAINRT_API trainrt_status trainrt_session_save(char* path_buf, size_t cap, size_t* needed,
                                                trainrt_session* session, const char* dir);
/* Restore weights, AdamW state, step, tokens and sampler cursor from path: a checkpoint
 * directory, or a folder whose `latest` file names one (e.g. train.out_dir). Refused, with
 * the session unchanged: a manifest mismatch or missing file (TRAINRT_ERR_FORMAT, "corrupt
 * checkpoint" naming the file), another model shape (TRAINRT_ERR_CONFIG naming the keys), a
 * newer format version (TRAINRT_ERR_VERSION_MISMATCH). The session's own config stays in
 * force (a warning is logged for training keys that differ from the checkpoint's). */
TRAINRT_API trainrt_status trainrt_session_load(trainrt_session* session, const char* path);
/* The checkpoint directory out_dir/latest names, into (buf, cap, needed); "" (and
 * TRAINRT_OK) when out_dir has no checkpoint yet. */
TRAINRT_API trainrt_status trainrt_checkpoint_latest(char* buf, size_t cap, size_t* needed,
                                                     const char* out_dir);
/* The run config a checkpoint (path as for session_load) was trained with. */
TRAINRT_API trainrt_status trainrt_config_from_checkpoint(trainrt_config** out,
                                                          const char* path);

/* ---------------------------------------------------------------- export */
#define TRAINRT_DTYPE_F32  0
#define TRAINRT_DTYPE_BF16 1
/* Hugging Face export: out_dir/model.safetensors (the model's HF names - GPT2LMHeadModel or
 * LlamaForCausalLM -, unpadded, F32 or BF16; above 5 GB transformers' shards and
 * model.safetensors.index.json instead) and out_dir/config.json, each written atomically;
 * out_dir is created. When the run has a data.tokenizer, it is written too (tokenizer.json or
 * tokenizer.model, with the tokenizer_config.json / special_tokens_map.json found beside it); a data.tokenizer
 * that no longer exists is an error before anything is written. The folder loads with
 * transformers and as model.init_from. */
TRAINRT_API trainrt_status trainrt_session_export(trainrt_session* session, const char* out_dir,
                                                  int32_t dtype);
/* The same from a checkpoint (path as for session_load), without a session. A LoRA run's
 * export (lora.rank > 0) is the base model with the adapters merged in (W + alpha/r * B·A). */
TRAINRT_API trainrt_status trainrt_checkpoint_export(const char* path, const char* out_dir,
                                                     int32_t dtype);
/* LoRA runs only: the adapters as a Hugging Face PEFT folder, out_dir/adapter_model.safetensors
 * ("base_model.model.<module path>.lora_A.weight" [r, in] and ".lora_B.weight" [out, r], F32 or
 * BF16) and out_dir/adapter_config.json (r, lora_alpha, target_modules, ...), each written
 * atomically; out_dir is created. PeftModel.from_pretrained and lora.init_from load it. A run
 * without adapters is TRAINRT_ERR_INVALID_ARGUMENT. */
TRAINRT_API trainrt_status trainrt_session_export_adapter(trainrt_session* session,
                                                          const char* out_dir, int32_t dtype);
TRAINRT_API trainrt_status trainrt_checkpoint_export_adapter(const char* path, const char* out_dir,
                                                             int32_t dtype);
/* GGUF, the file llama.cpp and Ollama load: the model of the checkpoint at path (as for
 * session_load; a LoRA run's adapters merged) as one file gguf_path, written atomically, with
 * llama.cpp's architecture, names and layouts for its family (Mistral as llama), and the run's
 * data.tokenizer inside it (tokens, merges or scores, special and end-of-turn ids, the chat
 * template; docs/FORMATS.md section 6). type: "f32", "f16", "bf16" or "q8_0" (norms, biases
 * and position embeddings stay F32, as llama.cpp's converter keeps them). What the file does
 * not keep as the run had it (one line each: a sliding window, a matrix written F16 instead of
 * Q8_0, no tokenizer) goes to (notes, cap, needed), which may be NULL, 0, NULL; a call writes
 * the file, so give a buffer the notes fit (4 KiB does) rather than calling again to size it.
 * An existing gguf_path is replaced. A model llama.cpp's architecture cannot hold is
 * TRAINRT_ERR_UNSUPPORTED, before anything is written. */
TRAINRT_API trainrt_status trainrt_checkpoint_export_gguf(char* notes, size_t cap, size_t* needed,
                                                          const char* path, const char* gguf_path,
                                                          const char* type);
/* A LoRA run's adapters as llama.cpp's LoRA adapter GGUF (`llama-cli -m BASE.gguf --lora FILE`;
 * as its convert_lora_to_gguf.py writes them): general.type "adapter", adapter.type "lora",
 * adapter.lora.alpha, and per adapted linear "<the model tensor's name>.lora_a" / ".lora_b"
 * (docs/FORMATS.md section 6). BASE.gguf is the model the run trained on (its model.init_from),
 * as a GGUF file of its own. type, notes and the file as for checkpoint_export_gguf; a run
 * without adapters is TRAINRT_ERR_INVALID_ARGUMENT. */
TRAINRT_API trainrt_status trainrt_checkpoint_export_gguf_lora(char* notes, size_t cap,
                                                               size_t* needed, const char* path,
                                                               const char* gguf_path,
                                                               const char* type);

/* ---------------------------------------------------------------- sampling */
typedef struct trainrt_sample_options {
    uint32_t struct_size;  /* sizeof(trainrt_sample_options) as the caller compiled it */
    uint32_t version;      /* TRAINRT_SAMPLE_OPTIONS_VERSION */
    double temperature;    /* > 0 scales the logits; 0 = greedy (argmax) */
    int32_t top_k;         /* sample among the k most likely tokens; 0 = all */
    int32_t reserved;      /* 0 */
    uint64_t seed;         /* same seed, model and prompt = same tokens */
    /* Version 2: ids that end a trainrt_session_generate (a chat model's end-of-turn tokens:
     * trainrt_chat_template_stop_ids); n_stop_ids of them, NULL when 0. trainrt_session_sample
     * generates exactly n_new and refuses stop ids. */
    const int32_t* stop_ids;
    size_t n_stop_ids;
} trainrt_sample_options;
#define TRAINRT_SAMPLE_OPTIONS_VERSION 2
#define TRAINRT_SAMPLE_OPTIONS_INIT \
    { (uint32_t)sizeof(trainrt_sample_options), TRAINRT_SAMPLE_OPTIONS_VERSION, 1.0, 0, 0, 1337, \
      NULL, 0 }
TRAINRT_API void trainrt_sample_options_init(trainrt_sample_options* options);
/* Generate n_new tokens continuing prompt (n_prompt >= 1 ids in [0, vocab_size)) into out
 * (out_cap >= n_new). The model reads a window of at most T = train.seq_len tokens: the
 * prompt's last T at first; when the text outgrows T, it goes on from the newest T/2 tokens
 * (so the window's keys and values can be cached: one token costs one row through the
 * model). options may be NULL (defaults above). Training state is unchanged. */
TRAINRT_API trainrt_status trainrt_session_sample(int32_t* out, size_t out_cap,
                                                  trainrt_session* session,
                                                  const int32_t* prompt, size_t n_prompt,
                                                  size_t n_new,
                                                  const trainrt_sample_options* options);
/* As trainrt_session_sample, but generation ends after a token of options->stop_ids (it is
 * the last id written) or after max_new tokens; *out_n = the ids written (out_n required). */
TRAINRT_API trainrt_status trainrt_session_generate(size_t* out_n, int32_t* out, size_t out_cap,
                                                    trainrt_session* session,
                                                    const int32_t* prompt, size_t n_prompt,
                                                    size_t max_new,
                                                    const trainrt_sample_options* options);

/* ---------------------------------------------------------------- parameters */
/* The model's tensors, read and written as fp32 while the session lives: for federated
 * averaging, personalisation, or inspecting a run. Tensors keep the table order of the
 * session's model (embeddings, then each block, then the final norm and the head; a LoRA
 * run's adapters after the linear they adapt) and their Hugging Face names and shapes
 * ("h.0.attn.c_attn.weight" [C, 3C] for GPT-2, "model.layers.0.self_attn.q_proj.weight"
 * [out, in] for Llama). The flat buffer is every tensor in that order, back to back, without
 * padding: trainrt_param_info.offset is where each one starts in it. */
#define TRAINRT_PARAM_ROLE_TOKEN_EMBEDDING    0
#define TRAINRT_PARAM_ROLE_POSITION_EMBEDDING 1
#define TRAINRT_PARAM_ROLE_NORM               2  /* LayerNorm / RMSNorm weight */
#define TRAINRT_PARAM_ROLE_NORM_BIAS          3
#define TRAINRT_PARAM_ROLE_LINEAR             4  /* a linear layer's weight */
#define TRAINRT_PARAM_ROLE_LINEAR_BIAS        5
#define TRAINRT_PARAM_ROLE_HEAD               6  /* an untied output head */
#define TRAINRT_PARAM_ROLE_LORA_A             7  /* a LoRA adapter's down projection [r, in] */
#define TRAINRT_PARAM_ROLE_LORA_B             8  /* its up projection [out, r] */
typedef struct trainrt_param_info {
    uint32_t struct_size;
    uint32_t version;      /* TRAINRT_PARAM_INFO_VERSION */
    int32_t role;          /* TRAINRT_PARAM_ROLE_* */
    int32_t ndim;          /* 1 or 2 */
    int64_t shape[4];      /* as in Hugging Face files; dims past ndim are 0 */
    int64_t numel;
    int64_t offset;        /* first element in the flat buffer */
    int32_t layer;         /* the block it belongs to; -1 for embeddings, final norm, head */
    int32_t trainable;     /* 1: the optimizer updates it; 0: frozen (LoRA base, train.trainable) */
} trainrt_param_info;
#define TRAINRT_PARAM_INFO_VERSION 1
#define TRAINRT_PARAM_INFO_INIT \
    { (uint32_t)sizeof(trainrt_param_info), TRAINRT_PARAM_INFO_VERSION, 0, 0, {0, 0, 0, 0}, \
      0, 0, 0, 0 }
TRAINRT_API void trainrt_param_info_init(trainrt_param_info* info);
/* How many tensors the model has (*out_tensors) and how many floats the flat buffer holds
 * (*out_numel); either pointer may be NULL. */
TRAINRT_API trainrt_status trainrt_session_param_count(int64_t* out_tensors, int64_t* out_numel,
                                                       trainrt_session* session);
/* Tensor `index` (0 .. count-1): its description into *out and its name into
 * (name_buf, cap, needed) as trainrt_config_dump. */
TRAINRT_API trainrt_status trainrt_session_param_info(trainrt_param_info* out, char* name_buf,
                                                      size_t cap, size_t* needed,
                                                      trainrt_session* session, int64_t index);
/* Copy the tensor called `name` (NULL: the whole flat buffer) into out, which holds exactly
 * count floats: its numel (TRAINRT_ERR_INVALID_ARGUMENT otherwise, saying the size expected;
 * an unknown name likewise, suggesting a tensor whose name is a near miss). The fp32 master
 * weights, as a checkpoint would save them. */
TRAINRT_API trainrt_status trainrt_session_read_params(float* out, size_t count,
                                                       trainrt_session* session,
                                                       const char* name);
/* Replace the tensor called `name` (NULL: every tensor, from a flat buffer) with count floats.
 * Data parallel: the ranks must keep equal weights, so make the same call, with the same
 * values, on every rank (a write on some ranks only lets the replicas drift apart).
 * Any tensor may be written, frozen ones included; the low-precision working copies (bf16,
 * fp16) are refreshed, so the next step and eval see the new values. The optimizer's moments,
 * step and schedule are kept. Refused with the session unchanged: a size mismatch
 * (TRAINRT_ERR_INVALID_ARGUMENT), a NaN or infinity (TRAINRT_ERR_NON_FINITE, naming the tensor
 * and element). */
TRAINRT_API trainrt_status trainrt_session_write_params(trainrt_session* session, const char* name,
                                                        const float* values, size_t count);

/* User metadata: string key/value pairs a session carries and its checkpoints save (in the
 * manifest; docs/FORMATS.md §4); trainrt_session_load and resuming restore them (replacing the
 * session's). Keys: 1-128 bytes of [A-Za-z0-9_.-]; values: UTF-8, up to 64 KiB; up to 256
 * keys and 16 MiB in all as JSON text. value = NULL removes the key (no error if absent,
 * whatever the key). Under data parallelism each rank keeps its own; rank 0's are saved. */
TRAINRT_API trainrt_status trainrt_session_set_metadata(trainrt_session* session,
                                                        const char* key, const char* value);
/* The value of key into (buf, cap, needed) as trainrt_config_dump; *found (may be NULL) is 1,
 * or 0 with an empty value when the session has no such key (not an error). */
TRAINRT_API trainrt_status trainrt_session_get_metadata(char* buf, size_t cap, size_t* needed,
                                                        int32_t* found, trainrt_session* session,
                                                        const char* key);
/* The number of keys, and key `index` (sorted bytewise) into (buf, cap, needed). */
TRAINRT_API trainrt_status trainrt_session_metadata_count(int64_t* out, trainrt_session* session);
TRAINRT_API trainrt_status trainrt_session_metadata_key(char* buf, size_t cap, size_t* needed,
                                                        trainrt_session* session, int64_t index);

/* ---------------------------------------------------------------- sizing */
/* What a config's model costs, computed without allocating it. */
typedef struct trainrt_model_info {
    uint32_t struct_size;
    uint32_t version;               /* TRAINRT_MODEL_INFO_VERSION */
    int64_t parameters;             /* the model's parameters (wte tied with the output; LoRA
                                       adapters included) */
    double flops_per_token;         /* training: 6 * parameters + 6 * n_layer * d_model * seq_len */
    int64_t bytes_parameters;       /* fp32 weights (+ bf16/fp16: the matmuls' working copy) */
    int64_t bytes_optimizer;        /* grads + AdamW m and v of the trainable parameters (fp32,
                                       or int8 codes + scales: optim.state_dtype) */
    int64_t bytes_activations;      /* activations + backward scratch for one micro-batch
                                       (train.recompute's plan) */
    int64_t bytes_total;            /* the three above: the backend memory a session holds */
    /* version 2 */
    int64_t trainable_parameters;   /* those that train: all, or [lora]'s adapters and
                                       train.trainable's tensors */
} trainrt_model_info;
#define TRAINRT_MODEL_INFO_VERSION 2
#define TRAINRT_MODEL_INFO_INIT \
    { (uint32_t)sizeof(trainrt_model_info), TRAINRT_MODEL_INFO_VERSION, 0, 0, 0, 0, 0, 0, 0 }
/* TRAINRT_ERR_CONFIG for train.batch_size = "auto" (the size is a session's to find, on its
 * device; `trainrt plan` shows it). */
TRAINRT_API trainrt_status trainrt_config_model_info(trainrt_model_info* out,
                                                     const trainrt_config* config);
/* A readable account of a config's model (what `trainrt info` prints): its family and shape,
 * then its parameters by part (embeddings, attention, MLP, norms, output head) with their
 * share. Lines end in '\n'; the wording is for people and may change between versions.
 * (buf, cap, needed) as trainrt_config_dump. */
TRAINRT_API trainrt_status trainrt_config_model_summary(char* buf, size_t cap, size_t* needed,
                                                        const trainrt_config* config);

/* ---------------------------------------------------------------- data */
/* Byte-level tokenization of a text file into llm.c shards (uint16, magic 20240520):
 * <out_dir>/train.bin gets the first (1 - val_fraction) of the bytes, <out_dir>/val.bin the
 * rest. out_dir is created if missing; files appear only when complete. The token counts
 * written go to *out_train_tokens / *out_val_tokens (each may be NULL). val_fraction in [0, 1];
 * 1 writes an evaluation-only folder: every byte in val.bin, an empty train.bin. */
TRAINRT_API trainrt_status trainrt_prepare_bytes(int64_t* out_train_tokens,
                                                 int64_t* out_val_tokens,
                                                 const char* text_path, const char* out_dir,
                                                 double val_fraction);

/* Tokenization of text with a Hugging Face tokenizer (see "tokenizers" below) into llm.c
 * shards: <out_dir>/train.bin and <out_dir>/val.bin, uint16 when every id fits (magic
 * 20240520), else uint32 (magic 20240801), each written to a temporary name and renamed when
 * complete. Every document begins with the tokenizer's end-of-text token (tokenizer_config.json's
 * eos_token beside the tokenizer file, else a SentencePiece model's eos piece, else
 * <|endoftext|>, <|end_of_text|> or </s>), as llm.c lays documents out. Text inputs: each file is a document. JSON-line inputs (jsonl_field set):
 * each line is an object whose string field jsonl_field is a document. val.bin gets the last
 * val_fraction of the input bytes: whole JSON-line documents, or for text the lines from the
 * first line start at the cut on, as a document of their own (val_fraction 0 writes an empty
 * val.bin, so a stale one cannot linger; 1 an empty train.bin: an evaluation-only folder). All cores by default. Text files are read as they
 * are encoded (memory does not grow with them), except with a tokenizer that must encode a
 * file whole (SentencePiece, or a prefix space): then each file is read whole, at most 4 GiB. */
/* Called now and then on the calling thread with the input bytes done of total. Return 0 to
 * go on, non-zero to stop: trainrt_prepare_text then returns TRAINRT_ERR_CANCELLED and
 * writes no shard. */
typedef int32_t (*trainrt_prepare_progress_fn)(int64_t done, int64_t total, void* payload);
typedef struct trainrt_prepare_options {
    uint32_t struct_size;         /* sizeof(trainrt_prepare_options) as the caller compiled it */
    uint32_t version;             /* TRAINRT_PREPARE_OPTIONS_VERSION */
    const char* tokenizer;        /* a tokenizer.json or .model, or a model folder (required) */
    const char* jsonl_field;      /* NULL: the inputs are text; else JSON lines and this field */
    double val_fraction;          /* [0, 1]; 1: an evaluation-only folder (empty train.bin) */
    int32_t threads;              /* 0 = all cores */
    int32_t reserved;             /* 0 */
    trainrt_prepare_progress_fn progress;  /* NULL = none */
    void* progress_payload;
    /* Version 2. 0: one train.bin and one val.bin (at most 2^31 - 1 tokens each, the format's
     * limit). N in [1, 2^31 - 1]: train_000000.bin, train_000001.bin, ... and val_000000.bin,
     * ... of at most N tokens each (data.train = "DIR/train_*.bin"). Either way, shards of an
     * earlier run in out_dir that this one did not write are removed. */
    int64_t shard_tokens;
    /* Version 3: instruction-tuning data (docs/FORMATS.md §1, "Loss masks"). chat 1: each
     * input line is a conversation ({"messages": [...], "tools": [...]?} or {"prompt",
     * "completion"}) rendered with the chat template of the tokenizer's model folder, as
     * transformers renders it; beside train.bin and val.bin go mask_train.bin and
     * mask_val.bin, each token's loss mask (loss_mask says which tokens are targets). One
     * file per split: jsonl_field and shard_tokens must be unset; threads is not used. */
    int32_t chat;
    int32_t loss_mask;            /* TRAINRT_LOSS_MASK_*: 0 = the default of each line's shape */
    const char* chat_template;    /* the name of one of the folder's templates; NULL = "default" */
    const char* template_vars;    /* a JSON object of more template variables; NULL = none */
} trainrt_prepare_options;
/* Which tokens of a chat example are targets (trainrt_prepare_options.loss_mask). */
#define TRAINRT_LOSS_MASK_DEFAULT 0    /* assistant for "messages", completion for prompt-completion */
#define TRAINRT_LOSS_MASK_ASSISTANT 1  /* every assistant turn, its end-of-turn token included */
#define TRAINRT_LOSS_MASK_COMPLETION 2 /* the completion; of "messages", the last assistant turn */
#define TRAINRT_LOSS_MASK_ALL 3        /* every token but the first */
#define TRAINRT_PREPARE_OPTIONS_VERSION 3
#define TRAINRT_PREPARE_OPTIONS_INIT \
    { (uint32_t)sizeof(trainrt_prepare_options), TRAINRT_PREPARE_OPTIONS_VERSION, NULL, NULL, \
      0.0, 0, 0, NULL, NULL, 0, 0, 0, NULL, NULL }
TRAINRT_API void trainrt_prepare_options_init(trainrt_prepare_options* options);
typedef struct trainrt_prepare_result {
    uint32_t struct_size;
    uint32_t version;       /* TRAINRT_PREPARE_RESULT_VERSION */
    int64_t documents;
    int64_t train_tokens;
    int64_t val_tokens;
    int64_t bytes;          /* input bytes tokenized */
    int32_t token_bytes;    /* 2 or 4: the shards' id width */
    int32_t vocab_size;     /* the tokenizer's: the smallest model.vocab_size for these shards */
    int32_t eos_id;         /* the end-of-text token that begins each document */
    int32_t reserved;
    int32_t train_shards;   /* version 2: files written (1 without shard_tokens) */
    int32_t val_shards;
    /* Version 3, chat data (documents then counts the conversations read): */
    int64_t examples;       /* written (a conversation in the per-turn form gives several) */
    int64_t target_tokens;  /* of both splits, the tokens whose loss counts */
    int64_t per_turn;       /* conversations written one example per assistant turn */
} trainrt_prepare_result;
#define TRAINRT_PREPARE_RESULT_VERSION 3
#define TRAINRT_PREPARE_RESULT_INIT \
    { (uint32_t)sizeof(trainrt_prepare_result), TRAINRT_PREPARE_RESULT_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, \
      0, 0, 0, 0, 0 }
TRAINRT_API void trainrt_prepare_result_init(trainrt_prepare_result* result);
/* inputs: n_inputs paths, read in order. out may be NULL. */
TRAINRT_API trainrt_status trainrt_prepare_text(trainrt_prepare_result* out,
                                                const char* const* inputs, size_t n_inputs,
                                                const char* out_dir,
                                                const trainrt_prepare_options* options);

/* ---------------------------------------------------------------- tokenizers */
/* A Hugging Face tokenizer of the byte-level BPE family (tokenizer.json: GPT-2, Llama 3 and
 * the like) or a SentencePiece model (tokenizer.model: Llama 2, TinyLlama; its ids are
 * spm_encode's, and text such as "</s>" is text, never a control id). Immutable once loaded:
 * unlike the other handles, one tokenizer may be used by several threads at once. A
 * tokenizer.json this library cannot reproduce exactly (another model type, a normalizer, an
 * unknown pre-tokenizer regex...) is refused at load with TRAINRT_ERR_UNSUPPORTED naming the
 * field; so is a tokenizer.model by a build without SentencePiece support. */
typedef struct trainrt_tokenizer trainrt_tokenizer;
/* path: a tokenizer.json or tokenizer.model (told apart by content), or a Hugging Face model
 * folder holding one (its tokenizer.model when it has both). */
TRAINRT_API trainrt_status trainrt_tokenizer_load(trainrt_tokenizer** out, const char* path);
/* Accepts NULL. */
TRAINRT_API void trainrt_tokenizer_destroy(trainrt_tokenizer* tokenizer);
/* The ids of text (len bytes of UTF-8; not UTF-8 is TRAINRT_ERR_INVALID_ARGUMENT naming the
 * byte). No special token is added; the text of an added token ("<|endoftext|>") becomes its
 * id. At most cap ids are stored (no terminator: cap = *needed is enough) and *needed
 * receives the full count; ids = NULL with cap = 0 is a size query. */
TRAINRT_API trainrt_status trainrt_tokenizer_encode(int32_t* ids, size_t cap, size_t* needed,
                                                    const trainrt_tokenizer* tokenizer,
                                                    const char* text, size_t len);
/* The text of n_ids ids (each in [0, vocab_size)), as trainrt_config_get_string returns
 * strings. The bytes may hold NUL (byte tokens) and, for a cut-off sequence, incomplete
 * UTF-8: *needed is the length. */
TRAINRT_API trainrt_status trainrt_tokenizer_decode(char* buf, size_t cap, size_t* needed,
                                                    const trainrt_tokenizer* tokenizer,
                                                    const int32_t* ids, size_t n_ids);
/* Ids run from 0 to vocab_size - 1 (the largest id, added tokens included, plus one): the
 * smallest model.vocab_size that can train on this tokenizer's shards. */
TRAINRT_API trainrt_status trainrt_tokenizer_vocab_size(int32_t* out,
                                                        const trainrt_tokenizer* tokenizer);
/* The id of a token given by its text: an added token ("<|endoftext|>") or a vocabulary entry
 * in its byte-level spelling ("Ġthe"). *out = -1 when there is none (TRAINRT_OK). */
TRAINRT_API trainrt_status trainrt_tokenizer_token_id(int32_t* out,
                                                      const trainrt_tokenizer* tokenizer,
                                                      const char* token);

/* ---------------------------------------------------------------- chat templates */
/* A model folder's chat template (its chat_template.jinja, else tokenizer_config.json's
 * "chat_template": a string, or a list of {"name", "template"}), rendered as Hugging Face
 * transformers renders it (apply_chat_template: Jinja2's sandbox with trim_blocks and
 * lstrip_blocks, raise_exception, strftime_now, tojson, {% generation %}); what the engine
 * does not support is refused at load naming the construct and its line
 * (docs/CHAT_TEMPLATES.md). Immutable once loaded: several threads may render at once. */
typedef struct trainrt_chat_template trainrt_chat_template;
/* name: one of the folder's named templates; NULL = "default" (or the only one). */
TRAINRT_API trainrt_status trainrt_chat_template_load(trainrt_chat_template** out,
                                                      const char* folder, const char* name);
/* Accepts NULL. */
TRAINRT_API void trainrt_chat_template_destroy(trainrt_chat_template* tmpl);
/* The text of a conversation: conversation_json is {"messages": [...], "tools": [...]?} or a
 * list of messages ({"role", "content", ...}); add_generation_prompt non-zero appends what
 * opens the assistant's reply; vars_json a JSON object of more template variables
 * ("enable_thinking": false, ...) or NULL. The folder's special tokens (bos_token,
 * eos_token, ...) are variables too, as transformers passes them. Returned as
 * trainrt_config_get_string returns strings. A template that raises (raise_exception, a
 * missing variable's attribute) is TRAINRT_ERR_INVALID_ARGUMENT with its message. */
TRAINRT_API trainrt_status trainrt_chat_template_render(char* buf, size_t cap, size_t* needed,
                                                        const trainrt_chat_template* tmpl,
                                                        const char* conversation_json,
                                                        int32_t add_generation_prompt,
                                                        const char* vars_json);
/* The byte ranges of that rendering written inside the template's {% generation %} ...
 * {% endgeneration %} blocks (what transformers' return_assistant_tokens_mask marks), as
 * begin, end pairs: ranges[2i] and ranges[2i + 1]. At most cap values are stored and *needed
 * receives the count (twice the ranges; ranges = NULL, cap = 0: a size query). Arguments as
 * trainrt_chat_template_render; a template without such blocks gives none. */
TRAINRT_API trainrt_status trainrt_chat_template_generation_spans(
    size_t* ranges, size_t cap, size_t* needed, const trainrt_chat_template* tmpl,
    const char* conversation_json, int32_t add_generation_prompt, const char* vars_json);
/* The ids a reply ends with (generation_config.json's eos_token_id, a number or a list,
 * else tokenizer_config.json's eos_token), for trainrt_sample_options.stop_ids: at most cap
 * are stored and *needed receives the count (ids = NULL, cap = 0: a size query). tokenizer:
 * the folder's. */
TRAINRT_API trainrt_status trainrt_chat_template_stop_ids(int32_t* ids, size_t cap,
                                                          size_t* needed,
                                                          const trainrt_chat_template* tmpl,
                                                          const trainrt_tokenizer* tokenizer);

/* Train a byte-level BPE tokenizer (GPT-2's pre-tokenizer regex and byte alphabet: any text
 * round-trips) on text files and write it to out_path as a Hugging Face tokenizer.json, which
 * trainrt_tokenizer_load, trainrt_prepare_text and the Hugging Face libraries read. The
 * special tokens take ids 0.., then the 256 bytes, then one token per merge, most frequent
 * pair first, until vocab_size or until no pair occurs min_frequency times. Special-token
 * strings in the text separate pieces and are not learnt from. The files are streamed
 * (memory grows with the distinct pre-tokenized pieces, not the text); the output is written
 * to a temporary name and renamed when complete, and an existing out_path is refused
 * (TRAINRT_ERR_IO) unless options->overwrite. Deterministic: the same text, the same file. */
typedef struct trainrt_tokenizer_train_options {
    uint32_t struct_size;   /* sizeof(trainrt_tokenizer_train_options) as the caller compiled it */
    uint32_t version;       /* TRAINRT_TOKENIZER_TRAIN_OPTIONS_VERSION */
    int32_t vocab_size;     /* required: at least 256 + the special tokens */
    int32_t overwrite;      /* non-zero: replace an existing out_path */
    int64_t min_frequency;  /* >= 1; 2 by default */
    /* NULL (n_special_tokens 0): "<|endoftext|>" alone; else these n (possibly none). */
    const char* const* special_tokens;
    size_t n_special_tokens;
} trainrt_tokenizer_train_options;
#define TRAINRT_TOKENIZER_TRAIN_OPTIONS_VERSION 1
#define TRAINRT_TOKENIZER_TRAIN_OPTIONS_INIT \
    { (uint32_t)sizeof(trainrt_tokenizer_train_options), TRAINRT_TOKENIZER_TRAIN_OPTIONS_VERSION, \
      0, 0, 2, NULL, 0 }
TRAINRT_API void trainrt_tokenizer_train_options_init(trainrt_tokenizer_train_options* options);
typedef struct trainrt_tokenizer_train_result {
    uint32_t struct_size;
    uint32_t version;         /* TRAINRT_TOKENIZER_TRAIN_RESULT_VERSION */
    int64_t bytes;            /* input bytes read */
    int64_t pieces;           /* pre-tokenized pieces counted */
    int64_t distinct_pieces;
    int32_t vocab_size;       /* written: below options.vocab_size when no pair was left */
    int32_t merges;
} trainrt_tokenizer_train_result;
#define TRAINRT_TOKENIZER_TRAIN_RESULT_VERSION 1
#define TRAINRT_TOKENIZER_TRAIN_RESULT_INIT \
    { (uint32_t)sizeof(trainrt_tokenizer_train_result), TRAINRT_TOKENIZER_TRAIN_RESULT_VERSION, \
      0, 0, 0, 0, 0 }
TRAINRT_API void trainrt_tokenizer_train_result_init(trainrt_tokenizer_train_result* result);
/* inputs: n_inputs text files (UTF-8), read in order. out may be NULL. */
TRAINRT_API trainrt_status trainrt_tokenizer_train(trainrt_tokenizer_train_result* out,
                                                   const char* const* inputs, size_t n_inputs,
                                                   const char* out_path,
                                                   const trainrt_tokenizer_train_options* options);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRAINRT_TRAINRT_H */
