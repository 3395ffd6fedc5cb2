// fuzz_hf_model: a Hugging Face model folder as model.init_from names it — someone else's
// config.json, model.safetensors.index.json and safetensors shards — through the path a
// session takes: the config layer reads config.json into [model] (config/hf_model_config.h),
// then the weight loader finds the shards (model/hf_model_files.h) and fills the parameter
// table (model/model_weights.h: load_init_weights, which also refuses non-finite weights).
//
// Input: one flags byte, then config.json "@@TRTFILE@@" index "@@TRTFILE@@" shard "@@TRTFILE@@"
// shard. With an index part, it is written as model.safetensors.index.json and the shards as
// model-00001-of-00002.safetensors and model-00002-of-00002.safetensors (the names
// save_pretrained gives; an index may name others, which are then missing); without one, the
// first shard is model.safetensors. flags bit 0: the run config also says model.arch =
// "llama" (a contradiction unless the folder is a Llama); bit 1: it gives model.n_layer = 1.
// A config whose model would need more than kMaxParams floats stops after the table: a real
// session would allocate it, which is not a parser's fault.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "model/model_weights.h"
#include "model/param_table.h"

namespace {
constexpr size_t kMaxParams = size_t{1} << 22;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t flags = data[0];
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::vector<std::string_view> parts = fuzz::split(body, "@@TRTFILE@@", 4);

    const std::string& scratch = fuzz::scratch_dir("fuzz_hf_model");
    const std::string dir = scratch + "/model";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    fuzz::write_file(dir + "/config.json", parts[0]);
    const bool sharded = parts.size() > 1 && !parts[1].empty();
    if (sharded) {
        fuzz::write_file(dir + "/model.safetensors.index.json", parts[1]);
        if (parts.size() > 2) fuzz::write_file(dir + "/model-00001-of-00002.safetensors", parts[2]);
        if (parts.size() > 3) fuzz::write_file(dir + "/model-00002-of-00002.safetensors", parts[3]);
    } else if (parts.size() > 2) {
        fuzz::write_file(dir + "/model.safetensors", parts[2]);
    }

    std::string toml = "[model]\ninit_from = \"" + dir + "\"\n";
    if (flags & 1) toml += "arch = \"llama\"\n";
    if (flags & 2) toml += "n_layer = 1\n";
    toml += "[train]\nseq_len = 1\n";  // within any context length the folder gives
    trt::ModelSpec spec;
    try {
        const trt::Config cfg = trt::Config::from_string(toml, scratch, "fuzz.toml");
        spec = trt::model_spec(cfg.run().model);
    } catch (const trt::Error& e) {
        fuzz::refused("config", e);
        return 0;
    }
    const trt::ParamTable table(spec);
    if (table.total() > kMaxParams) return 0;
    std::vector<float> host(static_cast<size_t>(table.total()), 0.0f);
    try {
        trt::load_init_weights(table, dir, host.data());
    } catch (const trt::Error& e) {
        fuzz::refused("load_init_weights", e);
    }
    return 0;
}
