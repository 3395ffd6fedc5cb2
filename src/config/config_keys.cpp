// The config key table (config_keys.h): the descriptors of every key, and their lookups.
#include "config/config_keys.h"

#include <algorithm>
#include <cstring>

#include "config/size_limits.h"

namespace trt::config_keys {
namespace {

// One builder per type: each sets exactly the accessor(s) of its type, and its bounds.
KeyDesc int_key(const char* s, const char* n, Losses l, int64_t& (*f)(RunConfig&), int64_t lo,
                int64_t hi = kI64Max) {
    KeyDesc d{s, n, KType::Int, l};
    d.i64 = f;
    d.imin = lo;
    d.imax = hi;
    return d;
}
KeyDesc int_or_auto_key(const char* s, const char* n, Losses l, int64_t& (*f)(RunConfig&),
                        int64_t lo, int64_t hi) {
    KeyDesc d = int_key(s, n, l, f, lo, hi);
    d.auto_ok = true;
    return d;
}
KeyDesc seed_key(const char* s, const char* n, Losses l, uint64_t& (*f)(RunConfig&)) {
    KeyDesc d{s, n, KType::Seed, l};
    d.u64 = f;
    return d;
}
KeyDesc float_key(const char* s, const char* n, Losses l, double& (*f)(RunConfig&), double lo,
                  bool lo_excl, double hi = kNoBound, bool hi_excl = false) {
    KeyDesc d{s, n, KType::Float, l};
    d.f64 = f;
    d.fmin = lo;
    d.fmin_excl = lo_excl;
    d.fmax = hi;
    d.fmax_excl = hi_excl;
    return d;
}
KeyDesc bool_key(const char* s, const char* n, Losses l, bool& (*f)(RunConfig&)) {
    KeyDesc d{s, n, KType::Bool, l};
    d.b = f;
    return d;
}
KeyDesc path_key(const char* s, const char* n, Losses l, std::string& (*f)(RunConfig&)) {
    KeyDesc d{s, n, KType::Path, l};
    d.str = f;
    return d;
}
KeyDesc names_key(const char* s, const char* n, Losses l,
                  std::vector<std::string>& (*f)(RunConfig&)) {
    KeyDesc d{s, n, KType::Names, l};
    d.names = f;
    return d;
}
KeyDesc enum_key(const char* s, const char* n, Losses l, int (*g)(const RunConfig&),
                 void (*set)(RunConfig&, int), const char* (*name)(int)) {
    KeyDesc d{s, n, KType::Enum, l};
    d.eget = g;
    d.eset = set;
    d.ename = name;
    return d;
}
KeyDesc betas_key(const char* s, const char* n, Losses l, double& (*f1)(RunConfig&),
                  double& (*f2)(RunConfig&)) {
    KeyDesc d{s, n, KType::Betas, l};
    d.f64 = f1;
    d.f64b = f2;
    d.fmin = 0.0;
    d.fmax = 1.0;
    d.fmax_excl = true;
    return d;
}

}  // namespace

// Each line of the table names its RunConfig field once: section and name are its path.
#define TRT_FIELD(T, sec, nm) [](RunConfig& r) -> T& { return r.sec.nm; }
#define TRT_INT(sec, nm, l, ...) int_key(#sec, #nm, l, TRT_FIELD(int64_t, sec, nm), __VA_ARGS__)
#define TRT_SEED(sec, nm, l) seed_key(#sec, #nm, l, TRT_FIELD(uint64_t, sec, nm))
#define TRT_FLOAT(sec, nm, l, ...) \
    float_key(#sec, #nm, l, TRT_FIELD(double, sec, nm), __VA_ARGS__)
#define TRT_BOOL(sec, nm, l) bool_key(#sec, #nm, l, TRT_FIELD(bool, sec, nm))
#define TRT_PATH(sec, nm, l) path_key(#sec, #nm, l, TRT_FIELD(std::string, sec, nm))
#define TRT_NAMES(sec, nm, l) \
    names_key(#sec, #nm, l, TRT_FIELD(std::vector<std::string>, sec, nm))
#define TRT_ENUM(sec, nm, l, E)                                                       \
    enum_key(                                                                         \
        #sec, #nm, l, [](const RunConfig& r) { return static_cast<int>(r.sec.nm); },  \
        [](RunConfig& r, int v) { r.sec.nm = static_cast<E>(v); },                    \
        [](int v) { return to_string(static_cast<E>(v)); })

// The order here is the order of dump() and of docs/CONFIG.md. Third column: affects_losses
// (Losses, config_keys.h). train.batch_size is per rank: Session compares it as the global batch.
const std::vector<KeyDesc>& keys() {
    static const std::vector<KeyDesc> table = {
        TRT_ENUM(model, arch, kLoss, ModelArch),
        TRT_INT(model, vocab_size, kLoss, 1, limits::kMaxVocab),
        TRT_INT(model, context_length, kLoss, 1, limits::kMaxContext),
        TRT_INT(model, n_layer, kLoss, 1, limits::kMaxLayers),
        TRT_INT(model, n_head, kLoss, 1, limits::kMaxHeads),
        TRT_INT(model, n_kv_head, kLoss, 0, limits::kMaxHeads),  // + divides n_head (cross-key)
        TRT_INT(model, d_model, kLoss, 1, limits::kMaxWidth),  // + divisible by n_head (cross-key)
        // + NH * head_dim bounded (cross-key)
        TRT_INT(model, head_dim, kLoss, 0, limits::kMaxWidth),
        TRT_INT(model, d_ff, kLoss, 0, limits::kMaxMlpWidth),
        TRT_FLOAT(model, rope_theta, kLoss, 0.0, true, limits::kMaxFloat),
        TRT_ENUM(model, rope_scaling, kLoss, RopeScaling),  // + its keys below (cross-key)
        TRT_FLOAT(model, rope_scaling_factor, kLoss, 0.0, true, limits::kMaxFloat),
        TRT_FLOAT(model, rope_low_freq_factor, kLoss, 0.0, true, limits::kMaxFloat),
        TRT_FLOAT(model, rope_high_freq_factor, kLoss, 0.0, true, limits::kMaxFloat),
        TRT_INT(model, rope_original_context, kLoss, 0, limits::kMaxContext),
        // + mistral only (cross-key)
        TRT_INT(model, sliding_window, kLoss, 0, limits::kMaxContext),
        TRT_FLOAT(model, norm_eps, kLoss, 0.0, true, 1.0),
        TRT_BOOL(model, tie_embeddings, kLoss),
        TRT_PATH(model, init_from, kNoLoss),
        TRT_SEED(model, seed, kLoss),
        TRT_FLOAT(model, dropout, kLoss, 0.0, false, 1.0, true),

        TRT_INT(lora, rank, kLoss, 0, limits::kMaxLoraRank),  // + <= the targeted layers' widths
        TRT_FLOAT(lora, alpha, kLoss, 0.0, true, limits::kMaxFloat),
        TRT_NAMES(lora, target_modules, kLoss),
        TRT_PATH(lora, init_from, kNoLoss),
        TRT_FLOAT(lora, dropout, kLoss, 0.0, false, 1.0, true),
        TRT_ENUM(lora, base_dtype, kLoss, BaseDType),
        TRT_BOOL(lora, double_quant, kLoss),

        TRT_PATH(data, train, kNoLoss),
        TRT_PATH(data, val, kNoLoss),
        TRT_PATH(data, tokenizer, kNoLoss),
        TRT_BOOL(data, tokenizer_check, kNoLoss),
        TRT_ENUM(data, sampler, kLoss, SamplerKind),
        TRT_SEED(data, seed, kLoss),
        TRT_ENUM(data, placement, kNoLoss, Placement),
        TRT_BOOL(data, packing, kLoss),
        TRT_BOOL(data, document_attention, kLoss),

        // + "auto": the session picks the largest that fits (runtime/batch_size.h)
        int_or_auto_key("train", "batch_size", kLoss, TRT_FIELD(int64_t, train, batch_size),
                        1, limits::kMaxBatch),
        // + <= model.context_length (cross-key)
        TRT_INT(train, seq_len, kLoss, 1, limits::kMaxContext),
        TRT_INT(train, grad_accum, kLoss, 1, limits::kMaxGradAccum),
        TRT_INT(train, steps, kLoss, 1, limits::kMaxSteps),
        TRT_INT(train, eval_every, kNoLoss, 0, limits::kMaxSteps),
        TRT_INT(train, eval_batches, kNoLoss, 1, limits::kMaxSteps),
        TRT_ENUM(train, eval_mode, kNoLoss, EvalMode),
        TRT_INT(train, checkpoint_every, kNoLoss, 0, limits::kMaxSteps),
        TRT_INT(train, keep_last, kNoLoss, 0, limits::kMaxKeepLast),
        TRT_INT(train, max_skipped_steps, kNoLoss, 0, limits::kMaxSteps),
        TRT_PATH(train, out_dir, kNoLoss),
        TRT_NAMES(train, trainable, kLoss),
        TRT_ENUM(train, recompute, kNoLoss, Recompute),

        TRT_FLOAT(optim, lr, kLoss, 0.0, true, limits::kMaxFloat),
        betas_key("optim", "betas", kLoss, TRT_FIELD(double, optim, beta1),
                  TRT_FIELD(double, optim, beta2)),
        TRT_FLOAT(optim, eps, kLoss, 0.0, true, limits::kMaxFloat),
        TRT_FLOAT(optim, weight_decay, kLoss, 0.0, false, limits::kMaxFloat),
        TRT_FLOAT(optim, grad_clip, kLoss, 0.0, false, limits::kMaxFloat),
        TRT_ENUM(optim, schedule, kLoss, Schedule),
        TRT_INT(optim, warmup_steps, kLoss, 0, limits::kMaxSteps),
        // + <= optim.lr (cross-key)
        TRT_FLOAT(optim, min_lr, kLoss, 0.0, false, limits::kMaxFloat),
        TRT_ENUM(optim, state_dtype, kLoss, StateDType),

        TRT_ENUM(runtime, device, kLoss, DeviceKind),
        TRT_ENUM(runtime, precision, kLoss, Precision),
        TRT_INT(runtime, threads, kLoss, 0, limits::kMaxThreads),
        TRT_INT(runtime, log_every, kNoLoss, 1, limits::kMaxSteps),
        TRT_INT(runtime, max_inflight, kNoLoss, 1, limits::kMaxInflight),
        TRT_FLOAT(runtime, peak_tflops, kNoLoss, 0.0, false, limits::kMaxFloat),
        TRT_FLOAT(runtime, peak_gbs, kNoLoss, 0.0, false, limits::kMaxFloat),
        TRT_INT(runtime, memory_limit, kNoLoss, 0, limits::kMaxMemoryLimit),
        TRT_BOOL(runtime, profile_ops, kNoLoss),

        TRT_BOOL(accel, fused_adamw, kNoLoss),
        TRT_BOOL(accel, cuda_graphs, kNoLoss),
        TRT_ENUM(accel, attention, kNoLoss, AttentionKind),
        TRT_BOOL(accel, fused_classifier, kNoLoss),
        TRT_BOOL(accel, matmul_epilogues, kNoLoss),
        TRT_BOOL(accel, lowp_activations, kLoss),
        TRT_BOOL(accel, deterministic, kNoLoss),
        TRT_ENUM(accel, cpu_matmul, kNoLoss, CpuMatmul),
        TRT_INT(accel, head_chunk_rows, kNoLoss, 0, limits::kMaxRows),

        TRT_ENUM(dist, backend, kNoLoss, DistBackend),
        TRT_INT(dist, timeout, kNoLoss, 1, limits::kMaxDistTimeout),
        TRT_INT(dist, zero, kNoLoss, 0, 1),
        TRT_ENUM(dist, wire_dtype, kLoss, WireDType),
        TRT_BOOL(dist, overlap, kNoLoss),
    };
    return table;
}

#undef TRT_FIELD
#undef TRT_INT
#undef TRT_SEED
#undef TRT_FLOAT
#undef TRT_BOOL
#undef TRT_PATH
#undef TRT_ENUM
#undef TRT_NAMES

const std::vector<std::string>& sections() {
    static const std::vector<std::string> list = [] {
        std::vector<std::string> out;
        for (const KeyDesc& d : keys())
            if (std::find(out.begin(), out.end(), d.section) == out.end())
                out.emplace_back(d.section);
        return out;
    }();
    return list;
}

const KeyDesc* find_key(std::string_view section, std::string_view name) {
    for (const KeyDesc& d : keys())
        if (section == d.section && name == d.name) return &d;
    return nullptr;
}

const KeyDesc* find_key(std::string_view dotted) {
    const size_t dot = dotted.find('.');
    if (dot == std::string_view::npos) return nullptr;
    return find_key(dotted.substr(0, dot), dotted.substr(dot + 1));
}

std::vector<std::string> enum_names(const KeyDesc& d) {
    std::vector<std::string> out;
    for (int i = 0; i < 64; ++i) {
        const char* n = d.ename(i);
        if (std::strcmp(n, "?") == 0) break;
        out.emplace_back(n);
    }
    return out;
}

std::vector<std::string> all_paths() {
    std::vector<std::string> out;
    for (const KeyDesc& d : keys()) out.push_back(d.path());
    return out;
}

}  // namespace trt::config_keys
