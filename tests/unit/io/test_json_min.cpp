// json_min: strict JSON parsing, 64-bit integers, escapes, depth bound, quoting.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/error.h"
#include "io/json_min.h"

namespace {

using trt::json::Value;

Value parse(const std::string& s) { return trt::json::parse(s, "test.json"); }

// Parsing s must fail with Status::Format and a message containing frag.
void expect_bad(const std::string& s, const std::string& frag) {
    SCOPED_TRACE(s.substr(0, 80));
    try {
        parse(s);
        FAIL() << "parsed without error";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::Format);
        EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("test.json"), std::string::npos) << e.what();
    }
}

TEST(JsonMin, ObjectsKeepDocumentOrder) {
    const Value v = parse(R"( {"b": 1, "a": [true, false, null], "c": "x"} )");
    ASSERT_TRUE(v.is_object());
    ASSERT_EQ(v.obj.size(), 3u);
    EXPECT_EQ(v.obj[0].key, "b");
    EXPECT_EQ(v.obj[1].key, "a");
    EXPECT_EQ(v.obj[2].key, "c");
    const Value* a = v.find("a");
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->arr.size(), 3u);
    EXPECT_EQ(a->arr[0].kind, Value::Kind::Bool);
    EXPECT_TRUE(a->arr[0].b);
    EXPECT_FALSE(a->arr[1].b);
    EXPECT_EQ(a->arr[2].kind, Value::Kind::Null);
    EXPECT_EQ(v.find("b")->i, 1);
    EXPECT_EQ(v.find("zz"), nullptr);
}

// Python's json and transformers keep the last of two equal keys, find() would keep the
// first (config.json's n_embd, an adapter's r): refused, naming the key, where and its path.
TEST(JsonMin, DuplicateKeysAreRefusedWithTheirPath) {
    expect_bad(R"({"model_type":"gpt2","n_embd":32,"n_embd":64})",
               "test.json: duplicate key \"n_embd\" at byte 33 ($.n_embd): JSON readers "
               "disagree on which one counts (Python and transformers take the last)");
    expect_bad(R"({"a":[{"x":1},{"y":{"z":1,"k":2,"z":3}}]})",
               "duplicate key \"z\" at byte 32 ($.a[1].y.z)");
    expect_bad(R"({"a.b":{"q\u0001":1,"q\u0001":2}})",
               "duplicate key \"q\\u0001\" at byte 20 ($[\"a.b\"][\"q\\u0001\"])");
    // The earliest second occurrence in document order; equal values are no excuse.
    expect_bad(R"({"b":1,"a":1,"a":1,"b":1})", "duplicate key \"a\" at byte 13");
    const std::string big(300, 'k');
    expect_bad("{\"" + big + "\":1,\"" + big + "\":2}", "\"" + big.substr(0, 64) + "\"... (300 bytes)");
    // Equal keys in different objects are fine, and a large object (a vocabulary) parses.
    EXPECT_NO_THROW(parse(R"({"a":{"k":1},"b":{"k":1},"k":[{"k":1},{"k":2}]})"));
    std::string vocab = "{";
    for (int i = 0; i < 100000; ++i) vocab += (i ? ",\"" : "\"") + std::to_string(i) + "\":" + std::to_string(i);
    EXPECT_EQ(parse(vocab + "}").obj.size(), 100000u);
    expect_bad(vocab + ",\"77\":1}", "duplicate key \"77\"");
}

TEST(JsonMin, Integers64Bit) {
    EXPECT_EQ(parse("0").i, 0);
    EXPECT_EQ(parse("-0").i, 0);
    EXPECT_EQ(parse("9223372036854775807").i, std::numeric_limits<int64_t>::max());
    EXPECT_EQ(parse("-9223372036854775808").i, std::numeric_limits<int64_t>::min());
    const Value u = parse("18446744073709551615");
    EXPECT_EQ(u.kind, Value::Kind::Uint);
    EXPECT_EQ(u.u, std::numeric_limits<uint64_t>::max());
    uint64_t x = 0;
    EXPECT_TRUE(u.get_u64(x));
    EXPECT_EQ(x, std::numeric_limits<uint64_t>::max());
    int64_t y = 0;
    EXPECT_FALSE(u.get_i64(y));
    EXPECT_FALSE(parse("-1").get_u64(x));
    expect_bad("18446744073709551616", "out of 64-bit range");
    expect_bad("-9223372036854775809", "out of 64-bit range");
    expect_bad("99999999999999999999999", "out of 64-bit range");
    // parse_lenient_numbers: such a literal is a (rounded) double; 64-bit ones stay exact.
    const Value big = trt::json::parse_lenient_numbers(
        R"({"model_max_length": 1000000000000000019884624838656, "n": -9223372036854775808,
            "u": 18446744073709551615, "neg": -9223372036854775809})", "cfg");
    ASSERT_EQ(big.find("model_max_length")->kind, Value::Kind::Double);
    EXPECT_DOUBLE_EQ(big.find("model_max_length")->d, 1e30);
    EXPECT_EQ(big.find("n")->kind, Value::Kind::Int);
    EXPECT_EQ(big.find("n")->i, std::numeric_limits<int64_t>::min());
    EXPECT_EQ(big.find("u")->kind, Value::Kind::Uint);
    EXPECT_EQ(big.find("neg")->kind, Value::Kind::Double);
}

TEST(JsonMin, NonIntegerNumbers) {
    EXPECT_EQ(parse("1.5").kind, Value::Kind::Double);
    EXPECT_DOUBLE_EQ(parse("-2.5e3").d, -2500.0);
    EXPECT_DOUBLE_EQ(parse("1E-2").d, 0.01);
    EXPECT_FALSE(parse("2.0").is_integer());
    expect_bad("01", "leading zeros");
    expect_bad("1.", "decimal point");
    expect_bad("1e", "exponent");
    expect_bad("-", "invalid number");
    expect_bad("+1", "unexpected character");
    expect_bad("1e999", "out of range");
}

TEST(JsonMin, StringEscapes) {
    EXPECT_EQ(parse(R"("a\"b\\c\/d\b\f\n\r\t")").s, "a\"b\\c/d\b\f\n\r\t");
    EXPECT_EQ(parse(R"("\u0041\u00e9\u20AC")").s, "A\xC3\xA9\xE2\x82\xAC");
    // Surrogate pair U+1F600 -> F0 9F 98 80.
    EXPECT_EQ(parse(R"("\ud83d\ude00")").s, "\xF0\x9F\x98\x80");
    EXPECT_EQ(parse("\"\xF0\x9F\x98\x80\"").s, "\xF0\x9F\x98\x80");  // raw UTF-8 passes
    EXPECT_EQ(parse(R"("\u0000")").s, std::string(1, '\0'));
}

TEST(JsonMin, BadStrings) {
    expect_bad(R"("\q")", "invalid escape");
    expect_bad(R"("abc)", "unterminated string");
    expect_bad("\"a\\", "unterminated string");
    expect_bad(R"("\u12zz")", "hex digit");
    expect_bad(R"("\u12)", "truncated");
    expect_bad(R"("\ud83d")", "lone high surrogate");
    expect_bad(R"("\ud83dx")", "lone high surrogate");
    expect_bad(R"("\ud83d\u0041")", "not followed by a low surrogate");
    expect_bad(R"("\ude00")", "lone low surrogate");
    expect_bad("\"a\nb\"", "control character");
    expect_bad("\"\xC3\"", "invalid UTF-8");            // truncated sequence
    expect_bad("\"\xC0\xAF\"", "invalid UTF-8");        // overlong '/'
    expect_bad("\"\xED\xA0\x80\"", "invalid UTF-8");    // encoded surrogate
    expect_bad("\"\xF4\x90\x80\x80\"", "invalid UTF-8");  // > U+10FFFF
    expect_bad("\"\xFF\"", "invalid UTF-8");
}

TEST(JsonMin, StructureErrors) {
    expect_bad("", "unexpected end");
    expect_bad("   ", "unexpected end");
    expect_bad("{", "unexpected end");
    expect_bad("[1,", "unexpected end");
    expect_bad("[1 2]", "expected ',' or ']'");
    expect_bad("[1,]", "unexpected character");
    expect_bad(R"({"a":1,})", "expected a string key");
    expect_bad(R"({"a" 1})", "expected ':'");
    expect_bad(R"({a:1})", "expected a string key");
    expect_bad("{} x", "trailing");
    expect_bad("{}{}", "trailing");
    expect_bad("tru", "invalid literal");
    expect_bad("nul", "invalid literal");
    expect_bad(std::string("{}\0", 3), "trailing");
}

TEST(JsonMin, DepthBound) {
    const int max = trt::json::kMaxDepth;
    EXPECT_NO_THROW(parse(std::string(max, '[') + std::string(max, ']')));
    expect_bad(std::string(max + 1, '[') + std::string(max + 1, ']'), "nesting too deep");
    // Hostile depth fails fast and cleanly, without recursion to that depth.
    expect_bad(std::string(100000, '['), "nesting too deep");
    std::string objs;
    for (int i = 0; i < 100000; ++i) objs += "{\"a\":";
    expect_bad(objs, "nesting too deep");
}

TEST(JsonMin, WhitespaceAroundValue) {
    EXPECT_TRUE(parse(" \t\r\n{ \"a\" : [ 1 , 2 ] }  \n ").is_object());
}

TEST(JsonMin, QuoteRoundTrips) {
    const std::string s = std::string("q\"b\\s/\b\f\n\r\t\x01\x1f \xC3\xA9 end") + std::string(1, '\0');
    const std::string q = trt::json::quote(s);
    EXPECT_EQ(q.find('\n'), std::string::npos);
    EXPECT_NE(q.find("\\u0001"), std::string::npos);
    EXPECT_EQ(parse(q).s, s);
}

TEST(JsonMin, ValidUtf8) {
    EXPECT_TRUE(trt::json::valid_utf8("plain"));
    EXPECT_TRUE(trt::json::valid_utf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
    EXPECT_FALSE(trt::json::valid_utf8("\x80"));
    EXPECT_FALSE(trt::json::valid_utf8("\xE2\x82"));
    EXPECT_FALSE(trt::json::valid_utf8("\xE0\x80\x80"));  // overlong
}

}  // namespace
