// BPE encoding of one piece: start from one token per byte, then repeatedly merge the
// adjacent pair of lowest rank (the leftmost of equal pairs first), as HF's BPE does.
#include "tokenizer/bpe.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>

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

std::vector<std::pair<uint32_t, uint32_t>> BpeModel::merges_in_order() const {
    std::vector<std::pair<uint32_t, uint64_t>> by_rank;  // (rank, pair key)
    by_rank.reserve(merges_.size());
    for (const auto& [key, m] : merges_) by_rank.emplace_back(m.rank, key);
    std::sort(by_rank.begin(), by_rank.end());
    std::vector<std::pair<uint32_t, uint32_t>> out;
    out.reserve(by_rank.size());
    for (const auto& [rank, key] : by_rank)
        out.emplace_back(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key));
    return out;
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
    if (piece.size() <= kShortPiece) {
        merge_short(piece, out);
        return;
    }
    merge_long(piece, out);
}

// A short piece: scan all adjacent pairs for the best rank each round (n is small: no heap).
void BpeModel::merge_short(std::string_view piece, std::vector<uint32_t>& out) const {
    uint32_t sym[kShortPiece];
    size_t n = 0;
    for (unsigned char b : piece) sym[n++] = byte_token_[b];
    while (n > 1) {
        uint32_t best_rank = std::numeric_limits<uint32_t>::max(), merged = 0;
        size_t best = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            auto it = merges_.find(pair_key(sym[i], sym[i + 1]));
            if (it != merges_.end() && it->second.rank < best_rank) {
                best_rank = it->second.rank;
                merged = it->second.merged;
                best = i;
            }
        }
        if (best_rank == std::numeric_limits<uint32_t>::max()) break;
        sym[best] = merged;
        for (size_t i = best + 1; i + 1 < n; i++) sym[i] = sym[i + 1];
        n--;
    }
    out.insert(out.end(), sym, sym + n);
}

// A long piece (long words, whitespace runs): symbols in a linked list and candidate pairs in a
// min-heap by (rank, position), so the same merges happen in the same order in O(n log n).
// A popped pair whose symbols have changed since it was pushed is stale and skipped.
void BpeModel::merge_long(std::string_view piece, std::vector<uint32_t>& out) const {
    const size_t n = piece.size();
    std::vector<uint32_t> id(n);
    std::vector<int64_t> prev(n), next(n);
    for (size_t i = 0; i < n; i++) {
        id[i] = byte_token_[static_cast<unsigned char>(piece[i])];
        prev[i] = static_cast<int64_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<int64_t>(i + 1) : -1;
    }
    struct Candidate {
        uint32_t rank;
        int64_t left;
        uint32_t left_id, right_id;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : left > o.left;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    const auto push = [&](int64_t left) {
        if (left < 0 || next[left] < 0) return;
        const uint32_t a = id[left], b = id[next[left]];
        auto it = merges_.find(pair_key(a, b));
        if (it != merges_.end()) heap.push({it->second.rank, left, a, b});
    };
    for (size_t i = 0; i + 1 < n; i++) push(static_cast<int64_t>(i));
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        const int64_t right = next[c.left];
        if (id[c.left] != c.left_id || right < 0 || id[right] != c.right_id) continue;  // stale
        id[c.left] = merges_.find(pair_key(c.left_id, c.right_id))->second.merged;
        id[right] = kDead;
        next[c.left] = next[right];
        if (next[right] >= 0) prev[next[right]] = c.left;
        push(prev[c.left]);
        push(c.left);
    }
    for (int64_t i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
}

}  // namespace trt::tok
