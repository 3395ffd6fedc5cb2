// The ids a chat model's reply ends with, as transformers' generate() stops: the model
// folder's generation_config.json "eos_token_id" (a number or a list of them), else the
// tokenizer_config.json "eos_token" (a string, or an AddedToken object's "content") looked
// up in the tokenizer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trt::tok { class Tokenizer; }

namespace trt::chat {

// Error(Format) naming the file for a value of another shape, Error(InvalidArgument) when the
// folder names none or an id is outside the tokenizer's.
std::vector<int32_t> end_of_turn_ids(const std::string& folder, const tok::Tokenizer& tokenizer);

}  // namespace trt::chat
