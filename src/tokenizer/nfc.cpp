// to_nfc (nfc.h): the text cut into segments at safe boundaries (between two ASCII
// characters: ASCII is a starter that composes with nothing before it), each segment
// decomposed, reordered and recomposed as Unicode Standard Annex #15 says, the Hangul
// syllables by their arithmetic.
#include "tokenizer/nfc.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

#include "tokenizer/unicode_classes.h"

namespace trt::tok {
namespace {

struct Decomposition {
    char32_t cp;
    uint16_t first, length;  // kDecompositionChars[first, first + length)
};
struct CombiningRank {
    char32_t cp;
    uint8_t rank;  // > 0; orders as the canonical combining class does
};
struct Composition {
    char32_t first, second, composite;
};

#include "tokenizer/nfc_tables.inc"

// Hangul syllables: S = SBase + (L * VCount + V) * TCount + T (Unicode 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kSCount = 11172;

bool is_syllable(char32_t c) { return c >= kSBase && c < kSBase + kSCount; }

uint8_t rank_of(char32_t c) {
    if (c < 0x300) return 0;  // no non-starter below U+0300
    const auto* it = std::lower_bound(std::begin(kCombiningRanks), std::end(kCombiningRanks), c,
                                      [](const CombiningRank& r, char32_t v) { return r.cp < v; });
    return it != std::end(kCombiningRanks) && it->cp == c ? it->rank : 0;
}

void decompose(char32_t c, std::vector<char32_t>& out) {
    if (is_syllable(c)) {
        const char32_t i = c - kSBase;
        out.push_back(kLBase + i / (kVCount * kTCount));
        out.push_back(kVBase + (i % (kVCount * kTCount)) / kTCount);
        if (i % kTCount) out.push_back(kTBase + i % kTCount);
        return;
    }
    if (c >= 0xC0) {  // nothing below U+00C0 decomposes
        const auto* it =
            std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), c,
                             [](const Decomposition& d, char32_t v) { return d.cp < v; });
        if (it != std::end(kDecompositions) && it->cp == c) {
            out.insert(out.end(), kDecompositionChars + it->first,
                       kDecompositionChars + it->first + it->length);
            return;
        }
    }
    out.push_back(c);
}

// The composite of first + second, or 0.
char32_t compose_pair(char32_t first, char32_t second) {
    if (first >= kLBase && first < kLBase + kLCount && second >= kVBase &&
        second < kVBase + kVCount)
        return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
    if (is_syllable(first) && (first - kSBase) % kTCount == 0 && second > kTBase &&
        second < kTBase + kTCount)
        return first + (second - kTBase);
    const auto* it = std::lower_bound(
        std::begin(kCompositions), std::end(kCompositions), std::make_pair(first, second),
        [](const Composition& c, const std::pair<char32_t, char32_t>& v) {
            return c.first < v.first || (c.first == v.first && c.second < v.second);
        });
    return it != std::end(kCompositions) && it->first == first && it->second == second
               ? it->composite
               : 0;
}

void append_utf8(char32_t c, std::string& out) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

// Sorts a run of non-starters [first, last) by rank, stably, in O(n log n): each character
// is paired with its rank once (`ranked` is scratch), so the comparisons are cheap.
void sort_by_rank(std::vector<char32_t>::iterator first, std::vector<char32_t>::iterator last,
                  std::vector<std::pair<uint8_t, char32_t>>& ranked) {
    ranked.clear();
    for (auto it = first; it != last; ++it) ranked.emplace_back(rank_of(*it), *it);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& rc : ranked) *first++ = rc.second;
}

// One segment (valid UTF-8) normalized onto out. `chars` is scratch.
void normalize_segment(std::string_view seg, std::vector<char32_t>& chars, std::string& out) {
    std::vector<std::pair<uint8_t, char32_t>> ranked;
    chars.clear();
    for (size_t i = 0; i < seg.size();) {
        const Decoded d = decode_utf8(seg, i);
        decompose(d.cp, chars);
        i += static_cast<size_t>(d.len);
    }
    // Canonical ordering: each run of non-starters sorted by class, stably. A sort per run,
    // not insertion: a run can be as long as the text ("Zalgo" text stacks thousands of marks
    // on one letter), and insertion sorting it was quadratic. No stream-safe cap: the output
    // is the full NFC, as Hugging Face's normalizer gives it.
    for (size_t i = 0; i < chars.size();) {
        if (rank_of(chars[i]) == 0) {
            i++;
            continue;
        }
        size_t end = i + 1;
        while (end < chars.size() && rank_of(chars[end]) != 0) end++;
        if (end - i > 1) sort_by_rank(chars.begin() + static_cast<std::ptrdiff_t>(i),
                                      chars.begin() + static_cast<std::ptrdiff_t>(end), ranked);
        i = end;
    }
    // Canonical composition: a character joins the last starter unless something between
    // blocks it (a starter, or a non-starter of its class or higher).
    size_t kept = 0;
    size_t starter = SIZE_MAX;
    uint8_t last_rank = 0;  // of the last character kept after the starter
    for (size_t i = 0; i < chars.size(); i++) {
        const char32_t c = chars[i];
        const uint8_t r = rank_of(c);
        if (starter != SIZE_MAX && (kept - 1 == starter || (last_rank != 0 && last_rank < r)))
            if (const char32_t p = compose_pair(chars[starter], c)) {
                chars[starter] = p;
                continue;
            }
        if (r == 0) starter = kept;
        last_rank = r;
        chars[kept++] = c;
    }
    for (size_t i = 0; i < kept; i++) append_utf8(chars[i], out);
}

bool ascii(char c) { return static_cast<unsigned char>(c) < 0x80; }

}  // namespace

std::string to_nfc(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::vector<char32_t> chars;
    const size_t n = text.size();
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && ascii(text[j])) j++;
        if (j == n) {
            out.append(text.substr(i));
            break;
        }
        // text[j] is not ASCII: the segment starts at the ASCII character before it, if any
        // (e + U+0301 composes), and ends before the next ASCII character that another ASCII
        // character follows (or at the end).
        const size_t start = j > i ? j - 1 : j;
        out.append(text.substr(i, start - i));
        size_t end = j;
        while (end < n && !(ascii(text[end]) && (end + 1 == n || ascii(text[end + 1])))) end++;
        normalize_segment(text.substr(start, end - start), chars, out);
        i = end;
    }
    return out;
}

}  // namespace trt::tok
