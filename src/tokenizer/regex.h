// A backtracking regex engine over code points for the patterns of tokenizer.json files
// (pre-tokenizer Splits, Replace normalizers), with the leftmost-first semantics of the
// engines those files are written for (Oniguruma in Hugging Face's tokenizers, JavaScript's in
// transformers.js). What it reads:
//   alternation |, groups (...) (?:...) (?i:...) (?i) (?>...), look-ahead (?=...) (?!...),
//   quantifiers ? * + {m} {m,} {m,n}, lazy (…?) and possessive (…+) forms,
//   classes [...] [^...] with ranges, \p{..} \P{..} (L Lu Ll Lt Lm Lo M N Nd P Pc S and their
//   long names), \s \S \d \D \w \W, escapes \r \n \t \f \v \0 \xHH \x{H..} \uHHHH and escaped
//   punctuation, . (any character but \n), ^ $ (line anchors), \A \z.
// Classes follow Unicode: \s is White_Space, \d is \p{Nd}, \w is [\p{L}\p{M}\p{Nd}\p{Pc}].
// Case-insensitive groups fold ASCII letters, and U+017F (ſ) to s and U+212A (Kelvin) to k.
// Anything else (look-behind, back-references, \b, nested classes) is refused at compile time.
//
// The work is bounded: a search that takes more steps than kStepsPerByte per byte of its text
// (plus kBaseSteps) stops with Error(Unsupported), so a pattern that backtracks
// catastrophically fails clearly instead of hanging.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/unicode_classes.h"

namespace trt::tok {

class Regex {
public:
    static constexpr uint64_t kBaseSteps = 1u << 20;
    static constexpr uint64_t kStepsPerByte = 1024;
    static constexpr size_t kMaxProgram = 1u << 16;  // instructions (counted repeats expand)

    Regex() = default;
    // Throws Error(Format) for a malformed pattern and Error(Unsupported) for syntax outside
    // the list above, naming `source` and the character offset.
    Regex(std::string_view pattern, const std::string& source);

    // The leftmost-first, non-overlapping matches over text (valid UTF-8), in order, as
    // [start, end) byte offsets (empty matches included; after one the search moves on a
    // character).
    void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
    const std::string& pattern() const { return pattern_; }

    enum class Op : uint8_t {
        Char, Any, Class, Split, Jmp, Match, Bol, Eol, TextStart, TextEnd, Look, Atomic, Mark,
        Progress
    };
    struct Inst {
        Op op;
        bool flag = false;   // Char/Class: case-insensitive; Look: negative
        char32_t c = 0;      // Char
        uint32_t x = 0, y = 0;  // Split: first, second; Jmp: x; Class: x = class; Look/Atomic:
                                // x = after the sub-program; Mark/Progress: x = register
    };
    struct ClassItem {
        enum class Kind : uint8_t { Range, Category, Space, Digit, Word } kind;
        bool negated = false;
        char32_t first = 0, last = 0;  // Range
        Category category = Category::L;
    };
    struct Class {
        bool negated = false;
        std::vector<ClassItem> items;
    };

private:
    bool match_at(std::string_view text, size_t start, uint32_t pc, size_t& end,
                  uint64_t& steps, uint64_t limit) const;
    bool class_has(const Class& c, char32_t cp, bool icase) const;

    std::string pattern_;
    std::vector<Inst> prog_;
    std::vector<Class> classes_;
    uint32_t registers_ = 0;
};

}  // namespace trt::tok
