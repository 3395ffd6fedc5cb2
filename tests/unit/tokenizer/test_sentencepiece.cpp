// SentencePiece models (tokenizer.model) behind Tokenizer: models trained here, at test time,
// by Google's own trainer (libsentencepiece_train), never hand-made. Loading, the format told
// by content, ids and text through the shared checks, control tokens, the folder rule of
// find_tokenizer_files, and a clear error for each kind of bad file. The ids themselves are
// held against spm_encode by tests/tokenizer/sentencepiece_oracle_test.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/tokenizer_identity.h"

#ifdef TRAINRT_HAVE_SENTENCEPIECE
#include <sentencepiece_trainer.h>
#endif

namespace {

namespace fs = std::filesystem;
using trt::tok::Tokenizer;
using trt::tok::TokenizerFormat;
using Ids = std::vector<uint32_t>;

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

// Expects `f` to throw trt::Error with `status` and every one of `parts` in its message.
template <typename F>
void expect_error(F&& f, trt::Status status, std::initializer_list<std::string> parts) {
    try {
        f();
        ADD_FAILURE() << "no error";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), status) << e.what();
        for (const std::string& p : parts)
            EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
                << "'" << p << "' not in: " << e.what();
    }
}

class SentencePiece : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        // One folder per process: CTest runs each case as its own process, in parallel.
        dir_ = new std::string(std::string(TRAINRT_TEST_TMP) + "/sentencepiece-" +
                               std::to_string(::getpid()));
        fs::remove_all(*dir_);
        fs::create_directories(*dir_);
#ifdef TRAINRT_HAVE_SENTENCEPIECE
        // Llama 2's settings at a small vocabulary: BPE, byte fallback, digits split, no
        // normalization, whitespace kept; <unk> 0, <s> 1, </s> 2.
        const std::string text =
            slurp(std::string(TRAINRT_SOURCE_DIR) + "/examples/data/tinyshakespeare.txt")
                .substr(0, 300000);
        write(*dir_ + "/train.txt", text);
        const auto st = sentencepiece::SentencePieceTrainer::Train(
            "--input=" + *dir_ + "/train.txt --model_prefix=" + *dir_ + "/llama" +
            " --vocab_size=500 --model_type=bpe --byte_fallback=true --split_digits=true"
            " --normalization_rule_name=identity --remove_extra_whitespaces=false"
            " --character_coverage=1.0 --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1"
            " --minloglevel=2");
        ASSERT_TRUE(st.ok()) << st.ToString();
#endif
    }
    static void TearDownTestSuite() {
        fs::remove_all(*dir_);
        delete dir_;
    }
    void SetUp() override {
        if (!trt::tok::sentencepiece_supported())
            GTEST_SKIP() << "built without SentencePiece (TRAINRT_SENTENCEPIECE); "
                            "SentencePiece.RefusedWithoutSupport covers this build";
    }
    static std::string model() { return *dir_ + "/llama.model"; }
    static std::string* dir_;
};
std::string* SentencePiece::dir_ = nullptr;

TEST_F(SentencePiece, LoadsEncodesAndRoundTrips) {
    const Tokenizer t = Tokenizer::from_file(model());
    EXPECT_EQ(t.format(), TokenizerFormat::SentencePiece);
    EXPECT_EQ(t.id_limit(), 500u);
    EXPECT_FALSE(t.splits_at_line_starts());
    // Byte fallback: characters the model never saw (CJK, emoji) become <0xXX> pieces, so any
    // text round-trips with this (identity-normalized) model.
    for (const std::string text :
         {std::string("First Citizen:\nBefore we proceed any further, hear me speak."),
          std::string("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80  tabs\t\tand 12345"),
          std::string("  leading and trailing spaces  "), std::string("")}) {
        const Ids ids = t.encode(text);
        for (uint32_t id : ids) EXPECT_LT(id, t.id_limit());
        EXPECT_EQ(t.decode(ids), text);
    }
    // Digits split: one piece per digit (their byte pieces or their own).
    EXPECT_GE(t.encode("12345").size(), 5u);
}

TEST_F(SentencePiece, ControlTokensAreFoundNotEncoded) {
    const Tokenizer t = Tokenizer::from_file(model());
    uint32_t id = 99;
    EXPECT_TRUE(t.find("</s>", id));
    EXPECT_EQ(id, 2u);
    EXPECT_TRUE(t.find("<s>", id));
    EXPECT_EQ(id, 1u);
    EXPECT_TRUE(t.find("<0x41>", id));  // a byte piece
    EXPECT_FALSE(t.find("no such piece", id));  // PieceToId would answer <unk>'s id
    EXPECT_EQ(t.eos_token(), "</s>");
    // SentencePiece semantics: "</s>" in text is text.
    for (uint32_t i : t.encode("a </s> b")) EXPECT_NE(i, 2u);
    EXPECT_EQ(t.decode({1, 2}), "");  // control tokens decode to nothing
}

TEST_F(SentencePiece, BadInputGetsClearErrors) {
    const Tokenizer t = Tokenizer::from_file(model());
    expect_error([&] { t.encode("ok\xFF"); }, trt::Status::InvalidArgument, {"UTF-8", "byte 2"});
    expect_error([&] { t.decode({500}); }, trt::Status::InvalidArgument, {"id 500"});
}

TEST_F(SentencePiece, BadModelFilesAreRefusedByName) {
    const std::string good = slurp(model());
    const std::string truncated = *dir_ + "/truncated.model";
    write(truncated, good.substr(0, good.size() / 2));
    expect_error([&] { Tokenizer::from_file(truncated); }, trt::Status::Format,
                 {truncated, "SentencePiece"});
    const std::string garbage = *dir_ + "/garbage.model";
    write(garbage, std::string("\x0a\xff\xff\xff\xff\x0f garbage", 14));
    expect_error([&] { Tokenizer::from_file(garbage); }, trt::Status::Format, {garbage});
    const std::string empty = *dir_ + "/empty.model";
    write(empty, "");
    expect_error([&] { Tokenizer::from_file(empty); }, trt::Status::Format, {empty, "empty"});
    const std::string tiktoken = *dir_ + "/tiktoken.model";
    write(tiktoken, "IQ== 0\nIg== 1\n");
    expect_error([&] { Tokenizer::from_file(tiktoken); }, trt::Status::Format,
                 {tiktoken, "tiktoken"});
}

TEST_F(SentencePiece, FolderPrefersTheModelAndExportKeepsItsName) {
    const std::string folder = *dir_ + "/hf-folder";
    fs::create_directories(folder);
    write(folder + "/tokenizer.json", synthetic::tokenizer_json());
    fs::copy_file(model(), folder + "/tokenizer.model", fs::copy_options::overwrite_existing);
    write(folder + "/tokenizer_config.json", "{\"eos_token\": \"</s>\"}");
    const trt::tok::TokenizerFiles f = trt::tok::find_tokenizer_files(folder, "test");
    EXPECT_EQ(f.path, folder + "/tokenizer.model");
    EXPECT_EQ(f.export_name, "tokenizer.model");
    EXPECT_EQ(f.tokenizer_config, folder + "/tokenizer_config.json");
    const std::string out = *dir_ + "/exported";
    fs::remove_all(out);
    fs::create_directories(out);
    trt::tok::copy_tokenizer_files(f, out, 128);
    EXPECT_EQ(slurp(out + "/tokenizer.model"), slurp(model()));
    EXPECT_FALSE(fs::exists(out + "/tokenizer.json"));
    // A file named anything is told by its content.
    const std::string renamed = *dir_ + "/renamed.json";
    fs::copy_file(model(), renamed, fs::copy_options::overwrite_existing);
    EXPECT_EQ(trt::tok::find_tokenizer_files(renamed, "test").export_name, "tokenizer.model");
    EXPECT_EQ(Tokenizer::from_file(renamed).format(), TokenizerFormat::SentencePiece);
    // Without the model the folder's tokenizer.json is used.
    fs::remove(folder + "/tokenizer.model");
    EXPECT_EQ(trt::tok::find_tokenizer_files(folder, "test").export_name, "tokenizer.json");
}

// The fields of a protobuf message, each with its encoded bytes (tag included) and, for a
// length-delimited one, its payload: enough to write a model's proto in another way.
struct ProtoField {
    uint32_t number = 0;
    std::string raw, payload;
};

uint64_t varint_at(const std::string& s, size_t& i) {
    uint64_t v = 0;
    for (int shift = 0; i < s.size(); shift += 7) {
        const uint8_t b = static_cast<uint8_t>(s[i++]);
        v |= uint64_t(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    return v;
}

std::string varint(uint64_t v) {
    std::string out;
    do {
        out.push_back(static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
        v >>= 7;
    } while (v);
    return out;
}

std::vector<ProtoField> proto_fields(const std::string& msg) {
    std::vector<ProtoField> out;
    for (size_t i = 0; i < msg.size();) {
        const size_t start = i;
        const uint64_t tag = varint_at(msg, i);
        ProtoField f;
        f.number = static_cast<uint32_t>(tag >> 3);
        switch (tag & 7) {
            case 0: varint_at(msg, i); break;
            case 1: i += 8; break;
            case 5: i += 4; break;
            case 2: {
                const uint64_t n = varint_at(msg, i);
                f.payload = msg.substr(i, n);
                i += n;
                break;
            }
            default: ADD_FAILURE() << "wire type " << (tag & 7); return out;
        }
        f.raw = msg.substr(start, i - start);
        out.push_back(f);
    }
    return out;
}

std::string message_field(uint32_t number, const std::string& payload) {
    return varint(uint64_t(number) << 3 | 2) + varint(payload.size()) + payload;
}

std::string model_digest(const std::string& path) {
    return trt::tok::load_tokenizer_identity(path, "test").digest;
}

// The digest follows the model (pieces, scores, types, model type, normalizer), not how the
// proto is written nor what only training read (the input files).
TEST_F(SentencePiece, IdentityFollowsTheModelNotItsBytes) {
    const std::string bytes = slurp(model());
    const std::string base = model_digest(model());
    const trt::tok::TokenizerIdentity id = trt::tok::load_tokenizer_identity(model(), "test");
    EXPECT_EQ(id.kind, "sentencepiece");
    EXPECT_EQ(id.vocab_size, 500);
    // The folder holding it names the same tokenizer.
    const std::string folder = *dir_ + "/identity-folder";
    fs::create_directories(folder);
    fs::copy_file(model(), folder + "/tokenizer.model", fs::copy_options::overwrite_existing);
    EXPECT_EQ(model_digest(folder), base);

    const std::vector<ProtoField> top = proto_fields(bytes);
    std::string pieces;
    std::vector<std::string> rest;
    for (const ProtoField& f : top) {
        if (f.number == 1) pieces += f.raw;
        else rest.push_back(f.raw);
    }
    ASSERT_GE(rest.size(), 2u);  // trainer_spec, normalizer_spec, ...
    // The specs in reverse order (pieces first still: that is how the format is told).
    std::string reordered = pieces;
    for (size_t i = rest.size(); i-- > 0;) reordered += rest[i];
    ASSERT_NE(reordered, bytes);
    write(*dir_ + "/reordered.model", reordered);
    EXPECT_EQ(model_digest(*dir_ + "/reordered.model"), base);

    // The trainer spec's input path (field 1) elsewhere: the same model.
    std::string moved;
    for (const ProtoField& f : top) {
        if (f.number != 2) {
            moved += f.raw;
            continue;
        }
        std::string spec;
        for (const ProtoField& g : proto_fields(f.payload))
            spec += g.number == 1 ? message_field(1, "/elsewhere/train.txt") : g.raw;
        moved += message_field(2, spec);
    }
    ASSERT_NE(moved, bytes);
    write(*dir_ + "/moved.model", moved);
    EXPECT_EQ(model_digest(*dir_ + "/moved.model"), base);

    // One piece's score changed: another model.
    std::string rescored;
    int piece = 0;
    bool changed = false;
    for (const ProtoField& f : top) {
        if (f.number != 1 || piece++ != 300) {
            rescored += f.raw;
            continue;
        }
        std::string p;
        for (ProtoField g : proto_fields(f.payload)) {
            if (g.number == 2 && g.raw.size() == 5) {  // tag + fixed32 score
                g.raw[1] = static_cast<char>(g.raw[1] ^ 1);
                changed = true;
            }
            p += g.raw;
        }
        rescored += message_field(1, p);
    }
    ASSERT_TRUE(changed);
    write(*dir_ + "/rescored.model", rescored);
    EXPECT_NE(model_digest(*dir_ + "/rescored.model"), base);
}

TEST(SentencePieceBuild, RefusedWithoutSupport) {
    if (trt::tok::sentencepiece_supported()) GTEST_SKIP() << "this build reads SentencePiece";
    const std::string path = std::string(TRAINRT_TEST_TMP) + "/unsupported.model";
    fs::create_directories(TRAINRT_TEST_TMP);
    write(path, std::string("\x0a\x0e\x0a\x05<unk>", 9));
    expect_error([&] { Tokenizer::from_file(path); }, trt::Status::Unsupported,
                 {path, "SentencePiece", "TRAINRT_SENTENCEPIECE"});
}

}  // namespace
