// The scanners of pretokenizer.h. Each looks at the character classes around position i and
// returns the length of the match the regex's first matching alternative would give there.
#include "tokenizer/pretokenizer.h"

#include "tokenizer/unicode_classes.h"

namespace trt::tok {

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

const char* const kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kCl100kSingleDigitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

enum class Cls { Letter, Number, Space, Other };

Cls cls_of(char32_t c) {
    if (is_letter(c)) return Cls::Letter;
    if (is_number(c)) return Cls::Number;
    if (is_space(c)) return Cls::Space;
    return Cls::Other;
}

// A cursor over code points with one character of lookahead.
struct Text {
    std::string_view s;
    bool at_end(size_t i) const { return i >= s.size(); }
    Decoded at(size_t i) const { return decode_utf8(s, i); }
    Cls cls(size_t i) const { return cls_of(at(i).cp); }
    // End of the run of class `c` starting at i (i itself if text[i] is not of it).
    size_t run(size_t i, Cls c) const {
        while (!at_end(i) && cls(i) == c) i += at(i).len;
        return i;
    }
};

bool ascii_is(char ch, char lower, bool ignore_case) {
    return ch == lower || (ignore_case && ch == lower - 'a' + 'A');
}

// 's|'t|'re|'ve|'m|'ll|'d at i (case-insensitively for (?i:...), where U+017F LONG S folds
// to s): the match length, or 0.
size_t contraction(const Text& t, size_t i, bool ignore_case) {
    const std::string_view s = t.s;
    if (s[i] != '\'' || i + 1 >= s.size()) return 0;
    const char a = s[i + 1];
    for (char one : {'s', 't', 'm', 'd'})
        if (ascii_is(a, one, ignore_case)) return 2;
    if (ignore_case && s.compare(i + 1, 2, "\xC5\xBF") == 0) return 3;  // 'ſ
    if (i + 2 >= s.size()) return 0;
    const char b = s[i + 2];
    const char pairs[][2] = {{'r', 'e'}, {'v', 'e'}, {'l', 'l'}};
    for (const auto& p : pairs)
        if (ascii_is(a, p[0], ignore_case) && ascii_is(b, p[1], ignore_case)) return 3;
    return 0;
}

// \s+(?!\S)|\s+ at i (text[i] is whitespace): the whole run when it ends the text or has a
// single character, else the run but its last character (which then leads the next piece).
size_t whitespace_tail(const Text& t, size_t i) {
    const size_t end = t.run(i, Cls::Space);
    if (t.at_end(end)) return end - i;
    size_t last = i, count = 0;
    for (size_t k = i; k < end; k += t.at(k).len, count++) last = k;
    return count >= 2 ? last - i : end - i;
}

size_t match_gpt2(const Text& t, size_t i) {
    if (size_t n = contraction(t, i, false)) return n;
    const Decoded d = t.at(i);
    // ` ?X+` for X = \p{L}, \p{N}, [^\s\p{L}\p{N}]: the optional space, then a run of the class
    // of the character after it.
    size_t start = i;
    Cls c = cls_of(d.cp);
    if (d.cp == ' ' && !t.at_end(i + 1)) {
        const Cls next = t.cls(i + 1);
        if (next != Cls::Space) {
            start = i + 1;
            c = next;
        }
    }
    if (c != Cls::Space) return t.run(start, c) - i;
    return whitespace_tail(t, i);
}

size_t match_cl100k(const Text& t, size_t i, int max_digits) {
    if (size_t n = contraction(t, i, true)) return n;
    const Decoded d = t.at(i);
    const Cls c = cls_of(d.cp);
    const bool newline = d.cp == '\r' || d.cp == '\n';
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (c == Cls::Letter) return t.run(i, Cls::Letter) - i;
    if (!newline && c != Cls::Number && !t.at_end(i + d.len) &&
        t.cls(i + d.len) == Cls::Letter)
        return t.run(i + d.len, Cls::Letter) - i;
    // \p{N}{1,max}
    if (c == Cls::Number) {
        size_t k = i;
        for (int n = 0; n < max_digits && !t.at_end(k) && t.cls(k) == Cls::Number; n++)
            k += t.at(k).len;
        return k - i;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    size_t start = i;
    if (d.cp == ' ' && !t.at_end(i + 1) && t.cls(i + 1) == Cls::Other) start = i + 1;
    if (t.at_end(start) ? false : t.cls(start) == Cls::Other) {
        size_t k = t.run(start, Cls::Other);
        while (!t.at_end(k) && (t.s[k] == '\r' || t.s[k] == '\n')) k++;
        return k - i;
    }
    // \s*[\r\n]+ : up to and including the last newline of the whitespace run.
    const size_t end = t.run(i, Cls::Space);
    size_t last_newline = end;
    for (size_t k = i; k < end; k += t.at(k).len)
        if (t.s[k] == '\r' || t.s[k] == '\n') last_newline = k;
    if (last_newline != end) return last_newline + 1 - i;
    return whitespace_tail(t, i);
}

}  // namespace

bool split_rule_for(std::string_view pattern, SplitRule& rule) {
    if (pattern == kGpt2Pattern) rule = SplitRule::Gpt2;
    else if (pattern == kCl100kPattern) rule = SplitRule::Cl100k;
    else if (pattern == kCl100kSingleDigitPattern) rule = SplitRule::Cl100kSingleDigits;
    else return false;
    return true;
}

void split(std::string_view text, SplitRule rule, std::vector<std::string_view>& pieces) {
    const Text t{text};
    for (size_t i = 0; i < text.size();) {
        size_t n = 0;
        switch (rule) {
            case SplitRule::Gpt2: n = match_gpt2(t, i); break;
            case SplitRule::Cl100k: n = match_cl100k(t, i, 3); break;
            case SplitRule::Cl100kSingleDigits: n = match_cl100k(t, i, 1); break;
        }
        if (n == 0) n = t.at(i).len;  // unreachable: every character matches some alternative
        pieces.push_back(text.substr(i, n));
        i += n;
    }
}

}  // namespace trt::tok
