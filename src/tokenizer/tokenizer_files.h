// Where a Hugging Face tokenizer's files are. A path names a tokenizer.json, or a model folder
// holding one; transformers reads companions beside it (tokenizer_config.json: the EOS token
// and chat template; special_tokens_map.json). One place for that rule: loading (C API,
// prepare, sample) and exporting (the tokenizer goes into the exported folder) share it.
#pragma once
#include <string>
#include <vector>

namespace trt::tok {

struct TokenizerFiles {
    std::string tokenizer_json;               // the file to load
    std::string tokenizer_config;             // tokenizer_config.json beside it, or ""
    std::vector<std::string> companions;      // tokenizer_config.json, special_tokens_map.json present
};

// Error(Io) naming `who` and the path when the path is missing, or a folder without a
// tokenizer.json.
TokenizerFiles find_tokenizer_files(const std::string& path, const std::string& who);

// Copies the tokenizer into out_dir as tokenizer.json (whatever the source file is called),
// with its companions under their own names; each file is written atomically.
void copy_tokenizer_files(const TokenizerFiles& files, const std::string& out_dir);

}  // namespace trt::tok
