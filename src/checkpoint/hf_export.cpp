// Hugging Face export: model.safetensors (or shards + model.safetensors.index.json above a
// size) + config.json that GPT2LMHeadModel / LlamaForCausalLM.from_pretrained load directly
// (docs/FORMATS.md §2).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_internal.h"
#include "core/error.h"
#include "io/dir_lock.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "model/hf_model_files.h"
#include "model/peft_adapter.h"

namespace trt {

using namespace ckpt;

namespace {

// "model-00002-of-00005.safetensors" (transformers' shard names).
std::string shard_name(size_t i, size_t n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
    return buf;
}

bool is_shard_name(const std::string& name) {
    unsigned a = 0, b = 0;
    char tail[32] = {};
    return std::sscanf(name.c_str(), "model-%5u-of-%5u.%31s", &a, &b, tail) == 3 &&
           std::string(tail) == "safetensors";
}

void remove_if_present(const std::string& path) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        fail(Status::Io, "export: cannot remove '", path, "' (an earlier export's, replaced "
             "now): ", std::strerror(errno));
}

}  // namespace

std::unique_ptr<DirLock> lock_export_folder(const std::string& out_dir) {
    auto lock = std::make_unique<DirLock>(
        out_dir, "export out_dir",
        "Two exports into one folder would mix their files", LockFile::Remove);
    remove_orphan_temps(out_dir, [](const std::string& name) {
        return name == kModelFile || name == kHfWeightsIndex || name == kConfigFile ||
               name == kPeftWeightsFile || name == kPeftConfigFile || is_shard_name(name);
    });
    return lock;
}

void export_hf(const std::string& out_dir, const ParamTable& table, const float* params,
               ExportDType dtype, uint64_t max_shard_bytes,
               const std::function<void(const std::string&)>& before_file) {
    const auto about_to_write = [&](const std::string& name) {
        if (before_file) before_file(name);
    };
    if (out_dir.empty()) fail(Status::InvalidArgument, "export_hf: empty output directory");
    if (!params) fail(Status::InvalidArgument, "export_hf '", out_dir, "': params is null");
    if (max_shard_bytes == 0)
        fail(Status::InvalidArgument, "export_hf '", out_dir, "': max_shard_bytes is 0");
    // The folder is ours while we write it; the temporary files of an export killed there
    // before are removed.
    const std::unique_ptr<DirLock> lock = lock_export_folder(out_dir);
    // BF16 is rounded to nearest-even by write_safetensors (docs/FORMATS.md §2, writer rules).
    const bool bf16 = dtype == ExportDType::BF16;
    const DType dt = bf16 ? DType::BF16 : DType::F32;
    const std::vector<TensorToWrite> tensors = table_tensors(table, params, dt);
    // Shards as transformers cuts them: tensors in order, a new shard when the next tensor
    // would pass the limit (a tensor larger than the limit gets a shard of its own).
    std::vector<std::vector<TensorToWrite>> shards(1);
    uint64_t in_shard = 0, total = 0;
    for (const TensorToWrite& t : tensors) {
        uint64_t bytes = dtype_size(dt);
        for (int64_t d : t.shape) bytes *= static_cast<uint64_t>(d);
        if (!shards.back().empty() && in_shard + bytes > max_shard_bytes) {
            shards.emplace_back();
            in_shard = 0;
        }
        shards.back().push_back(t);
        in_shard += bytes;
        total += bytes;
    }
    // Never a folder that looks complete but mixes two exports. config.json is what makes a
    // folder a model for transformers and for model.init_from, so it goes first and comes
    // back last; the index goes first too (with an older sharded export's shards under the
    // same names, an old index over half-replaced shards would load as a whole model) and is
    // written after every new shard. A crash leaves the older export, a folder without a
    // config.json (which no loader takes for a model), or this export.
    remove_if_present(path_join(out_dir, kConfigFile));
    remove_if_present(path_join(out_dir, kHfWeightsIndex));
    fsync_dir(out_dir);
    std::vector<std::string> stale;
    const std::map<std::string, std::string> meta = {{"format", "pt"}};
    if (shards.size() == 1) {
        about_to_write(kModelFile);
        write_safetensors(path_join(out_dir, kModelFile), tensors, meta);
        for (const DirEntry& e : list_dir(out_dir))
            if (is_shard_name(e.name)) stale.push_back(e.name);
    } else {
        std::string weight_map;
        std::set<std::string> written;
        for (size_t i = 0; i < shards.size(); ++i) {
            const std::string name = shard_name(i, shards.size());
            about_to_write(name);
            write_safetensors(path_join(out_dir, name), shards[i], meta);
            written.insert(name);
            for (const TensorToWrite& t : shards[i])
                weight_map += cat(weight_map.empty() ? "" : ",\n", "    ", json::quote(t.name),
                                  ": ", json::quote(name));
        }
        // model.safetensors would win over the index: it goes before the index is written.
        remove_if_present(path_join(out_dir, kModelFile));
        about_to_write(kHfWeightsIndex);
        write_file_atomic(path_join(out_dir, kHfWeightsIndex),
                          cat("{\n  \"metadata\": {\"total_size\": ", total,
                              "},\n  \"weight_map\": {\n", weight_map, "\n  }\n}\n"));
        for (const DirEntry& e : list_dir(out_dir))
            if (is_shard_name(e.name) && !written.count(e.name)) stale.push_back(e.name);
    }
    for (const std::string& name : stale) remove_tree(path_join(out_dir, name));
    about_to_write(kConfigFile);
    write_file_atomic(path_join(out_dir, kConfigFile),
                      hf_config_json(table.spec(), bf16 ? "bfloat16" : "float32"));
}

void refuse_export_into_checkpoint(const std::string& dir, const std::string& out_dir,
                                   const char* what) {
    // Exporting into the checkpoint itself would replace its model.safetensors and break its
    // manifest (or, in BF16, lose the fp32 master weights).
    struct stat a {}, b {};
    if (::stat(dir.c_str(), &a) == 0 && ::stat(out_dir.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        fail(Status::InvalidArgument, what, ": the output directory '", out_dir,
             "' is the checkpoint directory itself; choose another output directory");
}

void export_checkpoint_hf(const std::string& checkpoint_dir, const std::string& out_dir,
                          ExportDType dtype, uint64_t max_shard_bytes,
                          const std::function<void(const CheckpointState&)>& before_writing) {
    const std::string dir = strip_trailing_slashes(checkpoint_dir);
    refuse_export_into_checkpoint(dir, out_dir, "export_checkpoint_hf");

    require_checkpoint_files(dir, verify_manifest(dir));
    const CheckpointState state = read_state_file(dir);  // refuses a newer format version
    const ModelSpec shape = parse_hf_config(
        read_small_file(path_join(dir, kConfigFile), 1 << 20), corrupt_prefix(dir) + kConfigFile);
    const ParamTable table(shape);
    // Checked against the table before the host buffer is allocated.
    const SafetensorsFile model = open_checked_model(dir, table);
    std::vector<float> host(table.total());
    copy_tensors(model, table, host.data());
    if (before_writing) before_writing(state);
    export_hf(out_dir, table, host.data(), dtype, max_shard_bytes);
}

}  // namespace trt
