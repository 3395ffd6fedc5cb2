// The tokenizer.json loader and the encode/decode pipeline on a small tokenizer built here
// (the byte alphabet, a few merges, one special token): BPE merge order, ignore_merges,
// added tokens, the ByteLevel round trip, and a clear error for each kind of bad file or
// input. Real tokenizers (GPT-2, Llama 3) are held against an independent implementation by
// the oracle test (tests/tokenizer).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/json_min.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace {

using trt::tok::Tokenizer;
using Ids = std::vector<uint32_t>;

std::string byte_char(int b) {
    std::string s;
    const char c = static_cast<char>(b);
    trt::tok::to_byte_chars(std::string_view(&c, 1), s);
    return s;
}

struct Spec {
    std::string model_type = "BPE";
    bool ignore_merges = false;
    std::vector<std::string> extra_merges;
    std::string normalizer = "null";
    std::string pre_tokenizer =
        R"({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})";
};

// Byte b has id b; then he=256 ll=257 hell=258 hello=259 Ġh=260, <|end|>=261, hel=262.
std::string tokenizer_json(const Spec& s = {}) {
    std::string vocab;
    for (int b = 0; b < 256; b++)
        vocab += trt::json::quote(byte_char(b)) + ": " + std::to_string(b) + ", ";
    vocab += R"("he": 256, "ll": 257, "hell": 258, "hello": 259, ")" + byte_char(' ') +
             R"(h": 260, "hel": 262)";
    std::string merges = R"("h e", "l l", "he ll", ["hell", "o"], ")" + byte_char(' ') + R"( h")";
    for (const auto& m : s.extra_merges) merges += ", \"" + m + "\"";
    return R"({"version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 261, "content": "<|end|>", "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": false, "special": true}],
  "normalizer": )" + s.normalizer + R"(, "pre_tokenizer": )" + s.pre_tokenizer + R"(,
  "post_processor": null, "decoder": {"type": "ByteLevel"},
  "model": {"type": ")" + s.model_type + R"(", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false,
            "byte_fallback": false, "ignore_merges": )" +
           (s.ignore_merges ? "true" : "false") + R"(,
            "vocab": {)" + vocab + R"(}, "merges": [)" + merges + "]}}";
}

TEST(Tokenizer, MergesByRankAndRoundTrips) {
    const Tokenizer t = Tokenizer::from_json(tokenizer_json(), "t.json");
    EXPECT_EQ(t.encode("hello"), (Ids{259}));
    // " hello": (h,e) first, so Ġh (rank 4) never forms.
    EXPECT_EQ(t.encode("hello hello"), (Ids{259, ' ', 259}));
    EXPECT_EQ(t.encode("hel"), (Ids{256, 'l'}));  // no merge builds "hel"
    EXPECT_EQ(t.encode(" hx"), (Ids{260, 'x'}));
    EXPECT_EQ(t.encode("a<|end|>b<|end|>"), (Ids{'a', 261, 'b', 261}));
    EXPECT_EQ(t.id_limit(), 263u);
    for (const std::string text : {std::string("hello hello"), std::string("a<|end|>b"),
                                   std::string("\xE6\x97\xA5\xE6\x9C\xAC \t\n x"),
                                   std::string("\0\x01\x7F", 3)})
        EXPECT_EQ(t.decode(t.encode(text)), text);
    EXPECT_EQ(t.decode({259, ' ', 261}), "hello <|end|>");
    uint32_t id = 0;
    EXPECT_TRUE(t.find("<|end|>", id));
    EXPECT_EQ(id, 261u);
    EXPECT_TRUE(t.find("hello", id));
    EXPECT_EQ(id, 259u);
    EXPECT_FALSE(t.find("nope", id));
}

TEST(Tokenizer, IgnoreMergesTakesWholeVocabularyEntries) {
    Spec s;
    s.ignore_merges = true;
    const Tokenizer t = Tokenizer::from_json(tokenizer_json(s), "t.json");
    EXPECT_EQ(t.encode("hel"), (Ids{262}));
    EXPECT_EQ(t.encode("hex"), (Ids{256, 'x'}));
}

TEST(Tokenizer, Cl100kPatternThroughSplit) {
    Spec s;
    s.pre_tokenizer = std::string(R"({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": ")") +
                      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)" +
                      R"("}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})";
    const Tokenizer t = Tokenizer::from_json(tokenizer_json(s), "t.json");
    EXPECT_EQ(t.encode("1234"), (Ids{'1', '2', '3', '4'}));
    EXPECT_EQ(t.decode(t.encode("x = 12345;\n")), "x = 12345;\n");
}

// Expects from_json to throw `status` with a message holding each of `words`.
void expect_refused(const std::string& text, trt::Status status,
                    std::initializer_list<const char*> words) {
    try {
        Tokenizer::from_json(text, "bad/tokenizer.json");
        ADD_FAILURE() << "accepted";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), status) << e.what();
        EXPECT_NE(std::string(e.what()).find("bad/tokenizer.json"), std::string::npos) << e.what();
        for (const char* w : words)
            EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << ": " << e.what();
    }
}

TEST(Tokenizer, BadFilesGetClearErrors) {
    const std::string good = tokenizer_json();
    expect_refused(good.substr(0, good.size() / 2), trt::Status::Format, {"invalid JSON"});
    expect_refused("[1, 2]", trt::Status::Format, {"must be an object"});
    expect_refused("{}", trt::Status::Format, {"model", "missing"});
    Spec wp;
    wp.model_type = "WordPiece";
    expect_refused(tokenizer_json(wp), trt::Status::Unsupported, {"model.type", "WordPiece"});
    Spec missing;
    missing.extra_merges = {"x q"};
    expect_refused(tokenizer_json(missing), trt::Status::Format, {"model.merges[5]", "xq"});
    Spec malformed;
    malformed.extra_merges = {"xq"};
    expect_refused(tokenizer_json(malformed), trt::Status::Format, {"model.merges[5]", "one space"});
    Spec nfc;
    nfc.normalizer = R"({"type": "NFC"})";
    expect_refused(tokenizer_json(nfc), trt::Status::Unsupported, {"normalizer", "NFC"});
    Spec regex;
    regex.pre_tokenizer = R"({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})";
    expect_refused(tokenizer_json(regex), trt::Status::Unsupported, {"pattern", "\\w+"});
    std::string dup = good;
    dup.replace(dup.find("\"he\": 256"), 9, "\"he\": -3");
    expect_refused(dup, trt::Status::Format, {"model.vocab", "token id"});
}

TEST(Tokenizer, BadInputGetsClearErrors) {
    const Tokenizer t = Tokenizer::from_json(tokenizer_json(), "t.json");
    try {
        t.encode("ok\xFF");
        ADD_FAILURE() << "invalid UTF-8 accepted";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::InvalidArgument);
        EXPECT_NE(std::string(e.what()).find("byte 2"), std::string::npos) << e.what();
    }
    EXPECT_THROW(t.decode({263}), trt::Error);
}

TEST(Tokenizer, FromFileNamesAMissingFile) {
    try {
        Tokenizer::from_file("/nonexistent/tokenizer.json");
        ADD_FAILURE() << "accepted";
    } catch (const trt::Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/tokenizer.json"), std::string::npos);
    }
}

}  // namespace
