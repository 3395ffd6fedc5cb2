// find_tokenizer_files / copy_tokenizer_files (tokenizer_files.h).
#include "tokenizer/tokenizer_files.h"

#include <filesystem>

#include "core/error.h"
#include "io/fs_util.h"

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
             "Face tokenizer.json, or a model folder holding one)");
    if (fs::is_directory(path, ec)) {
        f.tokenizer_json = (fs::path(path) / "tokenizer.json").string();
        if (!is_file(f.tokenizer_json))
            fail(Status::Io, who, ": the folder ", path, " holds no tokenizer.json (this library "
                 "reads Hugging Face tokenizer.json files)");
    } else {
        f.tokenizer_json = path;
    }
    const fs::path dir = fs::path(f.tokenizer_json).parent_path();
    for (const char* name : kCompanions) {
        const std::string p = (dir / name).string();
        if (!is_file(p)) continue;
        f.companions.push_back(p);
        if (std::string(name) == "tokenizer_config.json") f.tokenizer_config = p;
    }
    return f;
}

void copy_tokenizer_files(const TokenizerFiles& files, const std::string& out_dir) {
    write_file_atomic((fs::path(out_dir) / "tokenizer.json").string(),
                      read_small_file(files.tokenizer_json, kMaxTokenizerFileBytes));
    for (const std::string& p : files.companions)
        write_file_atomic((fs::path(out_dir) / fs::path(p).filename()).string(),
                          read_small_file(p, kMaxTokenizerFileBytes));
}

}  // namespace trt::tok
