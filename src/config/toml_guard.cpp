#include "config/toml_guard.h"

namespace trt {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// Length of the valid UTF-8 sequence at s[i] (1..4), or 0 if invalid (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
size_t utf8_length(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    if (c < 0x80) return 1;
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) n = 3;
    else if (c == 0xED) n = 3, hi = 0x9F;  // no UTF-16 surrogates
    else if (c >= 0xEE && c <= 0xEF) n = 3;
    else if (c == 0xF0) n = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) n = 4, hi = 0x8F;  // <= U+10FFFF
    else return 0;
    if (i + n > s.size()) return 0;
    if (b(1) < lo || b(1) > hi) return 0;
    for (size_t k = 2; k < n; ++k)
        if (b(k) < 0x80 || b(k) > 0xBF) return 0;
    return n;
}

char32_t decode(std::string_view s, size_t i, size_t n) {
    const auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
    if (n == 1) return b(0);
    char32_t cp = b(0) & (0xFFu >> (n + 1));
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b(k) & 0x3Fu);
    return cp;
}

size_t body_start(std::string_view text) {
    return text.substr(0, kByteOrderMark.size()) == kByteOrderMark ? kByteOrderMark.size() : 0;
}

// Walks the characters of a valid UTF-8 text with their toml++ line:column.
template <class Visit>  // bool visit(size_t byte_index, size_t length, size_t line, size_t col)
void for_each_char(std::string_view text, Visit visit) {
    size_t line = 1, col = 1;
    for (size_t i = body_start(text); i < text.size();) {
        const size_t n = utf8_length(text, i);
        if (!visit(i, n, line, col) || n == 0) return;
        if (text[i] == '\n') ++line, col = 1;
        else ++col;
        i += n;
    }
}

}  // namespace

TomlGuardProblem toml_guard(std::string_view text) {
    TomlGuardProblem p;
    // after_backslash: 0 = no, 1 = a backslash and blanks, 2 = also a newline since.
    int after_backslash = 0;
    for_each_char(text, [&](size_t i, size_t n, size_t line, size_t col) {
        const auto report = [&](const char* what) {
            p.line = line, p.column = col, p.what = what;
            return false;
        };
        if (n == 0) return report("bytes that are not valid UTF-8 (save the file as UTF-8)");
        const char c = text[i];
        if (n > 1 && after_backslash == 2)
            return report("a non-ASCII character first after a line-ending backslash "
                          "(toml++ 3.3.0 cannot read it safely): start that line with an "
                          "ASCII character, or write the character as a \\u escape");
        if (c == '\\') after_backslash = 1;
        else if (c == '\n' && after_backslash) after_backslash = 2;
        else if (c != ' ' && c != '\t' && c != '\r') after_backslash = 0;
        return true;
    });
    return p;
}

std::string toml_ascii_shadow(std::string_view text) {
    const size_t start = body_start(text);
    std::string out(text.substr(0, start));
    out.reserve(text.size());
    for (size_t i = start; i < text.size();) {
        const size_t n = utf8_length(text, i);
        if (n == 0) return out;  // not reached after toml_guard()
        out += n == 1 ? text[i] : '@';
        i += n;
    }
    return out;
}

TomlChar toml_char_at(std::string_view text, size_t line, size_t column) {
    TomlChar found;
    for_each_char(text, [&](size_t i, size_t n, size_t l, size_t c) {
        if (n == 0 || l > line) return false;
        if (l == line && c == column) {
            found.bytes = text.substr(i, n);
            found.code_point = decode(text, i, n);
            return false;
        }
        return true;
    });
    return found;
}

}  // namespace trt
