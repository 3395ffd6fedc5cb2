// Session: one optimizer step — the grad-accumulation loop every kind of step shares, the
// update (after the ranks' sums: gradient_sync.h), step() on the sampler's batches and
// step_tokens on the host's, and the asynchronous read-back of each step's figures
// (loss, norm, skipped steps, the divergence policy).
#include <algorithm>

#include "runtime/schedule.h"
#include "runtime/session.h"

namespace trt {

// The one grad-accumulation loop of every kind of step: zero the gradients; per micro-batch
// k, `load` puts its B x T inputs and targets in the model's buffers, then forward +
// backward accumulate the gradients and the loss sum (on the backend); then the update
// (clip, AdamW, loss scale).
void Session::accumulate_and_update(float dloss_scale, const MicroBatchLoader& load,
                                    bool stoppable, const int32_t* positions) {
    const int B = model_->max_batch(), T = model_->max_seq();
    int32_t* inputs = model_->inputs_buffer();
    int32_t* targets = model_->targets_buffer();
    model_->zero_grads();
    for (int64_t k = 0; k < run_.train.grad_accum; ++k) {
        // A step of train.grad_accum = 2^20 micro-batches can take hours: a stop request
        // ends it here, before anything the step keeps has changed (the update comes last).
        if (stoppable && stop_requested_.load()) throw StepAbandoned{k};
        load(k, inputs, targets);
        // dist.overlap: the last micro-batch's backward completes each block's gradients,
        // which are summed across ranks from there on.
        const bool overlap =
            grad_sync_ && grad_sync_->overlaps() && k + 1 == run_.train.grad_accum;
        if (overlap) model_->set_block_done([this](int layer) { grad_sync_->sum_block(layer); });
        model_->forward_backward(inputs, targets, B, T, dloss_scale, scalars_,
                                 static_cast<uint32_t>(k), positions);
        if (overlap) model_->set_block_done(nullptr);
        optimizer_step_of(*backend_).accumulate_loss(scalars_, model_->losses(),
                                                     static_cast<size_t>(B) * T);
    }
    update_weights();
}

void Session::update_weights() {
    if (grad_sync_) {
        grad_sync_->update(scalars_);
        return;
    }
    optimizer_->update(model_->params(), model_->grads(), scalars_);
}

int64_t Session::tokens_per_step() const {
    return run_.train.grad_accum * world_size_ * run_.train.batch_size * run_.train.seq_len;
}

StepResult Session::step_on_this_rank(bool stoppable) {
    const ProfiledStep profiled(*this);
    warn_resume_differences();
    refuse_empty_train_split();
    if (!train_data_)
        fail(Status::Config, "data.train is not set: step() draws batches from it "
             "(set data.train, or pass tokens with step_tokens)");
    const double t0 = now_ms();
    const int64_t GA = run_.train.grad_accum, B = run_.train.batch_size, T = run_.train.seq_len;
    const int64_t s = step_ + 1;
    const double lr = scheduled_lr(run_.optim, run_.train.steps, s);
    const float dloss = 1.0f / static_cast<float>(B * T * GA * world_size_);
    if (train_examples_.set) return step_example_data();
    stoppable = stoppable && world_size_ == 1;
    // Where the step started reading, for an abandoned step to put back (the random sampler
    // draws by step and micro-batch number: nothing to put back).
    const SequentialCursor cursor_at_start = feed_->cursor();
    // Eager, outside any graph: the values only the host knows this step.
    optimizer_step_of(*backend_).begin_step(scalars_, static_cast<float>(lr), s);
    try {
        if (feed_->resident()) {
            feed_->upload_window_starts();
            // The whole step draws on the backend, so a graph can record it. Only an eager run
            // (graphs off, or the warm-up before the capture) checks for a stop between its
            // micro-batches: a recording must hold them all, and a replay runs them all at
            // once. An abandoned warm-up throws through the runner, which warms up again.
            const GraphRunner::State graph = step_graph_->state();
            const bool eager =
                graph == GraphRunner::State::Off || graph == GraphRunner::State::Warmup;
            step_graph_->run([&] {
                accumulate_and_update(dloss, feed_->resident_loader(scalars_), stoppable && eager);
            });
        } else {
            accumulate_and_update(dloss, feed_->host_loader(s), stoppable,
                                  feed_->document_positions());
        }
    } catch (const StepAbandoned&) {
        feed_->set_cursor(cursor_at_start);
        throw;
    }
    return finish_step(s, lr, t0);
}

StepResult Session::step_tokens(const int32_t* tokens, size_t n_tokens) {
    const ProfiledStep profiled(*this);
    warn_resume_differences();
    const int64_t GA = run_.train.grad_accum, B = run_.train.batch_size, T = run_.train.seq_len;
    const size_t expected = static_cast<size_t>(GA * B * (T + 1));
    if (n_tokens != expected)
        fail(Status::InvalidArgument, "step_tokens: got ", n_tokens, " tokens, expected ",
             "train.grad_accum x batch_size x (seq_len + 1) = ", GA, " x ", B, " x ", T + 1,
             " = ", expected);
    check_tokens(tokens, n_tokens);
    const double t0 = now_ms();
    const int64_t s = step_ + 1;
    const double lr = scheduled_lr(run_.optim, run_.train.steps, s);
    const float dloss = 1.0f / static_cast<float>(B * T * GA * world_size_);
    optimizer_step_of(*backend_).begin_step(scalars_, static_cast<float>(lr), s);
    accumulate_and_update(dloss, [&](int64_t k, int32_t* inputs, int32_t* targets) {
        backend_->load_rows(inputs, targets, tokens + static_cast<size_t>(k * B * (T + 1)),
                            static_cast<int>(B), static_cast<int>(T));
    });
    return finish_step(s, lr, t0);
}

StepResult Session::finish_step(int64_t s, double lr, double t0_ms, int64_t counted) {
    step_ = s;
    tokens_total_ += tokens_per_step();
    readback_->push(s, scalars_, t0_ms, lr, tokens_total_, counted);
    collect_steps(false);
    throw_if_diverged();
    return last_;
}

void Session::collect_steps(bool wait_all) {
    readback_->collect(wait_all, [this](const PendingStep& p, const StepScalars& r) {
        complete_step(p, r);
    });
}

void Session::complete_step(const PendingStep& p, const StepScalars& r) {
    const double now = now_ms();
    // With steps in flight, a step's own time is from the later of its enqueue and the
    // previous completion (the device works on one step at a time).
    const double ms = now - std::max(p.t0_ms, last_completion_ms_);
    last_completion_ms_ = now;
    const int64_t tokens = tokens_per_step();
    StepResult res;
    res.step = p.step;
    // The mean over the targets that counted (all of them unless some were ignored).
    res.loss = r.loss_sum / static_cast<double>(p.counted > 0 ? p.counted : tokens);
    res.lr = p.lr;
    res.grad_norm = r.grad_norm;
    res.tokens = tokens;
    res.tokens_total = p.tokens_total;
    res.ms = ms;
    if (r.nonfinite)
        log_.warn("step ", p.step, ": the gradient is not finite (norm ", r.grad_norm,
                  "); the update was skipped (", r.skipped_steps, " skipped so far",
                  precision_ == Precision::Fp16 ? cat("; loss scale now ", r.loss_scale) : "",
                  ")");
    // The non-finite policy (train.max_skipped_steps): only a run of skips in a row means
    // the run has diverged (fp16's loss scaling skips a step now and then by design).
    consecutive_skipped_ = r.nonfinite ? consecutive_skipped_ + 1 : 0;
    const int64_t limit = run_.train.max_skipped_steps;
    if (limit > 0 && consecutive_skipped_ >= limit && divergence_.empty())
        divergence_ = cat("step ", p.step, ": ", consecutive_skipped_, " steps in a row had a "
                          "non-finite gradient (train.max_skipped_steps = ", limit, "): the run "
                          "has diverged. Resume from the last good checkpoint with a lower "
                          "optim.lr (or more optim.warmup_steps, or optim.grad_clip), or set "
                          "train.max_skipped_steps = 0 to go on regardless");
    loss_scale_ = r.loss_scale;
    skipped_steps_ = r.skipped_steps;
    recent_ms_.push_back(ms);
    if (recent_ms_.size() > 100) recent_ms_.pop_front();
    last_ = res;
    completed_.push_back(res);
}

const StepResult& Session::sync() {
    collect_steps(true);
    backend_->synchronize();
    return last_;
}

void Session::reset_step_scalars(float loss_scale) {
    StepScalars init;
    init.loss_scale = loss_scale;
    backend_->copy_to_device(scalars_, &init, sizeof init);
    loss_scale_ = loss_scale;
    skipped_steps_ = 0;
    consecutive_skipped_ = 0;
    divergence_.clear();  // a load starts from finite weights again
}

void Session::throw_if_diverged() const {
    if (!divergence_.empty()) fail(Status::NonFinite, divergence_);
}

void Session::refuse_empty_train_split() const {
    if (empty_train_split_)
        fail(Status::Config, "data.train: '", run_.data.train, "' holds no tokens (an "
             "evaluation-only folder, e.g. prepared with --val-fraction 1): this session can "
             "eval and sample but not train; point data.train at shards with training data");
}

}  // namespace trt
