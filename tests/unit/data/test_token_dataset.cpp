// TokenDataset: shard round trips, globbing, and every malformed-shard error (FORMATS.md §1).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/data_test_util.h"
#include "core/error.h"
#include "data/prepare.h"
#include "data/token_dataset.h"

namespace fs = std::filesystem;
using trt::Error;
using trt::Status;
using trt::TokenDataset;

namespace {

// A fresh scratch dir per test: TRAINRT_TEST_TMP/data_ds/<test name>.
std::string fresh_dir() { return fresh_test_dir("data_ds"); }

// A shard with an arbitrary header (magic, version, ntok) and raw body bytes.
void write_raw(const std::string& path, int32_t magic, int32_t version, int32_t ntok,
               const std::vector<unsigned char>& body) {
    int32_t header[256] = {};
    header[0] = magic;
    header[1] = version;
    header[2] = ntok;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(header), sizeof header);
    f.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
    ASSERT_TRUE(f.good());
}

std::vector<int32_t> read_all(const TokenDataset& ds, size_t shard) {
    std::vector<int32_t> out(static_cast<size_t>(ds.shard_tokens(shard)));
    ds.copy_tokens(shard, 0, ds.shard_tokens(shard), out.data());
    return out;
}

}  // namespace

TEST(TokenDataset, Uint16RoundTrip) {
    const std::string path = fresh_dir() + "/a.bin";
    std::vector<uint32_t> toks(1000);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<uint32_t>((i * 37) % 50257);
    toks[7] = 65535;
    trt::write_shard(path, toks.data(), static_cast<int64_t>(toks.size()), 2);
    EXPECT_EQ(fs::file_size(path), 1024u + 2 * 1000);

    TokenDataset ds = TokenDataset::open(path, 65536);
    ASSERT_EQ(ds.num_shards(), 1u);
    EXPECT_EQ(ds.shard_path(0), path);
    EXPECT_EQ(ds.shard_tokens(0), 1000);
    EXPECT_EQ(ds.total_tokens(), 1000);
    const auto got = read_all(ds, 0);
    for (size_t i = 0; i < toks.size(); ++i) ASSERT_EQ(got[i], static_cast<int32_t>(toks[i])) << i;

    // A sub-range, and the empty range at the end.
    int32_t sub[3] = {-1, -1, -1};
    ds.copy_tokens(0, 6, 3, sub);
    EXPECT_EQ(sub[0], static_cast<int32_t>(toks[6]));
    EXPECT_EQ(sub[1], 65535);
    EXPECT_EQ(sub[2], static_cast<int32_t>(toks[8]));
    ds.copy_tokens(0, 1000, 0, sub);
}

TEST(TokenDataset, Uint32RoundTrip) {
    const std::string path = fresh_dir() + "/a.bin";
    std::vector<uint32_t> toks(513);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<uint32_t>(i * 1000 + 7);
    trt::write_shard(path, toks.data(), static_cast<int64_t>(toks.size()), 4);
    EXPECT_EQ(fs::file_size(path), 1024u + 4 * 513);
    std::ifstream f(path, std::ios::binary);
    int32_t header[3];
    f.read(reinterpret_cast<char*>(header), sizeof header);
    EXPECT_EQ(header[0], 20240801);
    EXPECT_EQ(header[1], 7);
    EXPECT_EQ(header[2], 513);

    TokenDataset ds = TokenDataset::open(path, 512 * 1000 + 8);  // largest id is 512007
    const auto got = read_all(ds, 0);
    for (size_t i = 0; i < toks.size(); ++i) ASSERT_EQ(got[i], static_cast<int32_t>(toks[i]));
}

TEST(TokenDataset, EmptyShardIsValid) {
    const std::string path = fresh_dir() + "/empty.bin";
    trt::write_shard(path, nullptr, 0, 2);
    TokenDataset ds = TokenDataset::open(path, 10);
    EXPECT_EQ(ds.num_shards(), 1u);
    EXPECT_EQ(ds.total_tokens(), 0);
}

TEST(TokenDataset, GlobTakesShardsInSortedOrder) {
    const std::string dir = fresh_dir();
    // Created out of order, with distinct sizes and contents.
    const std::vector<std::pair<std::string, uint32_t>> files = {
        {"shard_02.bin", 30}, {"shard_00.bin", 10}, {"shard_01.bin", 20}};
    for (const auto& [name, n] : files) {
        std::vector<uint32_t> toks(n, n);
        trt::write_shard(dir + "/" + name, toks.data(), n, 2);
    }
    trt::write_shard(dir + "/other.bin", nullptr, 0, 2);  // not matched by the glob

    TokenDataset ds = TokenDataset::open(dir + "/shard_*.bin", 100);
    ASSERT_EQ(ds.num_shards(), 3u);
    for (size_t s = 0; s < 3; ++s) {
        EXPECT_EQ(ds.shard_path(s), dir + "/shard_0" + std::to_string(s) + ".bin");
        EXPECT_EQ(ds.shard_tokens(s), static_cast<int64_t>(10 * (s + 1)));
        EXPECT_EQ(read_all(ds, s)[0], static_cast<int32_t>(10 * (s + 1)));
    }
    EXPECT_EQ(ds.total_tokens(), 60);

    // ? and [] are globs too.
    EXPECT_EQ(TokenDataset::open(dir + "/shard_0?.bin", 100).num_shards(), 3u);
    EXPECT_EQ(TokenDataset::open(dir + "/shard_0[01].bin", 100).num_shards(), 2u);
}

TEST(TokenDataset, MoveKeepsMappingsAlive) {
    const std::string path = fresh_dir() + "/a.bin";
    const std::vector<uint32_t> toks = {1, 2, 3, 4};
    trt::write_shard(path, toks.data(), 4, 2);
    TokenDataset a = TokenDataset::open(path, 10);
    TokenDataset b(std::move(a));
    TokenDataset c;
    c = std::move(b);
    EXPECT_EQ(read_all(c, 0), (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(TokenDataset, CopyTokensIsBoundsChecked) {
    const std::string path = fresh_dir() + "/a.bin";
    const std::vector<uint32_t> toks = {1, 2, 3, 4};
    trt::write_shard(path, toks.data(), 4, 2);
    TokenDataset ds = TokenDataset::open(path, 10);
    int32_t out[8];
    expect_error([&] { ds.copy_tokens(0, 1, 4, out); }, Status::InvalidArgument, {"a.bin"});
    expect_error([&] { ds.copy_tokens(0, -1, 2, out); }, Status::InvalidArgument, {});
    expect_error([&] { ds.copy_tokens(0, 5, 0, out); }, Status::InvalidArgument, {});
    expect_error([&] { ds.copy_tokens(0, 0, -1, out); }, Status::InvalidArgument, {});
    expect_error([&] { ds.copy_tokens(0, 2, INT64_MAX, out); }, Status::InvalidArgument, {});
    expect_error([&] { ds.copy_tokens(1, 0, 1, out); }, Status::InvalidArgument, {});
    expect_error([&] { (void)ds.shard_tokens(1); }, Status::InvalidArgument, {});
}

TEST(TokenDataset, BadVocabSize) {
    const std::string path = fresh_dir() + "/a.bin";
    trt::write_shard(path, nullptr, 0, 2);
    expect_error([&] { TokenDataset::open(path, 0); }, Status::InvalidArgument, {"vocab_size"});
    expect_error([&] { TokenDataset::open(path, int64_t{1} << 31); }, Status::InvalidArgument,
                 {"vocab_size"});
}

// ---------------------------------------------------------------- malformed shards

TEST(TokenDatasetErrors, ShorterThanHeader) {
    const std::string path = fresh_dir() + "/short.bin";
    std::ofstream(path, std::ios::binary) << std::string(100, '\0');
    expect_error([&] { TokenDataset::open(path, 256); }, Status::Format,
                 {path, "100 bytes", "1024"});
    const std::string empty = fs::path(path).parent_path().string() + "/zero.bin";
    std::ofstream(empty, std::ios::binary).close();
    expect_error([&] { TokenDataset::open(empty, 256); }, Status::Format, {empty, "0 bytes"});
}

TEST(TokenDatasetErrors, WrongMagic) {
    const std::string path = fresh_dir() + "/magic.bin";
    write_raw(path, 20240326, 1, 2, std::vector<unsigned char>(4));
    const std::string msg = expect_error([&] { TokenDataset::open(path, 256); }, Status::Format,
                                         {path, "magic number", "20240520", "20240801",
                                          "an llm.c checkpoint"});
    EXPECT_EQ(msg.find("20240326"), std::string::npos) << msg;  // the file's bytes: not quoted
}

// A shard path that leads (here through a link) to some other file: the error says what is
// wrong and what kind of file it is, but never quotes that file's bytes.
TEST(TokenDatasetErrors, AForeignFileBehindAShardPathIsNotQuoted) {
    const std::string dir = fresh_dir();
    std::ofstream(dir + "/secret", std::ios::binary) << "hunter2-" << std::string(2000, 'k');
    fs::create_symlink(dir + "/secret", dir + "/train_000000.bin");
    const std::string msg = expect_error([&] { TokenDataset::open(dir + "/train_*.bin", 256); },
                                         Status::Format,
                                         {dir + "/train_000000.bin", "magic number"});
    int32_t first = 0;
    std::memcpy(&first, "hunt", 4);
    EXPECT_EQ(msg.find(std::to_string(first)), std::string::npos) << msg;
    EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
}

TEST(TokenDatasetErrors, WrongVersionForEachMagic) {
    const std::string dir = fresh_dir();
    write_raw(dir + "/u16.bin", 20240520, 7, 2, std::vector<unsigned char>(4));
    expect_error([&] { TokenDataset::open(dir + "/u16.bin", 256); }, Status::Format,
                 {dir + "/u16.bin", "version 1", "says 7"});
    write_raw(dir + "/u32.bin", 20240801, 1, 2, std::vector<unsigned char>(8));
    expect_error([&] { TokenDataset::open(dir + "/u32.bin", 256); }, Status::Format,
                 {dir + "/u32.bin", "version 7", "says 1"});
}

TEST(TokenDatasetErrors, TruncatedBody) {
    const std::string dir = fresh_dir();
    write_raw(dir + "/t16.bin", 20240520, 1, 10, std::vector<unsigned char>(18));
    expect_error([&] { TokenDataset::open(dir + "/t16.bin", 256); }, Status::Format,
                 {dir + "/t16.bin", "truncated", "1044", "1042"});
    write_raw(dir + "/t32.bin", 20240801, 7, 10, std::vector<unsigned char>(39));
    expect_error([&] { TokenDataset::open(dir + "/t32.bin", 256); }, Status::Format,
                 {dir + "/t32.bin", "truncated", "1064", "1063"});
}

TEST(TokenDatasetErrors, TrailingBytes) {
    const std::string dir = fresh_dir();
    write_raw(dir + "/x16.bin", 20240520, 1, 10, std::vector<unsigned char>(21));
    expect_error([&] { TokenDataset::open(dir + "/x16.bin", 256); }, Status::Format,
                 {dir + "/x16.bin", "trailing bytes", "1044", "1045"});
    write_raw(dir + "/x32.bin", 20240801, 7, 0, std::vector<unsigned char>(4));
    expect_error([&] { TokenDataset::open(dir + "/x32.bin", 256); }, Status::Format,
                 {"trailing bytes", "1024", "1028"});
}

TEST(TokenDatasetErrors, TokenCountOutOfRange) {
    const std::string dir = fresh_dir();
    write_raw(dir + "/neg.bin", 20240520, 1, -1, {});
    expect_error([&] { TokenDataset::open(dir + "/neg.bin", 256); }, Status::Format,
                 {dir + "/neg.bin", "-1", "2^31"});
    // 2^31 as the int32 field reads INT32_MIN.
    write_raw(dir + "/big.bin", 20240801, 7, INT32_MIN, {});
    expect_error([&] { TokenDataset::open(dir + "/big.bin", 256); }, Status::Format,
                 {dir + "/big.bin", "2147483648", "2^31"});
}

TEST(TokenDatasetErrors, TokenIdAtOrAboveVocabUint16) {
    const std::string dir = fresh_dir();
    std::vector<uint32_t> toks(3000, 5);
    toks[2500] = 256;  // == vocab_size
    trt::write_shard(dir + "/eq.bin", toks.data(), 3000, 2);
    expect_error([&] { TokenDataset::open(dir + "/eq.bin", 256); }, Status::Format,
                 {dir + "/eq.bin", "token 2500", "byte offset 6024", "id 256", "vocab_size 256",
                  "set model.vocab_size above the largest id or re-tokenize"});
    // The first bad id is reported, even when a later one is larger.
    toks[2500] = 5;
    toks[10] = 300;
    toks[20] = 65535;
    trt::write_shard(dir + "/gt.bin", toks.data(), 3000, 2);
    expect_error([&] { TokenDataset::open(dir + "/gt.bin", 256); }, Status::Format,
                 {dir + "/gt.bin", "token 10 ", "byte offset 1044", "id 300"});
    // One below is fine.
    EXPECT_NO_THROW(TokenDataset::open(dir + "/gt.bin", 65536));
}

TEST(TokenDatasetErrors, TokenIdAtOrAboveVocabUint32) {
    const std::string dir = fresh_dir();
    // Spans more than one validation chunk (2^20 ids) so the bad one is in the second.
    std::vector<uint32_t> toks((1u << 20) + 100, 50256);
    toks[(1u << 20) + 3] = 50257;
    trt::write_shard(dir + "/eq.bin", toks.data(), static_cast<int64_t>(toks.size()), 4);
    const int64_t idx = (int64_t{1} << 20) + 3;
    expect_error([&] { TokenDataset::open(dir + "/eq.bin", 50257); }, Status::Format,
                 {dir + "/eq.bin", "token " + std::to_string(idx),
                  "byte offset " + std::to_string(1024 + 4 * idx), "id 50257", "vocab_size 50257",
                  "re-tokenize"});
    toks[(1u << 20) + 3] = 50256;
    toks[0] = 4000000000u;  // beyond int32 as well
    trt::write_shard(dir + "/gt.bin", toks.data(), static_cast<int64_t>(toks.size()), 4);
    expect_error([&] { TokenDataset::open(dir + "/gt.bin", 50257); }, Status::Format,
                 {dir + "/gt.bin", "token 0 ", "byte offset 1024", "id 4000000000"});
    toks[0] = 0;
    trt::write_shard(dir + "/ok.bin", toks.data(), static_cast<int64_t>(toks.size()), 4);
    EXPECT_NO_THROW(TokenDataset::open(dir + "/ok.bin", 50257));
}

TEST(TokenDatasetErrors, BadShardInGlobIsNamed) {
    const std::string dir = fresh_dir();
    const std::vector<uint32_t> toks = {1, 2, 3};
    trt::write_shard(dir + "/s0.bin", toks.data(), 3, 2);
    write_raw(dir + "/s1.bin", 1, 1, 0, {});
    expect_error([&] { TokenDataset::open(dir + "/s*.bin", 256); }, Status::Format,
                 {dir + "/s1.bin", "magic"});
}

TEST(TokenDatasetErrors, MissingFile) {
    const std::string path = fresh_dir() + "/nope.bin";
    expect_error([&] { TokenDataset::open(path, 256); }, Status::Io,
                 {path, "No such file or directory"});
}

TEST(TokenDatasetErrors, GlobWithNoMatch) {
    const std::string pattern = fresh_dir() + "/train_*.bin";
    expect_error([&] { TokenDataset::open(pattern, 256); }, Status::Io,
                 {pattern, "matches no files"});
}

TEST(TokenDatasetErrors, DirectoryInsteadOfFile) {
    const std::string dir = fresh_dir();
    fs::create_directories(dir + "/sub.bin");
    expect_error([&] { TokenDataset::open(dir + "/sub.bin", 256); }, Status::Io,
                 {dir + "/sub.bin", "directory"});
    expect_error([&] { TokenDataset::open(dir + "/s*.bin", 256); }, Status::Io,
                 {dir + "/sub.bin", "directory"});
}

// ---------------------------------------------------------------- write_shard

TEST(WriteShard, RejectsBadArguments) {
    const std::string dir = fresh_dir();
    const std::vector<uint32_t> toks = {1, 70000, 3};
    expect_error([&] { trt::write_shard(dir + "/a.bin", toks.data(), 3, 2); },
                 Status::InvalidArgument, {"70000", "uint16"});
    expect_error([&] { trt::write_shard(dir + "/a.bin", toks.data(), 3, 3); },
                 Status::InvalidArgument, {"token_bytes"});
    expect_error([&] { trt::write_shard(dir + "/a.bin", toks.data(), -1, 4); },
                 Status::InvalidArgument, {});
    EXPECT_FALSE(fs::exists(dir + "/a.bin"));
    EXPECT_TRUE(fs::is_empty(dir));  // no temporary file either
}

TEST(WriteShard, UnwritableDirectoryIsIo) {
    const std::string dir = fresh_dir();
    const std::vector<uint32_t> toks = {1, 2, 3};
    expect_error([&] { trt::write_shard(dir + "/missing/a.bin", toks.data(), 3, 2); },
                 Status::Io, {"a.bin.tmp", "No such file or directory"});
    // Renaming onto a directory fails after the tmp file is written: it must be cleaned up.
    fs::create_directories(dir + "/taken.bin/x");
    expect_error([&] { trt::write_shard(dir + "/taken.bin", toks.data(), 3, 2); }, Status::Io,
                 {"rename"});
    for (const auto& e : fs::directory_iterator(dir))  // the temporary file is gone
        EXPECT_EQ(e.path().filename(), "taken.bin");
}

TEST(WriteShard, ReplacesAnExistingFile) {
    const std::string path = fresh_dir() + "/a.bin";
    const std::vector<uint32_t> a = {1, 2, 3, 4, 5}, b = {9, 8};
    trt::write_shard(path, a.data(), 5, 4);
    trt::write_shard(path, b.data(), 2, 2);
    TokenDataset ds = TokenDataset::open(path, 10);
    EXPECT_EQ(read_all(ds, 0), (std::vector<int32_t>{9, 8}));
    for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
        EXPECT_EQ(e.path().filename(), "a.bin");  // no temporary file left
}
