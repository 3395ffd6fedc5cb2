// optim.state_dtype = "int8" through the Session (issue 19's stretch): it trains like the
// fp32 state (the same first step, losses close after), checkpoints hold the moments as
// fp32 and resume is bit-exact (also across state dtypes: an int8 run resumes from an fp32
// checkpoint and back), and the memory the moments no longer take is what the plan removes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "model/lora.h"
#include "runtime/model_info.h"
#include "runtime/session.h"

using namespace trt;
namespace fs = std::filesystem;

namespace {

std::string test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "session_adamw_q8" / info->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

Config config(const std::string& dir, const char* state) {
    std::mt19937 rng(11);
    std::vector<uint32_t> ids(3000);
    for (size_t i = 0; i < ids.size(); ++i)  // a learnable sequence with some noise
        ids[i] = rng() % 5 == 0 ? rng() % 32 : static_cast<uint32_t>((i * 7) % 29);
    write_shard(dir + "/train.bin", ids.data(), static_cast<int64_t>(ids.size()), 2);
    Config c = Config::from_string(
        "[model]\nvocab_size = 32\ncontext_length = 16\nn_layer = 2\nn_head = 2\nd_model = 32\n"
        "[train]\nbatch_size = 4\nseq_len = 16\nsteps = 40\neval_every = 0\n"
        "[optim]\nlr = 0.003\nwarmup_steps = 2\n"
        "[runtime]\ndevice = \"cpu\"\nthreads = 1\n",
        "");
    c.set("data.train", "\"" + dir + "/train.bin\"");
    c.set("optim.state_dtype", std::string("\"") + state + "\"");
    return c;
}

bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST(SessionAdamWInt8, TrainsLikeTheFp32State) {
    const std::string dir = test_dir();
    Session fp32(config(dir, "fp32"), LogSink{});
    Session int8(config(dir, "int8"), LogSink{});
    double first = 0, last32 = 0, last8 = 0;
    for (int s = 1; s <= 40; ++s) {
        const StepResult a = fp32.step(), b = int8.step();
        if (s <= 2) EXPECT_TRUE(same(a.loss, b.loss)) << "step " << s;  // the same first update
        if (s == 1) first = a.loss;
        EXPECT_NEAR(b.loss, a.loss, 0.03 * a.loss) << "step " << s;
        last32 = a.loss;
        last8 = b.loss;
    }
    EXPECT_LT(last8, 0.9 * first) << "the int8 run should learn";
    std::printf("[  info    ] loss after 40 steps: fp32 state %.5f, int8 state %.5f\n", last32,
                last8);
}

TEST(SessionAdamWInt8, ResumeIsBitExactAndCrossesStateDtypes) {
    const std::string dir = test_dir();
    Session a(config(dir, "int8"), LogSink{});
    for (int s = 0; s < 3; ++s) a.step();
    const std::string ckpt = a.save(dir + "/step3");
    for (const char* state : {"int8", "fp32"}) {
        Session b(config(dir, state), LogSink{});
        b.load(ckpt);
        if (std::string(state) == "int8") {
            Session a2(config(dir, "int8"), LogSink{});
            a2.load(ckpt);
            for (int s = 4; s <= 6; ++s) {
                const StepResult x = a2.step(), y = b.step();
                EXPECT_TRUE(same(x.loss, y.loss)) << "step " << s;
            }
        } else {  // the fp32 state from the decoded moments: a run that goes on learning
            const StepResult y = b.step();
            EXPECT_TRUE(std::isfinite(y.loss));
        }
    }
    // The uninterrupted run and the resumed one agree bit for bit.
    Session c(config(dir, "int8"), LogSink{});
    c.load(ckpt);
    for (int s = 4; s <= 6; ++s) {
        const StepResult x = a.step(), y = c.step();
        EXPECT_TRUE(same(x.loss, y.loss)) << "step " << s << ": " << x.loss << " vs " << y.loss;
        EXPECT_TRUE(same(x.grad_norm, y.grad_norm)) << "step " << s;
    }
    // And an int8 run from an fp32 checkpoint.
    Session f(config(dir, "fp32"), LogSink{});
    f.step();
    Session g(config(dir, "int8"), LogSink{});
    g.load(f.save(dir + "/fp32_step1"));
    EXPECT_TRUE(std::isfinite(g.step().loss));
}

TEST(SessionAdamWInt8, TheMomentsTakeAQuarterAndThePlanSaysSo) {
    const std::string dir = test_dir();
    Session fp32(config(dir, "fp32"), LogSink{});
    Session int8(config(dir, "int8"), LogSink{});
    const int64_t saved = fp32.metrics().bytes_in_use - int8.metrics().bytes_in_use;
    const RunConfig r = config(dir, "fp32").run();
    const ModelSpec spec = run_model_spec(r);
    const auto be = make_cpu_backend(1);
    const ModelInfo i32 = model_info(spec, 4, 16, *be, nullptr, {}, Recompute::None,
                                     StateDType::Fp32);
    const ModelInfo i8 = model_info(spec, 4, 16, *be, nullptr, {}, Recompute::None,
                                    StateDType::Int8);
    EXPECT_EQ(i32.bytes_optimizer - i8.bytes_optimizer, saved);
    const int64_t n = i32.trainable_parameters;  // no padding rows at V = 32? (rounded up)
    EXPECT_GT(saved, 5 * n);  // 8 bytes a parameter become 2 (+ a scale per 256)
}
