// The BPE model of a Hugging Face tokenizer.json (model.type "BPE"): a vocabulary of token
// strings and the ranked merges that build tokens from pairs. Over the byte-level alphabet
// (GPT-2, Llama 3), or over characters (the SentencePiece-style conversions: Llama 2, Gemma),
// where a character outside the vocabulary becomes its UTF-8 bytes as <0xNN> tokens
// (byte_fallback) or the unknown token.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace trt::tok {

class BpeModel {
public:
    using Vocab = std::unordered_map<std::string, uint32_t>;
    using Merges = std::vector<std::pair<std::string, std::string>>;

    struct Options {
        bool byte_level = true;  // pieces are bytes of the byte-level alphabet; else characters
        // A piece that is a whole vocabulary entry is that token, whatever the merges would
        // build (Llama 3).
        bool ignore_merges = false;
        // Characters only: a character with no token becomes its bytes' <0xNN> tokens (when
        // all are in the vocabulary), else unk_token (an error when there is none).
        bool byte_fallback = false;
        std::string unk_token;
        bool fuse_unk = false;  // consecutive unknown characters give one unk_token
    };

    BpeModel() = default;
    // merges in priority order (rank 0 first). Throws Error(Format) naming `source` when a merge
    // has no token, or (byte-level) a byte of the alphabet has none, or unk_token is not in
    // the vocabulary.
    BpeModel(Vocab vocab, const Merges& merges, const Options& options, const std::string& source);
    // merges in priority order (rank 0 first). ignore_merges: a piece that is a whole vocabulary
    // entry is that token, whatever the merges would build (Llama 3). Throws Error(Format)
    // naming `source` when a merge or a byte of the alphabet has no token.
    BpeModel(Vocab vocab, const Merges& merges, bool ignore_merges, const std::string& source);

    // Appends the ids of one pre-tokenized piece (its raw bytes; valid UTF-8 in characters
    // mode). Characters mode: Error(InvalidArgument) for a character that neither a token,
    // byte_fallback nor unk_token can stand for.
    void encode(std::string_view piece, std::vector<uint32_t>& out) const;

    const Vocab& vocab() const { return vocab_; }
    bool ignore_merges() const { return options_.ignore_merges; }
    const Options& options() const { return options_; }
    // The merges as (left id, right id), best rank first; a repeated pair only once (it never
    // applies at its later rank), so files that differ only by such repeats list the same.
    std::vector<std::pair<uint32_t, uint32_t>> merges_in_order() const;

private:
    static constexpr size_t kShortPiece = 32;  // symbols: above it, merge_long
    static constexpr uint32_t kDead = 0xFFFFFFFFu;  // a symbol merged into its left neighbour
    // Merges the symbols (token ids) of one piece and appends the result.
    void merge(std::vector<uint32_t>& sym, std::vector<uint32_t>& out) const;
    void merge_short(uint32_t* sym, size_t n, std::vector<uint32_t>& out) const;
    void merge_long(std::vector<uint32_t>& id, std::vector<uint32_t>& out) const;
    void encode_chars(std::string_view piece, std::vector<uint32_t>& out) const;

    struct Merge {
        uint32_t rank;
        uint32_t merged;  // id of the token left+right
    };
    static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }

    Vocab vocab_;
    std::unordered_map<uint64_t, Merge> merges_;
    std::array<uint32_t, 256> byte_token_{};  // byte-level: each byte's one-character token;
                                              // characters: each <0xNN> token, or kNone
    static constexpr uint32_t kNone = 0xFFFFFFFEu;
    uint32_t unk_id_ = kNone;
    Options options_;
};

}  // namespace trt::tok
