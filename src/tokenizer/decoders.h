// The decoder of a tokenizer.json: how the tokens of a list of ids become text again.
// ByteLevel (GPT-2's byte alphabet), and the SentencePiece-style steps: Replace with a String
// pattern, ByteFallback (<0xNN> tokens back to bytes), Fuse, Strip, Metaspace; and Sequences.
#pragma once
#include <string>
#include <vector>

#include "io/json_min.h"
#include "tokenizer/json_reader.h"
#include "tokenizer/metaspace.h"

namespace trt::tok {

class Decoder {
public:
    Decoder() = default;  // none: the tokens joined as they are
    // From tokenizer.json's "decoder" (nullptr: none). Refuses, naming the path, what it does
    // not implement.
    static Decoder from_json(const JsonReader& r, const json::Value* v, const std::string& path);

    bool empty() const { return steps_.empty(); }
    // Just ByteLevel: the tokenizer's own byte-level path decodes (hf_bpe_tokenizer.cpp).
    bool is_byte_level_only() const {
        return steps_.size() == 1 && steps_[0].kind == Kind::ByteLevel;
    }
    // The tokens' texts, through the steps, joined.
    std::string decode(std::vector<std::string> tokens) const;
    // A canonical description for the tokenizer's identity.
    std::string describe() const;

private:
    enum class Kind { ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace };
    struct Step {
        Kind kind;
        std::string from, to;       // Replace
        std::string content;        // Strip: the character stripped
        uint32_t start = 0, stop = 0;  // Strip: at most this many from each end
        Metaspace metaspace;
    };
    void read(const JsonReader& r, const json::Value& v, const std::string& path);
    std::vector<Step> steps_;  // in order, Sequences flattened
};

// "<0xNN>" (two upper- or lower-case hex digits) -> the byte; false for any other token.
bool byte_fallback_token(const std::string& token, unsigned char& byte);

}  // namespace trt::tok
