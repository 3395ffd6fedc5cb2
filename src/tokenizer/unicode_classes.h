// The character classes of byte-level BPE pre-tokenizer regexes (\p{L}, \p{N}, \s), and
// UTF-8 decoding for the scanners that apply them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trt::tok {

bool is_letter(char32_t c);      // \p{L}: general category L* (unicode_tables.inc)
bool is_number(char32_t c);      // \p{N}: general category N*
// \s: the Unicode White_Space property (U+0009..000D, 0020, 0085, 00A0, 1680, 2000..200A,
// 2028, 2029, 202F, 205F, 3000), as the regex engines of Hugging Face's tokenizers (Rust)
// define it. (JavaScript's \s differs on U+0085 and U+FEFF.)
bool is_space(char32_t c);

// The Unicode general categories (and groups of them) the regex engine reads: \p{Lu} etc.
enum class Category { L, Lu, Ll, Lt, Lm, Lo, M, N, Nd, P, Pc, S };
bool in_category(Category c, char32_t cp);
// The category a \p{...} name means ("L", "Letter", "Lu", "Uppercase_Letter", ...), or false.
bool category_named(std::string_view name, Category& c);

// The code point starting at text[i] and its length in bytes. text must be valid UTF-8 (the
// tokenizer checks it once, up front).
struct Decoded {
    char32_t cp;
    int len;
};
Decoded decode_utf8(std::string_view text, size_t i);

}  // namespace trt::tok

namespace trt::tok {
// The byte offset of the first malformed UTF-8 sequence in text (overlong forms, surrogates
// and code points above U+10FFFF are malformed), or std::string_view::npos.
size_t invalid_utf8_at(std::string_view text);
}  // namespace trt::tok
