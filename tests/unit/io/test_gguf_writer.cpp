// The GGUF writer (io/gguf_writer.h) and ggml's block encoders (io/ggml_blocks.h), read back by
// the test's own reader (gguf_test_reader.h): metadata of every type, tensors in every type
// with ne reversed and 32-byte offsets, Q8_0 against its definition, refusals, atomicity.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/error.h"
#include "core/fp16.h"
#include "gguf_test_reader.h"
#include "io/gguf_writer.h"

namespace fs = std::filesystem;
using trt::Error;
using trt::Status;
using trt::gguf::TensorType;
using trt::gguf::Writer;

namespace {

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "gguf_writer" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// Q8_0 by its definition: per block of 32, d = max|x| / 127 (stored as fp16), q = x / d rounded
// half away from zero; the value read back is fp16(d) · q.
std::vector<float> q8_0_reference(const std::vector<float>& x) {
    std::vector<float> out(x.size());
    for (size_t b = 0; b < x.size() / 32; b++) {
        double amax = 0;
        for (size_t i = 0; i < 32; i++) amax = std::max(amax, std::fabs(double{x[32 * b + i]}));
        const float d = static_cast<float>(amax) / 127.0f;
        const float dq = trt::round_to_fp16(d);
        for (size_t i = 0; i < 32; i++) {
            const float q = d == 0.0f ? 0.0f : std::round(x[32 * b + i] * (1.0f / d));
            out[32 * b + i] = dq * q;
        }
    }
    return out;
}

template <typename F>
Status status_of(F f) {
    try {
        f();
    } catch (const Error& e) {
        return e.status();
    }
    return Status::Ok;
}

}  // namespace

TEST(GgufWriter, MetadataOfEveryTypeReadsBackInOrder) {
    const std::string path = test_dir() + "/m.gguf";
    Writer w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 16);
    w.add_i32("tokenizer.ggml.bos_token_id", -1);
    w.add_u64("big", uint64_t{1} << 40);
    w.add_f32("llama.rope.freq_base", 500000.0f);
    w.add_bool("tokenizer.ggml.add_bos_token", true);
    w.add_string("utf8", "Ġhello ✓ {{ messages }}");
    w.add_string("empty", "");
    w.add_strings("tokenizer.ggml.tokens", {"a", "", "Ġthe", "<|eot_id|>"});
    w.add_i32s("tokenizer.ggml.token_type", {1, 1, 1, 3});
    w.add_f32s("tokenizer.ggml.scores", {0.0f, -1.5f});
    w.write(path);

    const gguf_test::File f = gguf_test::read_file(path);
    EXPECT_EQ(f.version, 3u);
    ASSERT_EQ(f.keys.size(), 11u);
    EXPECT_EQ(f.keys[0], "general.architecture");
    EXPECT_EQ(f.keys[10], "tokenizer.ggml.scores");
    auto kv = f.kv;
    EXPECT_EQ(kv["general.architecture"].type, 8u);
    EXPECT_EQ(kv["general.architecture"].s, "llama");
    EXPECT_EQ(kv["llama.block_count"].type, 4u);
    EXPECT_EQ(kv["llama.block_count"].u, 16u);
    EXPECT_EQ(kv["tokenizer.ggml.bos_token_id"].type, 5u);
    EXPECT_EQ(kv["tokenizer.ggml.bos_token_id"].i, -1);
    EXPECT_EQ(kv["big"].type, 10u);
    EXPECT_EQ(kv["big"].u, uint64_t{1} << 40);
    EXPECT_EQ(kv["llama.rope.freq_base"].type, 6u);
    EXPECT_EQ(kv["llama.rope.freq_base"].f, 500000.0);
    EXPECT_EQ(kv["tokenizer.ggml.add_bos_token"].type, 7u);
    EXPECT_EQ(kv["tokenizer.ggml.add_bos_token"].u, 1u);
    EXPECT_EQ(kv["utf8"].s, "Ġhello ✓ {{ messages }}");
    EXPECT_EQ(kv["empty"].s, "");
    const gguf_test::Value& tokens = kv["tokenizer.ggml.tokens"];
    EXPECT_EQ(tokens.type, 9u);
    EXPECT_EQ(tokens.item_type, 8u);
    ASSERT_EQ(tokens.items.size(), 4u);
    EXPECT_EQ(tokens.items[1].s, "");
    EXPECT_EQ(tokens.items[3].s, "<|eot_id|>");
    EXPECT_EQ(kv["tokenizer.ggml.token_type"].item_type, 5u);
    EXPECT_EQ(kv["tokenizer.ggml.token_type"].items[3].i, 3);
    EXPECT_EQ(kv["tokenizer.ggml.scores"].item_type, 6u);
    EXPECT_EQ(kv["tokenizer.ggml.scores"].items[1].f, -1.5);
    EXPECT_TRUE(f.tensors.empty());
    EXPECT_EQ(f.data_start % 32, 0u);
    EXPECT_EQ(f.bytes.size(), f.data_start);  // no tensors: nothing after the padding
}

// ne is the PyTorch shape reversed; every tensor's offset is a multiple of 32 after the one
// before it; F32 is exact, F16/BF16 round to nearest even, Q8_0 is its definition; the file
// ends with the last tensor's padding.
TEST(GgufWriter, TensorsOfEveryTypeReadBack) {
    const std::string path = test_dir() + "/t.gguf";
    const std::vector<float> a = random_values(3 * 5, 1), b = random_values(2 * 64, 2, 3.0f),
                             c = random_values(7, 3, 1e-3f), d = random_values(4 * 96, 4, 50.0f);
    Writer w;
    w.add_string("general.architecture", "gpt2");
    w.add_tensor("a.weight", {3, 5}, TensorType::F32, a.data());
    w.add_tensor("b.weight", {2, 64}, TensorType::F16, b.data());
    w.add_tensor("c.bias", {7}, TensorType::BF16, c.data());
    w.add_tensor("blk.0.d.weight", {2, 2, 96}, TensorType::Q8_0, d.data());
    EXPECT_EQ(w.tensor_count(), 4u);
    w.write(path);

    const gguf_test::File f = gguf_test::read_file(path);
    ASSERT_EQ(f.tensors.size(), 4u);
    EXPECT_EQ(f.tensor("a.weight").ne, (std::vector<uint64_t>{5, 3}));
    EXPECT_EQ(f.tensor("blk.0.d.weight").ne, (std::vector<uint64_t>{96, 2, 2}));
    EXPECT_EQ(f.tensor("a.weight").type, 0u);
    EXPECT_EQ(f.tensor("b.weight").type, 1u);
    EXPECT_EQ(f.tensor("c.bias").type, 30u);
    EXPECT_EQ(f.tensor("blk.0.d.weight").type, 8u);
    uint64_t expect_offset = 0;
    const uint64_t sizes[4] = {15 * 4, 128 * 2, 7 * 2, 384 / 32 * 34};
    for (size_t k = 0; k < 4; k++) {
        EXPECT_EQ(f.tensors[k].offset, expect_offset) << f.tensors[k].name;
        expect_offset += (sizes[k] + 31) / 32 * 32;
    }
    EXPECT_EQ(f.bytes.size(), f.data_start + expect_offset);

    EXPECT_EQ(f.values("a.weight"), a);
    const std::vector<float> bb = f.values("b.weight");
    for (size_t k = 0; k < b.size(); k++) ASSERT_EQ(bb[k], trt::round_to_fp16(b[k])) << k;
    const std::vector<float> cc = f.values("c.bias");
    for (size_t k = 0; k < c.size(); k++) ASSERT_EQ(cc[k], trt::round_to_bf16(c[k])) << k;
    const std::vector<float> dd = f.values("blk.0.d.weight"), ref = q8_0_reference(d);
    for (size_t k = 0; k < d.size(); k++) {
        ASSERT_EQ(dd[k], ref[k]) << k;
        // Within half a step of the value, plus what storing the scale as fp16 moves a q of
        // up to 127 steps.
        const size_t blk = k / 32;
        float amax = 0;
        for (size_t i = 0; i < 32; i++) amax = std::max(amax, std::fabs(d[32 * blk + i]));
        const float step = amax / 127.0f, stored = trt::round_to_fp16(step);
        ASSERT_LE(std::fabs(dd[k] - d[k]), 0.5f * step + 127.0f * std::fabs(stored - step) + 1e-5f)
            << k;
    }
}

// Q8_0's corners: a block of zeros (d = 0, q = 0), the largest magnitude negative (q = -127),
// ties rounded away from zero (d = 1: 2.5 -> 3, -2.5 -> -3).
TEST(GgufWriter, Q8BlockCorners) {
    std::vector<float> x(64, 0.0f);
    x[32] = 127.0f;  // second block: d = 1 exactly
    x[33] = 2.5f;
    x[34] = -2.5f;
    x[35] = -127.0f;
    x[36] = 0.49f;
    uint8_t out[68];
    trt::gguf::encode(TensorType::Q8_0, x.data(), 64, out);
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(out[1], 0);  // d = 0
    for (int i = 0; i < 32; i++) ASSERT_EQ(out[2 + i], 0) << i;
    EXPECT_EQ(out[34] | (out[35] << 8), trt::float_to_fp16(1.0f));
    EXPECT_EQ(static_cast<int8_t>(out[36]), 127);
    EXPECT_EQ(static_cast<int8_t>(out[37]), 3);
    EXPECT_EQ(static_cast<int8_t>(out[38]), -3);
    EXPECT_EQ(static_cast<int8_t>(out[39]), -127);
    EXPECT_EQ(static_cast<int8_t>(out[40]), 0);
    EXPECT_EQ(trt::gguf::encoded_bytes(TensorType::Q8_0, 64), 68u);
}

// A tensor longer than the writer's encoding slice (4 Mi elements) is written whole, in order.
TEST(GgufWriter, ATensorLargerThanASliceIsWholeAndInOrder) {
    const std::string path = test_dir() + "/big.gguf";
    const size_t rows = (size_t{1} << 17) + 3, cols = 32;
    std::vector<float> v(rows * cols);
    for (size_t k = 0; k < v.size(); k++) v[k] = static_cast<float>(k % 1000) - 500.0f;
    Writer w;
    w.add_tensor("big", {static_cast<int64_t>(rows), static_cast<int64_t>(cols)}, TensorType::Q8_0,
                 v.data());
    w.write(path);
    const gguf_test::File f = gguf_test::read_file(path);
    EXPECT_EQ(f.values("big"), q8_0_reference(v));
}

TEST(GgufWriter, RefusesWhatLlamaCppCannotRead) {
    Writer w;
    const std::vector<float> x(64 * 40, 0.5f);
    w.add_u32("k", 1);
    EXPECT_EQ(status_of([&] { w.add_string("k", "again"); }), Status::InvalidArgument);
    EXPECT_EQ(status_of([&] { w.add_u32("", 1); }), Status::InvalidArgument);
    EXPECT_EQ(status_of([&] { w.add_strings("none", {}); }), Status::InvalidArgument);
    EXPECT_EQ(status_of([&] { w.add_i32s("none", {}); }), Status::InvalidArgument);
    w.add_tensor("t", {40, 64}, TensorType::Q8_0, x.data());
    EXPECT_EQ(status_of([&] {
                  w.add_tensor("t", {40, 64}, TensorType::F32, x.data());
              }),
              Status::InvalidArgument);
    EXPECT_EQ(
        status_of([&] { w.add_tensor(std::string(64, 'n'), {4}, TensorType::F32, x.data()); }),
        Status::InvalidArgument);
    w.add_tensor(std::string(63, 'n'), {4}, TensorType::F32, x.data());  // the longest name
    EXPECT_EQ(status_of([&] {
                  w.add_tensor("five", {1, 1, 1, 1, 4}, TensorType::F32, x.data());
              }),
              Status::InvalidArgument);
    EXPECT_EQ(status_of([&] {
                  w.add_tensor("zero", {0, 4}, TensorType::F32, x.data());
              }),
              Status::InvalidArgument);
    try {
        w.add_tensor("rows40", {64, 40}, TensorType::Q8_0, x.data());
        FAIL() << "a row of 40 taken as Q8_0";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::InvalidArgument);
        const std::string m = e.what();
        EXPECT_NE(m.find("rows40"), std::string::npos) << m;
        EXPECT_NE(m.find("rows of 40"), std::string::npos) << m;
        EXPECT_NE(m.find("F16"), std::string::npos) << m;
    }
    EXPECT_EQ(w.tensor_count(), 2u);  // the refused ones were not added
    EXPECT_EQ(w.kv_count(), 1u);
}

// A failed write leaves nothing; a write over an existing file replaces it whole, and no
// temporary file stays behind.
TEST(GgufWriter, WritesAtomically) {
    const std::string dir = test_dir();
    const std::vector<float> x(32, 1.0f);
    Writer w;
    w.add_tensor("x", {32}, TensorType::F32, x.data());
    EXPECT_EQ(status_of([&] { w.write(dir + "/missing/out.gguf"); }), Status::Io);
    EXPECT_FALSE(fs::exists(dir + "/missing"));
    {
        Writer small;
        small.add_u32("k", 1);
        small.write(dir + "/out.gguf");
    }
    w.write(dir + "/out.gguf");
    EXPECT_EQ(gguf_test::read_file(dir + "/out.gguf").values("x"), x);
    size_t entries = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        (void)e;
        ++entries;
    }
    EXPECT_EQ(entries, 1u);
}
