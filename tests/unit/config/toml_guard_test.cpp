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
                HasSubstr("<string>:1:1: TOML syntax error: a non-ASCII character outside a "
                          "string or comment"));
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
            EXPECT_THAT(msg, HasSubstr("a non-ASCII character outside a string or comment"))
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
    EXPECT_THAT(load_error("[train]\nout_dir = \"a\\\xC2\xA1\"\n"),
                HasSubstr("right after a backslash"));
    EXPECT_THAT(load_error("[train]\nout_dir = \"\"\"a\\\xC2\xA1\"\"\"\n"),
                HasSubstr("right after a backslash"));
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
        EXPECT_THAT(e.what(), HasSubstr("non-ASCII character outside a string"));
    }
}

}  // namespace trt

namespace trt {

// Found by fuzz_config (tests/fuzz/regressions/fuzz_config/): after a bare value, toml++
// reads on past a quote into the string's text and tests its non-ASCII characters for
// whitespace. A quote can only start a string after = [ , { . or at a line's start.
TEST(TomlGuard, AQuoteWhereNoStringCanStartIsRefused) {
    const char* const inputs[] = {"l=1\"\xC7\x9B", "l=1'\xC7\x9B", "l=1\"x\xC7\x9B",
                                  "l=[1\"\xC7\x9B", "l=1979-05-27\"\xC7\x9B", "l=1\"\xC3\xA9",
                                  "l=\"a\"\"\xC7\x9B", "[a]\"b\" = 1"};
    for (const char* text : inputs) {
        const TomlGuardProblem p = toml_guard(text);
        EXPECT_THAT(p.what, HasSubstr("where no string can start")) << text;
    }
    EXPECT_THAT(load_error("[model]\nvocab_size = 1\"\xC7\x9B\n"),
                HasSubstr("<string>:2:15: TOML syntax error: a quote right after '1'"));
}

// Every place TOML lets a string start passes the guard.
TEST(TomlGuard, EveryPlaceAStringMayStartPasses) {
    const char* const valid =
        "\"quoted key\" = \"v\"\n"
        "'literal key' = 'v'\n"
        "a . \"b\" . 'c' = 1\n"
        "[ \"table\" . 'x' ]\n"
        "[[\"array\".'of']]\n"
        "arr = [ \"a\", 'b',\n  # a comment \xC2\xA1\n  \"\"\"c\"\"\", '''d''' ]\n"
        "inline = { \"k\" = \"v\", 'l' = [\"x\"] }\n"
        "crlf = \"x\"\r\n"
        "tab =\t\"y\"\n";
    EXPECT_EQ(toml_guard(valid).what, "");
}

}  // namespace trt
