// The BPE model of a Hugging Face tokenizer.json (model.type "BPE") over the byte-level
// alphabet: a vocabulary of token strings and the ranked merges that build tokens from pairs.
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

    BpeModel() = default;
    // merges in priority order (rank 0 first). ignore_merges: a piece that is a whole vocabulary
    // entry is that token, whatever the merges would build (Llama 3). Throws Error(Format)
    // naming `source` when a merge or a byte of the alphabet has no token.
    BpeModel(Vocab vocab, const Merges& merges, bool ignore_merges, const std::string& source);

    // Appends the ids of one pre-tokenized piece (its raw bytes).
    void encode(std::string_view piece, std::vector<uint32_t>& out) const;

    const Vocab& vocab() const { return vocab_; }
    bool ignore_merges() const { return ignore_merges_; }
    // The merges as (left id, right id), best rank first; a repeated pair only once (it never
    // applies at its later rank), so files that differ only by such repeats list the same.
    std::vector<std::pair<uint32_t, uint32_t>> merges_in_order() const;

private:
    static constexpr size_t kShortPiece = 32;  // bytes: above it, merge_long
    static constexpr uint32_t kDead = 0xFFFFFFFFu;  // a symbol merged into its left neighbour
    void merge_short(std::string_view piece, std::vector<uint32_t>& out) const;
    void merge_long(std::string_view piece, std::vector<uint32_t>& out) const;

    struct Merge {
        uint32_t rank;
        uint32_t merged;  // id of the token left+right
    };
    static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }

    Vocab vocab_;
    std::unordered_map<uint64_t, Merge> merges_;
    std::array<uint32_t, 256> byte_token_{};  // id of each byte's one-character token
    bool ignore_merges_ = false;
};

}  // namespace trt::tok
