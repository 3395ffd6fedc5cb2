// The pre-pass before toml++ (config/toml_guard.h): non-ASCII text where toml++ 3.3.0 would
// reach undefined behaviour is refused with line:col; everything TOML allows still loads.
// (CI runs this file under UBSan, and tests/fuzz fuzzes the whole config parser.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "config/toml_guard.h"
#include "core/error.h"

namespace trt {
namespace {

using ::testing::HasSubstr;

std::string load_error(const std::string& text) {
    try {
        Config::from_string(text, "");
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "accepted: " << text;
    return "";
}

// The first and last code point of each block toml++ 3.3.0 mishandles, as UTF-8.
const char* const kBadBlockEdges[] = {
    "\xC2\xA1",      // U+00A1
    "\xD2\x99",      // U+0499
    "\xCC\x82",      // U+0302 (the issue's reproducer)
    "\xE2\xB3\xAE",  // U+2CEE
    "\xE3\x83\xA7",  // U+30E7
    "\xEF\xAC\xA6",  // U+FB26
    "\xEF\xBB\xBE",  // U+FEFE
};

}  // namespace

TEST(TomlGuard, TheIssuesReproducerIsAConfigErrorNotUndefinedBehaviour) {
    EXPECT_THAT(load_error("\xcc\x82"),
                HasSubstr("<string>:1:1: TOML syntax error: Error while parsing root table: "
                          "expected keys, tables, whitespace or comments, saw '\xcc\x82' "
                          "(U+0302; TOML allows non-ASCII characters only as text inside "
                          "strings and comments)"));
}

TEST(TomlGuard, NonAsciiBetweenTokensIsRefusedWithItsPosition) {
    for (const char* ch : kBadBlockEdges) {
        const std::string where[] = {
            std::string("[model]\nvocab_size = 5") + ch + "\n",    // after a value
            std::string("[model]\nvocab_size ") + ch + "= 5\n",    // before the =
            std::string("[model]") + ch + "\n",                    // after a header
            std::string(ch) + "\n[model]\n",                       // at the start
            std::string("[optim]\nbetas = [0.9,") + ch + "0.95]\n",  // inside an array
        };
        for (const std::string& text : where) {
            const std::string msg = load_error(text);
            EXPECT_THAT(msg, HasSubstr("; TOML allows non-ASCII characters only as text inside"))
                << text;
        }
    }
    EXPECT_THAT(load_error("[model]\nvocab_size = 5\xC2\xA1\n"), HasSubstr("<string>:2:15:"));
}

TEST(TomlGuard, NonAsciiInStringsAndCommentsStillLoads) {
    for (const char* ch : kBadBlockEdges) {
        const std::string c(ch);
        const std::string text = "# " + c + " a comment\n[train]\nout_dir = \"runs/" + c +
                                 "\"  # " + c + "\n[data]\ntrain = 'a" + c + "'\nval = \"\"\"x" +
                                 c + "\n" + c + "y\"\"\"\n[model]\ninit_from = '''" + c + "'''\n";
        const Config cfg = Config::from_string(text, "");
        EXPECT_EQ(cfg.run().train.out_dir, "runs/" + c);
        EXPECT_EQ(cfg.run().data.train, "a" + c);
        EXPECT_EQ(cfg.run().data.val, "x" + c + "\n" + c + "y");
        EXPECT_EQ(cfg.run().model.init_from, c);
    }
}

TEST(TomlGuard, LineEndingBackslashFollowedByNonAsciiIsRefused) {
    // toml++ tests the first character after the skipped whitespace for whitespace.
    EXPECT_THAT(load_error("[train]\nout_dir = \"\"\"a\\\n   \xCC\x82x\"\"\"\n"),
                HasSubstr("<string>:3:4: TOML syntax error: a non-ASCII character first after "
                          "a line-ending backslash"));
    EXPECT_THAT(load_error("[train]\nout_dir = \"\"\"a\\  \n\n\xC2\xA1\"\"\"\n"),
                HasSubstr("line-ending backslash"));
    // Right after the backslash it is an unknown escape (toml++ reports it on the shadow).
    EXPECT_THAT(load_error("[train]\nout_dir = \"a\\\xC2\xA1\"\n"),
                HasSubstr("<string>:2:14: TOML syntax error: Error while parsing string: unknown "
                          "escape sequence '\\\xC2\xA1' (U+00A1;"));
    EXPECT_THAT(load_error("[train]\nout_dir = \"\"\"a\\\xC2\xA1\"\"\"\n"),
                HasSubstr("unknown escape sequence"));
    EXPECT_THAT(load_error("[train]\nout_dir = \"\"\"a\\  \xC2\xA1\n\"\"\"\n"),
                HasSubstr("TOML syntax error"));
    // An ASCII character first keeps it valid: the backslash trims up to it.
    const Config ok = Config::from_string("[train]\nout_dir = \"\"\"a\\\n   b\xCC\x82\"\"\"\n", "");
    EXPECT_EQ(ok.run().train.out_dir, "ab\xCC\x82");
}

TEST(TomlGuard, InvalidUtf8IsRefusedAnywhere) {
    const char* const bad[] = {
        "\xFF",          // never valid
        "\xC0\xAF",      // overlong '/'
        "\xED\xA0\x80",  // a UTF-16 surrogate
        "\xF4\x90\x80\x80",  // above U+10FFFF
        "\xE2\x82",      // truncated
    };
    for (const char* b : bad) {
        EXPECT_THAT(load_error(std::string("[train]\nout_dir = \"") + b + "\"\n"),
                    HasSubstr("not valid UTF-8")) << b;
        EXPECT_THAT(load_error(std::string("# ") + b + "\n"), HasSubstr("not valid UTF-8"));
        EXPECT_THAT(load_error(std::string("x = 1 ") + b), HasSubstr("not valid UTF-8"));
    }
}

TEST(TomlGuard, ByteOrderMarkAndQuoteRunsAreUnderstood) {
    EXPECT_EQ(Config::from_string("\xEF\xBB\xBF[model]\nvocab_size = 7\n", "").run().model.vocab_size, 7);
    // """a"""" is a then a quote: the string ends after the 4th quote, the comment is a comment.
    const Config q = Config::from_string("[train]\nout_dir = \"\"\"a\"\"\"\" # \xC2\xA1\n", "");
    EXPECT_EQ(q.run().train.out_dir, "a\"");
    EXPECT_EQ(toml_guard("s = '''a'''''  # \xC2\xA1").what, "");
}

TEST(TomlGuard, SetValuesAreGuardedToo) {
    Config c;
    c.set("train.out_dir", "\"r\xC2\xA1\"");
    EXPECT_EQ(c.run().train.out_dir, "r\xC2\xA1");
    try {
        c.set("train.steps", "5\xCC\x82");
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config);
        EXPECT_THAT(e.what(), HasSubstr("train.steps: cannot parse the value"));
        EXPECT_THAT(e.what(), HasSubstr("saw '\xCC\x82' (U+0302; TOML allows non-ASCII"));
    }
}

}  // namespace trt

namespace trt {

// Found by fuzz_config (tests/fuzz/regressions/fuzz_config/): toml++'s number scanner reads
// on through a quote into the string's text and tests its non-ASCII characters for
// whitespace. The first guard modelled where strings start and was beaten by each of these;
// the shadow parse lets toml++ itself say where strings are.
TEST(TomlGuard, WhateverTomlppReadsAsAValueNeverHoldsNonAscii) {
    const char* const inputs[] = {"l=1\"\xC7\x9B", "l=1'\xC7\x9B", "l=1\"x\xC7\x9B",
                                  "l=[1\"\xC7\x9B", "l=1979-05-27\"\xC7\x9B", "l=1\"\xC3\xA9",
                                  "l=\"a\"\"\xC7\x9B", "l=1l=\"\xC7\x9B", "l=1l='\xC7\x9B'",
                                  "l=tru\"\xC2\xA1\"", "l={a=1\"\xC2\xA1\"}"};
    for (const char* text : inputs) {
        const std::string msg = load_error(text);
        EXPECT_THAT(msg, HasSubstr("<string>:1:")) << text;
        EXPECT_THAT(msg, HasSubstr("TOML syntax error")) << text;
    }
    EXPECT_THAT(load_error("[model]\nvocab_size = 1\"\xC7\x9B\n"), HasSubstr("<string>:2:"));
}

// The shadow keeps toml++'s line:column and replaces each character by one '@'.
TEST(TomlGuard, ShadowKeepsPositions) {
    EXPECT_EQ(toml_ascii_shadow("a = \"\xC2\xA1\xE2\x82\xAC\xF0\x9F\x98\x80\"\n"), "a = \"@@@\"\n");
    EXPECT_EQ(toml_ascii_shadow("\xEF\xBB\xBFx = '\xC2\xA1'"), "\xEF\xBB\xBFx = '@'");
    const std::string t = "\xEF\xBB\xBF# \xE2\x82\xAC\nk = \"\xC2\xA1\xF0\x9F\x98\x80\"";
    EXPECT_EQ(toml_char_at(t, 1, 3).code_point, U'\u20AC');
    EXPECT_EQ(toml_char_at(t, 1, 3).bytes, "\xE2\x82\xAC");
    EXPECT_EQ(toml_char_at(t, 2, 6).code_point, U'\u00A1');
    EXPECT_EQ(toml_char_at(t, 2, 7).code_point, U'\U0001F600');
    EXPECT_EQ(toml_char_at(t, 2, 8).code_point, U'"');
    EXPECT_EQ(toml_char_at(t, 2, 9).code_point, 0u);
    EXPECT_EQ(toml_char_at(t, 2, 9).bytes, "");
    EXPECT_EQ(toml_char_at(t, 3, 1).code_point, 0u);
}

// Every place TOML lets a string start still loads, with non-ASCII text in it.
TEST(TomlGuard, EveryPlaceAStringMayStartPasses) {
    const std::string u = "\xC2\xA1";
    const std::string valid =
        "\"quoted key " + u + "\" = \"v" + u + "\"\n"
        "'literal key " + u + "' = 'v" + u + "'\n"
        "a . \"b" + u + "\" . 'c' = 1\n"
        "[ \"table\" . 'x" + u + "' ]\n"
        "[[\"array\".'of']]\n"
        "arr = [ \"a" + u + "\", 'b',\n  # a comment " + u + "\n  \"\"\"c" + u + "\"\"\", '''d" +
        u + "''' ]\n"
        "inline = { \"k\" = \"v" + u + "\", 'l' = [\"x" + u + "\"] }\n"
        "crlf = \"x" + u + "\"\r\n"
        "tab =\t\"y" + u + "\"\n";
    EXPECT_EQ(toml_guard(valid).what, "");
    EXPECT_EQ(toml_ascii_shadow(valid).find('\xC2'), std::string::npos);
    // It parses: what the config then refuses are its made-up keys, not its syntax.
    const std::string msg = load_error(valid);
    EXPECT_THAT(msg, ::testing::Not(HasSubstr("syntax error"))) << msg;
    EXPECT_THAT(msg, HasSubstr("unknown"));
}

}  // namespace trt
