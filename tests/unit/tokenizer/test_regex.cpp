// The regex engine of pre-tokenizer patterns (tokenizer/regex.h): leftmost-first semantics,
// quantifiers (greedy, lazy, possessive, counted), classes with Unicode categories,
// look-ahead, case-insensitive groups, the step limit, clear refusals; and the hand-written
// GPT-2 / cl100k scanners (pretokenizer.h), kept as fast paths, checked equal to the engine
// on random texts. Real patterns (GPT-4o, DeepSeek V3) are held against JavaScript's engine
// by the oracle test (tests/tokenizer/oracle_test.sh).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/json_min.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/regex.h"

namespace {

using trt::tok::Regex;
using Strings = std::vector<std::string>;

Strings matches(const std::string& pattern, const std::string& text) {
    std::vector<std::pair<size_t, size_t>> m;
    Regex(pattern, "test").find_all(text, m);
    Strings out;
    for (const auto& [a, b] : m) out.push_back(text.substr(a, b - a));
    return out;
}

void expect_refused(const std::string& pattern, trt::Status status,
                    const char* word = "character") {
    try {
        Regex(pattern, "test");
        ADD_FAILURE() << pattern << ": accepted";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), status) << pattern << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
}

TEST(Regex, LeftmostFirstAlternationAndQuantifiers) {
    EXPECT_EQ(matches("a|ab", "abab"), (Strings{"a", "a"}));  // first alternative wins
    EXPECT_EQ(matches("ab|a", "abab"), (Strings{"ab", "ab"}));
    EXPECT_EQ(matches("a+", "caaab a"), (Strings{"aaa", "a"}));
    EXPECT_EQ(matches("a+?", "aaa"), (Strings{"a", "a", "a"}));
    EXPECT_EQ(matches("a{2,3}", "aaaaaaa"), (Strings{"aaa", "aaa"}));
    EXPECT_EQ(matches("a{2}", "aaaaa"), (Strings{"aa", "aa"}));
    EXPECT_EQ(matches("a{2,}", "a aaaa"), (Strings{"aaaa"}));
    EXPECT_EQ(matches("x{1,2}?y", "xxy"), (Strings{"xxy"}));
    // Possessive and atomic: no giving back, so the trailing a cannot match.
    EXPECT_EQ(matches("a++a", "aaaa"), (Strings{}));
    EXPECT_EQ(matches("(?>a+)b|a", "aab"), (Strings{"aab"}));
    EXPECT_EQ(matches("a{,2}", "a{,2}"), (Strings{"a{,2}"}));  // not a quantifier: literal
    // Empty matches: kept as matches, and the search moves on a character.
    EXPECT_EQ(matches("x*", "ab"), (Strings{"", "", ""}));
    EXPECT_EQ(matches("(a*)*b", "aab"), (Strings{"aab"}));  // a loop that matches empty ends
    EXPECT_EQ(matches("(?:)+", "z"), (Strings{"", ""}));
}

TEST(Regex, ClassesAndUnicodeCategories) {
    const std::string text = "Hello \xC3\x89t\xC3\xA9 42\xD9\xA3 !? _x \xE2\x82\xAC \xCC\x81";
    EXPECT_EQ(matches("\\p{Lu}", text), (Strings{"H", "\xC3\x89"}));
    EXPECT_EQ(matches("\\p{Ll}+", text), (Strings{"ello", "t\xC3\xA9", "x"}));
    EXPECT_EQ(matches("\\p{N}+", text), (Strings{"42\xD9\xA3"}));  // Arabic-Indic 3 too
    EXPECT_EQ(matches("[\\p{P}]+", text), (Strings{"!?", "_"}));
    EXPECT_EQ(matches("\\p{S}", text), (Strings{"\xE2\x82\xAC"}));  // €
    EXPECT_EQ(matches("\\p{M}", text), (Strings{"\xCC\x81"}));
    EXPECT_EQ(matches("[^\\s\\p{L}\\p{N}]+", "a,b;; c"), (Strings{",", ";;"}));
    EXPECT_EQ(matches("\\P{L}+", "ab12cd"), (Strings{"12"}));
    EXPECT_EQ(matches("[a-c\\-x]+", "zab-xcq"), (Strings{"ab-xc"}));
    EXPECT_EQ(matches("[]a]+", "]a]b"), (Strings{"]a]"}));
    EXPECT_EQ(matches("\\s+", "a \t\xC2\xA0\xE3\x80\x80" "b"), (Strings{" \t\xC2\xA0\xE3\x80\x80"}));
    EXPECT_EQ(matches("\\w+", "ab_1 \xC3\xA9!"), (Strings{"ab_1", "\xC3\xA9"}));
    EXPECT_EQ(matches("\\d", "1\xD9\xA3" "a"), (Strings{"1", "\xD9\xA3"}));
    EXPECT_EQ(matches("[\\x41-\\x{43}\\u0064]+", "ABCDd"), (Strings{"ABC", "d"}));
    EXPECT_EQ(matches(".+", "ab\ncd"), (Strings{"ab", "cd"}));
    EXPECT_EQ(matches("[\xE4\xB8\x80-\xE9\xBE\xA5]+", "a\xE4\xBD\xA0\xE5\xA5\xBD" "b"),
              (Strings{"\xE4\xBD\xA0\xE5\xA5\xBD"}));  // 一-龥
}

TEST(Regex, LookAheadCaseInsensitiveAndAnchors) {
    EXPECT_EQ(matches("\\s+(?!\\S)|\\s+", "a   b"), (Strings{"  ", " "}));
    EXPECT_EQ(matches("a(?=b)", "ab ac"), (Strings{"a"}));
    EXPECT_EQ(matches("(?i:'s|'ll)", "'S 'Ll 's '\xC5\xBF"), (Strings{"'S", "'Ll", "'s", "'\xC5\xBF"}));
    EXPECT_EQ(matches("x(?i)ab|AB", "xAB Ab"), (Strings{"xAB", "Ab"}));  // to the group's end
    EXPECT_EQ(matches("[a-z]+", "ABC"), (Strings{}));
    EXPECT_EQ(matches("(?i:[a-z]+)", "ABC"), (Strings{"ABC"}));
    EXPECT_EQ(matches("^a", "ab\nab"), (Strings{"a", "a"}));
    EXPECT_EQ(matches("b$", "ab\nab"), (Strings{"b", "b"}));
    EXPECT_EQ(matches("\\Aa|b\\z", "aab\nab"), (Strings{"a", "b"}));
}

TEST(Regex, RefusesWhatItDoesNotImplementAndMalformedPatterns) {
    expect_refused("(?<=a)b", trt::Status::Unsupported);
    expect_refused("(a)\\1", trt::Status::Unsupported);
    expect_refused("\\bword", trt::Status::Unsupported);
    expect_refused("[[:alpha:]]", trt::Status::Unsupported);
    expect_refused("[a[b]]", trt::Status::Unsupported);
    expect_refused("\\p{Greek}", trt::Status::Unsupported);
    expect_refused("a{1001}", trt::Status::Unsupported);
    expect_refused("(ab", trt::Status::Format);
    expect_refused("ab)", trt::Status::Format);
    expect_refused("[ab", trt::Status::Format);
    expect_refused("*a", trt::Status::Format);
    expect_refused("a{3,2}", trt::Status::Format);
    expect_refused("[z-a]", trt::Status::Format);
    expect_refused("a**", trt::Status::Format);
    expect_refused("\\x{110000}", trt::Status::Format);
    expect_refused("\\", trt::Status::Format);
    // A pattern that compiles to too many instructions.
    expect_refused("((((a{1000}){1000}){1000}){1000})", trt::Status::Unsupported, "instructions");
}

TEST(Regex, CatastrophicBacktrackingStopsWithAClearError) {
    const Regex hostile("(a+)+b", "t.json");
    std::vector<std::pair<size_t, size_t>> m;
    try {
        hostile.find_all(std::string(40, 'a'), m);
        ADD_FAILURE() << "finished";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::Unsupported);
        EXPECT_NE(std::string(e.what()).find("backtracks catastrophically"), std::string::npos)
            << e.what();
    }
    m.clear();
    hostile.find_all("aaab", m);  // the same pattern on a text it matches
    EXPECT_EQ(m.size(), 1u);
}

// The scanners of pretokenizer.h are fast paths of three regexes: the engine must cut every
// text as they do. Random texts over characters of each class the patterns tell apart.
TEST(Regex, FastScannersEqualTheEngine) {
    const std::vector<std::string> alphabet = {
        "a", "b", "s", "t", "S", "T", "r", "e", "v", "l", "m", "d", "D", "L", "R", "E", "'", " ",
        "  ", "\t", "\n", "\r", "\r\n", "0", "7", "\xD9\xA3", "\xC2\xB2", ",", ".", "!", "/", "-",
        "\xC3\xA9", "\xE6\x97\xA5", "\xC5\xBF", "\xC2\xA0", "\xE3\x80\x80", "\xF0\x9F\x98\x80",
        "\xCC\x81", "\xE2\x80\xA8", "\x0B", "\x0C", "_", "\xE2\x82\xAC"};
    std::mt19937 rng(39);
    for (const auto& [rule, pattern] :
         std::vector<std::pair<trt::tok::SplitRule, std::string>>{
             {trt::tok::SplitRule::Gpt2, trt::tok::kGpt2Pattern},
             {trt::tok::SplitRule::Cl100k,
              R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
             {trt::tok::SplitRule::Cl100kSingleDigits,
              R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}) {
        trt::tok::SplitRule known;
        ASSERT_TRUE(trt::tok::split_rule_for(pattern, known));
        ASSERT_EQ(known, rule);
        const Regex engine(pattern, "test");
        for (int round = 0; round < 3000; round++) {
            std::string text;
            const int n = 1 + static_cast<int>(rng() % 24);
            for (int k = 0; k < n; k++) text += alphabet[rng() % alphabet.size()];
            std::vector<std::string_view> fast;
            trt::tok::split(text, rule, fast);
            std::vector<std::pair<size_t, size_t>> m;
            engine.find_all(text, m);
            Strings a, b;
            for (std::string_view v : fast) a.emplace_back(v);
            for (const auto& [s, e] : m)
                if (e > s) b.push_back(text.substr(s, e - s));
            ASSERT_EQ(a, b) << "pattern " << pattern << " on " << trt::json::quote(text);
        }
    }
}

// Split with a regex and each behaviour, Digits, and a Sequence of Splits (DeepSeek V3's
// layout), through the pre-tokenizer pipeline.
TEST(Regex, SplitDigitsAndSequencesOfSplits) {
    const std::string source = "t.json";
    const trt::tok::JsonReader r{source};
    const auto run = [&](const std::string& json, const std::string& text) {
        const trt::json::Value v = trt::json::parse(json, "p");
        Strings out;
        trt::tok::PreTokenizer::from_json(r, &v, "pre_tokenizer").run(text, true, out);
        return out;
    };
    // GPT-4o's layout: Removed with invert keeps the matches.
    EXPECT_EQ(run(R"({"type": "Split", "pattern": {"Regex": "\\p{L}+|\\p{N}{1,3}"}, "behavior": "Removed", "invert": true})",
                  "ab 12345, c"),
              (Strings{"ab", "123", "45", "c"}));
    EXPECT_EQ(run(R"({"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "MergedWithNext", "invert": false})",
                  "a  b c"),
              (Strings{"a", "  b", " c"}));
    EXPECT_EQ(run(R"({"type": "Digits", "individual_digits": true})", "a12b3"),
              (Strings{"a", "1", "2", "b", "3"}));
    EXPECT_EQ(run(R"({"type": "Digits", "individual_digits": false})", "a12b3"),
              (Strings{"a", "12", "b", "3"}));
    EXPECT_EQ(run(R"({"type": "Sequence", "pretokenizers": [
                  {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": false},
                  {"type": "Split", "pattern": {"Regex": "[\u4e00-\u9fa5]+"}, "behavior": "Isolated", "invert": false},
                  {"type": "Split", "pattern": {"Regex": " ?\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false}]})",
                  "ab 1234\xE4\xBD\xA0\xE5\xA5\xBD cd"),
              (Strings{"ab", " ", "123", "4", "\xE4\xBD\xA0\xE5\xA5\xBD", " cd"}));
    EXPECT_THROW(run(R"({"type": "Split", "pattern": {"Regex": "(?<=a)b"}, "behavior": "Isolated", "invert": false})", "ab"),
                 trt::Error);
}

}  // namespace
