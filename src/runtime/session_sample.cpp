// Session: text generation (trainrt_session_sample). The model reads a window of the text:
// the prompt's last T tokens (T = train.seq_len) at first; when prompt + generated text
// outgrow T, the window restarts from its newest T/2 tokens and grows again. Restarting by
// halves rather than sliding by one token lets the keys and values of the window's tokens be
// cached (a sliding window gives every token a new position each step): each token then
// costs one row through the model instead of the whole window, plus a re-read of T/2 tokens
// per T/2 generated. Without the cache (TokenSamplingOptions::kv_cache false, or a backend
// whose cached attention is not verified) every token re-runs its whole window: the same
// tokens, the reference the cached path is tested against.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/session.h"

namespace trt {

size_t Session::sample(const int32_t* prompt, size_t n_prompt, size_t n_new,
                       const TokenSamplingOptions& options, int32_t* out) {
    if (n_prompt < 1)
        fail(Status::InvalidArgument, "sample: the prompt needs at least one token");
    // The context holds prompt + generated tokens: their count must not wrap.
    constexpr size_t kMaxContext = std::numeric_limits<size_t>::max() / sizeof(int32_t) / 2;
    if (n_prompt > kMaxContext || n_new > kMaxContext - n_prompt)
        fail(Status::InvalidArgument, "sample: n_prompt + n_new = ", n_prompt, " + ", n_new,
             " tokens cannot be held in memory");
    check_tokens(prompt, n_prompt);
    if (!(options.temperature >= 0.0) || !std::isfinite(options.temperature))
        fail(Status::InvalidArgument, "sample: temperature = ", options.temperature,
             " must be >= 0 (0 = greedy)");
    if (options.top_k < 0)
        fail(Status::InvalidArgument, "sample: top_k = ", options.top_k, " must be >= 0");
    sync();  // steps in flight still write the weights
    const BackendCaps caps = backend_->capabilities();
    const bool cached = options.kv_cache && caps.cached_attention &&
                        (caps.cached_attention_max_positions == 0 ||
                         model_->max_seq() <= caps.cached_attention_max_positions);
    // The cache lives for this call only: training's memory (trainrt plan's figures) stays
    // what it was.
    struct ReleaseCache {
        Decoder& model;
        ~ReleaseCache() { model.release_kv_cache(); }
    } release{*model_};
    const size_t T = static_cast<size_t>(model_->max_seq());
    const size_t keep = std::max<size_t>(1, T / 2);
    const int V = static_cast<int>(run_.model.vocab_size);
    std::vector<int32_t> context(prompt, prompt + n_prompt);
    context.reserve(n_prompt + n_new);
    size_t w0 = context.size() > T ? context.size() - T : 0;  // the window: context[w0, end)
    size_t in_cache = 0;  // the window's first tokens whose keys and values are cached
    std::vector<float> row(static_cast<size_t>(V));
    // With a device draw: the id and the non-finite flag in backend memory (draw_token), for
    // this call only.
    struct Drawn {
        Backend& be;
        int32_t* p = nullptr;
        ~Drawn() { be.free(p); }
    } drawn{*backend_};
    if (caps.device_draw || options.backend_draw)
        drawn.p = static_cast<int32_t*>(backend_->alloc(2 * sizeof(int32_t), "the drawn token"));
    size_t last_row = 0;  // the row of the logits buffer the next token is drawn from
    for (size_t i = 0; i < n_new; ++i) {
        if (context.size() - w0 > T) {
            w0 = context.size() - keep;
            in_cache = 0;
        }
        const size_t t = context.size() - w0;
        if (cached) {
            // The window's tokens not yet cached: all of it after a restart, else the newest.
            const size_t n = t - in_cache;
            backend_->copy_to_device(model_->inputs_buffer(), context.data() + w0 + in_cache,
                                     n * sizeof(int32_t));
            model_->forward_cached(model_->inputs_buffer(), static_cast<int>(in_cache),
                                   static_cast<int>(n));
            in_cache = t;
            last_row = n - 1;
        } else {
            std::copy(context.begin() + static_cast<ptrdiff_t>(w0), context.end(),
                      inputs_.begin());
            std::fill(targets_.begin(), targets_.begin() + static_cast<ptrdiff_t>(t), 0);
            backend_->copy_to_device(model_->inputs_buffer(), inputs_.data(),
                                     t * sizeof(int32_t));
            backend_->copy_to_device(model_->targets_buffer(), targets_.data(),
                                     t * sizeof(int32_t));  // the loss is computed, not used
            model_->forward(model_->inputs_buffer(), model_->targets_buffer(), 1,
                            static_cast<int>(t));
            last_row = t - 1;
        }
        int32_t next = 0;
        if (drawn.p) {
            backend_->draw_token(drawn.p, model_->logits_row(last_row), V, token_draw(options, i));
            int32_t got[2];
            backend_->copy_to_host(got, drawn.p, sizeof got);
            if (got[1] != 0)
                fail(Status::InvalidArgument,
                     "sample: the model's logits are not finite (a NaN "
                     "or infinite logit in the row of token ",
                     i,
                     "): its weights have "
                     "diverged; load an earlier checkpoint");
            next = got[0];
        } else {
            model_->copy_logits_to_host(row.data(), last_row, 1, static_cast<size_t>(V));
            for (int k = 0; k < V; ++k)
                if (!std::isfinite(row[k]))
                    fail(Status::InvalidArgument, "sample: the model's logits are not finite (",
                         row[k], " for token ", k,
                         "): its weights have diverged; load an "
                         "earlier checkpoint");
            next = sample_token(row.data(), V, options, i);
        }
        out[i] = next;
        context.push_back(next);
        if (std::find(options.stop_ids.begin(), options.stop_ids.end(), next) !=
            options.stop_ids.end())
            return i + 1;
    }
    return n_new;
}

}  // namespace trt
