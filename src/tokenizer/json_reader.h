// Field access for tokenizer.json with errors that name the file and the JSON path: shared by
// the loader (hf_bpe_tokenizer.cpp) and the readers of its pipeline parts (normalizers,
// pre-tokenizers, decoders), so every refusal reads alike.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "core/error.h"
#include "io/json_min.h"

namespace trt::tok {

struct JsonReader {
    const std::string& source;

    [[noreturn]] void bad(const std::string& path, const std::string& what) const {
        fail(Status::Format, source, ": ", path, " ", what);
    }
    [[noreturn]] void unsupported(const std::string& path, const std::string& what) const {
        fail(Status::Unsupported, source, ": ", path, " ", what,
             " (this library reads BPE tokenizer.json files: byte-level, as GPT-2's and Llama "
             "3's, or SentencePiece-style with byte_fallback, as Llama 2's and Gemma's)");
    }
    const json::Value& object(const json::Value& v, const std::string& path) const {
        if (!v.is_object()) bad(path, std::string("must be an object, not ") + v.kind_name());
        return v;
    }
    const json::Value* member(const json::Value& obj, const char* key) const {
        const json::Value* v = obj.find(key);
        return v && v->kind != json::Value::Kind::Null ? v : nullptr;
    }
    std::string string(const json::Value& v, const std::string& path) const {
        if (!v.is_string()) bad(path, std::string("must be a string, not ") + v.kind_name());
        return v.s;
    }
    // obj[key] as a string, or fallback when it is absent or null.
    std::string string_or(const json::Value& obj, const char* key, const std::string& fallback,
                          const std::string& path) const {
        const json::Value* v = member(obj, key);
        return v ? string(*v, path + "." + key) : fallback;
    }
    // The "type" of a pipeline part ("" when absent).
    std::string type(const json::Value& obj, const std::string& path) const {
        return string_or(object(obj, path), "type", "", path);
    }
    bool boolean(const json::Value& obj, const char* key, bool fallback,
                 const std::string& path) const {
        const json::Value* v = member(obj, key);
        if (!v) return fallback;
        if (v->kind != json::Value::Kind::Bool) bad(path + "." + key, "must be true or false");
        return v->b;
    }
    uint32_t count(const json::Value& obj, const char* key, uint32_t fallback,
                   const std::string& path) const {
        const json::Value* v = member(obj, key);
        if (!v) return fallback;
        uint64_t n = 0;
        if (!v->get_u64(n) || n > std::numeric_limits<int32_t>::max())
            bad(path + "." + key, "must be a count (an integer from 0 to 2147483647)");
        return static_cast<uint32_t>(n);
    }
    // A {"String": ...} pattern's text (Replace normalizers and decoders, Split); a
    // {"Regex": ...} one is refused here (only Split reads regexes).
    std::string literal_pattern(const json::Value& obj, const std::string& path) const {
        const json::Value* p = member(obj, "pattern");
        if (!p) bad(path + ".pattern", "is missing");
        object(*p, path + ".pattern");
        if (const json::Value* str = member(*p, "String")) {
            std::string text = string(*str, path + ".pattern.String");
            if (text.empty()) bad(path + ".pattern.String", "is empty");
            return text;
        }
        if (member(*p, "Regex"))
            unsupported(path + ".pattern", "is a Regex; only a String pattern is supported here");
        bad(path + ".pattern", "must hold a \"String\" or a \"Regex\"");
    }
    uint32_t id(const json::Value& v, const std::string& path) const {
        int64_t i = -1;
        if (!v.get_i64(i) || i < 0 || i > std::numeric_limits<int32_t>::max())
            bad(path, "must be a token id (an integer from 0 to 2147483647)");
        return static_cast<uint32_t>(i);
    }
};

}  // namespace trt::tok
