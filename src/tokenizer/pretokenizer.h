// Pre-tokenization of byte-level BPE tokenizers: the regex that cuts text into the pieces BPE
// sees, applied by hand-written scanners that take the regex's alternatives in order
// (leftmost-first) exactly as a backtracking regex engine would. A tokenizer.json names its
// regex as a string; split_rule_for recognises the known ones and refuses the rest.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace trt::tok {

enum class SplitRule {
    // GPT-2 (ByteLevel with use_regex):
    //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    Gpt2,
    // Llama 3 / GPT-4 (cl100k), numbers in groups of up to three:
    //   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
    //   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    Cl100k,
    // The same with single digits (\p{N} instead of \p{N}{1,3}: Qwen2).
    Cl100kSingleDigits,
};

// The rule whose regex `pattern` is (as written in a tokenizer.json), or false.
bool split_rule_for(std::string_view pattern, SplitRule& rule);
// The GPT-2 regex (ByteLevel's own when use_regex is true).
extern const char* const kGpt2Pattern;

// Appends to `pieces` the matches of the rule's regex over text (valid UTF-8), in order. The
// regexes match every character, so the pieces concatenate back to text.
void split(std::string_view text, SplitRule rule, std::vector<std::string_view>& pieces);

}  // namespace trt::tok
