// SHA-256 against the FIPS 180-2 test vectors, chunking invariance, and file hashing across
// read-buffer boundaries.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/sha256.h"

using namespace trt;

namespace {

std::string tmp_path(const std::string& name) {
    ::mkdir(TRAINRT_TEST_TMP, 0755);  // may already exist
    return std::string(TRAINRT_TEST_TMP) + "/sha256_" + name;
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

const char kMillionA[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

std::string hex_with(Sha256::Engine engine, const std::string& msg) {
    Sha256 h(engine);
    h.update(msg.data(), msg.size());
    return to_hex(h.finish());
}

}  // namespace

// Both engines (on a CPU without SHA-NI, Auto is the portable one again).
TEST(Sha256, FipsVectors) {
    for (Sha256::Engine engine : {Sha256::Engine::Auto, Sha256::Engine::Portable}) {
        EXPECT_EQ(hex_with(engine, ""),
                  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        EXPECT_EQ(hex_with(engine, "abc"),
                  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        EXPECT_EQ(hex_with(engine, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        EXPECT_EQ(hex_with(engine, std::string(1000000, 'a')), kMillionA);
    }
    EXPECT_EQ(sha256_hex("abc", 3),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, EnginesAgreeOnEveryLength) {
    std::string msg;
    for (int i = 0; i < 1100; ++i) msg.push_back(static_cast<char>((i * 2654435761u) >> 11));
    for (size_t len = 0; len <= msg.size(); len += (len < 200 ? 1 : 37))
        ASSERT_EQ(hex_with(Sha256::Engine::Auto, msg.substr(0, len)),
                  hex_with(Sha256::Engine::Portable, msg.substr(0, len)))
            << "len " << len;
}

TEST(Sha256, ChunkingDoesNotMatter) {
    // Lengths around the 55/56/64-byte padding edges, fed in every awkward chunk size.
    std::string msg;
    for (int i = 0; i < 300; ++i) msg.push_back(static_cast<char>((i * 131 + 7) & 0xff));
    for (size_t len : {0u, 1u, 55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 128u, 300u}) {
        const std::string whole = sha256_hex(msg.data(), len);
        for (size_t chunk : {1u, 3u, 63u, 64u, 65u}) {
            Sha256 h;
            for (size_t p = 0; p < len; p += chunk) h.update(msg.data() + p, std::min(chunk, len - p));
            EXPECT_EQ(to_hex(h.finish()), whole) << "len " << len << " chunk " << chunk;
        }
    }
}

TEST(Sha256, MillionAFileSpansSeveralBuffers) {
    static_assert(1000000 > kSha256FileBuffer, "the vector must cross read-buffer boundaries");
    const std::string path = tmp_path("million_a");
    write_bytes(path, std::string(1000000, 'a'));
    EXPECT_EQ(sha256_file_hex(path), kMillionA);
}

TEST(Sha256, FileMatchesMemoryForOddSizes) {
    std::string data;
    for (size_t i = 0; i < 2 * kSha256FileBuffer + 77; ++i)
        data.push_back(static_cast<char>((i * 2654435761u) >> 13));
    // Small files get a buffer of their own size (+1), larger ones the full chunk.
    for (size_t len : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{4097},
                       kSha256FileBuffer - 1, kSha256FileBuffer, kSha256FileBuffer + 1,
                       data.size()}) {
        const std::string path = tmp_path("odd");
        write_bytes(path, data.substr(0, len));
        EXPECT_EQ(sha256_file_hex(path), sha256_hex(data.data(), len)) << "len " << len;
    }
}

TEST(Sha256, MissingFileIsIoError) {
    try {
        sha256_file_hex(tmp_path("does_not_exist"));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Io);
        EXPECT_NE(std::string(e.what()).find("does_not_exist"), std::string::npos);
    }
}
