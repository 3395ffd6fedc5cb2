// Session: steps on host examples whose targets may be ignored (issue 40). Instruction
// tuning trains on some tokens only (assistant turns, completions): the others are inputs
// but not targets (kIgnoredTarget, -1: loss 0, no gradient). The loss is the mean over the
// targets that count in the whole optimizer step — every micro-batch, every rank — so
// dloss = 1 / that count and neither grad_accum nor the world size changes the result (a mean
// per micro-batch would weigh a micro-batch of few targets as much as one of many).
#include <vector>

#include "runtime/schedule.h"
#include "runtime/session.h"

namespace trt {
namespace {

// Element i of a [grad_accum, B, T] array, as the errors name it.
std::string where(size_t i, int64_t B, int64_t T) {
    const int64_t k = static_cast<int64_t>(i) / (B * T), b = static_cast<int64_t>(i) / T % B,
                  t = static_cast<int64_t>(i) % T;
    return cat("micro-batch ", k, ", row ", b, ", column ", t);
}

// Whether every one of `rows` rows is 0 .. T-1: what the model does without positions.
bool plain_positions(const int32_t* positions, int64_t rows, int64_t T) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < T; ++t)
            if (positions[r * T + t] != t) return false;
    return true;
}

}  // namespace

int64_t Session::count_targets(const char* what, const int32_t* targets, size_t n) const {
    const int64_t V = run_.model.vocab_size, B = run_.train.batch_size, T = run_.train.seq_len;
    int64_t counted = 0;
    for (size_t i = 0; i < n; ++i) {
        if (targets[i] == kIgnoredTarget) continue;
        if (targets[i] < 0 || targets[i] >= V)
            fail(Status::InvalidArgument, what, ": target ", targets[i], " at index ", i,
                 " (", where(i, B, T), ") is outside [0, model.vocab_size = ", V, ") and not ",
                 kIgnoredTarget, " (ignored)");
        ++counted;
    }
    return counted;
}

void Session::check_positions(const char* what, const int32_t* positions) const {
    const int64_t B = run_.train.batch_size, T = run_.train.seq_len;
    const int64_t rows = run_.train.grad_accum * B, context = run_.model.context_length;
    for (int64_t r = 0; r < rows; ++r) {
        const int32_t* row = positions + r * T;
        for (int64_t t = 0; t < T; ++t) {
            const int32_t p = row[t];
            const size_t i = static_cast<size_t>(r * T + t);
            if (t == 0 ? p != 0 : p != 0 && p != row[t - 1] + 1)
                fail(Status::InvalidArgument, what, ": position ", p, " at ",
                     where(i, B, T),
                     t == 0 ? cat(": a row starts at position 0")
                            : cat(" follows ", row[t - 1], ": each position is 0 (a new sequence) "
                                  "or the previous one + 1"),
                     "; pass NULL positions for 0 .. seq_len - 1 in every row");
            if (p >= context)
                fail(Status::InvalidArgument, what, ": position ", p, " at ",
                     where(i, B, T), " is not below model.context_length = ", context);
        }
    }
}

StepResult Session::step_examples(const int32_t* inputs, const int32_t* targets,
                                  const int32_t* positions, size_t n) {
    return examples_step("step_examples", inputs, targets, positions, n);
}

StepResult Session::examples_step(const char* what, const int32_t* inputs,
                                  const int32_t* targets, const int32_t* positions, size_t n) {
    const ProfiledStep profiled(*this);
    warn_resume_differences();
    const int64_t GA = run_.train.grad_accum, B = run_.train.batch_size, T = run_.train.seq_len;
    const size_t expected = static_cast<size_t>(GA * B * T);
    if (inputs == nullptr || targets == nullptr)
        fail(Status::InvalidArgument, what, ": ", inputs ? "targets" : "inputs",
             " is NULL");
    if (n != expected)
        fail(Status::InvalidArgument, what, ": got ", n, " values per array, expected "
             "train.grad_accum x batch_size x seq_len = ", GA, " x ", B, " x ", T, " = ",
             expected);
    check_tokens(inputs, n);
    int64_t counted = count_targets(what, targets, n);
    if (positions != nullptr) {
        check_positions(what, positions);
        // 0 .. T-1 in every row is what the model does without positions (and a fused
        // attention can take it).
        if (plain_positions(positions, GA * B, T)) positions = nullptr;
    }
    if (world_size_ > 1) {  // the mean is over every rank's targets (exact in double)
        double all = static_cast<double>(counted);
        world_->all_reduce_sum(&all, 1);
        counted = static_cast<int64_t>(all);
    }
    if (counted == 0)
        fail(Status::InvalidArgument, what, ": every target of this step is ignored (",
             kIgnoredTarget, ", or a loss mask of 0)", world_size_ > 1 ? " on every rank" : "",
             ", so it has no loss to average; leave out batches with nothing to train on (a "
             "prompt without its completion), or count at least one target. Nothing changed");
    const double t0 = now_ms();
    const int64_t s = step_ + 1;
    const double lr = scheduled_lr(run_.optim, run_.train.steps, s);
    // As step_tokens' 1 / (GA x B x T x world) when every target counts: the same bits.
    const float dloss = 1.0f / static_cast<float>(counted);
    optimizer_step_of(*backend_).begin_step(scalars_, static_cast<float>(lr), s);
    const size_t per = static_cast<size_t>(B * T);
    int32_t* dev_positions = positions ? model_->positions_buffer() : nullptr;
    accumulate_and_update(
        dloss,
        [&](int64_t k, int32_t* dev_inputs, int32_t* dev_targets) {
            const size_t at = static_cast<size_t>(k) * per;
            backend_->load_batch(dev_inputs, dev_targets, dev_positions, inputs + at,
                                 targets + at, positions ? positions + at : nullptr,
                                 static_cast<int>(B), static_cast<int>(T));
        },
        false, dev_positions);
    return finish_step(s, lr, t0, counted);
}

StepResult Session::step_masked(const int32_t* tokens, size_t n_tokens,
                                const uint8_t* loss_mask, const int32_t* positions,
                                size_t n_mask) {
    const int64_t GA = run_.train.grad_accum, B = run_.train.batch_size, T = run_.train.seq_len;
    const size_t rows = static_cast<size_t>(GA * B), n = rows * static_cast<size_t>(T);
    if (tokens == nullptr) fail(Status::InvalidArgument, "step_masked: tokens is NULL");
    if (n_tokens != rows * static_cast<size_t>(T + 1))
        fail(Status::InvalidArgument, "step_masked: got ", n_tokens, " tokens, expected "
             "train.grad_accum x batch_size x (seq_len + 1) = ", GA, " x ", B, " x ", T + 1,
             " = ", rows * static_cast<size_t>(T + 1));
    const bool sized = loss_mask != nullptr || positions != nullptr;
    if (sized ? n_mask != n : n_mask != 0 && n_mask != n)
        fail(Status::InvalidArgument, "step_masked: n_mask = ", n_mask, " but loss_mask and "
             "positions hold train.grad_accum x batch_size x seq_len = ", GA, " x ", B, " x ", T,
             " = ", n, " values each (one per target)", sized ? "" : ", or 0 when both are NULL");
    check_tokens(tokens, n_tokens);  // the ignored targets too, as step_tokens
    std::vector<int32_t> inputs(n), targets(n);
    for (size_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < T; ++t) {
            const size_t i = r * static_cast<size_t>(T) + static_cast<size_t>(t);
            const int32_t* row = tokens + r * static_cast<size_t>(T + 1);
            inputs[i] = row[t];
            targets[i] = loss_mask == nullptr || loss_mask[i] != 0 ? row[t + 1] : kIgnoredTarget;
        }
    return examples_step("step_masked", inputs.data(), targets.data(), positions, n);
}

}  // namespace trt
