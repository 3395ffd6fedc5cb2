// Data parallelism, phase 1 (issue 20, docs/DISTRIBUTED.md), on the in-process world of
// threads: the collectives sum in rank order and agree on every rank; two ranks of B rows
// train as one rank of 2B rows (the samplers number rows across ranks; the gradients and the
// loss are summed before the update) — per-step losses within 1e-6 relative, not bitwise,
// because the sum over the rows is split differently — for both samplers and grad
// accumulation; the ranks keep bit-identical weights; a run repeats bit for bit at a fixed
// world size; a checkpoint of a 2-rank run resumes in 1 rank; instruction-tuning data
// (prepare --chat: loss masks, packed or padded rows) trains at 2 ranks as at 1; and what is
// not built yet is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <unistd.h>

#include "capi/capi_test_util.h"  // tiny_tokenizer_json
#include "checkpoint/checkpoint.h"
#include "data/prepare.h"
#include "data/prepare_chat.h"
#include "dist/communicator.h"
#include "model/lora.h"
#include "runtime/optimizer.h"
#include "runtime/session.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name)
        if (c == '/') c = '_';
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "data_parallel" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

Config config(const std::string& dir, const char* sampler, int B, int grad_accum) {
    std::mt19937 rng(21);
    std::vector<uint32_t> ids(5000);
    for (size_t i = 0; i < ids.size(); ++i)
        ids[i] = rng() % 4 == 0 ? rng() % 48 : static_cast<uint32_t>((i * 5) % 41);
    write_shard(dir + "/train.bin", ids.data(), static_cast<int64_t>(ids.size()), 2);
    Config c = Config::from_string(
        "[model]\nvocab_size = 48\ncontext_length = 16\nn_layer = 2\nn_head = 2\nd_model = 16\n"
        "[train]\nseq_len = 16\nsteps = 20\neval_every = 0\n"
        "[optim]\nlr = 0.003\nwarmup_steps = 2\ngrad_clip = 0.5\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
        "");
    c.set("data.train", "\"" + dir + "/train.bin\"");
    c.set("data.sampler", std::string("\"") + sampler + "\"");
    c.set("train.batch_size", std::to_string(B));
    c.set("train.grad_accum", std::to_string(grad_accum));
    return c;
}

struct RankRun {
    std::vector<double> losses, norms;
    double probe = 0;
    int64_t bytes = 0;  // backend memory in use
    std::string error;
};

std::vector<int32_t> probe_tokens() {
    std::vector<int32_t> t(2 * 17);
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>((i * 7) % 48);
    return t;
}

// `steps` steps of the config on a world of `ranks` threads; each rank's losses and a forward
// on fixed tokens after them.
std::vector<RankRun> run_world(const Config& c, int ranks, int steps) {
    auto world = dist::make_thread_world(ranks);
    std::vector<RankRun> out(static_cast<size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
            RankRun& run = out[static_cast<size_t>(r)];
            try {
                Session s(c, LogSink{}, {}, world[static_cast<size_t>(r)]);
                for (int k = 0; k < steps; ++k) {
                    const StepResult res = s.step();
                    run.losses.push_back(res.loss);
                    run.norms.push_back(res.grad_norm);
                }
                const std::vector<int32_t> p = probe_tokens();
                run.probe = s.forward(p.data(), 2, 16, nullptr, 0);
                run.bytes = s.metrics().bytes_in_use;
            } catch (const std::exception& e) {
                run.error = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    return out;
}

bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A session's warnings and errors, collected.
void collect_line(int32_t, const char* line, void* payload) {
    static_cast<std::vector<std::string>*>(payload)->push_back(line);
}
LogSink collect_warnings(std::vector<std::string>* lines) {
    return LogSink{collect_line, lines, TRAINRT_LOG_WARN};
}
std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
}

struct Case {
    const char* sampler;
    int grad_accum;
};
std::string case_name(const ::testing::TestParamInfo<Case>& i) {
    return std::string(i.param.sampler) + "_ga" + std::to_string(i.param.grad_accum);
}
class DataParallel : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST(ThreadWorld, AllReduceSumsInRankOrderOnEveryRank) {
    auto world = dist::make_thread_world(3);
    std::vector<std::vector<float>> data(3);
    std::vector<double> d(3);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
        threads.emplace_back([&, r] {
            for (int round = 0; round < 50; ++round) {
                data[r] = {1.0f + r, 1e8f * (r == 0), -1e8f * (r == 1) + 0.5f * r};
                world[r]->all_reduce_sum(data[r].data(), data[r].size());
                d[r] = 0.25 * (r + 1);
                world[r]->all_reduce_sum(&d[r], 1);
                world[r]->barrier();
            }
        });
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(data[r][0], 6.0f);
        // Rank order: (1e8 + -1e8 + 0.5) + 1.0 = 1.5, the same bits on every rank.
        EXPECT_EQ(data[r][2], ((0.0f + (-1e8f + 0.5f)) + 1.0f));
        EXPECT_EQ(std::memcmp(data[r].data(), data[0].data(), 3 * sizeof(float)), 0);
        EXPECT_EQ(d[r], 1.5);
        EXPECT_EQ(world[r]->rank(), r);
        EXPECT_EQ(world[r]->size(), 3);
    }
}

// A rank that leaves makes the others fail within the world's timeout, not hang.
TEST(ThreadWorld, ARankThatLeavesFailsTheOthersInBoundedTime) {
    auto world = dist::make_thread_world(2, std::chrono::milliseconds(200));
    std::string error;
    std::thread waiting([&] {
        float x = 1.0f;
        try {
            world[0]->all_reduce_sum(&x, 1);
        } catch (const Error& e) {
            error = e.what();
        }
    });
    waiting.join();  // rank 1 never calls
    EXPECT_NE(error.find("failed or left"), std::string::npos) << error;
}

TEST_P(DataParallel, TwoRanksOfFourRowsTrainAsOneRankOfEight) {
    const std::string dir = test_dir();
    const Case p = GetParam();
    const int steps = 10;
    const auto one = run_world(config(dir, p.sampler, 8, p.grad_accum), 1, steps);
    const auto two = run_world(config(dir, p.sampler, 4, p.grad_accum), 2, steps);
    ASSERT_EQ(one[0].error, "");
    ASSERT_EQ(two[0].error, "");
    ASSERT_EQ(two[1].error, "");
    for (int k = 0; k < steps; ++k) {
        EXPECT_NEAR(two[0].losses[k], one[0].losses[k], 1e-6 * one[0].losses[k]) << "step " << k + 1;
        EXPECT_NEAR(two[0].norms[k], one[0].norms[k], 1e-5 * one[0].norms[k]) << "step " << k + 1;
        // The ranks report the same global figures.
        EXPECT_TRUE(same(two[0].losses[k], two[1].losses[k])) << "step " << k + 1;
    }
    // Identical weights on both ranks; the same model as one rank's, up to the rounding.
    EXPECT_TRUE(same(two[0].probe, two[1].probe));
    EXPECT_NEAR(two[0].probe, one[0].probe, 1e-5 * one[0].probe);
    EXPECT_LT(one[0].losses.back(), one[0].losses.front()) << "the run should learn";
}

// Instruction-tuning data as `trainrt prepare --chat` writes it (a model folder with a chat
// template; assistant masks) at 2 ranks x B = 4 against 1 rank x B = 8, the same global batch:
// the ranks draw the rows of one global numbering (docs/FORMATS.md, "Packing") and the loss is
// the mean over every rank's counted targets, so the steps and the eval agree within 1e-6,
// packed (rows of several examples, positions restarting) and padded.
std::string chat_data(const std::string& dir) {
    const std::string folder = dir + "/model";
    fs::create_directories(folder);
    std::ofstream(folder + "/tokenizer.json") << tiny_tokenizer_json();
    std::ofstream(folder + "/tokenizer_config.json")
        << R"({"eos_token": "<|eot|>", "chat_template": "{% for m in messages %}<{{ m['role'][0] }}>)"
           R"({{ m['content'] }}<|eot|>{% endfor %}{% if add_generation_prompt %}<a>{% endif %}"})";
    // 64 conversations of 1 exchange (a third of them 2) of 1 .. 3 words a message: examples
    // of about 10 .. 50 tokens, so a packed row of 64 holds 1 .. 5.
    std::mt19937 rng(40);
    const char* words[] = {"hello", "hell", "the", "sea", "is", "calm", "who", "goes", "there"};
    const auto say = [&] {
        std::string t;
        for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n)
            t += std::string(t.empty() ? "" : " ") + words[rng() % 9];
        return t;
    };
    std::ofstream jsonl(dir + "/chat.jsonl");
    for (int i = 0; i < 64; ++i) {
        jsonl << R"({"messages": [)";
        for (int turn = 0, turns = rng() % 3 == 0 ? 2 : 1; turn < turns; ++turn)
            jsonl << (turn ? ", " : "") << R"({"role": "user", "content": ")" << say()
                  << R"("}, {"role": "assistant", "content": ")" << say() << R"("})";
        jsonl << "]}\n";
    }
    jsonl.close();
    PrepareChatOptions o;
    o.tokenizer = folder;
    o.val_fraction = 0.25;
    const PrepareChatResult r = prepare_chat({dir + "/chat.jsonl"}, dir + "/prepared", o);
    EXPECT_EQ(r.conversations, 64);
    EXPECT_GT(r.val_tokens, 0);
    return dir + "/prepared";
}

TEST(DataParallelRuns, ChatDataTrainsAtTwoRanksAsAtOne) {
    const std::string dir = test_dir();
    const std::string data = chat_data(dir);
    constexpr int kSteps = 8;
    for (const bool packing : {true, false}) {
        SCOPED_TRACE(packing ? "packed" : "padded");
        Config c = Config::from_string(
            "[model]\nvocab_size = 304\ncontext_length = 64\nn_layer = 2\nn_head = 2\n"
            "d_model = 16\n[train]\nseq_len = 64\neval_every = 0\neval_batches = 2\n"
            "grad_accum = 2\n[optim]\nlr = 0.01\nwarmup_steps = 2\ngrad_clip = 0.5\n"
            "[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
            "");
        c.set("train.steps", std::to_string(kSteps));
        c.set("data.train", "\"" + data + "/train.bin\"");
        c.set("data.val", "\"" + data + "/val.bin\"");
        c.set("data.packing", packing ? "true" : "false");
        std::vector<std::string> log;  // rank 0's of the one-rank run
        const auto run = [&](int ranks, int B) {
            c.set("train.batch_size", std::to_string(B));
            auto world = dist::make_thread_world(ranks);
            std::vector<RankRun> out(static_cast<size_t>(ranks));
            std::vector<std::thread> threads;
            for (int r = 0; r < ranks; ++r)
                threads.emplace_back([&, r] {
                    RankRun& run = out[static_cast<size_t>(r)];
                    try {
                        const LogSink sink = ranks == 1 ? LogSink{collect_line, &log, TRAINRT_LOG_INFO}
                                                        : LogSink{};
                        Session s(c, sink, {}, world[static_cast<size_t>(r)]);
                        for (int k = 0; k < kSteps; ++k) run.losses.push_back(s.step().loss);
                        run.probe = s.eval();
                    } catch (const std::exception& e) {
                        run.error = e.what();
                    }
                });
            for (std::thread& t : threads) t.join();
            for (const RankRun& r : out) EXPECT_EQ(r.error, "");
            return out;
        };
        const auto one = run(1, 8);
        const auto two = run(2, 4);
        ASSERT_EQ(one[0].losses.size(), size_t{kSteps});
        ASSERT_EQ(two[0].losses.size(), size_t{kSteps});
        for (size_t k = 0; k < kSteps; ++k) {
            EXPECT_NEAR(two[0].losses[k], one[0].losses[k], 1e-6 * one[0].losses[k])
                << "step " << k + 1;
            EXPECT_TRUE(same(two[0].losses[k], two[1].losses[k])) << "step " << k + 1;
        }
        EXPECT_NEAR(two[0].probe, one[0].probe, 1e-6 * one[0].probe) << "the eval";
        EXPECT_TRUE(same(two[0].probe, two[1].probe));
        EXPECT_LT(one[0].losses.back(), one[0].losses.front()) << "the run should learn";
        // The data is what the case is about: examples with masks, several a packed row.
        const std::string all = joined(log);
        const size_t at = all.find("data.train: ");
        ASSERT_NE(at, std::string::npos) << all;
        long examples = 0, rows = 0;
        ASSERT_EQ(std::sscanf(all.c_str() + at, "data.train: %ld examples with loss masks in %ld rows",
                              &examples, &rows), 2) << all;
        EXPECT_GT(examples, 40);
        if (packing)
            EXPECT_LT(rows * 2, examples) << all;
        else
            EXPECT_EQ(rows, examples) << all;
    }
}

INSTANTIATE_TEST_SUITE_P(Samplers, DataParallel,
                         ::testing::Values(Case{"random", 1}, Case{"random", 2},
                                           Case{"sequential", 1}, Case{"sequential", 2}),
                         case_name);

// ZeRO-1: each rank keeps half the moments and updates half the parameters; the run is the
// unsharded one up to the order of the norm's and the gradients' sums.
struct ZeroCase {
    const char* state_dtype;
    int grad_accum;
    const char* precision = "fp32";  // bf16: the working copy follows the gathered weights
};
class ZeroOne : public ::testing::TestWithParam<ZeroCase> {};

TEST_P(ZeroOne, EqualsZeroZeroWithHalfTheMoments) {
    const std::string dir = test_dir();
    Config c = config(dir, "random", 4, GetParam().grad_accum);
    c.set("optim.state_dtype", std::string("\"") + GetParam().state_dtype + "\"");
    c.set("runtime.precision", std::string("\"") + GetParam().precision + "\"");
    // bf16: a last-bit difference in a weight may round its bf16 copy the other way.
    const double tol = GetParam().precision[0] == 'b' ? 1e-3 : 1e-6;
    const int steps = 10;
    const auto plain = run_world(c, 2, steps);
    c.set("dist.zero", "1");
    const auto zero = run_world(c, 2, steps);
    for (const auto& r : {plain[0], plain[1], zero[0], zero[1]}) ASSERT_EQ(r.error, "");
    for (int k = 0; k < steps; ++k) {
        EXPECT_NEAR(zero[0].losses[k], plain[0].losses[k], tol * plain[0].losses[k]) << "step " << k + 1;
        EXPECT_NEAR(zero[0].norms[k], plain[0].norms[k], 10 * tol * plain[0].norms[k]) << "step " << k + 1;
        EXPECT_TRUE(same(zero[0].norms[k], zero[1].norms[k])) << "step " << k + 1;
    }
    // The gathered parameters are the same bits on both ranks.
    EXPECT_TRUE(same(zero[0].probe, zero[1].probe));
    EXPECT_NEAR(zero[0].probe, plain[0].probe, 10 * tol * plain[0].probe);
    // Half the moments each (the shards are cut at 256-element blocks: about half).
    const ParamTable table(run_model_spec(c.run()));
    const double moments = static_cast<double>(
        AdamW::moment_bytes(table, c.run().optim.state_dtype));
    for (const auto& r : zero) {
        EXPECT_LT(r.bytes, plain[0].bytes);
        EXPECT_NEAR(static_cast<double>(plain[0].bytes - r.bytes), moments / 2, 0.1 * moments);
    }
}

INSTANTIATE_TEST_SUITE_P(StateDTypes, ZeroOne,
                         ::testing::Values(ZeroCase{"fp32", 1}, ZeroCase{"fp32", 2},
                                           ZeroCase{"int8", 1}, ZeroCase{"fp32", 1, "bf16"}),
                         [](const ::testing::TestParamInfo<ZeroCase>& i) {
                             return std::string(i.param.state_dtype) + "_ga" +
                                    std::to_string(i.param.grad_accum) + "_" + i.param.precision;
                         });

// A ZeRO-1 checkpoint holds every shard's moments: one process resumes it as the ranks go on.
TEST(DataParallelRuns, AZeroOneCheckpointResumesInOneProcess) {
    const std::string dir = test_dir();
    auto world = dist::make_thread_world(2);
    std::vector<std::vector<double>> later(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    const std::string ckpt = dir + "/ckpt";
    Config c = config(dir, "random", 4, 1);
    c.set("dist.zero", "1");
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            try {
                Session s(c, LogSink{}, {}, world[static_cast<size_t>(r)]);
                for (int k = 0; k < 4; ++k) s.step();
                s.save(ckpt);  // every rank: the moments are gathered
                for (int k = 0; k < 4; ++k) later[static_cast<size_t>(r)].push_back(s.step().loss);
            } catch (const std::exception& e) {
                errors[static_cast<size_t>(r)] = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(errors, std::vector<std::string>(2, ""));
    Session one(config(dir, "random", 8, 1), LogSink{});
    one.load(ckpt);
    for (int k = 0; k < 4; ++k) {
        const double loss = one.step().loss;
        EXPECT_NEAR(loss, later[0][static_cast<size_t>(k)], 1e-6 * loss) << "step " << 5 + k;
    }
}

TEST(DataParallelRuns, RepeatBitForBitAtAFixedWorldSize) {
    const std::string dir = test_dir();
    const Config c = config(dir, "random", 4, 2);
    const auto a = run_world(c, 2, 5), b = run_world(c, 2, 5);
    ASSERT_EQ(a[0].error, "");
    ASSERT_EQ(b[0].error, "");
    for (size_t k = 0; k < a[0].losses.size(); ++k) EXPECT_TRUE(same(a[0].losses[k], b[0].losses[k]));
    EXPECT_TRUE(same(a[0].probe, b[0].probe));
}

// A checkpoint holds the global state: rank 0 writes it, one process resumes it with the
// whole batch, and continues as the two ranks do — without a warning that the config differs
// (2 ranks x B = 4 is the global batch of 1 x 8; README's `mpirun -np 2 ... batch_size=8`
// going on from the one-process demo is the same case); a global batch that does differ is
// named as such.
TEST(DataParallelRuns, ACheckpointOfTwoRanksResumesInOne) {
    const std::string dir = test_dir();
    auto world = dist::make_thread_world(2);
    std::vector<double> next(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    const std::string ckpt = dir + "/ckpt";
    const Config c = config(dir, "sequential", 4, 1);  // (writes the shard: once, here)
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            try {
                Session s(c, LogSink{}, {}, world[r]);
                s.step();
                s.step();
                try {
                    s.save(ckpt);
                } catch (const std::exception& e) {
                    errors[r] = e.what();  // still meet the others: no rank may hang
                }
                world[r]->barrier();  // rank 0 has written it
                next[r] = s.step().loss;
            } catch (const std::exception& e) {
                errors[r] += e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(errors[0], "");
    ASSERT_EQ(errors[1], "");
    EXPECT_EQ(read_checkpoint_state(ckpt).world_size, 2);
    std::vector<std::string> warnings;
    Session one(config(dir, "sequential", 8, 1), collect_warnings(&warnings));
    one.load(ckpt);
    EXPECT_NEAR(one.step().loss, next[0], 1e-6 * next[0]);
    EXPECT_EQ(joined(warnings), "");

    std::vector<std::string> half_warnings;
    Session half(config(dir, "sequential", 4, 1), collect_warnings(&half_warnings));
    half.load(ckpt);
    half.step();
    EXPECT_NE(joined(half_warnings).find("differs from the one it was trained with: the global "
                                         "batch (train.batch_size x ranks) = 4 x 1 (checkpoint: "
                                         "4 x 2)"),
              std::string::npos)
        << joined(half_warnings);
}

// Each rank builds its session on its own thread; the errors, by rank ("" = built).
static std::vector<std::string> build_world(const std::vector<Config>& configs) {
    auto world = dist::make_thread_world(static_cast<int>(configs.size()));
    std::vector<std::string> errors(configs.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < configs.size(); ++r)
        threads.emplace_back([&, r] {
            try {
                Session s(configs[r], LogSink{}, {}, world[r]);
            } catch (const Error& e) {
                errors[r] = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    return errors;
}

// The resident split's samplers number rows across ranks as the host's do: the same batches,
// so the same bits (data.placement = "device" on the CPU backend keeps the split in memory).
TEST_P(DataParallel, ResidentDataDrawsTheHostSamplersRows) {
    const std::string dir = test_dir();
    const Case p = GetParam();
    Config c = config(dir, p.sampler, 4, p.grad_accum);
    const auto host = run_world(c, 2, 6);
    c.set("data.placement", "\"device\"");
    const auto resident = run_world(c, 2, 6);
    for (const auto& r : {host[0], host[1], resident[0], resident[1]}) ASSERT_EQ(r.error, "");
    for (size_t k = 0; k < host[0].losses.size(); ++k)
        EXPECT_TRUE(same(resident[0].losses[k], host[0].losses[k])) << "step " << k + 1;
    EXPECT_TRUE(same(resident[1].probe, host[1].probe));
}

// train.batch_size = "auto" with ranks: one answer for all, whose sequential windows (every
// rank's rows) the data holds: 5000 tokens hold 2 x 156 rows of 16 + 1, one rank 312.
TEST(DataParallelRuns, AnAutoBatchIsOneSizeThatEveryRanksWindowHolds) {
    const std::string dir = test_dir();
    Config c = config(dir, "sequential", 4, 1);
    c.set("train.batch_size", "\"auto\"");
    c.set("runtime.memory_limit", "10000000000");  // memory never binds here
    {
        Session one(c, LogSink{});
        EXPECT_EQ(one.config().run().train.batch_size, 312);
    }
    auto world = dist::make_thread_world(2);
    std::vector<int64_t> got(2, -1);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            try {
                Session s(c, LogSink{}, {}, world[static_cast<size_t>(r)]);
                got[static_cast<size_t>(r)] = s.config().run().train.batch_size;
                s.step();  // the windows are drawn
            } catch (const Error& e) {
                errors[static_cast<size_t>(r)] = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(errors, std::vector<std::string>(2, ""));
    EXPECT_EQ(got, std::vector<int64_t>(2, 156));
}

TEST(DataParallelRuns, NcclOnTheCpuIsRefusedWithWhatToUse) {
    const std::string dir = test_dir();
    Config c = config(dir, "random", 4, 1);
    c.set("dist.backend", "\"nccl\"");
    for (const std::string& e : build_world({c, c}))
        EXPECT_NE(e.find("use \"mpi\""), std::string::npos) << e;
}

TEST(DataParallelRuns, RanksWithAnotherConfigAreRefusedOnEveryRank) {
    const std::string dir = test_dir();
    const Config a = config(dir, "random", 4, 1);
    Config b = config(dir, "random", 4, 1);
    EXPECT_EQ(build_world({a, a}), std::vector<std::string>(2, ""));
    b.set("optim.lr", "0.001");
    for (const std::string& e : build_world({a, b}))
        EXPECT_NE(e.find("rank 1 runs another config than rank 0"), std::string::npos) << e;
}

// One config text, one path, other files behind it on one rank (another node's copy of
// model.init_from). Here each rank's thread sees its own folder at the same path: after
// unshare(CLONE_FS) it has a working directory of its own, which /proc/thread-self/cwd names
// (as rank 1 of an MPI job sees its node's files).
struct OwnFolders {
    std::vector<std::string> errors;
    bool unshared = true;
};
static OwnFolders ranks_in_own_folders(const Config& base, const std::vector<std::string>& cwd,
                                       const std::vector<std::pair<std::string, std::string>>& sets,
                                       const std::function<void(Session&, int)>& then = {}) {
    auto world = dist::make_thread_world(static_cast<int>(cwd.size()));
    OwnFolders out;
    out.errors.resize(cwd.size());
    std::mutex mu;
    std::vector<std::thread> threads;
    for (size_t r = 0; r < cwd.size(); ++r)
        threads.emplace_back([&, r] {
            if (::unshare(CLONE_FS) != 0 || ::chdir(cwd[r].c_str()) != 0) {
                std::lock_guard<std::mutex> lock(mu);
                out.unshared = false;
                world[r]->mark_failed();
                return;
            }
            try {
                Config c = base;  // the folder's config.json is read here, on this rank
                for (const auto& [key, value] : sets) c.set(key, value);
                Session s(c, LogSink{}, {}, world[r]);
                s.step();
                if (then) then(s, static_cast<int>(r));
            } catch (const Error& e) {
                out.errors[r] = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    return out;
}

TEST(DataParallelRuns, RanksThatReadOtherWeightsAtOnePathAreRefused) {
    const std::string dir = test_dir();
    const Config c = config(dir, "random", 4, 1);
    for (const auto& [folder, seed] : {std::pair<std::string, int>{"a", 7}, {"b", 7}, {"c", 8}}) {
        Config e = c;
        e.set("model.seed", std::to_string(seed));
        Session(e, LogSink{}).export_hf(dir + "/" + folder + "/mhf", ExportDType::F32);
    }
    const std::vector<std::pair<std::string, std::string>> from = {
        {"model.init_from", "\"/proc/thread-self/cwd/mhf\""}};
    const OwnFolders same = ranks_in_own_folders(c, {dir + "/a", dir + "/b"}, from);
    if (!same.unshared) GTEST_SKIP() << "unshare(CLONE_FS) is not allowed here";
    EXPECT_EQ(same.errors, std::vector<std::string>(2, ""));
    // Rank 2 of 3 reads other weights: every rank refuses, naming it, the path and what to do.
    const OwnFolders other = ranks_in_own_folders(c, {dir + "/a", dir + "/b", dir + "/c"}, from);
    for (const std::string& e : other.errors) {
        EXPECT_NE(e.find("data parallel: rank 2 (tensor 'wte.weight': sha256 "), std::string::npos) << e;
        EXPECT_NE(e.find(" starts from other weights than rank 0 (model.init_from = "
                         "'/proc/thread-self/cwd/mhf'), so the replicas would never agree; every "
                         "rank must read the same files: give every node the same weights at "
                         "that path"), std::string::npos) << e;
    }
    // A random init is compared too (alike by construction: the ranks above trained).
    EXPECT_EQ(build_world({c, c}), std::vector<std::string>(2, ""));
    // QLoRA (lora.base_dtype): the quantised base is compared by its tensors' digests; the same
    // files train, other files are refused.
    std::vector<std::pair<std::string, std::string>> qlora = from;
    for (const auto& kv : std::vector<std::pair<std::string, std::string>>{
             {"lora.rank", "2"},
             {"lora.target_modules", "[\"all-linear\"]"},
             {"lora.base_dtype", "\"nf4\""}})
        qlora.push_back(kv);
    EXPECT_EQ(ranks_in_own_folders(c, {dir + "/a", dir + "/b"}, qlora).errors,
              std::vector<std::string>(2, ""));
    for (const std::string& e : ranks_in_own_folders(c, {dir + "/a", dir + "/c"}, qlora).errors)
        EXPECT_NE(e.find(" starts from other weights than rank 0"), std::string::npos) << e;
}

TEST(DataParallelRuns, RanksThatReadAnotherTokenizerAtOnePathAreRefused) {
    const std::string dir = test_dir();
    Config c = config(dir, "random", 4, 1);
    c.set("model.vocab_size", "320");
    for (const char* folder : {"a", "b", "c"}) {
        fs::create_directories(dir + "/" + folder);
        std::ofstream(dir + "/" + folder + "/tokenizer.json") << tiny_tokenizer_json();
        std::ofstream(dir + "/" + folder + "/tokenizer_config.json")
            << (folder[0] == 'c' ? R"({"eos_token": "he"})" : R"({"eos_token": "<|eot|>"})");
    }
    const std::vector<std::pair<std::string, std::string>> tok = {
        {"data.tokenizer", "\"/proc/thread-self/cwd/tokenizer.json\""}};
    const OwnFolders same = ranks_in_own_folders(c, {dir + "/a", dir + "/b"}, tok);
    if (!same.unshared) GTEST_SKIP() << "unshare(CLONE_FS) is not allowed here";
    EXPECT_EQ(same.errors, std::vector<std::string>(2, ""));
    const OwnFolders other = ranks_in_own_folders(c, {dir + "/c", dir + "/a"}, tok);
    for (const std::string& e : other.errors)
        EXPECT_NE(e.find("data parallel: rank 1 (data.tokenizer = '/proc/thread-self/cwd/"
                         "tokenizer.json': sha256 "), std::string::npos) << e;
    EXPECT_NE(other.errors[0].find("reads another tokenizer than rank 0 from the same path"),
              std::string::npos) << other.errors[0];
}

// load() on every rank: the same checkpoint path, another checkpoint behind it on one rank.
TEST(DataParallelRuns, RanksThatLoadAnotherCheckpointAreRefused) {
    const std::string dir = test_dir();
    const Config c = config(dir, "random", 4, 1);
    for (const auto& [folder, steps] : {std::pair<std::string, int>{"a", 2}, {"b", 2}, {"c", 3}}) {
        Session s(c, LogSink{});
        for (int k = 0; k < steps; ++k) s.step();
        s.save(dir + "/" + folder + "/ckpt");
    }
    std::vector<double> after(2);
    auto load = [&](Session& s, int r) {
        s.load("/proc/thread-self/cwd/ckpt");
        after[static_cast<size_t>(r)] = s.step().loss;
    };
    const OwnFolders alike = ranks_in_own_folders(c, {dir + "/a", dir + "/b"}, {}, load);
    if (!alike.unshared) GTEST_SKIP() << "unshare(CLONE_FS) is not allowed here";
    EXPECT_EQ(alike.errors, std::vector<std::string>(2, ""));
    EXPECT_TRUE(same(after[0], after[1]));
    const OwnFolders other = ranks_in_own_folders(c, {dir + "/a", dir + "/c"}, {}, load);
    for (const std::string& e : other.errors) {
        EXPECT_NE(e.find("data parallel: rank 1 (tensor '"), std::string::npos) << e;
        EXPECT_NE(e.find("loaded another checkpoint than rank 0 (this rank read "
                         "'/proc/thread-self/cwd/ckpt'), so the replicas would never agree"),
                  std::string::npos) << e;
    }
}

TEST(DataParallelRuns, RankZeroAloneWritesOutDir) {
    const std::string dir = test_dir();
    Config c = config(dir, "random", 4, 1);
    c.set("train.out_dir", "\"" + dir + "/out\"");
    c.set("train.steps", "3");
    c.set("train.checkpoint_every", "2");
    c.set("runtime.log_every", "1");
    auto world = dist::make_thread_world(2);
    std::vector<std::string> errors(2), saved(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            try {
                Session s(c, LogSink{}, {}, world[static_cast<size_t>(r)]);
                s.train(0, nullptr);  // takes out_dir's lock on rank 0 only
                saved[static_cast<size_t>(r)] = s.save("");
            } catch (const Error& e) {
                errors[static_cast<size_t>(r)] = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(errors, std::vector<std::string>(2, ""));
    EXPECT_EQ(saved[0], saved[1]) << "every rank names the checkpoint rank 0 wrote";
    EXPECT_TRUE(fs::exists(dir + "/out/step_00000002/model.safetensors"));
    EXPECT_TRUE(fs::exists(saved[0] + "/model.safetensors"));
    // One metrics.jsonl, written once per step (rank 0's): 3 train rows.
    std::ifstream metrics(dir + "/out/metrics.jsonl");
    std::string line;
    int rows = 0;
    while (std::getline(metrics, line)) rows += line.find("\"split\": \"train\"") != std::string::npos;
    EXPECT_EQ(rows, 3);
}

TEST(ThreadWorld, AllGatherAndAFailedRank) {
    auto world = dist::make_thread_world(3, std::chrono::milliseconds(200));
    std::vector<std::string> gathered(3);
    std::vector<std::thread> threads;
    for (int r = 0; r < 3; ++r)
        threads.emplace_back([&, r] {
            const std::string mine = "rank" + std::to_string(r);
            std::string all(3 * mine.size(), '?');
            world[static_cast<size_t>(r)]->all_gather(mine.data(), mine.size(), all.data());
            gathered[static_cast<size_t>(r)] = all;
        });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(gathered, std::vector<std::string>(3, "rank0rank1rank2"));
    // A rank marked failed refuses further collectives at once (no wait for the timeout).
    world[1]->mark_failed();
    double x = 1;
    try {
        world[1]->all_reduce_sum(&x, 1);
        ADD_FAILURE() << "a failed rank ran a collective";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("failed earlier"), std::string::npos) << e.what();
    }
}

TEST(Launcher, WorldSizeFromTheLaunchersEnvironment) {
    struct Env {
        const char* name;
        ~Env() { unsetenv(name); }
    };
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) unsetenv(v);
    EXPECT_EQ(dist::launcher_world_size(), 1);
    {
        Env e{"SLURM_NTASKS"};
        setenv(e.name, "8", 1);
        EXPECT_EQ(dist::launcher_world_size(), 8);
        Env o{"OMPI_COMM_WORLD_SIZE"};
        setenv(o.name, "2", 1);
        EXPECT_EQ(dist::launcher_world_size(), 2) << "mpirun's own count comes first";
        setenv(o.name, "two", 1);
        EXPECT_EQ(dist::launcher_world_size(), 8) << "not a number: ignored";
    }
    EXPECT_EQ(dist::launcher_world_size(), 1);
}

TEST(Launcher, NoneStaysAloneAndMpiWithoutTheModuleSaysWhatToInstall) {
    const std::string dir = test_dir();
    Config c = config(dir, "random", 4, 1);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    c.set("dist.backend", "\"none\"");
    EXPECT_NO_THROW(Session(c, LogSink{}));
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("TRAINRT_MPI_MODULE", "/nonexistent/libtrainrt-mpi.so", 1);
    c.set("dist.backend", "\"mpi\"");
    try {
        Session s(c, LogSink{});
        ADD_FAILURE() << "dist.backend = mpi without the module";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Unsupported);
        EXPECT_NE(std::string(e.what()).find("libtrainrt-mpi.so"), std::string::npos) << e.what();
    }
    unsetenv("TRAINRT_MPI_MODULE");
}

// dist.wire_dtype = "bf16": the gradients are summed as bf16 — the run follows the fp32
// wire's within bf16's tolerance, differs from it (the rounding happened), and the ranks
// still hold the same bits.
TEST(DataParallelRuns, Bf16OnTheWireStaysCloseToFp32) {
    const std::string dir = test_dir();
    Config c = config(dir, "random", 4, 2);
    const auto fp32 = run_world(c, 2, 10);
    c.set("dist.wire_dtype", "\"bf16\"");
    const auto bf16 = run_world(c, 2, 10);
    for (const auto& r : {fp32[0], bf16[0], bf16[1]}) ASSERT_EQ(r.error, "");
    bool differs = false;
    for (size_t k = 0; k < fp32[0].losses.size(); ++k) {
        EXPECT_NEAR(bf16[0].losses[k], fp32[0].losses[k], 2e-2 * fp32[0].losses[k]) << k + 1;
        differs = differs || !same(bf16[0].norms[k], fp32[0].norms[k]);
    }
    EXPECT_TRUE(differs) << "the bf16 wire changed nothing: was it used?";
    EXPECT_TRUE(same(bf16[0].probe, bf16[1].probe));
    c.set("dist.zero", "1");
    for (const std::string& e : build_world({c, c}))
        EXPECT_NE(e.find("dist.wire_dtype"), std::string::npos) << e;
}

// dist.overlap: each block's gradients are summed when its backward ends, the rest after it —
// the same sums, so the same bits as summing everything at the end (host memory: in turn).
TEST(DataParallelRuns, OverlapSumsTheSameBitsBlockByBlock) {
    const std::string dir = test_dir();
    for (const char* trainable : {"[]", "[\"h.1.*\", \"ln_f.*\"]"}) {
        Config c = config(dir, "random", 4, 2);
        c.set("train.trainable", trainable);
        const auto at_end = run_world(c, 2, 5);
        c.set("dist.overlap", "true");
        const auto overlapped = run_world(c, 2, 5);
        for (const auto& r : {at_end[0], overlapped[0], overlapped[1]}) ASSERT_EQ(r.error, "");
        for (size_t k = 0; k < at_end[0].losses.size(); ++k)
            EXPECT_TRUE(same(overlapped[0].losses[k], at_end[0].losses[k])) << trainable << k + 1;
        EXPECT_TRUE(same(overlapped[0].probe, at_end[0].probe)) << trainable;
        EXPECT_TRUE(same(overlapped[1].probe, at_end[0].probe)) << trainable;
    }
    // It did sum block by block (the log says so on rank 0).
    struct Lines {
        std::mutex mu;
        std::vector<std::string> all;
    } lines;
    const LogSink sink{[](int32_t, const char* m, void* p) {
                           auto* l = static_cast<Lines*>(p);
                           std::lock_guard<std::mutex> lock(l->mu);
                           l->all.emplace_back(m);
                       },
                       &lines, TRAINRT_LOG_INFO};
    Config c = config(dir, "random", 4, 1);
    c.set("dist.overlap", "true");
    auto world = dist::make_thread_world(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            try {
                Session s(c, sink, {}, world[static_cast<size_t>(r)]);
                s.step();
            } catch (const std::exception& e) {
                ADD_FAILURE() << e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    bool said = false;
    for (const std::string& l : lines.all) said = said || l.find("as soon as its backward") != std::string::npos;
    EXPECT_TRUE(said);
}

// ZeRO-1 makes every save a collective: when rank 0's periodic checkpoints fail, all ranks
// join its retry at the end of train() (none waits for a gather the others never start).
// The failure: out_dir/latest is a non-empty directory (as in test_session.cpp).
TEST(DataParallelRuns, AFailedCheckpointIsRetriedByEveryZeroOneRank) {
    const std::string dir = test_dir();
    Config c = config(dir, "random", 4, 1);
    std::filesystem::create_directories(dir + "/out/latest/x");
    c.set("train.out_dir", "\"" + dir + "/out\"");
    c.set("train.checkpoint_every", "2");
    c.set("train.steps", "5");
    c.set("dist.zero", "1");
    auto world = dist::make_thread_world(2, std::chrono::seconds(20));
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
        threads.emplace_back([&, r] {
            try {
                Session s(c, LogSink{}, {}, world[static_cast<size_t>(r)]);
                s.train(0, nullptr);
            } catch (const std::exception& e) {
                errors[static_cast<size_t>(r)] = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    EXPECT_NE(errors[0].find("as did the one before it"), std::string::npos) << errors[0];
    EXPECT_EQ(errors[0].find("failed or left"), std::string::npos)
        << "rank 0's retry waited for a rank that never joined it: " << errors[0];
    EXPECT_EQ(errors[1], "") << "rank 1 joined rank 0's retry and went on";
}
