// The backend samplers on a resident token set (Backend::sample_window / sample_random on a
// DeviceTokens) draw exactly the batches of the host samplers of src/data/sampler.h
// (sample_sequential / sample_random) on the same shards: integer equality, on the CPU
// backend. (tests/gpu/ then holds the CUDA backend's samplers equal to the CPU backend's.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"
#include "data/prepare.h"
#include "data/sampler.h"
#include "data/token_dataset.h"

namespace fs = std::filesystem;

namespace {

constexpr int64_t kVocab = 60000;  // ids >= 32768 occur: uint16 -> int32 without sign games

// Shards s0.bin, s1.bin, ... of the given lengths with random ids; the opened dataset.
trt::TokenDataset make_dataset(const std::vector<int64_t>& lengths, uint32_t seed) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "device_sampler" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::mt19937 gen(seed);
    std::uniform_int_distribution<uint32_t> dist(0, kVocab - 1);
    for (size_t s = 0; s < lengths.size(); ++s) {
        std::vector<uint32_t> toks(static_cast<size_t>(lengths[s]));
        for (auto& t : toks) t = dist(gen);
        trt::write_shard((dir / ("s" + std::to_string(s) + ".bin")).string(), toks.data(),
                         lengths[s], 2);
    }
    return trt::TokenDataset::open((dir / "s*.bin").string(), kVocab);
}

// The dataset resident in backend memory, as the session builds it for data.placement =
// device: shards concatenated as uint16, shard_starts, W for T.
struct Resident {
    trt::Backend& be;
    void* ids = nullptr;
    void* starts = nullptr;
    std::vector<int64_t> host_starts;
    trt::DeviceTokens dt;

    Resident(trt::Backend& backend, const trt::TokenDataset& data, int T) : be(backend) {
        std::vector<uint16_t> all;
        host_starts.push_back(0);
        uint64_t W = 0;
        for (size_t s = 0; s < data.num_shards(); ++s) {
            const int64_t n = data.shard_tokens(s);
            std::vector<int32_t> tmp(static_cast<size_t>(n));
            data.copy_tokens(s, 0, n, tmp.data());
            for (int32_t t : tmp) all.push_back(static_cast<uint16_t>(t));
            host_starts.push_back(static_cast<int64_t>(all.size()));
            W += static_cast<uint64_t>(std::max<int64_t>(0, n - T));
        }
        ids = be.alloc(all.size() * sizeof(uint16_t), "test tokens");
        starts = be.alloc(host_starts.size() * sizeof(int64_t), "test shard starts");
        be.copy_to_device(ids, all.data(), all.size() * sizeof(uint16_t));
        be.copy_to_device(starts, host_starts.data(), host_starts.size() * sizeof(int64_t));
        dt.tokens = static_cast<const uint16_t*>(ids);
        dt.shard_starts = static_cast<const int64_t*>(starts);
        dt.num_shards = static_cast<int32_t>(data.num_shards());
        dt.total = static_cast<int64_t>(all.size());
        dt.random_windows = W;
        dt.windows_T = T;
    }
    ~Resident() {
        be.free(ids);
        be.free(starts);
    }
};

// rows [B, T+1] -> (inputs [B, T], targets [B, T]).
void split(const std::vector<int32_t>& rows, int B, int T, std::vector<int32_t>& in,
           std::vector<int32_t>& tg) {
    in.assign(static_cast<size_t>(B) * T, 0);
    tg.assign(static_cast<size_t>(B) * T, 0);
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            in[b * T + t] = rows[b * (T + 1) + t];
            tg[b * T + t] = rows[b * (T + 1) + t + 1];
        }
}

struct Batch {
    trt::Backend& be;
    int n;
    int32_t* in;
    int32_t* tg;
    Batch(trt::Backend& b, int B, int T) : be(b), n(B * T) {
        in = static_cast<int32_t*>(be.alloc(n * sizeof(int32_t), "test inputs"));
        tg = static_cast<int32_t*>(be.alloc(n * sizeof(int32_t), "test targets"));
    }
    ~Batch() {
        be.free(in);
        be.free(tg);
    }
    std::vector<int32_t> inputs() {
        std::vector<int32_t> v(n);
        be.synchronize();
        be.copy_to_host(v.data(), in, n * sizeof(int32_t));
        return v;
    }
    std::vector<int32_t> targets() {
        std::vector<int32_t> v(n);
        be.synchronize();
        be.copy_to_host(v.data(), tg, n * sizeof(int32_t));
        return v;
    }
};

TEST(DeviceSampler, RandomEqualsHostSampler) {
    const int B = 6, T = 31;
    // s1 holds exactly T tokens (no window), s3 exactly T + 1 (one window).
    const trt::TokenDataset data = make_dataset({900, T, 501, T + 1}, 11);
    auto be = trt::make_cpu_backend(2);
    Resident res(*be, data, T);
    ASSERT_EQ(res.dt.random_windows, uint64_t(900 - T + 501 - T + 1));
    Batch batch(*be, B, T);
    std::vector<int32_t> rows(static_cast<size_t>(B) * (T + 1)), want_in, want_tg;
    int compared = 0;
    for (uint64_t seed : {uint64_t(1), uint64_t(42), uint64_t(0xFEEDFACE12345678ull)})
        for (int64_t step : {int64_t(1), int64_t(2), int64_t(1000), (int64_t(1) << 32) + 7})
            for (int64_t micro : {0, 1, 5}) {
                trt::sample_random(data, seed, step, micro, B, T, rows.data());
                split(rows, B, T, want_in, want_tg);
                trt::StepScalars sc;  // backend memory = host memory on the CPU
                trt::optimizer_step_of(*be).begin_step(&sc, 1e-3f, step);
                be->sample_random(batch.in, batch.tg, res.dt, seed, &sc, micro, B, T);
                ASSERT_EQ(batch.inputs(), want_in)
                    << "seed " << seed << " step " << step << " micro " << micro;
                ASSERT_EQ(batch.targets(), want_tg)
                    << "seed " << seed << " step " << step << " micro " << micro;
                ++compared;
            }
    EXPECT_EQ(compared, 36);
}

TEST(DeviceSampler, WindowEqualsSequentialSamplerAcrossShards) {
    const int B = 3, T = 16;
    // s1 is too short for a B*T+1 window: the cursor skips it; the walk wraps around.
    const trt::TokenDataset data = make_dataset({200, 40, 150}, 12);
    auto be = trt::make_cpu_backend(1);
    Resident res(*be, data, T);
    Batch batch(*be, B, T);
    std::vector<int32_t> rows(static_cast<size_t>(B) * (T + 1)), want_in, want_tg;
    trt::SequentialCursor cursor;
    int64_t shards_seen = 0, last_shard = -1;
    for (int k = 0; k < 20; ++k) {
        trt::sample_sequential(data, cursor, B, T, rows.data());
        split(rows, B, T, want_in, want_tg);
        // The window the host sampler just took started at pos - B*T of its shard.
        const int64_t start = res.host_starts[static_cast<size_t>(cursor.shard)] + cursor.pos -
                              static_cast<int64_t>(B) * T;
        be->sample_window(batch.in, batch.tg, res.dt, &start, B, T);
        ASSERT_EQ(batch.inputs(), want_in) << "batch " << k << " start " << start;
        ASSERT_EQ(batch.targets(), want_tg) << "batch " << k << " start " << start;
        if (cursor.shard != last_shard) ++shards_seen;
        last_shard = cursor.shard;
    }
    EXPECT_GE(shards_seen, 3) << "the walk should visit shard 0, 2 and wrap to 0";
}

}  // namespace

// The window count is a function of T: drawing with another T would pick wrong windows
// silently, so the sampler refuses it.
TEST(DeviceSampler, RandomRefusesAnotherT) {
    const int B = 2, T = 16;
    const trt::TokenDataset data = make_dataset({300, 200}, 5);
    auto be = trt::make_cpu_backend(1);
    Resident res(*be, data, T);
    Batch batch(*be, B, T - 1);
    trt::StepScalars sc;
    sc.step = 1;
    EXPECT_THROW(be->sample_random(batch.in, batch.tg, res.dt, 1, &sc, 0, B, T - 1), trt::Error);
}
