// prepare_text reads text files as it cuts them (data/text_window.h): with tiny read blocks
// and pieces the shards must be byte-identical to those of the file read and encoded whole,
// for several val fractions, thread counts and more than one file; an invalid UTF-8 byte far
// into a file is named by its offset in the file. Numbered shards (data/shard_set.h) hold the
// single file's ids in order, and a run removes the shards an earlier one left.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "data/prepare_text.h"
#include "data_test_util.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer

namespace fs = std::filesystem;

namespace {

std::string fresh_dir() { return fresh_test_dir("prepare_text_streaming"); }



// The synthetic tokenizer in dir, with the tokenizer_config.json naming its end-of-text token.
std::string write_tokenizer(const std::string& dir) {
    write_text(dir + "/tokenizer.json", synthetic::tokenizer_json());
    write_text(dir + "/tokenizer_config.json", R"({"eos_token": "<|end|>"})");
    return dir + "/tokenizer.json";
}

// About `bytes` of lines: words the synthetic tokenizer merges ("hello", " h"), punctuation,
// digits, non-ASCII letters, blank lines and lines that start with a space or a digit (which
// are no cut points), so pieces end at some line starts and not at others.
std::string text_of(size_t bytes, unsigned seed) {
    static const char* words[] = {"hello", "hell", "he", "llama", "x", "caf\xC3\xA9",
                                  "\xE6\x97\xA5\xE6\x9C\xAC", "42", "it's", "--", "Hello"};
    std::string s;
    unsigned r = seed;
    const auto next = [&] { return r = r * 1103515245u + 12345u, (r >> 16) & 0x7FFF; };
    while (s.size() < bytes) {
        const unsigned kind = next() % 10;
        if (kind == 0) s += "\n";
        else if (kind == 1) s += " ";
        else if (kind == 2) s += "7";
        const unsigned n = 1 + next() % 12;
        for (unsigned k = 0; k < n; k++) {
            s += words[next() % (sizeof words / sizeof *words)];
            s += next() % 5 ? " " : ", ";
        }
        s += next() % 4 ? ".\n" : "\n";
    }
    return s;
}

trt::PrepareTextResult run(const std::vector<std::string>& inputs, const std::string& out,
                           const std::string& tokenizer, double val, int threads, size_t block,
                           size_t piece, int64_t shard_tokens = 0) {
    trt::PrepareTextOptions o;
    o.shard_tokens = shard_tokens;
    o.tokenizer = tokenizer;
    o.val_fraction = val;
    o.threads = threads;
    o.read_block_bytes = block;
    o.piece_bytes = piece;
    return trt::prepare_text(inputs, out, o);
}

TEST(PrepareTextStreaming, SmallBlocksAndPiecesGiveTheWholeFilesIds) {
    const std::string dir = fresh_dir();
    const std::string tok = write_tokenizer(dir);
    write_text(dir + "/a.txt", text_of(120000, 1));
    write_text(dir + "/b.txt", text_of(70000, 2));
    const std::vector<std::string> inputs = {dir + "/a.txt", dir + "/b.txt"};
    for (double val : {0.0, 0.1, 0.37}) {
        // Whole: one piece per file (pieces larger than the files).
        const std::string whole = dir + "/whole";
        const trt::PrepareTextResult w = run(inputs, whole, tok, val, 1, 1 << 20, 1 << 24);
        for (int threads : {1, 3}) {
            const std::string cut = dir + "/cut" + std::to_string(threads);
            const trt::PrepareTextResult c = run(inputs, cut, tok, val, threads, 97, 1000);
            EXPECT_EQ(slurp(cut + "/train.bin"), slurp(whole + "/train.bin")) << val;
            EXPECT_EQ(slurp(cut + "/val.bin"), slurp(whole + "/val.bin")) << val;
            EXPECT_EQ(c.documents, w.documents);
            EXPECT_EQ(c.train_tokens, w.train_tokens);
            EXPECT_EQ(c.val_tokens, w.val_tokens);
        }
        EXPECT_EQ(w.documents, val > 0 ? 3 : 2);  // two files, and the val part of the second
        EXPECT_GT(w.train_tokens, 50000);
    }
}

TEST(PrepareTextStreaming, InvalidUtf8IsNamedByItsFileOffset) {
    const std::string dir = fresh_dir();
    const std::string tok = write_tokenizer(dir);
    std::string text = text_of(60000, 3);
    const size_t at = 50001;
    text[at] = '\xFF';
    write_text(dir + "/bad.txt", text);
    expect_error([&] { run({dir + "/bad.txt"}, dir + "/out", tok, 0.0, 2, 64, 500); },
                 trt::Status::InvalidArgument,
                 {"bad.txt", "not valid UTF-8", "byte " + std::to_string(at)});
    EXPECT_FALSE(fs::exists(dir + "/out/train.bin"));  // nothing half-written looks complete
}

// A JSON line over the bound is refused by file:line and the bound once that many of its
// bytes are read (std::getline read it whole first: a line of gigabytes failed as "cannot
// read"); a line of exactly the bound, and a last line without a newline, are read.
TEST(PrepareTextStreaming, AJsonLineOverTheBoundIsRefusedByItsSize) {
    const std::string dir = fresh_dir();
    trt::PrepareTextOptions o;
    o.tokenizer = write_tokenizer(dir);
    o.jsonl_field = "text";
    o.max_json_line_bytes = 100;
    const std::string fits = R"({"text": ")" + std::string(100 - 12, 'h') + R"("})";
    ASSERT_EQ(fits.size(), 100u);
    write_text(dir + "/ok.jsonl", "{\"text\": \"hello\"}\n\n" + fits + "\n{\"text\": \"he\"}");
    EXPECT_EQ(trt::prepare_text({dir + "/ok.jsonl"}, dir + "/ok", o).documents, 3);
    write_text(dir + "/long.jsonl",
               "{\"text\": \"hello\"}\n" + fits + "\n{\"text\": \"" + std::string(5000, 'x') + "\"}\n");
    expect_error([&] { trt::prepare_text({dir + "/long.jsonl"}, dir + "/out", o); },
                 trt::Status::InvalidArgument,
                 {"long.jsonl:3: the line is longer than 100 bytes, the most a JSON line may hold"});
    // Without a newline at all (a file of one endless line).
    write_text(dir + "/endless.jsonl", std::string(3 << 20, '['));
    expect_error([&] { trt::prepare_text({dir + "/endless.jsonl"}, dir + "/out", o); },
                 trt::Status::InvalidArgument, {"endless.jsonl:1: the line is longer than 100"});
}

// A shard's header count and its uint16 ids.
std::vector<uint16_t> ids_of(const std::string& path, int32_t& count) {
    const std::string bytes = slurp(path);
    EXPECT_GE(bytes.size(), 1024u) << path;
    int32_t header[3] = {};
    std::memcpy(header, bytes.data(), sizeof header);
    EXPECT_EQ(header[0], 20240520) << path;
    count = header[2];
    std::vector<uint16_t> ids((bytes.size() - 1024) / 2);
    if (!ids.empty())  // an empty shard (val-fraction 1's train.bin): no copy from data()
        std::memcpy(ids.data(), bytes.data() + 1024, ids.size() * 2);
    EXPECT_EQ(static_cast<int64_t>(ids.size()), count) << path;
    return ids;
}

TEST(PrepareTextShards, NumberedShardsHoldTheSingleFilesIdsInOrder) {
    const std::string dir = fresh_dir();
    const std::string tok = write_tokenizer(dir);
    write_text(dir + "/a.txt", text_of(150000, 4));
    const std::string one = dir + "/one", many = dir + "/many";
    run({dir + "/a.txt"}, one, tok, 0.2, 2, 1 << 16, 1 << 12);
    const trt::PrepareTextResult r = run({dir + "/a.txt"}, many, tok, 0.2, 2, 1 << 16, 1 << 12, 5000);
    for (const char* split : {"train", "val"}) {
        int32_t count = 0;
        const std::vector<uint16_t> whole = ids_of(one + "/" + split + ".bin", count);
        const std::vector<std::string>& files =
            std::string(split) == "train" ? r.train_files : r.val_files;
        ASSERT_GE(files.size(), 2u) << split;
        std::vector<uint16_t> joined;
        for (size_t k = 0; k < files.size(); k++) {
            char name[32];
            std::snprintf(name, sizeof name, "%s_%06zu.bin", split, k);
            EXPECT_EQ(files[k], name);
            const std::vector<uint16_t> ids = ids_of(many + "/" + files[k], count);
            if (k + 1 < files.size()) EXPECT_EQ(count, 5000) << files[k];
            EXPECT_LE(count, 5000);
            EXPECT_GT(count, 0);
            joined.insert(joined.end(), ids.begin(), ids.end());
        }
        EXPECT_EQ(joined, whole) << split;
        EXPECT_FALSE(fs::exists(many + "/" + split + ".bin"));
    }
}

// val_fraction 1: an evaluation-only folder, the whole text one document in val and an empty
// train.bin; its ids are what encode_text_document (eval --text) makes of the text in memory,
// also when prepare cuts the file into small pieces.
TEST(PrepareTextShards, FractionOneIsTheInMemoryDocument) {
    const std::string dir = fresh_dir();
    const std::string tok = write_tokenizer(dir);
    const std::string text = text_of(30000, 5);
    write_text(dir + "/a.txt", text);
    const trt::PrepareTextResult r = run({dir + "/a.txt"}, dir + "/out", tok, 1.0, 2, 97, 1000);
    EXPECT_EQ(r.train_tokens, 0);
    EXPECT_EQ(r.documents, 1);
    int32_t count = -1;
    EXPECT_TRUE(ids_of(dir + "/out/train.bin", count).empty());
    EXPECT_EQ(count, 0);
    const std::vector<uint16_t> val = ids_of(dir + "/out/val.bin", count);
    const std::vector<uint32_t> mem = trt::encode_text_document(tok, text);
    ASSERT_EQ(val.size(), mem.size());
    EXPECT_TRUE(std::equal(val.begin(), val.end(), mem.begin()));
    EXPECT_EQ(static_cast<int32_t>(mem[0]), r.eos_id);
    expect_error([&] { trt::encode_text_document(tok, "ok\xFF"); },
                 trt::Status::InvalidArgument, {"not valid UTF-8", "byte 2"});
}

TEST(PrepareTextShards, ARunRemovesTheShardsAnEarlierOneLeft) {
    const std::string dir = fresh_dir();
    const std::string tok = write_tokenizer(dir);
    write_text(dir + "/a.txt", text_of(60000, 5));
    const std::string out = dir + "/out";
    const trt::PrepareTextResult small = run({dir + "/a.txt"}, out, tok, 0.1, 1, 1 << 16, 1 << 12, 1000);
    ASSERT_GT(small.train_files.size(), 5u);
    write_text(out + "/train_notes.txt", "mine");  // not a shard: kept
    write_text(out + "/train_1.bin", "mine");      // not this layout's name: kept
    const trt::PrepareTextResult big = run({dir + "/a.txt"}, out, tok, 0.1, 1, 1 << 16, 1 << 12, 4000);
    ASSERT_LT(big.train_files.size(), small.train_files.size());
    for (size_t k = big.train_files.size(); k < small.train_files.size(); k++)
        EXPECT_FALSE(fs::exists(out + "/" + small.train_files[k])) << small.train_files[k];
    EXPECT_TRUE(fs::exists(out + "/" + big.train_files.back()));
    run({dir + "/a.txt"}, out, tok, 0.1, 1, 1 << 16, 1 << 12, 0);  // back to one file per split
    EXPECT_TRUE(fs::exists(out + "/train.bin"));
    EXPECT_TRUE(fs::exists(out + "/val.bin"));
    EXPECT_FALSE(fs::exists(out + "/train_000000.bin"));
    EXPECT_FALSE(fs::exists(out + "/val_000000.bin"));
    EXPECT_TRUE(fs::exists(out + "/train_notes.txt"));
    EXPECT_TRUE(fs::exists(out + "/train_1.bin"));
}

TEST(PrepareTextShards, BadShardSizeIsRefused) {
    const std::string dir = fresh_dir();
    const std::string tok = write_tokenizer(dir);
    write_text(dir + "/a.txt", "hello\n");
    expect_error([&] { run({dir + "/a.txt"}, dir + "/out", tok, 0.0, 1, 64, 64, -1); },
                 trt::Status::InvalidArgument, {"shard_tokens", "-1"});
    expect_error([&] { run({dir + "/a.txt"}, dir + "/out", tok, 0.0, 1, 64, 64, int64_t(1) << 31); },
                 trt::Status::InvalidArgument, {"shard_tokens"});
}

}  // namespace
