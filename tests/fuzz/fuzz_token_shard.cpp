// fuzz_token_shard: llm.c token shards (src/data/token_dataset.cpp) and the samplers that read
// them (src/data/sampler.cpp): data.train / data.val of every run.
//
// Input: shard files separated by the marker "TRTSHARD" (at most 4), then a fixed 32-byte
// trailer of parameters (absent in inputs shorter than that: defaults):
//   u32 vocab_size | i8 B | u8 flags | u16 T | u64 seed | i32 step | i32 cursor pos |
//   u16 micro_step | u8 cursor shard | u8 unused | i32 copy offset
// The shards are written as shard_NN.bin in the scratch dir and opened as one path, or as the
// glob shard_*.bin (several shards, or flags bit 0). After an accepted open: copy_tokens_u16
// of every shard, copy_tokens at the given offset, three sequential batches from the given
// cursor and one random batch — every id handed out must be < vocab_size, as open() checked.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/sampler.h"
#include "data/token_dataset.h"
#include "fuzz_util.h"

namespace {

struct Trailer {
    uint32_t vocab = 256;
    int8_t B = 2;
    uint8_t flags = 0;
    uint16_t T = 4;
    uint64_t seed = 1;
    int32_t step = 1;
    int32_t cursor_pos = 0;
    uint16_t micro = 0;
    uint8_t cursor_shard = 0;
    uint8_t unused = 0;
    int32_t copy_offset = 0;
};
static_assert(sizeof(Trailer) == 32, "the trailer is 32 packed bytes");

constexpr int64_t kMaxBatchInts = int64_t{1} << 18;  // output buffers stay small

void check_ids(const std::vector<int32_t>& out, int64_t vocab, const char* who) {
    for (int32_t id : out)
        if (id < 0 || id >= vocab) fuzz::die(std::string(who) + " handed out an id >= vocab_size");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static int prev_shards = 0;
    const std::string& dir = fuzz::scratch_dir("fuzz_token_shard");

    Trailer p;
    if (size >= sizeof(Trailer)) {
        std::memcpy(&p, data + size - sizeof(Trailer), sizeof(Trailer));
        size -= sizeof(Trailer);
    }
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    const std::vector<std::string_view> shards = fuzz::split(body, "TRTSHARD", 4);
    const auto shard_path = [&](int i) {
        return dir + "/shard_0" + std::to_string(i) + ".bin";
    };
    for (size_t i = 0; i < shards.size(); ++i) fuzz::write_file(shard_path(static_cast<int>(i)), shards[i]);
    for (int i = static_cast<int>(shards.size()); i < prev_shards; ++i) ::unlink(shard_path(i).c_str());
    prev_shards = static_cast<int>(shards.size());
    const std::string pattern =
        shards.size() > 1 || (p.flags & 1) ? dir + "/shard_*.bin" : shard_path(0);

    const int64_t vocab = p.vocab;
    trt::TokenDataset ds;
    try {
        ds = trt::TokenDataset::open(pattern, vocab);
    } catch (const trt::Error& e) {
        fuzz::refused("TokenDataset::open", e);
        return 0;
    }
    if (ds.num_shards() != shards.size()) fuzz::die("shard count differs from the files written");

    std::vector<uint16_t> u16;
    for (size_t s = 0; s < ds.num_shards(); ++s) {
        (void)ds.shard_path(s);
        u16.assign(static_cast<size_t>(ds.shard_tokens(s)), 0);
        try {
            ds.copy_tokens_u16(s, 0, ds.shard_tokens(s), u16.data());
        } catch (const trt::Error& e) {
            if (vocab <= 65536) fuzz::die(std::string("copy_tokens_u16 refused ids < 65536: ") + e.what());
        }
    }

    const int64_t B = p.B, T = p.T;
    std::vector<int32_t> row(static_cast<size_t>(T) + 1);
    try {
        ds.copy_tokens(p.cursor_shard, p.copy_offset, T + 1, row.data());
        check_ids(row, vocab, "copy_tokens");
    } catch (const trt::Error& e) {
        fuzz::refused("copy_tokens", e);
    }
    // The samplers write B*(T+1) ids; sizes they would refuse get a one-element buffer.
    const bool sane = B > 0 && T > 0 && B * (T + 1) <= kMaxBatchInts;
    std::vector<int32_t> out(sane ? static_cast<size_t>(B * (T + 1)) : 1);
    if (!sane && B > 0 && T > 0) return 0;  // valid but too big for a fuzz iteration
    trt::SequentialCursor cur{p.cursor_shard, p.cursor_pos};
    try {
        for (int k = 0; k < 3; ++k) {
            trt::sample_sequential(ds, cur, B, T, out.data());
            check_ids(out, vocab, "sample_sequential");
        }
    } catch (const trt::Error& e) {
        fuzz::refused("sample_sequential", e);
    }
    (void)trt::sequential_fits(ds, B, T);
    try {
        trt::sample_random(ds, p.seed, p.step, p.micro, B, T, out.data());
        check_ids(out, vocab, "sample_random");
    } catch (const trt::Error& e) {
        fuzz::refused("sample_random", e);
    }
    return 0;
}
