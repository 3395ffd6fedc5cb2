// fuzz_peft_adapter: a PEFT adapter folder (src/model/peft_adapter.h), what lora.init_from
// reads: someone else's adapter_config.json and adapter_model.safetensors.
//
// Input: one flags byte, then adapter_config.json "@@TRTFILE@@" adapter_model.safetensors
// (a part left out is a file left out). The model it loads into: a tiny GPT-2 (flags bit 0
// clear) or Llama (set) with rank-2, alpha-4 adapters on the family's default modules (bit 1
// clear) or every linear layer (set). Then load_peft_adapter, and on success the adapters
// must be finite or refused as a session does (require_finite), and written back and read
// again to the same bits (write_peft_adapter's round trip).
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "model/finite_check.h"
#include "model/lora.h"
#include "model/param_table.h"
#include "model/peft_adapter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t flags = data[0];
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::vector<std::string_view> parts = fuzz::split(body, "@@TRTFILE@@", 2);

    const std::string& scratch = fuzz::scratch_dir("fuzz_peft_adapter");
    const std::string dir = scratch + "/adapter", again = scratch + "/again";
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(again);
    std::filesystem::create_directories(dir);
    fuzz::write_file(dir + "/" + trt::kPeftConfigFile, parts[0]);
    if (parts.size() > 1) fuzz::write_file(dir + "/" + trt::kPeftWeightsFile, parts[1]);

    trt::ModelSpec spec = (flags & 1) ? trt::llama_spec(8, 4, 2, 2, 1, 4, 6, false)
                                      : trt::gpt2_spec(8, 4, 2, 2, 4);
    trt::LoraConfig lc;
    lc.rank = 2;
    lc.alpha = 4.0;
    if (flags & 2) lc.target_modules = {"all-linear"};
    spec.lora = trt::lora_spec(lc, spec);
    const trt::ParamTable table(spec);
    std::vector<float> host(table.total(), 0.0f);
    try {
        trt::load_peft_adapter(table, dir, host.data());
    } catch (const trt::Error& e) {
        fuzz::refused("load_peft_adapter", e);
        return 0;
    }
    try {
        trt::require_finite(table, host.data(), "the adapter", "refused");
    } catch (const trt::Error& e) {
        fuzz::refused("require_finite", e);
        return 0;
    }
    // What loaded writes back and reads again to the same bits.
    trt::write_peft_adapter(table, host.data(), again, "base");
    std::vector<float> back(table.total(), 0.0f);
    trt::load_peft_adapter(table, again, back.data());
    if (std::memcmp(back.data(), host.data(), host.size() * sizeof(float)) != 0)
        fuzz::die("a loaded adapter did not survive write_peft_adapter + load_peft_adapter");
    return 0;
}
