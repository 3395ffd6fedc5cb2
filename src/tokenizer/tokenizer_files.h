// Where a tokenizer's files are. A path names a tokenizer file (tokenizer.json or a
// SentencePiece tokenizer.model), or a model folder holding one; transformers reads companions
// beside it (tokenizer_config.json: the EOS token and chat template; special_tokens_map.json).
// One place for that rule: loading (C API, prepare, sample) and exporting (the tokenizer goes
// into the exported folder) share it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trt::tok {

struct TokenizerFiles {
    std::string path;                         // the file to load
    std::string export_name;                  // its name in a model folder: tokenizer.json or
                                              // tokenizer.model (by content, not by its name)
    std::string tokenizer_config;             // tokenizer_config.json beside it, or ""
    std::vector<std::string> companions;      // tokenizer_config.json, special_tokens_map.json,
                                              // chat_template.jinja, generation_config.json present
};

// In a folder, tokenizer.model (SentencePiece) is preferred to tokenizer.json when both are
// there and this build reads SentencePiece: the tokenizer.json of such a folder (Llama 2,
// Mistral, Gemma) is a conversion of the model, with a normalizer this library does not read.
// Error(Io) naming `who` and the path when the path is missing, or a folder without either.
TokenizerFiles find_tokenizer_files(const std::string& path, const std::string& who);

// Copies the tokenizer into out_dir as export_name (whatever the source file is called),
// with its companions under their own names; each file is written atomically. A
// tokenizer.json with no tokenizer_config.json beside it (`trainrt tokenizer train`'s) gets
// one written, so that transformers' AutoTokenizer loads the folder: tokenizer_config_json.
void copy_tokenizer_files(const TokenizerFiles& files, const std::string& out_dir,
                          int64_t model_max_length);

class Tokenizer;
// The end-of-text token when no tokenizer_config.json names one: the file's own (a
// SentencePiece model's eos piece), else the first of <|endoftext|>, <|end_of_text|>, </s>
// the tokenizer has; "" when none. What `prepare` opens each document with.
std::string default_end_of_text(const Tokenizer& t);

// A tokenizer_config.json for a byte-level BPE tokenizer.json: tokenizer_class
// PreTrainedTokenizerFast, the end-of-text token as bos_token and eos_token (GPT-2's
// convention; left out when it has none) and model_max_length (the model's context).
std::string tokenizer_config_json(const Tokenizer& t, int64_t model_max_length);

}  // namespace trt::tok
