// A tokenizer, whatever its file format: a Hugging Face tokenizer.json of the byte-level BPE
// family (GPT-2, Llama 3, Qwen2, SmolLM-style; hf_bpe_tokenizer.h) or a SentencePiece model
// (tokenizer.model: Llama 2, TinyLlama; sentencepiece_tokenizer.h). The format is told by
// the file's content, not its name. Immutable once loaded; copies share the loaded model;
// encode and decode may run on many threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_model.h"

namespace trt::tok {

enum class TokenizerFormat { HfJson, SentencePiece };

// The format of a tokenizer file from its first bytes: JSON ('{' after any whitespace) or a
// serialized SentencePiece ModelProto (its first field, the pieces). Error(Format) naming
// `source` for anything else (a tiktoken file, say).
TokenizerFormat detect_tokenizer_format(std::string_view head, const std::string& source);

class Tokenizer {
public:
    // From a tokenizer.json or a SentencePiece .model file. Anything outside what this library
    // implements is refused with Error(Format) or Error(Unsupported) naming the file, the field
    // and its value.
    static Tokenizer from_file(const std::string& path);
    // From a tokenizer.json's text (`source` names it in errors).
    static Tokenizer from_json(std::string_view text, const std::string& source);

    // The ids of text (valid UTF-8, else Error(InvalidArgument) with the byte offset). No
    // BOS/EOS are added.
    std::vector<uint32_t> encode(std::string_view text) const;
    // The text of ids (each below id_limit(), else Error(InvalidArgument)).
    std::string decode(const std::vector<uint32_t>& ids) const;

    uint32_t id_limit() const { return model_->id_limit(); }  // max id + 1
    // The id of a token (vocabulary entry, added or control token), if there is one.
    bool find(std::string_view token, uint32_t& id) const { return model_->find(token, id); }
    // The end-of-text token the file itself names (SentencePiece's eos piece), or "".
    std::string eos_token() const { return model_->eos_token(); }
    // See TokenizerModel::splits_at_line_starts.
    bool splits_at_line_starts() const { return model_->splits_at_line_starts(); }
    TokenizerFormat format() const { return format_; }
    // See TokenizerModel::identity_content (tokenizer_identity.h digests it).
    std::string identity_content() const { return model_->identity_content(); }
    // See TokenizerModel::vocab_table.
    VocabTable vocab_table() const { return model_->vocab_table(); }

private:
    Tokenizer(std::shared_ptr<const TokenizerModel> model, TokenizerFormat format)
        : model_(std::move(model)), format_(format) {}

    std::shared_ptr<const TokenizerModel> model_;
    TokenizerFormat format_;
};

}  // namespace trt::tok
