// The tokenizer entry points through the public header only: load (a file or a model folder),
// encode / decode with the (buf, cap, needed) convention, vocab_size, token_id, the errors a
// host sees for bad files and bad input, and one tokenizer shared by several threads at once.
// The tokenizer here is a small byte-level BPE written by the test (the alphabet and a few
// merges); real GPT-2 and Llama 3 files are held against another implementation by the
// tokenizer oracle test (tests/tokenizer).
#include <trainrt/trainrt.h>

#include <fstream>
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
