#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "model/gpt_weights.h"
#include "runtime/metrics_log.h"
#include "runtime/schedule.h"

namespace trt {
namespace {

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// The CPU is the only backend this build has; refuse what it cannot honour.
std::unique_ptr<Backend> make_backend(const RunConfig& run) {
    if (run.runtime.device == DeviceKind::Cuda)
        fail(Status::Unsupported,
             "runtime.device = \"cuda\": this build of libtrainrt has no CUDA backend "
             "(libtrainrt-cuda); use runtime.device = \"cpu\" or \"auto\"");
    if (run.runtime.precision != Precision::Auto && run.runtime.precision != Precision::Fp32)
        fail(Status::Unsupported, "runtime.precision = \"", to_string(run.runtime.precision),
             "\": the CPU backend computes in fp32 only; set runtime.precision = \"fp32\" or "
             "\"auto\" (", to_string(run.runtime.precision), " needs runtime.device = \"cuda\")");
    return make_cpu_backend(static_cast<int>(run.runtime.threads));
}

TokenDataset open_split(const std::string& pattern, const char* key, int64_t vocab) {
    try {
        return TokenDataset::open(pattern, vocab);
    } catch (const Error& e) {
        throw Error(e.status(), cat(key, ": ", e.what()));
    }
}

}  // namespace

Session::Session(const Config& config, const LogSink& sink)
    : config_(config), run_(config.run()), log_(sink),
      last_val_loss_(std::numeric_limits<double>::quiet_NaN()) {
    const TrainConfig& tr = run_.train;
    const ModelConfig& mc = run_.model;
    if (tr.checkpoint_every > 0)
        fail(Status::Unsupported, "train.checkpoint_every = ", tr.checkpoint_every,
             ": checkpoints are not implemented in this version of libtrainrt; set it to 0");
    backend_ = make_backend(run_);

    const int B = static_cast<int>(tr.batch_size), T = static_cast<int>(tr.seq_len);
    if (!run_.data.train.empty()) {
        train_data_ = open_split(run_.data.train, "data.train", mc.vocab_size);
        const bool fits = run_.data.sampler == SamplerKind::Sequential
                              ? sequential_fits(*train_data_, B, T)
                              : sequential_fits(*train_data_, 1, T);
        if (!fits)
            fail(Status::Config, "data.train: no shard of '", run_.data.train, "' holds ",
                 run_.data.sampler == SamplerKind::Sequential ? tr.batch_size * tr.seq_len + 1
                                                              : tr.seq_len + 1,
                 " tokens, which one micro-batch needs; lower train.batch_size or "
                 "train.seq_len, or use more data");
    }
    if (!run_.data.val.empty()) {
        val_data_ = open_split(run_.data.val, "data.val", mc.vocab_size);
        if (!sequential_fits(*val_data_, B, T))
            fail(Status::Config, "data.val: no shard of '", run_.data.val, "' holds ",
                 tr.batch_size * tr.seq_len + 1,
                 " tokens, which one eval batch needs; lower train.batch_size or "
                 "train.seq_len, or use more validation data");
    }

    GptShape shape;
    shape.V = static_cast<int>(mc.vocab_size);
    shape.maxT = static_cast<int>(mc.context_length);
    shape.L = static_cast<int>(mc.n_layer);
    shape.NH = static_cast<int>(mc.n_head);
    shape.C = static_cast<int>(mc.d_model);
    model_ = std::make_unique<Gpt>(*backend_, shape, B, T);
    std::vector<float> host(model_->table().total());
    if (mc.init_from.empty())
        init_gpt2_random(model_->table(), mc.seed, host.data());
    else
        load_hf_gpt2(model_->table(), mc.init_from, host.data());
    backend_->copy_to_device(model_->params(), host.data(), host.size() * sizeof(float));
    optimizer_ = std::make_unique<AdamW>(*backend_, model_->table(), run_.optim);

    rows_.resize(static_cast<size_t>(B) * (T + 1));
    inputs_.resize(static_cast<size_t>(B) * T);
    targets_.resize(static_cast<size_t>(B) * T);
    log_startup();
}

Session::~Session() = default;

void Session::log_startup() const {
    const RunConfig& r = run_;
    const size_t n_params = model_->table().total();
    auto configured = [](const char* resolved, const char* asked) {
        return std::string(resolved) + (std::string(resolved) == asked ? "" : cat(" (", asked, ")"));
    };
    auto cuda_only = [](bool asked) { return cat("n/a (cpu; ", asked ? "on" : "off", ")"); };
    // First line: every switch, resolved (configured value in parentheses where it differs);
    // the CUDA-only ones say n/a rather than pretending.
    log_.info("acceleration: device=", configured("cpu", to_string(r.runtime.device)),
              " precision=", configured("fp32", to_string(r.runtime.precision)),
              " threads=", backend_->num_threads(),
              " attention=", configured("matmul", to_string(r.accel.attention)),
              " fused_classifier=on (cpu: always)",
              " fused_adamw=", cuda_only(r.accel.fused_adamw),
              " cuda_graphs=", cuda_only(r.accel.cuda_graphs),
              " matmul_epilogues=", cuda_only(r.accel.matmul_epilogues),
              " placement=", configured("host", to_string(r.data.placement)));
    log_.info("model: GPT-2 L", r.model.n_layer, " H", r.model.n_head, " C", r.model.d_model,
              " V", r.model.vocab_size, " T_max", r.model.context_length, ", ", n_params,
              " parameters, init ",
              r.model.init_from.empty() ? cat("random (seed ", r.model.seed, ")")
                                        : cat("from ", r.model.init_from));
    log_.info("batch: ", r.train.grad_accum, " x ", r.train.batch_size, " x ", r.train.seq_len,
              " = ", r.train.grad_accum * r.train.batch_size * r.train.seq_len,
              " tokens per step; sampler ", to_string(r.data.sampler), "; ",
              train_data_ ? cat(train_data_->total_tokens(), " train tokens in ",
                                train_data_->num_shards(), " shard(s)")
                          : std::string("no train data"),
              "; ",
              val_data_ ? cat(val_data_->total_tokens(), " val tokens") : std::string("no val data"));
    log_.info("memory: ", backend_->bytes_in_use(), " bytes on the backend");
}

void Session::load_rows(const int32_t* rows, int B, int T) {
    for (int b = 0; b < B; ++b) {
        const int32_t* row = rows + static_cast<size_t>(b) * (T + 1);
        std::copy(row, row + T, inputs_.data() + static_cast<size_t>(b) * T);
        std::copy(row + 1, row + T + 1, targets_.data() + static_cast<size_t>(b) * T);
    }
    const size_t bytes = static_cast<size_t>(B) * T * sizeof(int32_t);
    backend_->copy_to_device(model_->inputs_buffer(), inputs_.data(), bytes);
    backend_->copy_to_device(model_->targets_buffer(), targets_.data(), bytes);
}

double Session::micro_step(const int32_t* rows, float dloss_scale) {
    const int B = model_->max_batch(), T = model_->max_seq();
    load_rows(rows, B, T);
    model_->forward_backward(model_->inputs_buffer(), model_->targets_buffer(), B, T,
                             dloss_scale);
    return model_->mean_loss(B, T);
}

StepResult Session::step() {
    if (!train_data_)
        fail(Status::Config, "data.train is not set: step() draws batches from it "
             "(set data.train, or pass tokens with step_tokens)");
    const double t0 = now_ms();
    const int64_t GA = run_.train.grad_accum, B = run_.train.batch_size, T = run_.train.seq_len;
    const float dloss = 1.0f / static_cast<float>(B * T * GA);
    model_->zero_grads();
    double loss_sum = 0.0;
    for (int64_t k = 0; k < GA; ++k) {
        if (run_.data.sampler == SamplerKind::Sequential)
            sample_sequential(*train_data_, cursor_, B, T, rows_.data());
        else
            sample_random(*train_data_, run_.data.seed, step_ + 1, k, B, T, rows_.data());
        loss_sum += micro_step(rows_.data(), dloss);
    }
    return finish_step(loss_sum / static_cast<double>(GA), t0);
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
    const int64_t GA = run_.train.grad_accum, B = run_.train.batch_size, T = run_.train.seq_len;
    const size_t expected = static_cast<size_t>(GA * B * (T + 1));
    if (n_tokens != expected)
        fail(Status::InvalidArgument, "step_tokens: got ", n_tokens, " tokens, expected ",
             "train.grad_accum x batch_size x (seq_len + 1) = ", GA, " x ", B, " x ", T + 1,
             " = ", expected);
    check_tokens(tokens, n_tokens);
    const double t0 = now_ms();
    const float dloss = 1.0f / static_cast<float>(B * T * GA);
    model_->zero_grads();
    double loss_sum = 0.0;
    for (int64_t k = 0; k < GA; ++k)
        loss_sum += micro_step(tokens + static_cast<size_t>(k * B * (T + 1)), dloss);
    return finish_step(loss_sum / static_cast<double>(GA), t0);
}

StepResult Session::finish_step(double loss, double t0_ms) {
    const int64_t s = step_ + 1;
    const double lr = scheduled_lr(run_.optim, run_.train.steps, s);
    const AdamW::StepFigures f = optimizer_->update(model_->params(), model_->grads(), lr, s);
    step_ = s;
    const int64_t tokens = run_.train.grad_accum * run_.train.batch_size * run_.train.seq_len;
    tokens_total_ += tokens;
    StepResult r;
    r.step = s;
    r.loss = loss;
    r.lr = lr;
    r.grad_norm = f.grad_norm;
    r.tokens = tokens;
    r.tokens_total = tokens_total_;
    r.ms = now_ms() - t0_ms;
    recent_ms_.push_back(r.ms);
    if (recent_ms_.size() > 100) recent_ms_.pop_front();
    last_ = r;
    return r;
}

double Session::eval() {
    if (!val_data_)
        fail(Status::Config, "data.val is not set: eval() reads its batches from it");
    const int B = model_->max_batch(), T = model_->max_seq();
    SequentialCursor cursor;  // every eval reads the same windows
    double sum = 0.0;
    for (int64_t i = 0; i < run_.train.eval_batches; ++i) {
        sample_sequential(*val_data_, cursor, B, T, rows_.data());
        load_rows(rows_.data(), B, T);
        model_->forward(model_->inputs_buffer(), model_->targets_buffer(), B, T);
        sum += model_->mean_loss(B, T);
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
    load_rows(tokens, B, T);
    model_->forward(model_->inputs_buffer(), model_->targets_buffer(), B, T);
    const double loss = model_->mean_loss(B, T);
    if (logits != nullptr)
        backend_->copy_to_host(logits, model_->logits(), n_logits * sizeof(float));
    return loss;
}

double Session::recent_tokens_per_s() const {
    if (recent_ms_.empty()) return 0.0;
    double total = 0.0;
    for (double ms : recent_ms_) total += ms;
    const double tokens = static_cast<double>(run_.train.grad_accum * run_.train.batch_size *
                                              run_.train.seq_len);
    return total > 0 ? tokens * recent_ms_.size() / (total / 1000.0) : 0.0;
}

TrainOutcome Session::train(int64_t n_steps, const ProgressCallback& callback) {
    const int64_t total = run_.train.steps;
    const int64_t target = n_steps > 0 ? step_ + n_steps : total;
    std::unique_ptr<MetricsLog> metrics;
    if (!run_.train.out_dir.empty()) metrics = std::make_unique<MetricsLog>(run_.train.out_dir);
    const double t_start = now_ms();
    const bool can_eval = val_data_.has_value() && run_.train.eval_every > 0;

    auto progress = [&](int32_t kind, double loss) {
        trainrt_progress p{};
        p.struct_size = sizeof p;
        p.version = TRAINRT_PROGRESS_VERSION;
        p.kind = kind;
        p.step = step_;
        p.steps_total = total;
        p.loss = loss;
        p.lr = last_.lr;
        p.grad_norm = last_.grad_norm;
        p.tokens_total = tokens_total_;
        p.ms = last_.ms;
        p.tokens_per_s = recent_tokens_per_s();
        p.elapsed_s = (now_ms() - t_start) / 1000.0;
        const double tps = p.tokens_per_s;
        const double tokens_left = static_cast<double>(std::max<int64_t>(0, total - step_)) *
                                   static_cast<double>(last_.tokens);
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
        log_.info("train: already at step ", step_, " of ", target, "; nothing to do");
        return TrainOutcome::Completed;
    }
    log_.info("train: steps ", step_ + 1, " to ", target, " of ", total);
    while (step_ < target) {
        if (stop_requested_.exchange(false)) {
            log_.info("train: stopped on request after step ", step_);
            return TrainOutcome::Stopped;
        }
        const StepResult r = step();
        bool go_on = true;
        const bool last = step_ == target;
        if (r.step % run_.runtime.log_every == 0 || last) {
            if (metrics)
                metrics->write_train({r.step, r.loss, r.lr, r.grad_norm, r.tokens,
                                      r.tokens_total, r.ms, recent_tokens_per_s()});
            go_on = progress(TRAINRT_PROGRESS_STEP, r.loss);
        }
        if (can_eval && (r.step % run_.train.eval_every == 0 || last)) {
            const double val = eval();
            if (metrics) metrics->write_val(r.step, val);
            go_on = progress(TRAINRT_PROGRESS_EVAL, val) && go_on;
        }
        if (!go_on) {
            log_.info("train: stopped by the progress callback after step ", step_);
            return TrainOutcome::Stopped;
        }
    }
    return TrainOutcome::Completed;
}

SessionMetrics Session::metrics() const {
    SessionMetrics m;
    m.step = step_;
    m.tokens_total = tokens_total_;
    m.tokens_per_s = recent_tokens_per_s();
    if (!recent_ms_.empty()) {
        std::vector<double> sorted(recent_ms_.begin(), recent_ms_.end());
        std::sort(sorted.begin(), sorted.end());
        auto pct = [&](double q) {
            const size_t i = static_cast<size_t>(std::ceil(q * sorted.size())) - 1;
            return sorted[std::min(i, sorted.size() - 1)];
        };
        m.step_ms_p50 = pct(0.50);
        m.step_ms_p95 = pct(0.95);
    }
    m.bytes_in_use = static_cast<int64_t>(backend_->bytes_in_use());
    m.last_loss = step_ > 0 ? last_.loss : std::numeric_limits<double>::quiet_NaN();
    m.last_val_loss = last_val_loss_;
    return m;
}

}  // namespace trt
