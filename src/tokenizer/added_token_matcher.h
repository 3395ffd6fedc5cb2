// Finds a tokenizer's added tokens in a text in time linear in the text, however many added
// tokens there are (Qwen and Llama 3 have hundreds; a tokenizer.json may have tens of
// thousands). The cut is the one Hugging Face's tokenizers make: scanning left to right, at
// each position the longest added token that starts there is taken, and the scan goes on
// after it (leftmost, then longest).
//
// How: an Aho-Corasick automaton over the reversed tokens, run over the text backwards, says
// at each position the longest token that *starts* there (it is the longest token ending there
// in the reversed text); a forward pass then takes the leftmost ones that do not overlap.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trt::tok {

class AddedTokenMatcher {
public:
    struct Match {
        size_t start;     // byte offset in the text
        uint32_t token;   // index into the tokens the matcher was built from
    };

    AddedTokenMatcher() = default;
    // tokens: non-empty strings; where two are equal the first one's index is reported.
    explicit AddedTokenMatcher(const std::vector<std::string>& tokens);

    // The matches a left-to-right scan takes, in text order, none overlapping.
    std::vector<Match> find_all(std::string_view text) const;

private:
    static constexpr int32_t kNone = -1;
    struct Node {
        int32_t fail = 0;        // the node of the longest proper suffix in the trie
        int32_t ends = kNone;    // the token whose (reversed) text this node spells, if any
        int32_t longest = kNone; // the longest token ending here: `ends`, or down the fail chain
    };
    int32_t child(int32_t node, unsigned char byte) const;  // kNone when there is no edge
    int32_t step(int32_t node, unsigned char byte) const;   // the automaton's transition

    std::vector<Node> nodes_;  // nodes_[0]: the root
    // Edges keyed (node << 8 | byte), sorted: one table, searched by binary search.
    std::vector<std::pair<uint64_t, int32_t>> edges_;
    std::array<int32_t, 256> root_next_{};  // the root's transitions, dense: most bytes stop there
    std::vector<size_t> lengths_;           // of each token
};

}  // namespace trt::tok
