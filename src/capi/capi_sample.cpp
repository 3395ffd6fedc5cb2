// C API: trainrt_session_sample — text generation from the session's current weights.
#include <cstddef>
#include <cstdint>

#include "capi/barrier.h"
#include "capi/signal_stack.h"
#include "capi/handles.h"
#include "capi/versioned.h"

using namespace trt;
using capi::guarded;
using capi::require;

extern "C" {

TRAINRT_API void trainrt_sample_options_init(trainrt_sample_options* options) {
    if (options == nullptr) return;
    *options = trainrt_sample_options TRAINRT_SAMPLE_OPTIONS_INIT;
}

namespace {

// The shared body of sample and generate (fn names the entry point in errors).
size_t sample_or_generate(const char* fn, bool stops, int32_t* out, size_t out_cap,
                          trainrt_session* session, const int32_t* prompt, size_t n_prompt,
                          size_t n_new, const trainrt_sample_options* options) {
    require(session, fn, "session");
    require(prompt, fn, "prompt");
    if (n_new > 0) require(out, fn, "out");
    if (out_cap < n_new)
        fail(Status::InvalidArgument, fn, ": out holds ", out_cap,
             " ids but n_new = ", n_new);
    // Counts no buffer can hold (prompt and generated ids together are one array of
    // int32): refused here, before n_prompt + n_new could wrap in the session's sizing.
    constexpr size_t kMaxIds = static_cast<size_t>(PTRDIFF_MAX) / sizeof(int32_t);
    if (n_prompt > kMaxIds)
        fail(Status::InvalidArgument, fn, ": n_prompt = ", n_prompt,
             " ids cannot be in memory (at most ", kMaxIds, ")");
    if (n_new > kMaxIds - n_prompt)
        fail(Status::InvalidArgument, fn, ": n_new = ", n_new, " with ",
             "n_prompt = ", n_prompt, " is more ids than memory can hold (at most ", kMaxIds,
             " together)");
    const trainrt_sample_options o = capi::read_versioned(
        options, trainrt_sample_options TRAINRT_SAMPLE_OPTIONS_INIT, fn);
    TokenSamplingOptions so;
    so.temperature = o.temperature;
    so.top_k = o.top_k;
    so.seed = o.seed;
    if (o.n_stop_ids > 0) {
        if (!stops)
            fail(Status::InvalidArgument, fn, ": options->n_stop_ids = ", o.n_stop_ids,
                 ", but this entry point generates exactly n_new ids; stop ids go to "
                 "trainrt_session_generate");
        require(o.stop_ids, fn, "options->stop_ids");
        if (o.n_stop_ids > 4096)
            fail(Status::InvalidArgument, fn, ": options->n_stop_ids = ", o.n_stop_ids,
                 " (at most 4096)");
        so.stop_ids.assign(o.stop_ids, o.stop_ids + o.n_stop_ids);
    }
    capi::BusyGuard busy(session->busy, fn);
    const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
    return session->session->sample(prompt, n_prompt, n_new, so, out);
}

}  // namespace

TRAINRT_API trainrt_status trainrt_session_sample(int32_t* out, size_t out_cap,
                                                  trainrt_session* session,
                                                  const int32_t* prompt, size_t n_prompt,
                                                  size_t n_new,
                                                  const trainrt_sample_options* options) {
    return guarded("trainrt_session_sample", [&] {
        sample_or_generate("trainrt_session_sample", false, out, out_cap, session, prompt,
                           n_prompt, n_new, options);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_generate(size_t* out_n, int32_t* out, size_t out_cap,
                                                    trainrt_session* session,
                                                    const int32_t* prompt, size_t n_prompt,
                                                    size_t max_new,
                                                    const trainrt_sample_options* options) {
    return guarded("trainrt_session_generate", [&] {
        require(out_n, "trainrt_session_generate", "out_n");
        *out_n = 0;
        *out_n = sample_or_generate("trainrt_session_generate", true, out, out_cap, session,
                                    prompt, n_prompt, max_new, options);
        return TRAINRT_OK;
    });
}

}  // extern "C"
