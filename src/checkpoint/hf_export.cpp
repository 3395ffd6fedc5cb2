// Hugging Face export: model.safetensors + config.json that GPT2LMHeadModel.from_pretrained
// loads directly (docs/FORMATS.md §2).
#include <sys/stat.h>

#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_internal.h"
#include "core/error.h"
#include "io/fs_util.h"

namespace trt {

using namespace ckpt;

void export_hf(const std::string& out_dir, const ParamTable& table, const float* params,
               ExportDType dtype) {
    if (out_dir.empty()) fail(Status::InvalidArgument, "export_hf: empty output directory");
    if (!params) fail(Status::InvalidArgument, "export_hf '", out_dir, "': params is null");
    make_dirs(out_dir);
    // BF16 is rounded to nearest-even by write_safetensors (docs/FORMATS.md §2, writer rules).
    const bool bf16 = dtype == ExportDType::BF16;
    write_safetensors(path_join(out_dir, kModelFile),
                      table_tensors(table, params, bf16 ? DType::BF16 : DType::F32),
                      {{"format", "pt"}});
    write_file_atomic(path_join(out_dir, kConfigFile),
                      hf_config_json(table.shape(), bf16 ? "bfloat16" : "float32"));
}

void export_checkpoint_hf(const std::string& checkpoint_dir, const std::string& out_dir,
                          ExportDType dtype) {
    const std::string dir = strip_trailing_slashes(checkpoint_dir);
    // Exporting into the checkpoint itself would replace its model.safetensors and break its
    // manifest (or, in BF16, lose the fp32 master weights).
    struct stat a {}, b {};
    if (::stat(dir.c_str(), &a) == 0 && ::stat(out_dir.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        fail(Status::InvalidArgument, "export_checkpoint_hf: the output directory '", out_dir,
             "' is the checkpoint directory itself; choose another output directory");

    require_checkpoint_files(dir, verify_manifest(dir));
    read_state_file(dir);  // refuses a newer format version
    const GptShape shape = parse_hf_config(
        read_small_file(path_join(dir, kConfigFile), 1 << 20), corrupt_prefix(dir) + kConfigFile);
    const ParamTable table(shape);
    // Checked against the table before the host buffer is allocated.
    const SafetensorsFile model = open_checked_model(dir, table);
    std::vector<float> host(table.total());
    copy_tensors(model, table, host.data());
    export_hf(out_dir, table, host.data(), dtype);
}

}  // namespace trt
