// fuzz_checkpoint: a checkpoint folder (src/checkpoint): what `trainrt train` resumes from,
// `trainrt sample` and `trainrt export` read.
//
// Input: one flags byte, then the folder's files separated by the marker "@@TRTFILE@@":
//   model.safetensors @@ config.json @@ optimizer.safetensors @@ state.json @@ MANIFEST.sha256
// (a part left out is a file left out). MANIFEST.sha256 is RECOMPUTED over the files, as an
// attacker editing a checkpoint would do, so the fuzzer gets past the checksums to the
// readers; with flags bit 0 the fifth part is written verbatim instead (to fuzz the manifest
// parser itself). Then:
//   read_checkpoint_state(dir), and read_checkpoint(dir, table, params, m, v) with the table
//   of config.json's dims when they are small (else a tiny default), without m/v (bit 1),
//   then require_finite as a resuming session does;
//   export_checkpoint_hf(dir, out, F32 or BF16 (bit 3)) (bit 2);
//   resolve_checkpoint and latest_checkpoint of the parent through a `latest` file (bit 4;
//   its content is the fifth part unless bit 0 took it, else "ckpt\n").
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_internal.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "io/sha256.h"
#include "model/finite_check.h"
#include "model/param_table.h"

namespace {

const char* const kFiles[] = {"model.safetensors", "config.json", "optimizer.safetensors",
                              "state.json"};
constexpr long double kMaxFuzzParams = 1 << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t flags = data[0];
    const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::vector<std::string_view> parts = fuzz::split(body, "@@TRTFILE@@", 5);

    const std::string& scratch = fuzz::scratch_dir("fuzz_checkpoint");
    const std::string run = scratch + "/run", dir = run + "/ckpt", out = scratch + "/export";
    std::filesystem::remove_all(run);
    std::filesystem::remove_all(out);
    std::filesystem::create_directories(dir);

    std::string manifest;
    for (size_t i = 0; i < 4 && i < parts.size(); ++i) {
        fuzz::write_file(dir + "/" + kFiles[i], parts[i]);
        manifest += trt::sha256_hex(parts[i].data(), parts[i].size()) + "  " + kFiles[i] + "\n";
    }
    if ((flags & 1) && parts.size() > 4) manifest.assign(parts[4]);
    fuzz::write_file(dir + "/MANIFEST.sha256", manifest);

    try {
        (void)trt::read_checkpoint_state(dir);
    } catch (const trt::Error& e) {
        fuzz::refused("read_checkpoint_state", e);
    }

    // The model a resuming run would configure: config.json's dims when they are small.
    trt::ModelSpec shape = trt::gpt2_spec(8, 4, 1, 1, 4);
    if (parts.size() > 1) {
        try {
            const trt::ModelSpec s = trt::ckpt::parse_hf_config(std::string(parts[1]), "config.json");
            const long double C = s.C;
            const long double n = (static_cast<long double>(s.V) + 128 + s.maxT) * C + 2 * C +
                                  static_cast<long double>(s.L) * (12 * C * C + 13 * C);
            if (n <= kMaxFuzzParams) shape = s;
        } catch (const trt::Error&) {
        }
    }
    const trt::ParamTable table(shape);
    std::vector<float> params(table.total(), -1.0f), m(table.total()), v(table.total());
    const bool with_optim = !(flags & 2);
    try {
        (void)trt::read_checkpoint(dir, table, params.data(), with_optim ? m.data() : nullptr,
                                   with_optim ? v.data() : nullptr);
        const trt::ParamTensor& wte = table.at(trt::Slot::TokenEmbedding);
        for (size_t i = wte.offset + wte.numel; i < wte.offset + wte.numel + wte.padding; ++i)
            if (params[i] != 0.0f) fuzz::die("wte padding rows are not zero after read_checkpoint");
        // What a resuming session does next (NonFinite is the clean refusal).
        trt::require_finite(table, params.data(), "model.safetensors", "fuzzing");
        if (with_optim) trt::require_finite(table, v.data(), "optimizer v", "fuzzing");
    } catch (const trt::Error& e) {
        fuzz::refused("read_checkpoint", e);
    }

    if (flags & 4) {
        try {
            trt::export_checkpoint_hf(dir, out, (flags & 8) ? trt::ExportDType::BF16
                                                            : trt::ExportDType::F32);
        } catch (const trt::Error& e) {
            fuzz::refused("export_checkpoint_hf", e);
        }
    }
    if (flags & 16) {
        fuzz::write_file(run + "/latest", parts.size() > 4 && !(flags & 1) ? parts[4] : "ckpt\n");
        try {
            (void)trt::latest_checkpoint(run);
            (void)trt::resolve_checkpoint(run);
        } catch (const trt::Error& e) {
            fuzz::refused("resolve_checkpoint", e);
        }
    }
    return 0;
}
