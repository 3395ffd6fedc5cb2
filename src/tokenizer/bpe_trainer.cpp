#include "tokenizer/bpe_trainer.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <queue>
#include <unordered_set>

#include "core/error.h"
#include "io/json_min.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode_classes.h"

namespace trt::tok {
namespace {

using Pair = uint64_t;  // left symbol << 32 | right symbol
Pair pair_of(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }
uint32_t left_of(Pair p) { return static_cast<uint32_t>(p >> 32); }
uint32_t right_of(Pair p) { return static_cast<uint32_t>(p & 0xFFFFFFFFu); }

// One distinct piece: its symbols (token indices, 0..255 the bytes) and how often it occurs.
struct Word {
    std::vector<uint32_t> symbols;
    uint64_t count = 0;
};

// A heap entry; stale when the pair's count changed since it was pushed (checked on pop).
struct Candidate {
    uint64_t count;
    Pair pair;
    const std::string* merged;  // the token the merge would make (tie-break)
};
struct Lower {
    // priority_queue pops the greatest: the highest count, then the bytewise-smallest token.
    bool operator()(const Candidate& a, const Candidate& b) const {
        if (a.count != b.count) return a.count < b.count;
        return *a.merged > *b.merged;
    }
};

// A caller's mistake, not an internal one: Error(InvalidArgument).
template <typename... Args>
void require(bool ok, Args&&... args) {
    if (!ok) fail(Status::InvalidArgument, "tokenizer train: ", std::forward<Args>(args)...);
}

}  // namespace

BpeTrainer::BpeTrainer(BpeTrainOptions options) : options_(std::move(options)) {
    std::unordered_set<std::string> seen;
    for (const std::string& s : options_.special_tokens) {
        require(!s.empty(), "a special token is empty");
        require(invalid_utf8_at(s) == std::string_view::npos,
                "a special token is not valid UTF-8");
        require(seen.insert(s).second, "the special token \"", s, "\" is listed twice");
    }
    const uint64_t floor = 256 + options_.special_tokens.size();
    require(options_.vocab_size >= floor, "vocab_size ", options_.vocab_size, " is below the ",
            floor, " tokens the byte alphabet and the special tokens take");
    require(options_.min_frequency >= 1, "min_frequency must be >= 1");
}

void BpeTrainer::add_text(std::string_view text, const std::string& source) {
    if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
        fail(Status::InvalidArgument, "tokenizer train: ", source, " is not valid UTF-8 (byte ",
             bad, " of this part)");
    // Special-token strings separate documents; they are not text to learn merges from.
    std::vector<std::string_view> pieces;
    size_t start = 0;
    auto count_plain = [&](std::string_view plain) {
        pieces.clear();
        split(plain, SplitRule::Gpt2, pieces);
        for (std::string_view p : pieces) piece_counts_[std::string(p)]++;
        pieces_ += pieces.size();
    };
    for (size_t i = 0; i < text.size();) {
        size_t len = 0;
        for (const std::string& s : options_.special_tokens)
            if (text.compare(i, s.size(), s) == 0) len = std::max(len, s.size());
        if (len == 0) {
            i++;
            continue;
        }
        count_plain(text.substr(start, i - start));
        i += len;
        start = i;
    }
    count_plain(text.substr(start));
}

namespace {
constexpr size_t kFileChunkBytes = size_t{8} << 20;
std::atomic<size_t> g_test_file_chunk{0};
}  // namespace

void BpeTrainer::set_file_chunk_bytes_for_tests(size_t bytes) { g_test_file_chunk = bytes; }

uint64_t BpeTrainer::add_file(const std::string& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f)
        fail(Status::Io, "tokenizer train: cannot open ", path, ": ", std::strerror(errno));
    const size_t kChunk = g_test_file_chunk ? g_test_file_chunk.load() : kFileChunkBytes;
    std::string buf;  // bytes read and not yet counted
    std::vector<char> block(kChunk);
    uint64_t total = 0, counted = 0;
    // The last cut point in buf: a lone '\n' between two printable ASCII characters ("x\ny"),
    // which the GPT-2 regex makes a piece of its own whether the text goes on or ends there
    // (after a longer whitespace run it would not: "\n\n" at the end is one piece, before
    // "y" two); 0 if there is none.
    auto printable = [](char c) { return c > ' ' && c < 0x7F; };
    auto last_cut = [&](const std::string& s) -> size_t {
        for (size_t i = s.size(); i-- > 2;)
            if (s[i - 1] == '\n' && printable(s[i]) && printable(s[i - 2])) return i;
        return 0;
    };
    for (;;) {
        const size_t n = std::fread(block.data(), 1, block.size(), f.get());
        if (n == 0) {
            if (std::ferror(f.get()))
                fail(Status::Io, "tokenizer train: reading ", path, " failed after ", total,
                     " bytes");
            break;
        }
        total += n;
        buf.append(block.data(), n);
        if (buf.size() < kChunk) continue;
        const size_t cut = last_cut(buf);
        if (cut == 0) continue;  // no cut yet (one long line): keep reading
        add_text(std::string_view(buf).substr(0, cut), path + " (from byte " +
                                                           std::to_string(counted) + ")");
        counted += cut;
        buf.erase(0, cut);
    }
    add_text(buf, path + " (from byte " + std::to_string(counted) + ")");
    return total;
}

namespace {

// Token strings (byte-level characters) by symbol; symbols 0..255 are the bytes.
std::vector<std::string> byte_tokens() {
    std::vector<std::string> token(256);
    for (int b = 0; b < 256; b++) {
        const char c = static_cast<char>(b);
        to_byte_chars(std::string_view(&c, 1), token[b]);
    }
    return token;
}

// Words in a fixed order (the map's order is not), so that the run is deterministic.
std::vector<Word> words_in_order(const std::unordered_map<std::string, uint64_t>& piece_counts) {
    std::vector<Word> words;
    words.reserve(piece_counts.size());
    std::vector<std::pair<std::string_view, uint64_t>> sorted(piece_counts.begin(),
                                                              piece_counts.end());
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [piece, count] : sorted) {
        Word w;
        w.count = count;
        for (unsigned char c : piece) w.symbols.push_back(c);
        words.push_back(std::move(w));
    }
    return words;
}

// s with every a b replaced by c, left to right (non-overlapping, as encode merges), into
// next; false when s holds no a b.
bool merge_in(const std::vector<uint32_t>& s, uint32_t a, uint32_t b, uint32_t c,
              std::vector<uint32_t>& next) {
    next.reserve(s.size());
    bool changed = false;
    for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
            next.push_back(c);
            i += 2;
            changed = true;
        } else {
            next.push_back(s[i]);
            i++;
        }
    }
    return changed;
}

// The merge loop's state: the tokens so far, the words as symbols, each pair's count and the
// words it occurs in, and the heap of candidate merges.
class Merger {
public:
    Merger(std::vector<std::string> token, std::vector<Word> words)
        : token_(std::move(token)), words_(std::move(words)), vocab_set_(token_.begin(), token_.end()) {
        // Pair counts and, per pair, the words it occurs in (a word may be listed more than
        // once; a merge rescans each listed word and skips those where the pair is gone).
        for (uint32_t w = 0; w < words_.size(); w++) {
            const std::vector<uint32_t>& s = words_[w].symbols;
            for (size_t i = 0; i + 1 < s.size(); i++) {
                const Pair p = pair_of(s[i], s[i + 1]);
                counts_[p] += words_[w].count;
                where_[p].push_back(w);
            }
        }
        for (const auto& [p, c] : counts_) heap_.push({c, p, merged_of(p)});
    }

    // The next merge: the pair of the highest count (then the bytewise-smallest token) whose
    // token is new, if its count reaches min_frequency.
    bool next(uint64_t min_frequency, Candidate& best) {
        while (!heap_.empty()) {
            const Candidate top = heap_.top();
            heap_.pop();
            const auto cit = counts_.find(top.pair);
            const uint64_t now = cit == counts_.end() ? 0 : cit->second;
            if (now != top.count) {  // stale: push the current count back, if any
                if (now > 0) heap_.push({now, top.pair, top.merged});
                continue;
            }
            if (top.count < min_frequency) return false;
            if (vocab_set_.count(*top.merged)) {
                // Another merge already made this string (e.g. "ab"+"c" and "a"+"bc"): a
                // tokenizer.json has one id per string, so this pair is retired.
                counts_.erase(cit);
                continue;
            }
            best = top;
            return true;
        }
        return false;
    }

    // Makes best's token and rewrites the words; returns the merge (its two tokens).
    std::pair<std::string, std::string> merge(const Candidate& best) {
        const uint32_t a = left_of(best.pair), b = right_of(best.pair);
        const std::string merged = *best.merged;
        const uint32_t c = static_cast<uint32_t>(token_.size());
        token_.push_back(merged);
        vocab_set_.insert(merged);
        rewrite_words(best.pair, a, b, c);
        return {token_[a], token_[b]};
    }

    std::vector<std::string> take_tokens() { return std::move(token_); }

private:
    // The merged token's text, per pair ever pushed (stable storage for the heap's tie-break).
    const std::string* merged_of(Pair p) {
        auto it = merged_text_.find(p);
        if (it == merged_text_.end())
            it = merged_text_.emplace(p, token_[left_of(p)] + token_[right_of(p)]).first;
        return &it->second;
    }
    void add(Pair p, uint64_t n, uint32_t w) {
        counts_[p] += n;
        where_[p].push_back(w);
        touched_.push_back(p);
    }
    void sub(Pair p, uint64_t n) {
        auto it = counts_.find(p);
        if (it == counts_.end()) return;
        it->second = it->second > n ? it->second - n : 0;
        if (it->second == 0) counts_.erase(it);
        touched_.push_back(p);
    }
    // Rewrites every word holding a b, moving the counts of the neighbouring pairs, and
    // pushes the pairs whose counts moved.
    void rewrite_words(Pair pair, uint32_t a, uint32_t b, uint32_t c) {
        std::vector<uint32_t> holders = std::move(where_[pair]);
        where_.erase(pair);
        std::sort(holders.begin(), holders.end());
        holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
        touched_.clear();
        for (uint32_t w : holders) {
            std::vector<uint32_t>& s = words_[w].symbols;
            const uint64_t n = words_[w].count;
            std::vector<uint32_t> next;
            if (!merge_in(s, a, b, c, next)) continue;
            for (size_t i = 0; i + 1 < s.size(); i++) sub(pair_of(s[i], s[i + 1]), n);
            for (size_t i = 0; i + 1 < next.size(); i++) add(pair_of(next[i], next[i + 1]), n, w);
            s = std::move(next);
        }
        counts_.erase(pair);
        std::sort(touched_.begin(), touched_.end());
        touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
        for (Pair p : touched_)
            if (auto it = counts_.find(p); it != counts_.end() && p != pair)
                heap_.push({it->second, p, merged_of(p)});
    }

    std::vector<std::string> token_;
    std::vector<Word> words_;
    std::unordered_set<std::string> vocab_set_;
    std::unordered_map<Pair, uint64_t> counts_;
    std::unordered_map<Pair, std::vector<uint32_t>> where_;
    std::unordered_map<Pair, std::string> merged_text_;
    std::priority_queue<Candidate, std::vector<Candidate>, Lower> heap_;
    std::vector<Pair> touched_;
};

}  // namespace

TrainedBpe BpeTrainer::train() const {
    TrainedBpe out;
    out.special_tokens = options_.special_tokens;
    out.pieces = pieces_;
    out.distinct_pieces = piece_counts_.size();
    Merger merger(byte_tokens(), words_in_order(piece_counts_));
    const size_t target_merges =
        options_.vocab_size - 256 - options_.special_tokens.size();
    Candidate best{};
    while (out.merges.size() < target_merges && merger.next(options_.min_frequency, best))
        out.merges.push_back(merger.merge(best));
    out.tokens = merger.take_tokens();
    return out;
}

std::string to_tokenizer_json(const TrainedBpe& bpe) {
    const uint32_t n_special = static_cast<uint32_t>(bpe.special_tokens.size());
    std::string j = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n";
    j += "  \"added_tokens\": [";
    for (uint32_t i = 0; i < n_special; i++) {
        j += i ? ",\n" : "\n";
        j += "    {\"id\": " + std::to_string(i) + ", \"content\": " +
             json::quote(bpe.special_tokens[i]) +
             ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
             "\"normalized\": false, \"special\": true}";
    }
    j += n_special ? "\n  ],\n" : "],\n";
    j += "  \"normalizer\": null,\n";
    j += "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
         "\"trim_offsets\": true, \"use_regex\": true},\n";
    j += "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
         "\"trim_offsets\": false, \"use_regex\": true},\n";
    j += "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
         "\"trim_offsets\": true, \"use_regex\": true},\n";
    j += "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n"
         "    \"unk_token\": null,\n    \"continuing_subword_prefix\": null,\n"
         "    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n"
         "    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n    \"vocab\": {";
    for (size_t i = 0; i < bpe.special_tokens.size(); i++) {
        j += i ? ",\n      " : "\n      ";
        j += json::quote(bpe.special_tokens[i]) + ": " + std::to_string(i);
    }
    for (size_t i = 0; i < bpe.tokens.size(); i++) {
        j += i + n_special ? ",\n      " : "\n      ";
        j += json::quote(bpe.tokens[i]) + ": " + std::to_string(i + n_special);
    }
    j += "\n    },\n    \"merges\": [";
    for (size_t i = 0; i < bpe.merges.size(); i++) {
        j += i ? ",\n      " : "\n      ";
        j += "[" + json::quote(bpe.merges[i].first) + ", " + json::quote(bpe.merges[i].second) +
             "]";
    }
    j += bpe.merges.empty() ? "]\n  }\n}\n" : "\n    ]\n  }\n}\n";
    return j;
}

}  // namespace trt::tok
