// Pieces shared by the files of src/checkpoint/ (not part of the module's interface):
// file names, the manifest, the HF config.json, and tensor checks/loads that both
// read_checkpoint and export_checkpoint_hf use.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "io/safetensors.h"
#include "model/param_table.h"

namespace trt::ckpt {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kConfigFile = "config.json";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kStateFile = "state.json";
constexpr const char* kManifestFile = "MANIFEST.sha256";
constexpr const char* kLatestFile = "latest";

// "corrupt checkpoint '<dir>': " — the prefix of every integrity error.
std::string corrupt_prefix(const std::string& dir);

// ------------------------------------------------------------------------- manifest.cpp
// Hashes each file of dir and writes MANIFEST.sha256 atomically: one line
// "<64 lower-case hex>  <name>\n" per file, sorted by name (the `sha256sum` format, so
// `cd dir && sha256sum -c MANIFEST.sha256` checks a checkpoint by hand).
void write_manifest(const std::string& dir, std::vector<std::string> files);

// Verifies dir/MANIFEST.sha256 against the files of dir and returns the listed names.
// Error(Format) "corrupt checkpoint '<dir>': <file> ..." for a missing or malformed manifest,
// a listed file that is missing or not a regular file, a hash mismatch, or a non-hidden
// regular file that the manifest does not list.
std::set<std::string> verify_manifest(const std::string& dir);

// Error(Format) "corrupt checkpoint '<dir>': <file> is not listed ..." unless every one of
// the checkpoint's files is in `listed`.
void require_checkpoint_files(const std::string& dir, const std::set<std::string>& listed);

// ------------------------------------------------------------------------ hf_config.cpp
// config.json of a GPT2LMHeadModel with these dims; torch_dtype "float32" or "bfloat16".
std::string hf_config_json(const ModelSpec& s, const std::string& torch_dtype);

// The dims of a config.json written by hf_config_json (or by transformers): vocab_size,
// n_positions, n_layer, n_head, n_embd, each a positive integer within the bound of its
// model.* key (config/size_limits.h). Error(Format) naming `source` and the key otherwise;
// also refuses dims whose parameter count is absurd, so a damaged file cannot trigger a huge
// allocation.
ModelSpec parse_hf_config(const std::string& text, const std::string& source);

// "model.n_layer = 4 (the config has 6), model.n_head = ..." for every dim that differs;
// "" if none.
std::string shape_diff(const ModelSpec& checkpoint, const ModelSpec& config);

// ----------------------------------------------------------------------- checkpoint.cpp
// state.json of dir (already verified); Error(VersionMismatch) for a newer format.
CheckpointState read_state_file(const std::string& dir);

// The tensors of a table over `data` (params, or a moment with prefix "m."/"v.").
// trainable_only: the trainable tensors of a compact buffer (at their grad_offset).
std::vector<TensorToWrite> table_tensors(const ParamTable& table, const float* data, DType dtype,
                                         const std::string& prefix = "",
                                         bool trainable_only = false);

// Opens dir/model.safetensors and checks it holds exactly the table's tensors, F32, with the
// table's shapes, and that config.json's dims (n_head included) equal the table's:
// Error(Config) naming the tensor, both shapes and the model.* keys otherwise. Returns the
// opened (memory-mapped) file; nothing is copied yet.
// absent_ok (format 3): tensors that may be missing (the frozen base's).
SafetensorsFile open_checked_model(const std::string& dir, const ParamTable& table,
                                   const std::map<std::string, std::string>* absent_ok = nullptr);

// Copies every tensor of a checked file into host (table.total() floats) at the table's
// offsets, names prefixed with `prefix`; a tensor the file lacks (format 3's frozen base)
// keeps what host holds.
void copy_tensors(const SafetensorsFile& file, const ParamTable& table, float* host,
                  const std::string& prefix = "");

}  // namespace trt::ckpt
