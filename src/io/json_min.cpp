#include "io/json_min.h"

#include "core/quote.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/utf8.h"

namespace trt::json {

bool Value::get_u64(uint64_t& out) const {
    if (kind == Kind::Uint) {
        out = u;
        return true;
    }
    if (kind == Kind::Int && i >= 0) {
        out = static_cast<uint64_t>(i);
        return true;
    }
    return false;
}

bool Value::get_i64(int64_t& out) const {
    if (kind != Kind::Int) return false;
    out = i;
    return true;
}

const Value* Value::find(std::string_view key) const {
    for (const Member& m : obj)
        if (m.key == key) return &m.value;
    return nullptr;
}

const char* Value::kind_name() const {
    switch (kind) {
        case Kind::Null: return "null";
        case Kind::Bool: return "boolean";
        case Kind::Int:
        case Kind::Uint: return "integer";
        case Kind::Double: return "non-integer number";
        case Kind::String: return "string";
        case Kind::Array: return "array";
        case Kind::Object: return "object";
    }
    return "?";
}

namespace {

// Length of the UTF-8 sequence starting at s[i] (0 if malformed). Rejects overlongs,
// surrogates (U+D800..DFFF) and code points above U+10FFFF, per RFC 3629.
size_t utf8_seq_len(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t c = b(i);
    const size_t left = s.size() - i;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        if (left < 2 || (b(i + 1) & 0xC0) != 0x80) return 0;
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3) return 0;
        const uint8_t c1 = b(i + 1);
        if ((c1 & 0xC0) != 0x80 || (b(i + 2) & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
        if (c == 0xED && c1 > 0x9F) return 0;  // surrogate
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4) return 0;
        const uint8_t c1 = b(i + 1);
        if ((c1 & 0xC0) != 0x80 || (b(i + 2) & 0xC0) != 0x80 || (b(i + 3) & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
        if (c == 0xF4 && c1 > 0x8F) return 0;  // > U+10FFFF
        return 4;
    }
    return 0;  // continuation byte, 0xC0/0xC1, or 0xF5..0xFF
}

class Parser {
public:
    Parser(std::string_view text, const std::string& source, bool big_integers_as_double)
        : t_(text), src_(source), big_as_double_(big_integers_as_double) {}

    Value parse_document() {
        skip_ws();
        Value v = parse_value(0);
        skip_ws();
        if (pos_ != t_.size()) error("unexpected trailing characters after the JSON value");
        return v;
    }

private:
    std::string_view t_;
    const std::string& src_;
    bool big_as_double_;  // parse_lenient_numbers: an integer beyond 64 bits is a double
    size_t pos_ = 0;

    // Whether the integer literal [first, last) (digits, after a '-' when neg) is outside
    // int64 (negative) or uint64 (positive).
    static bool beyond_64_bits(const char* first, const char* last, bool neg) {
        uint64_t mag = 0;
        const uint64_t limit = neg ? static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1
                                   : std::numeric_limits<uint64_t>::max();
        for (const char* p = first + (neg ? 1 : 0); p < last; ++p) {
            const auto dg = static_cast<uint64_t>(*p - '0');
            if (mag > (limit - dg) / 10) return true;
            mag = mag * 10 + dg;
        }
        return false;
    }

    // Where the value being parsed sits: a member's key, or (key null) an array index.
    struct Step {
        const std::string* key;
        size_t index;
    };
    std::vector<Step> path_;

    // Duplicate keys: Python's json and transformers keep the last, a find() here the first,
    // so the same file would mean two things (config.json's n_embd, an adapter's r). Refused,
    // as the safetensors reader refuses its own; named with the second one's byte offset and
    // JSON path. Sorted rather than hashed: no copies of a vocabulary's 50k keys.
    void refuse_duplicate_keys(const std::vector<Member>& obj, const std::vector<size_t>& key_at) {
        if (obj.size() < 2) return;
        std::vector<size_t> order(obj.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return obj[a].key != obj[b].key ? obj[a].key < obj[b].key : a < b;
        });
        size_t second = obj.size();  // the earliest member whose key came before it
        for (size_t k = 1; k < order.size(); ++k)
            if (obj[order[k]].key == obj[order[k - 1]].key) second = std::min(second, order[k]);
        if (second == obj.size()) return;
        std::string where = "$";
        for (const Step& s : path_) where += s.key ? path_step(*s.key) : cat("[", s.index, "]");
        where += path_step(obj[second].key);
        fail(Status::Format, src_, ": duplicate key ", shown(obj[second].key), " at byte ",
             key_at[second], " (", where, "): JSON readers disagree on which one counts (Python "
             "and transformers take the last); remove one of them");
    }

    // .key for a plain key, else ["key"].
    static std::string path_step(const std::string& key) {
        bool plain = !key.empty();
        for (const char c : key)
            plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
        return plain ? "." + key : "[" + shown(key) + "]";
    }

    // A key as messages show it: quoted (control characters escaped), cut after 64 bytes.
    static std::string shown(const std::string& key) {
        constexpr size_t kShown = 64;
        if (key.size() <= kShown) return quote(key);
        size_t n = kShown;
        while (n > 0 && (static_cast<uint8_t>(key[n]) & 0xC0) == 0x80) --n;  // whole characters
        return quote(key.substr(0, n)) + cat("... (", key.size(), " bytes)");
    }

    [[noreturn]] void error(const char* what) const {
        fail(Status::Format, src_, ": invalid JSON at byte ", pos_, ": ", what);
    }

    bool at_end() const { return pos_ >= t_.size(); }
    char peek() const { return at_end() ? '\0' : t_[pos_]; }

    void skip_ws() {
        while (!at_end()) {
            const char c = t_[pos_];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
            ++pos_;
        }
    }

    void expect_literal(const char* lit) {
        const size_t n = std::strlen(lit);
        if (t_.substr(pos_, n) != lit) error("invalid literal");
        pos_ += n;
    }

    Value parse_value(int depth) {
        if (at_end()) error("unexpected end of input, expected a value");
        Value v;
        switch (t_[pos_]) {
            case '{': parse_object(v, depth + 1); break;
            case '[': parse_array(v, depth + 1); break;
            case '"':
                v.kind = Value::Kind::String;
                v.s = parse_string();
                break;
            case 't':
                expect_literal("true");
                v.kind = Value::Kind::Bool;
                v.b = true;
                break;
            case 'f':
                expect_literal("false");
                v.kind = Value::Kind::Bool;
                break;
            case 'n': expect_literal("null"); break;
            default:
                if (t_[pos_] == '-' || (t_[pos_] >= '0' && t_[pos_] <= '9'))
                    parse_number(v);
                else
                    error("unexpected character, expected a value");
        }
        return v;
    }

    void parse_object(Value& v, int depth) {
        if (depth > kMaxDepth) error("nesting too deep");
        v.kind = Value::Kind::Object;
        std::vector<size_t> key_at;  // each member's key's byte offset (for the error)
        ++pos_;  // '{'
        skip_ws();
        if (peek() == '}') {
            ++pos_;
            return;
        }
        for (;;) {
            skip_ws();
            if (peek() != '"') error(at_end() ? "unexpected end of input in object"
                                              : "expected a string key in object");
            Member m;
            key_at.push_back(pos_);
            m.key = parse_string();
            skip_ws();
            if (peek() != ':') error("expected ':' after object key");
            ++pos_;
            skip_ws();
            path_.push_back({&m.key, 0});
            m.value = parse_value(depth);
            path_.pop_back();
            v.obj.push_back(std::move(m));
            skip_ws();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() == '}') {
                ++pos_;
                refuse_duplicate_keys(v.obj, key_at);
                return;
            }
            error(at_end() ? "unexpected end of input in object" : "expected ',' or '}' in object");
        }
    }

    void parse_array(Value& v, int depth) {
        if (depth > kMaxDepth) error("nesting too deep");
        v.kind = Value::Kind::Array;
        ++pos_;  // '['
        skip_ws();
        if (peek() == ']') {
            ++pos_;
            return;
        }
        for (;;) {
            skip_ws();
            path_.push_back({nullptr, v.arr.size()});
            v.arr.push_back(parse_value(depth));
            path_.pop_back();
            skip_ws();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() == ']') {
                ++pos_;
                return;
            }
            error(at_end() ? "unexpected end of input in array" : "expected ',' or ']' in array");
        }
    }

    uint32_t parse_hex4() {
        if (t_.size() - pos_ < 4) error("truncated \\u escape");
        uint32_t cp = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = t_[pos_++];
            cp <<= 4;
            if (c >= '0' && c <= '9') cp |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') cp |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') cp |= static_cast<uint32_t>(c - 'A' + 10);
            else error("invalid hex digit in \\u escape");
        }
        return cp;
    }

    std::string parse_string() {
        ++pos_;  // opening quote
        std::string out;
        for (;;) {
            if (at_end()) error("unterminated string");
            const auto c = static_cast<unsigned char>(t_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) error("unescaped control character in string");
            if (c == '\\') {
                ++pos_;
                if (at_end()) error("unterminated string");
                const char e = t_[pos_++];
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
                        uint32_t cp = parse_hex4();
                        if (cp >= 0xDC00 && cp <= 0xDFFF) error("lone low surrogate in \\u escape");
                        if (cp >= 0xD800 && cp <= 0xDBFF) {
                            // A high surrogate must be followed by an escaped low surrogate.
                            if (t_.substr(pos_, 2) != "\\u") error("lone high surrogate in \\u escape");
                            pos_ += 2;
                            const uint32_t lo = parse_hex4();
                            if (lo < 0xDC00 || lo > 0xDFFF) error("high surrogate not followed by a low surrogate");
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        }
                        append_utf8(out, cp);
                        break;
                    }
                    default: --pos_; error("invalid escape sequence in string");
                }
                continue;
            }
            const size_t n = utf8_seq_len(t_, pos_);
            if (n == 0) error("invalid UTF-8 in string");
            out.append(t_.data() + pos_, n);
            pos_ += n;
        }
    }

    void parse_number(Value& v) {
        const size_t start = pos_;
        bool neg = false;
        if (peek() == '-') {
            neg = true;
            ++pos_;
        }
        const auto digit = [&] { return !at_end() && t_[pos_] >= '0' && t_[pos_] <= '9'; };
        if (!digit()) error("invalid number");
        if (t_[pos_] == '0') {
            ++pos_;
            if (digit()) error("leading zeros are not allowed in numbers");
        } else {
            while (digit()) ++pos_;
        }
        bool integral = true;
        if (peek() == '.') {
            integral = false;
            ++pos_;
            if (!digit()) error("expected digits after decimal point");
            while (digit()) ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!digit()) error("expected digits in exponent");
            while (digit()) ++pos_;
        }
        const char* first = t_.data() + start;
        const char* last = t_.data() + pos_;
        if (integral && big_as_double_ && beyond_64_bits(first, last, neg)) integral = false;
        if (integral) {
            // Magnitude as uint64 with overflow detection, then fit the sign.
            uint64_t mag = 0;
            for (const char* p = first + (neg ? 1 : 0); p < last; ++p) {
                const auto dg = static_cast<uint64_t>(*p - '0');
                if (mag > (std::numeric_limits<uint64_t>::max() - dg) / 10) {
                    pos_ = start;
                    error("integer out of 64-bit range");
                }
                mag = mag * 10 + dg;
            }
            if (neg) {
                // -2^63 is the most negative int64.
                if (mag > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1) {
                    pos_ = start;
                    error("integer out of 64-bit range");
                }
                v.kind = Value::Kind::Int;
                v.i = mag == 0 ? 0 : static_cast<int64_t>(~(mag - 1));  // two's complement -mag
            } else if (mag <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                v.kind = Value::Kind::Int;
                v.i = static_cast<int64_t>(mag);
            } else {
                v.kind = Value::Kind::Uint;
                v.u = mag;
            }
            return;
        }
        // from_chars is locale-independent, unlike strtod. Out-of-range doubles are rejected.
        double d = 0.0;
        const auto res = std::from_chars(first, last, d);
        if (res.ec != std::errc() || res.ptr != last) {
            pos_ = start;
            error("number out of range");
        }
        v.kind = Value::Kind::Double;
        v.d = d;
    }
};

}  // namespace

Value parse(std::string_view text, const std::string& source) {
    Parser p(text, source, false);
    return p.parse_document();
}

Value parse_lenient_numbers(std::string_view text, const std::string& source) {
    Parser p(text, source, true);
    return p.parse_document();
}

bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_seq_len(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string quote(std::string_view s) { return quote_string(s); }

}  // namespace trt::json
