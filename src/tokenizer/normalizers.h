// The normalizer of a tokenizer.json: what is done to the text between added tokens before it
// is pre-tokenized. NFC (Qwen), Replace with a string pattern and Prepend (the SentencePiece-
// style conversions: Llama 2 prepends "▁" and turns spaces into "▁"), and Sequences of them.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "io/json_min.h"
#include "tokenizer/json_reader.h"

namespace trt::tok {

class Normalizer {
public:
    Normalizer() = default;  // changes nothing
    // From tokenizer.json's "normalizer" (nullptr: none). Other types are refused with
    // Error(Unsupported) naming the path.
    static Normalizer from_json(const JsonReader& r, const json::Value* v, const std::string& path);

    bool empty() const { return steps_.empty(); }
    bool is_nfc_only() const { return steps_.size() == 1 && steps_[0].kind == Kind::Nfc; }
    std::string apply(std::string_view text) const;
    // A canonical description for the tokenizer's identity ("" when empty).
    std::string describe() const;

private:
    enum class Kind { Nfc, Replace, Prepend };
    struct Step {
        Kind kind;
        std::string from, to;  // Replace: every `from` becomes `to`; Prepend: `to` goes first
    };
    void read(const JsonReader& r, const json::Value& v, const std::string& path);
    std::vector<Step> steps_;  // in order, Sequences flattened
};

// Every occurrence of `from` (non-empty) in text replaced by `to`, left to right.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

}  // namespace trt::tok
