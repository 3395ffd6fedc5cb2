// Session: checkpoints (src/checkpoint/checkpoint.h) — the state a bit-exact resume needs
// copied to the host and checked finite, save (into a directory, or <out_dir>/step_N with
// latest and keep_last), load (all-or-nothing: every check before anything changes), and
// train()'s cadence: a periodic checkpoint that fails does not end the run, it is retried.
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/version.h"
#include "model/finite_check.h"
#include "runtime/session.h"
#include "runtime/session_dist.h"

namespace trt {

void Session::copy_state_to_host(std::vector<float>& params, std::vector<float>& m,
                                 std::vector<float>& v) {
    const size_t n = model_->table().total(), ng = model_->table().grad_total();
    params.resize(n);
    m.resize(ng);
    v.resize(ng);
    sync();  // the figures of every enqueued step are in before the state is written
    backend_->copy_to_host(params.data(), model_->params(), n * sizeof(float));
    optimizer_->moments_to_host(m.data(), v.data());  // fp32 whatever optim.state_dtype
    if (zero_) {  // each rank holds its shard of the moments: every rank gets all of them
        world_->all_gather_parts(m.data(), optimizer_->shard_bounds());
        world_->all_gather_parts(v.data(), optimizer_->shard_bounds());
    }
    // Never write a checkpoint a later run would trust but cannot use.
    const std::string advice =
        "nothing was written. The run has diverged (see the skipped-step warnings): resume "
        "from the last good checkpoint with a lower optim.lr, more optim.warmup_steps or "
        "optim.grad_clip";
    require_finite(model_->table(), params.data(), "save: the parameters", advice);
    require_finite_trainable(model_->table(), m.data(), "save: the AdamW first moment (m)",
                             advice);
    require_finite_trainable(model_->table(), v.data(), "save: the AdamW second moment (v)",
                             advice);
}

CheckpointState Session::checkpoint_state() const {
    CheckpointState st;
    st.step = step_;
    st.tokens_total = tokens_total_;
    st.world_size = world_size_;
    st.cursor_shard = feed_->cursor().shard;
    st.cursor_pos = feed_->cursor().pos;
    st.loss_scale = loss_scale_;
    st.library_version = kVersionString;
    st.config_toml = config_.dump();
    if (!frozen_sha256_.empty()) {
        st.frozen_from = run_.model.init_from;
        st.frozen_sha256 = frozen_sha256_;
    }
    st.metadata = metadata_;
    st.run_id = run_id_;
    return st;
}

std::string Session::save(const std::string& dir) {
    if (dir.empty()) return save_into_out_dir();
    // Data parallel: every rank holds the same state and rank 0 writes it; under ZeRO-1 the
    // moments are gathered first (a collective, so on every rank).
    if (rank_ != 0 && !zero_) return dir;
    std::vector<float> params, m, v;
    copy_state_to_host(params, m, v);
    if (rank_ != 0) return dir;
    write_checkpoint(dir, model_->table(), params.data(), m.data(), v.data(),
                     checkpoint_state());
    return dir;
}

void Session::lock_out_dir() {
    if (!out_dir_lock_) out_dir_lock_ = std::make_unique<DirLock>(run_.train.out_dir, "train.out_dir");
}

std::string Session::save_into_out_dir() {
    namespace fs = std::filesystem;
    const std::string& out = run_.train.out_dir;
    if (out.empty())
        fail(Status::Config, "save: train.out_dir is empty, so there is nowhere to put "
             "step_N checkpoints; set train.out_dir or pass a directory");
    std::error_code ec;
    const std::string name = checkpoint_dir_name(step_);
    const std::string dir = (fs::path(out) / name).string();
    std::vector<float> params, m, v;
    if (zero_) copy_state_to_host(params, m, v);  // ZeRO-1 gathers the moments: every rank
    if (rank_ != 0) return dir;  // every rank holds the same state; rank 0 writes it
    lock_out_dir();  // creates the folder too
    if (!own_checkpoint_.empty() && fs::equivalent(dir, own_checkpoint_, ec)) {
        // Already holds exactly this state (written or loaded by this session at this step).
        set_latest_checkpoint(out, name);
        return dir;
    }
    if (!zero_) copy_state_to_host(params, m, v);
    write_or_replace_checkpoint(dir, model_->table(), params.data(), m.data(), v.data(),
                                checkpoint_state());
    set_latest_checkpoint(out, name);
    own_checkpoint_ = dir;
    prune_checkpoints(out, run_.train.keep_last);
    // Said here, once per checkpoint written: train()'s periodic ones, its retry and a host's
    // (or the CLI's end-of-run) save alike. The kept one above was said when it was written.
    log_.info("checkpoint: ", dir);
    return dir;
}

// Later checkpoints store the frozen tensors of the flat buffer (they no longer hold
// model.init_from's values); a quantised base keeps its digests: it is never stored.
void Session::store_frozen_tensors() {
    for (auto it = frozen_sha256_.begin(); it != frozen_sha256_.end();)
        it = model_->table().find_quantised(it->first) ? std::next(it) : frozen_sha256_.erase(it);
}

void Session::load(const std::string& path) {
    const std::string dir = resolve_checkpoint(path);
    const size_t n = model_->table().total(), ng = model_->table().grad_total();
    std::vector<float> params(n), m(ng), v(ng);
    // The current weights first: a checkpoint without its frozen base (format 3) keeps ours,
    // once their digests match the ones it recorded.
    sync();
    backend_->copy_to_host(params.data(), model_->params(), n * sizeof(float));
    std::vector<std::string> fresh_moments;
    const CheckpointState st = read_checkpoint(dir, model_->table(), params.data(), m.data(),
                                               v.data(), &fresh_moments);
    // A quantised base (lora.base_dtype) is never in the buffers read above: the digests of
    // the tensors it was quantised from stand for it.
    for (const auto& [name, hex] : st.frozen_sha256) {
        if (!model_->table().find_quantised(name)) continue;
        const auto ours = frozen_sha256_.find(name);
        if (ours == frozen_sha256_.end() || ours->second != hex)
            fail(Status::Config, "checkpoint '", dir, "' was trained on a quantised base whose '",
                 name, "' is model.init_from = '", st.frozen_from,
                 "' as it was then, and the "
                 "base loaded now differs from it (sha256); set model.init_from to that base, "
                 "unchanged");
    }
    const std::string advice = "this checkpoint is unusable (written from a diverged run, or "
                               "edited); resume from an earlier one";
    require_finite(model_->table(), params.data(), cat("checkpoint '", dir, "': model.safetensors"),
                   advice);
    require_finite_trainable(model_->table(), m.data(), cat("checkpoint '", dir, "': optimizer m"),
                             advice);
    require_finite_trainable(model_->table(), v.data(), cat("checkpoint '", dir, "': optimizer v"),
                             advice);
    if (run_.data.sampler == SamplerKind::Sequential && train_data_ &&
        (st.cursor_shard < 0 || st.cursor_shard >= static_cast<int64_t>(train_data_->num_shards()) ||
         st.cursor_pos < 0))
        fail(Status::Config, "checkpoint '", dir, "': its sequential sampler cursor (shard ",
             st.cursor_shard, ", position ", st.cursor_pos, ") does not fit data.train ('",
             run_.data.train, "', ", train_data_->num_shards(),
             " shard(s)); resume with the data the checkpoint was trained on");
    warn_config_differences(st.config_toml, st.world_size, dir);
    if (world_size_ > 1)
        require_same_checkpoint_on_every_rank(dir, params.data(), m.data(), v.data(), st);
    // Every check passed: now change the session.
    sync();
    completed_.clear();
    backend_->copy_to_device(model_->params(), params.data(), n * sizeof(float));
    optimizer_->moments_from_host(m.data(), v.data());
    // A checkpoint that stored other values for the frozen tensors: they are no longer
    // model.init_from's, so later checkpoints store them.
    for (const auto& [name, hex] : frozen_sha256_)
        if (const ParamTensor* t = model_->table().find(name);
            t && tensor_sha256(*t, params.data()) != hex) {
            store_frozen_tensors();
            break;
        }
    step_ = st.step;
    tokens_total_ = st.tokens_total;
    metadata_ = st.metadata;
    run_header_written_ = false;  // the next train() writes a header at this checkpoint
    // ... continuing its run; a checkpoint of an older writer names none: a run of its own.
    run_id_ = st.run_id.empty() ? new_run_id() : st.run_id;
    resumed_from_ = st.step;
    feed_->set_cursor({st.cursor_shard, st.cursor_pos});
    const bool fp16 = precision_ == Precision::Fp16;
    // The dynamic loss scale carries over when both runs scale; otherwise start afresh.
    reset_step_scalars(fp16 ? (st.loss_scale > 1.0 && std::isfinite(st.loss_scale)
                                   ? static_cast<float>(st.loss_scale)
                                   : 65536.0f)
                            : 1.0f);
    last_ = StepResult{};
    last_.step = step_;
    last_.tokens_total = tokens_total_;
    last_val_loss_ = std::numeric_limits<double>::quiet_NaN();
    recent_ms_.clear();
    own_checkpoint_ = dir;  // save() into out_dir at this step keeps it rather than rewrite
    log_.info("resumed from ", dir, " at step ", step_, " (", tokens_total_, " tokens)");
    if (!fresh_moments.empty())
        log_.warn("checkpoint ", dir, " was trained with ", fresh_moments.front(),
                  fresh_moments.size() > 1 ? cat(" and ", fresh_moments.size() - 1, " more tensors")
                                           : std::string(),
                  " frozen (train.trainable): their AdamW moments start at zero now");
}

bool Session::checkpoint_due() const {
    return run_.train.checkpoint_every > 0 && step_ % run_.train.checkpoint_every == 0;
}

// A periodic checkpoint that fails (a full disk, say) does not end the run: the next one
// tries again, and train() fails only if its last attempt, retried at the end, still does.
void Session::checkpoint_in_train(std::optional<Error>& failed) {
    try {
        save_into_out_dir();
        failed.reset();
    } catch (const Error& e) {
        const Status st = e.status();
        if (st != Status::Io && st != Status::OutOfMemory && st != Status::NonFinite)
            throw;
        log_.error("checkpoint at step ", step_, " failed: ", e.what(),
                   "; training goes on, and the next checkpoint tries again");
        failed = e;
    }
}

void Session::retry_failed_checkpoint(const std::optional<Error>& failed) {
    // (Only rank 0 writes, so only it can have failed; under ZeRO-1 a save is a collective
    // all ranks join, so they agree on the retry.)
    const bool retry = zero_ ? any_rank(*world_, failed.has_value()) : failed.has_value();
    if (retry && !failed) {
        save_into_out_dir();  // this rank's part of rank 0's retry
    } else if (retry) {
        log_.info("train: retrying the failed checkpoint at step ", step_);
        try {
            save_into_out_dir();
        } catch (const Error& e) {
            fail(e.status(), "train: the checkpoint at step ", step_, " failed (", e.what(),
                 "), as did the one before it (", failed->what(),
                 "); the session still holds step ", step_, ": make room and save again");
        }
    }
}

}  // namespace trt
