// find_tokenizer_files / copy_tokenizer_files (tokenizer_files.h).
#include "tokenizer/tokenizer_files.h"

#include <filesystem>

#include "core/error.h"
#include "io/fs_util.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace trt::tok {

namespace {

namespace fs = std::filesystem;

// Larger than any tokenizer.json in use (Qwen2's is ~7 MB, Llama 3's ~9 MB).
constexpr size_t kMaxTokenizerFileBytes = size_t{256} << 20;
constexpr const char* kCompanions[] = {"tokenizer_config.json", "special_tokens_map.json"};

// Symbolic links are followed: the Hugging Face cache's snapshot folders are made of them.
bool is_file(const std::string& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}

}  // namespace

TokenizerFiles find_tokenizer_files(const std::string& path, const std::string& who) {
    TokenizerFiles f;
    std::error_code ec;
    if (!fs::exists(path, ec))
        fail(Status::Io, who, ": the tokenizer '", path, "' does not exist (expected a Hugging "
             "Face tokenizer.json, a SentencePiece tokenizer.model, or a model folder holding "
             "one)");
    if (fs::is_directory(path, ec)) {
        const std::string json = (fs::path(path) / "tokenizer.json").string();
        const std::string model = (fs::path(path) / "tokenizer.model").string();
        if (is_file(model) && (sentencepiece_supported() || !is_file(json)))
            f.path = model;
        else if (is_file(json))
            f.path = json;
        else
            fail(Status::Io, who, ": the folder ", path, " holds no tokenizer.json or "
                 "tokenizer.model");
    } else {
        f.path = path;
    }
    // The first bytes tell the format (a missing or unreadable file fails here, by name).
    const std::string head = read_file_head(f.path, 64);
    f.export_name = detect_tokenizer_format(head, f.path) == TokenizerFormat::SentencePiece
                        ? "tokenizer.model"
                        : "tokenizer.json";
    const fs::path dir = fs::path(f.path).parent_path();
    for (const char* name : kCompanions) {
        const std::string p = (dir / name).string();
        if (!is_file(p)) continue;
        f.companions.push_back(p);
        if (std::string(name) == "tokenizer_config.json") f.tokenizer_config = p;
    }
    return f;
}

void copy_tokenizer_files(const TokenizerFiles& files, const std::string& out_dir) {
    write_file_atomic((fs::path(out_dir) / files.export_name).string(),
                      read_small_file(files.path, kMaxTokenizerFileBytes));
    for (const std::string& p : files.companions)
        write_file_atomic((fs::path(out_dir) / fs::path(p).filename()).string(),
                          read_small_file(p, kMaxTokenizerFileBytes));
}

}  // namespace trt::tok
