// C API: trainrt_session_* — thin wrappers over trt::Session.
#include <cstring>
#include <string_view>
#include <vector>

#include "capi/barrier.h"
#include "capi/signal_stack.h"
#include "capi/handles.h"
#include "capi/versioned.h"
#include "data/prepare_text.h"

using namespace trt;
using capi::guarded;
using capi::fill_versioned;
using capi::require;

namespace {

void fill_step_result(trainrt_step_result* out, const StepResult& r, const char* function) {
    if (out == nullptr) return;
    trainrt_step_result full{};
    full.struct_size = sizeof full;
    full.version = TRAINRT_STEP_RESULT_VERSION;
    full.step = r.step;
    full.loss = r.loss;
    full.lr = r.lr;
    full.grad_norm = r.grad_norm;
    full.tokens = r.tokens;
    full.tokens_total = r.tokens_total;
    full.ms = r.ms;
    fill_versioned(out, full, function);
}

// Validates the output struct before any work is done, so a bad struct changes nothing.
void check_out_struct(const trainrt_step_result* out, const char* function) {
    if (out != nullptr && out->struct_size < 2 * sizeof(uint32_t))
        fail(Status::InvalidArgument, function, ": out->struct_size = ", out->struct_size,
             " is too small; initialise it with trainrt_step_result_init()");
}

void check_eval_out(const trainrt_eval_result* out, const char* function) {
    require(out, function, "out");
    if (out->struct_size < 2 * sizeof(uint32_t))
        fail(Status::InvalidArgument, function, ": out->struct_size = ", out->struct_size,
             " is too small; initialise it with trainrt_eval_result_init() or "
             "TRAINRT_EVAL_RESULT_INIT");
}

void fill_eval_result(trainrt_eval_result* out, const WholeEvalResult& r, const char* function) {
    trainrt_eval_result full{};
    full.struct_size = sizeof full;
    full.version = TRAINRT_EVAL_RESULT_VERSION;
    full.loss = r.loss;
    full.perplexity = r.perplexity;
    full.tokens = r.tokens;
    full.windows = r.windows;
    fill_versioned(out, full, function);
}

}  // namespace

extern "C" {

TRAINRT_API void trainrt_eval_result_init(trainrt_eval_result* result) {
    if (result == nullptr) return;
    *result = trainrt_eval_result TRAINRT_EVAL_RESULT_INIT;
}

TRAINRT_API void trainrt_step_result_init(trainrt_step_result* result) {
    if (result == nullptr) return;
    *result = trainrt_step_result TRAINRT_STEP_RESULT_INIT;
}

TRAINRT_API void trainrt_metrics_init(trainrt_metrics* metrics) {
    if (metrics == nullptr) return;
    *metrics = trainrt_metrics TRAINRT_METRICS_INIT;
}

TRAINRT_API trainrt_status trainrt_session_create(trainrt_session** out,
                                                  const trainrt_config* config) {
    return guarded("trainrt_session_create", [&] {
        require(out, "trainrt_session_create", "out");
        require(config, "trainrt_session_create", "config");
        // The config is read under its guard (a copy), the session built outside it: building
        // takes long and logs through the sink, whose callback may use the config handle.
        std::unique_ptr<Config> copy;
        LogSink sink;
        const void* mpi_comm = nullptr;
        {
            capi::BusyGuard busy(config->busy, "trainrt_session_create");
            copy = std::make_unique<Config>(config->config);
            sink = config->log_sink;
            mpi_comm = config->mpi_comm;
        }
        // The host's own MPI communicator (trainrt_config_set_mpi_comm), joined here.
        std::shared_ptr<dist::Communicator> world;
        if (mpi_comm && copy->run().dist.backend != DistBackend::None)
            world = dist::join_mpi_world(copy->run().dist.timeout, mpi_comm);
        auto handle = std::make_unique<trainrt_session>();
        handle->session = std::make_unique<Session>(*copy, sink, BackendFactory{}, world);
        *out = handle.release();
        return TRAINRT_OK;
    });
}

TRAINRT_API void trainrt_session_destroy(trainrt_session* session) {
    try {
        delete session;
    } catch (...) {
        // Destructors do not throw; nothing may escape to the host regardless.
    }
}

TRAINRT_API trainrt_status trainrt_session_set_log(trainrt_session* session, trainrt_log_fn fn,
                                                   void* payload, int32_t min_level) {
    return guarded("trainrt_session_set_log", [&] {
        require(session, "trainrt_session_set_log", "session");
        capi::require_log_level(min_level, "trainrt_session_set_log");
        capi::BusyGuard busy(session->busy, "trainrt_session_set_log");
        session->session->set_log_sink(LogSink{fn, payload, min_level});
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_step(trainrt_step_result* out,
                                                trainrt_session* session) {
    return guarded("trainrt_session_step", [&] {
        require(session, "trainrt_session_step", "session");
        check_out_struct(out, "trainrt_session_step");
        capi::BusyGuard busy(session->busy, "trainrt_session_step");
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        const StepResult r = session->session->step();
        fill_step_result(out, r, "trainrt_session_step");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_step_tokens(trainrt_step_result* out,
                                                       trainrt_session* session,
                                                       const int32_t* tokens,
                                                       size_t n_tokens) {
    return guarded("trainrt_session_step_tokens", [&] {
        require(session, "trainrt_session_step_tokens", "session");
        require(tokens, "trainrt_session_step_tokens", "tokens");
        check_out_struct(out, "trainrt_session_step_tokens");
        capi::BusyGuard busy(session->busy, "trainrt_session_step_tokens");
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        const StepResult r = session->session->step_tokens(tokens, n_tokens);
        fill_step_result(out, r, "trainrt_session_step_tokens");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_step_masked(trainrt_step_result* out,
                                                       trainrt_session* session,
                                                       const int32_t* tokens, size_t n_tokens,
                                                       const uint8_t* loss_mask,
                                                       const int32_t* positions, size_t n_mask) {
    return guarded("trainrt_session_step_masked", [&] {
        require(session, "trainrt_session_step_masked", "session");
        require(tokens, "trainrt_session_step_masked", "tokens");
        check_out_struct(out, "trainrt_session_step_masked");
        capi::BusyGuard busy(session->busy, "trainrt_session_step_masked");
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        const StepResult r =
            session->session->step_masked(tokens, n_tokens, loss_mask, positions, n_mask);
        fill_step_result(out, r, "trainrt_session_step_masked");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_sync(trainrt_step_result* out,
                                                trainrt_session* session) {
    return guarded("trainrt_session_sync", [&] {
        require(session, "trainrt_session_sync", "session");
        check_out_struct(out, "trainrt_session_sync");
        capi::BusyGuard busy(session->busy, "trainrt_session_sync");
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        fill_step_result(out, session->session->sync(), "trainrt_session_sync");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_eval(double* out_loss, trainrt_session* session) {
    return guarded("trainrt_session_eval", [&] {
        require(out_loss, "trainrt_session_eval", "out_loss");
        require(session, "trainrt_session_eval", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_eval");
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        *out_loss = session->session->eval();
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_eval_whole(trainrt_eval_result* out,
                                                      trainrt_session* session) {
    constexpr const char* kFn = "trainrt_session_eval_whole";
    return guarded(kFn, [&] {
        check_eval_out(out, kFn);
        require(session, kFn, "session");
        capi::BusyGuard busy(session->busy, kFn);
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        fill_eval_result(out, session->session->eval_whole(), kFn);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_eval_tokens(trainrt_eval_result* out,
                                                       trainrt_session* session,
                                                       const int32_t* tokens, size_t n_tokens) {
    constexpr const char* kFn = "trainrt_session_eval_tokens";
    return guarded(kFn, [&] {
        check_eval_out(out, kFn);
        require(session, kFn, "session");
        require(tokens, kFn, "tokens");
        capi::BusyGuard busy(session->busy, kFn);
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        fill_eval_result(out, session->session->eval_whole_tokens(tokens, n_tokens), kFn);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_eval_text(trainrt_eval_result* out,
                                                     trainrt_session* session, const char* text,
                                                     size_t len, const char* tokenizer) {
    constexpr const char* kFn = "trainrt_session_eval_text";
    return guarded(kFn, [&] {
        check_eval_out(out, kFn);
        require(session, kFn, "session");
        if (text == nullptr && len != 0)
            fail(Status::InvalidArgument, kFn, ": text is NULL but len is ", len);
        capi::BusyGuard busy(session->busy, kFn);
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        const std::string_view body(text != nullptr ? text : "", len);
        // As prepare lays out one text file: bytes, or the EOS token and the text's ids.
        std::vector<int32_t> ids;
        if (tokenizer == nullptr) {
            ids.assign(body.begin(), body.end());
            for (int32_t& id : ids) id &= 0xFF;  // bytes, whatever the char signedness
        } else {
            const std::vector<uint32_t> enc = encode_text_document(tokenizer, body);
            ids.assign(enc.begin(), enc.end());
        }
        fill_eval_result(out, session->session->eval_whole_tokens(ids.data(), ids.size()), kFn);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_forward(double* out_loss, float* logits,
                                                   size_t logits_cap, trainrt_session* session,
                                                   const int32_t* tokens, int64_t rows,
                                                   int64_t seq_len) {
    return guarded("trainrt_session_forward", [&] {
        require(session, "trainrt_session_forward", "session");
        require(tokens, "trainrt_session_forward", "tokens");
        capi::BusyGuard busy(session->busy, "trainrt_session_forward");
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        const double loss =
            session->session->forward(tokens, rows, seq_len, logits, logits_cap);
        if (out_loss != nullptr) *out_loss = loss;
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_train(trainrt_session* session, int64_t n_steps,
                                                 trainrt_progress_fn callback, void* payload) {
    return guarded("trainrt_session_train", [&] {
        require(session, "trainrt_session_train", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_train");
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        ProgressCallback cb;
        if (callback != nullptr)
            cb = [callback, payload](const trainrt_progress& p) { return callback(&p, payload) == 0; };
        const TrainOutcome outcome = session->session->train(n_steps, cb);
        return outcome == TrainOutcome::Stopped ? TRAINRT_STOPPED : TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_request_stop(trainrt_session* session) {
    // No allocation, no lock: safe from another thread and from a signal handler.
    if (session == nullptr)
        return capi::set_error(TRAINRT_ERR_INVALID_ARGUMENT,
                               "trainrt_session_request_stop: session must not be NULL");
    session->session->request_stop();
    return TRAINRT_OK;
}

TRAINRT_API trainrt_status trainrt_session_metrics(trainrt_metrics* out,
                                                   trainrt_session* session) {
    return guarded("trainrt_session_metrics", [&] {
        require(out, "trainrt_session_metrics", "out");
        require(session, "trainrt_session_metrics", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_metrics");
        const SessionMetrics m = session->session->metrics();
        trainrt_metrics full{};
        full.struct_size = sizeof full;
        full.version = TRAINRT_METRICS_VERSION;
        full.step = m.step;
        full.tokens_total = m.tokens_total;
        full.tokens_per_s = m.tokens_per_s;
        full.step_ms_p50 = m.step_ms_p50;
        full.step_ms_p95 = m.step_ms_p95;
        full.bytes_in_use = m.bytes_in_use;
        full.last_loss = m.last_loss;
        full.last_val_loss = m.last_val_loss;
        full.bytes_reserved = m.bytes_reserved;
        full.skipped_steps = m.skipped_steps;
        full.loss_scale = m.loss_scale;
        full.model_flops_per_token = m.model_flops_per_token;
        full.peak_flops = m.peak_flops;
        full.mfu = m.mfu;
        full.rank = m.rank;
        full.world_size = m.world_size;
        fill_versioned(out, full, "trainrt_session_metrics");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_config_dump(char* buf, size_t cap, size_t* needed,
                                                       trainrt_session* session) {
    return guarded("trainrt_session_config_dump", [&] {
        require(session, "trainrt_session_config_dump", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_config_dump");
        capi::copy_string(buf, cap, needed, session->session->config().dump(),
                          "trainrt_session_config_dump");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_profile(char* buf, size_t cap, size_t* needed,
                                                   trainrt_session* session) {
    return guarded("trainrt_session_profile", [&] {
        require(session, "trainrt_session_profile", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_profile");
        capi::copy_string(buf, cap, needed, session->session->profile_json(),
                          "trainrt_session_profile");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_profile_reset(trainrt_session* session) {
    return guarded("trainrt_session_profile_reset", [&] {
        require(session, "trainrt_session_profile_reset", "session");
        capi::BusyGuard busy(session->busy, "trainrt_session_profile_reset");
        session->session->reset_profile();
        return TRAINRT_OK;
    });
}

}  // extern "C"
