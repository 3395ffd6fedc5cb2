// Tokenizer identities (tokenizer/tokenizer_identity.h): the digest follows what a tokenizer
// does, not how its file is written. The same tokenizer.json re-serialised (keys in another
// order, merges as pairs, other whitespace) or named by its folder gives the same digest; one
// merge added or reordered, two ids swapped, a special flag or the pre-tokenizer changed gives
// another. The digests of the byte-level identity and of the synthetic tokenizer are pinned:
// prepare.json files record them, so the content's layout must not drift.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/json_min.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_identity.h"

namespace {

namespace fs = std::filesystem;
using trt::json::Value;
using trt::tok::Tokenizer;
using trt::tok::TokenizerIdentity;

std::string digest_of(const std::string& json) {
    return trt::tok::identity_of(Tokenizer::from_json(json, "test"), "test").digest;
}

std::string reserialise(const Value& v);

// A merge the other way round: "a b" as ["a", "b"], a pair as "a b".
std::string flipped_merge(const Value& m) {
    if (m.is_string()) {
        const size_t space = m.s.find(' ');
        return "[" + trt::json::quote(m.s.substr(0, space)) + ", " +
               trt::json::quote(m.s.substr(space + 1)) + "]";
    }
    return trt::json::quote(m.arr.at(0).s + " " + m.arr.at(1).s);
}

// `v` written as JSON again, differently: object keys in reverse order, each merge the other
// way round, one member per line.
std::string reserialise(const Value& v) {
    switch (v.kind) {
        case Value::Kind::Null: return "null";
        case Value::Kind::Bool: return v.b ? "true" : "false";
        case Value::Kind::Int: return std::to_string(v.i);
        case Value::Kind::Uint: return std::to_string(v.u);
        case Value::Kind::Double: return std::to_string(v.d);
        case Value::Kind::String: return trt::json::quote(v.s);
        case Value::Kind::Array: {
            std::string out = "[";
            for (size_t i = 0; i < v.arr.size(); i++)
                out += (i ? ",\n  " : "") + reserialise(v.arr[i]);
            return out + "]";
        }
        case Value::Kind::Object: {
            std::string out = "{";
            for (size_t i = v.obj.size(); i-- > 0;) {
                const trt::json::Member& m = v.obj[i];
                std::string value;
                if (m.key == "merges") {
                    value = "[";
                    for (size_t k = 0; k < m.value.arr.size(); k++)
                        value += (k ? ", " : "") + flipped_merge(m.value.arr[k]);
                    value += "]";
                } else {
                    value = reserialise(m.value);
                }
                out += trt::json::quote(m.key) + " :\n\t" + value + (i ? ",\n" : "");
            }
            return out + "}";
        }
    }
    return "";
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
}

TEST(TokenizerIdentity, TheSameTokenizerWrittenAnotherWayHasTheSameDigest) {
    const std::string json = synthetic::tokenizer_json();
    const std::string again = reserialise(trt::json::parse(json, "test"));
    ASSERT_NE(json, again);
    EXPECT_EQ(digest_of(json), digest_of(again));
    // A merge listed twice never applies at its later rank: the same behaviour.
    synthetic::Spec twice;
    twice.extra_merges = {"h e"};
    EXPECT_EQ(digest_of(synthetic::tokenizer_json(twice)), digest_of(json));
}

TEST(TokenizerIdentity, AFolderAndItsTokenizerJsonHaveTheSameDigest) {
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "tokenizer_identity_folder";
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "tokenizer.json") << synthetic::tokenizer_json();
    const TokenizerIdentity folder = trt::tok::load_tokenizer_identity(dir.string(), "test");
    const TokenizerIdentity file =
        trt::tok::load_tokenizer_identity((dir / "tokenizer.json").string(), "test");
    EXPECT_EQ(folder.digest, file.digest);
    EXPECT_EQ(folder.kind, "hf-bpe");
    EXPECT_EQ(folder.vocab_size, 263);
    EXPECT_EQ(folder.source, dir.string());  // the path as given
    EXPECT_TRUE(trt::tok::same_tokenizer(folder, file));
    fs::remove_all(dir);
}

TEST(TokenizerIdentity, OneMergeOrIdOrFlagChangedGivesAnotherDigest) {
    const std::string json = synthetic::tokenizer_json();
    const std::string base = digest_of(json);
    synthetic::Spec more;
    more.extra_merges = {"he l"};  // builds "hel" (262), unmerged before
    const std::string changed[] = {
        synthetic::tokenizer_json(more),
        // Two merges in the other order (ranks swapped).
        replaced(json, R"("h e", "l l")", R"("l l", "h e")"),
        // Two ids swapped.
        replaced(json, R"("he": 256, "ll": 257)", R"("he": 257, "ll": 256)"),
        // The added token no longer special.
        replaced(json, R"("normalized": false, "special": true)",
                 R"("normalized": false, "special": false)"),
        // Another pre-tokenizer rule; a normalizer.
        [] {
            synthetic::Spec s;
            s.pre_tokenizer = synthetic::cl100k_pre_tokenizer();
            return synthetic::tokenizer_json(s);
        }(),
        [] {
            synthetic::Spec s;
            s.normalizer = R"({"type": "NFC"})";
            return synthetic::tokenizer_json(s);
        }(),
        [] {
            synthetic::Spec s;
            s.ignore_merges = true;
            return synthetic::tokenizer_json(s);
        }(),
    };
    std::vector<std::string> digests{base};
    for (const std::string& c : changed) digests.push_back(digest_of(c));
    std::sort(digests.begin(), digests.end());
    EXPECT_EQ(std::unique(digests.begin(), digests.end()), digests.end())
        << "two different tokenizers share a digest";
}

// Recorded in prepare.json files: a change here makes every recorded digest a stranger.
TEST(TokenizerIdentity, DigestsArePinned) {
    const TokenizerIdentity bytes = trt::tok::bytes_identity();
    EXPECT_EQ(bytes.kind, "bytes");
    EXPECT_EQ(bytes.vocab_size, 256);
    EXPECT_EQ(bytes.digest,
              "sha256:e670ee7c1772279d7dd4f7ef33c97630b816418d34ca521416c8d0beba1ebfaa");
    EXPECT_EQ(bytes.short_digest(), "sha256:e670ee7c1772");
    EXPECT_EQ(digest_of(synthetic::tokenizer_json()),
              "sha256:fa2387ca1d7d4cf0157362e37a32820dae1613df220ac2e52135c2517632ccc6");
}

TEST(TokenizerIdentity, DescribeNamesKindSourceVocabAndShortDigest) {
    TokenizerIdentity id = trt::tok::identity_of(
        Tokenizer::from_json(synthetic::tokenizer_json(), "t.json"), "dir/t.json");
    EXPECT_EQ(id.describe(), "hf-bpe 'dir/t.json' (vocab 263, " + id.short_digest() + ")");
    EXPECT_EQ(id.short_digest().size(), 7u + 12u);
    EXPECT_EQ(trt::tok::bytes_identity().describe(), "bytes (vocab 256, sha256:e670ee7c1772)");
}

}  // namespace
