// A pre-pass over TOML text before toml++ sees it. toml++ 3.3.0 (Debian 12's) reaches
// __builtin_unreachable — undefined behaviour — when it tests a non-ASCII code point in
// U+00A1..U+0499, U+2CEE..U+30E7 or U+FB26..U+FEFE for whitespace
// (is_non_ascii_horizontal_whitespace handles only some of its lookup blocks; fixed upstream
// after 3.3.0). It tests for whitespace between tokens and after a line-ending backslash in a
// multi-line basic string. TOML allows non-ASCII text only inside strings and comments, so
// this pass refuses, with line:col:
//   - bytes that are not valid UTF-8 (anywhere);
//   - non-ASCII characters outside strings and comments (never valid TOML);
//   - a non-ASCII character right after a backslash in a basic string, or as the first
//     character after a multi-line string's line-ending backslash (valid TOML, but it is
//     exactly where toml++ would misbehave; such a config must start that line with an ASCII
//     character).
// Why a pre-pass and not a patched copy of toml++: the project keeps using the distribution's
// header (packaged, security-updated), and the pass is small and fuzzed (tests/fuzz).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace trt {

struct TomlGuardProblem {
    size_t line = 0, column = 0;  // 1-based; column counts bytes
    std::string what;             // "" when the text may be given to toml++
};

TomlGuardProblem toml_guard(std::string_view text);

}  // namespace trt
