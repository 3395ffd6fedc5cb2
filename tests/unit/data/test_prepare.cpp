// prepare_bytes: byte tokenization, split and atomic writes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/data_test_util.h"
#include "data/prepare.h"
#include "data/token_dataset.h"
#include "io/fs_util.h"

namespace fs = std::filesystem;
using trt::Error;
using trt::Status;

namespace {

std::string fresh_dir() { return fresh_test_dir("data_prepare"); }



// The exact llm.c uint16 shard for these bytes.
std::string shard_bytes(const std::string& body) {
    int32_t header[256] = {};
    header[0] = 20240520;
    header[1] = 1;
    header[2] = static_cast<int32_t>(body.size());
    std::string out(reinterpret_cast<const char*>(header), sizeof header);
    for (unsigned char c : body) {
        out.push_back(static_cast<char>(c));  // little-endian uint16: low byte, then 0
        out.push_back('\0');
    }
    return out;
}

template <typename F>
void expect_error(F&& f, Status status, const std::string& needle) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(static_cast<int>(e.status()), static_cast<int>(status)) << e.what();
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        return;
    }
    ADD_FAILURE() << "no trt::Error thrown";
}

// No temporary file (io/fs_util.h's names, or an earlier version's NAME.tmp) and no lock file.
void expect_no_tmp(const std::string& dir) {
    for (const auto& entry : fs::directory_iterator(dir)) {
        EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
        EXPECT_EQ(trt::atomic_temp_target(entry.path().filename().string()), "") << entry.path();
        EXPECT_NE(entry.path().filename(), "trainrt.lock");
    }
}

}  // namespace

TEST(Prepare, SplitsBytesIntoTrainAndVal) {
    const std::string dir = fresh_dir();
    std::string text;
    for (int i = 0; i < 256; ++i) text.push_back(static_cast<char>(i));  // every byte value
    text += "hello, world!\n";                                           // 270 bytes
    write_text(dir + "/in.txt", text);

    const auto res = trt::prepare_bytes(dir + "/in.txt", dir + "/out/nested", 0.1);
    const int64_t n_val = 27;  // floor(270 * 0.1)
    EXPECT_EQ(res.train_tokens, 270 - n_val);
    EXPECT_EQ(res.val_tokens, n_val);
    const std::string out = dir + "/out/nested";
    EXPECT_EQ(slurp(out + "/train.bin"), shard_bytes(text.substr(0, 270 - n_val)));
    EXPECT_EQ(slurp(out + "/val.bin"), shard_bytes(text.substr(270 - n_val)));
    expect_no_tmp(out);

    // And they open as a dataset with vocab 256 (every byte is < 256).
    auto train = trt::TokenDataset::open(out + "/train.bin", 256);
    ASSERT_EQ(train.total_tokens(), 243);
    std::vector<int32_t> ids(243);
    train.copy_tokens(0, 0, 243, ids.data());
    for (int i = 0; i < 243; ++i) ASSERT_EQ(ids[i], static_cast<unsigned char>(text[i]));
    EXPECT_EQ(ids[200], 200);  // high bytes are not sign-extended
}

TEST(Prepare, ZeroFractionWritesEmptyVal) {
    const std::string dir = fresh_dir();
    write_text(dir + "/in.txt", "abc");
    write_text(dir + "/val.bin", "stale");
    const auto res = trt::prepare_bytes(dir + "/in.txt", dir, 0.0);
    EXPECT_EQ(res.train_tokens, 3);
    EXPECT_EQ(res.val_tokens, 0);
    EXPECT_EQ(slurp(dir + "/train.bin"), shard_bytes("abc"));
    EXPECT_EQ(slurp(dir + "/val.bin"), shard_bytes(""));
    expect_no_tmp(dir);
}

// val_fraction 1: an evaluation-only folder, every byte in val.bin and an empty train.bin
// that still opens (a session then evaluates but refuses to train).
TEST(Prepare, FractionOneWritesOnlyVal) {
    const std::string dir = fresh_dir();
    write_text(dir + "/in.txt", "hello");
    const auto res = trt::prepare_bytes(dir + "/in.txt", dir + "/out", 1.0);
    EXPECT_EQ(res.train_tokens, 0);
    EXPECT_EQ(res.val_tokens, 5);
    EXPECT_EQ(slurp(dir + "/out/train.bin"), shard_bytes(""));
    EXPECT_EQ(slurp(dir + "/out/val.bin"), shard_bytes("hello"));
    EXPECT_EQ(trt::TokenDataset::open(dir + "/out/train.bin", 256).total_tokens(), 0);
    EXPECT_EQ(trt::TokenDataset::open(dir + "/out/val.bin", 256).total_tokens(), 5);
}

TEST(Prepare, BadFraction) {
    const std::string dir = fresh_dir();
    write_text(dir + "/in.txt", std::string(100, 'x'));
    for (double f : {-0.1, 1.0000001, 1.5, std::nan("")})
        expect_error([&] { trt::prepare_bytes(dir + "/in.txt", dir + "/out", f); },
                     Status::InvalidArgument, "val_fraction");
    EXPECT_FALSE(fs::exists(dir + "/out/train.bin"));
}

TEST(Prepare, TextTooShortForFraction) {
    const std::string dir = fresh_dir();
    write_text(dir + "/in.txt", "abcde");  // floor(5 * 0.1) = 0
    expect_error([&] { trt::prepare_bytes(dir + "/in.txt", dir + "/out", 0.1); },
                 Status::InvalidArgument, "too short");
    EXPECT_FALSE(fs::exists(dir + "/out/train.bin"));
}

TEST(Prepare, MissingAndEmptyInput) {
    const std::string dir = fresh_dir();
    expect_error([&] { trt::prepare_bytes(dir + "/nope.txt", dir + "/out", 0.1); }, Status::Io,
                 "nope.txt");
    write_text(dir + "/empty.txt", "");
    expect_error([&] { trt::prepare_bytes(dir + "/empty.txt", dir + "/out", 0.1); },
                 Status::InvalidArgument, "empty");
    expect_error([&] { trt::prepare_bytes(dir, dir + "/out", 0.1); }, Status::Io, "directory");
}

// Devices and FIFOs are refused before reading: /dev/zero would be read without end, and a
// FIFO's open would wait for a writer.
TEST(Prepare, DevicesAndFifosAreNotRead) {
    const std::string dir = fresh_dir();
    for (const char* dev : {"/dev/zero", "/dev/urandom"}) {
        if (!fs::exists(dev)) continue;
        expect_error([&] { trt::prepare_bytes(dev, dir + "/out", 0.1); }, Status::Io,
                     "not a regular file");
    }
    const std::string fifo = dir + "/text.fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    expect_error([&] { trt::prepare_bytes(fifo, dir + "/out", 0.1); }, Status::Io,
                 "not a regular file");
    EXPECT_FALSE(fs::exists(dir + "/out/train.bin"));
}

TEST(Prepare, OutputPathIsAFile) {
    const std::string dir = fresh_dir();
    write_text(dir + "/in.txt", std::string(100, 'x'));
    write_text(dir + "/file", "x");
    expect_error([&] { trt::prepare_bytes(dir + "/in.txt", dir + "/file", 0.1); }, Status::Io,
                 "file");
}
