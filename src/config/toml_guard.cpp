#include "config/toml_guard.h"

#include "core/error.h"

namespace trt {
namespace {

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

class Scanner {
public:
    explicit Scanner(std::string_view t) : t_(t) {}

    TomlGuardProblem run() {
        // A UTF-8 byte order mark may open the document.
        if (t_.substr(0, 3) == "\xEF\xBB\xBF") advance(3);
        char prev = '\n';  // the last character outside strings that is not a space or tab
        while (!done() && problem_.what.empty()) {
            const char c = t_[i_];
            if (c == '"' || c == '\'') {
                // A string starts only after one of these; anywhere else (1"x) the text is
                // not TOML, and toml++ reads on past the quote into the string's non-ASCII
                // text, testing it for whitespace.
                if (prev != '\n' && prev != '=' && prev != '[' && prev != ',' && prev != '{' &&
                    prev != '.') {
                    report(cat("a quote right after '", prev, "', where no string can start"));
                    break;
                }
                if (starts("\"\"\"")) multi_line(true);
                else if (starts("'''")) multi_line(false);
                else one_line(c);
                prev = c;
                continue;
            }
            if (c == '#') {
                comment();
                continue;
            }
            if (static_cast<unsigned char>(c) >= 0x80) {
                if (valid_char())
                    report("a non-ASCII character outside a string or comment (TOML allows "
                           "them only inside quotes or after #)");
                break;
            }
            if (c != ' ' && c != '\t' && c != '\r') prev = c;
            advance(1);
        }
        return problem_;
    }

private:
    bool done() const { return i_ >= t_.size(); }
    bool starts(std::string_view s) const { return t_.substr(i_, s.size()) == s; }
    bool ascii_at(size_t k) const { return static_cast<unsigned char>(t_[k]) < 0x80; }
    void advance(size_t n) {
        for (size_t k = 0; k < n && i_ < t_.size(); ++k, ++i_) {
            if (t_[i_] == '\n') ++line_, line_start_ = i_ + 1;
        }
    }
    void report(const std::string& what) {
        if (!problem_.what.empty()) return;
        problem_.line = line_;
        problem_.column = i_ - line_start_ + 1;
        problem_.what = what;
    }
    // At a byte >= 0x80: true if it starts a valid UTF-8 character, else reports it.
    bool valid_char() {
        if (utf8_length(t_, i_) == 0) {
            report("bytes that are not valid UTF-8 (save the file as UTF-8)");
            return false;
        }
        return true;
    }
    // Moves past one character (validating it); false after a problem.
    bool next_char() {
        if (ascii_at(i_)) {
            advance(1);
            return true;
        }
        if (!valid_char()) return false;
        advance(utf8_length(t_, i_));
        return true;
    }
    void comment() {
        while (!done() && t_[i_] != '\n' && next_char()) {
        }
    }
    // "..." or '...': ends at its quote or at the end of the line (toml++ reports that).
    void one_line(char quote) {
        advance(1);
        while (!done() && t_[i_] != quote && t_[i_] != '\n') {
            if (quote == '"' && t_[i_] == '\\') {
                advance(1);
                if (done()) return;
                if (!ascii_at(i_)) {
                    report("a non-ASCII character right after a backslash (not a TOML escape)");
                    return;
                }
            }
            if (!next_char()) return;
        }
        if (!done()) advance(1);
    }
    // """...""" (basic: escapes and line-ending backslashes) or '''...'''.
    void multi_line(bool basic) {
        const std::string_view delim = basic ? "\"\"\"" : "'''";
        advance(3);
        while (!done()) {
            if (starts(delim)) {
                // Up to two more quotes belong to the content ("""a"""" is a then a quote).
                size_t n = 3;
                while (n < 5 && i_ + n < t_.size() && t_[i_ + n] == delim[0]) ++n;
                advance(n);
                return;
            }
            if (basic && t_[i_] == '\\') {
                advance(1);
                if (done()) return;
                if (!ascii_at(i_)) {
                    report("a non-ASCII character right after a backslash (not a TOML escape)");
                    return;
                }
                if (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\r' || t_[i_] == '\n') {
                    // A line-ending backslash: toml++ skips whitespace and newlines and then
                    // tests the first other character for whitespace.
                    while (!done() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\r' ||
                                       t_[i_] == '\n'))
                        advance(1);
                    if (!done() && !ascii_at(i_)) {
                        report("a non-ASCII character first after a line-ending backslash in "
                               "a multi-line string (toml++ 3.3.0 cannot read it safely): "
                               "start that line with an ASCII character");
                        return;
                    }
                    continue;
                }
            }
            if (!next_char()) return;
        }
    }

    std::string_view t_;
    size_t i_ = 0, line_ = 1, line_start_ = 0;
    TomlGuardProblem problem_;
};

}  // namespace

TomlGuardProblem toml_guard(std::string_view text) { return Scanner(text).run(); }

}  // namespace trt
