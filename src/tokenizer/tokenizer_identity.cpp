// Tokenizer identities (tokenizer_identity.h).
#include "tokenizer/tokenizer_identity.h"

#include "core/error.h"
#include "io/sha256.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"

namespace trt::tok {
namespace {

// Changes only if the content's layout does: every digest recorded before would then differ.
constexpr const char* kContentTag = "trainrt-tokenizer-identity 1";

std::string digest_of(const std::string& content) {
    return "sha256:" + sha256_hex(content.data(), content.size());
}

}  // namespace

std::string TokenizerIdentity::short_digest() const {
    const size_t colon = digest.find(':');
    return colon == std::string::npos ? digest.substr(0, 12)
                                      : digest.substr(0, colon + 1 + 12);
}

std::string TokenizerIdentity::describe() const {
    return cat(kind, source.empty() ? "" : cat(" '", source, "'"), " (vocab ", vocab_size, ", ",
               short_digest(), ")");
}

IdentityContent::IdentityContent(std::string_view kind) {
    bytes(kContentTag);
    bytes(kind);
}

void IdentityContent::u32(uint32_t v) {
    for (int i = 0; i < 4; i++) text_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void IdentityContent::bytes(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    text_.append(s);
}

TokenizerIdentity bytes_identity() {
    IdentityContent c(kBytesKind);
    c.u32(256);  // ids 0..255, each its byte
    return {kBytesKind, digest_of(c.take()), 256, ""};
}

TokenizerIdentity identity_of(const Tokenizer& tokenizer, const std::string& source) {
    const char* kind =
        tokenizer.format() == TokenizerFormat::SentencePiece ? kSentencePieceKind : kHfBpeKind;
    return {kind, digest_of(tokenizer.identity_content()),
            static_cast<int64_t>(tokenizer.id_limit()), source};
}

TokenizerIdentity load_tokenizer_identity(const std::string& path, const std::string& who) {
    const TokenizerFiles files = find_tokenizer_files(path, who);
    return identity_of(Tokenizer::from_file(files.path), path);
}

}  // namespace trt::tok
