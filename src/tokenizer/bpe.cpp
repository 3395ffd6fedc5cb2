// BPE encoding of one piece: start from one token per byte, then repeatedly merge the
// adjacent pair of lowest rank (the leftmost of equal pairs first), as HF's BPE does.
#include "tokenizer/bpe.h"

#include <limits>

#include "core/error.h"
#include "tokenizer/byte_level.h"

namespace trt::tok {

BpeModel::BpeModel(Vocab vocab, const Merges& merges, bool ignore_merges,
                   const std::string& source)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges) {
    for (int b = 0; b < 256; b++) {
        std::string ch;
        const char byte = static_cast<char>(b);
        to_byte_chars(std::string_view(&byte, 1), ch);
        auto it = vocab_.find(ch);
        if (it == vocab_.end())
            fail(Status::Format, source, ": model.vocab has no token for byte ", b, " ('", ch,
                 "'); a byte-level BPE vocabulary holds all 256");
        byte_token_[b] = it->second;
    }
    merges_.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); r++) {
        const auto& [left, right] = merges[r];
        const auto a = vocab_.find(left), b = vocab_.find(right),
                   m = vocab_.find(left + right);
        if (a == vocab_.end() || b == vocab_.end() || m == vocab_.end())
            fail(Status::Format, source, ": model.merges[", r, "] (\"", left, " ", right,
                 "\") refers to a token missing from model.vocab (\"",
                 a == vocab_.end() ? left : b == vocab_.end() ? right : left + right, "\")");
        // A repeated pair keeps its first (best) rank.
        merges_.emplace(pair_key(a->second, b->second),
                        Merge{static_cast<uint32_t>(r), m->second});
    }
}

void BpeModel::encode(std::string_view piece, std::vector<uint32_t>& out) const {
    if (piece.empty()) return;
    if (ignore_merges_) {
        std::string chars;
        to_byte_chars(piece, chars);
        if (auto it = vocab_.find(chars); it != vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    std::vector<uint32_t> sym;
    sym.reserve(piece.size());
    for (unsigned char b : piece) sym.push_back(byte_token_[b]);
    while (sym.size() > 1) {
        uint32_t best_rank = std::numeric_limits<uint32_t>::max(), merged = 0;
        size_t best = 0;
        for (size_t i = 0; i + 1 < sym.size(); i++) {
            auto it = merges_.find(pair_key(sym[i], sym[i + 1]));
            if (it != merges_.end() && it->second.rank < best_rank) {
                best_rank = it->second.rank;
                merged = it->second.merged;
                best = i;
            }
        }
        if (best_rank == std::numeric_limits<uint32_t>::max()) break;
        sym[best] = merged;
        sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    }
    out.insert(out.end(), sym.begin(), sym.end());
}

}  // namespace trt::tok
