// The pre-tokenizer scanners against what their regexes match, worked out by hand from the
// regex alternatives in order (pretokenizer.h). The oracle test (tests/tokenizer) holds the
// whole pipeline against an independent implementation on a large corpus.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode_classes.h"

namespace {

using trt::tok::SplitRule;

std::vector<std::string> pieces(const std::string& text, SplitRule rule) {
    std::vector<std::string_view> views;
    trt::tok::split(text, rule, views);
    std::string joined;
    for (auto v : views) joined += v;
    EXPECT_EQ(joined, text) << "the pieces must cover the text";
    return {views.begin(), views.end()};
}

using P = std::vector<std::string>;

TEST(PreTokenizer, Gpt2) {
    const auto g = SplitRule::Gpt2;
    EXPECT_EQ(pieces("Hello world", g), (P{"Hello", " world"}));
    EXPECT_EQ(pieces("  hello", g), (P{" ", " hello"}));
    EXPECT_EQ(pieces("don't we'll", g), (P{"don", "'t", " we", "'ll"}));
    EXPECT_EQ(pieces("I'M", g), (P{"I", "'", "M"}));  // contractions are case-sensitive here
    EXPECT_EQ(pieces("abc123def", g), (P{"abc", "123", "def"}));
    EXPECT_EQ(pieces("3.14", g), (P{"3", ".", "14"}));
    EXPECT_EQ(pieces("hello   \n", g), (P{"hello", "   \n"}));  // trailing run: whole
    EXPECT_EQ(pieces("a  b", g), (P{"a", " ", " b"}));
    EXPECT_EQ(pieces("x\t\ty", g), (P{"x", "\t", "\t", "y"}));
    EXPECT_EQ(pieces("?!... yes", g), (P{"?!...", " yes"}));
    EXPECT_EQ(pieces("日本語 テキスト", g), (P{"日本語", " テキスト"}));
    EXPECT_EQ(pieces("\xF0\x9F\x98\x80\xF0\x9F\x98\x80 x", g), (P{"\xF0\x9F\x98\x80\xF0\x9F\x98\x80", " x"}));
    EXPECT_EQ(pieces("a\xC2\xA0" "b", g), (P{"a", "\xC2\xA0", "b"}));  // NBSP is \s, not ' '
    EXPECT_EQ(pieces("", g), P{});
    EXPECT_EQ(pieces(" ", g), (P{" "}));
}

TEST(PreTokenizer, Cl100k) {
    const auto c = SplitRule::Cl100k;
    EXPECT_EQ(pieces("Hello world", c), (P{"Hello", " world"}));
    EXPECT_EQ(pieces("I'M we'Re", c), (P{"I", "'M", " we", "'Re"}));  // (?i:...)
    EXPECT_EQ(pieces("12345", c), (P{"123", "45"}));
    EXPECT_EQ(pieces("(hello)", c), (P{"(hello", ")"}));
    EXPECT_EQ(pieces("hello\n\nworld", c), (P{"hello", "\n\n", "world"}));
    EXPECT_EQ(pieces("  hello", c), (P{" ", " hello"}));
    EXPECT_EQ(pieces("x = 1;\n", c), (P{"x", " =", " ", "1", ";\n"}));
    EXPECT_EQ(pieces("a \n b", c), (P{"a", " \n", " b"}));
    EXPECT_EQ(pieces("end  ", c), (P{"end", "  "}));
    EXPECT_EQ(pieces("\tword", c), (P{"\tword"}));  // any non-newline, non-L/N prefix
    EXPECT_EQ(pieces("\nword", c), (P{"\n", "word"}));
    EXPECT_EQ(pieces("it\xC5\xBF", c), (P{"it\xC5\xBF"}));  // ſ is a letter
    EXPECT_EQ(pieces("'\xC5\xBF", c), (P{"'\xC5\xBF"}));    // (?i:'s) matches 'ſ
    EXPECT_EQ(pieces("12345", SplitRule::Cl100kSingleDigits), (P{"1", "2", "3", "4", "5"}));
}

TEST(PreTokenizer, KnownPatternsOnly) {
    SplitRule r;
    EXPECT_TRUE(trt::tok::split_rule_for(trt::tok::kGpt2Pattern, r));
    EXPECT_EQ(r, SplitRule::Gpt2);
    EXPECT_FALSE(trt::tok::split_rule_for("\\s+", r));
}

TEST(UnicodeClasses, LettersNumbersSpaces) {
    using namespace trt::tok;
    EXPECT_TRUE(is_letter(U'a') && is_letter(U'Ж') && is_letter(U'語') && is_letter(0x17F));
    EXPECT_FALSE(is_letter(U'1') || is_letter(U' ') || is_letter(0x1F600));
    EXPECT_TRUE(is_number(U'7') && is_number(0x0663) && is_number(0x2167));  // Arabic 3, Ⅷ
    EXPECT_TRUE(is_space(U'\t') && is_space(0xA0) && is_space(0x3000) && is_space(0x85));
    EXPECT_FALSE(is_space(0xFEFF) || is_space(U'x'));
    EXPECT_EQ(invalid_utf8_at("ok \xC3\xA9"), std::string_view::npos);
    EXPECT_EQ(invalid_utf8_at("ab\xC3"), 2u);             // truncated
    EXPECT_EQ(invalid_utf8_at("\xC0\xAF"), 0u);           // overlong
    EXPECT_EQ(invalid_utf8_at("x\xED\xA0\x80"), 1u);      // surrogate
    EXPECT_EQ(invalid_utf8_at("\xF4\x90\x80\x80"), 0u);   // above U+10FFFF
}

}  // namespace
