// Writing and reading one checkpoint directory (docs/FORMATS.md §4).
#include "checkpoint/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "checkpoint/checkpoint_internal.h"
#include "checkpoint/checkpoint_metadata.h"
#include "config/size_limits.h"
#include "core/error.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "io/sha256.h"

namespace trt {

namespace ckpt {

namespace {

constexpr size_t kMaxStateBytes = 64 << 20;   // the resolved config is a few KiB
constexpr size_t kMaxConfigBytes = 1 << 20;


// Shortest text that parses back to exactly d (std::to_chars is round-trip exact and, unlike
// printf, ignores the locale); always with a '.' or exponent so it reads back as a double.
std::string json_double(double d) {
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
}

std::string frozen_base_json(const CheckpointState& st) {
    if (st.frozen_sha256.empty()) return "";
    std::string tensors;
    for (const auto& [name, hex] : st.frozen_sha256)
        tensors += cat(tensors.empty() ? "" : ",\n", "      ", json::quote(name), ": ",
                       json::quote(hex));
    return cat("  \"frozen_base\": {\n    \"init_from\": ", json::quote(st.frozen_from),
               ",\n    \"tensors\": {\n", tensors, "\n    }\n  },\n");
}

std::string metadata_json(const CheckpointState& st) {
    if (st.metadata.empty()) return "";
    std::string entries;
    for (const auto& [key, value] : st.metadata)
        entries += cat(entries.empty() ? "" : ",\n", "    ", json::quote(key), ": ",
                       json::quote(value));
    return cat("  \"metadata\": {\n", entries, "\n  },\n");
}

std::string state_json(const CheckpointState& st) {
    // format_version first: a reader checks it before interpreting anything else.
    return cat("{\n",
               "  \"format_version\": ", st.format_version, ",\n",
               "  \"step\": ", st.step, ",\n",
               "  \"tokens_total\": ", st.tokens_total, ",\n",
               // One process's checkpoints stay as they were before ranks were recorded.
               st.world_size > 1 ? cat("  \"world_size\": ", st.world_size, ",\n") : std::string(),
               "  \"sampler_cursor\": {\"shard\": ", st.cursor_shard, ", \"pos\": ", st.cursor_pos,
               "},\n",
               "  \"loss_scale\": ", json_double(st.loss_scale), ",\n",
               frozen_base_json(st),
               metadata_json(st),
               st.run_id.empty() ? std::string() : cat("  \"run\": ", json::quote(st.run_id), ",\n"),
               "  \"library_version\": ", json::quote(st.library_version), ",\n",
               "  \"config_toml\": ", json::quote(st.config_toml), "\n",
               "}\n");
}

// Strict accessors for state.json: a missing or mistyped key is Error(Format) naming it.
struct StateReader {
    std::string source;  // "corrupt checkpoint '<dir>': state.json"

    [[noreturn]] void bad(const std::string& key, const std::string& what) const {
        fail(Status::Format, source, ": key \"", key, "\" ", what);
    }
    const json::Value& get(const json::Value& obj, const std::string& key,
                           const std::string& path) const {
        const json::Value* v = obj.find(key);
        if (!v) bad(path, "is missing");
        return *v;
    }
    int64_t count(const json::Value& obj, const std::string& key, const std::string& path) const {
        const json::Value& v = get(obj, key, path);
        int64_t x = 0;
        if (!v.get_i64(x) || x < 0)
            bad(path, cat("must be a non-negative integer, got a ", v.kind_name()));
        return x;
    }
    std::string string(const json::Value& obj, const std::string& key) const {
        const json::Value& v = get(obj, key, key);
        if (!v.is_string()) bad(key, cat("must be a string, got a ", v.kind_name()));
        return v.s;
    }
    // Duplicate keys would make "which one wins" a reader-dependent question.
    void no_duplicates(const json::Value& obj, const std::string& where) const {
        std::map<std::string, int> seen;
        for (const json::Member& m : obj.obj)
            if (seen[m.key]++) bad(where.empty() ? m.key : where + "." + m.key, "appears twice");
    }
};

}  // namespace

CheckpointState read_state_file(const std::string& dir) {
    const std::string source = corrupt_prefix(dir) + kStateFile;
    const std::string text = read_small_file(path_join(dir, kStateFile), kMaxStateBytes);
    const json::Value root = json::parse(text, source);
    const StateReader r{source};
    if (!root.is_object())
        fail(Status::Format, source, ": is a JSON ", root.kind_name(), ", expected an object");
    r.no_duplicates(root, "");

    CheckpointState st;
    const json::Value& fv = r.get(root, "format_version", "format_version");
    if (!fv.get_i64(st.format_version) || st.format_version < 1)
        r.bad("format_version", "must be a positive integer");
    // Checked before any other key: a newer format may have changed them.
    if (st.format_version > kCheckpointFormatVersion)
        fail(Status::VersionMismatch, "checkpoint '", dir, "' has format version ",
             st.format_version, "; this libtrainrt reads up to ", kCheckpointFormatVersion,
             "; upgrade libtrainrt");

    st.step = r.count(root, "step", "step");
    // Step arithmetic (step + 1, step + n) must not overflow: the bound train.steps has.
    if (st.step > limits::kMaxSteps)
        r.bad("step", cat("must be at most ", limits::kMaxSteps, " (the largest train.steps)"));
    st.tokens_total = r.count(root, "tokens_total", "tokens_total");
    if (st.tokens_total > (int64_t{1} << 62))
        r.bad("tokens_total", "must be at most 2^62");
    if (root.find("world_size")) {  // optional: absent = one process (and older writers)
        st.world_size = r.count(root, "world_size", "world_size");
        if (st.world_size < 1 || st.world_size > (int64_t{1} << 24))
            r.bad("world_size", "must be between 1 and 2^24");
    }
    const json::Value& cur = r.get(root, "sampler_cursor", "sampler_cursor");
    if (!cur.is_object()) r.bad("sampler_cursor", cat("must be an object, got a ", cur.kind_name()));
    r.no_duplicates(cur, "sampler_cursor");
    st.cursor_shard = r.count(cur, "shard", "sampler_cursor.shard");
    st.cursor_pos = r.count(cur, "pos", "sampler_cursor.pos");
    const json::Value& ls = r.get(root, "loss_scale", "loss_scale");
    if (ls.kind == json::Value::Kind::Double) st.loss_scale = ls.d;
    else if (ls.kind == json::Value::Kind::Int) st.loss_scale = static_cast<double>(ls.i);
    else r.bad("loss_scale", cat("must be a number, got a ", ls.kind_name()));
    if (!(std::isfinite(st.loss_scale) && st.loss_scale > 0))
        r.bad("loss_scale", "must be a positive number");
    st.library_version = r.string(root, "library_version");
    st.config_toml = r.string(root, "config_toml");
    if (const json::Value* fb = root.find("frozen_base")) {
        if (!fb->is_object()) r.bad("frozen_base", cat("must be an object, got a ", fb->kind_name()));
        r.no_duplicates(*fb, "frozen_base");
        const json::Value& from = r.get(*fb, "init_from", "frozen_base.init_from");
        if (!from.is_string()) r.bad("frozen_base.init_from", "must be a string");
        st.frozen_from = from.s;
        const json::Value& tensors = r.get(*fb, "tensors", "frozen_base.tensors");
        if (!tensors.is_object()) r.bad("frozen_base.tensors", "must be an object");
        r.no_duplicates(tensors, "frozen_base.tensors");
        for (const json::Member& m : tensors.obj) {
            const bool hex = m.value.is_string() && m.value.s.size() == 64 &&
                             m.value.s.find_first_not_of("0123456789abcdef") == std::string::npos;
            if (!hex) r.bad("frozen_base.tensors." + m.key, "must be a sha256 in lower-case hex");
            st.frozen_sha256[m.key] = m.value.s;
        }
    }
    if ((st.format_version == kCheckpointFormatFrozenBase) == st.frozen_sha256.empty())
        r.bad("frozen_base", st.frozen_sha256.empty()
                                 ? "is missing or empty (format version 3 leaves frozen tensors out)"
                                 : "is only valid in format version 3");
    if (const json::Value* md = root.find("metadata")) {  // optional: older writers lack it
        if (!md->is_object()) r.bad("metadata", cat("must be an object, got a ", md->kind_name()));
        r.no_duplicates(*md, "metadata");
        if (md->obj.size() > kMaxMetadataKeys)
            r.bad("metadata", cat("holds ", md->obj.size(), " keys; at most ", kMaxMetadataKeys));
        for (const json::Member& m : md->obj) {
            if (!m.value.is_string()) r.bad("metadata." + m.key, "must be a string");
            const std::string problem = metadata_entry_problem(m.key, &m.value.s);
            if (!problem.empty()) r.bad("metadata." + m.key, cat("is invalid: ", problem));
            st.metadata[m.key] = m.value.s;
        }
    }
    if (const json::Value* run = root.find("run")) {  // optional: older writers lack it
        if (!run->is_string()) r.bad("run", cat("must be a string, got a ", run->kind_name()));
        const std::string problem = run_id_problem(run->s);
        if (!problem.empty()) r.bad("run", cat("is invalid: ", problem));
        st.run_id = run->s;
    }
    // Unknown keys are ignored: a writer may add information an older reader can safely skip
    // without bumping format_version (docs/FORMATS.md §4, version policy).
    return st;
}

std::vector<TensorToWrite> table_tensors(const ParamTable& table, const float* data, DType dtype,
                                         const std::string& prefix, bool trainable_only) {
    std::vector<TensorToWrite> out;
    out.reserve(table.tensors().size());
    for (const ParamTensor& pt : table.tensors()) {
        if (trainable_only && !pt.trainable) continue;
        out.push_back({prefix + pt.name, dtype, pt.shape,
                       data + (trainable_only ? pt.grad_offset : pt.offset)});
    }
    return out;
}

namespace {

// When the model's shape agrees, tensors that do not are LoRA adapters: the run and the
// config differ in [lora], not in model.* (a LoRA config pointed at a full run's out_dir).
// "" when the adapters agree.
std::string lora_advice(const SafetensorsFile& file, const ParamTable& table,
                        const std::string& dir) {
    const TensorInfo* have_a = nullptr;  // a lora_A [rank, in] of the checkpoint's
    for (const TensorInfo& t : file.tensors())
        if (t.name.find(".lora_A.") != std::string::npos) have_a = &t;
    const int rank = table.spec().lora.rank;
    if (rank > 0 && !have_a)
        return cat("it is a full-model run (no LoRA adapters) and the config adds LoRA "
                   "(lora.rank = ", rank, "), so the LoRA run cannot go on from it. Give the "
                   "LoRA run a train.out_dir of its own (model.init_from = \"", dir,
                   "\" starts it from these weights), or start over instead of resuming");
    if (rank == 0 && have_a)
        return "it is a LoRA run (its LoRA adapters are in it) and the config has none "
               "(lora.rank = 0): set [lora] as that run had it to go on from it, or give this "
               "run a train.out_dir of its own";
    if (rank > 0 && !have_a->shape.empty() && have_a->shape[0] != rank)
        return cat("its LoRA adapters have rank ", have_a->shape[0], " and the config's "
                   "lora.rank is ", rank, ": set lora.rank = ", have_a->shape[0],
                   " to go on from it, or give this run a train.out_dir of its own");
    if (rank > 0)
        return "its LoRA adapters are on other layers than the config's: set "
               "lora.target_modules as that run had them to go on from it, or give this run a "
               "train.out_dir of its own";
    return "";
}

}  // namespace

SafetensorsFile open_checked_model(const std::string& dir, const ParamTable& table,
                                   const std::map<std::string, std::string>* absent_ok) {
    const ModelSpec& want = table.spec();
    const ModelSpec have = parse_hf_config(
        read_small_file(path_join(dir, kConfigFile), kMaxConfigBytes),
        corrupt_prefix(dir) + kConfigFile);
    const std::string diff = shape_diff(have, want);
    SafetensorsFile file = SafetensorsFile::open(path_join(dir, kModelFile));
    // What to tell the user whichever tensor trips first: the keys to change, from config.json
    // (or, the shape agreeing, the [lora] keys).
    const std::string lora = diff.empty() ? lora_advice(file, table, dir) : std::string();
    const std::string advice =
        !lora.empty() ? lora
        : diff.empty() ? std::string("set model.vocab_size, context_length, n_layer and d_model "
                                     "to the checkpoint's values")
                       : cat("the checkpoint was trained with ", diff,
                             "; set these model.* keys to the checkpoint's values");
    const std::string head = cat("checkpoint '", dir, "' does not match the configured model: ");

    size_t present = 0;
    for (const ParamTensor& pt : table.tensors()) {
        const TensorInfo* info = file.find(pt.name);
        if (!info && absent_ok && absent_ok->count(pt.name)) continue;  // a frozen base tensor
        if (!info)
            fail(Status::Config, head, "tensor '", pt.name, "' ", shape_text(pt.shape),
                 " that the config's model needs is not in the checkpoint; ", advice);
        ++present;
        if (info->shape != pt.shape)
            fail(Status::Config, head, "tensor '", pt.name, "' has shape ", shape_text(info->shape),
                 " in the checkpoint but the config's model needs ", shape_text(pt.shape), "; ",
                 advice);
        if (info->dtype != DType::F32)
            fail(Status::Format, corrupt_prefix(dir), kModelFile, ": tensor '", pt.name,
                 "' is ", dtype_name(info->dtype), "; checkpoints hold F32 master weights");
    }
    if (file.tensors().size() != present)
        for (const TensorInfo& t : file.tensors())
            if (!table.find(t.name))
                fail(Status::Config, head, "the checkpoint has tensor '", t.name, "' ",
                     shape_text(t.shape), " that the config's model does not; ", advice);
    // n_head does not show in any shape, so only config.json can catch it.
    if (!diff.empty())
        fail(Status::Config, head, "the checkpoint was trained with ", diff,
             "; set these model.* keys to the checkpoint's values");
    return file;
}

void copy_tensors(const SafetensorsFile& file, const ParamTable& table, float* host,
                  const std::string& prefix) {
    for (const ParamTensor& pt : table.tensors())
        if (const TensorInfo* info = file.find(prefix + pt.name))  // absent: a frozen base tensor
            file.read_f32(*info, host + pt.offset);
    table.clear_padding(host);
}

}  // namespace ckpt

using namespace ckpt;

void write_checkpoint(const std::string& dir_arg, const ParamTable& table, const float* params,
                      const float* m, const float* v, const CheckpointState& state) {
    const std::string dir = strip_trailing_slashes(dir_arg);
    if (dir.empty()) fail(Status::InvalidArgument, "write_checkpoint: empty directory path");
    if (!params || !m || !v)
        fail(Status::InvalidArgument, "write_checkpoint '", dir,
             "': params, m and v must all be non-null");
    if (state.step < 0 || state.tokens_total < 0 || state.cursor_shard < 0 || state.cursor_pos < 0)
        fail(Status::InvalidArgument, "write_checkpoint '", dir,
             "': step, tokens_total and the sampler cursor must be non-negative");
    if (state.step > limits::kMaxSteps || state.tokens_total > (int64_t{1} << 62))
        fail(Status::InvalidArgument, "write_checkpoint '", dir, "': step ", state.step,
             " or tokens_total ", state.tokens_total, " is beyond what a reader accepts");
    if (!(std::isfinite(state.loss_scale) && state.loss_scale > 0))
        fail(Status::InvalidArgument, "write_checkpoint '", dir, "': loss_scale ",
             state.loss_scale, " is not a positive finite number");
    if (!json::valid_utf8(state.library_version) || !json::valid_utf8(state.config_toml))
        fail(Status::InvalidArgument, "write_checkpoint '", dir,
             "': library_version and config_toml must be valid UTF-8");
    for (const auto& [name, hex] : state.frozen_sha256) {
        const ParamTensor* t = table.find(name);
        if (!t) t = table.find_quantised(name);  // a quantised base's (lora.base_dtype)
        if (!t || t->trainable || hex.size() != 64)
            fail(Status::InvalidArgument, "write_checkpoint '", dir, "': frozen_sha256 names '",
                 name, "', which is not a frozen tensor of the model (or its digest is not hex)");
    }
    if (path_kind(dir) != PathKind::Missing)
        fail(Status::Io, "checkpoint directory '", dir,
             "' already exists; checkpoints are never overwritten: remove it or write to "
             "another directory");

    // A .tmp directory is only ever a crashed writer's leftover: nothing reads it.
    const std::string tmp = dir + ".tmp";
    remove_tree(tmp);
    make_dirs(parent_dir(dir));
    try {
        make_dirs(tmp);
        // Each file is written as file.tmp, fsynced and renamed by its writer.
        std::vector<TensorToWrite> model;
        for (TensorToWrite& t : table_tensors(table, params, DType::F32))
            if (!state.frozen_sha256.count(t.name)) model.push_back(std::move(t));
        write_safetensors(path_join(tmp, kModelFile), model, {{"format", "pt"}});
        write_file_atomic(path_join(tmp, kConfigFile), hf_config_json(table.spec(), "float32"));
        std::vector<TensorToWrite> moments = table_tensors(table, m, DType::F32, "m.", true);
        for (TensorToWrite& t : table_tensors(table, v, DType::F32, "v.", true))
            moments.push_back(std::move(t));
        write_safetensors(path_join(tmp, kOptimizerFile), moments);
        CheckpointState versioned = state;
        versioned.format_version = !state.frozen_sha256.empty() ? kCheckpointFormatFrozenBase
                                   : table.all_trainable()      ? kCheckpointFormatAllMoments
                                                                : kCheckpointFormatTrainableMoments;
        write_file_atomic(path_join(tmp, kStateFile), state_json(versioned));
        // Last: its presence marks the directory as complete.
        write_manifest(tmp, {kModelFile, kConfigFile, kOptimizerFile, kStateFile});
        fsync_dir(tmp);
        rename_no_replace(tmp, dir);  // also fsyncs the parent
    } catch (...) {
        try {
            remove_tree(tmp);
        } catch (...) {
            // Keep the original error; the leftover .tmp is removed by the next writer.
        }
        throw;
    }
}

CheckpointState read_checkpoint_state(const std::string& dir_arg) {
    const std::string dir = strip_trailing_slashes(dir_arg);
    require_checkpoint_files(dir, verify_manifest(dir));
    return read_state_file(dir);
}

std::string tensor_sha256(const ParamTensor& t, const float* host) {
    static_assert(sizeof(float) == 4, "fp32");
    return sha256_hex(host + t.offset, t.numel * sizeof(float));  // x86-64: little-endian
}

ModelSpec read_checkpoint_model_spec(const std::string& dir_arg) {
    const std::string dir = strip_trailing_slashes(dir_arg);
    require_checkpoint_files(dir, verify_manifest(dir));
    return parse_hf_config(read_small_file(path_join(dir, kConfigFile), kMaxConfigBytes),
                           corrupt_prefix(dir) + kConfigFile);
}

CheckpointState read_checkpoint(const std::string& dir_arg, const ParamTable& table,
                                float* params, float* m, float* v,
                                std::vector<std::string>* fresh_moments,
                                bool verify_frozen_base) {
    const std::string dir = strip_trailing_slashes(dir_arg);
    if (!params) fail(Status::InvalidArgument, "read_checkpoint '", dir, "': params is null");
    if ((m == nullptr) != (v == nullptr))
        fail(Status::InvalidArgument, "read_checkpoint '", dir,
             "': pass both m and v, or neither");
    require_checkpoint_files(dir, verify_manifest(dir));
    const CheckpointState state = read_state_file(dir);
    const SafetensorsFile model = open_checked_model(dir, table, &state.frozen_sha256);
    // Format 3: the tensors left out must be, bit for bit, the base the caller holds.
    for (const auto& [name, hex] : state.frozen_sha256) {
        const ParamTensor* pt = table.find(name);
        if (!verify_frozen_base || !pt || model.find(name)) continue;  // stored, or no check
        if (tensor_sha256(*pt, params) != hex)
            fail(Status::Config, "checkpoint '", dir, "' holds only the tensors that trained; "
                 "its frozen '", name, "' is model.init_from = '", state.frozen_from,
                 "' as it was then, and the base loaded now differs from it (sha256); set "
                 "model.init_from to that base, unchanged");
    }

    SafetensorsFile optim;
    std::vector<const ParamTensor*> fresh;  // trainable here, frozen in the checkpoint
    if (m) {
        // The model file matched the table, so any mismatch here is a damaged checkpoint.
        optim = SafetensorsFile::open(path_join(dir, kOptimizerFile));
        const std::string where = corrupt_prefix(dir) + kOptimizerFile;
        // Version 1 holds both moments of every tensor; version 2 those of the tensors that
        // trained, each with both.
        const bool all = state.format_version == kCheckpointFormatAllMoments;
        size_t held = 0;
        for (const ParamTensor& pt : table.tensors()) {
            int present = 0;
            for (const char* prefix : {"m.", "v."}) {
                const TensorInfo* info = optim.find(prefix + pt.name);
                if (!info) {
                    if (all)
                        fail(Status::Format, where, ": tensor '", prefix, pt.name, "' is missing");
                    continue;
                }
                ++present;
                if (info->shape != pt.shape || info->dtype != DType::F32)
                    fail(Status::Format, where, ": tensor '", prefix, pt.name, "' is ",
                         dtype_name(info->dtype), " ", shape_text(info->shape), ", expected F32 ",
                         shape_text(pt.shape));
            }
            if (present == 1)
                fail(Status::Format, where, ": holds one of the moments m./v. of '", pt.name,
                     "' without the other");
            held += static_cast<size_t>(present);
            if (present == 0 && pt.trainable) fresh.push_back(&pt);
        }
        if (optim.tensors().size() != held)
            fail(Status::Format, where, ": holds ", optim.tensors().size(),
                 " tensors, of which ", held, " are m./v. moments of the model's parameters");
    }

    // Every check passed: only now touch the caller's buffers.
    copy_tensors(model, table, params);
    if (m) {
        for (const ParamTensor& pt : table.tensors()) {
            if (!pt.trainable) continue;
            float* mt = m + pt.grad_offset;
            float* vt = v + pt.grad_offset;
            const TensorInfo* mi = optim.find("m." + pt.name);
            if (mi) {
                optim.read_f32(*mi, mt);
                optim.read_f32(*optim.find("v." + pt.name), vt);
            } else {
                std::fill(mt, mt + pt.numel, 0.0f);
                std::fill(vt, vt + pt.numel, 0.0f);
            }
            // Padding rows' moments are zero (their gradient always is).
            std::fill(mt + pt.numel, mt + pt.numel + pt.padding, 0.0f);
            std::fill(vt + pt.numel, vt + pt.numel + pt.padding, 0.0f);
        }
        if (fresh_moments)
            for (const ParamTensor* pt : fresh) fresh_moments->push_back(pt->name);
    }
    return state;
}

}  // namespace trt
