// The SentencePiece-style tokenizer.json (Llama 2, Mistral, Gemma conversions) piece by piece:
// normalizers (Replace, Prepend, Sequence), the Split behaviours, Metaspace, the decoders
// (Replace, ByteFallback, Fuse, Strip, Metaspace), BPE over characters with byte_fallback and
// unk, and a whole tokenizer built in tests/tokenizer/synthetic_tokenizer.h. Real files are
// held against the JavaScript oracle (tests/tokenizer/oracle_test.sh).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "io/json_min.h"
#include "tokenizer/decoders.h"
#include "tokenizer/metaspace.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer
#include "tokenizer/tokenizer_identity.h"
#include "tokenizer/tokenizer.h"

namespace {

using trt::tok::Tokenizer;
using Ids = std::vector<uint32_t>;
using Strings = std::vector<std::string>;
const std::string kMeta = "\xE2\x96\x81";  // ▁

const std::string kSource = "t.json";
const trt::tok::JsonReader kReader{kSource};

trt::tok::Normalizer normalizer(const std::string& json) {
    const trt::json::Value v = trt::json::parse(json, "n");
    return trt::tok::Normalizer::from_json(kReader, &v, "normalizer");
}
trt::tok::Decoder decoder(const std::string& json) {
    const trt::json::Value v = trt::json::parse(json, "d");
    return trt::tok::Decoder::from_json(kReader, &v, "decoder");
}
Strings pre_tokenize(const std::string& json, const std::string& text, bool at_start = true) {
    const trt::json::Value v = trt::json::parse(json, "p");
    Strings out;
    trt::tok::PreTokenizer::from_json(kReader, &v, "pre_tokenizer").run(text, at_start, out);
    return out;
}

TEST(SentencePieceStyle, NormalizersRunInOrder) {
    const auto n = normalizer(R"({"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})");
    EXPECT_EQ(n.apply("a b  c"), kMeta + "a" + kMeta + "b" + kMeta + kMeta + "c");
    EXPECT_EQ(n.apply(""), "");  // Prepend leaves an empty text empty, as HF's
    EXPECT_EQ(normalizer(R"({"type": "Replace", "pattern": {"String": "ab"}, "content": "x"})")
                  .apply("aabab"), "axx");
    EXPECT_TRUE(normalizer(R"({"type": "Sequence", "normalizers": []})").empty());
    EXPECT_THROW(normalizer(R"({"type": "Lowercase"})"), trt::Error);
    EXPECT_THROW(normalizer(R"({"type": "Replace", "pattern": {"Regex": " +"}, "content": "x"})"),
                 trt::Error);
    EXPECT_THROW(normalizer(R"({"type": "Replace", "pattern": {"String": ""}, "content": "x"})"),
                 trt::Error);
}

// Each of HF's SplitDelimiterBehavior values on "a--b-" split on "-".
TEST(SentencePieceStyle, SplitBehaviours) {
    const auto split = [](const char* behavior, bool invert) {
        return pre_tokenize(std::string(R"({"type": "Split", "pattern": {"String": "-"}, "behavior": ")") +
                                behavior + R"(", "invert": )" + (invert ? "true" : "false") + "}",
                            "a--b-");
    };
    EXPECT_EQ(split("Removed", false), (Strings{"a", "b"}));
    EXPECT_EQ(split("Isolated", false), (Strings{"a", "-", "-", "b", "-"}));
    EXPECT_EQ(split("MergedWithPrevious", false), (Strings{"a-", "-", "b-"}));
    EXPECT_EQ(split("MergedWithNext", false), (Strings{"a", "-", "-b", "-"}));
    EXPECT_EQ(split("Contiguous", false), (Strings{"a", "--", "b", "-"}));
    // invert: the text between the matches is the delimiter.
    EXPECT_EQ(split("Removed", true), (Strings{"-", "-", "-"}));
    EXPECT_EQ(split("MergedWithPrevious", true), (Strings{"a", "-", "-b", "-"}));
    EXPECT_THROW(split("Sideways", false), trt::Error);
}

TEST(SentencePieceStyle, MetaspacePreTokenizerAndDecoder) {
    const std::string m = kMeta;
    const char* always = R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true})";
    EXPECT_EQ(pre_tokenize(always, "hi  there"), (Strings{m + "hi", m, m + "there"}));
    EXPECT_EQ(pre_tokenize(always, "x", false), (Strings{m + "x"}));
    const char* first = R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false})";
    EXPECT_EQ(pre_tokenize(first, "a b"), (Strings{m + "a" + m + "b"}));
    EXPECT_EQ(pre_tokenize(first, "a b", false), (Strings{"a" + m + "b"}));  // after an added token
    const char* never = R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": false})";
    EXPECT_EQ(pre_tokenize(never, "a b"), (Strings{"a" + m + "b"}));
    // The older add_prefix_space form.
    EXPECT_EQ(pre_tokenize(R"({"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": true})", "a"),
              (Strings{m + "a"}));
    EXPECT_THROW(pre_tokenize(R"({"type": "Metaspace", "replacement": "ab"})", "a"), trt::Error);
    // The decoder: the first token's replacements are dropped (HF's), the others are spaces.
    EXPECT_EQ(decoder(always).decode({m + "hi", m, m + "there"}), "hi  there");
    EXPECT_EQ(decoder(never).decode({m + "hi"}), " hi");
}

TEST(SentencePieceStyle, DecodersByteFallbackFuseStrip) {
    const auto d = decoder(R"({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})");
    // <0xE6><0x97><0xA5> is 日; a lone <0xFF> is not UTF-8: U+FFFD.
    EXPECT_EQ(d.decode({kMeta + "a", "<0xE6>", "<0x97>", "<0xA5>", kMeta + kMeta + "b"}),
              "a\xE6\x97\xA5  b");
    EXPECT_EQ(d.decode({"x", "<0xFF>", "<0x41>"}), "x\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(decoder(R"({"type": "Strip", "content": "x", "start": 2, "stop": 1})")
                  .decode({"xxxaxx", "ax"}), "xaxa");
    unsigned char b = 0;
    EXPECT_TRUE(trt::tok::byte_fallback_token("<0x0a>", b));
    EXPECT_EQ(b, 0x0A);
    EXPECT_FALSE(trt::tok::byte_fallback_token("<0xG0>", b));
    EXPECT_THROW(decoder(R"({"type": "CTC"})"), trt::Error);
}

TEST(SentencePieceStyle, BpeOverCharactersWithByteFallback) {
    const Tokenizer t = Tokenizer::from_json(synthetic::sp_tokenizer_json(), "sp.json");
    // "▁hello" is one token; an unknown character is its UTF-8 bytes (日 = E6 97 A5).
    EXPECT_EQ(t.encode("hello"), (Ids{268}));
    EXPECT_EQ(t.encode("hello hell"), (Ids{268, 259, 266}));
    EXPECT_EQ(t.encode("h\xE6\x97\xA5"), (Ids{259, 260, 3 + 0xE6, 3 + 0x97, 3 + 0xA5}));
    // An unknown character cuts the merges: "he" then "llo" merge on each side of it.
    EXPECT_EQ(t.encode("heXllo"), (Ids{259, 264, 3 + 'X', 265, 263}));
    // Added tokens are cut out first; the text after one gets its own ▁ (the normalizer runs
    // on each text between added tokens, as HF's).
    EXPECT_EQ(t.encode("<s>hello</s>"), (Ids{1, 268, 2}));
    for (const std::string text : {std::string("hello hell"), std::string("  he\n\tX\xE6\x97\xA5"),
                                   std::string("o  ")})
        EXPECT_EQ(t.decode(t.encode(text)), text);
    EXPECT_EQ(t.decode({1, 268, 2}), "<s> hello</s>");  // lossy after an added token, as HF's
}

TEST(SentencePieceStyle, UnknownCharactersWithoutByteFallback) {
    synthetic::SpSpec s;
    s.byte_fallback = false;
    const Tokenizer fused = Tokenizer::from_json(synthetic::sp_tokenizer_json(s), "sp.json");
    EXPECT_EQ(fused.encode("hXYe"), (Ids{259, 260, 0, 261}));  // fuse_unk: one <unk> for XY
    s.fuse_unk = false;
    const Tokenizer unfused = Tokenizer::from_json(synthetic::sp_tokenizer_json(s), "sp.json");
    EXPECT_EQ(unfused.encode("hXYe"), (Ids{259, 260, 0, 0, 261}));
    // Without an unk_token, such a character is a clear error, not a wrong id.
    std::string no_unk = synthetic::sp_tokenizer_json(s);
    no_unk.replace(no_unk.find(R"("unk_token": "<unk>")"), 20, R"("unk_token": null)");
    try {
        Tokenizer::from_json(no_unk, "sp.json").encode("X");
        ADD_FAILURE() << "encoded";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::InvalidArgument) << e.what();
    }
    std::string bad_unk = synthetic::sp_tokenizer_json(s);
    bad_unk.replace(bad_unk.find(R"("unk_token": "<unk>")"), 20, R"("unk_token": "<??>")");
    EXPECT_THROW(Tokenizer::from_json(bad_unk, "sp.json"), trt::Error);
}

TEST(SentencePieceStyle, MetaspacePipelineAndGemmaStyleSplit) {
    // Mistral/Llama conversions of newer tokenizers: Metaspace instead of the normalizers.
    synthetic::SpSpec meta;
    meta.normalizer = "null";
    meta.pre_tokenizer = R"({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false})";
    meta.decoder = R"({"type": "Sequence", "decoders": [{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": false}, {"type": "ByteFallback"}, {"type": "Fuse"}]})";
    const Tokenizer m = Tokenizer::from_json(synthetic::sp_tokenizer_json(meta), "sp.json");
    EXPECT_EQ(m.encode("hello"), (Ids{268}));
    EXPECT_EQ(m.encode("<s>hello"), (Ids{1, 267}));  // "first": no ▁ after an added token
    // Gemma 3: Replace " " -> ▁, then Split on " " MergedWithPrevious, no prefix.
    synthetic::SpSpec gemma;
    gemma.normalizer = R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})";
    gemma.pre_tokenizer = R"({"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false})";
    gemma.decoder = R"({"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]})";
    const Tokenizer g = Tokenizer::from_json(synthetic::sp_tokenizer_json(gemma), "sp.json");
    EXPECT_EQ(g.encode("hello hello"), (Ids{267, 268}));
    for (const std::string text : {std::string(" hello  x\n"), std::string("\xE6\x97\xA5 o")})
        EXPECT_EQ(g.decode(g.encode(text)), text);
}

TEST(SentencePieceStyle, IdentityFollowsThePipeline) {
    synthetic::SpSpec other;
    other.decoder = R"({"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]})";
    const auto digest = [](const std::string& json) {
        return trt::tok::identity_of(Tokenizer::from_json(json, "sp.json"), "sp.json").digest;
    };
    EXPECT_NE(digest(synthetic::sp_tokenizer_json()), digest(synthetic::sp_tokenizer_json(other)));
    EXPECT_EQ(digest(synthetic::sp_tokenizer_json()), digest(synthetic::sp_tokenizer_json()));
}

}  // namespace
