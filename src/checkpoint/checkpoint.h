// Checkpoints (docs/FORMATS.md §4): one directory per checkpoint holding
//   model.safetensors      fp32 master weights, HF GPT-2 names (also a valid HF export)
//   config.json            HF GPT2LMHeadModel config for those weights
//   optimizer.safetensors  AdamW moments: "m.<name>", "v.<name>" (fp32) of the trainable
//                          tensors (all of them unless train.trainable froze some)
//   state.json             format version, step, tokens, sampler cursor, loss scale, config
//   MANIFEST.sha256        "<sha256 hex>  <file>" for every other file, written last
// written as NAME.tmp/ (every file fsynced), renamed to NAME/, parent fsynced. Loading
// verifies the manifest before trusting any byte.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/dir_lock.h"
#include "model/param_table.h"

namespace trt {

// Bumped when a reader of the previous version could misread a new checkpoint. The newest
// version this library reads. 1: moments for every tensor. 2: moments for the trainable
// tensors only (frozen ones have none). 3: as 2, and model.safetensors holds only the
// tensors that train: the frozen ones are model.init_from's, named in state.json's
// "frozen_base" with a sha256 of each. Each checkpoint is written in the lowest version that
// holds it (every tensor trains: 1, readable by every libtrainrt).
constexpr int64_t kCheckpointFormatVersion = 3;
constexpr int64_t kCheckpointFormatAllMoments = 1;
constexpr int64_t kCheckpointFormatTrainableMoments = 2;
constexpr int64_t kCheckpointFormatFrozenBase = 3;

// Everything besides the tensors that a bit-exact resume needs, plus provenance.
struct CheckpointState {
    int64_t format_version = kCheckpointFormatAllMoments;  // read: as the files say
    int64_t step = 0;             // optimizer steps completed
    int64_t tokens_total = 0;     // tokens trained on
    int64_t world_size = 1;       // data-parallel ranks that trained it (state.json: written
                                  // when > 1; its global batch is batch_size x world_size)
    int64_t cursor_shard = 0;     // sequential sampler cursor (data/sampler.h)
    int64_t cursor_pos = 0;
    double loss_scale = 1.0;      // fp16 dynamic loss scale (1 on fp32 backends)
    std::string library_version;  // trainrt_version_string() of the writer
    std::string config_toml;      // the resolved run config the checkpoint was trained with
    // Format 3: the frozen tensors model.safetensors leaves out — name -> tensor_sha256 of
    // its values — and the model.init_from they are read from. Empty: every tensor stored.
    std::string frozen_from;
    std::map<std::string, std::string> frozen_sha256;
    // The user's metadata (trainrt_session_set_metadata; checkpoint_metadata.h's rules).
    std::map<std::string, std::string> metadata;
    // The run (metrics.jsonl's run id, FORMATS.md §5) the checkpoint belongs to: a session
    // that loads it continues that run. "" = not recorded (older writers).
    std::string run_id;
};

// Lower-case hex SHA-256 of a tensor's fp32 values as stored (little-endian, no padding
// rows): the identity of a frozen tensor a format-3 checkpoint does not hold.
std::string tensor_sha256(const ParamTensor& t, const float* host_params);

// Writes a complete checkpoint into `dir` (which must not exist: Error(Io) saying so) via
// `dir`.tmp. params: host buffer of table.total() floats in ParamTable order; m, v: of
// table.grad_total() floats (the trainable tensors at their grad_offset). state's
// format_version is ignored: the version is chosen by what the files hold. With
// state.frozen_sha256 (frozen tensors only) those tensors are left out of model.safetensors.
// A stale `dir`.tmp from a crashed writer is removed first. On failure nothing named `dir`
// exists and the temporary directory is removed.
void write_checkpoint(const std::string& dir, const ParamTable& table, const float* params,
                      const float* m, const float* v, const CheckpointState& state);

// write_checkpoint, also when `dir` exists (a checkpoint of another run at the same step,
// e.g. before `train --fresh`): the new one is written completely as `dir`.new, then swapped
// in (`dir` -> `dir`.old, `dir`.new -> `dir`, parent fsynced), and only then is the old one
// removed; leftovers of a crash in between are pruned by prune_checkpoints.
void write_or_replace_checkpoint(const std::string& dir, const ParamTable& table,
                                 const float* params, const float* m, const float* v,
                                 const CheckpointState& state);

// Verifies MANIFEST.sha256 (a missing, extra-listed or mismatching file is Error(Format)
// "corrupt checkpoint '<dir>': <file> ..."), refuses format_version > ours with
// Error(VersionMismatch), refuses any tensor whose name/shape differs from `table` with
// Error(Config) naming the tensor, both shapes and the model.* keys to change; then fills
// params, m, v (table.total() floats each; m/v may be nullptr to skip the optimizer file)
// and returns the state. m/v are table.grad_total() floats (the trainable tensors at their
// grad_offset); a trainable tensor whose moments the checkpoint lacks (it was frozen there:
// format 2 only) gets zero moments and its name appended to *fresh_moments (when given).
// Moments of tensors frozen now are skipped. Format 3: params must already hold the base
// (model.init_from's values) for the tensors the checkpoint leaves out; each is verified
// against the recorded sha256 (Error(Config) naming the tensor and model.init_from) and
// kept. Buffers are written only after every check passed.
// verify_frozen_base false: skip the format-3 check (an adapter export, which reads only the
// stored tensors and needs no base).
CheckpointState read_checkpoint(const std::string& dir, const ParamTable& table, float* params,
                                float* m, float* v,
                                std::vector<std::string>* fresh_moments = nullptr,
                                bool verify_frozen_base = true);

// Manifest + state.json only (no tensors): what config_from_checkpoint needs.
CheckpointState read_checkpoint_state(const std::string& dir);

// Manifest + config.json: the base model's spec the checkpoint holds (no adapters: a LoRA
// run's [lora] is in state.json's config).
ModelSpec read_checkpoint_model_spec(const std::string& dir);

// Error(InvalidArgument) when out_dir is the checkpoint directory itself (an export there
// would replace its files and break its manifest). `what` names the caller.
void refuse_export_into_checkpoint(const std::string& checkpoint_dir, const std::string& out_dir,
                                   const char* what);

// ------------------------------------------------------------- a run's folder of checkpoints
// <out_dir>/step_00001234/ ... and <out_dir>/latest, a one-line text file naming the newest
// checkpoint directory (replaced atomically: latest.tmp, fsync, rename, fsync parent).

std::string checkpoint_dir_name(int64_t step);  // "step_00001234" (more digits past 1e8)

// `path` is a checkpoint directory (has MANIFEST.sha256) or a folder with a `latest` file;
// returns the checkpoint directory. Error(Io) if neither, Error(Format) if `latest` names
// something that is not there.
std::string resolve_checkpoint(const std::string& path);

// The directory `latest` in out_dir names, or "" if out_dir has no `latest` file.
std::string latest_checkpoint(const std::string& out_dir);

// Points <out_dir>/latest at <out_dir>/<name>, atomically.
void set_latest_checkpoint(const std::string& out_dir, const std::string& name);

// Removes step_* checkpoint directories of out_dir beyond the newest keep_last (by step
// number), never the one `latest` names, and any stale step_N.tmp, step_N.new(.tmp),
// step_N.old (crash leftovers). keep_last 0 = keep all.
void prune_checkpoints(const std::string& out_dir, int64_t keep_last);

// ------------------------------------------------------------------ Hugging Face export
enum class ExportDType { F32, BF16 };

// transformers' default max_shard_size ("5GB").
inline constexpr uint64_t kDefaultMaxShardBytes = 5000000000ull;

// Writes the model as transformers' save_pretrained does, each file atomically, creating
// out_dir if missing: out_dir/model.safetensors (the family's HF names, no padding, dtype as
// asked) — or, when the tensors pass max_shard_bytes, model-0000i-of-0000n.safetensors
// shards and model.safetensors.index.json — and out_dir/config.json (GPT2LMHeadModel or
// LlamaForCausalLM). The run holds out_dir's lock (lock_export_folder). An earlier export's
// config.json and index go first, its files of the other layout or shard count once the new
// weights are written, and config.json comes last: a crash never leaves a folder with a
// config.json whose weights mix two exports. before_file(name), when given, is called before
// each file is written (a test's stand-in for a crash there).
void export_hf(const std::string& out_dir, const ParamTable& table, const float* params,
               ExportDType dtype, uint64_t max_shard_bytes = kDefaultMaxShardBytes,
               const std::function<void(const std::string&)>& before_file = nullptr);

// Takes out_dir's lock for an export (Error(Busy) naming the folder and the holder when
// another export writes there; the lock file goes when the lock is released) and removes the
// temporary files an export killed there left (of the names an export writes).
std::unique_ptr<DirLock> lock_export_folder(const std::string& out_dir);

// The same from a checkpoint directory (verified as read_checkpoint does). before_writing, when
// given, sees the checkpoint's state once it is verified and before anything is written (a
// throw there writes nothing): the caller's checks of what the run recorded.
void export_checkpoint_hf(
    const std::string& checkpoint_dir, const std::string& out_dir, ExportDType dtype,
    uint64_t max_shard_bytes = kDefaultMaxShardBytes,
    const std::function<void(const CheckpointState&)>& before_writing = nullptr);

}  // namespace trt
