// The ids a chat model's reply ends with, as transformers' generate() stops: the model
// folder's generation_config.json "eos_token_id" (a number or a list of them), else the
// tokenizer_config.json "eos_token" (a string, or an AddedToken object's "content") looked
// up in the tokenizer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trt::tok {
class Tokenizer;
struct TokenizerFiles;
}

namespace trt::chat {

// Error(Format) naming the file for a value of another shape, Error(InvalidArgument) when the
// folder names none or an id is outside the tokenizer's.
std::vector<int32_t> end_of_turn_ids(const std::string& folder, const tok::Tokenizer& tokenizer);

// An export's generation_config.json when the tokenizer's folder has a chat template but no
// generation_config.json of its own (which then travels as it is: tok::copy_tokenizer_files):
// {"eos_token_id": [the end-of-turn ids]}, so the exported model stops where it was trained
// to. Nothing for a folder without a template or without an end-of-turn token.
void write_generation_config(const tok::TokenizerFiles& files, const std::string& out_dir);

}  // namespace trt::chat
