#include "runtime/session.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>

#include "backend/backend_factory.h"
#include "chat/end_of_turn.h"
#include "config/size_limits.h"
#include "core/version.h"
#include "data/prepare_text.h"
#include "data/tokenizer_agreement.h"
#include "io/fs_util.h"
#include "model/finite_check.h"
#include "model/lora.h"
#include "model/peft_adapter.h"
#include "model/model_weights.h"
#include "runtime/batch_size.h"
#include "runtime/metrics_log.h"
#include "runtime/model_info.h"
#include "runtime/perf.h"
#include "runtime/schedule.h"
#include "runtime/session_dist.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/tokenizer_identity.h"

namespace trt {
namespace {

// Thrown by a stoppable step that a stop request abandoned before micro-batch `next` (0-based);
// caught by train(), never past the Session.
struct StepAbandoned {
    int64_t next;
};

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// init_from: model.init_from ("" = none). A model read from one has its vocabulary fixed by
// it, so an id too large means the data is not the model's, not that vocab_size is too small.
TokenDataset open_split(const std::string& pattern, const char* key, int64_t vocab,
                        const std::string& init_from) {
    std::string advice;
    if (!init_from.empty()) {
        namespace fs = std::filesystem;
        std::error_code ec;
        const bool has_tokenizer = fs::is_regular_file(fs::path(init_from) / "tokenizer.json", ec) ||
                                   fs::is_regular_file(fs::path(init_from) / "tokenizer.model", ec);
        advice = cat("the data's token ids exceed the vocabulary of the model in model.init_from '",
                     init_from, "' (", vocab, " tokens, fixed by it): the data was tokenized with "
                     "another tokenizer, or data.tokenizer is not the model's. Prepare the data "
                     "again with the model's own tokenizer",
                     has_tokenizer ? cat(" (trainrt prepare --tokenizer ", init_from, " ...)")
                     : vocab == 256 ? std::string(" (the model is byte-level: trainrt prepare "
                                                  "without --tokenizer)")
                                    : std::string());
    }
    try {
        return TokenDataset::open(pattern, vocab, advice);
    } catch (const Error& e) {
        throw Error(e.status(), cat(key, ": ", e.what()));
    }
}

}  // namespace

namespace {

// data.tokenizer must load and its ids fit the model: said when the run starts, not at
// sample or export time. Its identity is compared with the data's below.
tok::TokenizerIdentity check_tokenizer(const std::string& path, int64_t vocab_size) {
    const tok::TokenizerFiles files = tok::find_tokenizer_files(path, "data.tokenizer");
    const tok::Tokenizer t = tok::Tokenizer::from_file(files.path);
    if (static_cast<int64_t>(t.id_limit()) > vocab_size)
        fail(Status::Config, "data.tokenizer: '", path, "' has ids up to ", t.id_limit() - 1,
             " but model.vocab_size is ", vocab_size, "; is it the tokenizer the data was "
             "prepared with?");
    return tok::identity_of(t, path);
}

}  // namespace

Session::Session(const Config& config, const LogSink& sink, const BackendFactory& factory,
                 std::shared_ptr<dist::Communicator> world)
    : config_(config), run_(config.run()), world_(std::move(world)), log_(sink),
      last_val_loss_(std::numeric_limits<double>::quiet_NaN()) {
    const TrainConfig& tr = run_.train;
    const ModelConfig& mc = run_.model;
    if (!world_) world_ = launcher_world(run_.dist);
    if (world_) {
        rank_ = world_->rank();
        world_size_ = world_->size();
    }
    // A rank that fails from here on leaves the others waiting at a collective: say so.
    struct MarkFailedUnlessBuilt {
        dist::Communicator* world;
        bool built = false;
        ~MarkFailedUnlessBuilt() {
            if (!built && world) world->mark_failed();
        }
    } guard{world_size_ > 1 ? world_.get() : nullptr};
    if (world_size_ > 1) {
        log_.set_rank(static_cast<int>(rank_), static_cast<int>(world_size_));
        require_same_config_on_every_rank();
        if (run_.dist.wire_dtype == WireDType::Bf16 && run_.dist.zero == 1)
            fail(Status::Config, "dist.wire_dtype = \"bf16\" with dist.zero = 1: ZeRO-1's "
                 "reduce-scatter sums in fp32 only (not built in bf16); set one of them back");
    }
    if (tr.checkpoint_every > 0 && tr.out_dir.empty())
        fail(Status::Config, "train.checkpoint_every = ", tr.checkpoint_every,
             " but train.out_dir is empty: set train.out_dir (checkpoints go there) or "
             "set train.checkpoint_every = 0");
    BackendSelection selected = factory ? factory(run_) : select_backend(run_);
    backend_ = std::move(selected.backend);
    precision_ = selected.precision;
    if (!selected.fallback_reason.empty())
        log_.info("runtime.device = \"auto\": no usable CUDA backend, running on the CPU (",
                  selected.fallback_reason, ")");
    max_inflight_ = std::clamp<int64_t>(run_.runtime.max_inflight, 1, Backend::kScalarSlots);
    readback_ = std::make_unique<ReadbackRing>(*backend_);
    readback_->set_max_inflight(max_inflight_);
    step_graph_ = std::make_unique<GraphRunner>(*backend_, log_, kTrainStepGraph, "train step");
    eval_graph_ = std::make_unique<GraphRunner>(*backend_, log_, kEvalGraph, "eval forward");

    RunTokenizers tokenizers;
    if (!run_.data.tokenizer.empty())
        tokenizers.data_tokenizer_identity = check_tokenizer(run_.data.tokenizer, mc.vocab_size);

    if (!run_.data.train.empty()) {
        train_data_ = open_split(run_.data.train, "data.train", mc.vocab_size, mc.init_from);
        // An eval-only folder (prepare --val-fraction 1) has an empty train split: fine until
        // a step needs it (step_on_this_rank says so).
        if (train_data_->total_tokens() == 0) {
            train_data_.reset();
            empty_train_split_ = true;
        }
    }
    if (!run_.data.val.empty())
        val_data_ = open_split(run_.data.val, "data.val", mc.vocab_size, mc.init_from);
    // The shards, data.tokenizer and the model folder must name one tokenizer.
    if (train_data_) tokenizers.datasets.emplace_back("data.train", &*train_data_);
    if (val_data_) tokenizers.datasets.emplace_back("data.val", &*val_data_);
    tokenizers.data_tokenizer = run_.data.tokenizer;
    tokenizers.init_from = run_.model.init_from;
    check_tokenizer_agreement(tokenizers, run_.data.tokenizer_check, log_);
    open_example_data();  // shards with loss masks (prepare --chat): rows of whole examples
    if (run_.data.document_attention && !train_examples_.set) {
        if (run_.data.tokenizer.empty())
            fail(Status::Config, "data.document_attention restarts attention at each "
                 "document's end-of-text token, which needs data.tokenizer (the tokenizer the "
                 "shards were prepared with); byte-level data has no such token");
        if (run_.data.placement == Placement::Device)
            fail(Status::Config, "data.document_attention draws its batches on the host (their "
                 "positions are found there); set data.placement = \"host\" or \"auto\"");
        document_separator_ = static_cast<int32_t>(document_separator_id(run_.data.tokenizer));
        log_.info("data.document_attention: attention and positions restart at each end-of-text "
                  "token (id ", document_separator_, ")");
    }
    if (tr.batch_size == 0) resolve_auto_batch_size(factory);
    // Config bounds (config/size_limits.h): B, T and B * T fit an int.
    const int B = static_cast<int>(tr.batch_size), T = static_cast<int>(tr.seq_len);
    // Sequential windows hold the micro-batches of every rank.
    const int64_t window_rows = tr.batch_size * world_size_;
    if (train_data_ && !train_examples_.set) {
        const bool fits = run_.data.sampler == SamplerKind::Sequential
                              ? sequential_fits(*train_data_, window_rows, T)
                              : sequential_fits(*train_data_, 1, T);
        if (!fits)
            fail(Status::Config, "data.train: no shard of '", run_.data.train, "' holds ",
                 run_.data.sampler == SamplerKind::Sequential ? window_rows * tr.seq_len + 1
                                                              : tr.seq_len + 1,
                 " tokens, which one micro-batch needs; lower train.batch_size or "
                 "train.seq_len, or use more data");
    }
    // A whole eval takes any size; examples make rows of any size.
    if (val_data_ && !val_examples_.set && tr.eval_mode == EvalMode::Sampled) {
        if (!sequential_fits(*val_data_, window_rows, T))
            fail(Status::Config, "data.val: no shard of '", run_.data.val, "' holds ",
                 window_rows * tr.seq_len + 1,
                 " tokens, which one eval batch needs; lower train.batch_size or "
                 "train.seq_len, use more validation data, or set train.eval_mode = \"whole\" "
                 "(every token once, any size)");
    }

    ModelSpec spec = run_model_spec(run_);
    // Packed examples carry positions: a backend sizes for attention that can mask them.
    spec.documents = (run_.data.packing && (train_examples_.set || val_examples_.set)) ||
                     document_separator_ >= 0;
    model_ = std::make_unique<Decoder>(*backend_, spec, B, T,
                                       DecoderOptions(tr.trainable, tr.recompute,
                                                      run_.model.seed));
    std::vector<float> host(model_->table().total());
    if (mc.init_from.empty()) {
        init_random(model_->table(), mc.seed, host.data());  // adapters included
    } else {
        load_init_weights(model_->table(), mc.init_from, host.data());
        init_lora(model_->table(), mc.seed, host.data());
    }
    if (!run_.lora.init_from.empty()) {
        load_peft_adapter(model_->table(), run_.lora.init_from, host.data());
        require_finite(model_->table(), host.data(), cat("lora.init_from '", run_.lora.init_from, "'"),
                       "the adapter's weights are unusable (a damaged file, or one saved from a "
                       "diverged run); use another adapter or set lora.init_from = \"\"");
    }
    if (world_size_ > 1) require_same_start_on_every_rank(host.data());
    backend_->copy_to_device(model_->params(), host.data(), host.size() * sizeof(float));
    // A frozen base read from model.init_from need not be in checkpoints: its digests stand
    // for it (a fine-tune's checkpoint then holds the adapters, or the tensors that train).
    if (!mc.init_from.empty())
        for (const ParamTensor& t : model_->table().tensors())
            if (!t.trainable) frozen_sha256_[t.name] = tensor_sha256(t, host.data());
    zero_ = world_size_ > 1 && run_.dist.zero == 1;
    optimizer_ = std::make_unique<AdamW>(
        *backend_, model_->table(), run_.optim, precision_ == Precision::Fp16,
        run_.accel.fused_adamw,
        zero_ ? ZeroShard{static_cast<int>(rank_), static_cast<int>(world_size_)} : ZeroShard{});
    scalars_ = static_cast<StepScalars*>(backend_->alloc(sizeof(StepScalars), "step scalars"));
    if (world_size_ > 1) {
        join_device_collectives();
        plan_overlap();
    }
    // fp16: torch.cuda.amp.GradScaler's initial scale 2^16; otherwise no scaling.
    reset_step_scalars(precision_ == Precision::Fp16 ? 65536.0f : 1.0f);
    place_train_data();
    window_starts_.assign(static_cast<size_t>(tr.grad_accum), 0);
    window_starts_dev_ = static_cast<int64_t*>(
        backend_->alloc(window_starts_.size() * sizeof(int64_t), "sequential window starts"));
    // Whole-step graphs need every batch drawn on the backend (a host copy per micro-batch
    // cannot be replayed).
    if (run_.accel.cuda_graphs) {
        if (!backend_->supports_graphs())
            step_graph_->disable(cat("the ", backend_->name(), " backend has no graphs"));
        else if (!resident_)
            step_graph_->disable("needs the train split resident: data.placement = \"device\"");
        else if (world_size_ > 1 && !device_sum_)
            step_graph_->disable("data parallel over MPI sums the gradients on the host");
        else
            step_graph_->set_state(GraphRunner::State::Warmup);
    }
    // eval's batches are host-fed, but loaded eagerly before each replay of its forward.
    if (step_graph_->state() == GraphRunner::State::Warmup)
        eval_graph_->set_state(GraphRunner::State::Warmup);

    rows_.resize(static_cast<size_t>(B) * (T + 1));
    inputs_.resize(static_cast<size_t>(B) * T);
    targets_.resize(static_cast<size_t>(B) * T);
    log_startup();
    guard.built = true;
}

Session::~Session() {
    // Buffers the session itself allocated (the model and optimizer free theirs).
    try {
        backend_->synchronize();
    } catch (const Error&) {
        // a lost device: nothing left to wait for; still free what we can
    }
    backend_->free(scalars_);
    backend_->free(window_starts_dev_);
    backend_->free(resident_buffer_);
    backend_->free(resident_starts_);
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

// data.placement: device = the whole train split resident in backend memory, batches drawn
// there; host = drawn on the host and copied per micro-batch. auto = device on CUDA when the
// ids fit 16 bits and the memory is there, host otherwise (always host on the CPU, where
// "resident" would only duplicate the memory-mapped shards).
void Session::place_train_data() {
    // Examples with loss masks are packed into rows on the host (data/example_batches.h).
    if (!train_data_ || train_examples_.set || document_separator_ >= 0) return;
    const Placement asked = run_.data.placement;
    const bool device_memory = backend_->capabilities().device_memory;
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
        backend_->free(resident_buffer_);
        backend_->free(resident_starts_);
        resident_buffer_ = resident_starts_ = nullptr;
        log_.info("data.placement = \"auto\": the train split does not fit on the device (",
                  e.what(), "); streaming batches from the host instead");
    }
}

void Session::upload_train_data() {
    const TokenDataset& data = *train_data_;
    const int64_t T = run_.train.seq_len;
    shard_starts_.assign(1, 0);
    uint64_t windows = 0;
    for (size_t s = 0; s < data.num_shards(); ++s) {
        shard_starts_.push_back(shard_starts_.back() + data.shard_tokens(s));
        windows += static_cast<uint64_t>(std::max<int64_t>(0, data.shard_tokens(s) - T));
    }
    const int64_t total = shard_starts_.back();
    resident_buffer_ = backend_->alloc(static_cast<size_t>(total) * sizeof(uint16_t),
                                       cat("the resident train split (", total, " tokens)").c_str());
    resident_starts_ = backend_->alloc(shard_starts_.size() * sizeof(int64_t), "shard offsets");
    backend_->copy_to_device(resident_starts_, shard_starts_.data(),
                             shard_starts_.size() * sizeof(int64_t));
    // Through a bounded staging buffer: the shards are memory-mapped, never read whole.
    constexpr int64_t kChunk = int64_t{1} << 22;
    std::vector<uint16_t> staging(static_cast<size_t>(std::min<int64_t>(kChunk, total)));
    auto* dst = static_cast<uint16_t*>(resident_buffer_);
    for (size_t s = 0; s < data.num_shards(); ++s) {
        for (int64_t off = 0; off < data.shard_tokens(s); off += kChunk) {
            const int64_t n = std::min<int64_t>(kChunk, data.shard_tokens(s) - off);
            data.copy_tokens_u16(s, off, n, staging.data());
            backend_->copy_to_device(dst + shard_starts_[s] + off, staging.data(),
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

std::string Session::acceleration_line() const {
    const RunConfig& r = run_;
    const BackendCaps caps = backend_->capabilities();
    auto configured = [](const std::string& resolved, const char* asked) {
        return resolved + (resolved == asked ? "" : cat(" (", asked, ")"));
    };
    auto on_off = [](bool b) { return b ? "on" : "off"; };
    // CUDA-only switches on the CPU say n/a; those the CUDA backend does not implement yet
    // say so, rather than pretending.
    // A switch that is on as asked prints "on"; one that is not taken says why.
    auto resolved = [&](bool on, bool asked, const std::string& note) {
        if (on == asked) return std::string(on_off(on));
        return cat(on_off(on), " (", on_off(asked), note.empty() ? "" : "; ", note, ")");
    };
    const AccelStatus acc = backend_->accel_status();
    const std::string attention =
        acc.attention + (acc.attention_note.empty() ? "" : cat(" [", acc.attention_note, "]"));
    // accel.deterministic: the CPU is deterministic whatever it says; on CUDA "off" says what
    // the allowance does (only cuDNN attention engines can be nondeterministic).
    const bool fixed = caps.always_deterministic;
    std::string deterministic =
        resolved(fixed || acc.deterministic, r.accel.deterministic,
                 fixed ? cat(backend_->name(), ": always deterministic") : "");
    if (!fixed && !acc.deterministic && !acc.deterministic_note.empty())
        deterministic += cat(" (", acc.deterministic_note, ")");
    return cat("device=", configured(backend_->name(), to_string(r.runtime.device)),
              " (", backend_->device_name(), ")",
              " precision=", configured(to_string(precision_), to_string(r.runtime.precision)),
              acc.precision_note.empty() ? "" : cat(" [", acc.precision_note, "]"),
              " threads=", backend_->num_threads(),
              " attention=", configured(attention, to_string(r.accel.attention)),
              " deterministic=", deterministic,
              " fused_classifier=",
              resolved(caps.always_fused_classifier || acc.fused_classifier,
                       r.accel.fused_classifier,
                       caps.always_fused_classifier ? cat(backend_->name(), ": always fused") : ""),
              " fused_adamw=", on_off(r.accel.fused_adamw),
              " cuda_graphs=", resolved(step_graph_->state() != GraphRunner::State::Off, r.accel.cuda_graphs,
                                    step_graph_->note()),
              " matmul_epilogues=", resolved(acc.matmul_epilogues, r.accel.matmul_epilogues,
                                             caps.matmul_epilogues
                                                 ? acc.epilogues_note
                                                 : cat(backend_->name(), ": not applicable")),
              " placement=", configured(resident_ ? "device" : "host", to_string(r.data.placement)),
              acc.cpu_matmul.empty()
                  ? std::string()
                  : cat(" cpu_matmul=", acc.cpu_matmul,
                        acc.cpu_matmul_note.empty() ? "" : cat(" [", acc.cpu_matmul_note, "]"),
                        acc.cpu_matmul == to_string(r.accel.cpu_matmul)
                            ? ""
                            : cat(" (", to_string(r.accel.cpu_matmul), ")")),
              " max_inflight=", max_inflight_);
}

std::string Session::model_line() const {
    const RunConfig& r = run_;
    return cat(describe(model_->spec()), ", ", model_->table().num_params(), " parameters, init ",
               r.model.init_from.empty() ? cat("random (seed ", r.model.seed, ")")
                                         : cat("from ", r.model.init_from));
}

void Session::log_startup() const {
    const RunConfig& r = run_;
    const BackendCaps caps = backend_->capabilities();
    const AccelStatus acc = backend_->accel_status();
    log_.info("acceleration: ", acceleration_line());
    if (r.accel.cpu_matmul == CpuMatmul::Onednn && acc.cpu_matmul == "openblas")
        log_.warn("matmuls: accel.cpu_matmul = \"onednn\" was asked for, but matmuls run on "
                  "OpenBLAS: ", acc.cpu_matmul_note);
    // A cuDNN attention asked for and not taken changes speed and memory: say why at WARN, not
    // only inside the bracket above (which INFO-filtered sinks never see).
    if (r.accel.attention == AttentionKind::Cudnn && acc.attention != "cudnn")
        log_.warn("attention: accel.attention = \"cudnn\" was asked for, but attention runs on "
                  "the ", acc.attention, " path: ",
                  !acc.attention_note.empty() ? acc.attention_note
                  : cat("the ", backend_->name(), " backend ",
                        caps.cudnn_attention ? "gave no reason" : "has no cuDNN attention"));
    log_.info("model: ", model_line());
    if (const ParamTable& t = model_->table(); !t.all_trainable()) {
        size_t frozen = 0;
        for (const ParamTensor& p : t.tensors()) frozen += !p.trainable;
        const double share = 100.0 * static_cast<double>(t.num_trainable_params()) /
                             static_cast<double>(t.num_params());
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.2f%%", share);
        log_.info("trainable: ", t.num_trainable_params(), " of ", t.num_params(),
                  " parameters (", pct, "; ",
                  t.has_lora() ? (r.train.trainable.empty() ? "the LoRA adapters"
                                                            : "the LoRA adapters and train.trainable")
                               : "train.trainable",
                  "), ", frozen, " of ", t.tensors().size(),
                  " tensors frozen (no gradients, no AdamW moments)");
    }
    if (world_size_ > 1) {
        const std::vector<size_t>& cut = optimizer_->shard_bounds();
        log_.info("data parallel: ", world_size_, " ranks over ", world_->name(),
                  zero_ ? cat(", ZeRO-1 (rank 0 keeps AdamW state for ", cut[1] - cut[0], " of ",
                              cut.back(), " parameters)")
                        : std::string(", every rank keeps the whole AdamW state (dist.zero = 0)"));
    }
    log_.info("batch: ", r.train.grad_accum, " x ",
              world_size_ > 1 ? cat(world_size_, " ranks x ") : std::string(), r.train.batch_size,
              " x ", r.train.seq_len, " = ", tokens_per_step(),
              " tokens per step; ",
              train_examples_.set ? cat("examples with loss masks, ",
                                        r.data.packing ? "packed" : "padded", " rows")
                                  : cat("sampler ", to_string(r.data.sampler)),
              "; ",
              train_data_ ? cat(train_data_->total_tokens(), " train tokens in ",
                                train_data_->num_shards(), " shard(s)")
                          : std::string(empty_train_split_ ? "an empty train split"
                                                           : "no train data"),
              "; ",
              val_data_ ? cat(val_data_->total_tokens(), " val tokens") : std::string("no val data"));
    log_.info("memory: ", backend_->bytes_in_use(), " bytes in use, ",
              backend_->bytes_reserved(), " reserved on the ", backend_->name(), " backend");
}

// train.batch_size = "auto": the largest micro-batch (up to limits::kMaxAutoBatch) that the
// data holds (the sequential sampler's and the eval's B·T + 1 tokens in one shard) and the
// memory fits (runtime/batch_size.h: by allocation on a backend with its own memory, else by
// the estimate). The session's config records the number, so checkpoints hold it.
void Session::resolve_auto_batch_size(const BackendFactory& factory) {
    const int64_t T = run_.train.seq_len;
    const ModelSpec spec = run_model_spec(run_);
    const DecoderOptions options(run_.train.trainable, run_.train.recompute, run_.model.seed);
    const bool device_memory = backend_->capabilities().device_memory;
    const int64_t limit = run_.runtime.memory_limit;
    // Data parallel: ranks on one machine share its memory (the launcher says how many there
    // are; else assume all of them); each has its own device.
    const int64_t sharing = device_memory || limit > 0 ? 1 : dist::local_world_size(world_size_);
    const int64_t budget = device_memory ? limit : host_memory_budget(limit) / sharing;
    if (!device_memory && budget <= 0)
        fail(Status::Config, "train.batch_size = \"auto\": this machine does not say how much "
             "memory is available; set runtime.memory_limit (bytes) or a number");
    // The resident train split a device run keeps (data.placement), as 16-bit ids.
    const size_t resident = device_memory && train_data_ &&
                                    run_.data.placement != Placement::Host
                                ? static_cast<size_t>(train_data_->total_tokens()) * 2
                                : 0;
    auto data_holds = [&](int64_t b) {  // sequential windows hold every rank's rows
        const bool sequential = run_.data.sampler == SamplerKind::Sequential;
        return (!train_data_ || !sequential || sequential_fits(*train_data_, b * world_size_, T)) &&
               (!val_data_ || run_.train.eval_mode == EvalMode::Whole ||
                sequential_fits(*val_data_, b * world_size_, T));
    };
    auto make = [&]() {
        return (factory ? factory(run_) : select_backend(run_)).backend;
    };
    int64_t estimate = 0;
    auto fits = [&](int64_t b) {
        if (!data_holds(b)) return false;
        if (device_memory) {
            if (limit > 0) {  // the cap, by the estimate, before allocating anything
                const ModelInfo m = model_info(spec, static_cast<int>(b), static_cast<int>(T),
                                               *backend_, nullptr, run_.train.trainable,
                                               run_.train.recompute, run_.optim.state_dtype);
                if (m.bytes_total + static_cast<int64_t>(resident) > limit) return false;
            }
            return fits_by_allocation(make, spec, static_cast<int>(b), static_cast<int>(T),
                                      options, resident + kSessionHeadroomBytes);
        }
        const ModelInfo m = model_info(spec, static_cast<int>(b), static_cast<int>(T),
                                       *backend_, nullptr, run_.train.trainable,
                                       run_.train.recompute, run_.optim.state_dtype);
        if (m.bytes_total > budget) return false;
        estimate = m.bytes_total;
        return true;
    };
    const int64_t hi = std::min<int64_t>(limits::kMaxAutoBatch, limits::kMaxRows / T);
    int64_t B = largest_fitting(hi, fits);
    if (world_size_ > 1) {  // every rank trains the same micro-batch: the smallest answer
        std::vector<int64_t> all(static_cast<size_t>(world_size_));
        world_->all_gather(&B, sizeof B, all.data());
        B = *std::min_element(all.begin(), all.end());
    }
    if (B == 0)
        fail(Status::OutOfMemory, "train.batch_size = \"auto\": not even one row of ", T,
             " tokens fits ", device_memory ? "the device" : "the memory budget",
             device_memory ? "" : cat(" (", budget, " bytes)"),
             data_holds(1) ? "" : " (the data holds no B x T + 1 window)",
             "; lower train.seq_len, train.recompute = \"block\", or a smaller model");
    fits(B);  // the estimate of the answer, for the log (the search's last call may differ)
    run_.train.batch_size = B;
    config_.set("train.batch_size", std::to_string(B));
    log_.info("train.batch_size = \"auto\": ", B, B == hi ? " (the search's upper bound)" : "",
              device_memory ? cat(" rows: the largest micro-batch the ", backend_->name(),
                                  " device allocates", limit > 0 ? cat(" within runtime.memory_limit = ", limit) : "")
                            : cat(" rows: the largest micro-batch whose estimate (", estimate,
                                  " bytes) fits ", limit > 0 ? "runtime.memory_limit = " : "90% of the available memory, ",
                                  budget, " bytes"),
              "; ", run_.train.grad_accum * B * T, " tokens per step");
}

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
        const bool overlap = overlap_ && k + 1 == run_.train.grad_accum;
        if (overlap)
            model_->set_block_done([this](int layer) {
                sum_range(layer_ranges_[static_cast<size_t>(layer)]);
            });
        model_->forward_backward(inputs, targets, B, T, dloss_scale, scalars_,
                                 static_cast<uint32_t>(k), positions);
        if (overlap) model_->set_block_done(nullptr);
        backend_->accumulate_loss(scalars_, model_->losses(), static_cast<size_t>(B) * T);
    }
    update_weights();
}

int64_t Session::tokens_per_step() const {
    return run_.train.grad_accum * world_size_ * run_.train.batch_size * run_.train.seq_len;
}

// Once per step, after the backward of every micro-batch (phase 1 of docs/DISTRIBUTED.md):
// host memory is reduced in place, a device's through a host copy. Never inside a graph: a
// data-parallel run draws on the host, and graphs need the resident split.
StepResult Session::step_on_this_rank(bool stoppable) {
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
    const bool sequential = run_.data.sampler == SamplerKind::Sequential;
    stoppable = stoppable && world_size_ == 1;
    // Where the step started reading, for an abandoned step to put back (the random sampler
    // draws by step and micro-batch number: nothing to put back).
    const SequentialCursor cursor_at_start = cursor_;
    // Eager, outside any graph: the values only the host knows this step.
    backend_->begin_step(scalars_, static_cast<float>(lr), s);
    try {
        if (resident_) {
            if (sequential) {
                for (int64_t k = 0; k < GA; ++k) {  // this rank's rows of a window of every rank's
                    const SequentialWindow w =
                        next_sequential_window(*train_data_, cursor_, world_size_ * B, T);
                    window_starts_[static_cast<size_t>(k)] =
                        shard_starts_[w.shard] + w.pos + rank_ * B * T;
                }
                backend_->upload_step_inputs(window_starts_dev_, window_starts_.data(),
                                             window_starts_.size() * sizeof(int64_t));
            }
            // The whole step draws on the backend, so a graph can record it. Only an eager run
            // (graphs off, or the warm-up before the capture) checks for a stop between its
            // micro-batches: a recording must hold them all, and a replay runs them all at
            // once. An abandoned warm-up throws through the runner, which warms up again.
            const GraphRunner::State graph = step_graph_->state();
            const bool eager =
                graph == GraphRunner::State::Off || graph == GraphRunner::State::Warmup;
            step_graph_->run(
                [&] { accumulate_and_update(dloss, resident_loader(), stoppable && eager); });
        } else {
            accumulate_and_update(
                dloss,
                [&](int64_t k, int32_t* inputs, int32_t* targets) {
                    if (sequential)
                        sample_sequential(*train_data_, cursor_, B, T, rows_.data(), rank_,
                                          world_size_);
                    else
                        sample_random(*train_data_, run_.data.seed, s, k, B, T, rows_.data(),
                                      rank_ * B);
                    load_host_rows(inputs, targets);
                },
                stoppable, document_positions());
        }
    } catch (const StepAbandoned&) {
        cursor_ = cursor_at_start;
        throw;
    }
    return finish_step(s, lr, t0);
}

Session::MicroBatchLoader Session::resident_loader() {
    return [this](int64_t k, int32_t* inputs, int32_t* targets) {
        const int B = model_->max_batch(), T = model_->max_seq();
        if (run_.data.sampler == SamplerKind::Sequential)
            backend_->sample_window(inputs, targets, resident_tokens_, window_starts_dev_ + k, B,
                                    T);
        else
            backend_->sample_random(inputs, targets, resident_tokens_, run_.data.seed, scalars_,
                                    k, B, T, rank_ * B);  // rows numbered across ranks
    };
}

// eval()'s forward at the full micro-batch shape (its batch was loaded eagerly before).
void Session::run_eval_forward() {
    const int B = model_->max_batch(), T = model_->max_seq();
    eval_graph_->run([&] {
        model_->forward(model_->inputs_buffer(), model_->targets_buffer(), B, T,
                        document_positions());
    });
}

const int32_t* Session::document_positions() {
    return document_separator_ >= 0 ? model_->positions_buffer() : nullptr;
}

void Session::load_host_rows(int32_t* inputs, int32_t* targets) {
    load_host_rows(inputs, targets, rows_.data(), model_->max_batch(), model_->max_seq());
}

void Session::load_host_rows(int32_t* inputs, int32_t* targets, const int32_t* rows, int B,
                             int T) {
    if (document_separator_ < 0) {
        backend_->load_rows(inputs, targets, rows, B, T);
        return;
    }
    // rows_ [B, T+1] -> inputs, targets [B, T], and positions restarting at each document's
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
    backend_->load_batch(inputs, targets, model_->positions_buffer(), inputs_.data(),
                         targets_.data(), doc_positions_.data(), B, T);
}

void Session::check_tokens(const int32_t* tokens, size_t n) const {
    const int64_t V = run_.model.vocab_size;
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || tokens[i] >= V)
            fail(Status::InvalidArgument, "token id ", tokens[i], " at index ", i,
                 " is outside [0, model.vocab_size = ", V, ")");
    }
}

StepResult Session::step_tokens(const int32_t* tokens, size_t n_tokens) {
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
    backend_->begin_step(scalars_, static_cast<float>(lr), s);
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

void Session::refuse_empty_train_split() const {
    if (empty_train_split_)
        fail(Status::Config, "data.train: '", run_.data.train, "' holds no tokens (an "
             "evaluation-only folder, e.g. prepared with --val-fraction 1): this session can "
             "eval and sample but not train; point data.train at shards with training data");
}

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
        sample_sequential(*val_data_, cursor, B, T, rows_.data(), rank_, world_size_);
        load_host_rows(model_->inputs_buffer(), model_->targets_buffer());
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

double Session::forward(const int32_t* tokens, int64_t rows, int64_t seq_len, float* logits,
                        size_t logits_cap) {
    if (rows < 1 || rows > run_.train.batch_size)
        fail(Status::InvalidArgument, "forward: rows = ", rows, " must be in [1, ",
             "train.batch_size = ", run_.train.batch_size, "]");
    if (seq_len < 1 || seq_len > run_.train.seq_len)
        fail(Status::InvalidArgument, "forward: seq_len = ", seq_len, " must be in [1, ",
             "train.seq_len = ", run_.train.seq_len, "]");
    const size_t n_logits = static_cast<size_t>(rows * seq_len * run_.model.vocab_size);
    if (logits != nullptr && logits_cap < n_logits)
        fail(Status::InvalidArgument, "forward: logits buffer holds ", logits_cap,
             " floats but rows x seq_len x vocab_size = ", n_logits);
    check_tokens(tokens, static_cast<size_t>(rows * (seq_len + 1)));
    const int B = static_cast<int>(rows), T = static_cast<int>(seq_len);
    load_host_rows(model_->inputs_buffer(), model_->targets_buffer(), tokens, B, T);
    model_->forward(model_->inputs_buffer(), model_->targets_buffer(), B, T,
                    document_positions());
    const double loss = model_->mean_loss(B, T);
    if (logits != nullptr) {
        // The model's logits rows are Vp wide (padded vocab): the first V columns of each.
        const size_t V = static_cast<size_t>(run_.model.vocab_size);
        model_->copy_logits_to_host(logits, 0, static_cast<size_t>(rows * seq_len), V);
    }
    return loss;
}

double Session::model_flops_per_token() const {
    return flops_per_token(static_cast<int64_t>(model_->table().num_params()), run_.model.n_layer,
                           run_.model.d_model, run_.train.seq_len);
}

double Session::peak_flops_per_s() const {
    // Looked up once: the device's name can take a file read (/proc/cpuinfo), and metrics()
    // is called per step by hosts that poll it.
    if (peak_flops_ < 0)
        peak_flops_ = run_.runtime.peak_tflops > 0 ? run_.runtime.peak_tflops * 1e12
                                                   : peak_flops(backend_->device_name(), precision_);
    return peak_flops_;
}

double Session::recent_tokens_per_s() const {
    if (recent_ms_.empty()) return 0.0;
    double total = 0.0;
    for (double ms : recent_ms_) total += ms;
    const double tokens = static_cast<double>(tokens_per_step());
    return total > 0 ? tokens * recent_ms_.size() / (total / 1000.0) : 0.0;
}

TrainOutcome Session::train_on_this_rank(int64_t n_steps, const ProgressCallback& callback) {
    const int64_t total = run_.train.steps;
    // step_ <= limits::kMaxSteps (config and checkpoint bounds), so this cannot overflow;
    // more than kMaxSteps at once (INT64_MAX = "until stopped") counts as kMaxSteps.
    const int64_t target = n_steps > 0 ? step_ + std::min(n_steps, limits::kMaxSteps) : total;
    if (step_ < target) refuse_empty_train_split();  // before the run leaves any trace
    std::unique_ptr<MetricsLog> metrics;
    if (!run_.train.out_dir.empty() && rank_ == 0) {  // rank 0 writes for the whole world
        lock_out_dir();
        metrics = std::make_unique<MetricsLog>(run_.train.out_dir);
    }
    if (metrics && step_ < target && !run_header_written_) {
        // The run header (FORMATS.md §5): what this run is and runs on, for reports. Once per
        // session (and again after a load): a host training in chunks is one run, not resumes.
        metrics->write_run(step_, run_id_, resumed_from_, kVersionString, acceleration_line(),
                           model_line());
        run_header_written_ = true;
        // A fresh session in a folder that already holds history: its lines are a run of
        // their own (trainrt report keeps the earlier ones), which may not be what was meant.
        if (resumed_from_ < 0 && metrics->had_history())
            log_.info("metrics: appending a new run (", run_id_, ") to ", metrics->path(),
                      "; earlier runs are kept; load a checkpoint to continue one");
    }
    const double t_start = now_ms();
    const bool can_eval = val_data_.has_value() && run_.train.eval_every > 0;

    auto progress = [&](int32_t kind, const StepResult& r, double loss) {
        trainrt_progress p{};
        p.struct_size = sizeof p;
        p.version = TRAINRT_PROGRESS_VERSION;
        p.kind = kind;
        p.step = r.step;
        p.steps_total = std::max(total, target);  // `--steps N` may run past train.steps
        p.loss = loss;
        p.lr = r.lr;
        p.grad_norm = r.grad_norm;
        p.tokens_total = r.tokens_total;
        p.ms = r.ms;
        p.tokens_per_s = recent_tokens_per_s();
        p.elapsed_s = (now_ms() - t_start) / 1000.0;
        const double tps = p.tokens_per_s;
        const double tokens_left = static_cast<double>(std::max<int64_t>(0, total - r.step)) *
                                   static_cast<double>(r.tokens);
        p.eta_s = tps > 0 ? tokens_left / tps : 0.0;
        return callback ? callback(p) : true;
    };

    // However train() ends, a stop request made during it was for it: do not let it stop
    // the next one. (A request made while no train() runs is seen by the loop below.)
    struct ClearStopOnExit {
        std::atomic<bool>& flag;
        ~ClearStopOnExit() { flag.store(false); }
    } clear_stop{stop_requested_};

    if (step_ >= target) {
        const int64_t at = std::max(step_, total);
        log_.info("train: already at step ", step_, " of train.steps = ", total,
                  "; nothing to do (to go on: raise train.steps, e.g. --set train.steps=",
                  at + std::max<int64_t>(1, at / 2), ", or run n more steps with "
                  "--steps N / trainrt_session_train(n); to start over: --fresh)");
        return TrainOutcome::Completed;
    }
    warn_resume_differences();
    log_.info("train: steps ", step_ + 1, " to ", target, " of ", std::max(total, target));
    if (target > total)
        log_.warn("train: steps ", std::max(step_, total) + 1, " to ", target, " go past "
                  "train.steps = ", total, ", where the learning-rate schedule ends: they run "
                  "at its final lr (optim.min_lr for a decaying schedule); raise train.steps "
                  "to stretch the schedule instead");
    completed_.clear();
    // Logs the steps whose figures have come back (they lag the enqueued step_ by up to
    // max_inflight - 1 on an asynchronous backend). False if the callback asked to stop.
    auto report_completed = [&] {
        bool go_on = true;
        std::vector<StepResult> done;
        done.swap(completed_);
        for (const StepResult& r : done) {
            if (r.step % run_.runtime.log_every != 0 && r.step != target) continue;
            if (metrics) {
                const double tps = recent_tokens_per_s();
                const double peak = peak_flops_per_s();
                metrics->write_train({r.step, r.loss, r.lr, r.grad_norm, r.tokens,
                                      r.tokens_total, r.ms, tps,
                                      peak > 0 ? mfu(tps, model_flops_per_token(), peak) : -1});
            }
            go_on = progress(TRAINRT_PROGRESS_STEP, r, r.loss) && go_on;
        }
        return go_on;
    };
    // A periodic checkpoint that fails (a full disk, say) does not end the run: the next one
    // tries again, and train() fails only if its last attempt, retried at the end, still does.
    std::optional<Error> failed_checkpoint;
    auto finish = [&](TrainOutcome outcome) {
        // (Only rank 0 writes, so only it can have failed; under ZeRO-1 a save is a collective
        // all ranks join, so they agree on the retry.)
        const bool retry = zero_ ? any_rank(failed_checkpoint.has_value())
                                 : failed_checkpoint.has_value();
        if (retry && !failed_checkpoint) {
            save_into_out_dir();  // this rank's part of rank 0's retry
        } else if (retry) {
            log_.info("train: retrying the failed checkpoint at step ", step_);
            try {
                save_into_out_dir();
            } catch (const Error& e) {
                fail(e.status(), "train: the checkpoint at step ", step_, " failed (", e.what(),
                     "), as did the one before it (", failed_checkpoint->what(),
                     "); the session still holds step ", step_, ": make room and save again");
            }
        }
        return outcome;
    };
    while (step_ < target) {
        // Ranks stop at the same step, or the others would wait at its all-reduce.
        bool stop = stop_requested_.exchange(false);
        if (world_size_ > 1) stop = any_rank(stop);
        if (stop) {
            sync();
            report_completed();
            log_.info("train: stopped on request after step ", step_);
            return finish(TrainOutcome::Stopped);
        }
        try {
            step_on_this_rank(true);
        } catch (const StepAbandoned& a) {
            sync();
            report_completed();
            log_.info("train: stopped on request during step ", step_ + 1, " (before micro-batch ",
                      a.next + 1, " of train.grad_accum = ", run_.train.grad_accum,
                      "); that step was abandoned: the weights, optimizer state and sampler are "
                      "as after step ", step_);
            return finish(TrainOutcome::Stopped);
        } catch (const Error& e) {
            if (e.status() == Status::NonFinite) report_completed();  // the steps up to it
            throw;
        }
        const bool last = step_ == target;
        const bool eval_now = can_eval && (step_ % run_.train.eval_every == 0 || last);
        const bool checkpoint_now =
            run_.train.checkpoint_every > 0 && step_ % run_.train.checkpoint_every == 0;
        // Evals, checkpoints and the end need this step's figures first.
        if (last || eval_now || checkpoint_now) sync();
        bool go_on = report_completed();
        throw_if_diverged();  // a divergence the sync just brought in
        if (eval_now) {
            double val = 0.0;
            try {
                val = run_eval(true);
            } catch (const Error& e) {
                if (e.status() != Status::Cancelled) throw;
                report_completed();
                log_.info("train: stopped on request during the eval after step ", step_);
                return finish(TrainOutcome::Stopped);
            }
            if (metrics) metrics->write_val(step_, val);
            go_on = progress(TRAINRT_PROGRESS_EVAL, last_, val) && go_on;
        }
        if (checkpoint_now) {
            try {
                save_into_out_dir();
                failed_checkpoint.reset();
            } catch (const Error& e) {
                const Status st = e.status();
                if (st != Status::Io && st != Status::OutOfMemory && st != Status::NonFinite)
                    throw;
                log_.error("checkpoint at step ", step_, " failed: ", e.what(),
                           "; training goes on, and the next checkpoint tries again");
                failed_checkpoint = e;
            }
        }
        if (world_size_ > 1) go_on = !any_rank(!go_on);
        if (!go_on) {
            sync();
            report_completed();
            log_.info("train: stopped by the progress callback after step ", step_);
            return finish(TrainOutcome::Stopped);
        }
    }
    return finish(TrainOutcome::Completed);
}

SessionMetrics Session::metrics() const {
    SessionMetrics m;
    m.rank = static_cast<int32_t>(rank_);
    m.world_size = static_cast<int32_t>(world_size_);
    m.step = last_.step;  // completed (step_ counts enqueued ones)
    m.tokens_total = last_.tokens_total;
    m.tokens_per_s = recent_tokens_per_s();
    if (!recent_ms_.empty()) {
        const std::vector<double> ms(recent_ms_.begin(), recent_ms_.end());
        m.step_ms_p50 = percentile(ms, 0.50);
        m.step_ms_p95 = percentile(ms, 0.95);
    }
    m.model_flops_per_token = model_flops_per_token();
    m.peak_flops = peak_flops_per_s();
    m.mfu = mfu(m.tokens_per_s, m.model_flops_per_token, m.peak_flops);
    m.bytes_in_use = static_cast<int64_t>(backend_->bytes_in_use());
    m.bytes_reserved = static_cast<int64_t>(backend_->bytes_reserved());
    m.skipped_steps = skipped_steps_;
    m.loss_scale = loss_scale_;
    // last_.tokens is set only by a completed step (not by load()).
    m.last_loss = last_.tokens > 0 ? last_.loss : std::numeric_limits<double>::quiet_NaN();
    m.last_val_loss = last_val_loss_;
    return m;
}

// ------------------------------------------------------------------ checkpoints

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
    st.cursor_shard = cursor_.shard;
    st.cursor_pos = cursor_.pos;
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
        if (tensor_sha256(*model_->table().find(name), params.data()) != hex) {
            frozen_sha256_.clear();
            break;
        }
    step_ = st.step;
    tokens_total_ = st.tokens_total;
    metadata_ = st.metadata;
    run_header_written_ = false;  // the next train() writes a header at this checkpoint
    // ... continuing its run; a checkpoint of an older writer names none: a run of its own.
    run_id_ = st.run_id.empty() ? new_run_id() : st.run_id;
    resumed_from_ = st.step;
    cursor_.shard = st.cursor_shard;
    cursor_.pos = st.cursor_pos;
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

namespace {

// A dumped integer value ("16"); false for anything else.
bool parse_int64(const std::string& text, int64_t& out) {
    const char* end = text.data() + text.size();
    const auto r = std::from_chars(text.data(), end, out);
    return r.ec == std::errc() && r.ptr == end;
}

}  // namespace

void Session::warn_config_differences(const std::string& checkpoint_toml,
                                      int64_t checkpoint_ranks, const std::string& dir) {
    // The keys that change where the losses go (the key table's affects_losses column); the
    // others (paths, cadences, logging) may legitimately differ on resume.
    const auto theirs = dump_entries(checkpoint_toml);
    std::string diff;
    for (const auto& [key, ours] : config_.loss_entries()) {
        if (key == "train.batch_size") continue;  // per rank: compared below as the global batch
        const auto a = theirs.find(key);
        if (a == theirs.end() || a->second == ours) continue;
        diff += cat(diff.empty() ? "" : ", ", key, " = ", ours, " (checkpoint: ", a->second, ")");
    }
    // N ranks x B rows train as 1 rank x N*B rows (the samplers number rows across ranks),
    // so `mpirun -np 2 ... --set train.batch_size=8` goes on from a one-process B = 16 run.
    const auto a = theirs.find("train.batch_size");
    if (a != theirs.end()) {
        const int64_t ours_b = run_.train.batch_size;
        int64_t theirs_b = 0;
        const bool parsed = parse_int64(a->second, theirs_b);
        if (!parsed || theirs_b * checkpoint_ranks != ours_b * world_size_) {
            const std::string what =
                world_size_ == 1 && checkpoint_ranks == 1
                    ? cat("train.batch_size = ", ours_b, " (checkpoint: ", a->second, ")")
                    : cat("the global batch (train.batch_size x ranks) = ", ours_b, " x ",
                          world_size_, " (checkpoint: ", a->second, " x ", checkpoint_ranks, ")");
            diff += cat(diff.empty() ? "" : ", ", what);
        }
    }
    // Said when training goes on (warn_resume_differences), not here: an eval or a sample of
    // the checkpoint under another thread count or data path is no cause for a warning.
    resume_differences_.clear();
    if (!diff.empty())
        resume_differences_ = cat("training from ", dir, " with a config that differs from the "
                                  "one it was trained with: ", diff,
                                  "; the continued run is not the uninterrupted one");
}

void Session::warn_resume_differences() {
    if (resume_differences_.empty()) return;
    log_.warn(resume_differences_);
    resume_differences_.clear();
}

void Session::export_hf(const std::string& out_dir, ExportDType dtype) {
    // The run's tokenizer goes into the folder too; found before anything is written.
    std::optional<tok::TokenizerFiles> tokenizer;
    if (!run_.data.tokenizer.empty())
        tokenizer = tok::find_tokenizer_files(run_.data.tokenizer, "export (data.tokenizer)");
    const std::vector<float> params = params_for_export("export");
    const ParamTable& table = model_->table();
    if (table.has_lora()) {  // the adapters merged: a plain model of the base's family
        const std::vector<float> merged = merge_lora(table, params.data());
        trt::export_hf(out_dir, ParamTable(base_spec(table.spec())), merged.data(), dtype);
    } else {
        trt::export_hf(out_dir, table, params.data(), dtype);
    }
    if (tokenizer) {
        tok::copy_tokenizer_files(*tokenizer, out_dir, run_.model.context_length);
        chat::write_generation_config(*tokenizer, out_dir);
    }
}

void Session::export_adapter(const std::string& out_dir, ExportDType dtype) {
    if (!model_->table().has_lora())
        fail(Status::InvalidArgument, "export_adapter: the run has no LoRA adapters "
             "(lora.rank = 0); export the model instead");
    const std::vector<float> params = params_for_export("export_adapter");
    write_peft_adapter(model_->table(), params.data(), out_dir, run_.model.init_from,
                       dtype == ExportDType::BF16 ? DType::BF16 : DType::F32);
}

std::vector<float> Session::params_for_export(const char* what) {
    const size_t n = model_->table().total();
    std::vector<float> params(n);
    backend_->synchronize();
    backend_->copy_to_host(params.data(), model_->params(), n * sizeof(float));
    require_finite(model_->table(), params.data(), cat(what, ": the parameters"),
                   "nothing was written; the run has diverged: export a good checkpoint "
                   "instead (trainrt_checkpoint_export)");
    return params;
}

}  // namespace trt
