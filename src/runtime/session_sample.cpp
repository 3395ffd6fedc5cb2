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
#include <cstddef>
#include <limits>

#include "runtime/session.h"
#include "runtime/step_engine.h"

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
    // A backend that draws in its own memory (BackendCaps::device_draw; every backend with
    // TokenSamplingOptions::backend_draw): the id and the non-finite flag there (draw_token),
    // and, with the cache, each single new token run as decode_step — its position and draw
    // index uploaded to backend memory, so with graphs (accel.cuda_graphs) the step is captured
    // once per call and replayed, reading the token drawn before it as its input.
    const bool draw_in_backend = caps.device_draw || options.backend_draw;
    struct DecodeInputs {  // backend memory, uploaded before each decode step
        uint64_t index;    // the draw's index (TokenDraw::index_at)
        int32_t pos;       // the new token's position (decode_step)
        int32_t drawn[2];  // draw_token's id and flag: the next step's input
    };
    struct Buffer {
        Backend& be;
        DecodeInputs* p = nullptr;
        ~Buffer() { be.free(p); }
    } dev{*backend_};
    if (draw_in_backend)
        dev.p = static_cast<DecodeInputs*>(backend_->alloc(sizeof(DecodeInputs), "decode inputs"));
    GraphRunner decode_graph(*backend_, log_, kDecodeGraph, "decode step");
    if (draw_in_backend && cached && backend_->supports_graphs() && run_.accel.cuda_graphs)
        decode_graph.set_state(GraphRunner::State::Warmup);
    for (size_t i = 0; i < n_new; ++i) {
        if (context.size() - w0 > T) {
            w0 = context.size() - keep;
            in_cache = 0;
        }
        const size_t t = context.size() - w0;
        size_t last_row = 0;  // the row of the logits buffer the token is drawn from
        bool drawn = false;   // by the decode step
        if (cached) {
            // The window's tokens not yet cached: all of it after a restart, else the newest.
            const size_t n = t - in_cache;
            if (dev.p != nullptr && n == 1 && i > 0) {
                // The one new token is the one drawn last, still in dev.p->drawn[0].
                DecodeInputs in{};
                in.index = i;
                in.pos = static_cast<int32_t>(in_cache);
                backend_->upload_step_inputs(&dev.p->index, &in, offsetof(DecodeInputs, drawn));
                decode_graph.run([&] {
                    model_->decode_step(dev.p->drawn, &dev.p->pos);
                    TokenDraw d = token_draw(options, i);
                    d.index_at = &dev.p->index;
                    backend_->draw_token(dev.p->drawn, model_->logits_row(0), V, d);
                });
                drawn = true;
            } else {
                backend_->copy_to_device(model_->inputs_buffer(), context.data() + w0 + in_cache,
                                         n * sizeof(int32_t));
                model_->forward_cached(model_->inputs_buffer(), static_cast<int>(in_cache),
                                       static_cast<int>(n));
                last_row = n - 1;
            }
            in_cache = t;
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
        if (dev.p != nullptr) {
            if (!drawn)
                backend_->draw_token(dev.p->drawn, model_->logits_row(last_row), V,
                                     token_draw(options, i));
            int32_t got[2];
            backend_->copy_to_host(got, dev.p->drawn, sizeof got);
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
