// BatchFeed (batch_feed.h): data.placement, the resident split's draws, the host's draws and
// their copy (with document positions) into the model's buffers.
#include "runtime/batch_feed.h"

#include <algorithm>

namespace trt {

BatchFeed::BatchFeed(Backend& backend, Decoder& model, const RunConfig& run,
                     const TokenDataset* train, int32_t document_separator, int64_t rank,
                     int64_t world_size, Logger& log)
    : backend_(backend), model_(model), run_(run), train_(train), log_(log),
      document_separator_(document_separator), rank_(rank), world_size_(world_size) {
    place_train_data();
    window_starts_.assign(static_cast<size_t>(run_.train.grad_accum), 0);
    window_starts_dev_ = static_cast<int64_t*>(
        backend_.alloc(window_starts_.size() * sizeof(int64_t), "sequential window starts"));
    const size_t B = static_cast<size_t>(model_.max_batch()),
                 T = static_cast<size_t>(model_.max_seq());
    rows_.resize(B * (T + 1));
    inputs_.resize(B * T);
    targets_.resize(B * T);
}

BatchFeed::~BatchFeed() {
    backend_.free(window_starts_dev_);
    backend_.free(resident_buffer_);
    backend_.free(resident_starts_);
}

// data.placement: device = the whole train split resident in backend memory, batches drawn
// there; host = drawn on the host and copied per micro-batch. auto = device on CUDA when the
// ids fit 16 bits and the memory is there, host otherwise (always host on the CPU, where
// "resident" would only duplicate the memory-mapped shards).
void BatchFeed::place_train_data() {
    // Document positions are found on the host.
    if (!train_ || document_separator_ >= 0) return;
    const Placement asked = run_.data.placement;
    const bool device_memory = backend_.capabilities().device_memory;
    if (asked == Placement::Host || (asked == Placement::Auto && !device_memory))
        return;
    if (run_.model.vocab_size > 65536) {
        if (asked == Placement::Device)
            fail(Status::Config, "data.placement = \"device\" keeps token ids as 16 bits, but "
                 "model.vocab_size = ", run_.model.vocab_size, " > 65536; use data.placement = "
                 "\"host\" or \"auto\"");
        return;
    }
    try {
        upload_train_data();
    } catch (const Error& e) {
        if (asked == Placement::Device || e.status() != Status::OutOfMemory) throw;
        backend_.free(resident_buffer_);
        backend_.free(resident_starts_);
        resident_buffer_ = resident_starts_ = nullptr;
        log_.info("data.placement = \"auto\": the train split does not fit on the device (",
                  e.what(), "); streaming batches from the host instead");
    }
}

void BatchFeed::upload_train_data() {
    const TokenDataset& data = *train_;
    const int64_t T = run_.train.seq_len;
    shard_starts_.assign(1, 0);
    uint64_t windows = 0;
    for (size_t s = 0; s < data.num_shards(); ++s) {
        shard_starts_.push_back(shard_starts_.back() + data.shard_tokens(s));
        windows += static_cast<uint64_t>(std::max<int64_t>(0, data.shard_tokens(s) - T));
    }
    const int64_t total = shard_starts_.back();
    resident_buffer_ = backend_.alloc(static_cast<size_t>(total) * sizeof(uint16_t),
                                      cat("the resident train split (", total, " tokens)").c_str());
    resident_starts_ = backend_.alloc(shard_starts_.size() * sizeof(int64_t), "shard offsets");
    backend_.copy_to_device(resident_starts_, shard_starts_.data(),
                            shard_starts_.size() * sizeof(int64_t));
    // Through a bounded staging buffer: the shards are memory-mapped, never read whole.
    constexpr int64_t kChunk = int64_t{1} << 22;
    std::vector<uint16_t> staging(static_cast<size_t>(std::min<int64_t>(kChunk, total)));
    auto* dst = static_cast<uint16_t*>(resident_buffer_);
    for (size_t s = 0; s < data.num_shards(); ++s) {
        for (int64_t off = 0; off < data.shard_tokens(s); off += kChunk) {
            const int64_t n = std::min<int64_t>(kChunk, data.shard_tokens(s) - off);
            data.copy_tokens_u16(s, off, n, staging.data());
            backend_.copy_to_device(dst + shard_starts_[s] + off, staging.data(),
                                    static_cast<size_t>(n) * sizeof(uint16_t));
        }
    }
    resident_tokens_.tokens = dst;
    resident_tokens_.shard_starts = static_cast<const int64_t*>(resident_starts_);
    resident_tokens_.num_shards = static_cast<int32_t>(data.num_shards());
    resident_tokens_.total = total;
    resident_tokens_.random_windows = windows;
    resident_tokens_.windows_T = T;
    resident_ = true;
}

void BatchFeed::upload_window_starts() {
    if (run_.data.sampler != SamplerKind::Sequential) return;
    const int64_t B = run_.train.batch_size, T = run_.train.seq_len;
    // Micro-batch k: this rank's rows of a window of every rank's.
    for (size_t k = 0; k < window_starts_.size(); ++k) {
        const SequentialWindow w = next_sequential_window(*train_, cursor_, world_size_ * B, T);
        window_starts_[k] = shard_starts_[w.shard] + w.pos + rank_ * B * T;
    }
    backend_.upload_step_inputs(window_starts_dev_, window_starts_.data(),
                                window_starts_.size() * sizeof(int64_t));
}

MicroBatchLoader BatchFeed::resident_loader(const StepScalars* scalars) const {
    return [this, scalars](int64_t k, int32_t* inputs, int32_t* targets) {
        const int B = model_.max_batch(), T = model_.max_seq();
        if (run_.data.sampler == SamplerKind::Sequential)
            backend_.sample_window(inputs, targets, resident_tokens_, window_starts_dev_ + k, B,
                                   T);
        else
            backend_.sample_random(inputs, targets, resident_tokens_, run_.data.seed, scalars,
                                   k, B, T, rank_ * B);  // rows numbered across ranks
    };
}

MicroBatchLoader BatchFeed::host_loader(int64_t s) {
    return [this, s](int64_t k, int32_t* inputs, int32_t* targets) {
        const int64_t B = run_.train.batch_size, T = run_.train.seq_len;
        if (run_.data.sampler == SamplerKind::Sequential)
            sample_sequential(*train_, cursor_, B, T, rows_.data(), rank_, world_size_);
        else
            sample_random(*train_, run_.data.seed, s, k, B, T, rows_.data(), rank_ * B);
        load_host_rows(inputs, targets);
    };
}

const int32_t* BatchFeed::document_positions() {
    return document_separator_ >= 0 ? model_.positions_buffer() : nullptr;
}

void BatchFeed::load_host_rows(int32_t* inputs, int32_t* targets) {
    load_host_rows(inputs, targets, rows_.data(), model_.max_batch(), model_.max_seq());
}

void BatchFeed::load_host_rows(int32_t* inputs, int32_t* targets, const int32_t* rows, int B,
                               int T) {
    if (document_separator_ < 0) {
        backend_.load_rows(inputs, targets, rows, B, T);
        return;
    }
    // rows [B, T+1] -> inputs, targets [B, T], and positions restarting at each document's
    // end-of-text token (prepare opens every document with it).
    doc_positions_.resize(static_cast<size_t>(B) * T);
    for (int b = 0; b < B; ++b) {
        const int32_t* row = rows + static_cast<size_t>(b) * (T + 1);
        int32_t* in = inputs_.data() + static_cast<size_t>(b) * T;
        int32_t* tg = targets_.data() + static_cast<size_t>(b) * T;
        int32_t* pos = doc_positions_.data() + static_cast<size_t>(b) * T;
        for (int t = 0; t < T; ++t) {
            in[t] = row[t];
            tg[t] = row[t + 1];
            pos[t] = t == 0 || row[t] == document_separator_ ? 0 : pos[t - 1] + 1;
        }
    }
    backend_.load_batch(inputs, targets, model_.positions_buffer(), inputs_.data(),
                        targets_.data(), doc_positions_.data(), B, T);
}

}  // namespace trt
