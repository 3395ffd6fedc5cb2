// Session: evaluation. Sampled (train.eval_mode = "sampled"): train.eval_batches sequential
// windows from the start of data.val, the same every eval, their forward graph-replayed like
// the step. Whole (data/eval_windows.h): every target token of a stream is scored exactly
// once: disjoint windows of T = train.seq_len targets, B = train.batch_size
// of them per forward, and the final shorter window (if any) run alone at its own length (the
// model runs any T' <= T), so no token is counted twice and none is skipped. Nothing wraps:
// a stream of N tokens gives N - 1 targets, whatever B and T. Data parallel: forward j runs
// on rank j mod world, and the loss sums meet in one all-reduce. A stop request interrupts
// an eval between batches.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "data/eval_windows.h"
#include "runtime/session.h"

namespace trt {

double Session::eval() { return run_eval(false); }

bool Session::eval_stop_requested(bool inside_train, uint64_t seen) {
    // request_stop interrupts an eval between batches (train.eval_batches may be huge).
    // Inside train() any pending request does (train() then stops); a standalone eval
    // only one made while it runs, which it uses up: an earlier one is for the next
    // train() (the header's promise).
    // (With several ranks an eval runs to its end: they must all reach its sum; train()
    // stops at the next step, where the ranks agree.)
    const bool stop = world_size_ == 1 &&
                      (inside_train ? stop_requested_.load() : stop_count_.load() != seen);
    if (stop && !inside_train) stop_requested_.store(false);
    return stop;
}

double Session::run_eval(bool inside_train) {
    if (!val_data_)
        fail(Status::Config, "data.val is not set: eval() reads its batches from it");
    if (run_.train.eval_mode == EvalMode::Whole) return eval_whole_val(inside_train).loss;
    if (val_examples_.set) return eval_example_data(inside_train);
    const int B = model_->max_batch(), T = model_->max_seq();
    SequentialCursor cursor;  // every eval reads the same windows
    double sum = 0.0;
    const uint64_t seen = stop_count_.load();
    for (int64_t i = 0; i < run_.train.eval_batches; ++i) {
        if (eval_stop_requested(inside_train, seen))
            fail(Status::Cancelled, "eval: stopped on request after ", i, " of ",
                 run_.train.eval_batches, " batches (train.eval_batches); no loss");
        // Each rank reads its rows of a window of world x B rows: the same windows as one
        // rank with world x B rows.
        sample_sequential(*val_data_, cursor, B, T, feed_->rows(), rank_, world_size_);
        feed_->load_host_rows(model_->inputs_buffer(), model_->targets_buffer());
        run_eval_forward();
        sum += model_->mean_loss(B, T);
    }
    if (world_size_ > 1) {  // the mean over the ranks' equal shares
        world_->all_reduce_sum(&sum, 1);
        sum /= static_cast<double>(world_size_);
    }
    last_val_loss_ = sum / static_cast<double>(run_.train.eval_batches);
    return last_val_loss_;
}

// eval()'s forward at the full micro-batch shape (its batch was loaded eagerly before).
void Session::run_eval_forward() {
    const int B = model_->max_batch(), T = model_->max_seq();
    eval_graph_->run([&] {
        model_->forward(model_->inputs_buffer(), model_->targets_buffer(), B, T,
                        feed_->document_positions());
    });
}

WholeEvalResult Session::eval_whole() { return eval_whole_val(false); }

WholeEvalResult Session::eval_whole_val(bool inside_train) {
    if (!val_data_)
        fail(Status::Config, "data.val is not set: a whole eval scores every token of it");
    const TokenDataset& data = *val_data_;
    const WholeEvalResult r = run_eval_whole(
        data.total_tokens(),
        [&](int64_t offset, int64_t n, int32_t* out) { copy_stream_tokens(data, offset, n, out); },
        cat("data.val '", run_.data.val, "'"), inside_train);
    last_val_loss_ = r.loss;
    return r;
}

WholeEvalResult Session::eval_whole_tokens(const int32_t* tokens, size_t n) {
    if (n > 0 && tokens == nullptr)
        fail(Status::InvalidArgument, "eval_whole_tokens: tokens is NULL but n_tokens = ", n);
    if (n > static_cast<size_t>(std::numeric_limits<int64_t>::max()))
        fail(Status::InvalidArgument, "eval_whole_tokens: n_tokens = ", n, " is too large");
    check_tokens(tokens, n);
    return run_eval_whole(
        static_cast<int64_t>(n),
        [&](int64_t offset, int64_t count, int32_t* out) {
            std::memcpy(out, tokens + offset, static_cast<size_t>(count) * sizeof(int32_t));
        },
        "the tokens given", false);
}

WholeEvalResult Session::run_eval_whole(int64_t n_tokens, const StreamReader& read,
                                        const std::string& what, bool inside_train) {
    const int B = model_->max_batch(), T = model_->max_seq();
    if (n_tokens < 2)
        fail(Status::InvalidArgument, "whole eval: ", what, " holds ", n_tokens,
             n_tokens == 1 ? " token" : " tokens", "; scoring needs at least 2 (an input and "
             "the target after it)");
    const int64_t windows = whole_eval_windows(n_tokens, T);
    const int64_t full = (n_tokens - 1) / T;         // windows of T targets
    const int64_t full_forwards = (full + B - 1) / B;  // B of them per forward
    const int64_t forwards = full_forwards + (windows > full ? 1 : 0);  // + the short one
    double sum = 0.0;
    const uint64_t seen = stop_count_.load();
    for (int64_t j = rank_; j < forwards; j += world_size_) {
        if (eval_stop_requested(inside_train, seen))
            fail(Status::Cancelled, "whole eval: stopped on request after ", j, " of ",
                 forwards, " forwards; no loss");
        const int64_t k0 = j < full_forwards ? j * B : full;  // its first window
        const int rows = j < full_forwards ? static_cast<int>(std::min<int64_t>(B, full - k0)) : 1;
        const int len = static_cast<int>(whole_eval_window(n_tokens, T, k0).len);
        for (int r = 0; r < rows; ++r) {
            const EvalWindow w = whole_eval_window(n_tokens, T, k0 + r);
            read(w.start, w.len + 1, feed_->rows() + static_cast<size_t>(r) * (len + 1));
        }
        backend_->load_rows(model_->inputs_buffer(), model_->targets_buffer(), feed_->rows(),
                            rows, len);
        model_->forward(model_->inputs_buffer(), model_->targets_buffer(), rows, len);
        sum += model_->sum_loss(rows, len);
    }
    if (world_size_ > 1) world_->all_reduce_sum(&sum, 1);
    WholeEvalResult r;
    r.tokens = n_tokens - 1;
    r.windows = windows;
    r.loss = sum / static_cast<double>(r.tokens);
    r.perplexity = std::exp(r.loss);
    return r;
}

}  // namespace trt
