// Session: one training run. Owns the config, backend, model, optimizer, data, batch feed
// and metrics. step() = sample -> forward -> backward -> clip -> AdamW. Its methods are
// spread by concern over session*.cpp (docs/ARCHITECTURE.md lists which file holds what).
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "backend/op_profiler.h"
#include "checkpoint/checkpoint.h"
#include "config/config.h"
#include "core/log.h"
#include "data/example_batches.h"
#include "data/example_set.h"
#include "data/sampler.h"
#include "dist/communicator.h"
#include "io/dir_lock.h"
#include "model/decoder.h"
#include "model/model_weights.h"
#include "runtime/batch_feed.h"
#include "runtime/gradient_sync.h"
#include "runtime/metrics_log.h"
#include "runtime/optimizer.h"
#include "runtime/step_engine.h"
#include "runtime/token_sampling.h"

namespace trt {

struct StepResult {
    int64_t step = 0;  // 0 = none completed yet
    double loss = 0, lr = 0, grad_norm = 0;
    int64_t tokens = 0, tokens_total = 0;
    double ms = 0;
};

struct SessionMetrics {
    int64_t step = 0, tokens_total = 0;
    double tokens_per_s = 0, step_ms_p50 = 0, step_ms_p95 = 0;
    int64_t bytes_in_use = 0, bytes_reserved = 0;
    double last_loss = 0, last_val_loss = 0;
    int64_t skipped_steps = 0;
    double loss_scale = 1;
    // Throughput against the hardware (src/runtime/perf.h): FLOPs per token = 6N + 6·L·C·T,
    // the device's peak (runtime.peak_tflops, else the table; 0 = unknown) and
    // mfu = tokens_per_s · model_flops_per_token / peak_flops (0 when the peak is unknown).
    double model_flops_per_token = 0, peak_flops = 0, mfu = 0;
    // Data parallelism: this session's rank and the ranks it trains with (0 and 1 alone).
    int32_t rank = 0, world_size = 1;
};

// A whole-split eval (data/eval_windows.h): every target of a token stream scored once.
struct WholeEvalResult {
    double loss = 0;        // mean over the scored targets (nats/token)
    double perplexity = 0;  // exp(loss)
    int64_t tokens = 0;     // targets scored: the stream's tokens - 1
    int64_t windows = 0;    // ceil(tokens / train.seq_len); only the last may be shorter
};

// Called by train() at each logged step / eval; return false to stop.
using ProgressCallback = std::function<bool(const trainrt_progress&)>;

enum class TrainOutcome { Completed, Stopped };

// Builds the session's backend from the resolved config. The default is select_backend();
// tests inject one (e.g. a CPU backend that records and replays graphs).
using BackendFactory = std::function<BackendSelection(const RunConfig&)>;

class Session {
public:
    // world: the data-parallel ranks this session is one of (docs/DISTRIBUTED.md; null = a
    // world of one). Every rank steps with its own share of each global batch (rank·B ..
    // rank·B + B - 1 of the world·B rows a step draws), and the gradients are summed across
    // the ranks before the update, so the ranks keep identical weights.
    Session(const Config& config, const LogSink& sink, const BackendFactory& factory = {},
            std::shared_ptr<dist::Communicator> world = nullptr);
    ~Session();

    // Enqueues one step; returns the figures of the most recent *completed* step, which lags
    // by up to runtime.max_inflight - 1 steps on an asynchronous backend.
    StepResult step();
    // Waits for every enqueued step; returns the last one's figures.
    const StepResult& sync();
    // tokens: grad_accum * B * (T+1) ids (see trainrt_session_step_tokens).
    StepResult step_tokens(const int32_t* tokens, size_t n_tokens);
    // A step on host examples whose targets may be ignored (instruction tuning trains on some
    // tokens only; runtime/session_examples.cpp): inputs, targets and positions hold
    // n = grad_accum x B x T ids each, [micro-batch, row, column]. A target of
    // kIgnoredTarget (-1) is not a target. The loss is the mean over the step's counted
    // targets — all micro-batches, all ranks — and so is the gradient (dloss = 1 / count), so
    // neither grad_accum nor the world size changes the result. positions: nullptr (0 .. T-1
    // in every row), else each row starts at 0 and each value is 0 or the previous + 1. A
    // step with no counted target anywhere is refused before anything changes.
    // StepResult.tokens stays the tokens processed (grad_accum x world x B x T).
    StepResult step_examples(const int32_t* inputs, const int32_t* targets,
                             const int32_t* positions, size_t n);
    // trainrt_session_step_masked: step_tokens' rows of T+1 ids, and loss_mask [grad_accum,
    // B, T] (nullptr: every target counts; mask[k,b,t] != 0: the target tokens[k,b,t+1]
    // counts), positions as step_examples'. n_mask: the length of loss_mask and positions.
    StepResult step_masked(const int32_t* tokens, size_t n_tokens, const uint8_t* loss_mask,
                           const int32_t* positions, size_t n_mask);
    const StepResult& last_step() const { return last_; }
    // train.eval_mode = "sampled": the mean over train.eval_batches windows from the start of
    // data.val; "whole": eval_whole().loss.
    double eval();
    // Every token of data.val (its shards as one stream) scored exactly once, in disjoint
    // windows of train.seq_len, train.batch_size windows per forward (data/eval_windows.h).
    WholeEvalResult eval_whole();
    // The same over n host token ids taken as one stream (a text tokenized in memory); each
    // in [0, model.vocab_size). Does not touch last_val_loss.
    WholeEvalResult eval_whole_tokens(const int32_t* tokens, size_t n);
    double forward(const int32_t* tokens, int64_t rows, int64_t seq_len, float* logits,
                   size_t logits_cap);
    TrainOutcome train(int64_t n_steps, const ProgressCallback& callback);

    // Checkpoints (src/checkpoint/checkpoint.h). dir "" = <out_dir>/step_N + latest + keep_last.
    // Returns the directory written (or kept).
    std::string save(const std::string& dir);
    // path: a checkpoint directory or a folder with `latest`. All-or-nothing.
    void load(const std::string& path);
    // A Hugging Face model folder (LoRA adapters merged into the base weights), or (LoRA runs
    // only; Error(InvalidArgument) otherwise) the adapters as a PEFT folder.
    void export_hf(const std::string& out_dir, ExportDType dtype);
    void export_adapter(const std::string& out_dir, ExportDType dtype);
    // Generates up to n_new tokens after prompt into out; the model sees the last seq_len
    // tokens. Returns how many: n_new, or fewer when one of options.stop_ids came (it is the
    // last one written).
    size_t sample(const int32_t* prompt, size_t n_prompt, size_t n_new,
                  const TokenSamplingOptions& options, int32_t* out);
    // Lock-free stores only: safe from a signal handler. train() sees it before each step
    // and, in a world of one, between the micro-batches of an eagerly run step (which it then
    // abandons: see step_on_this_rank).
    void request_stop() {
        stop_count_.fetch_add(1);
        stop_requested_.store(true);
    }
    SessionMetrics metrics() const;
    // runtime.profile_ops (session_profile.cpp): the per-op profile of the train steps since
    // the session began or the last reset_profile(), as JSON (docs/C_API.md, "Per-op
    // profile"). Both refuse (Status::Config) a session created without it.
    std::string profile_json() const;
    void reset_profile();
    const Config& config() const { return config_; }
    void set_log_sink(const LogSink& sink) { log_.set_sink(sink); }

    // The model's tensors as fp32, and the user's metadata (runtime/session_params.cpp; the C
    // API's trainrt_session_*_params and *_metadata).
    const ParamTable& param_table() const { return model_->table(); }
    // The tensor called name (nullptr: every tensor back to back, without padding rows) into
    // out, which holds exactly its element count (Error(InvalidArgument) otherwise).
    void read_params(const char* name, float* out, size_t count);
    // Replaces it; finite values only (Error(NonFinite), nothing written). Working copies
    // follow (backend copy_to_device); moments, step and schedule are kept.
    void write_params(const char* name, const float* values, size_t count);
    // value nullptr: removes key. Saved in checkpoints, replaced by load().
    void set_metadata(const std::string& key, const std::string* value);
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // The ids of the graphs the session captures (accel.cuda_graphs; a test's recording
    // backend counts them): the train step, eval's forward, sample()'s decode step (captured
    // again in each call: it holds that call's KV cache).
    static constexpr int kTrainStepGraph = 0;
    static constexpr int kEvalGraph = 1;
    static constexpr int kDecodeGraph = 2;

private:
    // Construction (session.cpp), in order: the world's and the config's checks; the backend,
    // precision and step engine; the data; the model and its first weights; the optimizer,
    // its step scalars and (several ranks) the gradients' synchronisation; the batch feed;
    // the graphs.
    void check_run_config();
    void start_backend(const BackendFactory& factory);
    void open_data();
    // data.document_attention: the end-of-text id positions restart at (-1: off).
    int32_t document_attention_separator();
    void resolve_auto_batch_size(const BackendFactory& factory);
    void check_data_fits() const;
    void build_model(int32_t document_separator);
    DecoderOptions decoder_options() const;      // train.trainable/recompute, the head's chunk
    // [table total] fp32, host; a quantised base's tensors go to `quantised` instead.
    std::vector<float> initial_weights(const QuantisedSink& quantised) const;
    void build_optimizer();
    void plan_graphs();

    void check_tokens(const int32_t* tokens, size_t n) const;
    // step_examples' checks: the targets counted on this rank (refusing an id that is neither
    // in [0, vocab_size) nor -1), and the positions' layout.
    int64_t count_targets(const char* what, const int32_t* targets, size_t n) const;
    void check_positions(const char* what, const int32_t* positions) const;
    // step_examples and step_masked; what names the entry point in errors.
    StepResult examples_step(const char* what, const int32_t* inputs, const int32_t* targets,
                             const int32_t* positions, size_t n);
    // Tokens one step trains on, over every rank: grad_accum x world x B x T.
    int64_t tokens_per_step() const;
    // Data parallelism (session_dist.cpp): refuses a world whose ranks run different configs;
    // tells the world this rank failed mid-run (its peers may wait at a collective it will
    // not reach).
    void require_same_config_on_every_rank();
    // ... and whose ranks start from other weights or another tokenizer (same paths, other
    // files), or loaded another checkpoint: sha256 of every tensor's fp32 values compared.
    // quantised_sha256: a quantised base's tensors, by name (their fp32 values' digests).
    void require_same_start_on_every_rank(
        const float* host_params, const std::map<std::string, std::string>& quantised_sha256);
    void require_same_checkpoint_on_every_rank(const std::string& dir, const float* params,
                                               const float* m, const float* v,
                                               const CheckpointState& st);
    std::string digests_differ(const std::vector<std::string>& names,
                               const std::vector<std::string>& hex, size_t* item);
    void mark_failed() noexcept;

    // One step (session_step.cpp).
    // Thrown by a stoppable step that a stop request abandoned before micro-batch `next`
    // (0-based); caught by train(), never past the Session.
    struct StepAbandoned {
        int64_t next;
    };
    // stoppable (train() only): a stop request seen before a micro-batch abandons the step —
    // it throws StepAbandoned after putting the sampler cursor back; the step count, weights
    // and optimizer state are only changed after the last micro-batch, so the session is
    // exactly as before the step (its gradients buffer and scalars hold partial sums the
    // next step overwrites). Only where the host runs the micro-batch loop itself: a world of
    // one (ranks must agree on every step), and not while a graph records or replays the step
    // (accel.cuda_graphs: a replay runs every micro-batch at once).
    StepResult step_on_this_rank(bool stoppable = false);
    // Every step's grad-accumulation loop: zero grads, GA x (load -> forward/backward), then
    // the optimizer update.
    // stoppable: see step_on_this_rank. positions: the backend buffer `load` fills with
    // each micro-batch's positions (packed examples), or null.
    void accumulate_and_update(float dloss_scale, const MicroBatchLoader& load,
                               bool stoppable = false, const int32_t* positions = nullptr);
    // The update of the whole global batch: AdamW, after the ranks' sums (grad_sync_).
    void update_weights();
    // Reads back step s's scalars asynchronously, then collects what has completed.
    // counted: the step's loss is the mean over that many targets (0: tokens_per_step()).
    StepResult finish_step(int64_t s, double lr, double t0_ms, int64_t counted = 0);
    // Reads back completed steps: all of them (wait_all), else those ready plus as many as
    // keep at most max_inflight - 1 in flight.
    void collect_steps(bool wait_all);
    void complete_step(const PendingStep& p, const StepScalars& r);
    void reset_step_scalars(float loss_scale);
    void throw_if_diverged() const;
    // data.train named a split with no tokens (prepare --val-fraction 1): the session
    // evaluates and samples, but step() and train() refuse, saying so.
    void refuse_empty_train_split() const;

    // train() (session_train.cpp): one call's state, its steps and how it stops.
    struct TrainRun {
        const ProgressCallback& callback;
        int64_t total, target;  // train.steps; the step this call ends after
        std::unique_ptr<MetricsLog> metrics;  // metrics.jsonl (rank 0 with train.out_dir)
        double t_start_ms;
        bool can_eval;
        // A periodic checkpoint that failed: the next one tries again, and the end retries.
        std::optional<Error> failed_checkpoint;
    };
    TrainOutcome train_on_this_rank(int64_t n_steps, const ProgressCallback& callback);
    // One step and what its number calls for (eval, checkpoint, report); an outcome when
    // train() stops there.
    std::optional<TrainOutcome> train_step(TrainRun& run);
    // Stopping: the completed steps reported (after waiting for them: wait), then why.
    TrainOutcome stop_train(TrainRun& run, bool wait, const std::string& why);
    TrainOutcome end_train(const TrainRun& run, TrainOutcome outcome);
    // Progress (session_progress.cpp): metrics.jsonl opened (and its run header written)
    // for a train() up to target; the progress callback; the steps completed since the last
    // report, logged every runtime.log_every (false: the callback asked to stop).
    std::unique_ptr<MetricsLog> open_metrics_log(int64_t target);
    bool report_progress(const TrainRun& run, int32_t kind, const StepResult& r, double loss);
    bool report_completed(TrainRun& run);

    // Evaluation (session_eval.cpp).
    double run_eval(bool inside_train);
    // eval()'s forward of the batch in the model's buffers (graph-replayed like the step).
    void run_eval_forward();
    // The whole-split eval of a stream of n_tokens that read() copies from (what: names the
    // stream in errors). inside_train: as run_eval's.
    using StreamReader = std::function<void(int64_t offset, int64_t n, int32_t* out)>;
    WholeEvalResult run_eval_whole(int64_t n_tokens, const StreamReader& read,
                                   const std::string& what, bool inside_train);
    WholeEvalResult eval_whole_val(bool inside_train);
    // Whether a request_stop should interrupt an eval now (see run_eval); seen: stop_count_
    // when the eval began.
    bool eval_stop_requested(bool inside_train, uint64_t seen);
    // Shards with loss masks (session_example_data.cpp): the examples of data.train and
    // data.val, a step on this rank's rows of them, and eval's mean over their targets.
    void open_example_data();
    StepResult step_example_data();
    double eval_example_data(bool inside_train);

    // Throughput (session_metrics.cpp).
    double recent_tokens_per_s() const;
    double model_flops_per_token() const;  // 6N + 6LCT (bench/README.md)
    double peak_flops_per_s() const;        // runtime.peak_tflops, else the device's; 0 unknown
    mutable double peak_flops_ = -1;        // peak_flops_per_s, once looked up
    double peak_bytes_per_s() const;        // runtime.peak_gbs, else the device's; 0 unknown
    // The start-up log (session_log.cpp); its "acceleration: …" and "model: …" lines (also
    // the metrics run header).
    void log_startup() const;
    std::string acceleration_line() const;
    std::string model_line() const;

    // Checkpoints (session_checkpoint.cpp).
    void copy_state_to_host(std::vector<float>& params, std::vector<float>& m,
                            std::vector<float>& v);
    CheckpointState checkpoint_state() const;
    std::string save_into_out_dir();
    // train()'s cadence: whether this step checkpoints (train.checkpoint_every); a periodic
    // checkpoint that fails for want of room or memory, or from a diverged run, is logged
    // and kept in failed; the end of train() retries it (every rank joins a ZeRO-1 retry).
    bool checkpoint_due() const;
    void checkpoint_in_train(std::optional<Error>& failed);
    void retry_failed_checkpoint(const std::optional<Error>& failed);
    // The parameters on the host, checked finite (`what` names the export for the error;
    // session_export.cpp).
    std::vector<float> params_for_export(const char* what);
    // A quantised base's full-precision model for an export (session_export.cpp).
    std::vector<float> with_full_base(const ParamTable& full, const std::vector<float>& flat);
    void warn_config_differences(const std::string& checkpoint_toml, int64_t checkpoint_ranks,
                                 const std::string& dir);
    // The training keys a loaded checkpoint was trained with otherwise ("" = none): warned
    // about once, when training goes on from it (step, step_tokens, train).
    std::string resume_differences_;
    void warn_resume_differences();

    Config config_;
    RunConfig run_;
    std::shared_ptr<dist::Communicator> world_;  // null: one rank
    int64_t rank_ = 0, world_size_ = 1;
    // ZeRO-1 (dist.zero = 1 with several ranks): the optimizer owns a shard.
    bool zero_ = false;
    Logger log_;
    std::unique_ptr<Backend> backend_;
    Precision precision_ = Precision::Fp32;  // resolved
    // runtime.profile_ops: backend_ is an OpProfiler over the selected backend (this is it),
    // and the steps it has timed. A ProfiledStep times the ops of one step while it lives
    // (no-op without a profiler, and inside a step already timed).
    OpProfiler* profiler_ = nullptr;
    int64_t profiled_steps_ = 0;
    class ProfiledStep {
    public:
        explicit ProfiledStep(Session& s);
        ~ProfiledStep();
        ProfiledStep(const ProfiledStep&) = delete;
        ProfiledStep& operator=(const ProfiledStep&) = delete;

    private:
        Session& s_;
        bool started_ = false;
        int exceptions_ = 0;  // std::uncaught_exceptions() at the start
        // The profile before the step: a step that throws (abandoned by a stop request,
        // diverged, failed) is put back out of it, rows and wall time, as if not run.
        OpProfiler::Snapshot before_;
    };
    std::unique_ptr<Decoder> model_;
    // The frozen tensors as model.init_from gave them (name -> tensor_sha256): while they
    // hold, checkpoints leave them out (format 3). Empty: random init, nothing frozen, or a
    // load replaced them.
    std::map<std::string, std::string> frozen_sha256_;
    void
    store_frozen_tensors();  // forget the flat buffer's frozen digests (session_checkpoint.cpp)
    std::unique_ptr<AdamW> optimizer_;
    std::unique_ptr<GradientSync> grad_sync_;  // several ranks only
    std::optional<TokenDataset> train_data_;
    std::optional<TokenDataset> val_data_;
    // A split prepared with loss masks (prepare --chat): its examples and the rows they
    // make (session_example_data.cpp); empty for plain token data.
    struct ExampleData {
        std::unique_ptr<ExampleSet> set;
        std::unique_ptr<ExampleBatches> rows;
    };
    ExampleData train_examples_, val_examples_;
    std::vector<int32_t> example_inputs_, example_targets_, example_positions_;  // [GA, B, T]
    // How plain token batches reach the model (resident split or host draws, the sequential
    // cursor, document positions).
    std::unique_ptr<BatchFeed> feed_;

    StepScalars* scalars_ = nullptr;  // backend memory: this step's lr, loss, norm, scale
    // Whole-step graphs (accel.cuda_graphs) of the train step and of eval's forward, and the
    // asynchronous read-back of each step's figures (runtime/step_engine.h).
    std::unique_ptr<GraphRunner> step_graph_, eval_graph_;
    int64_t max_inflight_ = 1;
    std::unique_ptr<ReadbackRing> readback_;
    std::vector<StepResult> completed_;  // completed since train() last looked
    double last_completion_ms_ = 0;
    float loss_scale_ = 1;       // as of the last completed step
    int64_t skipped_steps_ = 0;  // as of the last completed step
    int64_t consecutive_skipped_ = 0;  // skipped steps in a row, up to the last completed one
    std::string divergence_;  // set when they reach train.max_skipped_steps: the error to throw

    int64_t step_ = 0;
    int64_t tokens_total_ = 0;
    StepResult last_;
    double last_val_loss_;
    std::deque<double> recent_ms_;  // last (up to) 100 step times
    std::atomic<bool> stop_requested_{false};
    std::atomic<uint64_t> stop_count_{0};  // requests ever made: a standalone eval sees new ones
    bool empty_train_split_ = false;  // see refuse_empty_train_split

    std::vector<int32_t> inputs_;   // [B*T] staging for sample()
    std::vector<int32_t> targets_;  // [B*T]
    // The step_ directory this session last wrote or loaded in out_dir (kept on re-save).
    std::string own_checkpoint_;
    // Held from the first write into train.out_dir (train(), save()) to the session's end:
    // one run per folder (io/dir_lock.h).
    std::unique_ptr<DirLock> out_dir_lock_;
    void lock_out_dir();
    std::map<std::string, std::string> metadata_;  // set_metadata; checkpoints carry it
    bool run_header_written_ = false;  // metrics.jsonl's run line, once per session / load
    // The run this session's metrics.jsonl lines belong to (FORMATS.md §5): a new id for a
    // fresh session, the loaded checkpoint's after a load (checkpoints carry it), and the
    // checkpoint step it resumed from (-1: a fresh start).
    std::string run_id_ = new_run_id();
    int64_t resumed_from_ = -1;
    // The tensor called name, or Error(InvalidArgument) naming the closest one.
    const ParamTensor& named_tensor(const char* what, const std::string& name) const;
};

}  // namespace trt
