// The flat JSON object reader of `trainrt report` (report_json.h).
#include "report_json.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "core/utf8.h"

namespace trainrt_cli {
namespace {

class Reader {
public:
    explicit Reader(const std::string& s) : s_(s) {}

    bool object(JsonObject& out) {
        ws();
        if (!eat('{')) return fail("expected '{'");
        ws();
        if (!eat('}')) {
            for (;;) {
                ws();
                std::string key;
                if (peek() != '"') return fail("expected a \"key\"");
                if (!string(key)) return false;
                ws();
                if (!eat(':')) return fail("expected ':' after the key");
                ws();
                JsonValue v;
                if (!value(v)) return false;
                out[key] = v;
                ws();
                if (eat(',')) continue;
                if (eat('}')) break;
                return fail("expected ',' or '}'");
            }
        }
        ws();
        if (pos_ != s_.size()) return fail("text after the object");
        return true;
    }

    const std::string& error() const { return error_; }

private:
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    bool eat(char c) {
        if (peek() != c || pos_ >= s_.size()) return false;
        ++pos_;
        return true;
    }
    bool word(const char* w) {
        size_t n = 0;
        while (w[n] != '\0') ++n;
        if (s_.compare(pos_, n, w) != 0) return false;
        pos_ += n;
        return true;
    }
    void ws() {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r' || s_[pos_] == '\n'))
            ++pos_;
    }
    bool fail(const std::string& what) {
        if (error_.empty()) error_ = what + " at column " + std::to_string(pos_ + 1);
        return false;
    }

    bool hex4(uint32_t& out) {
        out = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = peek();
            uint32_t d;
            if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
            else return fail("bad \\u escape");
            out = out * 16 + d;
            ++pos_;
        }
        return true;
    }

    // At the opening quote.
    bool string(std::string& out) {
        ++pos_;
        for (;;) {
            if (pos_ >= s_.size()) return fail("unterminated string");
            const char c = s_[pos_++];
            if (c == '"') return true;
            if (static_cast<unsigned char>(c) < 0x20) {
                --pos_;
                return fail("control character in a string");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            const char e = peek();
            ++pos_;
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp = 0;
                    if (!hex4(cp)) return false;
                    if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
                        pos_ += 2;
                        uint32_t lo = 0;
                        if (!hex4(lo)) return false;
                        if (lo >= 0xDC00 && lo < 0xE000)
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        else
                            cp = 0xFFFD;
                    } else if (cp >= 0xD800 && cp < 0xE000) {
                        cp = 0xFFFD;  // a lone surrogate
                    }
                    trt::append_utf8(out, cp);
                    break;
                }
                default:
                    --pos_;
                    return fail("bad escape in a string");
            }
        }
    }

    bool digits() {
        const size_t start = pos_;
        while (peek() >= '0' && peek() <= '9') ++pos_;
        return pos_ > start;
    }

    bool number(double& out) {
        const size_t start = pos_;
        const bool negative = eat('-');
        if (word("Infinity")) {
            out = negative ? -std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::infinity();
            return true;
        }
        if (!negative && word("NaN")) {
            out = std::numeric_limits<double>::quiet_NaN();
            return true;
        }
        if (peek() == '0') {
            ++pos_;
        } else if (!digits()) {
            return fail("bad value");
        }
        if (eat('.') && !digits()) return fail("bad number");
        if (peek() == 'e' || peek() == 'E') {
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!digits()) return fail("bad number");
        }
        const std::string text = s_.substr(start, pos_ - start);
        out = std::strtod(text.c_str(), nullptr);  // the CLI keeps the "C" locale
        return true;
    }

    // Skips a nested array or object, strings inside included.
    bool skip_nested() {
        int depth = 0;
        while (pos_ < s_.size()) {
            const char c = peek();
            if (c == '"') {
                std::string ignored;
                if (!string(ignored)) return false;
                continue;
            }
            ++pos_;
            if (c == '[' || c == '{') ++depth;
            if (c == ']' || c == '}') {
                if (--depth == 0) return true;
            }
        }
        return fail("unterminated array or object");
    }

    bool value(JsonValue& v) {
        const char c = peek();
        if (c == '"') {
            v.kind = JsonValue::String;
            return string(v.text);
        }
        if (c == '[' || c == '{') {
            v.kind = JsonValue::Other;
            return skip_nested();
        }
        if (word("null")) {
            v.kind = JsonValue::Null;
            return true;
        }
        if (word("true") || word("false")) {
            v.kind = JsonValue::Bool;
            v.number = s_[pos_ - 2] == 'u' ? 1 : 0;  // tr[u]e, fal[s]e
            return true;
        }
        v.kind = JsonValue::Number;
        return number(v.number);
    }

    const std::string& s_;
    size_t pos_ = 0;
    std::string error_;
};

}  // namespace

bool parse_flat_object(const std::string& line, JsonObject& out, std::string& error) {
    out.clear();
    Reader r(line);
    if (r.object(out)) return true;
    error = r.error();
    return false;
}

double number_or_nan(const JsonObject& o, const char* key) {
    const auto it = o.find(key);
    if (it == o.end() || it->second.kind != JsonValue::Number)
        return std::numeric_limits<double>::quiet_NaN();
    return it->second.number;
}

std::string string_or(const JsonObject& o, const char* key, const std::string& fallback) {
    const auto it = o.find(key);
    return it != o.end() && it->second.kind == JsonValue::String ? it->second.text : fallback;
}

}  // namespace trainrt_cli
