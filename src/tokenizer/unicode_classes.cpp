// Class lookups by binary search over generated code-point ranges, with an ASCII fast path
// (most text is mostly ASCII).
#include "tokenizer/unicode_classes.h"

#include <algorithm>
#include <iterator>

namespace trt::tok {
namespace {

struct CodeRange {
    char32_t first, last;
};

#include "tokenizer/unicode_tables.inc"

template <size_t N>
bool in_ranges(const CodeRange (&ranges)[N], char32_t c) {
    const auto* it = std::upper_bound(std::begin(ranges), std::end(ranges), c,
                                      [](char32_t v, const CodeRange& r) { return v < r.first; });
    return it != std::begin(ranges) && c <= std::prev(it)->last;
}

}  // namespace

bool is_letter(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return in_ranges(kLetterRanges, c);
}

bool is_number(char32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    return in_ranges(kNumberRanges, c);
}

bool is_space(char32_t c) {
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool in_category(Category c, char32_t cp) {
    switch (c) {
        case Category::L: return is_letter(cp);
        case Category::N: return is_number(cp);
        case Category::Lu: return in_ranges(kUppercaseRanges, cp);
        case Category::Ll: return in_ranges(kLowercaseRanges, cp);
        case Category::Lt: return in_ranges(kTitlecaseRanges, cp);
        case Category::Lm: return in_ranges(kModifierLetterRanges, cp);
        case Category::Lo: return in_ranges(kOtherLetterRanges, cp);
        case Category::M: return in_ranges(kMarkRanges, cp);
        case Category::Nd: return in_ranges(kDecimalRanges, cp);
        case Category::P: return in_ranges(kPunctuationRanges, cp);
        case Category::Pc: return in_ranges(kConnectorRanges, cp);
        case Category::S: return in_ranges(kSymbolRanges, cp);
    }
    return false;
}

bool category_named(std::string_view name, Category& c) {
    static const struct {
        const char* short_name;
        const char* long_name;
        Category c;
    } names[] = {
        {"L", "Letter", Category::L}, {"Lu", "Uppercase_Letter", Category::Lu},
        {"Ll", "Lowercase_Letter", Category::Ll}, {"Lt", "Titlecase_Letter", Category::Lt},
        {"Lm", "Modifier_Letter", Category::Lm}, {"Lo", "Other_Letter", Category::Lo},
        {"M", "Mark", Category::M}, {"N", "Number", Category::N},
        {"Nd", "Decimal_Number", Category::Nd}, {"P", "Punctuation", Category::P},
        {"Pc", "Connector_Punctuation", Category::Pc}, {"S", "Symbol", Category::S},
    };
    for (const auto& n : names)
        if (name == n.short_name || name == n.long_name) {
            c = n.c;
            return true;
        }
    return false;
}

Decoded decode_utf8(std::string_view text, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char c0 = b(0);
    if (c0 < 0x80) return {c0, 1};
    if (c0 < 0xE0) return {static_cast<char32_t>(((c0 & 0x1F) << 6) | (b(1) & 0x3F)), 2};
    if (c0 < 0xF0)
        return {static_cast<char32_t>(((c0 & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F)),
                3};
    return {static_cast<char32_t>(((c0 & 0x07) << 18) | ((b(1) & 0x3F) << 12) |
                                  ((b(2) & 0x3F) << 6) | (b(3) & 0x3F)),
            4};
}

}  // namespace trt::tok

namespace trt::tok {

size_t invalid_utf8_at(std::string_view text) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    for (size_t i = 0; i < n;) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int len = 0;
        char32_t cp = 0, min = 0;
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F, min = 0x80;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F, min = 0x800;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07, min = 0x10000;
        else return i;
        if (i + len > n) return i;
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += len;
    }
    return std::string_view::npos;
}

}  // namespace trt::tok
