// Session: training and evaluating on prepared instruction-tuning data — token shards with
// loss masks (`trainrt prepare --chat`; docs/FORMATS.md §1, "Loss masks"). The steps draw
// rows of whole examples (data/example_batches.h: packed or padded) and go through
// step_examples (session_examples.cpp): only the targets count, and the loss is their mean
// over the whole optimizer step.
#include "data/example_batches.h"
#include "data/example_set.h"
#include "runtime/session.h"

namespace trt {

namespace {

// The id padding slots hold (their targets are ignored, so any valid id serves).
constexpr int32_t kPadId = 0;

}  // namespace

void Session::open_example_data() {
    const int64_t T = run_.train.seq_len;
    const bool packing = run_.data.packing;
    const auto open = [&](const TokenDataset& data, const char* key, bool shuffled,
                          ExampleData& out) {
        out.set = std::make_unique<ExampleSet>(ExampleSet::open(data, T + 1));
        out.rows = std::make_unique<ExampleBatches>(*out.set, T, packing, run_.data.seed, shuffled);
        log_.info(key, ": ", out.set->examples().size(), " examples with loss masks in ",
                  out.rows->rows_per_epoch(), " rows of ", T, packing ? " (packed: " : " (padded: ",
                  static_cast<int>(out.rows->fill() * 100.0 + 0.5), "% of the slots hold tokens)",
                  out.set->truncated() ? cat("; ", out.set->truncated(), " longer than train.seq_len + 1 "
                                             "were cut") : std::string(),
                  out.set->dropped() ? cat("; ", out.set->dropped(), " without a target left out")
                                     : std::string());
    };
    if (train_data_ && has_loss_masks(*train_data_))
        open(*train_data_, "data.train", true, train_examples_);
    if (val_data_ && has_loss_masks(*val_data_)) {
        if (run_.train.eval_mode == EvalMode::Whole)
            fail(Status::Config, "data.val holds examples with loss masks (prepare --chat): "
                 "train.eval_mode = \"whole\" reads token streams; use \"sampled\" (the "
                 "examples' targets over train.eval_batches batches)");
        open(*val_data_, "data.val", false, val_examples_);
    }
}

StepResult Session::step_example_data() {
    const int64_t GA = run_.train.grad_accum, B = run_.train.batch_size, T = run_.train.seq_len;
    const int64_t s = step_ + 1;
    const size_t per = static_cast<size_t>(B * T);
    example_inputs_.resize(per * static_cast<size_t>(GA));
    example_targets_.resize(example_inputs_.size());
    example_positions_.resize(example_inputs_.size());
    for (int64_t k = 0; k < GA; ++k) {
        // Rows are numbered across micro-batches and ranks (docs/FORMATS.md, "Packing").
        const int64_t row0 = ((s - 1) * GA + k) * world_size_ * B + rank_ * B;
        const size_t at = static_cast<size_t>(k) * per;
        train_examples_.rows->fill_rows(row0, static_cast<int>(B), example_inputs_.data() + at,
                                        example_targets_.data() + at,
                                        example_positions_.data() + at, kPadId);
    }
    // Padded rows run the model's plain path (positions 0 .. T-1 throughout).
    return step_examples(example_inputs_.data(), example_targets_.data(),
                         run_.data.packing ? example_positions_.data() : nullptr,
                         example_inputs_.size());
}

double Session::eval_example_data(bool inside_train) {
    const int B = model_->max_batch(), T = model_->max_seq();
    const size_t per = static_cast<size_t>(B) * static_cast<size_t>(T);
    example_inputs_.resize(std::max(example_inputs_.size(), per));
    example_targets_.resize(example_inputs_.size());
    example_positions_.resize(example_inputs_.size());
    double sum = 0.0, counted = 0.0;
    const uint64_t seen = stop_count_.load();
    for (int64_t i = 0; i < run_.train.eval_batches; ++i) {
        if (eval_stop_requested(inside_train, seen))
            fail(Status::Cancelled, "eval: stopped on request after ", i, " of ",
                 run_.train.eval_batches, " batches (train.eval_batches); no loss");
        // The rows in packing order from the first, the same every eval; ranks take turns.
        const int64_t row0 = (i * world_size_ + rank_) * B;
        counted += static_cast<double>(val_examples_.rows->fill_rows(
            row0, B, example_inputs_.data(), example_targets_.data(), example_positions_.data(),
            kPadId));
        backend_->load_batch(model_->inputs_buffer(), model_->targets_buffer(),
                             run_.data.packing ? model_->positions_buffer() : nullptr,
                             example_inputs_.data(), example_targets_.data(),
                             run_.data.packing ? example_positions_.data() : nullptr, B, T);
        model_->forward(model_->inputs_buffer(), model_->targets_buffer(), B, T,
                        run_.data.packing ? model_->positions_buffer() : nullptr);
        // Ignored targets add 0: the mean over all B x T positions times their count is the
        // sum over the counted ones.
        sum += model_->mean_loss(B, T) * static_cast<double>(per);
    }
    if (world_size_ > 1) {
        world_->all_reduce_sum(&sum, 1);
        world_->all_reduce_sum(&counted, 1);
    }
    last_val_loss_ = sum / counted;
    return last_val_loss_;
}

}  // namespace trt
