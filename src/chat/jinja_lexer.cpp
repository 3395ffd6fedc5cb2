#include "chat/jinja_lexer.h"

#include <cstring>

#include "chat/jinja_value.h"
#include "core/error.h"
#include "core/utf8.h"

namespace trt::chat {

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python's str.rstrip()/lstrip() (Unicode whitespace), as Jinja's `-` markers use.
std::string rstrip_ws(std::string_view s) { return py_strip(s, nullptr, false, true); }

bool only_ws(std::string_view s) { return !s.empty() && py_strip(s, nullptr, true, false).empty(); }

class Lexer {
public:
    Lexer(std::string src, const std::string& origin) : src_(std::move(src)), origin_(origin) {}

    std::vector<Token> run() {
        bool line_starting = true;
        while (pos_ < src_.size()) {
            const size_t start = find_tag(pos_);
            std::string text = src_.substr(pos_, start - pos_);
            const int text_line = line_;
            if (start == src_.size()) {
                emit_data(std::move(text), text_line);
                advance_to(start);
                break;
            }
            const char kind = src_[start + 1];
            const char mod = start + 2 < src_.size() ? src_[start + 2] : '\0';
            if (mod == '-') {
                text = rstrip_ws(text);
            } else if (mod != '+' && kind != '{') {
                // lstrip_blocks: only whitespace between the line's start and the tag goes.
                const size_t nl = text.rfind('\n');
                const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
                if ((l_pos > 0 || line_starting) && only_ws(std::string_view(text).substr(l_pos)))
                    text.resize(l_pos);
            }
            emit_data(std::move(text), text_line);
            advance_to(start);
            size_t p = start + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
            if (kind == '#') {
                const size_t e = src_.find("#}", p);
                if (e == std::string::npos) fail_here("unclosed comment ({# without #})");
                size_t after = e + 2;
                const char endmod = e > p ? src_[e - 1] : '\0';
                if (endmod == '-') after = skip_ws(after);
                else if (endmod != '+' && after < src_.size() && src_[after] == '\n') ++after;
                advance_to(after);
                line_starting = after > 0 && src_[after - 1] == '\n';
                continue;
            }
            if (kind == '%' && try_raw(p)) {
                line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
                continue;
            }
            tokens_.push_back({kind == '%' ? Token::Type::BlockBegin : Token::Type::VarBegin, "", line_});
            advance_to(p);
            lex_tag(kind == '%');
            line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
        }
        tokens_.push_back({Token::Type::Eof, "", line_});
        return std::move(tokens_);
    }

private:
    std::string src_;
    const std::string& origin_;
    size_t pos_ = 0;
    int line_ = 1;
    std::vector<Token> tokens_;

    [[noreturn]] void fail_here(const std::string& what) {
        fail(Status::Format, origin_, ":", line_, ": template syntax error: ", what);
    }
    void advance_to(size_t p) {
        for (size_t k = pos_; k < p; ++k)
            if (src_[k] == '\n') ++line_;
        pos_ = p;
    }
    // The first position at or after p that is not whitespace (Python's \s: Unicode spaces
    // too, as `-%}` strips and tokens are separated).
    size_t skip_ws(size_t p) const {
        while (p < src_.size()) {
            const auto c = static_cast<unsigned char>(src_[p]);
            if (c < 0x80) {
                if (!is_py_space(c)) break;
                ++p;
                continue;
            }
            const int n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
            if (p + n > src_.size()) break;
            uint32_t cp = n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
            for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(src_[p + k]) & 0x3F);
            if (!is_py_space(cp)) break;
            p += n;
        }
        return p;
    }
    size_t find_tag(size_t from) const {
        for (size_t k = from; k + 1 < src_.size(); ++k)
            if (src_[k] == '{' && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#'))
                return k;
        return src_.size();
    }
    void emit_data(std::string text, int line) {
        if (!text.empty()) tokens_.push_back({Token::Type::Data, std::move(text), line});
    }

    // {% raw %}...{% endraw %}: the text between is literal.
    bool try_raw(size_t p) {
        size_t q = p;
        while (q < src_.size() && is_ascii_space(src_[q])) ++q;
        if (src_.compare(q, 3, "raw") != 0 || (q + 3 < src_.size() && is_name_char(src_[q + 3])))
            return false;
        q += 3;
        while (q < src_.size() && is_ascii_space(src_[q])) ++q;
        bool strip_after = false;
        if (q < src_.size() && src_[q] == '-') { strip_after = true; ++q; }
        if (src_.compare(q, 2, "%}") != 0) fail_here("expected '%}' after 'raw'");
        size_t body = q + 2;
        if (strip_after) body = skip_ws(body);
        for (size_t k = src_.find("{%", body); k != std::string::npos; k = src_.find("{%", k + 1)) {
            size_t r = k + 2;
            const char mod = r < src_.size() ? src_[r] : '\0';
            if (mod == '-' || mod == '+') ++r;
            while (r < src_.size() && is_ascii_space(src_[r])) ++r;
            if (src_.compare(r, 6, "endraw") != 0) continue;
            r += 6;
            while (r < src_.size() && is_ascii_space(src_[r])) ++r;
            char endmod = '\0';
            if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) endmod = src_[r++];
            if (src_.compare(r, 2, "%}") != 0) continue;
            std::string text = src_.substr(body, k - body);
            if (mod == '-') {
                text = rstrip_ws(text);
            } else if (mod != '+') {
                // lstrip_blocks before {% endraw %} too; the line starts at the raw text's
                // start only when `-%}` of {% raw -%} swallowed up to a newline.
                const bool line_starting = body > q + 2 && src_[body - 1] == '\n';
                const size_t nl = text.rfind('\n');
                const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
                if ((l_pos > 0 || line_starting) && only_ws(std::string_view(text).substr(l_pos)))
                    text.resize(l_pos);
            }
            const int text_line = line_;
            emit_data(std::move(text), text_line);
            size_t after = r + 2;
            if (endmod == '-') after = skip_ws(after);
            else if (endmod != '+' && after < src_.size() && src_[after] == '\n') ++after;
            advance_to(after);
            return true;
        }
        fail_here("unclosed {% raw %} (no {% endraw %})");
    }

    void lex_tag(bool block) {
        std::vector<char> balance;
        while (true) {
            advance_to(skip_ws(pos_));  // Python's \s: Unicode spaces separate tokens too
            if (pos_ >= src_.size())
                fail_here(block ? "unexpected end of template in a {% %} tag"
                                : "unexpected end of template in a {{ }} expression");
            const char c = src_[pos_];
            if (balance.empty()) {
                const char* close = block ? "%}" : "}}";
                if ((c == '-' || (block && c == '+')) && src_.compare(pos_ + 1, 2, close) == 0) {
                    tokens_.push_back({block ? Token::Type::BlockEnd : Token::Type::VarEnd, "", line_});
                    size_t after = pos_ + 3;
                    if (c == '-') after = skip_ws(after);
                    advance_to(after);
                    return;
                }
                if (src_.compare(pos_, 2, close) == 0) {
                    tokens_.push_back({block ? Token::Type::BlockEnd : Token::Type::VarEnd, "", line_});
                    size_t after = pos_ + 2;
                    if (block && after < src_.size() && src_[after] == '\n') ++after;  // trim_blocks
                    advance_to(after);
                    return;
                }
            }
            if (is_digit(c)) { lex_number(); continue; }
            if (is_name_start(c)) {
                size_t e = pos_;
                while (e < src_.size() && is_name_char(src_[e])) ++e;
                tokens_.push_back({Token::Type::Name, src_.substr(pos_, e - pos_), line_});
                advance_to(e);
                continue;
            }
            if (c == '\'' || c == '"') { lex_string(c); continue; }
            static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                               "*", "%", "~", "[", "]", "(", ")", "{", "}", "<",
                                               ">", "=", ".", ":", "|", ",", ";"};
            const char* op = nullptr;
            for (const char* o : kOps)
                if (src_.compare(pos_, std::strlen(o), o) == 0) { op = o; break; }
            if (!op) {
                fail_here(std::string("unexpected character '") +
                          (static_cast<unsigned char>(c) < 0x80 ? std::string(1, c)
                                                                : std::string("non-ASCII")) +
                          "'");
            }
            const std::string o(op);
            if (o == "(" || o == "[" || o == "{") {
                balance.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
            } else if (o == ")" || o == "]" || o == "}") {
                if (balance.empty() || balance.back() != o[0])
                    fail_here("unexpected '" + o + "'");
                balance.pop_back();
            }
            tokens_.push_back({Token::Type::Op, o, line_});
            advance_to(pos_ + o.size());
        }
    }

    void lex_number() {
        // After '.', digits are an attribute index (foo.0), never a float.
        const bool after_dot = !tokens_.empty() && tokens_.back().type == Token::Type::Op &&
                               tokens_.back().text == ".";
        size_t e = pos_;
        std::string digits;
        auto take_digits = [&]() {
            bool any = false;
            while (e < src_.size() && (is_digit(src_[e]) ||
                                       (src_[e] == '_' && e + 1 < src_.size() && is_digit(src_[e + 1]) && any))) {
                if (src_[e] != '_') digits += src_[e];
                any = true;
                ++e;
            }
            return any;
        };
        take_digits();
        bool is_float = false;
        if (!after_dot) {
            if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
                digits += '.';
                ++e;
                take_digits();
                is_float = true;
            }
            if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
                size_t k = e + 1;
                if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
                if (k < src_.size() && is_digit(src_[k])) {
                    digits += 'e';
                    digits += src_.substr(e + 1, k - e - 1);
                    e = k;
                    take_digits();
                    is_float = true;
                }
            }
        }
        tokens_.push_back({is_float ? Token::Type::Float : Token::Type::Int, digits, line_});
        advance_to(e);
    }

    // A Python string literal's escapes (Jinja decodes with unicode-escape).
    void lex_string(char q) {
        std::string out;
        size_t k = pos_ + 1;
        auto hex = [&](size_t at, int n, uint32_t& cp) {
            cp = 0;
            for (int d = 0; d < n; ++d) {
                if (at + d >= src_.size()) return false;
                const char h = src_[at + d];
                int v = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                      : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                if (v < 0) return false;
                cp = cp * 16 + static_cast<uint32_t>(v);
            }
            return true;
        };
        while (true) {
            if (k >= src_.size()) fail_here("unterminated string literal");
            const char c = src_[k];
            if (c == q) break;
            if (c != '\\') { out += c; ++k; continue; }
            if (k + 1 >= src_.size()) fail_here("unterminated string literal");
            const char n = src_[k + 1];
            k += 2;
            uint32_t cp = 0;
            switch (n) {
                case '\n': break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'v': out += '\v'; break;
                case 'x': case 'u': case 'U': {
                    const int len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
                    if (!hex(k, len, cp) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                        fail_here(std::string("bad \\") + n + " escape in a string literal");
                    append_utf8(out, cp);
                    k += len;
                    break;
                }
                case 'N': fail_here("\\N{...} escapes are not supported in string literals");
                default:
                    if (n >= '0' && n <= '7') {
                        cp = static_cast<uint32_t>(n - '0');
                        for (int d = 0; d < 2 && k < src_.size() && src_[k] >= '0' && src_[k] <= '7'; ++d)
                            cp = cp * 8 + static_cast<uint32_t>(src_[k++] - '0');
                        append_utf8(out, cp);
                    } else {
                        out += '\\';  // unknown escapes stay as written
                        out += n;
                    }
            }
        }
        tokens_.push_back({Token::Type::String, std::move(out), line_});
        advance_to(k + 1);
    }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& origin) {
    if (!json::valid_utf8(source))
        fail(Status::Format, origin, ": the template is not valid UTF-8");
    // Jinja normalizes \r\n and \r to \n and drops one trailing newline (keep_trailing_newline
    // is off in transformers' environment).
    std::string src;
    src.reserve(source.size());
    for (size_t k = 0; k < source.size(); ++k) {
        if (source[k] == '\r') {
            src += '\n';
            if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
        } else {
            src += source[k];
        }
    }
    if (!src.empty() && src.back() == '\n') src.pop_back();
    return Lexer(std::move(src), origin).run();
}

}  // namespace trt::chat
