// A Hugging Face tokenizer.json with a BPE model: the byte-level family (GPT-2, Llama 3, Qwen2,
// SmolLM-style) and the SentencePiece-style conversions (Llama 2, Mistral, Gemma: BPE over
// characters with byte_fallback). Its added (special) tokens, normalizer (normalizers.h),
// pre-tokenizer (pre_tokenizers.h), BPE model (bpe.h) and decoder (decoders.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_token_matcher.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoders.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_model.h"

namespace trt::tok {

struct AddedToken {
    uint32_t id = 0;
    std::string content;
    bool special = false;
};

class HfBpeTokenizer final : public TokenizerModel {
public:
    // From the text of a tokenizer.json (`source` names it in errors). Anything outside what
    // this class implements (another model type, a normalizer, an unknown regex...) is refused
    // with Error(Format) or Error(Unsupported) naming the field and its value.
    static std::shared_ptr<const HfBpeTokenizer> from_json(std::string_view text,
                                                           const std::string& source);

    // An added token's content in the text (as written, not normalized) becomes its id.
    std::vector<uint32_t> encode(std::string_view text) const override;
    std::string decode(const std::vector<uint32_t>& ids) const override;
    uint32_t id_limit() const override { return static_cast<uint32_t>(token_of_id_.size()); }
    bool find(std::string_view token, uint32_t& id) const override;
    std::string eos_token() const override { return ""; }  // tokenizer_config.json says
    // ByteLevel's add_prefix_space gives each encode() call's text a leading space, so a text
    // encoded in pieces differs from the text encoded whole; so do the other pipelines'
    // prefixes (Prepend, Metaspace) and pieces that run across lines.
    bool splits_at_line_starts() const override { return fast_ && !add_prefix_space_; }
    std::string identity_content() const override;
    VocabTable vocab_table() const override;

private:
    // at_start: text begins the string given to encode.
    void encode_plain(std::string_view text, bool at_start, std::vector<uint32_t>& out) const;
    void encode_piece(std::string_view piece, std::vector<uint32_t>& out) const;

    // Identifies this tokenizer's entries in the per-thread piece cache (hf_bpe_tokenizer.cpp).
    uint64_t cache_key_ = 0;
    BpeModel bpe_;
    std::vector<AddedToken> added_;
    AddedTokenMatcher added_matcher_;       // finds added_'s contents in a text
    std::vector<std::string> token_of_id_;  // "" for ids nothing uses
    std::vector<uint8_t> id_is_added_;      // decode added tokens as their text
    Normalizer normalizer_;  // on the text between added tokens
    PreTokenizer pre_;
    Decoder decoder_;
    // The byte-level layouts of the fast scanners (PreTokenizer::fast_rule): rule_ and
    // add_prefix_space_ cut the text without the general pipeline.
    bool fast_ = false;
    SplitRule rule_ = SplitRule::Gpt2;
    bool add_prefix_space_ = false;
};

}  // namespace trt::tok
