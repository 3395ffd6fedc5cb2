// BatchFeed: where a session's micro-batches come from and how they reach the model's
// buffers. The train split is either resident in backend memory (data.placement = device:
// each micro-batch drawn there, so a whole step can be a replayed graph) or drawn on the host
// and copied per micro-batch; with data.document_attention a host batch also carries the
// positions that restart at each document. It keeps the sequential sampler's cursor (a
// checkpoint's) and the host micro-batch eval reuses. It knows no model maths or schedules.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "config/run_config.h"
#include "core/log.h"
#include "data/sampler.h"
#include "model/decoder.h"

namespace trt {

// Puts micro-batch k's inputs and targets ([B, T] each) in the given backend buffers.
using MicroBatchLoader = std::function<void(int64_t k, int32_t* inputs, int32_t* targets)>;

class BatchFeed {
public:
    // train: data.train's tokens (null: none, or examples with loss masks, which are packed
    // into rows on the host elsewhere: nothing to place). document_separator: the end-of-text
    // id positions restart at (-1: data.document_attention off). Rows are numbered across
    // the world_size ranks; this one draws rank's share.
    BatchFeed(Backend& backend, Decoder& model, const RunConfig& run, const TokenDataset* train,
              int32_t document_separator, int64_t rank, int64_t world_size, Logger& log);
    ~BatchFeed();
    BatchFeed(const BatchFeed&) = delete;
    BatchFeed& operator=(const BatchFeed&) = delete;

    // The train split is in backend memory (data.placement resolved to "device").
    bool resident() const { return resident_; }
    // The sequential sampler's position in data.train (checkpoints carry it).
    const SequentialCursor& cursor() const { return cursor_; }
    void set_cursor(const SequentialCursor& c) { cursor_ = c; }

    // Resident split, sequential sampler: walks the cursor over this step's grad_accum windows
    // (each of every rank's rows) and uploads their starts, which resident_loader's draws (and
    // a replayed graph) read. The random sampler draws by step number: nothing to do.
    void upload_window_starts();
    // Draws micro-batch k on the backend from the resident split, reading every per-step
    // value from backend memory (scalars, the window starts): a whole step of these is what
    // a graph records.
    MicroBatchLoader resident_loader(const StepScalars* scalars) const;
    // Draws micro-batch k of step s on the host (the sequential cursor advances) and loads it.
    MicroBatchLoader host_loader(int64_t s);

    // One host micro-batch [B, T+1] (the model's B and T): what host_loader draws into, and
    // eval's batches and the whole eval's windows.
    int32_t* rows() { return rows_.data(); }
    // rows() (a host micro-batch [B, T+1]) into the given backend buffers; with
    // data.document_attention also the positions (the model's positions buffer), restarting
    // at each end-of-text token.
    void load_host_rows(int32_t* inputs, int32_t* targets);
    void load_host_rows(int32_t* inputs, int32_t* targets, const int32_t* rows, int B, int T);
    // The positions buffer when batches carry document positions (data.document_attention),
    // else null.
    const int32_t* document_positions();

private:
    // data.placement: whether the train split goes into backend memory.
    void place_train_data();
    void upload_train_data();

    Backend& backend_;
    Decoder& model_;
    const RunConfig& run_;
    const TokenDataset* train_;
    Logger& log_;
    const int32_t document_separator_;
    const int64_t rank_, world_size_;
    SequentialCursor cursor_;
    // The train split resident in backend memory (data.placement = device), or none.
    bool resident_ = false;
    DeviceTokens resident_tokens_;
    std::vector<int64_t> shard_starts_;  // host copy of resident_tokens_.shard_starts
    void* resident_buffer_ = nullptr;
    void* resident_starts_ = nullptr;
    // This step's sequential window starts, one per micro-batch: [grad_accum] int64, host
    // and backend copies (the backend one is what sample_window and a replayed graph read).
    std::vector<int64_t> window_starts_;
    int64_t* window_starts_dev_ = nullptr;
    std::vector<int32_t> rows_;  // one micro-batch as drawn on the host: [B, T+1]
    // data.document_attention's host staging: inputs, targets and positions [B, T].
    std::vector<int32_t> inputs_, targets_, doc_positions_;
};

}  // namespace trt
