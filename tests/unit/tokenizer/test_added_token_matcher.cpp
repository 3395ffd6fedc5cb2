// AddedTokenMatcher (src/tokenizer/added_token_matcher.h) against the definition it implements,
// written out directly here: scanning left to right, at each position the longest token that
// starts there (the first listed among equal ones), then on after it. Random texts over a
// small alphabet make overlaps, shared prefixes and suffixes, and tokens inside tokens common.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/added_token_matcher.h"

namespace {

using trt::tok::AddedTokenMatcher;

std::vector<AddedTokenMatcher::Match> by_definition(const std::vector<std::string>& tokens,
                                                    const std::string& text) {
    std::vector<AddedTokenMatcher::Match> out;
    for (size_t i = 0; i < text.size();) {
        int best = -1;
        for (size_t t = 0; t < tokens.size(); t++)
            if (!tokens[t].empty() && text.compare(i, tokens[t].size(), tokens[t]) == 0 &&
                (best < 0 || tokens[t].size() > tokens[best].size()))
                best = static_cast<int>(t);
        if (best < 0) {
            i++;
            continue;
        }
        out.push_back({i, static_cast<uint32_t>(best)});
        i += tokens[best].size();
    }
    return out;
}

void expect_same(const std::vector<std::string>& tokens, const std::string& text) {
    const auto got = AddedTokenMatcher(tokens).find_all(text);
    const auto want = by_definition(tokens, text);
    ASSERT_EQ(got.size(), want.size()) << "text \"" << text << "\"";
    for (size_t k = 0; k < got.size(); k++) {
        EXPECT_EQ(got[k].start, want[k].start) << "match " << k << " of \"" << text << "\"";
        EXPECT_EQ(got[k].token, want[k].token) << "match " << k << " of \"" << text << "\"";
    }
}

TEST(AddedTokenMatcher, LeftmostThenLongest) {
    const std::vector<std::string> tokens = {"<|end|>", "<|", "|>", "end", "<|end"};
    expect_same(tokens, "");
    expect_same(tokens, "plain text");
    expect_same(tokens, "a<|end|>b");      // the whole token, not <| or <|end
    expect_same(tokens, "<|end<|end|>|>");  // <|end, then <|end|>, then |>
    expect_same(tokens, "<<||>>");
    const auto m = AddedTokenMatcher(tokens).find_all("x<|end|>y");
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].start, 1u);
    EXPECT_EQ(m[0].token, 0u);
}

TEST(AddedTokenMatcher, EqualTokensReportTheFirst) {
    const auto m = AddedTokenMatcher(std::vector<std::string>{"ab", "ab", "b"}).find_all("abab");
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].token, 0u);
    EXPECT_EQ(m[1].token, 0u);
    EXPECT_TRUE(AddedTokenMatcher(std::vector<std::string>{}).find_all("anything").empty());
    EXPECT_TRUE(AddedTokenMatcher(std::vector<std::string>{""}).find_all("anything").empty());
}

TEST(AddedTokenMatcher, AgreesWithTheDefinitionOnRandomTexts) {
    std::mt19937 rng(1234);
    const std::string alphabet = "ab<|";
    const auto random_string = [&](size_t max_len) {
        std::string s(1 + rng() % max_len, ' ');
        for (char& c : s) c = alphabet[rng() % alphabet.size()];
        return s;
    };
    for (int round = 0; round < 400; round++) {
        std::vector<std::string> tokens(1 + rng() % 8);
        for (std::string& t : tokens) t = random_string(5);
        expect_same(tokens, random_string(60));
    }
}

// The case (20,000 added tokens, a text of "<|" repeated) once took minutes: every
// position tried every token. Correctness only here (no timing in tests); the automaton is
// linear in the text.
TEST(AddedTokenMatcher, ManyTokensOverALongText) {
    std::vector<std::string> tokens;
    for (int i = 0; i < 20000; i++) {
        char name[16];
        std::snprintf(name, sizeof name, "<|%05d|>", i);
        tokens.push_back(name);
    }
    std::string text;
    for (int i = 0; i < 200000; i++) text += "<|";
    text += "<|01234|>";
    const auto m = AddedTokenMatcher(tokens).find_all(text);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].start, 400000u);
    EXPECT_EQ(m[0].token, 1234u);
}

}  // namespace
