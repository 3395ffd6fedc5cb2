// Session: construction, in named steps (the world's and the config's checks, the backend,
// the data and its tokenizer, the micro-batch size, the model and its first weights, the
// optimizer, the batch feed, the graphs), the checks on host token ids, forward(), and the
// comparison of a loaded checkpoint's config with the session's. The rest is spread by
// concern over session_*.cpp (docs/ARCHITECTURE.md).
#include "runtime/session.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>

#include "backend/backend_factory.h"
#include "config/size_limits.h"
#include "data/prepare_text.h"
#include "data/tokenizer_agreement.h"
#include "io/sha256.h"
#include "model/finite_check.h"
#include "model/lora.h"
#include "model/model_weights.h"
#include "model/peft_adapter.h"
#include "runtime/batch_size.h"
#include "runtime/model_info.h"
#include "runtime/session_dist.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/tokenizer_identity.h"

namespace trt {
namespace {

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
    check_run_config();
    start_backend(factory);
    open_data();
    const int32_t document_separator = document_attention_separator();
    if (run_.train.batch_size == 0) resolve_auto_batch_size(factory);
    check_data_fits();
    build_model(document_separator);
    build_optimizer();
    // Examples with loss masks are packed into rows on the host (data/example_batches.h).
    feed_ = std::make_unique<BatchFeed>(*backend_, *model_, run_,
                                        train_data_ && !train_examples_.set ? &*train_data_
                                                                            : nullptr,
                                        document_separator, rank_, world_size_, log_);
    plan_graphs();
    const size_t B = static_cast<size_t>(run_.train.batch_size),
                 T = static_cast<size_t>(run_.train.seq_len);
    inputs_.resize(B * T);
    targets_.resize(B * T);
    log_startup();
    guard.built = true;
}

Session::~Session() {
    // Buffers the session itself allocated (the model, optimizer and feed free theirs).
    try {
        backend_->synchronize();
    } catch (const Error&) {
        // a lost device: nothing left to wait for; still free what we can
    }
    backend_->free(scalars_);
}

void Session::check_run_config() {
    const TrainConfig& tr = run_.train;
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
}

// The backend and the precision it resolved, and the step engine over it (read-back ring,
// graph runners).
void Session::start_backend(const BackendFactory& factory) {
    BackendSelection selected = factory ? factory(run_) : select_backend(run_);
    backend_ = std::move(selected.backend);
    if (run_.runtime.profile_ops) {
        auto profiler = std::make_unique<OpProfiler>(std::move(backend_));
        profiler_ = profiler.get();
        backend_ = std::move(profiler);
    }
    precision_ = selected.precision;
    if (!selected.fallback_reason.empty())
        log_.info("runtime.device = \"auto\": no usable CUDA backend, running on the CPU (",
                  selected.fallback_reason, ")");
    max_inflight_ = std::clamp<int64_t>(run_.runtime.max_inflight, 1, OptimizerStep::kScalarSlots);
    readback_ = std::make_unique<ReadbackRing>(*backend_);
    readback_->set_max_inflight(max_inflight_);
    step_graph_ = std::make_unique<GraphRunner>(*backend_, log_, kTrainStepGraph, "train step");
    eval_graph_ = std::make_unique<GraphRunner>(*backend_, log_, kEvalGraph, "eval forward");
}

// data.train and data.val, and data.tokenizer: all must name one tokenizer.
void Session::open_data() {
    const ModelConfig& mc = run_.model;
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
}

int32_t Session::document_attention_separator() {
    if (!run_.data.document_attention || train_examples_.set) return -1;
    if (run_.data.tokenizer.empty())
        fail(Status::Config, "data.document_attention restarts attention at each "
             "document's end-of-text token, which needs data.tokenizer (the tokenizer the "
             "shards were prepared with); byte-level data has no such token");
    if (run_.data.placement == Placement::Device)
        fail(Status::Config, "data.document_attention draws its batches on the host (their "
             "positions are found there); set data.placement = \"host\" or \"auto\"");
    const auto separator = static_cast<int32_t>(document_separator_id(run_.data.tokenizer));
    log_.info("data.document_attention: attention and positions restart at each end-of-text "
              "token (id ", separator, ")");
    return separator;
}

// Sequential windows (and sampled evals) need one shard to hold a whole micro-batch.
void Session::check_data_fits() const {
    const TrainConfig& tr = run_.train;
    // Config bounds (config/size_limits.h): B, T and B * T fit an int.
    const int T = static_cast<int>(tr.seq_len);
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
}

// The model, its first weights in backend memory, and the digests of a frozen base.
void Session::build_model(int32_t document_separator) {
    const TrainConfig& tr = run_.train;
    const ModelConfig& mc = run_.model;
    const int B = static_cast<int>(tr.batch_size), T = static_cast<int>(tr.seq_len);
    ModelSpec spec = run_model_spec(run_);
    // Packed examples carry positions: a backend sizes for attention that can mask them.
    spec.documents = (run_.data.packing && (train_examples_.set || val_examples_.set)) ||
                     document_separator >= 0;
    // (A plan of a QLoRA config needs no file: this is the session's rule, not the config's.)
    if (spec.lora.quantised_base() && mc.init_from.empty())
        fail(Status::Config, "lora.base_dtype = \"", to_string(spec.lora.base_dtype),
             "\": a quantised base is a pretrained model's, quantised as it is read; set "
             "model.init_from to its folder or safetensors file");
    if (spec.lora.quantised_base() &&
        !backend_->supports(OpKind::qmatmul_forward, model_dims(ParamTable(spec), B, T),
                            precision_))
        fail(Status::Config, "lora.base_dtype = \"", to_string(spec.lora.base_dtype), "\": the ",
             backend_->name(), " backend's matmuls on a quantised base ",
             std::string(backend_->name()) == "cuda"
                 ? "have not yet run on a GPU, so they are off unless asked for "
                   "(TRAINRT_CUDA_QUANTISED_BASE=1 in the environment)"
                 : "do not exist",
             "; train on the CPU (runtime.device = \"cpu\") or set lora.base_dtype = \"fp32\"");
    model_ = std::make_unique<Decoder>(*backend_, spec, B, T, decoder_options());
    // A quantised base (lora.base_dtype) takes its tensors one at a time as they are read,
    // with their digests: the same as an fp32 run's of the same file.
    QuantisedBase& quantised = model_->quantised_base();
    std::map<std::string, Sha256> hashing;  // of the quantised tensors, piece by piece
    const std::string source = mc.init_from.empty() ? std::string("the random init")
                                                    : cat("model.init_from '", mc.init_from, "'");
    QuantisedSink sink;
    if (!quantised.empty())
        sink = [&](const ParamTensor& t, const float* values, int64_t row0, int64_t rows) {
            const size_t n = t.numel / static_cast<size_t>(t.shape[0]) * static_cast<size_t>(rows);
            hashing[t.name].update(values, n * sizeof(float));
            quantised.set_rows(t, values, row0, rows, source);
        };
    const std::vector<float> host = initial_weights(sink);
    // The quantised tensors' digests (of the values read: the fp32 file's), for the checkpoints
    // and for the ranks' comparison.
    std::map<std::string, std::string> quantised_sha256;
    for (auto& [name, h] : hashing) quantised_sha256[name] = to_hex(h.finish());
    if (world_size_ > 1) require_same_start_on_every_rank(host.data(), quantised_sha256);
    backend_->copy_to_device(model_->params(), host.data(), host.size() * sizeof(float));
    if (!quantised.empty()) quantised.upload();
    // A frozen base read from model.init_from need not be in checkpoints: its digests stand
    // for it (a fine-tune's checkpoint then holds the adapters, or the tensors that train).
    if (!mc.init_from.empty()) {
        for (const ParamTensor& t : model_->table().tensors())
            if (!t.trainable) frozen_sha256_[t.name] = tensor_sha256(t, host.data());
        frozen_sha256_.insert(quantised_sha256.begin(), quantised_sha256.end());
    }
}

DecoderOptions Session::decoder_options() const {
    DecoderOptions o(run_.train.trainable, run_.train.recompute, run_.model.seed);
    o.head_chunk_rows = static_cast<int>(run_.accel.head_chunk_rows);
    return o;
}

// A random init, or model.init_from's weights (adapters drawn), then lora.init_from's.
std::vector<float> Session::initial_weights(const QuantisedSink& quantised) const {
    const ModelConfig& mc = run_.model;
    std::vector<float> host(model_->table().total());
    if (mc.init_from.empty()) {
        init_random(model_->table(), mc.seed, host.data(), quantised);  // adapters included
    } else {
        load_init_weights(model_->table(), mc.init_from, host.data(), quantised);
        init_lora(model_->table(), mc.seed, host.data());
    }
    if (!run_.lora.init_from.empty()) {
        load_peft_adapter(model_->table(), run_.lora.init_from, host.data());
        require_finite(model_->table(), host.data(), cat("lora.init_from '", run_.lora.init_from, "'"),
                       "the adapter's weights are unusable (a damaged file, or one saved from a "
                       "diverged run); use another adapter or set lora.init_from = \"\"");
    }
    return host;
}

// AdamW (ZeRO-1: this rank's shard), the step scalars, and several ranks' gradient sums.
void Session::build_optimizer() {
    zero_ = world_size_ > 1 && run_.dist.zero == 1;
    optimizer_ = std::make_unique<AdamW>(
        *backend_, model_->table(), run_.optim, precision_ == Precision::Fp16,
        run_.accel.fused_adamw,
        zero_ ? ZeroShard{static_cast<int>(rank_), static_cast<int>(world_size_)} : ZeroShard{});
    scalars_ = static_cast<StepScalars*>(backend_->alloc(sizeof(StepScalars), "step scalars"));
    if (world_size_ > 1)
        grad_sync_ = std::make_unique<GradientSync>(*backend_, *model_, *optimizer_, *world_,
                                                    run_, zero_, log_);
    // fp16: torch.cuda.amp.GradScaler's initial scale 2^16; otherwise no scaling.
    reset_step_scalars(precision_ == Precision::Fp16 ? 65536.0f : 1.0f);
}

// Whole-step graphs need every batch drawn on the backend (a host copy per micro-batch
// cannot be replayed).
void Session::plan_graphs() {
    if (run_.accel.cuda_graphs) {
        if (!backend_->supports_graphs())
            step_graph_->disable(cat("the ", backend_->name(), " backend has no graphs"));
        else if (profiler_)
            step_graph_->disable("runtime.profile_ops times each op eagerly");
        else if (!feed_->resident())
            step_graph_->disable("needs the train split resident: data.placement = \"device\"");
        else if (world_size_ > 1 && !grad_sync_->device_sum())
            step_graph_->disable("data parallel over MPI sums the gradients on the host");
        else
            step_graph_->set_state(GraphRunner::State::Warmup);
    }
    // eval's batches are host-fed, but loaded eagerly before each replay of its forward.
    if (step_graph_->state() == GraphRunner::State::Warmup)
        eval_graph_->set_state(GraphRunner::State::Warmup);
}

// train.batch_size = "auto": the largest micro-batch (up to limits::kMaxAutoBatch) that the
// data holds (the sequential sampler's and the eval's B·T + 1 tokens in one shard) and the
// memory fits (runtime/batch_size.h: by allocation on a backend with its own memory, else by
// the estimate). The session's config records the number, so checkpoints hold it.
void Session::resolve_auto_batch_size(const BackendFactory& factory) {
    const int64_t T = run_.train.seq_len;
    const ModelSpec spec = run_model_spec(run_);
    const DecoderOptions options = decoder_options();
    const HeadChunking head{static_cast<int>(run_.accel.head_chunk_rows), 0};
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
                                               run_.train.recompute, run_.optim.state_dtype, head);
                if (m.bytes_total + static_cast<int64_t>(resident) > limit) return false;
            }
            return fits_by_allocation(make, spec, static_cast<int>(b), static_cast<int>(T),
                                      options, resident + kSessionHeadroomBytes);
        }
        const ModelInfo m =
            model_info(spec, static_cast<int>(b), static_cast<int>(T), *backend_, nullptr,
                       run_.train.trainable, run_.train.recompute, run_.optim.state_dtype, head);
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

void Session::check_tokens(const int32_t* tokens, size_t n) const {
    const int64_t V = run_.model.vocab_size;
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || tokens[i] >= V)
            fail(Status::InvalidArgument, "token id ", tokens[i], " at index ", i,
                 " is outside [0, model.vocab_size = ", V, ")");
    }
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
    feed_->load_host_rows(model_->inputs_buffer(), model_->targets_buffer(), tokens, B, T);
    model_->forward(model_->inputs_buffer(), model_->targets_buffer(), B, T,
                    feed_->document_positions());
    const double loss = model_->mean_loss(B, T);
    if (logits != nullptr) {
        // The model's logits rows are Vp wide (padded vocab): the first V columns of each.
        const size_t V = static_cast<size_t>(run_.model.vocab_size);
        model_->copy_logits_to_host(logits, 0, static_cast<size_t>(rows * seq_len), V);
    }
    return loss;
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

}  // namespace trt
