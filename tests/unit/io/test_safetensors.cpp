// safetensors reader/writer: round trips, dtype conversion, and one test per malformed case.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"

namespace {

using trt::DType;
using trt::SafetensorsFile;
using trt::Status;
using trt::TensorToWrite;

std::string tmp_path(const std::string& name) {
    ::mkdir(TRAINRT_TEST_TMP, 0755);  // may already exist
    return std::string(TRAINRT_TEST_TMP) + "/" + name;
}

bool file_exists(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0;
}

std::vector<uint8_t> read_file(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void put_u64(std::vector<uint8_t>& v, uint64_t x) {
    for (int k = 0; k < 8; ++k) v.push_back(static_cast<uint8_t>(x >> (8 * k)));
}

// A file image: u64 length, header text as given, then data bytes.
std::vector<uint8_t> image(const std::string& header, const std::vector<uint8_t>& data) {
    std::vector<uint8_t> v;
    put_u64(v, header.size());
    v.insert(v.end(), header.begin(), header.end());
    v.insert(v.end(), data.begin(), data.end());
    return v;
}
std::vector<uint8_t> image(const std::string& header, size_t data_bytes) {
    return image(header, std::vector<uint8_t>(data_bytes, 0));
}

template <typename T>
void append_le(std::vector<uint8_t>& v, T x) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));  // host is little-endian (static_assert in the library)
    v.insert(v.end(), b, b + sizeof(T));
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// from_bytes(img) must throw Error(Format) whose message contains frag (and the source name).
void expect_format(const std::vector<uint8_t>& img, const std::string& frag) {
    try {
        SafetensorsFile::from_bytes(img, "bad.safetensors");
        FAIL() << "accepted a malformed file; expected: " << frag;
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), Status::Format) << e.what();
        const std::string msg = e.what();
        EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
        EXPECT_EQ(msg.rfind("bad.safetensors", 0), 0u) << "message: " << msg;
    }
}

// One-tensor header: {"t": {"dtype": D, "shape": S, "data_offsets": O}}.
std::string one(const std::string& dtype, const std::string& shape, const std::string& offs) {
    return R"({"t":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offs + "}}";
}

// ------------------------------------------------------------------------- round trips

TEST(Safetensors, RoundTripF32) {
    const std::string p = tmp_path("rt_f32.safetensors");
    std::vector<float> a = {1.f, -2.5f, 3.25f, 0.f, -0.f, 1e-40f /* subnormal */};
    std::vector<float> b(4 * 3);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) * 0.1f - 0.3f;
    trt::write_safetensors(p, {{"a", DType::F32, {2, 3}, a.data()}, {"b", DType::F32, {4, 3}, b.data()}});
    EXPECT_FALSE(file_exists(p + ".tmp"));

    const SafetensorsFile f = SafetensorsFile::open(p);
    EXPECT_EQ(f.source_name(), p);
    ASSERT_EQ(f.tensors().size(), 2u);
    const trt::TensorInfo& ta = f.tensors()[0];
    EXPECT_EQ(ta.name, "a");
    EXPECT_EQ(ta.dtype, DType::F32);
    EXPECT_EQ(ta.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(ta.numel(), 6);
    EXPECT_EQ(ta.begin, 0u);
    EXPECT_EQ(ta.end, 24u);
    std::vector<float> out(6);
    f.read_f32(ta, out.data());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(bits(out[i]), bits(a[i])) << i;
    const trt::TensorInfo* tb = f.find("b");
    ASSERT_NE(tb, nullptr);
    EXPECT_EQ(tb->begin, 24u);
    std::vector<float> outb(12);
    f.read_f32(*tb, outb.data());
    EXPECT_EQ(outb, b);
    EXPECT_EQ(std::memcmp(f.data(*tb), b.data(), 48), 0);
    EXPECT_TRUE(f.metadata().empty());
}

TEST(Safetensors, HeaderPaddedToEightBytes) {
    const std::string p = tmp_path("pad.safetensors");
    const float x = 1.f;
    for (const char* name : {"x", "xy", "xyz", "xyzw", "abcdefg"}) {
        trt::write_safetensors(p, {{name, DType::F32, {1}, &x}});
        const std::vector<uint8_t> raw = read_file(p);
        uint64_t n = 0;
        std::memcpy(&n, raw.data(), 8);
        EXPECT_EQ((8 + n) % 8, 0u) << name;
        EXPECT_EQ(raw.size(), 8 + n + 4);
        EXPECT_EQ(raw[8 + n - 1] == ' ' || raw[8 + n - 1] == '}', true);
        EXPECT_NO_THROW(SafetensorsFile::from_bytes(raw, p));
    }
}

TEST(Safetensors, RoundTripBF16RoundsToNearestEven) {
    const std::string p = tmp_path("rt_bf16.safetensors");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    // value -> expected bf16 bits
    const std::vector<std::pair<float, uint16_t>> cases = {
        {1.0f, 0x3F80},
        {1.00390625f, 0x3F80},   // 1 + 2^-8: exact tie, mantissa 0 is even -> down
        {1.01171875f, 0x3F82},   // 1 + 3*2^-8: tie between 0x3F81 (odd) and 0x3F82 -> up
        {std::nextafter(1.00390625f, 2.0f), 0x3F81},  // just above the tie -> up
        {-2.5f, 0xC020},
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {inf, 0x7F80},
        {-inf, 0xFF80},
        {std::numeric_limits<float>::max(), 0x7F80},  // rounds up past the bf16 max to inf
        {3.0e38f, 0x7F62},
    };
    std::vector<float> src;
    for (auto& c : cases) src.push_back(c.first);
    src.push_back(nan);
    src.push_back(-nan);
    trt::write_safetensors(p, {{"w", DType::BF16, {static_cast<int64_t>(src.size())}, src.data()}});

    const SafetensorsFile f = SafetensorsFile::open(p);
    const trt::TensorInfo& t = f.tensors().at(0);
    EXPECT_EQ(t.dtype, DType::BF16);
    EXPECT_EQ(t.end - t.begin, src.size() * 2);
    const uint8_t* d = f.data(t);
    for (size_t i = 0; i < cases.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, d + 2 * i, 2);
        EXPECT_EQ(h, cases[i].second) << "value " << cases[i].first;
    }
    std::vector<float> out(src.size());
    f.read_f32(t, out.data());
    EXPECT_EQ(out[1], 1.0f);
    EXPECT_EQ(out[2], 1.015625f);
    EXPECT_EQ(out[4], -2.5f);
    EXPECT_TRUE(std::isnan(out[cases.size()]));
    EXPECT_TRUE(std::isnan(out[cases.size() + 1]));
    EXPECT_TRUE(std::signbit(out[cases.size() + 1]));
}

TEST(Safetensors, TensorOrderAndLookupByName) {
    const std::string p = tmp_path("order.safetensors");
    const float v[4] = {1, 2, 3, 4};
    trt::write_safetensors(p, {{"zeta", DType::F32, {1}, v},
                               {"alpha", DType::BF16, {2}, v + 1},
                               {"h.0.attn.c_attn.weight", DType::F32, {1, 1}, v + 3}});
    const SafetensorsFile f = SafetensorsFile::open(p);
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.tensors()[0].name, "zeta");
    EXPECT_EQ(f.tensors()[1].name, "alpha");
    EXPECT_EQ(f.tensors()[2].name, "h.0.attn.c_attn.weight");
    EXPECT_EQ(f.find("alpha"), &f.tensors()[1]);
    EXPECT_EQ(f.find("missing"), nullptr);
    float x = 0;
    f.read_f32(*f.find("h.0.attn.c_attn.weight"), &x);
    EXPECT_EQ(x, 4.f);
}

TEST(Safetensors, HeaderOrderIsKeptOnRead) {
    // Offsets deliberately not in header order: tensors() follows the header, not the offsets.
    const std::string h = R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]},)"
                          R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
    const SafetensorsFile f = SafetensorsFile::from_bytes(image(h, {7, 8, 9}), "x");
    ASSERT_EQ(f.tensors().size(), 2u);
    EXPECT_EQ(f.tensors()[0].name, "b");
    EXPECT_EQ(f.tensors()[1].name, "a");
    EXPECT_EQ(f.data(*f.find("b"))[0], 8);
    EXPECT_EQ(f.data(*f.find("a"))[0], 7);
}

TEST(Safetensors, MetadataAndEscapedNamesRoundTrip) {
    const std::string p = tmp_path("meta.safetensors");
    const std::map<std::string, std::string> meta = {
        {"format", "pt"},
        {"quote\"back\\slash", "line\nbreak\ttab \x01 ctl"},
        {"unicode \xC3\xA9", "\xF0\x9F\x98\x80"},
        {"", ""},
    };
    const float v[2] = {5.f, 6.f};
    const std::string odd = "we\"ird\\name\n\xE2\x82\xAC";
    trt::write_safetensors(p, {{odd, DType::F32, {2}, v}}, meta);
    const SafetensorsFile f = SafetensorsFile::open(p);
    EXPECT_EQ(f.metadata(), meta);
    ASSERT_EQ(f.tensors().size(), 1u);
    EXPECT_EQ(f.tensors()[0].name, odd);
    ASSERT_NE(f.find(odd), nullptr);
}

TEST(Safetensors, ScalarAndEmptyTensors) {
    const std::string p = tmp_path("scalar.safetensors");
    const float s = 42.f;
    trt::write_safetensors(p, {{"empty", DType::F32, {0, 3}, nullptr},
                               {"scalar", DType::F32, {}, &s},
                               {"empty2", DType::BF16, {5, 0}, nullptr}});
    const SafetensorsFile f = SafetensorsFile::open(p);
    const trt::TensorInfo* sc = f.find("scalar");
    ASSERT_NE(sc, nullptr);
    EXPECT_TRUE(sc->shape.empty());
    EXPECT_EQ(sc->numel(), 1);
    float x = 0;
    f.read_f32(*sc, &x);
    EXPECT_EQ(x, 42.f);
    EXPECT_EQ(f.find("empty")->numel(), 0);
    EXPECT_EQ(f.find("empty")->begin, f.find("empty")->end);
}

TEST(Safetensors, EmptyFileWithNoTensors) {
    const SafetensorsFile f = SafetensorsFile::from_bytes(image("{}", 0), "x");
    EXPECT_TRUE(f.tensors().empty());
    const SafetensorsFile g = SafetensorsFile::from_bytes(image(R"({"__metadata__":{}}      )", 0), "x");
    EXPECT_TRUE(g.tensors().empty());
}

TEST(Safetensors, HandWrittenF16BF16F64ConvertToF32) {
    // A 1-byte U8 tensor first makes every later tensor start at an odd (unaligned) address.
    const std::vector<uint16_t> f16 = {0x3C00, 0xC000, 0x0001, 0x03FF, 0x0400, 0x7BFF,
                                       0x7C00, 0xFC00, 0x7E00, 0x8000, 0x8001, 0x3555};
    const std::vector<uint16_t> bf16 = {0x3F80, 0xC0A0, 0x0001, 0x7F80, 0x7FC0};
    const std::vector<double> f64 = {0.1, -1e300, 1e-50, 3.5};
    std::vector<uint8_t> data = {0xAB};
    for (uint16_t h : f16) append_le(data, h);
    for (uint16_t h : bf16) append_le(data, h);
    for (double d : f64) append_le(data, d);
    const size_t o1 = 1, o2 = o1 + 2 * f16.size(), o3 = o2 + 2 * bf16.size(), o4 = o3 + 8 * f64.size();
    const std::string h =
        "{\"u\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
        "\"h\":{\"dtype\":\"F16\",\"shape\":[3,4],\"data_offsets\":[" + std::to_string(o1) + "," +
        std::to_string(o2) + "]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[5],\"data_offsets\":[" + std::to_string(o2) + "," +
        std::to_string(o3) + "]},"
        "\"d\":{\"dtype\":\"F64\",\"shape\":[2,1,2],\"data_offsets\":[" + std::to_string(o3) + "," +
        std::to_string(o4) + "]}}   ";
    const SafetensorsFile f = SafetensorsFile::from_bytes(image(h, data), "hand.safetensors");

    std::vector<float> out(f16.size());
    f.read_f32(*f.find("h"), out.data());
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], -2.0f);
    EXPECT_EQ(out[2], std::ldexp(1.0f, -24));          // smallest subnormal
    EXPECT_EQ(out[3], 1023.0f * std::ldexp(1.0f, -24)); // largest subnormal
    EXPECT_EQ(out[4], std::ldexp(1.0f, -14));          // smallest normal
    EXPECT_EQ(out[5], 65504.0f);                       // largest finite
    EXPECT_EQ(out[6], std::numeric_limits<float>::infinity());
    EXPECT_EQ(out[7], -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(out[8]));
    EXPECT_EQ(bits(out[9]), 0x80000000u);               // -0 keeps its sign
    EXPECT_EQ(out[10], -std::ldexp(1.0f, -24));
    EXPECT_EQ(out[11], 0.333251953125f);

    std::vector<float> ob(bf16.size());
    f.read_f32(*f.find("b"), ob.data());
    EXPECT_EQ(ob[0], 1.0f);
    EXPECT_EQ(ob[1], -5.0f);
    EXPECT_EQ(bits(ob[2]), 0x00010000u);
    EXPECT_EQ(ob[3], std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(ob[4]));

    std::vector<float> od(f64.size());
    f.read_f32(*f.find("d"), od.data());
    EXPECT_EQ(od[0], 0.1f);
    EXPECT_EQ(od[1], -std::numeric_limits<float>::infinity());
    EXPECT_EQ(od[2], 0.0f);
    EXPECT_EQ(od[3], 3.5f);
}

TEST(Safetensors, ReadF32RejectsIntegerDtypes) {
    const SafetensorsFile f = SafetensorsFile::from_bytes(image(one("I32", "[2]", "[0,8]"), 8), "ints.st");
    EXPECT_EQ(f.tensors()[0].dtype, DType::I32);
    float out[2];
    try {
        f.read_f32(f.tensors()[0], out);
        FAIL() << "read_f32 accepted I32";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), Status::Format);
        EXPECT_NE(std::string(e.what()).find("dtype I32, expected a float tensor"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("ints.st"), std::string::npos);
    }
}

TEST(Safetensors, AllDtypesParse) {
    const std::pair<const char*, int> dts[] = {{"F32", 4}, {"BF16", 2}, {"F16", 2}, {"F64", 8}, {"I64", 8},
                                               {"I32", 4}, {"I16", 2},  {"I8", 1},  {"U8", 1},  {"BOOL", 1}};
    for (const auto& d : dts) {
        const int n = 3 * d.second;
        const auto f = SafetensorsFile::from_bytes(
            image(one(d.first, "[3]", "[0," + std::to_string(n) + "]"), static_cast<size_t>(n)), "x");
        EXPECT_STREQ(trt::dtype_name(f.tensors()[0].dtype), d.first);
        EXPECT_EQ(trt::dtype_size(f.tensors()[0].dtype), static_cast<size_t>(d.second));
    }
}

// ------------------------------------------------------------------------- I/O errors, writer

TEST(Safetensors, OpenMissingFileIsIoError) {
    try {
        SafetensorsFile::open(tmp_path("does_not_exist.safetensors"));
        FAIL();
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), Status::Io);
        EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
    }
}

TEST(Safetensors, OpenDirectoryIsIoError) {
    try {
        SafetensorsFile::open(TRAINRT_TEST_TMP);
        FAIL();
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), Status::Io);
    }
}

TEST(Safetensors, OpenShortFileIsFormatError) {
    const std::string p = tmp_path("short.safetensors");
    std::ofstream(p, std::ios::binary) << "abc";
    try {
        SafetensorsFile::open(p);
        FAIL();
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), Status::Format);
        EXPECT_NE(std::string(e.what()).find("too short"), std::string::npos) << e.what();
    }
}

TEST(Safetensors, WriteIntoMissingDirectoryIsIoErrorAndLeavesNoTmp) {
    const std::string p = tmp_path("no_such_dir/x.safetensors");
    const float v = 1;
    try {
        trt::write_safetensors(p, {{"a", DType::F32, {1}, &v}});
        FAIL();
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), Status::Io);
        EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(file_exists(p + ".tmp"));
}

TEST(Safetensors, WriteReplacesExistingFileAtomically) {
    const std::string p = tmp_path("replace.safetensors");
    const float v[2] = {1, 2};
    trt::write_safetensors(p, {{"a", DType::F32, {2}, v}});
    trt::write_safetensors(p, {{"b", DType::F32, {1}, v + 1}});
    const SafetensorsFile f = SafetensorsFile::open(p);
    ASSERT_EQ(f.tensors().size(), 1u);
    EXPECT_EQ(f.tensors()[0].name, "b");
    EXPECT_FALSE(file_exists(p + ".tmp"));
}

void expect_invalid_write(const std::vector<TensorToWrite>& ts, const std::string& frag) {
    const std::string p = tmp_path("invalid.safetensors");
    ::unlink(p.c_str());
    try {
        trt::write_safetensors(p, ts);
        FAIL() << "expected InvalidArgument: " << frag;
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), Status::InvalidArgument) << e.what();
        EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
    }
    EXPECT_FALSE(file_exists(p));
    EXPECT_FALSE(file_exists(p + ".tmp"));
}

TEST(Safetensors, WriterValidatesInputs) {
    const float v[4] = {};
    expect_invalid_write({{"a", DType::F32, {1}, v}, {"a", DType::F32, {1}, v}}, "duplicate tensor name 'a'");
    expect_invalid_write({{"a", DType::F32, {2, -1}, v}}, "negative dimension");
    expect_invalid_write({{"a", DType::F32, {3}, nullptr}}, "has no data");
    expect_invalid_write({{"a", DType::F16, {1}, v}}, "cannot write dtype F16");
    expect_invalid_write({{"", DType::F32, {1}, v}}, "empty name");
    expect_invalid_write({{"__metadata__", DType::F32, {1}, v}}, "reserved");
    expect_invalid_write({{"bad\xFF", DType::F32, {1}, v}}, "UTF-8");
    expect_invalid_write({{"a", DType::F32, {int64_t{1} << 62, int64_t{1} << 62}, v}}, "too large");
}

// ------------------------------------------------------------------------- malformed files

TEST(SafetensorsMalformed, FileShorterThan8Bytes) {
    expect_format({}, "file is 0 bytes, too short");
    expect_format({1, 2, 3, 4, 5}, "file is 5 bytes, too short");
}

TEST(SafetensorsMalformed, HeaderLengthZero) {
    std::vector<uint8_t> v;
    put_u64(v, 0);
    expect_format(v, "header length 0 is too small");
}

TEST(SafetensorsMalformed, HeaderLengthOverLimit) {
    std::vector<uint8_t> v;
    put_u64(v, 100'000'001);
    v.resize(64, ' ');
    expect_format(v, "header length 100000001 exceeds the limit");
    std::vector<uint8_t> w;
    put_u64(w, ~uint64_t{0});
    expect_format(w, "exceeds the limit");
}

TEST(SafetensorsMalformed, HeaderLengthBeyondFile) {
    std::vector<uint8_t> v;
    put_u64(v, 100);
    v.resize(8 + 50, ' ');
    expect_format(v, "header length 100 extends beyond the end of the file (50 bytes");
}

TEST(SafetensorsMalformed, JsonTruncated) {
    expect_format(image(R"({"t":{"dtype":"F32")", 0), "invalid JSON");
    expect_format(image(R"({"t":{"dtype":"F32")", 0), "unexpected end of input");
}

TEST(SafetensorsMalformed, JsonTrailingGarbage) {
    expect_format(image("{}  x", 0), "trailing characters");
    expect_format(image(std::string("{}\0\0", 4), 0), "trailing characters");  // NUL padding is not JSON whitespace
}

TEST(SafetensorsMalformed, JsonBadEscape) {
    expect_format(image(R"({"a\qb":{}})", 0), "invalid escape");
}

TEST(SafetensorsMalformed, JsonUnterminatedString) {
    expect_format(image(R"({"abc)", 0), "unterminated string");
}

TEST(SafetensorsMalformed, JsonDeepNesting) {
    expect_format(image(std::string(10000, '['), 0), "nesting too deep");
    expect_format(image(R"({"t":)" + std::string(10000, '['), 0), "nesting too deep");
}

TEST(SafetensorsMalformed, JsonInvalidUtf8) {
    expect_format(image("{\"a\xFF\":{}}", 0), "invalid UTF-8");
}

TEST(SafetensorsMalformed, HeaderNotAnObject) {
    expect_format(image("[1, 2]", 0), "header is a JSON array, expected an object");
    expect_format(image(R"("str")", 0), "header is a JSON string, expected an object");
}

TEST(SafetensorsMalformed, EntryNotAnObject) {
    expect_format(image(R"({"t": 5})", 0), "tensor 't': entry is a JSON integer, expected an object");
    expect_format(image(R"({"t": [0, 4]})", 4), "entry is a JSON array");
}

TEST(SafetensorsMalformed, MissingDtype) {
    expect_format(image(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", 4), "tensor 't': missing \"dtype\"");
}

TEST(SafetensorsMalformed, MissingShape) {
    expect_format(image(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", 4), "tensor 't': missing \"shape\"");
}

TEST(SafetensorsMalformed, MissingDataOffsets) {
    expect_format(image(R"({"t":{"dtype":"F32","shape":[1]}})", 4), "tensor 't': missing \"data_offsets\"");
}

TEST(SafetensorsMalformed, UnknownOrDuplicateEntryKey) {
    expect_format(image(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4),
                  "unknown key 'x'");
    expect_format(image(R"({"t":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4),
                  "duplicate key \"dtype\" at byte 20 ($.t.dtype)");
}

TEST(SafetensorsMalformed, UnknownDtype) {
    expect_format(image(one("F8_E4M3", "[1]", "[0,1]"), 1), "unknown dtype 'F8_E4M3'");
    expect_format(image(one("f32", "[1]", "[0,4]"), 4), "unknown dtype 'f32'");
    expect_format(image(R"({"t":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4), "dtype is a JSON integer");
}

TEST(SafetensorsMalformed, NegativeDim) {
    expect_format(image(one("F32", "[2,-3]", "[0,4]"), 4), "shape[1] = -3 is negative");
}

TEST(SafetensorsMalformed, NonIntegerDim) {
    expect_format(image(one("F32", "[1.5]", "[0,4]"), 4), "shape[0] is a JSON non-integer number");
    expect_format(image(one("F32", "[1.0]", "[0,4]"), 4), "non-integer number");
    expect_format(image(one("F32", R"(["2"])", "[0,8]"), 8), "shape[0] is a JSON string");
    expect_format(image(one("F32", "[null]", "[0,8]"), 8), "shape[0] is a JSON null");
    expect_format(image(one("F32", "7", "[0,28]"), 28), "shape is a JSON integer, expected an array");
}

TEST(SafetensorsMalformed, ShapeOverflow) {
    // 2^62 * 2^62 elements: the product overflows 64 bits.
    expect_format(image(one("F32", "[4611686018427387904,4611686018427387904]", "[0,4]"), 4),
                  "has more than 2^63-1 elements");
    // 2^62 elements fits, but 2^62 * 8 bytes does not.
    expect_format(image(one("I64", "[4611686018427387904]", "[0,8]"), 8), "byte size overflows 64 bits");
    // A dim above INT64_MAX.
    expect_format(image(one("U8", "[18446744073709551615]", "[0,1]"), 1), "is too large");
    // A dim above UINT64_MAX is a JSON error.
    expect_format(image(one("U8", "[99999999999999999999]", "[0,1]"), 1), "out of 64-bit range");
}

TEST(SafetensorsMalformed, OffsetsReversed) {
    expect_format(image(one("U8", "[0]", "[4,0]"), 4), "data_offsets [4, 0) are reversed");
}

TEST(SafetensorsMalformed, OffsetsMalformed) {
    expect_format(image(one("U8", "[4]", "[0]"), 4), "array of two integers");
    expect_format(image(one("U8", "[4]", "[0,4,4]"), 4), "array of two integers");
    expect_format(image(one("U8", "[4]", "[-1,3]"), 4), "non-negative integers");
    expect_format(image(one("U8", "[4]", "[0,4.0]"), 4), "non-negative integers");
}

TEST(SafetensorsMalformed, EndBeyondBuffer) {
    expect_format(image(one("U8", "[8]", "[0,8]"), 4), "data_offsets [0, 8) end beyond the data buffer of 4 bytes");
    expect_format(image(one("U8", "[1]", "[18446744073709551614,18446744073709551615]"), 4),
                  "end beyond the data buffer");
}

TEST(SafetensorsMalformed, SizeMismatch) {
    // The exact message shape users see.
    const std::string h = R"({"h.0.attn.c_attn.weight":{"dtype":"F32","shape":[5,6],"data_offsets":[0,100]}})";
    try {
        SafetensorsFile::from_bytes(image(h, 100), "model.safetensors");
        FAIL();
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), Status::Format);
        EXPECT_STREQ(e.what(),
                     "model.safetensors: tensor 'h.0.attn.c_attn.weight': data_offsets [0, 100) hold 100 "
                     "bytes but F32 [5, 6] needs 120");
    }
    expect_format(image(one("BF16", "[]", "[0,4]"), 4), "hold 4 bytes but BF16 [] needs 2");
}

TEST(SafetensorsMalformed, Overlap) {
    const std::string h = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})";
    expect_format(image(h, 6), "tensor 'b' data_offsets [2, 6) overlap tensor 'a' [0, 4)");
    // Two tensors on the very same bytes.
    const std::string h2 = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})";
    expect_format(image(h2, 4), "overlap");
    // An empty tensor placed inside another one.
    const std::string h3 = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})";
    expect_format(image(h3, 4), "overlap");
}

TEST(SafetensorsMalformed, Gap) {
    const std::string h = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                          R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})";
    expect_format(image(h, 6), "gap in the data buffer: bytes [2, 4) belong to no tensor");
    expect_format(image(one("U8", "[2]", "[2,4]"), 4), "bytes [0, 2)");
}

TEST(SafetensorsMalformed, TrailingUnusedBytes) {
    expect_format(image(one("U8", "[2]", "[0,2]"), 5), "trailing unused bytes [2, 5)");
    expect_format(image("{}", 1), "trailing unused bytes [0, 1)");
}

TEST(SafetensorsMalformed, DuplicateName) {
    const std::string h = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                          R"("a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})";
    expect_format(image(h, 4), "duplicate key \"a\" at byte 53 ($.a)");
}

TEST(SafetensorsMalformed, MetadataNonStringValue) {
    expect_format(image(R"({"__metadata__":{"format":"pt","n":3}})", 0),
                  "\"__metadata__\" key 'n' has a non-string value (integer)");
    expect_format(image(R"({"__metadata__":{"x":{"y":"z"}}})", 0), "non-string value (object)");
}

TEST(SafetensorsMalformed, MetadataNotAnObjectOrDuplicated) {
    expect_format(image(R"({"__metadata__":["a"]})", 0), "\"__metadata__\" is a JSON array");
    expect_format(image(R"({"__metadata__":{},"__metadata__":{}})", 0),
                  "duplicate key \"__metadata__\" at byte 19 ($.__metadata__)");
    expect_format(image(R"({"__metadata__":{"k":"a","k":"b"}})", 0),
                  "duplicate key \"k\" at byte 25 ($.__metadata__.k)");
}

// ------------------------------------------------------------------------- robustness

TEST(SafetensorsFuzz, RandomCorruptionNeverCrashes) {
    // A valid image with several dtypes, metadata and escapes, then 2,000 corrupted variants.
    const std::string p = tmp_path("fuzz_base.safetensors");
    std::vector<float> v(40);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) - 7.5f;
    trt::write_safetensors(p,
                           {{"wte.weight", DType::F32, {4, 5}, v.data()},
                            {"h.0.ln_1.bias", DType::BF16, {10}, v.data() + 20},
                            {"s\\c\"alar", DType::F32, {}, v.data() + 30},
                            {"e", DType::BF16, {0}, nullptr}},
                           {{"format", "pt"}, {"k\u00e9y", "v\n"}});
    const std::vector<uint8_t> base = read_file(p);
    ASSERT_NO_THROW(SafetensorsFile::from_bytes(base, "base"));

    uint64_t header_len = 0;
    std::memcpy(&header_len, base.data(), 8);
    std::mt19937_64 rng(0x5AFE7E25);
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 2000; ++iter) {
        std::vector<uint8_t> img = base;
        const int mode = static_cast<int>(rng() % 4);
        if (mode == 0) {  // truncate
            img.resize(rng() % img.size());
        } else {          // flip 1..4 bytes; mode 2 stays in the header, mode 3 hits the length
            const int flips = 1 + static_cast<int>(rng() % 4);
            for (int k = 0; k < flips; ++k) {
                size_t pos;
                if (mode == 3) pos = rng() % 8;
                else if (mode == 2) pos = 8 + rng() % header_len;
                else pos = rng() % img.size();
                img[pos] = (rng() % 2) ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(img[pos] ^ (1u << (rng() % 8)));
            }
        }
        try {
            const SafetensorsFile f = SafetensorsFile::from_bytes(img, "fuzz");
            // Whatever was accepted must be safe to read completely.
            for (const trt::TensorInfo& t : f.tensors()) {
                const uint8_t* d = f.data(t);
                volatile uint8_t sink = 0;
                for (uint64_t i = 0; i < t.end - t.begin; ++i) sink = static_cast<uint8_t>(sink ^ d[i]);
                if (t.dtype == DType::F32 || t.dtype == DType::BF16 || t.dtype == DType::F16 ||
                    t.dtype == DType::F64) {
                    std::vector<float> out(static_cast<size_t>(t.numel()));
                    f.read_f32(t, out.data());
                }
            }
            ++accepted;
        } catch (const trt::Error& e) {
            EXPECT_EQ(e.status(), Status::Format) << e.what();
            ++rejected;
        } catch (const std::exception& e) {
            FAIL() << "iteration " << iter << ": non-trt exception: " << e.what();
        } catch (...) {
            FAIL() << "iteration " << iter << ": unknown exception";
        }
    }
    EXPECT_EQ(accepted + rejected, 2000);
    EXPECT_GT(rejected, 500);  // most corruptions must be caught
}

}  // namespace
