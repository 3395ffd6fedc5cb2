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

TRAINRT_API trainrt_status trainrt_session_sample(int32_t* out, size_t out_cap,
                                                  trainrt_session* session,
                                                  const int32_t* prompt, size_t n_prompt,
                                                  size_t n_new,
                                                  const trainrt_sample_options* options) {
    return guarded("trainrt_session_sample", [&] {
        require(session, "trainrt_session_sample", "session");
        require(prompt, "trainrt_session_sample", "prompt");
        if (n_new > 0) require(out, "trainrt_session_sample", "out");
        if (out_cap < n_new)
            fail(Status::InvalidArgument, "trainrt_session_sample: out holds ", out_cap,
                 " ids but n_new = ", n_new);
        // Counts no buffer can hold (prompt and generated ids together are one array of
        // int32): refused here, before n_prompt + n_new could wrap in the session's sizing.
        constexpr size_t kMaxIds = static_cast<size_t>(PTRDIFF_MAX) / sizeof(int32_t);
        if (n_prompt > kMaxIds)
            fail(Status::InvalidArgument, "trainrt_session_sample: n_prompt = ", n_prompt,
                 " ids cannot be in memory (at most ", kMaxIds, ")");
        if (n_new > kMaxIds - n_prompt)
            fail(Status::InvalidArgument, "trainrt_session_sample: n_new = ", n_new, " with ",
                 "n_prompt = ", n_prompt, " is more ids than memory can hold (at most ", kMaxIds,
                 " together)");
        const trainrt_sample_options o = capi::read_versioned(
            options, trainrt_sample_options TRAINRT_SAMPLE_OPTIONS_INIT, "trainrt_session_sample");
        TokenSamplingOptions so;
        so.temperature = o.temperature;
        so.top_k = o.top_k;
        so.seed = o.seed;
        capi::BusyGuard busy(session->busy, "trainrt_session_sample");
        const capi::SignalStackScope signal_stack;  // signal_stack.h: oneDNN
        session->session->sample(prompt, n_prompt, n_new, so, out);
        return TRAINRT_OK;
    });
}

}  // extern "C"
