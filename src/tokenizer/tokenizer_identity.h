// A tokenizer's identity: what it does, not how its file is written. prepare records it in
// the folder's prepare.json (docs/FORMATS.md §1, "The manifest") and a session compares the
// shards', data.tokenizer's and the model folder's (data/tokenizer_agreement.h), so data
// tokenized by one BPE is never trained with another's meaning of the ids.
//
// The digest is SHA-256 of the tokenizer's defining content as loaded (each format's
// TokenizerModel::identity_content): for a tokenizer.json the id -> token table, the added
// tokens (which ids, special or not), the merges in rank order, the normalizer and the
// pre-tokenizer; for a SentencePiece model its pieces with scores and types, the model type
// and the normalizer. A file re-serialised, copied by export, or named by its folder gives the
// same digest; one id or merge changed gives another.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace trt::tok {

class Tokenizer;

// The kinds of tokenizer a manifest names.
inline constexpr const char* kBytesKind = "bytes";  // prepare without --tokenizer: id = byte
inline constexpr const char* kHfBpeKind = "hf-bpe";
inline constexpr const char* kSentencePieceKind = "sentencepiece";

struct TokenizerIdentity {
    std::string kind;        // kBytesKind, kHfBpeKind or kSentencePieceKind
    std::string digest;      // "sha256:" + 64 lower-case hex digits
    int64_t vocab_size = 0;  // ids are below it (256 for bytes)
    std::string source;      // the path it was loaded from, as given ("" for bytes)

    // "sha256:" + the first 12 hex digits: enough to tell tokenizers apart in a message.
    std::string short_digest() const;
    // "hf-bpe 'tok.json' (vocab 512, sha256:0123456789ab)", for messages.
    std::string describe() const;
};

// Two identities are the same tokenizer when their digests are (the digest covers the kind).
inline bool same_tokenizer(const TokenizerIdentity& a, const TokenizerIdentity& b) {
    return a.digest == b.digest;
}

// The defining content, written so that no two different contents read alike: a version tag
// and the kind first, then fields each preceded by its length.
class IdentityContent {
public:
    explicit IdentityContent(std::string_view kind);
    void u32(uint32_t v);  // 4 bytes, little-endian
    void bytes(std::string_view s);  // its length (u32), then the bytes
    std::string take() { return std::move(text_); }

private:
    std::string text_;
};

// Byte-level data (trainrt prepare without --tokenizer): token id = byte value.
TokenizerIdentity bytes_identity();
// The identity of a loaded tokenizer; `source` is recorded as given.
TokenizerIdentity identity_of(const Tokenizer& tokenizer, const std::string& source);
// The identity of the tokenizer a path names (a tokenizer file or a model folder, as
// tokenizer_files.h finds it); errors name `who`.
TokenizerIdentity load_tokenizer_identity(const std::string& path, const std::string& who);

}  // namespace trt::tok
