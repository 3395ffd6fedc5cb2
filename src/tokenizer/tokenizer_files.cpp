// find_tokenizer_files / copy_tokenizer_files (tokenizer_files.h).
#include "tokenizer/tokenizer_files.h"

#include <filesystem>

#include "core/error.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace trt::tok {

namespace {

namespace fs = std::filesystem;

// Larger than any tokenizer.json in use (Qwen2's is ~7 MB, Llama 3's ~9 MB).
constexpr size_t kMaxTokenizerFileBytes = size_t{256} << 20;
// The chat template (in tokenizer_config.json, or a file of its own) and the end-of-turn ids
// generation stops at travel with the tokenizer, so an exported fine-tune chats as it trained.
constexpr const char* kCompanions[] = {"tokenizer_config.json", "special_tokens_map.json",
                                       "chat_template.jinja", "generation_config.json"};

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

void copy_tokenizer_files(const TokenizerFiles& files, const std::string& out_dir,
                          int64_t model_max_length) {
    const std::string text = read_small_file(files.path, kMaxTokenizerFileBytes);
    // Without a tokenizer_config.json, AutoTokenizer cannot tell which class reads the
    // folder; SentencePiece folders need more than this one (and come with theirs).
    const bool make_config = files.tokenizer_config.empty() && files.export_name == "tokenizer.json";
    const std::string config =
        make_config ? tokenizer_config_json(Tokenizer::from_json(text, files.path), model_max_length)
                    : std::string();
    write_file_atomic((fs::path(out_dir) / files.export_name).string(), text);
    for (const std::string& p : files.companions)
        write_file_atomic((fs::path(out_dir) / fs::path(p).filename()).string(),
                          read_small_file(p, kMaxTokenizerFileBytes));
    if (make_config)
        write_file_atomic((fs::path(out_dir) / "tokenizer_config.json").string(), config);
}

std::string default_end_of_text(const Tokenizer& t) {
    uint32_t id = 0;
    if (const std::string own = t.eos_token(); !own.empty() && t.find(own, id)) return own;
    for (const char* known : {"<|endoftext|>", "<|end_of_text|>", "</s>"})
        if (t.find(known, id)) return known;
    return "";
}

std::string tokenizer_config_json(const Tokenizer& t, int64_t model_max_length) {
    const std::string eot = default_end_of_text(t);
    std::string j = "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n";
    if (!eot.empty())
        j += "  \"bos_token\": " + json::quote(eot) + ",\n  \"eos_token\": " + json::quote(eot) +
             ",\n";
    j += "  \"model_max_length\": " + std::to_string(model_max_length) + ",\n";
    j += "  \"clean_up_tokenization_spaces\": false\n}\n";
    return j;
}

}  // namespace trt::tok
