// BPE encoding of one piece: start from one token per byte, then repeatedly merge the
// adjacent pair of lowest rank (the leftmost of equal pairs first), as HF's BPE does.
#include "tokenizer/bpe.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode_classes.h"

namespace trt::tok {

BpeModel::BpeModel(Vocab vocab, const Merges& merges, bool ignore_merges,
                   const std::string& source)
    : BpeModel(std::move(vocab), merges, Options{true, ignore_merges, false, "", false}, source) {}

BpeModel::BpeModel(Vocab vocab, const Merges& merges, const Options& options,
                   const std::string& source)
    : vocab_(std::move(vocab)), options_(options) {
    for (int b = 0; b < 256; b++) {
        std::string ch;
        if (options_.byte_level) {
            const char byte = static_cast<char>(b);
            to_byte_chars(std::string_view(&byte, 1), ch);
        } else {
            static const char* const hex = "0123456789ABCDEF";
            ch = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
        }
        auto it = vocab_.find(ch);
        if (it == vocab_.end() && options_.byte_level)
            fail(Status::Format, source, ": model.vocab has no token for byte ", b, " ('", ch,
                 "'); a byte-level BPE vocabulary holds all 256");
        byte_token_[b] = it == vocab_.end() ? kNone : it->second;
    }
    if (!options_.byte_level && !options_.unk_token.empty()) {
        auto it = vocab_.find(options_.unk_token);
        if (it == vocab_.end())
            fail(Status::Format, source, ": model.unk_token \"", options_.unk_token,
                 "\" is not in model.vocab");
        unk_id_ = it->second;
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
    if (!options_.byte_level) {
        encode_chars(piece, out);
        return;
    }
    if (options_.ignore_merges) {
        std::string chars;
        to_byte_chars(piece, chars);
        if (auto it = vocab_.find(chars); it != vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    if (piece.size() <= kShortPiece) {
        uint32_t sym[kShortPiece];
        size_t n = 0;
        for (unsigned char b : piece) sym[n++] = byte_token_[b];
        merge_short(sym, n, out);
        return;
    }
    std::vector<uint32_t> sym;
    sym.reserve(piece.size());
    for (unsigned char b : piece) sym.push_back(byte_token_[b]);
    merge_long(sym, out);
}

void BpeModel::merge(std::vector<uint32_t>& sym, std::vector<uint32_t>& out) const {
    if (sym.empty()) return;
    if (sym.size() <= kShortPiece) merge_short(sym.data(), sym.size(), out);
    else merge_long(sym, out);
    sym.clear();
}

// Characters: each is its token, and runs of known characters are merged. A character with no
// token never takes part in a merge (merges join tokens), so it cuts the piece: the runs on its
// two sides merge independently, exactly as if it were in the list.
void BpeModel::encode_chars(std::string_view piece, std::vector<uint32_t>& out) const {
    if (options_.ignore_merges) {
        if (auto it = vocab_.find(std::string(piece)); it != vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    std::vector<uint32_t> run;
    std::string ch;
    bool last_unk = false;
    for (size_t i = 0; i < piece.size();) {
        const size_t len = static_cast<size_t>(decode_utf8(piece, i).len);
        ch.assign(piece.substr(i, len));
        i += len;
        if (auto it = vocab_.find(ch); it != vocab_.end()) {
            run.push_back(it->second);
            last_unk = false;
            continue;
        }
        merge(run, out);
        bool bytes_known = options_.byte_fallback;
        for (unsigned char b : ch) bytes_known = bytes_known && byte_token_[b] != kNone;
        if (bytes_known) {
            for (unsigned char b : ch) out.push_back(byte_token_[b]);
            last_unk = false;
            continue;
        }
        if (unk_id_ == kNone)
            fail(Status::InvalidArgument, "tokenizer: the text holds a character (\"", ch,
                 "\") that has no token, no byte fallback and no unknown token");
        if (!(options_.fuse_unk && last_unk)) out.push_back(unk_id_);
        last_unk = true;
    }
    merge(run, out);
}

// A short piece: scan all adjacent pairs for the best rank each round (n is small: no heap).
void BpeModel::merge_short(uint32_t* sym, size_t n, std::vector<uint32_t>& out) const {
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
void BpeModel::merge_long(std::vector<uint32_t>& id, std::vector<uint32_t>& out) const {
    const size_t n = id.size();
    std::vector<int64_t> prev(n), next(n);
    for (size_t i = 0; i < n; i++) {
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
