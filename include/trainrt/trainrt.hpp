// libtrainrt — header-only C++17 wrapper over the C API (trainrt.h).
//
//   trainrt::Config c = trainrt::Config::from_file("run.toml");
//   c.set("optim.lr", "3e-4");
//   trainrt::Session s(c);
//   for (int i = 0; i < 10; ++i) std::printf("%g\n", s.step().loss);
//
// Rules:
//   - Config and Session own their C handle (RAII), are move-only, and a moved-from object is
//     inert: destroying it is a no-op and calling a method on it throws trainrt::Error with
//     TRAINRT_ERR_INVALID_ARGUMENT (the C library reports the NULL handle).
//   - Every failure throws trainrt::Error: status() is the trainrt_status, message() (and
//     what()) the library's trainrt_last_error_message() text, captured right after the call.
//   - No exception ever crosses into C: callbacks (progress, log) run in trampolines that catch
//     everything. An exception from the progress callback stops train() and is rethrown once
//     train() has returned; one from a log callback is rethrown after the C call that logged
//     returns (only the first one per call is kept).
//   - Thread rules are the C library's: a Session may move between threads but must not be
//     used by two at once; request_stop() is the one method safe from another thread.
#ifndef TRAINRT_TRAINRT_HPP
#define TRAINRT_TRAINRT_HPP

#include <trainrt/trainrt.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainrt {

// ---------------------------------------------------------------- errors

class Error : public std::runtime_error {
public:
    Error(trainrt_status status, const std::string& message)
        : std::runtime_error(message.empty() ? std::string(trainrt_status_string(status))
                                             : message),
          status_(status),
          message_(message) {}
    // The TRAINRT_ERR_* code.
    trainrt_status status() const noexcept { return status_; }
    // The library's message (trainrt_last_error_message() of the failed call).
    const std::string& message() const noexcept { return message_; }
    // Static English text of the status ("invalid argument", ...).
    const char* status_string() const noexcept { return trainrt_status_string(status_); }

private:
    trainrt_status status_;
    std::string message_;
};

// ---------------------------------------------------------------- plain types

using StepResult = trainrt_step_result;
using Metrics = trainrt_metrics;
using EvalResult = trainrt_eval_result;
using Progress = trainrt_progress;
using ModelInfo = trainrt_model_info;

enum class LogLevel : int32_t {
    Debug = TRAINRT_LOG_DEBUG,
    Info = TRAINRT_LOG_INFO,
    Warn = TRAINRT_LOG_WARN,
    Error = TRAINRT_LOG_ERROR,
};

enum class Dtype : int32_t { F32 = TRAINRT_DTYPE_F32, BF16 = TRAINRT_DTYPE_BF16 };

// One log line: level and text (valid only during the call).
using LogFn = std::function<void(LogLevel, std::string_view)>;
// Called at each logged step and eval of train(): return true to go on, false to stop.
using ProgressFn = std::function<bool(const Progress&)>;

struct SampleOptions {
    double temperature = 1.0;  // > 0 scales the logits; 0 = greedy
    int32_t top_k = 0;         // 0 = all tokens
    uint64_t seed = 1337;
    // Session::generate ends after one of these (ChatTemplate::stop_ids); sample refuses them.
    std::vector<int32_t> stop_ids;

    // Points into stop_ids: valid while this object lives unchanged. Filled field by field
    // from the header's own INIT (not trainrt_sample_options_init, which writes the running
    // library's size: docs/ABI.md).
    trainrt_sample_options to_c() const {
        trainrt_sample_options o = TRAINRT_SAMPLE_OPTIONS_INIT;
        o.temperature = temperature;
        o.top_k = top_k;
        o.seed = seed;
        o.stop_ids = stop_ids.empty() ? nullptr : stop_ids.data();
        o.n_stop_ids = stop_ids.size();
        return o;
    }
};

namespace detail {

// Throws Error for a negative status; returns the status otherwise (OK or STOPPED).
inline trainrt_status check(trainrt_status status) {
    if (status < 0) throw Error(status, trainrt_last_error_message());
    return status;
}

// s as a C string. A NUL inside would end it there, so the library would act on a prefix of
// what was given (a path "x\0y" naming the file "x"): refused as an invalid argument.
inline const char* cstr(const std::string& s) {
    if (const size_t at = s.find('\0'); at != std::string::npos)
        throw Error(TRAINRT_ERR_INVALID_ARGUMENT,
                    "a string argument holds a NUL character at byte " + std::to_string(at) +
                        " (C strings end there, so the library would see only what comes "
                        "before it)");
    return s.c_str();
}

// Reads a (buf, cap, needed) string: size query, then fill (again if it grew meanwhile).
template <class F>
std::string read_string(F&& call) {
    size_t needed = 0;
    check(call(nullptr, 0, &needed));
    for (;;) {
        std::vector<char> buf(needed + 1, '\0');
        size_t again = 0;
        check(call(buf.data(), buf.size(), &again));
        if (again <= needed) return std::string(buf.data(), again);
        needed = again;
    }
}

// An exception caught in a callback trampoline, kept until the C call returns.
class Pending {
public:
    void store(std::exception_ptr e) noexcept {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::move(e);
    }
    void rethrow() {
        std::exception_ptr e;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            e = std::move(error_);
            error_ = nullptr;
        }
        if (e) std::rethrow_exception(e);
    }

private:
    std::mutex mutex_;
    std::exception_ptr error_;
};

// A log sink: the std::function plus the place its exceptions wait.
struct LogHolder {
    explicit LogHolder(LogFn f) : fn(std::move(f)) {}
    LogFn fn;
    Pending pending;
};

// A holder for fn, or none for an empty fn (the C side then gets NULL).
inline std::shared_ptr<LogHolder> make_log_holder(LogFn fn) {
    if (!fn) return nullptr;
    return std::make_shared<LogHolder>(std::move(fn));
}

extern "C" inline void trainrtpp_log_trampoline(int32_t level, const char* message, void* payload) {
    auto* holder = static_cast<LogHolder*>(payload);
    try {
        holder->fn(static_cast<LogLevel>(level), std::string_view(message ? message : ""));
    } catch (...) {
        holder->pending.store(std::current_exception());
    }
}

struct ProgressHolder {
    ProgressFn fn;
    std::exception_ptr error;
};

extern "C" inline int32_t trainrtpp_progress_trampoline(const trainrt_progress* progress, void* payload) {
    auto* holder = static_cast<ProgressHolder*>(payload);
    try {
        return holder->fn(*progress) ? 0 : 1;
    } catch (...) {
        holder->error = std::current_exception();
        return 1;  // stop train(); rethrown once it returned
    }
}

// The process-default sink set by set_default_log (kept alive for the process).
inline std::shared_ptr<LogHolder>& default_log() {
    static std::shared_ptr<LogHolder> holder;
    return holder;
}
inline std::mutex& default_log_mutex() {
    static std::mutex m;
    return m;
}

struct ConfigDeleter {
    void operator()(trainrt_config* c) const noexcept { trainrt_config_destroy(c); }
};
struct SessionDeleter {
    void operator()(trainrt_session* s) const noexcept { trainrt_session_destroy(s); }
};
struct TokenizerDeleter {
    void operator()(trainrt_tokenizer* t) const noexcept { trainrt_tokenizer_destroy(t); }
};
struct ChatTemplateDeleter {
    void operator()(trainrt_chat_template* t) const noexcept { trainrt_chat_template_destroy(t); }
};

}  // namespace detail

// ---------------------------------------------------------------- library

// "MAJOR.MINOR.PATCH" of the library loaded.
inline std::string version() { return trainrt_version_string(); }
inline uint32_t abi_version() { return trainrt_abi_version(); }
// TRAINRT_FEATURE_* bits of the library loaded.
inline uint64_t features() { return trainrt_build_features(); }
inline bool has_feature(uint64_t bit) { return (trainrt_build_features() & bit) == bit; }
inline std::string status_string(trainrt_status status) { return trainrt_status_string(status); }

// Process-wide default log sink (for sessions with none of their own). An empty fn selects
// the built-in stderr sink. The sink stays alive until replaced.
inline void set_default_log(LogFn fn, LogLevel min_level = LogLevel::Warn) {
    std::shared_ptr<detail::LogHolder> holder = detail::make_log_holder(std::move(fn));
    std::lock_guard<std::mutex> lock(detail::default_log_mutex());
    detail::check(trainrt_log_set_default(holder ? detail::trainrtpp_log_trampoline : nullptr,
                                          holder.get(), static_cast<int32_t>(min_level)));
    // The previous holder is dropped only now that the library no longer points at it
    // (a line logged concurrently on another thread could still race; set it up front).
    detail::default_log() = std::move(holder);
}

// The checkpoint directory out_dir/latest names; "" when there is none yet.
inline std::string checkpoint_latest(const std::string& out_dir) {
    return detail::read_string([&](char* b, size_t cap, size_t* n) {
        return trainrt_checkpoint_latest(b, cap, n, detail::cstr(out_dir));
    });
}

// Hugging Face export of a checkpoint, without a session.
inline void checkpoint_export(const std::string& path, const std::string& out_dir,
                              Dtype dtype = Dtype::F32) {
    detail::check(
        trainrt_checkpoint_export(detail::cstr(path), detail::cstr(out_dir),
                                  static_cast<int32_t>(dtype)));
}

// A LoRA checkpoint's adapters as a Hugging Face PEFT folder, without a session.
inline void checkpoint_export_adapter(const std::string& path, const std::string& out_dir,
                                      Dtype dtype = Dtype::F32) {
    detail::check(trainrt_checkpoint_export_adapter(detail::cstr(path), detail::cstr(out_dir),
                                                    static_cast<int32_t>(dtype)));
}

struct PreparedTokens {
    int64_t train = 0;
    int64_t val = 0;
};
// Byte-level tokenization of a text file into out_dir/train.bin and val.bin.
inline PreparedTokens prepare_bytes(const std::string& text_path, const std::string& out_dir,
                                    double val_fraction) {
    PreparedTokens t;
    detail::check(
        trainrt_prepare_bytes(&t.train, &t.val, detail::cstr(text_path), detail::cstr(out_dir),
                              val_fraction));
    return t;
}

// ---------------------------------------------------------------- Tokenizer

// A Hugging Face tokenizer.json (byte-level BPE: GPT-2, Llama 3 style). Immutable: one
// Tokenizer may encode and decode on many threads at once (its methods are const).
class Tokenizer {
public:
    // path: a tokenizer.json, or a model folder holding one.
    static Tokenizer load(const std::string& path) {
        trainrt_tokenizer* t = nullptr;
        detail::check(trainrt_tokenizer_load(&t, detail::cstr(path)));
        return Tokenizer(t);
    }
    // No special token added; an added token's text becomes its id.
    std::vector<int32_t> encode(const std::string& text) const {
        size_t needed = 0;
        detail::check(trainrt_tokenizer_encode(nullptr, 0, &needed, handle_.get(), text.data(),
                                               text.size()));
        std::vector<int32_t> ids(needed);
        detail::check(trainrt_tokenizer_encode(ids.data(), ids.size(), &needed, handle_.get(),
                                               text.data(), text.size()));
        return ids;
    }
    // The bytes of ids (may hold NUL, or end inside a UTF-8 sequence).
    std::string decode(const std::vector<int32_t>& ids) const {
        return detail::read_string([&](char* b, size_t cap, size_t* n) {
            return trainrt_tokenizer_decode(b, cap, n, handle_.get(), ids.data(), ids.size());
        });
    }
    int32_t vocab_size() const {
        int32_t v = 0;
        detail::check(trainrt_tokenizer_vocab_size(&v, handle_.get()));
        return v;
    }
    // The id of a token's text, or -1.
    int32_t token_id(const std::string& token) const {
        int32_t id = -1;
        detail::check(trainrt_tokenizer_token_id(&id, handle_.get(), detail::cstr(token)));
        return id;
    }
    const trainrt_tokenizer* handle() const { return handle_.get(); }

private:
    explicit Tokenizer(trainrt_tokenizer* t) : handle_(t) {}
    std::unique_ptr<trainrt_tokenizer, detail::TokenizerDeleter> handle_;
};

// ---------------------------------------------------------------- ChatTemplate

// A model folder's chat template, rendered as transformers' apply_chat_template renders it
// (docs/CHAT_TEMPLATES.md). Immutable: one ChatTemplate may render on many threads at once.
class ChatTemplate {
public:
    // name: one of the folder's named templates; "" = "default" (or the only one).
    static ChatTemplate load(const std::string& folder, const std::string& name = "") {
        trainrt_chat_template* t = nullptr;
        detail::check(trainrt_chat_template_load(&t, detail::cstr(folder),
                                                 name.empty() ? nullptr : detail::cstr(name)));
        return ChatTemplate(t);
    }
    // conversation_json: {"messages": [...], "tools": [...]?} or a list of messages;
    // vars_json: a JSON object of more template variables, "" = none.
    std::string render(const std::string& conversation_json, bool add_generation_prompt = false,
                       const std::string& vars_json = "") const {
        const char* conv = detail::cstr(conversation_json);
        const char* vars = vars_json.empty() ? nullptr : detail::cstr(vars_json);
        return detail::read_string([&](char* b, size_t cap, size_t* n) {
            return trainrt_chat_template_render(b, cap, n, handle_.get(), conv,
                                                add_generation_prompt ? 1 : 0, vars);
        });
    }
    // The ids a reply ends with (for SampleOptions::stop_ids); tokenizer: the folder's.
    std::vector<int32_t> stop_ids(const Tokenizer& tokenizer) const {
        size_t needed = 0;
        detail::check(trainrt_chat_template_stop_ids(nullptr, 0, &needed, handle_.get(),
                                                      tokenizer.handle()));
        std::vector<int32_t> ids(needed);
        detail::check(trainrt_chat_template_stop_ids(ids.data(), ids.size(), &needed,
                                                      handle_.get(), tokenizer.handle()));
        ids.resize(std::min(needed, ids.size()));
        return ids;
    }
    const trainrt_chat_template* handle() const { return handle_.get(); }

private:
    explicit ChatTemplate(trainrt_chat_template* t) : handle_(t) {}
    std::unique_ptr<trainrt_chat_template, detail::ChatTemplateDeleter> handle_;
};

// Which tokens of a chat example are targets (PrepareTextOptions::loss_mask).
enum class LossMask : int32_t {
    Default = TRAINRT_LOSS_MASK_DEFAULT,      // assistant for "messages", else completion
    Assistant = TRAINRT_LOSS_MASK_ASSISTANT,  // every assistant turn
    Completion = TRAINRT_LOSS_MASK_COMPLETION,
    All = TRAINRT_LOSS_MASK_ALL,              // every token but the first
};

struct PrepareTextOptions {
    std::string tokenizer;     // a tokenizer.json or .model, or a model folder (required)
    std::string jsonl_field;   // "": the inputs are text; else JSON lines and this field
    double val_fraction = 0.1;
    int32_t threads = 0;       // 0: all cores
    int64_t shard_tokens = 0;  // 0: train.bin/val.bin; N: train_000000.bin... of <= N tokens
    // Chat data (tokenizer: a model folder with a chat template): each line a conversation;
    // mask_train.bin / mask_val.bin beside the tokens. jsonl_field and shard_tokens unset.
    bool chat = false;
    LossMask loss_mask = LossMask::Default;
    std::string chat_template;  // "": the folder's "default"
    std::string template_vars;  // a JSON object of more template variables; "": none
};
// Tokenizes text files (or JSON lines) into out_dir/train.bin and val.bin, or numbered shards
// (trainrt_prepare_text: every document opened by the end-of-text token).
inline trainrt_prepare_result prepare_text(const std::vector<std::string>& inputs,
                                           const std::string& out_dir,
                                           const PrepareTextOptions& options) {
    std::vector<const char*> paths;
    for (const std::string& p : inputs) paths.push_back(detail::cstr(p));
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = detail::cstr(options.tokenizer);
    o.jsonl_field = options.jsonl_field.empty() ? nullptr : detail::cstr(options.jsonl_field);
    o.val_fraction = options.val_fraction;
    o.threads = options.threads;
    o.shard_tokens = options.shard_tokens;
    o.chat = options.chat ? 1 : 0;
    o.loss_mask = static_cast<int32_t>(options.loss_mask);
    o.chat_template = options.chat_template.empty() ? nullptr : detail::cstr(options.chat_template);
    o.template_vars = options.template_vars.empty() ? nullptr : detail::cstr(options.template_vars);
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    detail::check(trainrt_prepare_text(&r, paths.data(), paths.size(), detail::cstr(out_dir), &o));
    return r;
}

struct TrainTokenizerOptions {
    int32_t vocab_size = 0;     // required: >= 256 + the special tokens
    int64_t min_frequency = 2;
    std::vector<std::string> special_tokens{"<|endoftext|>"};  // ids 0..; may be empty
    bool overwrite = false;     // replace an existing out_path
};
// Trains a byte-level BPE tokenizer on text files and writes out_path as a Hugging Face
// tokenizer.json (trainrt_tokenizer_train).
inline trainrt_tokenizer_train_result train_tokenizer(const std::vector<std::string>& inputs,
                                                      const std::string& out_path,
                                                      const TrainTokenizerOptions& options) {
    std::vector<const char*> paths, specials;
    for (const std::string& p : inputs) paths.push_back(detail::cstr(p));
    for (const std::string& s : options.special_tokens) specials.push_back(detail::cstr(s));
    static const char* const kNone[1] = {nullptr};
    trainrt_tokenizer_train_options o = TRAINRT_TOKENIZER_TRAIN_OPTIONS_INIT;
    o.vocab_size = options.vocab_size;
    o.min_frequency = options.min_frequency;
    o.overwrite = options.overwrite ? 1 : 0;
    o.special_tokens = specials.empty() ? kNone : specials.data();  // non-NULL: exactly these
    o.n_special_tokens = specials.size();
    trainrt_tokenizer_train_result r = TRAINRT_TOKENIZER_TRAIN_RESULT_INIT;
    detail::check(
        trainrt_tokenizer_train(&r, paths.data(), paths.size(), detail::cstr(out_path), &o));
    return r;
}

// ---------------------------------------------------------------- Config

class Session;

class Config {
public:
    // All defaults.
    Config() {
        trainrt_config* c = nullptr;
        detail::check(trainrt_config_create(&c));
        handle_.reset(c);
    }
    // Takes ownership of a C handle (may be NULL: an inert Config).
    explicit Config(trainrt_config* adopt) noexcept : handle_(adopt) {}

    Config(Config&&) noexcept = default;
    Config& operator=(Config&&) noexcept = default;
    Config(const Config&) = delete;
    Config& operator=(const Config&) = delete;
    ~Config() = default;

    // Relative paths inside the file resolve against its folder.
    static Config from_file(const std::string& path) {
        trainrt_config* c = nullptr;
        detail::check(trainrt_config_from_file(&c, detail::cstr(path)));
        return Config(c);
    }
    // base_dir ("" = current directory) anchors relative paths.
    static Config from_string(const std::string& toml, const std::string& base_dir = "") {
        trainrt_config* c = nullptr;
        detail::check(trainrt_config_from_string(
            &c, detail::cstr(toml), base_dir.empty() ? nullptr : detail::cstr(base_dir)));
        return Config(c);
    }
    // The run config a checkpoint was trained with.
    static Config from_checkpoint(const std::string& path) {
        trainrt_config* c = nullptr;
        detail::check(trainrt_config_from_checkpoint(&c, detail::cstr(path)));
        return Config(c);
    }

    // Sets one key from a TOML value: set("optim.lr", "0.001"), set("data.train", "\"x.bin\"").
    Config& set(const std::string& key, const std::string& toml_value) {
        detail::check(
            trainrt_config_set(handle_.get(), detail::cstr(key), detail::cstr(toml_value)));
        return *this;
    }
    int64_t get_int(const std::string& key) const {
        int64_t v = 0;
        detail::check(trainrt_config_get_int(&v, handle_.get(), detail::cstr(key)));
        return v;
    }
    double get_double(const std::string& key) const {
        double v = 0;
        detail::check(trainrt_config_get_double(&v, handle_.get(), detail::cstr(key)));
        return v;
    }
    bool get_bool(const std::string& key) const {
        int32_t v = 0;
        detail::check(trainrt_config_get_bool(&v, handle_.get(), detail::cstr(key)));
        return v != 0;
    }
    // A string key's value, or any other key as its TOML text.
    std::string get_string(const std::string& key) const {
        return detail::read_string([&](char* b, size_t cap, size_t* n) {
            return trainrt_config_get_string(b, cap, n, handle_.get(), detail::cstr(key));
        });
    }
    // The whole resolved config as TOML.
    std::string dump() const {
        return detail::read_string([&](char* b, size_t cap, size_t* n) {
            return trainrt_config_dump(b, cap, n, handle_.get());
        });
    }
    // Log sink for sessions created from this config (empty fn: the process default).
    Config& set_log(LogFn fn, LogLevel min_level = LogLevel::Info) {
        std::shared_ptr<detail::LogHolder> holder = detail::make_log_holder(std::move(fn));
        detail::check(trainrt_config_set_log(handle_.get(),
                                             holder ? detail::trainrtpp_log_trampoline : nullptr,
                                             holder.get(), static_cast<int32_t>(min_level)));
        log_ = std::move(holder);
        return *this;
    }
    ModelInfo model_info() const {
        ModelInfo info;
        info.struct_size = sizeof(ModelInfo);
        info.version = TRAINRT_MODEL_INFO_VERSION;
        detail::check(trainrt_config_model_info(&info, handle_.get()));
        return info;
    }

    trainrt_config* get() const noexcept { return handle_.get(); }
    // Gives up ownership; the Config becomes inert.
    trainrt_config* release() noexcept {
        log_.reset();
        return handle_.release();
    }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    friend class Session;
    std::unique_ptr<trainrt_config, detail::ConfigDeleter> handle_;
    std::shared_ptr<detail::LogHolder> log_;  // kept alive by every session created from it
};

inline Config config_from_checkpoint(const std::string& path) {
    return Config::from_checkpoint(path);
}
inline ModelInfo model_info(const Config& config) { return config.model_info(); }

// ---------------------------------------------------------------- Session

class Session {
public:
    // Builds model, optimizer, data and backend from a copy of config.
    explicit Session(const Config& config)
        : config_log_(config.log_), vocab_size_(config.get_int("model.vocab_size")) {
        trainrt_session* s = nullptr;
        trainrt_status st = trainrt_session_create(&s, config.get());
        std::unique_ptr<trainrt_session, detail::SessionDeleter> owned(s);
        call([&] { return st; });  // rethrows a log exception, or the create error
        handle_ = std::move(owned);
    }
    // A session from a TOML file.
    static Session from_file(const std::string& path) { return Session(Config::from_file(path)); }

    Session(Session&&) noexcept = default;
    // Destroys the current session before taking the other's (declaration order: handle_ first).
    Session& operator=(Session&&) noexcept = default;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    // The C session goes first: it may still log into the sinks held below.
    ~Session() { handle_.reset(); }

    // One optimizer step on batches from the session's sampler.
    StepResult step() {
        StepResult r = new_result();
        call([&] { return trainrt_session_step(&r, handle_.get()); });
        return r;
    }
    // One step on host tokens: grad_accum * batch_size * (seq_len + 1) ids.
    StepResult step_tokens(const int32_t* tokens, size_t n_tokens) {
        StepResult r = new_result();
        call([&] { return trainrt_session_step_tokens(&r, handle_.get(), tokens, n_tokens); });
        return r;
    }
    StepResult step_tokens(const std::vector<int32_t>& tokens) {
        return step_tokens(tokens.data(), tokens.size());
    }
    // step_tokens training on the targets loss_mask marks only (trainrt_session_step_masked):
    // loss_mask and positions hold n_mask = grad_accum * batch_size * seq_len values, or are
    // null. The loss is the mean over the step's counted targets.
    StepResult step_masked(const int32_t* tokens, size_t n_tokens, const uint8_t* loss_mask,
                           const int32_t* positions, size_t n_mask) {
        StepResult r = new_result();
        call([&] {
            return trainrt_session_step_masked(&r, handle_.get(), tokens, n_tokens, loss_mask,
                                               positions, n_mask);
        });
        return r;
    }
    // An empty loss_mask: every target counts; empty positions: 0 .. seq_len - 1 in every row.
    StepResult step_masked(const std::vector<int32_t>& tokens,
                           const std::vector<uint8_t>& loss_mask,
                           const std::vector<int32_t>& positions = {}) {
        const bool mask = !loss_mask.empty(), pos = !positions.empty();
        if (mask && pos && positions.size() != loss_mask.size())
            throw Error(TRAINRT_ERR_INVALID_ARGUMENT,
                        "step_masked: loss_mask holds " + std::to_string(loss_mask.size()) +
                            " values but positions " + std::to_string(positions.size()) +
                            "; both hold grad_accum * batch_size * seq_len");
        return step_masked(tokens.data(), tokens.size(), mask ? loss_mask.data() : nullptr,
                           pos ? positions.data() : nullptr,
                           mask ? loss_mask.size() : positions.size());
    }
    // Waits for queued work; the figures of the last step.
    StepResult sync() {
        StepResult r = new_result();
        call([&] { return trainrt_session_sync(&r, handle_.get()); });
        return r;
    }
    // Mean val loss over train.eval_batches windows (train.eval_mode = "whole": eval_whole's).
    double eval() {
        double loss = 0;
        call([&] { return trainrt_session_eval(&loss, handle_.get()); });
        return loss;
    }
    // Every token of data.val but the first scored once (disjoint windows of train.seq_len):
    // mean loss, perplexity, targets scored.
    EvalResult eval_whole() {
        EvalResult r = TRAINRT_EVAL_RESULT_INIT;
        call([&] { return trainrt_session_eval_whole(&r, handle_.get()); });
        return r;
    }
    // The same over host ids taken as one stream (at least 2).
    EvalResult eval_tokens(const int32_t* tokens, size_t n_tokens) {
        EvalResult r = TRAINRT_EVAL_RESULT_INIT;
        call([&] { return trainrt_session_eval_tokens(&r, handle_.get(), tokens, n_tokens); });
        return r;
    }
    EvalResult eval_tokens(const std::vector<int32_t>& tokens) {
        return eval_tokens(tokens.data(), tokens.size());
    }
    // The same over raw text, tokenized in memory as prepare lays out one text file: with
    // tokenizer (a path; "" = byte-level) its end-of-text token, then the text's ids.
    EvalResult eval_text(const std::string& text, const std::string& tokenizer = "") {
        EvalResult r = TRAINRT_EVAL_RESULT_INIT;
        call([&] {
            return trainrt_session_eval_text(&r, handle_.get(), text.data(), text.size(),
                                             tokenizer.empty() ? nullptr : detail::cstr(tokenizer));
        });
        return r;
    }
    // Mean loss of the current model on rows of (seq_len + 1) ids; no update. logits (may be
    // NULL) receives rows * seq_len * vocab_size floats, logits_cap its size in floats.
    double forward(const int32_t* tokens, int64_t rows, int64_t seq_len, float* logits = nullptr,
                   size_t logits_cap = 0) {
        double loss = 0;
        call([&] {
            return trainrt_session_forward(&loss, logits, logits_cap, handle_.get(), tokens, rows,
                                           seq_len);
        });
        return loss;
    }
    double forward(const std::vector<int32_t>& tokens, int64_t rows, int64_t seq_len) {
        return forward(tokens.data(), rows, seq_len);
    }
    // The same, also resizing *logits to rows * seq_len * vocab_size and filling it.
    double forward(const std::vector<int32_t>& tokens, int64_t rows, int64_t seq_len,
                   std::vector<float>& logits) {
        const int64_t vocab = vocab_size_;
        const int64_t n = rows > 0 && seq_len > 0 ? rows * seq_len * vocab : 0;
        std::vector<float> out(static_cast<size_t>(n));
        const double loss = forward(tokens.data(), rows, seq_len, out.data(), out.size());
        logits = std::move(out);
        return loss;
    }
    // The training loop: n_steps more steps (<= 0: until train.steps). progress (may be empty)
    // is called at each logged step and eval; returning false stops. Returns true when the
    // loop completed, false when it was stopped (request_stop or the callback). An exception
    // thrown by progress stops the loop and is rethrown here after the C call returned.
    bool train(int64_t n_steps = 0, ProgressFn progress = {}) {
        detail::ProgressHolder holder{std::move(progress), nullptr};
        const bool has = static_cast<bool>(holder.fn);
        const trainrt_status st = call_then([&] {
            return trainrt_session_train(handle_.get(), n_steps,
                                         has ? detail::trainrtpp_progress_trampoline : nullptr,
                                         has ? &holder : nullptr);
        }, [&] {
            if (holder.error) std::rethrow_exception(holder.error);
        });
        return st != TRAINRT_STOPPED;
    }
    // Asks a running train() to stop after its current step. Safe from any thread.
    void request_stop() { detail::check(trainrt_session_request_stop(handle_.get())); }
    Metrics metrics() {
        Metrics m;
        trainrt_metrics_init(&m);
        call([&] { return trainrt_session_metrics(&m, handle_.get()); });
        return m;
    }
    // The resolved config the session runs with, as TOML.
    std::string config_dump() {
        std::string out;
        try {
            out = detail::read_string([&](char* b, size_t cap, size_t* n) {
                return trainrt_session_config_dump(b, cap, n, handle_.get());
            });
        } catch (const Error&) {
            rethrow_logs();
            throw;
        }
        rethrow_logs();
        return out;
    }
    // Writes a checkpoint: dir "" = into train.out_dir as step_<N>/ (updating latest),
    // otherwise exactly dir (which must not exist). Returns the directory written.
    std::string save(const std::string& dir = "") {
        std::vector<char> buf(1 << 16, '\0');
        size_t needed = 0;
        call([&] {
            return trainrt_session_save(buf.data(), buf.size(), &needed, handle_.get(),
                                        dir.empty() ? nullptr : detail::cstr(dir));
        });
        return std::string(buf.data(), needed < buf.size() ? needed : buf.size() - 1);
    }
    // Restores the state from a checkpoint directory or a folder with a `latest` file.
    void load(const std::string& path) {
        call([&] { return trainrt_session_load(handle_.get(), detail::cstr(path)); });
    }
    // Hugging Face GPT-2 export into out_dir (named export_hf: `export` is a C++ keyword).
    void export_hf(const std::string& out_dir, Dtype dtype = Dtype::F32) {
        call([&] {
            return trainrt_session_export(handle_.get(), detail::cstr(out_dir),
                                          static_cast<int32_t>(dtype));
        });
    }
    // A LoRA run's adapters as a PEFT folder (export_hf of such a run writes the merged model).
    void export_adapter(const std::string& out_dir, Dtype dtype = Dtype::F32) {
        call([&] {
            return trainrt_session_export_adapter(handle_.get(), detail::cstr(out_dir),
                                                  static_cast<int32_t>(dtype));
        });
    }
    // n_new tokens continuing prompt.
    std::vector<int32_t> sample(const std::vector<int32_t>& prompt, size_t n_new,
                                const SampleOptions& options = {}) {
        std::vector<int32_t> out(n_new);
        const trainrt_sample_options o = options.to_c();
        call([&] {
            return trainrt_session_sample(out.data(), out.size(), handle_.get(), prompt.data(),
                                          prompt.size(), n_new, &o);
        });
        return out;
    }
    // Up to max_new tokens continuing prompt, ending after one of options.stop_ids (the last
    // id returned) when one comes.
    std::vector<int32_t> generate(const std::vector<int32_t>& prompt, size_t max_new,
                                  const SampleOptions& options = {}) {
        std::vector<int32_t> out(max_new);
        const trainrt_sample_options o = options.to_c();
        size_t n = 0;
        call([&] {
            return trainrt_session_generate(&n, out.data(), out.size(), handle_.get(),
                                            prompt.data(), prompt.size(), max_new, &o);
        });
        out.resize(n);
        return out;
    }
    // The model's tensors (table order; flat offsets into read_params()'s buffer).
    struct ParamInfo {
        std::string name;
        trainrt_param_info info;  // role, ndim, shape, numel, offset, layer, trainable
    };
    std::vector<ParamInfo> params() {
        int64_t count = 0;
        call([&] { return trainrt_session_param_count(&count, nullptr, handle_.get()); });
        std::vector<ParamInfo> out(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) {
            ParamInfo& p = out[static_cast<size_t>(i)];
            trainrt_param_info_init(&p.info);
            p.name = string_call([&](char* b, size_t cap, size_t* n) {
                return trainrt_session_param_info(&p.info, b, cap, n, handle_.get(), i);
            });
        }
        return out;
    }
    // A tensor as fp32 (name "": every tensor back to back, the flat buffer).
    std::vector<float> read_params(const std::string& name = "") {
        int64_t n = 0;
        if (name.empty()) {
            call([&] { return trainrt_session_param_count(nullptr, &n, handle_.get()); });
        } else {
            for (const ParamInfo& p : params())
                if (p.name == name) n = p.info.numel;
        }
        // An unknown name reaches the library with a 1-float buffer: its error names the
        // closest tensor.
        std::vector<float> out(static_cast<size_t>(n > 0 ? n : 1));
        call([&] {
            return trainrt_session_read_params(out.data(), out.size(), handle_.get(),
                                               name.empty() ? nullptr : detail::cstr(name));
        });
        return out;
    }
    // Replaces a tensor (name "": the flat buffer); working copies follow, moments are kept.
    void write_params(const std::vector<float>& values, const std::string& name = "") {
        call([&] {
            return trainrt_session_write_params(handle_.get(),
                                                name.empty() ? nullptr : detail::cstr(name),
                                                values.data(), values.size());
        });
    }
    // User metadata, saved in checkpoints and restored by load().
    void set_metadata(const std::string& key, const std::string& value) {
        call([&] {
            return trainrt_session_set_metadata(handle_.get(), detail::cstr(key),
                                                detail::cstr(value));
        });
    }
    void erase_metadata(const std::string& key) {
        call([&] {
            return trainrt_session_set_metadata(handle_.get(), detail::cstr(key), nullptr);
        });
    }
    // The value of key, or "" with *found = false when there is none.
    std::string metadata(const std::string& key, bool* found = nullptr) {
        int32_t f = 0;
        std::string v = string_call([&](char* b, size_t cap, size_t* n) {
            return trainrt_session_get_metadata(b, cap, n, &f, handle_.get(), detail::cstr(key));
        });
        if (found) *found = f != 0;
        return v;
    }
    std::vector<std::string> metadata_keys() {
        int64_t count = 0;
        call([&] { return trainrt_session_metadata_count(&count, handle_.get()); });
        std::vector<std::string> keys;
        for (int64_t i = 0; i < count; ++i)
            keys.push_back(string_call([&](char* b, size_t cap, size_t* n) {
                return trainrt_session_metadata_key(b, cap, n, handle_.get(), i);
            }));
        return keys;
    }
    // Log sink for this session (empty fn: back to the config's / the process default).
    void set_log(LogFn fn, LogLevel min_level = LogLevel::Info) {
        std::shared_ptr<detail::LogHolder> holder = detail::make_log_holder(std::move(fn));
        call([&] {
            return trainrt_session_set_log(handle_.get(),
                                           holder ? detail::trainrtpp_log_trampoline : nullptr,
                                           holder.get(), static_cast<int32_t>(min_level));
        });
        log_ = std::move(holder);  // the previous sink is no longer referenced by the library
    }

    trainrt_session* get() const noexcept { return handle_.get(); }
    explicit operator bool() const noexcept { return handle_ != nullptr; }

private:
    static StepResult new_result() {
        StepResult r;
        trainrt_step_result_init(&r);
        return r;
    }
    void rethrow_logs() {
        if (log_) log_->pending.rethrow();
        if (config_log_) config_log_->pending.rethrow();
        std::shared_ptr<detail::LogHolder> def;
        {
            std::lock_guard<std::mutex> lock(detail::default_log_mutex());
            def = detail::default_log();
        }
        if (def) def->pending.rethrow();
    }
    template <class F>
    trainrt_status call(F&& f) {
        return call_then(std::forward<F>(f), [] {});
    }
    // A (buf, cap, needed) call through detail::read_string, with the log sinks' exceptions.
    template <class F>
    std::string string_call(F&& f) {
        std::string out;
        try {
            out = detail::read_string(std::forward<F>(f));
        } catch (const Error&) {
            rethrow_logs();
            throw;
        }
        rethrow_logs();
        return out;
    }
    // Runs the C call, then `after` (a callback rethrow), then the log sinks' exceptions,
    // then the call's own error.
    template <class F, class G>
    trainrt_status call_then(F&& f, G&& after) {
        const trainrt_status st = f();
        const std::string msg =
            st < 0 ? std::string(trainrt_last_error_message()) : std::string();
        after();
        rethrow_logs();
        if (st < 0) throw Error(st, msg);
        return st;
    }

    // handle_ first: a move assignment destroys the old C session while its sinks still live.
    std::unique_ptr<trainrt_session, detail::SessionDeleter> handle_;
    std::shared_ptr<detail::LogHolder> log_;
    std::shared_ptr<detail::LogHolder> config_log_;
    int64_t vocab_size_ = 0;
};

inline Session session_from_file(const std::string& path) { return Session::from_file(path); }

}  // namespace trainrt

#endif  // TRAINRT_TRAINRT_HPP
