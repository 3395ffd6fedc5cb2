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
#include <deque>
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
    // The text: the prompt and the tokens handed out so far (context), then the ones drawn
    // whose ids are still on their way back (pending, below); len counts both.
    std::vector<int32_t> context(prompt, prompt + n_prompt);
    context.reserve(n_prompt + n_new);
    size_t w0 = context.size() > T ? context.size() - T : 0;  // the window: text[w0, len)
    size_t in_cache = 0;  // the window's first tokens whose keys and values are cached
    std::vector<float> row(static_cast<size_t>(V));
    // A backend that draws in its own memory (BackendCaps::device_draw; every backend with
    // TokenSamplingOptions::backend_draw): the id and the non-finite flag there (draw_token),
    // and, with the cache, each single new token run as decode_step — its position and draw
    // index uploaded to backend memory, its input the token drawn before it — so with graphs
    // (accel.cuda_graphs) the step is captured once per call and replayed, and the ids come
    // back through the backend's read-back ring without a wait per token: the host stays up to
    // kDecodeAhead (8) tokens behind (a stop id then ends the text where it is, the tokens
    // drawn after it unused), and catches up before anything that needs the text (a restart).
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
    decode_graph.set_quiet(true);  // captured again in every call: not worth a line each time
    if (draw_in_backend && cached && backend_->supports_graphs() && run_.accel.cuda_graphs &&
        profiler_ == nullptr)
        decode_graph.set_state(GraphRunner::State::Warmup);
    // The graph holds this call's KV cache, inputs and scratch: it goes with them.
    struct DropGraph {
        Backend& be;
        bool on;
        ~DropGraph() {
            if (on) be.drop_graph(kDecodeGraph);
        }
    } drop_graph{*backend_, decode_graph.state() != GraphRunner::State::Off};
    // Ids read back at most this many tokens late (upload_step_inputs' own ring of
    // OptimizerStep::kScalarSlots staging slots bounds the queue to about as many steps).
    constexpr size_t kDecodeAhead = 8;
    static_assert(kDecodeAhead < Backend::kReadbackSlots, "a slot is reused after its read");
    std::deque<size_t> pending;  // draws i whose ids are in read-back slot i % kReadbackSlots
    size_t done = n_new;         // < n_new: a stop id ended the text after done tokens
    // Hands out token i with its flag: out[i], the text, the stop ids.
    auto hand_out = [&](size_t i, const int32_t got[2]) {
        if (got[1] != 0)
            fail(Status::InvalidArgument, "sample: the model's logits are not finite (a NaN "
                 "or infinite logit in the row of token ", i, "): its weights have diverged; "
                 "load an earlier checkpoint");
        out[i] = got[0];
        context.push_back(got[0]);
        if (std::find(options.stop_ids.begin(), options.stop_ids.end(), got[0]) !=
            options.stop_ids.end())
            done = i + 1;
    };
    // Waits for the pending ids, oldest first, while more than `left` are in flight.
    auto catch_up = [&](size_t left) {
        while (pending.size() > left && done == n_new) {
            const size_t i = pending.front();
            pending.pop_front();
            int32_t got[2];
            backend_->read_back(static_cast<int>(i % Backend::kReadbackSlots), got, sizeof got);
            hand_out(i, got);
        }
    };
    for (size_t i = 0; i < n_new && done == n_new; ++i) {
        const size_t len = n_prompt + i;
        if (len - w0 > T) {
            catch_up(0);  // the restart re-reads the text
            if (done < n_new) break;
            w0 = len - keep;
            in_cache = 0;
        }
        const size_t t = len - w0;
        size_t last_row = 0;  // the row of the logits buffer the token is drawn from
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
                in_cache = t;
                const int slot = static_cast<int>(i % Backend::kReadbackSlots);
                if (backend_->read_back_async(slot, dev.p->drawn, 2 * sizeof(int32_t))) {
                    pending.push_back(i);
                    catch_up(kDecodeAhead);
                } else {
                    int32_t got[2];
                    backend_->copy_to_host(got, dev.p->drawn, sizeof got);
                    hand_out(i, got);
                }
                continue;
            }
            catch_up(0);  // the window's tokens come from the text
            if (done < n_new) break;
            backend_->copy_to_device(model_->inputs_buffer(), context.data() + w0 + in_cache,
                                     n * sizeof(int32_t));
            model_->forward_cached(model_->inputs_buffer(), static_cast<int>(in_cache),
                                   static_cast<int>(n));
            last_row = n - 1;
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
        int32_t got[2] = {0, 0};
        if (dev.p != nullptr) {
            backend_->draw_token(dev.p->drawn, model_->logits_row(last_row), V,
                                 token_draw(options, i));
            backend_->copy_to_host(got, dev.p->drawn, sizeof got);
        } else {
            model_->copy_logits_to_host(row.data(), last_row, 1, static_cast<size_t>(V));
            for (int k = 0; k < V; ++k)
                if (!std::isfinite(row[k]))
                    fail(Status::InvalidArgument, "sample: the model's logits are not finite (",
                         row[k], " for token ", k, "): its weights have diverged; load an "
                         "earlier checkpoint");
            got[0] = sample_token(row.data(), V, options, i);
        }
        hand_out(i, got);
    }
    catch_up(0);
    if (done < n_new) {
        // The draws after the stop ran on (the text ended on the host later): wait for them,
        // so no read-back is left in flight, and drop them.
        for (size_t i : pending) {
            int32_t got[2];
            backend_->read_back(static_cast<int>(i % Backend::kReadbackSlots), got, sizeof got);
        }
        return done;
    }
    return n_new;
}

}  // namespace trt
