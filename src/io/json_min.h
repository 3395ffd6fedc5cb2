// json_min: a small, strict JSON (RFC 8259) parser and string escaper for file headers that
// may be hostile (safetensors headers, config.json). Strict means: exactly one value, only
// whitespace after it, valid UTF-8 in strings, no lone surrogates, no leading zeros, no
// trailing commas, no key twice in one object (readers disagree on which one counts).
// Integer literals keep full 64-bit precision (int64, or uint64 above INT64_MAX); an integer
// literal outside both is an error rather than silently rounded.
// Nesting is bounded (kMaxDepth) so deep input cannot overflow the stack.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trt::json {

constexpr int kMaxDepth = 64;

struct Member;

struct Value {
    enum class Kind { Null, Bool, Int, Uint, Double, String, Array, Object };
    Kind kind = Kind::Null;
    bool b = false;
    int64_t i = 0;    // Kind::Int: any integer literal that fits int64
    uint64_t u = 0;   // Kind::Uint: an integer literal in (INT64_MAX, UINT64_MAX]
    double d = 0.0;   // Kind::Double: a literal with a fraction or exponent
    std::string s;
    std::vector<Value> arr;
    std::vector<Member> obj;  // in document order; keys are unique (parse refuses duplicates)

    bool is_object() const { return kind == Kind::Object; }
    bool is_array() const { return kind == Kind::Array; }
    bool is_string() const { return kind == Kind::String; }
    bool is_integer() const { return kind == Kind::Int || kind == Kind::Uint; }
    // Integer value as uint64 if it is a non-negative integer literal.
    bool get_u64(uint64_t& out) const;
    // Integer value as int64 if it is an integer literal that fits.
    bool get_i64(int64_t& out) const;
    // First member with this key, or nullptr (objects only).
    const Value* find(std::string_view key) const;
    const char* kind_name() const;  // "object", "array", "string", "integer", ...
};

struct Member {
    std::string key;
    Value value;
};

// Parses text as one JSON value. On any fault throws Error(Status::Format) with message
// "<source>: invalid JSON at byte <offset>: <reason>"; a key twice in one object:
// "<source>: duplicate key "<key>" at byte <offset> (<JSON path>): ...".
Value parse(std::string_view text, const std::string& source);
// The same, but an integer literal beyond 64 bits becomes a Double (rounded) instead of an
// error: for files that carry one where nothing needs it exactly (Hugging Face's
// tokenizer_config.json writes model_max_length = 1000000000000000019884624838656).
Value parse_lenient_numbers(std::string_view text, const std::string& source);

// True if s is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool valid_utf8(std::string_view s);

// s as a JSON string literal including the quotes; s must be valid UTF-8 (not checked here).
std::string quote(std::string_view s);

}  // namespace trt::json
