// A Hugging Face tokenizer.json of the byte-level BPE family (GPT-2, Llama 3, Qwen2,
// SmolLM-style): its added (special) tokens, pre-tokenizer regex, BPE model and ByteLevel
// decoder. Immutable once loaded; encode and decode may run on many threads at once.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"

namespace trt::tok {

struct AddedToken {
    uint32_t id = 0;
    std::string content;
    bool special = false;
};

class Tokenizer {
public:
    // From a tokenizer.json file, or its text (`source` names it in errors). Anything outside
    // what this class implements (another model type, a normalizer, an unknown regex...) is
    // refused with Error(Format) or Error(Unsupported) naming the field and its value.
    static Tokenizer from_file(const std::string& path);
    static Tokenizer from_json(std::string_view text, const std::string& source);

    // The ids of text (valid UTF-8, else Error(InvalidArgument) with the byte offset). No
    // special tokens are added; an added token's content in the text becomes its id.
    std::vector<uint32_t> encode(std::string_view text) const;
    // The text of ids (each below id_limit(), else Error(InvalidArgument)).
    std::string decode(const std::vector<uint32_t>& ids) const;

    uint32_t id_limit() const { return static_cast<uint32_t>(token_of_id_.size()); }  // max id + 1
    // The id of a token (vocabulary entry or added token), if there is one.
    bool find(std::string_view token, uint32_t& id) const;
    const std::vector<AddedToken>& added_tokens() const { return added_; }
    // ByteLevel's add_prefix_space: each encode() call's text gets a leading space, so a text
    // encoded in pieces differs from the text encoded whole.
    bool adds_prefix_space() const { return add_prefix_space_; }

private:
    void encode_plain(std::string_view text, std::vector<uint32_t>& out) const;

    // Identifies this tokenizer's entries in the per-thread piece cache (tokenizer.cpp); a
    // copy shares them (same vocabulary and merges).
    uint64_t cache_key_ = 0;
    BpeModel bpe_;
    std::vector<AddedToken> added_;
    std::vector<std::string> token_of_id_;  // "" for ids nothing uses
    std::vector<uint8_t> id_is_added_;      // decode added tokens as their text
    std::array<uint8_t, 256> added_first_byte_{};  // a byte some added token starts with
    SplitRule rule_ = SplitRule::Gpt2;
    bool add_prefix_space_ = false;
};

}  // namespace trt::tok
