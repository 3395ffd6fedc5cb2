// BatchFeed (runtime/batch_feed.h) on its own: the host's draws are the samplers', the
// resident split's draws on the backend are the same ids (both samplers), the cursor can be
// put back (what an abandoned step does), and document positions restart at the separator.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/prepare.h"
#include "model/lora.h"
#include "runtime/batch_feed.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

constexpr int kB = 2, kT = 8, kGA = 3;

struct Fixture {
    RunConfig run;
    std::optional<TokenDataset> data;
    std::unique_ptr<Backend> backend = make_cpu_backend(1);
    std::unique_ptr<Decoder> model;
    Logger log;

    // Two shards (45 and 70 tokens), id j % 61 at position j of their stream.
    Fixture(const char* sampler, const char* placement, bool documents = false) {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "batch_feed" / info->name();
        fs::remove_all(dir);
        fs::create_directories(dir);
        uint32_t next = 0;
        for (const int64_t n : {int64_t{70}, int64_t{45}}) {
            std::vector<uint32_t> ids(static_cast<size_t>(n));
            for (uint32_t& x : ids) x = next++ % 61;
            write_shard((dir / cat("part_", next, ".bin")).string(), ids.data(), n, 2);
        }
        Config c = Config::from_string(
            "[model]\nvocab_size = 64\ncontext_length = 16\nn_layer = 1\nn_head = 2\n"
            "d_model = 16\n[train]\nbatch_size = 2\nseq_len = 8\ngrad_accum = 3\nsteps = 4\n"
            "eval_every = 0\n[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
            "");
        c.set("data.train", "\"" + (dir / "part_*.bin").string() + "\"");
        c.set("data.sampler", cat("\"", sampler, "\""));
        c.set("data.placement", cat("\"", placement, "\""));
        run = c.run();
        data = TokenDataset::open(run.data.train, run.model.vocab_size);
        ModelSpec spec = run_model_spec(run);
        spec.documents = documents;
        model = std::make_unique<Decoder>(*backend, spec, kB, kT, DecoderOptions());
    }

    std::vector<int32_t> read(const int32_t* device) {
        std::vector<int32_t> out(static_cast<size_t>(kB * kT));
        backend->copy_to_host(out.data(), device, out.size() * sizeof(int32_t));
        return out;
    }
    // Micro-batch k through a loader: its inputs and targets, back to back.
    std::vector<int32_t> draw(const MicroBatchLoader& load, int64_t k) {
        load(k, model->inputs_buffer(), model->targets_buffer());
        std::vector<int32_t> both = read(model->inputs_buffer());
        const std::vector<int32_t> targets = read(model->targets_buffer());
        both.insert(both.end(), targets.begin(), targets.end());
        return both;
    }
};

// rows [B, T+1] as inputs [B, T] then targets [B, T].
std::vector<int32_t> split_rows(const std::vector<int32_t>& rows) {
    std::vector<int32_t> in, tg;
    for (int b = 0; b < kB; ++b)
        for (int t = 0; t < kT; ++t) {
            in.push_back(rows[static_cast<size_t>(b * (kT + 1) + t)]);
            tg.push_back(rows[static_cast<size_t>(b * (kT + 1) + t + 1)]);
        }
    in.insert(in.end(), tg.begin(), tg.end());
    return in;
}

}  // namespace

TEST(BatchFeed, HostDrawsAreTheSamplersAndTheCursorGoesBack) {
    Fixture f("sequential", "host");
    BatchFeed feed(*f.backend, *f.model, f.run, &*f.data, -1, 0, 1, f.log);
    EXPECT_FALSE(feed.resident());
    SequentialCursor cursor;
    std::vector<int32_t> rows(static_cast<size_t>(kB * (kT + 1)));
    for (int64_t s = 1; s <= 3; ++s) {
        const SequentialCursor at_start = feed.cursor();
        const MicroBatchLoader load = feed.host_loader(s);
        for (int64_t k = 0; k < kGA; ++k) {
            sample_sequential(*f.data, cursor, kB, kT, rows.data());
            EXPECT_EQ(f.draw(load, k), split_rows(rows)) << "step " << s << ", micro-batch " << k;
        }
        EXPECT_EQ(feed.cursor().shard, cursor.shard);
        EXPECT_EQ(feed.cursor().pos, cursor.pos);
        if (s == 2) {  // an abandoned step puts the cursor back and draws the same again
            feed.set_cursor(at_start);
            EXPECT_EQ(f.draw(load, 0), split_rows([&] {
                          SequentialCursor c = at_start;
                          sample_sequential(*f.data, c, kB, kT, rows.data());
                          return rows;
                      }()));
            feed.set_cursor(cursor);
        }
    }
}

TEST(BatchFeed, ResidentDrawsEqualTheHostsForBothSamplers) {
    for (const char* sampler : {"sequential", "random"}) {
        Fixture resident(sampler, "device"), host(sampler, "host");
        BatchFeed on_device(*resident.backend, *resident.model, resident.run, &*resident.data,
                            -1, 0, 1, resident.log);
        BatchFeed on_host(*host.backend, *host.model, host.run, &*host.data, -1, 0, 1, host.log);
        ASSERT_TRUE(on_device.resident()) << sampler;
        StepScalars* scalars =
            static_cast<StepScalars*>(resident.backend->alloc(sizeof(StepScalars), "scalars"));
        for (int64_t s = 1; s <= 3; ++s) {
            trt::optimizer_step_of(*resident.backend)
                .begin_step(scalars, 0.0f, s);  // the random sampler reads s
            on_device.upload_window_starts();
            const MicroBatchLoader device_load = on_device.resident_loader(scalars);
            const MicroBatchLoader host_load = on_host.host_loader(s);
            for (int64_t k = 0; k < kGA; ++k)
                EXPECT_EQ(resident.draw(device_load, k), host.draw(host_load, k))
                    << sampler << ", step " << s << ", micro-batch " << k;
        }
        EXPECT_EQ(on_device.cursor().pos, on_host.cursor().pos) << sampler;
        resident.backend->free(scalars);
    }
}

TEST(BatchFeed, DocumentPositionsRestartAtTheSeparator) {
    Fixture f("sequential", "host", true);
    const int32_t separator = 5;
    BatchFeed feed(*f.backend, *f.model, f.run, &*f.data, separator, 0, 1, f.log);
    EXPECT_FALSE(feed.resident());  // positions are found on the host
    ASSERT_NE(feed.document_positions(), nullptr);
    const std::vector<int32_t> rows = {1, 5, 2, 3, 5, 5, 4, 6, 7,   //
                                       8, 9, 5, 1, 2, 3, 4, 5, 6};  // [B, T+1]
    feed.load_host_rows(f.model->inputs_buffer(), f.model->targets_buffer(), rows.data(), kB, kT);
    const std::vector<int32_t> positions = f.read(f.model->positions_buffer());
    EXPECT_EQ(positions, (std::vector<int32_t>{0, 0, 1, 2, 0, 0, 1, 2,  //
                                               0, 1, 0, 1, 2, 3, 4, 0}));
    std::vector<int32_t> both = f.read(f.model->inputs_buffer());
    const std::vector<int32_t> targets = f.read(f.model->targets_buffer());
    both.insert(both.end(), targets.begin(), targets.end());
    EXPECT_EQ(both, split_rows(rows));

    Fixture plain("sequential", "host");
    BatchFeed without(*plain.backend, *plain.model, plain.run, &*plain.data, -1, 0, 1, plain.log);
    EXPECT_EQ(without.document_positions(), nullptr);
}
