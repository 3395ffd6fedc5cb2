#include "model/hf_model_files.h"

#include <sys/stat.h>

#include <set>

#include "core/error.h"
#include "io/fs_util.h"
#include "io/json_min.h"

namespace trt {
namespace {

bool is_directory(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_regular_file(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::vector<std::string> hf_weight_files(const std::string& init_from) {
    if (!is_directory(init_from)) return {init_from};
    const std::string single = path_join(init_from, kHfWeightsFile);
    if (is_regular_file(single)) return {single};
    const std::string index_path = path_join(init_from, kHfWeightsIndex);
    if (!is_regular_file(index_path)) {
        // PyTorch's own formats are pickles, which are never read here: say how to convert.
        const bool pytorch = is_regular_file(path_join(init_from, "pytorch_model.bin")) ||
                             is_regular_file(path_join(init_from, "pytorch_model.bin.index.json"));
        fail(Status::Io, "model.init_from = '", init_from, "': the folder has neither ",
             kHfWeightsFile, " nor ", kHfWeightsIndex,
             " (a Hugging Face model folder needs one of them next to config.json)",
             pytorch ? "; it holds PyTorch's pytorch_model.bin, which libtrainrt does not read: "
                       "save the model as safetensors (transformers: "
                       "model.save_pretrained(folder, safe_serialization=True))"
                     : "");
    }
    const json::Value index = json::parse(read_small_file(index_path, 64 << 20), index_path);
    const json::Value* map = index.is_object() ? index.find("weight_map") : nullptr;
    if (map == nullptr || !map->is_object() || map->obj.empty())
        fail(Status::Format, index_path, ": has no \"weight_map\" object naming the shards");
    std::set<std::string> shards;
    for (const json::Member& m : map->obj) {
        const std::string& shard = m.value.s;
        // A shard is a file of this folder: a path could reach anywhere on the machine.
        if (!m.value.is_string() || shard.empty() || shard.find('/') != std::string::npos ||
            shard == "." || shard == "..")
            fail(Status::Format, index_path, ": weight_map[\"", m.key,
                 "\"] must be the file name of a shard in the same folder");
        shards.insert(shard);
    }
    std::vector<std::string> files;
    for (const std::string& shard : shards) {
        const std::string p = path_join(init_from, shard);
        if (!is_regular_file(p))
            fail(Status::Io, index_path, ": shard '", shard, "' is missing from the folder");
        files.push_back(p);
    }
    return files;
}

}  // namespace trt
