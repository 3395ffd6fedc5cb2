// The GGUF reader (io/gguf_reader.h): files built byte by byte here from the format's
// definition (docs/FORMATS.md "GGUF"), so the reader is not only checked against its own
// writer: values of every type, Q4_0 and Q8_0 blocks decoded as ggml defines them, alignment,
// and every malformed or truncated file refused as Error(Format), never read past its end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "io/gguf_reader.h"

namespace trt::gguf {
namespace {

// A GGUF image, little-endian, built field by field.
struct Bytes {
    std::vector<uint8_t> b;
    template <typename T>
    Bytes& put(T v) {
        uint8_t raw[sizeof(T)];
        std::memcpy(raw, &v, sizeof(T));  // the test hosts are little-endian (x86-64)
        b.insert(b.end(), raw, raw + sizeof(T));
        return *this;
    }
    Bytes& str(const std::string& s) {
        put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    Bytes& pad_to(size_t align) {
        while (b.size() % align) b.push_back(0);
        return *this;
    }
};

// A header with n_tensors / n_kv as given, version 3.
Bytes header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    Bytes x;
    x.b = {'G', 'G', 'U', 'F'};
    x.put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    return x;
}

void tensor_info(Bytes& x, const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                 uint64_t offset) {
    x.str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) x.put<uint64_t>(n);
    x.put<uint32_t>(type).put<uint64_t>(offset);
}

template <typename F>
void expect_format(F&& f, const std::string& words) {
    try {
        f();
        FAIL() << "accepted; expected a refusal with: " << words;
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Format) << e.what();
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

// Q4_0 and Q8_0 blocks decoded from their definition: x = d * q, Q4_0's q = nibble - 8 with
// element j in byte j's low nibble and element j + 16 in its high one.
TEST(GgufReader, QuantisedBlocksDecodeAsGgmlDefinesThem) {
    const float d4 = 0.375f, d8 = -0.0625f;  // exact in fp16
    Bytes x = header(2, 0);
    tensor_info(x, "q4", {64}, 2, 0);   // two Q4_0 blocks: 36 bytes
    tensor_info(x, "q8", {32}, 8, 64);  // one Q8_0 block at the next 32-byte boundary
    x.pad_to(32);
    std::vector<float> want4(64), want8(32);
    for (int blk = 0; blk < 2; blk++) {
        x.put<uint16_t>(float_to_fp16(d4 * (blk + 1)));
        for (int j = 0; j < 16; j++) {
            const int lo = (j + blk) % 16, hi = (15 - j + 3 * blk) % 16;
            x.b.push_back(static_cast<uint8_t>(lo | (hi << 4)));
            want4[blk * 32 + j] = static_cast<float>(lo - 8) * d4 * (blk + 1);
            want4[blk * 32 + j + 16] = static_cast<float>(hi - 8) * d4 * (blk + 1);
        }
    }
    x.pad_to(32);
    x.put<uint16_t>(float_to_fp16(d8));
    for (int j = 0; j < 32; j++) {
        const int8_t q = static_cast<int8_t>(j * 8 - 128);
        x.put<int8_t>(q);
        want8[j] = static_cast<float>(q) * d8;
    }
    const Reader r = Reader::from_bytes(x.b, "blocks.gguf");
    ASSERT_EQ(r.tensors().size(), 2u);
    std::vector<float> got4(64), got8(32);
    r.read_rows(*r.find_tensor("q4"), 0, 1, got4.data());
    r.read_rows(*r.find_tensor("q8"), 0, 1, got8.data());
    EXPECT_EQ(got4, want4);
    EXPECT_EQ(got8, want8);
    EXPECT_EQ(r.find_tensor("q4")->bytes, 36u);
}

// Every value type, read back through the typed lookups; general.alignment moves the data.
TEST(GgufReader, ValuesOfEveryTypeAndAnAlignment) {
    Bytes x = header(1, 9);
    x.str("general.alignment").put<uint32_t>(4).put<uint32_t>(64);
    x.str("a.u8").put<uint32_t>(0).put<uint8_t>(200);
    x.str("a.i16").put<uint32_t>(3).put<int16_t>(-300);
    x.str("a.u64").put<uint32_t>(10).put<uint64_t>(1ull << 40);
    x.str("a.f32").put<uint32_t>(6).put<float>(0.25f);
    x.str("a.f64").put<uint32_t>(12).put<double>(1e-6);
    x.str("a.flag").put<uint32_t>(7).put<uint8_t>(1);
    x.str("a.name").put<uint32_t>(8).str("llama");
    x.str("a.list").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(2).str("x").str("yz");
    tensor_info(x, "t", {2, 3}, 0, 0);  // F32 [3, 2]
    x.pad_to(64);
    for (int i = 0; i < 6; i++) x.put<float>(static_cast<float>(i) - 2.5f);
    const Reader r = Reader::from_bytes(x.b, "values.gguf");
    EXPECT_EQ(r.version(), 3u);
    EXPECT_EQ(r.keys().size(), 9u);
    EXPECT_EQ(r.integer("a.u8"), 200);
    EXPECT_EQ(r.integer("a.i16"), -300);
    EXPECT_EQ(r.integer("a.u64"), int64_t{1} << 40);
    EXPECT_EQ(r.integer("a.absent", 7), 7);
    EXPECT_DOUBLE_EQ(r.number("a.f32", 0), 0.25);
    EXPECT_DOUBLE_EQ(r.number("a.f64", 0), 1e-6);
    EXPECT_DOUBLE_EQ(r.number("a.u8", 0), 200.0);
    EXPECT_EQ(r.string("a.name", ""), "llama");
    EXPECT_EQ(r.find("a.flag")->u, 1u);
    ASSERT_EQ(r.find("a.list")->items.size(), 2u);
    EXPECT_EQ(r.find("a.list")->items[1].s, "yz");
    expect_format([&] { r.integer("a.name"); }, "'a.name' is a STRING");
    expect_format([&] { r.integer("a.missing"); }, "'a.missing' is missing");
    expect_format([&] { r.string("a.f32", ""); }, "expected a STRING");
    expect_format([&] { r.number("a.list", 0); }, "is a ARRAY");
    const TensorEntry& t = *r.find_tensor("t");
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(t.rows(), 3u);
    std::vector<float> row(4);
    r.read_rows(t, 1, 2, row.data());
    EXPECT_EQ(row, (std::vector<float>{-0.5f, 0.5f, 1.5f, 2.5f}));
}

// A valid small file, then every prefix of it and a list of damaged ones: each is Error(Format)
// (ASan would see a read past the image).
TEST(GgufReader, TruncatedAndDamagedFilesAreRefused) {
    Bytes ok = header(1, 1);
    ok.str("k").put<uint32_t>(4).put<uint32_t>(5);
    tensor_info(ok, "w", {32, 2}, 8, 0);
    ok.pad_to(32);
    for (int i = 0; i < 2 * 34; i++) ok.b.push_back(static_cast<uint8_t>(i));
    ASSERT_NO_THROW(Reader::from_bytes(ok.b, "ok.gguf"));
    for (size_t n = 0; n < ok.b.size(); n++) {
        const std::vector<uint8_t> cut(ok.b.begin(), ok.b.begin() + static_cast<long>(n));
        EXPECT_THROW(Reader::from_bytes(cut, "cut.gguf"), Error) << n << " bytes";
    }
    expect_format([] { Reader::from_bytes(header(0, 0, 1).b, "v1"); }, "version 1");
    expect_format([] { Reader::from_bytes(header(0, uint64_t{1} << 60).b, "kv"); },
                  "key/value pairs cannot fit");
    expect_format([] { Reader::from_bytes(header(uint64_t{1} << 60, 0).b, "t"); },
                  "tensors cannot fit");
    {
        Bytes x = header(0, 2);
        x.str("k").put<uint32_t>(4).put<uint32_t>(1).str("k").put<uint32_t>(4).put<uint32_t>(2);
        expect_format([&] { Reader::from_bytes(x.b, "dup"); }, "'k' appears twice");
    }
    {
        Bytes x = header(0, 1);
        x.str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(1);
        expect_format([&] { Reader::from_bytes(x.b, "nested"); }, "an array of arrays");
    }
    {
        Bytes x = header(0, 1);
        x.str("k").put<uint32_t>(13).put<uint32_t>(0);
        expect_format([&] { Reader::from_bytes(x.b, "type"); }, "value type 13");
    }
    {
        Bytes x = header(0, 1);
        x.str("general.alignment").put<uint32_t>(4).put<uint32_t>(48);
        expect_format([&] { Reader::from_bytes(x.b, "align"); }, "power of two");
    }
    const auto one_tensor = [](std::vector<uint64_t> ne, uint32_t type, uint64_t offset,
                               size_t data) {
        Bytes x = header(1, 0);
        tensor_info(x, "w", std::move(ne), type, offset);
        x.pad_to(32);
        x.b.resize(x.b.size() + data);
        return x.b;
    };
    expect_format([&] { Reader::from_bytes(one_tensor({8}, 0, 16, 64), "a"); },
                  "not a multiple of 32");
    expect_format([&] { Reader::from_bytes(one_tensor({8}, 0, 0, 31), "b"); },
                  "runs past the file");
    expect_format([&] { Reader::from_bytes(one_tensor({16}, 8, 0, 64), "c"); },
                  "not whole Q8_0 blocks");
    expect_format([&] { Reader::from_bytes(one_tensor({8}, 5, 0, 64), "d"); }, "ggml type 5");
    expect_format([&] { Reader::from_bytes(one_tensor({0}, 0, 0, 64), "e"); }, "a dimension of 0");
    expect_format(
        [&] {
            Reader::from_bytes(one_tensor({1ull << 32, 1ull << 32}, 0, 0, 64), "f");
        },
        "a dimension of");
    // 2^62 F32 elements would be 2^64 bytes: a count that wraps to 0 must not pass as "inside".
    expect_format(
        [&] {
            Reader::from_bytes(one_tensor({1ull << 31, 1ull << 31}, 0, 0, 64), "f32wrap");
        },
        "a dimension of");
    expect_format(
        [&] {
            Reader::from_bytes(one_tensor({1, 1, 1, 1, 1}, 0, 0, 64), "g");
        },
        "5 dimensions");
}

// A tensor of a type the reader bounds but does not decode (a K-quant) is listed, and refused
// by name when read.
TEST(GgufReader, AKQuantTensorIsRefusedWhenRead) {
    Bytes x = header(1, 0);
    tensor_info(x, "blk.0.ffn_up.weight", {256}, 12, 0);  // Q4_K: 144 bytes a block
    x.pad_to(32);
    x.b.resize(x.b.size() + 144);
    const Reader r = Reader::from_bytes(x.b, "k.gguf");
    EXPECT_EQ(r.tensors()[0].bytes, 144u);
    EXPECT_EQ(type_id_name(12), "Q4_K");
    std::vector<float> out(256);
    try {
        r.read_rows(r.tensors()[0], 0, 1, out.data());
        FAIL() << "a Q4_K tensor was read";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Unsupported);
        EXPECT_NE(std::string(e.what()).find("is Q4_K"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace trt::gguf
