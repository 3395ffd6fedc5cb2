// C API: checkpoints and Hugging Face export — save, load, latest, config_from_checkpoint,
// session_export, checkpoint_export.
#include <filesystem>
#include <optional>

#include "capi/barrier.h"
#include "capi/handles.h"
#include "chat/end_of_turn.h"
#include "checkpoint/checkpoint.h"
#include "runtime/checkpoint_export.h"
#include "runtime/gguf_export.h"
#include "tokenizer/tokenizer_files.h"

using namespace trt;
using capi::guarded;
using capi::require;

namespace {

// Export writes into out_dir: "" is not a folder (it would mean the current directory).
void require_nonempty(const char* text, const char* function, const char* argument) {
    if (*text == '\0')
        fail(Status::InvalidArgument, function, ": ", argument,
             " is empty; pass the folder to write into");
}

ExportDType export_dtype(int32_t dtype, const char* function) {
    if (dtype == TRAINRT_DTYPE_F32) return ExportDType::F32;
    if (dtype == TRAINRT_DTYPE_BF16) return ExportDType::BF16;
    fail(Status::InvalidArgument, function, ": dtype = ", dtype,
         " is not TRAINRT_DTYPE_F32 (0) or TRAINRT_DTYPE_BF16 (1)");
}

}  // namespace

extern "C" {

TRAINRT_API trainrt_status trainrt_session_save(char* path_buf, size_t cap, size_t* needed,
                                                trainrt_session* session, const char* dir) {
    return guarded("trainrt_session_save", [&] {
        require(session, "trainrt_session_save", "session");
        if (path_buf == nullptr && cap != 0)
            fail(Status::InvalidArgument, "trainrt_session_save: path_buf is NULL but cap is ",
                 cap);
        capi::BusyGuard busy(session->busy, "trainrt_session_save");
        const std::string written = session->session->save(dir ? dir : "");
        capi::copy_string(path_buf, cap, needed, written, "trainrt_session_save");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_load(trainrt_session* session, const char* path) {
    return guarded("trainrt_session_load", [&] {
        require(session, "trainrt_session_load", "session");
        require(path, "trainrt_session_load", "path");
        capi::BusyGuard busy(session->busy, "trainrt_session_load");
        session->session->load(path);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_checkpoint_latest(char* buf, size_t cap, size_t* needed,
                                                     const char* out_dir) {
    return guarded("trainrt_checkpoint_latest", [&] {
        require(out_dir, "trainrt_checkpoint_latest", "out_dir");
        capi::copy_string(buf, cap, needed, latest_checkpoint(out_dir),
                          "trainrt_checkpoint_latest");
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_config_from_checkpoint(trainrt_config** out,
                                                          const char* path) {
    return guarded("trainrt_config_from_checkpoint", [&] {
        require(out, "trainrt_config_from_checkpoint", "out");
        require(path, "trainrt_config_from_checkpoint", "path");
        const std::string dir = resolve_checkpoint(path);
        const CheckpointState st = read_checkpoint_state(dir);
        // Paths in the stored config are already absolute (resolved when it was loaded).
        Config config = Config::from_string(st.config_toml, "", dir + "/state.json");
        *out = new trainrt_config{std::move(config), LogSink{}, nullptr, {}};
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_export(trainrt_session* session, const char* out_dir,
                                                  int32_t dtype) {
    return guarded("trainrt_session_export", [&] {
        require(session, "trainrt_session_export", "session");
        require(out_dir, "trainrt_session_export", "out_dir");
        require_nonempty(out_dir, "trainrt_session_export", "out_dir");
        const ExportDType d = export_dtype(dtype, "trainrt_session_export");
        capi::BusyGuard busy(session->busy, "trainrt_session_export");
        session->session->export_hf(out_dir, d);
        return TRAINRT_OK;
    });
}

TRAINRT_API trainrt_status trainrt_session_export_adapter(trainrt_session* session,
                                                          const char* out_dir, int32_t dtype) {
    return guarded("trainrt_session_export_adapter", [&] {
        require(session, "trainrt_session_export_adapter", "session");
        require(out_dir, "trainrt_session_export_adapter", "out_dir");
        require_nonempty(out_dir, "trainrt_session_export_adapter", "out_dir");
        const ExportDType d = export_dtype(dtype, "trainrt_session_export_adapter");
        capi::BusyGuard busy(session->busy, "trainrt_session_export_adapter");
        session->session->export_adapter(out_dir, d);
        return TRAINRT_OK;
    });
}

namespace {

// trainrt_checkpoint_export and _export_adapter: the checkpoint's export, and (model exports)
// the run's tokenizer, found before anything is written.
trainrt_status export_from_checkpoint(const char* fn, const char* path, const char* out_dir,
                                      int32_t dtype, ExportKind kind) {
    return guarded(fn, [&] {
        require(path, fn, "path");
        require(out_dir, fn, "out_dir");
        require_nonempty(out_dir, fn, "out_dir");
        const ExportDType d = export_dtype(dtype, fn);
        const std::string dir = resolve_checkpoint(path);
        std::optional<tok::TokenizerFiles> files;
        int64_t context = 0;
        export_checkpoint(dir, out_dir, d, kind, [&](const CheckpointState& st) {
            if (kind != ExportKind::Model) return;
            const RunConfig run = Config::from_string(st.config_toml, "", dir + "/state.json").run();
            context = run.model.context_length;
            if (!run.data.tokenizer.empty())
                files = tok::find_tokenizer_files(run.data.tokenizer,
                                                  cat(fn, " (the run's data.tokenizer)"));
        });
        if (files) {
            tok::copy_tokenizer_files(*files, out_dir, context);
            chat::write_generation_config(*files, out_dir);
        }
        return TRAINRT_OK;
    });
}

// trainrt_checkpoint_export_gguf and _gguf_lora: the arguments checked before anything is
// read, the model (adapters merged, with the run's tokenizer) or the adapters alone written,
// and the notes, one line each, into (notes, cap, needed).
trainrt_status export_gguf_file(const char* fn, char* notes, size_t cap, size_t* needed,
                                const char* path, const char* gguf_path, const char* type,
                                bool adapter) {
    return guarded(fn, [&] {
        if (notes == nullptr && cap != 0)
            fail(Status::InvalidArgument, fn, ": notes is NULL but cap is ", cap);
        require(path, fn, "path");
        require(gguf_path, fn, "gguf_path");
        require_nonempty(gguf_path, fn, "gguf_path");
        require(type, fn, "type");
        const gguf::TensorType t = parse_gguf_type(type);
        const std::string dir = resolve_checkpoint(path);
        // general.name: what the user called the file ("my-model.gguf" -> "my-model").
        const std::string name = std::filesystem::path(gguf_path).stem().string();
        GgufExportResult r;
        if (adapter) {
            const CheckpointModel m = read_checkpoint_adapters(dir);
            r = export_gguf_lora(gguf_path, ParamTable(m.spec), m.params.data(), t, name);
        } else {
            const CheckpointModel m = read_checkpoint_model(dir);
            std::optional<tok::TokenizerFiles> files;
            if (!m.run.data.tokenizer.empty())
                files = tok::find_tokenizer_files(m.run.data.tokenizer,
                                                  cat(fn, " (the run's data.tokenizer)"));
            r = export_gguf(gguf_path, ParamTable(m.spec), m.params.data(), t,
                            files ? &*files : nullptr, name);
        }
        std::string text;
        for (const std::string& n : r.notes) text += n + "\n";
        capi::copy_string(notes, cap, needed, text, fn);
        return TRAINRT_OK;
    });
}

}  // namespace

TRAINRT_API trainrt_status trainrt_checkpoint_export(const char* path, const char* out_dir,
                                                     int32_t dtype) {
    return export_from_checkpoint("trainrt_checkpoint_export", path, out_dir, dtype,
                                  ExportKind::Model);
}

TRAINRT_API trainrt_status trainrt_checkpoint_export_adapter(const char* path, const char* out_dir,
                                                             int32_t dtype) {
    return export_from_checkpoint("trainrt_checkpoint_export_adapter", path, out_dir, dtype,
                                  ExportKind::Adapter);
}

TRAINRT_API trainrt_status trainrt_checkpoint_export_gguf(char* notes, size_t cap, size_t* needed,
                                                          const char* path, const char* gguf_path,
                                                          const char* type) {
    return export_gguf_file("trainrt_checkpoint_export_gguf", notes, cap, needed, path, gguf_path,
                            type, /*adapter=*/false);
}

TRAINRT_API trainrt_status trainrt_checkpoint_export_gguf_lora(char* notes, size_t cap,
                                                               size_t* needed, const char* path,
                                                               const char* gguf_path,
                                                               const char* type) {
    return export_gguf_file("trainrt_checkpoint_export_gguf_lora", notes, cap, needed, path,
                            gguf_path, type, /*adapter=*/true);
}

}  // extern "C"
