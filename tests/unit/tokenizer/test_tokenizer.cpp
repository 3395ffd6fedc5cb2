// The tokenizer.json loader and the encode/decode pipeline on a small tokenizer built here
// (the byte alphabet, a few merges, one special token): BPE merge order, ignore_merges,
// added tokens, the ByteLevel round trip, and a clear error for each kind of bad file or
// input. Real tokenizers (GPT-2, Llama 3) are held against an independent implementation by
// the oracle test (tests/tokenizer).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer

namespace {

using trt::tok::Tokenizer;
using Ids = std::vector<uint32_t>;
using synthetic::Spec;
using synthetic::tokenizer_json;

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

TEST(Tokenizer, NfcNormalizerAppliesBetweenAddedTokens) {
    Spec s;
    s.normalizer = R"({"type": "NFC"})";
    const Tokenizer t = Tokenizer::from_json(tokenizer_json(s), "t.json");
    const std::string composed = "caf\xC3\xA9";   // café, U+00E9
    const std::string decomposed = "cafe\xCC\x81";  // cafe + U+0301
    EXPECT_EQ(t.encode(decomposed), t.encode(composed));
    EXPECT_EQ(t.decode(t.encode(decomposed)), composed);
    // Added tokens are cut from the text as written, the rest normalized around them.
    EXPECT_EQ(t.encode("e<|end|>\xCC\x81"), (Ids{'e', 261, 0xCC, 0x81}));
    EXPECT_EQ(t.encode("hello"), (Ids{259}));
    const Tokenizer plain = Tokenizer::from_json(tokenizer_json(), "t.json");
    EXPECT_NE(plain.encode(decomposed), plain.encode(composed));  // no normalizer: as written
}

TEST(Tokenizer, Cl100kPatternThroughSplit) {
    Spec s;
    s.pre_tokenizer = synthetic::cl100k_pre_tokenizer();
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
    Spec nfkc;
    nfkc.normalizer = R"({"type": "NFKC"})";
    expect_refused(tokenizer_json(nfkc), trt::Status::Unsupported, {"normalizer", "NFKC"});
    // With a normalizer, an added token matched on normalized text is not implemented.
    Spec nfc;
    nfc.normalizer = R"({"type": "NFC"})";
    std::string normalized_added = tokenizer_json(nfc);
    normalized_added.replace(normalized_added.find("\"normalized\": false"), 19,
                             "\"normalized\": true");
    expect_refused(normalized_added, trt::Status::Unsupported, {"added_tokens[0].normalized"});
    Spec regex;
    regex.pre_tokenizer = R"({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?<=a)\\w+"}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})";
    // A regex the engine does not implement (look-behind) names the field and the place.
    expect_refused(tokenizer_json(regex), trt::Status::Unsupported,
                   {"pretokenizers[0].pattern.Regex", "look-behind", "character 2"});
    std::string negative = good;
    negative.replace(negative.find("\"he\": 256"), 9, "\"he\": -3");
    expect_refused(negative, trt::Status::Format, {"model.vocab", "token id"});
    std::string twice = good;
    twice.replace(twice.find("\"he\": 256"), 9, "\"he\": 257");
    expect_refused(twice, trt::Status::Format, {"model.vocab", "id 257", "he", "ll"});
    std::string renamed = good;
    renamed.replace(renamed.find("\"id\": 261"), 9, "\"id\": 259");
    expect_refused(renamed, trt::Status::Format, {"added_tokens[0]", "hello"});
}

// Tables are indexed by id: an id far past the entries (a 4 KB file asking for a 4 GB table)
// is refused, naming the file, the field and the id; reserved gaps of ordinary size load.
TEST(Tokenizer, IdsFarBeyondTheEntriesAreRefused) {
    const std::string good = tokenizer_json();  // 263 entries
    for (const char* huge : {"134217728", "2147483647"}) {
        std::string sparse = good;
        sparse.replace(sparse.find("\"id\": 261"), 9, std::string("\"id\": ") + huge);
        expect_refused(sparse, trt::Status::Format,
                       {"added_tokens[0].id", huge, "263 entries", "below 66062"});
    }
    std::string vocab_gap = good;
    vocab_gap.replace(vocab_gap.find("\"hel\": 262"), 10, "\"hel\": 70000");
    expect_refused(vocab_gap, trt::Status::Format, {"model.vocab[\"hel\"]", "70000"});
    std::string reserved = good;  // Llama-style reserved ids: a gap well within the bound
    reserved.replace(reserved.find("\"id\": 261"), 9, "\"id\": 66061");
    const Tokenizer t = Tokenizer::from_json(reserved, "t.json");
    EXPECT_EQ(t.id_limit(), 66062u);
    EXPECT_EQ(t.encode("a<|end|>"), (Ids{'a', 66061}));
}

// Added tokens are found in one pass over the text, however many there are; leftmost, then
// longest (the matcher's own test holds it against the definition on random texts).
TEST(Tokenizer, ManyAddedTokens) {
    std::string json = tokenizer_json();
    std::string more;
    for (int i = 0; i < 5000; i++) {
        char entry[128];
        std::snprintf(entry, sizeof entry, R"(, {"id": %d, "content": "<|%04d|>", "special": true})",
                      263 + i, i);
        more += entry;
    }
    json.insert(json.find("}],", json.find("\"added_tokens\"")) + 1, more);
    const Tokenizer t = Tokenizer::from_json(json, "t.json");
    std::string text;
    for (int i = 0; i < 50000; i++) text += "<|";
    text += "<|0042|>hello<|end|><|4999|>";
    const Ids ids = t.encode(text);
    ASSERT_EQ(ids.size(), 100000u + 4);
    EXPECT_EQ(ids[0], uint32_t{'<'});
    EXPECT_EQ((Ids(ids.end() - 4, ids.end())), (Ids{263 + 42, 259, 261, 263 + 4999}));
    EXPECT_EQ(t.decode(ids), text);
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
