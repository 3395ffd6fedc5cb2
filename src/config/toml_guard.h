// What stands between untrusted TOML text and toml++. toml++ 3.3.0 (Debian 12's) reaches
// __builtin_unreachable — undefined behaviour — when it tests a non-ASCII code point in
// U+00A1..U+0499, U+2CEE..U+30E7 or U+FB26..U+FEFE for whitespace
// (is_non_ascii_horizontal_whitespace handles only some of its lookup blocks; fixed upstream
// after 3.3.0). It makes that test wherever it looks for a token's end, so a non-ASCII
// character anywhere outside a string or comment can reach it, and so can the first
// character after a multi-line string's line-ending backslash.
//
// Modelling where toml++ thinks strings are is not safe: a pre-pass that did so was beaten
// twice by the fuzzer (`l=1"Ǜ`, `l=1l="Ǜ`: toml++'s number scanner reads on through a quote).
// So config_toml.cpp lets toml++ itself decide, in two passes:
//   1. toml_guard() refuses, without any model of TOML, bytes that are not valid UTF-8 and a
//      non-ASCII character as the first non-blank character after a backslash that ends a
//      line (where toml++ would test it even inside a string);
//   2. toml++ parses toml_ascii_shadow(text): the text with every non-ASCII character
//      replaced by one '@'. '@' is valid TOML only inside strings and comments, exactly
//      where non-ASCII text is, and toml++ treats string and comment characters as plain
//      content, so if the shadow parses, every non-ASCII character of the text lies where
//      toml++ will not test it. An error in the shadow is the text's error (the shadow keeps
//      every line:column, counted in characters as toml++ counts them; toml++'s "saw '@'"
//      is given back with the real character).
//   3. only then does toml++ parse the text itself.
// Why not a patched copy of toml++: the project keeps the distribution's header (packaged,
// security-updated); this costs a second parse of a small file, and is fuzzed (tests/fuzz).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace trt {

struct TomlGuardProblem {
    size_t line = 0, column = 0;  // 1-based; column counts characters (code points)
    std::string what;             // "" when the text passed
};

// Step 1: invalid UTF-8, and non-ASCII first after a line-ending backslash.
TomlGuardProblem toml_guard(std::string_view text);

// Step 2's text: each non-ASCII character becomes '@' (a leading byte order mark is kept).
// `text` must have passed toml_guard().
std::string toml_ascii_shadow(std::string_view text);

// The character at 1-based line:column of `text` (as toml++ counts them): its UTF-8 bytes
// (a view into `text`; empty when there is none) and its code point.
struct TomlChar {
    std::string_view bytes;
    char32_t code_point = 0;
};
TomlChar toml_char_at(std::string_view text, size_t line, size_t column);

}  // namespace trt
