// The tokenizer entry points through the public header only: load (a file or a model folder),
// encode / decode with the (buf, cap, needed) convention, vocab_size, token_id, the errors a
// host sees for bad files and bad input, and one tokenizer shared by several threads at once.
// The tokenizer here is a small byte-level BPE written by the test (the alphabet and a few
// merges); real GPT-2 and Llama 3 files are held against another implementation by the
// tokenizer oracle test (tests/tokenizer).
#include <trainrt/trainrt.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "capi/capi_test_util.h"

namespace {

class CapiTokenizer : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_dir();
        path_ = dir_ + "/tokenizer.json";
        std::ofstream(path_) << tiny_tokenizer_json();
        ASSERT_EQ(trainrt_tokenizer_load(&tok_, path_.c_str()), TRAINRT_OK) << last_error();
    }
    void TearDown() override { trainrt_tokenizer_destroy(tok_); }

    std::vector<int32_t> encode(const std::string& text) {
        size_t needed = 0;
        EXPECT_EQ(trainrt_tokenizer_encode(nullptr, 0, &needed, tok_, text.data(), text.size()),
                  TRAINRT_OK) << last_error();
        std::vector<int32_t> ids(needed);
        EXPECT_EQ(trainrt_tokenizer_encode(ids.data(), ids.size(), &needed, tok_, text.data(),
                                           text.size()), TRAINRT_OK);
        return ids;
    }
    std::string decode(const std::vector<int32_t>& ids) {
        size_t needed = 0;
        EXPECT_EQ(trainrt_tokenizer_decode(nullptr, 0, &needed, tok_, ids.data(), ids.size()),
                  TRAINRT_OK) << last_error();
        std::string text(needed + 1, '\0');
        EXPECT_EQ(trainrt_tokenizer_decode(text.data(), text.size(), &needed, tok_, ids.data(),
                                           ids.size()), TRAINRT_OK);
        text.resize(needed);
        return text;
    }

    std::string dir_, path_;
    trainrt_tokenizer* tok_ = nullptr;
};

TEST_F(CapiTokenizer, EncodesDecodesAndLooksUp) {
    EXPECT_EQ(encode("hello hello<|eot|>"), (std::vector<int32_t>{259, ' ', 259, 300}));
    EXPECT_EQ(decode({259, ' ', 259, 300}), "hello hello<|eot|>");
    const std::string odd("a\0b \xE6\x97\xA5", 7);  // a NUL and a CJK character
    EXPECT_EQ(decode(encode(odd)), odd);
    EXPECT_TRUE(encode("").empty());
    int32_t v = 0;
    ASSERT_EQ(trainrt_tokenizer_vocab_size(&v, tok_), TRAINRT_OK);
    EXPECT_EQ(v, 301);
    int32_t id = 0;
    ASSERT_EQ(trainrt_tokenizer_token_id(&id, tok_, "<|eot|>"), TRAINRT_OK);
    EXPECT_EQ(id, 300);
    ASSERT_EQ(trainrt_tokenizer_token_id(&id, tok_, "hell"), TRAINRT_OK);
    EXPECT_EQ(id, 258);
    ASSERT_EQ(trainrt_tokenizer_token_id(&id, tok_, "not a token"), TRAINRT_OK);
    EXPECT_EQ(id, -1);
}

TEST_F(CapiTokenizer, ShortBuffersGetThePrefixAndTheFullCount) {
    int32_t ids[2] = {-7, -7};
    size_t needed = 0;
    ASSERT_EQ(trainrt_tokenizer_encode(ids, 2, &needed, tok_, "hello a b", 9), TRAINRT_OK);
    EXPECT_EQ(needed, 5u);  // hello, ' ', a, ' ', b
    EXPECT_EQ(ids[0], 259);
    EXPECT_EQ(ids[1], ' ');
    char buf[4];
    const int32_t hello[] = {259};
    ASSERT_EQ(trainrt_tokenizer_decode(buf, sizeof buf, &needed, tok_, hello, 1), TRAINRT_OK);
    EXPECT_EQ(needed, 5u);
    EXPECT_STREQ(buf, "hel");
}

TEST_F(CapiTokenizer, LoadsAModelFolderAndRefusesBadFiles) {
    trainrt_tokenizer* t = nullptr;
    ASSERT_EQ(trainrt_tokenizer_load(&t, dir_.c_str()), TRAINRT_OK) << last_error();
    trainrt_tokenizer_destroy(t);

    trainrt_tokenizer* const sentinel = reinterpret_cast<trainrt_tokenizer*>(uintptr_t{0x5e});
    t = sentinel;
    const std::string empty_dir = dir_ + "/empty";
    std::filesystem::create_directories(empty_dir);
    EXPECT_EQ(trainrt_tokenizer_load(&t, empty_dir.c_str()), TRAINRT_ERR_IO);
    EXPECT_TRUE(names(last_error(), "tokenizer.json") ||
                last_error().find("tokenizer.json") != std::string::npos) << last_error();
    EXPECT_EQ(trainrt_tokenizer_load(&t, (dir_ + "/missing.json").c_str()), TRAINRT_ERR_IO);
    const std::string truncated = dir_ + "/truncated.json";
    std::ofstream(truncated) << tiny_tokenizer_json().substr(0, 500);
    EXPECT_EQ(trainrt_tokenizer_load(&t, truncated.c_str()), TRAINRT_ERR_FORMAT);
    EXPECT_NE(last_error().find("truncated.json"), std::string::npos) << last_error();
    const std::string wordpiece = dir_ + "/wordpiece.json";
    std::string text = tiny_tokenizer_json();
    text.replace(text.find("\"BPE\""), 5, "\"WordPiece\"");
    std::ofstream(wordpiece) << text;
    EXPECT_EQ(trainrt_tokenizer_load(&t, wordpiece.c_str()), TRAINRT_ERR_UNSUPPORTED);
    EXPECT_NE(last_error().find("WordPiece"), std::string::npos) << last_error();
    EXPECT_EQ(t, sentinel) << "a failed load must leave *out alone";
}

TEST_F(CapiTokenizer, BadInputIsRefusedWithTheReason) {
    size_t needed = 0;
    EXPECT_EQ(trainrt_tokenizer_encode(nullptr, 0, &needed, tok_, "ok\xFF", 3),
              TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("byte 2"), std::string::npos) << last_error();
    const int32_t too_big[] = {301}, negative[] = {-1};
    EXPECT_EQ(trainrt_tokenizer_decode(nullptr, 0, &needed, tok_, too_big, 1),
              TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("301"), std::string::npos) << last_error();
    EXPECT_EQ(trainrt_tokenizer_decode(nullptr, 0, &needed, tok_, negative, 1),
              TRAINRT_ERR_INVALID_ARGUMENT);
}

TEST_F(CapiTokenizer, OneTokenizerServesManyThreadsAtOnce) {
    const std::string text = "hello world, hello <|eot|> again\n";
    const std::vector<int32_t> want = encode(text);
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int k = 0; k < 4; k++)
        threads.emplace_back([&, k] {
            for (int rep = 0; rep < 200; rep++) {
                std::vector<int32_t> ids(want.size() + 4);
                size_t needed = 0;
                if (trainrt_tokenizer_encode(ids.data(), ids.size(), &needed, tok_, text.data(),
                                             text.size()) != TRAINRT_OK)
                    return;
                ids.resize(needed);
                if (ids != want) return;
            }
            ok[k] = 1;
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok, (std::vector<int>{1, 1, 1, 1}));
}

}  // namespace

// ---------------------------------------------------------------- prepare with a tokenizer

namespace {

// A shard's header fields and ids.
struct Shard {
    int32_t magic = 0, version = 0, count = 0;
    std::vector<int32_t> ids;
};

Shard read_shard(const std::string& path) {
    Shard s;
    std::ifstream f(path, std::ios::binary);
    int32_t header[256] = {};
    f.read(reinterpret_cast<char*>(header), sizeof header);
    s.magic = header[0];
    s.version = header[1];
    s.count = header[2];
    for (uint16_t id; f.read(reinterpret_cast<char*>(&id), 2);) s.ids.push_back(id);
    return s;
}

class CapiPrepareText : public CapiTokenizer {};

TEST_F(CapiPrepareText, TextFilesBecomeDocumentsOpenedByTheEndOfTextToken) {
    // The tokenizer_config.json beside the tokenizer names the end-of-text token.
    std::ofstream(dir_ + "/tokenizer_config.json") << R"({"eos_token": {"content": "<|eot|>"}})";
    const std::string a = dir_ + "/a.txt", b = dir_ + "/b.txt";
    std::ofstream(a) << "hello\nhello hello\n";
    std::ofstream(b) << "hel\nlo\nhello world\nhello\n";  // 25 bytes; val: the last 20%
    const char* inputs[] = {a.c_str(), b.c_str()};
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = dir_.c_str();  // the folder
    o.val_fraction = 0.2;
    o.threads = 3;
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    const std::string out = dir_ + "/shards";
    ASSERT_EQ(trainrt_prepare_text(&r, inputs, 2, out.c_str(), &o), TRAINRT_OK) << last_error();
    // 43 bytes in all: the cut is at byte 43 - floor(8.6) = 35, inside b's "hello world\n"
    // line; val starts at the next line start, "hello\n", as a document of its own.
    EXPECT_EQ(r.documents, 3);
    EXPECT_EQ(r.vocab_size, 301);
    EXPECT_EQ(r.eos_id, 300);
    EXPECT_EQ(r.token_bytes, 2);
    EXPECT_EQ(r.bytes, 43);
    const Shard train = read_shard(out + "/train.bin"), val = read_shard(out + "/val.bin");
    EXPECT_EQ(train.magic, 20240520);
    EXPECT_EQ(train.version, 1);
    std::vector<int32_t> want = {300};
    for (int32_t id : encode("hello\nhello hello\n")) want.push_back(id);
    want.push_back(300);
    for (int32_t id : encode("hel\nlo\nhello world\n")) want.push_back(id);
    EXPECT_EQ(train.ids, want);
    EXPECT_EQ(train.count, static_cast<int32_t>(want.size()));
    std::vector<int32_t> want_val = {300};
    for (int32_t id : encode("hello\n")) want_val.push_back(id);
    EXPECT_EQ(val.ids, want_val);
    EXPECT_EQ(r.train_tokens + r.val_tokens, static_cast<int64_t>(want.size() + want_val.size()));
}

// Version 2 options: shard_tokens writes numbered shards, which the version 2 result counts; a
// host built against version 1 (its smaller struct_size) gets one file per split, and its
// version 1 result is filled up to its own size only.
TEST_F(CapiPrepareText, NumberedShardsAndVersionOneCallers) {
    std::ofstream(dir_ + "/tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    const std::string a = dir_ + "/a.txt";
    {
        std::ofstream f(a);
        for (int i = 0; i < 400; i++) f << "hello hello world\n";
    }
    const char* inputs[] = {a.c_str()};
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    EXPECT_EQ(o.version, 3u);
    o.tokenizer = dir_.c_str();
    o.val_fraction = 0.1;
    o.shard_tokens = 1000;
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    const std::string out = dir_ + "/numbered";
    ASSERT_EQ(trainrt_prepare_text(&r, inputs, 1, out.c_str(), &o), TRAINRT_OK) << last_error();
    ASSERT_GE(r.train_shards, 2);
    EXPECT_GE(r.val_shards, 1);
    int64_t total = 0;
    for (int k = 0; k < r.train_shards; k++) {
        char name[32];
        std::snprintf(name, sizeof name, "/train_%06d.bin", k);
        const Shard s = read_shard(out + name);
        EXPECT_EQ(s.count, k + 1 < r.train_shards ? 1000 : s.count);
        total += s.count;
    }
    EXPECT_EQ(total, r.train_tokens);
    EXPECT_FALSE(std::ifstream(out + "/train.bin").good());

    // Version 1: the struct ends before shard_tokens, whatever lies past it.
    trainrt_prepare_options v1 = o;
    v1.struct_size = static_cast<uint32_t>(offsetof(trainrt_prepare_options, shard_tokens));
    v1.version = 1;
    v1.shard_tokens = 7;  // past the caller's struct: not read
    trainrt_prepare_result r1;  // a version 1 result: only its first 56 bytes are the caller's
    std::memset(&r1, 0x5A, sizeof r1);
    r1.struct_size = static_cast<uint32_t>(offsetof(trainrt_prepare_result, train_shards));
    const std::string out1 = dir_ + "/single";
    ASSERT_EQ(trainrt_prepare_text(&r1, inputs, 1, out1.c_str(), &v1), TRAINRT_OK) << last_error();
    EXPECT_EQ(read_shard(out1 + "/train.bin").count, r1.train_tokens);
    EXPECT_EQ(r1.train_tokens, r.train_tokens);
    EXPECT_EQ(r1.train_shards, 0x5A5A5A5A);  // past its struct_size: untouched
    o.shard_tokens = -5;
    EXPECT_EQ(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &o), TRAINRT_ERR_INVALID_ARGUMENT);
}

TEST_F(CapiPrepareText, JsonLinesAndTheirErrors) {
    const std::string jl = dir_ + "/docs.jsonl";
    std::ofstream(jl) << R"({"text": "hello", "id": 1})" << "\n\n"
                      << R"({"text": "hello hello"})" << "\n";
    const char* inputs[] = {jl.c_str()};
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = path_.c_str();
    o.jsonl_field = "text";
    trainrt_prepare_result r = TRAINRT_PREPARE_RESULT_INIT;
    const std::string out = dir_ + "/jl";
    // No tokenizer_config.json and no known end-of-text token: refused, naming what was tried.
    EXPECT_EQ(trainrt_prepare_text(&r, inputs, 1, out.c_str(), &o), TRAINRT_ERR_FORMAT);
    EXPECT_NE(last_error().find("end-of-text"), std::string::npos) << last_error();
    std::ofstream(dir_ + "/tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    ASSERT_EQ(trainrt_prepare_text(&r, inputs, 1, out.c_str(), &o), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.documents, 2);
    EXPECT_EQ(read_shard(out + "/train.bin").ids, (std::vector<int32_t>{300, 259, 300, 259, ' ', 259}));

    std::ofstream(jl) << R"({"text": "hello"})" << "\n" << R"({"body": "x"})" << "\n";
    EXPECT_EQ(trainrt_prepare_text(&r, inputs, 1, out.c_str(), &o), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("docs.jsonl:2"), std::string::npos) << last_error();
    std::ofstream(jl) << "{\"text\": \"hel\n";
    EXPECT_EQ(trainrt_prepare_text(&r, inputs, 1, out.c_str(), &o), TRAINRT_ERR_FORMAT);
    EXPECT_NE(last_error().find("docs.jsonl:1"), std::string::npos) << last_error();
}

TEST_F(CapiPrepareText, ProgressReportsAndCanStopTheRun) {
    std::ofstream(dir_ + "/tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    const std::string a = dir_ + "/a.txt";
    std::ofstream(a) << "hello world\nhello\n";
    const char* inputs[] = {a.c_str()};
    struct Seen {
        int calls = 0;
        int64_t last = -1, total = -1;
        bool stop = false;
    } seen;
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    o.tokenizer = path_.c_str();
    o.progress = [](int64_t done, int64_t total, void* payload) -> int32_t {
        auto* s = static_cast<Seen*>(payload);
        s->calls++;
        s->last = done;
        s->total = total;
        return s->stop ? 1 : 0;
    };
    o.progress_payload = &seen;
    const std::string out = dir_ + "/p";
    ASSERT_EQ(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &o), TRAINRT_OK) << last_error();
    EXPECT_GE(seen.calls, 1);
    EXPECT_EQ(seen.last, 18);
    EXPECT_EQ(seen.total, 18);
    seen.stop = true;
    const std::string out2 = dir_ + "/stopped";
    EXPECT_EQ(trainrt_prepare_text(nullptr, inputs, 1, out2.c_str(), &o), TRAINRT_ERR_CANCELLED);
    EXPECT_NE(last_error().find("stopped"), std::string::npos) << last_error();
    EXPECT_FALSE(std::filesystem::exists(out2 + "/train.bin"));
    EXPECT_FALSE(std::filesystem::exists(out2 + "/train.bin.tmp"));
}

// trainrt_tokenizer_train: a tokenizer trained on a text file loads back, round-trips, keeps
// its special token, and feeds trainrt_prepare_text; an existing file is kept unless
// overwrite; the result reports what was read and made.
TEST(CapiTokenizerTrain, TrainsATokenizerThatLoadsAndPrepares) {
    const std::string dir = scratch_dir();
    const std::string text = std::string(TRAINRT_SOURCE_DIR) + "/examples/data/tinyshakespeare.txt";
    const std::string out = dir + "/tokenizer.json";
    const char* inputs[] = {text.c_str()};
    trainrt_tokenizer_train_options o;
    trainrt_tokenizer_train_options_init(&o);
    EXPECT_EQ(o.min_frequency, 2);
    o.vocab_size = 700;
    trainrt_tokenizer_train_result r;
    trainrt_tokenizer_train_result_init(&r);
    ASSERT_EQ(trainrt_tokenizer_train(&r, inputs, 1, out.c_str(), &o), TRAINRT_OK) << last_error();
    EXPECT_EQ(r.vocab_size, 700);
    EXPECT_EQ(r.merges, 700 - 256 - 1);
    EXPECT_GT(r.bytes, 1000000);
    EXPECT_GT(r.pieces, r.distinct_pieces);
    EXPECT_FALSE(std::filesystem::exists(out + ".new")) << "no temporary left";

    trainrt_tokenizer* t = nullptr;
    ASSERT_EQ(trainrt_tokenizer_load(&t, out.c_str()), TRAINRT_OK) << last_error();
    int32_t v = 0, eot = -1;
    ASSERT_EQ(trainrt_tokenizer_vocab_size(&v, t), TRAINRT_OK);
    EXPECT_EQ(v, 700);
    ASSERT_EQ(trainrt_tokenizer_token_id(&eot, t, "<|endoftext|>"), TRAINRT_OK);
    EXPECT_EQ(eot, 0);
    const std::string sample =
        "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n";
    size_t n = 0;
    ASSERT_EQ(trainrt_tokenizer_encode(nullptr, 0, &n, t, sample.data(), sample.size()),
              TRAINRT_OK);
    EXPECT_LT(n, sample.size() / 2) << "a trained tokenizer compresses text like its corpus";
    trainrt_tokenizer_destroy(t);

    // It tokenizes shards (end-of-text found as a special token).
    trainrt_prepare_options p = TRAINRT_PREPARE_OPTIONS_INIT;
    p.tokenizer = out.c_str();
    p.val_fraction = 0.1;
    trainrt_prepare_result pr = TRAINRT_PREPARE_RESULT_INIT;
    ASSERT_EQ(trainrt_prepare_text(&pr, inputs, 1, (dir + "/shards").c_str(), &p), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(pr.vocab_size, 700);
    EXPECT_EQ(pr.eos_id, 0);

    // An existing file is kept, and its bytes untouched, unless overwrite.
    std::ofstream(out) << "mine";
    EXPECT_EQ(trainrt_tokenizer_train(nullptr, inputs, 1, out.c_str(), &o), TRAINRT_ERR_IO);
    EXPECT_NE(last_error().find("exists"), std::string::npos) << last_error();
    std::ifstream kept(out);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>()),
              "mine");
    o.overwrite = 1;
    const char* none[1] = {nullptr};
    o.special_tokens = none;  // non-NULL, n = 0: no special tokens
    o.n_special_tokens = 0;
    ASSERT_EQ(trainrt_tokenizer_train(&r, inputs, 1, out.c_str(), &o), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_tokenizer_load(&t, out.c_str()), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_tokenizer_token_id(&eot, t, "<|endoftext|>"), TRAINRT_OK);
    EXPECT_EQ(eot, -1);
    trainrt_tokenizer_destroy(t);
    EXPECT_EQ(r.merges, 700 - 256);

    // What cannot work is refused before anything is written.
    o.vocab_size = 100;
    EXPECT_EQ(trainrt_tokenizer_train(nullptr, inputs, 1, (dir + "/small.json").c_str(), &o),
              TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("vocab_size"), std::string::npos) << last_error();
    o.vocab_size = 300;
    const std::string missing = dir + "/missing.txt";
    const char* missing_inputs[] = {missing.c_str()};
    EXPECT_EQ(trainrt_tokenizer_train(nullptr, missing_inputs, 1, (dir + "/m.json").c_str(), &o),
              TRAINRT_ERR_IO);
    EXPECT_NE(last_error().find("missing.txt"), std::string::npos) << last_error();
    EXPECT_FALSE(std::filesystem::exists(dir + "/m.json"));
}

TEST_F(CapiPrepareText, BadArgumentsAreRefused) {
    const std::string a = dir_ + "/a.txt";
    std::ofstream(a) << "hello\n";
    const char* inputs[] = {a.c_str()};
    trainrt_prepare_options o = TRAINRT_PREPARE_OPTIONS_INIT;
    const std::string out = dir_ + "/x";
    EXPECT_EQ(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &o), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("tokenizer"), std::string::npos) << last_error();
    o.tokenizer = path_.c_str();
    o.val_fraction = 1.5;
    EXPECT_EQ(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &o), TRAINRT_ERR_INVALID_ARGUMENT);
    o.val_fraction = 0.5;  // one line: val would be empty
    std::ofstream(dir_ + "/tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    EXPECT_EQ(trainrt_prepare_text(nullptr, inputs, 1, out.c_str(), &o), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("validation split"), std::string::npos) << last_error();
    EXPECT_FALSE(std::filesystem::exists(out + "/train.bin")) << "nothing complete-looking left";
    o.val_fraction = 0;
    const std::string bad = dir_ + "/bad.txt";
    std::ofstream(bad) << "ok\xFF";
    const char* bad_inputs[] = {bad.c_str()};
    EXPECT_EQ(trainrt_prepare_text(nullptr, bad_inputs, 1, out.c_str(), &o), TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("bad.txt"), std::string::npos) << last_error();
}

}  // namespace
