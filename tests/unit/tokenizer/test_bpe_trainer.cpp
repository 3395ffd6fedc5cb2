// The byte-level BPE trainer (tokenizer/bpe_trainer.h): merges chosen by pair frequency over
// the pre-tokenized pieces (worked out by hand on a small text), min_frequency and vocab_size
// as stopping rules, deterministic output, and a tokenizer.json that this library's loader
// reads back into a tokenizer that round-trips any text and compresses the text it learnt
// from. (That Hugging Face's own implementation encodes with the written file exactly as this
// library does is the tokenizer oracle's job: tests/tokenizer.)
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/tokenizer.h"

namespace {

using trt::tok::BpeTrainer;
using trt::tok::BpeTrainOptions;
using trt::tok::Tokenizer;
using trt::tok::TrainedBpe;

const char* const kG = "\xC4\xA0";  // "Ġ": the byte-level character of a space

BpeTrainOptions options(uint32_t vocab, uint64_t min_frequency = 2) {
    BpeTrainOptions o;
    o.vocab_size = vocab;
    o.min_frequency = min_frequency;
    return o;
}

TrainedBpe train_on(const std::string& text, const BpeTrainOptions& o) {
    BpeTrainer t(o);
    t.add_text(text, "text");
    return t.train();
}

std::string shakespeare() {
    std::ifstream f(std::string(TRAINRT_SOURCE_DIR) + "/examples/data/tinyshakespeare.txt",
                    std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

TEST(BpeTrainer, MergesTheMostFrequentPairFirst) {
    // Pieces: "ab" x1, " ab" x3, " cd" x1. Pairs: (a,b) 4, (Ġ,a) 3, (Ġ,c) 1, (c,d) 1.
    // Merge 1: a+b. Then (Ġ,ab) 3 -> merge 2: Ġ+ab. Then every pair is seen once: below
    // min_frequency 2, training stops short of the vocabulary size.
    const TrainedBpe b = train_on("ab ab ab ab cd", options(1000));
    ASSERT_EQ(b.merges.size(), 2u);
    EXPECT_EQ(b.merges[0], (std::pair<std::string, std::string>{"a", "b"}));
    EXPECT_EQ(b.merges[1], (std::pair<std::string, std::string>{kG, "ab"}));
    EXPECT_EQ(b.tokens.size(), 258u);  // 256 bytes + 2 merges
    EXPECT_EQ(b.tokens[256], "ab");
    EXPECT_EQ(b.tokens[257], std::string(kG) + "ab");
    EXPECT_EQ(b.pieces, 5u);
    EXPECT_EQ(b.distinct_pieces, 3u);
    // min_frequency 1 takes the singletons too; ties go to the bytewise-smallest token.
    const TrainedBpe all = train_on("ab ab ab ab cd", options(1000, 1));
    ASSERT_EQ(all.merges.size(), 4u);
    EXPECT_EQ(all.merges[2], (std::pair<std::string, std::string>{"c", "d"}));  // "cd" < "Ġc"
    EXPECT_EQ(all.merges[3], (std::pair<std::string, std::string>{kG, "cd"}));
}

TEST(BpeTrainer, StopsAtTheVocabularySize) {
    const std::string text = shakespeare().substr(0, 200000);
    const TrainedBpe b = train_on(text, options(300));
    EXPECT_EQ(b.special_tokens.size() + b.tokens.size(), 300u);
    EXPECT_EQ(b.merges.size(), 300u - 256u - 1u);
}

TEST(BpeTrainer, IsDeterministic) {
    const std::string text = shakespeare().substr(0, 100000);
    const std::string a = trt::tok::to_tokenizer_json(train_on(text, options(400)));
    // The same text in two parts counts the same pieces (cut at a newline: a piece boundary).
    BpeTrainer t(options(400));
    const size_t cut = text.find('\n', 50000) + 1;
    t.add_text(std::string_view(text).substr(0, cut), "part 1");
    t.add_text(std::string_view(text).substr(cut), "part 2");
    EXPECT_EQ(trt::tok::to_tokenizer_json(t.train()), a);
}

TEST(BpeTrainer, WritesATokenizerThatLoadsRoundTripsAndCompresses) {
    const std::string text = shakespeare();
    ASSERT_GT(text.size(), 1000000u);
    const std::string train_part = text.substr(0, 800000), held_out = text.substr(800000);
    const std::string json = trt::tok::to_tokenizer_json(train_on(train_part, options(1024)));
    const Tokenizer tk = Tokenizer::from_json(json, "trained.json");
    EXPECT_EQ(tk.id_limit(), 1024u);
    uint32_t eot = 99;
    ASSERT_TRUE(tk.find("<|endoftext|>", eot));
    EXPECT_EQ(eot, 0u);
    // Compression: held-out text of the same kind takes well under one token per byte.
    const std::vector<uint32_t> ids = tk.encode(held_out);
    EXPECT_LT(static_cast<double>(ids.size()), 0.5 * static_cast<double>(held_out.size()));
    EXPECT_EQ(tk.decode(ids), held_out);
    // Any text round-trips (bytes never seen in training, other scripts, emoji, specials).
    for (const std::string s :
         {std::string("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x98\x80 caf\xC3\xA9"),
          std::string("  \t\n\n  x = 42;  // code\r\n"), std::string("a<|endoftext|>b"),
          std::string("\x01\x02\x7F", 3)}) {
        EXPECT_EQ(tk.decode(tk.encode(s)), s);
    }
    EXPECT_EQ(tk.encode("a<|endoftext|>b")[1], 0u);
}

TEST(BpeTrainer, AFileStreamedInSmallChunksCountsAsTheWholeText) {
    const std::string path = std::string(TRAINRT_SOURCE_DIR) + "/examples/data/tinyshakespeare.txt";
    const TrainedBpe whole = train_on(shakespeare(), options(600));
    BpeTrainer::set_file_chunk_bytes_for_tests(4096);  // ~270 cuts
    BpeTrainer t(options(600));
    const uint64_t bytes = t.add_file(path);
    EXPECT_EQ(bytes, shakespeare().size());
    const TrainedBpe streamed = t.train();
    EXPECT_EQ(streamed.pieces, whole.pieces);
    EXPECT_EQ(trt::tok::to_tokenizer_json(streamed), trt::tok::to_tokenizer_json(whole));
    // Blank lines everywhere: a cut after "\n\n" would count "\n\n" as one piece where the
    // whole text has "\n", "\n" (the regex's \s+(?!\S) backs off before a letter).
    const std::string blank_lines_path = ::testing::TempDir() + "/bpe_blank_lines.txt";
    std::string blank_lines;
    for (int i = 0; i < 3000; i++) blank_lines += "word" + std::to_string(i % 7) + "\n\n";
    std::ofstream(blank_lines_path, std::ios::binary) << blank_lines;
    BpeTrainer u(options(300));
    u.add_file(blank_lines_path);
    BpeTrainer::set_file_chunk_bytes_for_tests(0);
    EXPECT_EQ(u.train().pieces, train_on(blank_lines, options(300)).pieces);
    std::remove(blank_lines_path.c_str());
    BpeTrainer missing(options(600));
    try {
        missing.add_file(path + ".missing");
        ADD_FAILURE() << "a missing file was read";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::Io);
        EXPECT_NE(std::string(e.what()).find(".missing"), std::string::npos) << e.what();
    }
}

TEST(BpeTrainer, SpecialTokenStringsAreNotLearntFrom) {
    // "<|endoftext|>" between the words would otherwise make "<|" pairs the most frequent.
    std::string text;
    for (int i = 0; i < 50; i++) text += "xy<|endoftext|>";
    const TrainedBpe b = train_on(text, options(1000));
    ASSERT_EQ(b.merges.size(), 1u);
    EXPECT_EQ(b.merges[0], (std::pair<std::string, std::string>{"x", "y"}));
}

TEST(BpeTrainer, RefusesBadOptionsAndText) {
    auto status_of = [](auto&& f) {
        try {
            f();
        } catch (const trt::Error& e) {
            return e.status();
        }
        return trt::Status::Ok;
    };
    EXPECT_EQ(status_of([] { BpeTrainer t(options(256)); }), trt::Status::InvalidArgument)
        << "256 bytes + 1 special do not fit 256";
    EXPECT_EQ(status_of([] { BpeTrainer t(options(257)); }), trt::Status::Ok);
    EXPECT_EQ(status_of([] { BpeTrainer t(options(300, 0)); }), trt::Status::InvalidArgument);
    EXPECT_EQ(status_of([] {
                  BpeTrainOptions o = options(300);
                  o.special_tokens = {"<s>", "<s>"};
                  BpeTrainer t(o);
              }),
              trt::Status::InvalidArgument);
    EXPECT_EQ(status_of([] {
                  BpeTrainer t(options(300));
                  t.add_text(std::string("ok \xFF bad", 8), "corpus.txt");
              }),
              trt::Status::InvalidArgument);
}

}  // namespace
