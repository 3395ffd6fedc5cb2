// Config: parsing every key from a file and a string, defaults, getters, set(), dump(),
// path resolution, copies, and I/O errors. Validation errors live in config_errors_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "core/error.h"

namespace trt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A fresh folder per test under the build tree's tmp.
fs::path test_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    fs::path dir = fs::path(TRAINRT_TEST_TMP) / "config" /
                   (std::string(info->test_suite_name()) + "." + info->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

void write_file(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream f(path, std::ios::binary);
    f << text;
    ASSERT_TRUE(f.good()) << path;
}

// Field-by-field equality of two RunConfigs (RunConfig has no operator==).
void expect_equal(const RunConfig& a, const RunConfig& b) {
    EXPECT_EQ(a.model.vocab_size, b.model.vocab_size);
    EXPECT_EQ(a.model.context_length, b.model.context_length);
    EXPECT_EQ(a.model.n_layer, b.model.n_layer);
    EXPECT_EQ(a.model.n_head, b.model.n_head);
    EXPECT_EQ(a.model.d_model, b.model.d_model);
    EXPECT_EQ(a.model.init_from, b.model.init_from);
    EXPECT_EQ(a.model.seed, b.model.seed);
    EXPECT_EQ(a.data.train, b.data.train);
    EXPECT_EQ(a.data.val, b.data.val);
    EXPECT_EQ(a.data.tokenizer, b.data.tokenizer);
    EXPECT_EQ(a.data.tokenizer_check, b.data.tokenizer_check);
    EXPECT_EQ(a.data.sampler, b.data.sampler);
    EXPECT_EQ(a.data.seed, b.data.seed);
    EXPECT_EQ(a.data.placement, b.data.placement);
    EXPECT_EQ(a.data.packing, b.data.packing);
    EXPECT_EQ(a.data.document_attention, b.data.document_attention);
    EXPECT_EQ(a.train.batch_size, b.train.batch_size);
    EXPECT_EQ(a.train.seq_len, b.train.seq_len);
    EXPECT_EQ(a.train.grad_accum, b.train.grad_accum);
    EXPECT_EQ(a.train.steps, b.train.steps);
    EXPECT_EQ(a.train.eval_every, b.train.eval_every);
    EXPECT_EQ(a.train.eval_batches, b.train.eval_batches);
    EXPECT_EQ(a.train.checkpoint_every, b.train.checkpoint_every);
    EXPECT_EQ(a.train.out_dir, b.train.out_dir);
    EXPECT_EQ(a.optim.lr, b.optim.lr);
    EXPECT_EQ(a.optim.beta1, b.optim.beta1);
    EXPECT_EQ(a.optim.beta2, b.optim.beta2);
    EXPECT_EQ(a.optim.eps, b.optim.eps);
    EXPECT_EQ(a.optim.weight_decay, b.optim.weight_decay);
    EXPECT_EQ(a.optim.grad_clip, b.optim.grad_clip);
    EXPECT_EQ(a.optim.schedule, b.optim.schedule);
    EXPECT_EQ(a.optim.warmup_steps, b.optim.warmup_steps);
    EXPECT_EQ(a.optim.min_lr, b.optim.min_lr);
    EXPECT_EQ(a.runtime.device, b.runtime.device);
    EXPECT_EQ(a.runtime.precision, b.runtime.precision);
    EXPECT_EQ(a.runtime.threads, b.runtime.threads);
    EXPECT_EQ(a.runtime.log_every, b.runtime.log_every);
    EXPECT_EQ(a.runtime.max_inflight, b.runtime.max_inflight);
    EXPECT_EQ(a.accel.fused_adamw, b.accel.fused_adamw);
    EXPECT_EQ(a.accel.cuda_graphs, b.accel.cuda_graphs);
    EXPECT_EQ(a.accel.attention, b.accel.attention);
    EXPECT_EQ(a.accel.fused_classifier, b.accel.fused_classifier);
    EXPECT_EQ(a.accel.matmul_epilogues, b.accel.matmul_epilogues);
    EXPECT_EQ(a.accel.lowp_activations, b.accel.lowp_activations);
    EXPECT_EQ(a.accel.deterministic, b.accel.deterministic);
    EXPECT_EQ(a.accel.cpu_matmul, b.accel.cpu_matmul);
    EXPECT_EQ(a.accel.head_chunk_rows, b.accel.head_chunk_rows);
}

// Every key, each with a value other than its default.
const char* kFull = R"(# every key
[model]
vocab_size = 50257
context_length = 1024
n_layer = 12
n_head = 12
d_model = 768
init_from = "/weights/gpt2.safetensors"
seed = 42

[data]
train = "shards/train_*.bin"
val = "shards/val.bin"
sampler = "sequential"
seed = 7
placement = "host"

[train]
batch_size = 4
seq_len = 512
grad_accum = 2
steps = 5000
eval_every = 250
eval_batches = 20
checkpoint_every = 1000
out_dir = "runs/a"

[optim]
lr = 6e-4
betas = [0.85, 0.99]
eps = 1e-6
weight_decay = 0.05
grad_clip = 0.5
schedule = "linear"
warmup_steps = 100
min_lr = 6e-5

[runtime]
device = "cuda"
precision = "bf16"
threads = 3
log_every = 5
max_inflight = 4
peak_tflops = 123.5
peak_gbs = 3350

[accel]
fused_adamw = false
cuda_graphs = false
attention = "matmul"
fused_classifier = false
matmul_epilogues = false
lowp_activations = false
deterministic = false
cpu_matmul = "openblas"
head_chunk_rows = 640
)";

// Checks every non-path value of kFull; paths are checked by the caller (they depend on base).
void expect_full_values(const RunConfig& r) {
    EXPECT_EQ(r.model.vocab_size, 50257);
    EXPECT_EQ(r.model.context_length, 1024);
    EXPECT_EQ(r.model.n_layer, 12);
    EXPECT_EQ(r.model.n_head, 12);
    EXPECT_EQ(r.model.d_model, 768);
    EXPECT_EQ(r.model.init_from, "/weights/gpt2.safetensors");  // absolute: unchanged
    EXPECT_EQ(r.model.seed, 42u);
    EXPECT_EQ(r.data.sampler, SamplerKind::Sequential);
    EXPECT_EQ(r.data.seed, 7u);
    EXPECT_EQ(r.data.placement, Placement::Host);
    EXPECT_EQ(r.train.batch_size, 4);
    EXPECT_EQ(r.train.seq_len, 512);
    EXPECT_EQ(r.train.grad_accum, 2);
    EXPECT_EQ(r.train.steps, 5000);
    EXPECT_EQ(r.train.eval_every, 250);
    EXPECT_EQ(r.train.eval_batches, 20);
    EXPECT_EQ(r.train.checkpoint_every, 1000);
    EXPECT_DOUBLE_EQ(r.optim.lr, 6e-4);
    EXPECT_DOUBLE_EQ(r.optim.beta1, 0.85);
    EXPECT_DOUBLE_EQ(r.optim.beta2, 0.99);
    EXPECT_DOUBLE_EQ(r.optim.eps, 1e-6);
    EXPECT_DOUBLE_EQ(r.optim.weight_decay, 0.05);
    EXPECT_DOUBLE_EQ(r.optim.grad_clip, 0.5);
    EXPECT_EQ(r.optim.schedule, Schedule::Linear);
    EXPECT_EQ(r.optim.warmup_steps, 100);
    EXPECT_DOUBLE_EQ(r.optim.min_lr, 6e-5);
    EXPECT_EQ(r.runtime.device, DeviceKind::Cuda);
    EXPECT_EQ(r.runtime.precision, Precision::Bf16);
    EXPECT_EQ(r.runtime.threads, 3);
    EXPECT_EQ(r.runtime.log_every, 5);
    EXPECT_EQ(r.runtime.max_inflight, 4);
    EXPECT_DOUBLE_EQ(r.runtime.peak_tflops, 123.5);
    EXPECT_DOUBLE_EQ(r.runtime.peak_gbs, 3350.0);
    // Every accel switch away from its default, so each key's parse is seen.
    EXPECT_FALSE(r.accel.fused_adamw);
    EXPECT_FALSE(r.accel.cuda_graphs);
    EXPECT_EQ(r.accel.attention, AttentionKind::Matmul);
    EXPECT_FALSE(r.accel.fused_classifier);
    EXPECT_FALSE(r.accel.matmul_epilogues);
    EXPECT_FALSE(r.accel.lowp_activations);
    EXPECT_FALSE(r.accel.deterministic);
    EXPECT_EQ(r.accel.cpu_matmul, trt::CpuMatmul::Openblas);
    EXPECT_EQ(r.accel.head_chunk_rows, 640);
}

void expect_defaults(const RunConfig& r) {
    // The documented defaults (docs/CONFIG.md), written out rather than taken from RunConfig{}.
    EXPECT_EQ(r.model.vocab_size, 256);
    EXPECT_EQ(r.model.context_length, 256);
    EXPECT_EQ(r.model.n_layer, 4);
    EXPECT_EQ(r.model.n_head, 4);
    EXPECT_EQ(r.model.d_model, 128);
    EXPECT_EQ(r.model.init_from, "");
    EXPECT_EQ(r.model.seed, 1337u);
    EXPECT_EQ(r.data.train, "");
    EXPECT_EQ(r.data.val, "");
    EXPECT_EQ(r.data.tokenizer, "");
    EXPECT_TRUE(r.data.tokenizer_check);
    EXPECT_EQ(r.data.sampler, SamplerKind::Random);
    EXPECT_EQ(r.data.seed, 1u);
    EXPECT_TRUE(r.data.packing);
    EXPECT_FALSE(r.data.document_attention);
    EXPECT_EQ(r.data.placement, Placement::Auto);
    EXPECT_EQ(r.train.batch_size, 8);
    EXPECT_EQ(r.train.seq_len, 128);
    EXPECT_EQ(r.train.grad_accum, 1);
    EXPECT_EQ(r.train.steps, 1000);
    EXPECT_EQ(r.train.eval_every, 100);
    EXPECT_EQ(r.train.eval_batches, 10);
    EXPECT_EQ(r.train.checkpoint_every, 0);
    EXPECT_EQ(r.train.out_dir, "");
    EXPECT_DOUBLE_EQ(r.optim.lr, 3e-4);
    EXPECT_DOUBLE_EQ(r.optim.beta1, 0.9);
    EXPECT_DOUBLE_EQ(r.optim.beta2, 0.95);
    EXPECT_DOUBLE_EQ(r.optim.eps, 1e-8);
    EXPECT_DOUBLE_EQ(r.optim.weight_decay, 0.1);
    EXPECT_DOUBLE_EQ(r.optim.grad_clip, 1.0);
    EXPECT_EQ(r.optim.schedule, Schedule::Cosine);
    EXPECT_EQ(r.optim.warmup_steps, 0);
    EXPECT_DOUBLE_EQ(r.optim.min_lr, 0.0);
    EXPECT_EQ(r.runtime.device, DeviceKind::Auto);
    EXPECT_EQ(r.runtime.precision, Precision::Auto);
    EXPECT_EQ(r.runtime.threads, 0);
    EXPECT_EQ(r.runtime.log_every, 10);
    EXPECT_EQ(r.runtime.max_inflight, 2);
    EXPECT_DOUBLE_EQ(r.runtime.peak_tflops, 0.0);
    EXPECT_DOUBLE_EQ(r.runtime.peak_gbs, 0.0);
    EXPECT_TRUE(r.accel.fused_adamw);
    EXPECT_TRUE(r.accel.cuda_graphs);  // the CUDA fast paths: on since an H100 run verified them
    EXPECT_EQ(r.accel.attention, AttentionKind::Auto);
    EXPECT_TRUE(r.accel.fused_classifier);
    EXPECT_TRUE(r.accel.matmul_epilogues);
    EXPECT_TRUE(r.accel.lowp_activations);
    EXPECT_TRUE(r.accel.deterministic);  // nondeterministic cuDNN engines only on request
    EXPECT_EQ(r.accel.cpu_matmul, trt::CpuMatmul::Auto);
    EXPECT_EQ(r.accel.head_chunk_rows, 0);  // the backend's choice
}

// Runs f, expects Error(status); returns its message.
template <typename F>
std::string error_of(F&& f, Status status = Status::Config) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), status) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "expected an Error";
    return "";
}

// ------------------------------------------------------------------ every key, defaults

TEST(ConfigParse, EveryKeyFromString) {
    const Config c = Config::from_string(kFull, "/base");
    const RunConfig& r = c.run();
    expect_full_values(r);
    EXPECT_EQ(r.data.train, "/base/shards/train_*.bin");
    EXPECT_EQ(r.data.val, "/base/shards/val.bin");
    EXPECT_EQ(r.train.out_dir, "/base/runs/a");
    EXPECT_EQ(c.base_dir(), "/base");
}

TEST(ConfigParse, EveryKeyFromFile) {
    const fs::path dir = test_dir();
    write_file(dir / "full.toml", kFull);
    const Config c = Config::from_file((dir / "full.toml").string());
    expect_full_values(c.run());
    EXPECT_EQ(c.run().data.train, (dir / "shards/train_*.bin").string());
    EXPECT_EQ(c.run().data.val, (dir / "shards/val.bin").string());
    EXPECT_EQ(c.run().train.out_dir, (dir / "runs/a").string());
}

TEST(ConfigParse, DefaultConstructedHasEveryDefault) {
    const Config c;
    expect_defaults(c.run());
    EXPECT_EQ(c.base_dir(), "");
}

TEST(ConfigParse, EmptyDocumentHasEveryDefault) {
    expect_defaults(Config::from_string("", "").run());
    expect_defaults(Config::from_string("[model]\n[data]\n[accel]\n", "/x").run());
}

TEST(ConfigParse, KeysNotGivenKeepTheirDefaults) {
    const RunConfig r = Config::from_string("[optim]\nlr = 1e-3\n", "").run();
    EXPECT_DOUBLE_EQ(r.optim.lr, 1e-3);
    RunConfig expected;
    expected.optim.lr = 1e-3;
    expect_equal(r, expected);
}

TEST(ConfigParse, EveryEnumValueIsAccepted) {
    const struct {
        const char* key;
        std::vector<const char*> values;
    } cases[] = {
        {"data.sampler", {"random", "sequential"}},
        {"data.placement", {"auto", "device", "host"}},
        {"optim.schedule", {"constant", "cosine", "linear"}},
        {"runtime.device", {"auto", "cpu", "cuda"}},
        {"runtime.precision", {"auto", "fp32", "tf32", "bf16", "fp16"}},
        {"accel.attention", {"auto", "cudnn", "matmul"}},
    };
    for (const auto& c : cases) {
        const std::string key = c.key;
        const std::string sec = key.substr(0, key.find('.')), name = key.substr(key.find('.') + 1);
        for (const char* v : c.values) {
            const Config cfg =
                Config::from_string("[" + sec + "]\n" + name + " = \"" + v + "\"\n", "");
            EXPECT_EQ(cfg.get_string(key), v);
        }
    }
    const RunConfig r = Config::from_string(
        "[data]\nsampler = \"random\"\nplacement = \"device\"\n"
        "[optim]\nschedule = \"constant\"\n[runtime]\ndevice = \"cpu\"\nprecision = \"fp16\"\n"
        "[accel]\nattention = \"cudnn\"\n", "").run();
    EXPECT_EQ(r.data.sampler, SamplerKind::Random);
    EXPECT_EQ(r.data.placement, Placement::Device);
    EXPECT_EQ(r.optim.schedule, Schedule::Constant);
    EXPECT_EQ(r.runtime.device, DeviceKind::Cpu);
    EXPECT_EQ(r.runtime.precision, Precision::Fp16);
    EXPECT_EQ(r.accel.attention, AttentionKind::Cudnn);
    EXPECT_EQ(Config::from_string("[runtime]\nprecision = \"tf32\"\n", "").run().runtime.precision,
              Precision::Tf32);
}

// train.batch_size = "auto": stored as 0 (what get_int reads), dumped and reloaded as "auto".
TEST(ConfigParse, BatchSizeAuto) {
    const Config c = Config::from_string("[train]\nbatch_size = \"auto\"\n", "");
    EXPECT_EQ(c.run().train.batch_size, 0);
    EXPECT_EQ(c.get_int("train.batch_size"), 0);
    EXPECT_EQ(c.get_string("train.batch_size"), "\"auto\"");
    const std::string dump = c.dump();
    EXPECT_NE(dump.find("batch_size = \"auto\""), std::string::npos);
    EXPECT_EQ(Config::from_string(dump, "").run().train.batch_size, 0);
    Config d = Config::from_string("", "");
    d.set("train.batch_size", "\"auto\"");
    EXPECT_EQ(d.run().train.batch_size, 0);
    d.set("train.batch_size", "12");
    EXPECT_EQ(d.run().train.batch_size, 12);
}

TEST(ConfigParse, IntegersAreAcceptedForFloatKeys) {
    const RunConfig r =
        Config::from_string("[optim]\nlr = 1\nbetas = [0, 0.5]\nweight_decay = 0\n", "").run();
    EXPECT_EQ(r.optim.lr, 1.0);
    EXPECT_EQ(r.optim.beta1, 0.0);
    EXPECT_EQ(r.optim.beta2, 0.5);
    EXPECT_EQ(r.optim.weight_decay, 0.0);
}

TEST(ConfigParse, ZeroDisablesCadencesAndClipping) {
    const RunConfig r = Config::from_string(
        "[train]\neval_every = 0\ncheckpoint_every = 0\n[optim]\ngrad_clip = 0\n"
        "[runtime]\nthreads = 0\n", "").run();
    EXPECT_EQ(r.train.eval_every, 0);
    EXPECT_EQ(r.train.checkpoint_every, 0);
    EXPECT_EQ(r.optim.grad_clip, 0.0);
    EXPECT_EQ(r.runtime.threads, 0);
}

TEST(ConfigParse, BoundaryValuesAreAccepted) {
    const RunConfig r = Config::from_string(
        "[model]\nvocab_size = 2147483520\ncontext_length = 64\nn_head = 3\nd_model = 96\n"
        "seed = 9223372036854775807\n"
        "[train]\nseq_len = 64\n[optim]\nlr = 0.01\nmin_lr = 0.01\nbetas = [0.0, 0.999999]\n",
        "").run();
    EXPECT_EQ(r.model.vocab_size, 2147483520);
    EXPECT_EQ(r.train.seq_len, 64);
    EXPECT_EQ(r.model.seed, 9223372036854775807ull);
    EXPECT_EQ(r.optim.min_lr, r.optim.lr);
}

// ------------------------------------------------------------------ paths

TEST(ConfigPaths, RelativePathsResolveAgainstTheFilesFolder) {
    const fs::path dir = test_dir();
    const fs::path file = dir / "sub" / "deeper" / "run.toml";
    write_file(file,
               "[model]\ninit_from = \"../weights/m.safetensors\"\n"
               "[data]\ntrain = \"shards/train_*.bin\"\nval = \"/abs/val.bin\"\n"
               "[train]\nout_dir = \"\"\n");
    const Config c = Config::from_file(file.string());
    const fs::path base = dir / "sub" / "deeper";
    EXPECT_EQ(c.base_dir(), base.string());
    // Lexically normal: no "deeper/../" in what messages and checkpoints show.
    EXPECT_EQ(c.run().model.init_from, (dir / "sub" / "weights/m.safetensors").string());
    EXPECT_EQ(c.run().data.train, (base / "shards/train_*.bin").string());  // glob kept
    EXPECT_EQ(c.run().data.val, "/abs/val.bin");                            // absolute kept
    EXPECT_EQ(c.run().train.out_dir, "");                                   // empty kept
}

TEST(ConfigPaths, EmptyBaseDirKeepsRelativePaths) {
    const Config c = Config::from_string("[data]\ntrain = \"shards/t.bin\"\n", "");
    EXPECT_EQ(c.run().data.train, "shards/t.bin");
}

TEST(ConfigPaths, RelativeBaseDirIsPrefixed) {
    const Config c = Config::from_string("[train]\nout_dir = \"runs/x\"\n", "configs");
    EXPECT_EQ(c.run().train.out_dir, "configs/runs/x");
}

TEST(ConfigPaths, ResolvedPathsAreLexicallyNormalAndRelativeStaysRelative) {
    const Config c = Config::from_string(
        "[data]\ntrain = \"../data/./s/train.bin\"\nval = \"/abs//x/../v.bin\"\n"
        "[train]\nout_dir = \"../../out/x\"\n",
        "examples/configs");
    EXPECT_EQ(c.run().train.out_dir, "out/x");
    EXPECT_EQ(c.run().data.train, "examples/data/s/train.bin");
    EXPECT_EQ(c.run().data.val, "/abs/v.bin");
    const Config bare = Config::from_string("[train]\nout_dir = \"a/../b/./c\"\n", "");
    EXPECT_EQ(bare.run().train.out_dir, "b/c");
    const Config up = Config::from_string("[train]\nout_dir = \"../../x\"\n", "cfg");
    EXPECT_EQ(up.run().train.out_dir, "../x");  // what cannot fold away is kept
}

TEST(ConfigPaths, SetPathResolvesAgainstBaseDir) {
    const fs::path dir = test_dir();
    write_file(dir / "cfg" / "a.toml", "[train]\nsteps = 5\n");
    Config c = Config::from_file((dir / "cfg" / "a.toml").string());
    c.set("data.val", "\"val/*.bin\"");
    EXPECT_EQ(c.run().data.val, (dir / "cfg" / "val/*.bin").string());
    c.set("data.val", "\"/elsewhere/v.bin\"");
    EXPECT_EQ(c.run().data.val, "/elsewhere/v.bin");
}

// ------------------------------------------------------------------ I/O

TEST(ConfigIo, MissingFileIsIoErrorNamingPathAndErrno) {
    const fs::path missing = test_dir() / "nope.toml";
    const std::string msg =
        error_of([&] { Config::from_file(missing.string()); }, Status::Io);
    EXPECT_THAT(msg, HasSubstr(missing.string()));
    EXPECT_THAT(msg, HasSubstr("No such file or directory"));
}

TEST(ConfigIo, DirectoryIsIoError) {
    const fs::path dir = test_dir();
    const std::string msg = error_of([&] { Config::from_file(dir.string()); }, Status::Io);
    EXPECT_THAT(msg, HasSubstr(dir.string()));
    EXPECT_THAT(msg, HasSubstr("is a directory"));
}

// A device or a FIFO is never read (/dev/zero and /dev/urandom would be read without end, a
// FIFO would block the open): refused before reading, naming the path.
TEST(ConfigIo, DevicesAndFifosAreNotRead) {
    for (const char* dev : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
        if (!fs::exists(dev)) continue;
        const std::string msg = error_of([&] { Config::from_file(dev); }, Status::Io);
        EXPECT_THAT(msg, HasSubstr(dev));
        EXPECT_THAT(msg, HasSubstr("not a regular file"));
    }
    const fs::path fifo = test_dir() / "config.fifo";
    fs::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    const std::string msg = error_of([&] { Config::from_file(fifo.string()); }, Status::Io);
    EXPECT_THAT(msg, HasSubstr("not a regular file"));
    fs::remove(fifo);
}

TEST(ConfigIo, FilesOverOneMiBAreRefused) {
    const fs::path big = test_dir() / "big.toml";
    {
        std::ofstream f(big);
        const std::string line = "# " + std::string(1022, 'x') + "\n";  // 1 KiB of comment
        for (int i = 0; i < 1025; ++i) f << line;
    }
    const std::string msg = error_of([&] { Config::from_file(big.string()); }, Status::Config);
    EXPECT_THAT(msg, HasSubstr(big.string()));
    EXPECT_THAT(msg, HasSubstr("larger than 1048576 bytes"));
    fs::resize_file(big, 1000);  // a comment-only file under the limit is a valid config
    EXPECT_NO_THROW(Config::from_file(big.string()));
}

// ------------------------------------------------------------------ getters

TEST(ConfigGet, TypedGettersReadResolvedValues) {
    Config c = Config::from_string("[train]\nsteps = 77\n[optim]\nlr = 0.002\n", "/b");
    EXPECT_EQ(c.get_int("train.steps"), 77);
    EXPECT_EQ(c.get_int("train.batch_size"), 8);  // default visible
    EXPECT_EQ(c.get_int("model.seed"), 1337);
    EXPECT_DOUBLE_EQ(c.get_double("optim.lr"), 0.002);
    EXPECT_DOUBLE_EQ(c.get_double("optim.eps"), 1e-8);
    EXPECT_DOUBLE_EQ(c.get_double("train.steps"), 77.0);  // integer keys too
    EXPECT_TRUE(c.get_bool("accel.cuda_graphs"));  // default
    c.set("accel.cuda_graphs", "false");
    EXPECT_FALSE(c.get_bool("accel.cuda_graphs"));
}

TEST(ConfigGet, GetStringReturnsStringsAndTomlTextOfOthers) {
    const Config c = Config::from_string("[data]\ntrain = \"t.bin\"\n", "/b");
    EXPECT_EQ(c.get_string("data.train"), "/b/t.bin");
    EXPECT_EQ(c.get_string("data.val"), "");
    EXPECT_EQ(c.get_string("optim.schedule"), "cosine");
    EXPECT_EQ(c.get_string("optim.betas"), "[0.9, 0.95]");
    EXPECT_EQ(c.get_string("train.steps"), "1000");
    EXPECT_EQ(c.get_string("optim.lr"), "0.0003");
    EXPECT_EQ(c.get_string("optim.eps"), "1e-8");
    EXPECT_EQ(c.get_string("optim.grad_clip"), "1.0");
    EXPECT_EQ(c.get_string("accel.fused_adamw"), "true");
    EXPECT_EQ(c.get_string("model.seed"), "1337");
}

TEST(ConfigGet, WrongTypeNamesKeyAndItsType) {
    const Config c;
    std::string msg = error_of([&] { c.get_int("optim.lr"); });
    EXPECT_THAT(msg, HasSubstr("optim.lr"));
    EXPECT_THAT(msg, HasSubstr("a float"));
    msg = error_of([&] { c.get_bool("train.steps"); });
    EXPECT_THAT(msg, HasSubstr("train.steps"));
    EXPECT_THAT(msg, HasSubstr("an integer"));
    msg = error_of([&] { c.get_double("data.sampler"); });
    EXPECT_THAT(msg, HasSubstr("data.sampler"));
    EXPECT_THAT(msg, HasSubstr("a string"));
    msg = error_of([&] { c.get_int("accel.fused_adamw"); });
    EXPECT_THAT(msg, HasSubstr("a boolean"));
    msg = error_of([&] { c.get_double("optim.betas"); });
    EXPECT_THAT(msg, HasSubstr("optim.betas"));
    EXPECT_THAT(msg, HasSubstr("array"));
}

// accel.cpu_matmul: "auto" unless asked; one of three names, anything else refused by name.
TEST(ConfigGet, AccelCpuMatmulIsOneOfThreeNames) {
    Config c;
    EXPECT_EQ(c.run().accel.cpu_matmul, trt::CpuMatmul::Auto);
    c.set("accel.cpu_matmul", "\"onednn\"");
    EXPECT_EQ(c.run().accel.cpu_matmul, trt::CpuMatmul::Onednn);
    c.set("accel.cpu_matmul", "\"openblas\"");
    EXPECT_EQ(c.run().accel.cpu_matmul, trt::CpuMatmul::Openblas);
    const std::string msg = error_of([&] { c.set("accel.cpu_matmul", "\"mkl\""); });
    EXPECT_THAT(msg, HasSubstr("accel.cpu_matmul"));
    EXPECT_THAT(msg, HasSubstr("\"auto\", \"onednn\", \"openblas\""));
    EXPECT_EQ(c.run().accel.cpu_matmul, trt::CpuMatmul::Openblas);
}

// accel.deterministic: on unless asked (only cuDNN attention engines depend on it), a boolean.
TEST(ConfigGet, AccelDeterministicIsABooleanThatDefaultsToTrue) {
    Config c;
    EXPECT_TRUE(c.get_bool("accel.deterministic"));
    EXPECT_TRUE(c.run().accel.deterministic);
    c.set("accel.deterministic", "false");
    EXPECT_FALSE(c.get_bool("accel.deterministic"));
    EXPECT_FALSE(c.run().accel.deterministic);
    c.set("accel.deterministic", "true");
    EXPECT_TRUE(c.run().accel.deterministic);
    EXPECT_FALSE(
        Config::from_string("[accel]\ndeterministic = false\n", "").run().accel.deterministic);
    EXPECT_TRUE(
        Config::from_string("[accel]\ndeterministic = true\n", "").run().accel.deterministic);
    const std::string msg = error_of([&] { c.get_int("accel.deterministic"); });
    EXPECT_THAT(msg, HasSubstr("accel.deterministic"));
    EXPECT_THAT(msg, HasSubstr("a boolean"));
    // A wrong type is refused and leaves the value as it was.
    const std::string set_msg = error_of([&] { c.set("accel.deterministic", "\"no\""); });
    EXPECT_THAT(set_msg, HasSubstr("accel.deterministic"));
    EXPECT_THAT(set_msg, HasSubstr("expected true or false"));
    EXPECT_TRUE(c.get_bool("accel.deterministic"));
}

TEST(ConfigGet, UnknownKeyIsConfigError) {
    const Config c;
    std::string msg = error_of([&] { c.get_int("train.batchsize"); });
    EXPECT_THAT(msg, HasSubstr("train.batchsize"));
    EXPECT_THAT(msg, HasSubstr("train.batch_size"));  // suggestion
    for (const char* k : {"optim", "", "optim.", ".lr", "optim.lr.x", "nothing.lr"}) {
        msg = error_of([&] { c.get_string(k); });
        EXPECT_THAT(msg, HasSubstr(std::string("'") + k + "'"));
    }
}

// ------------------------------------------------------------------ set()

TEST(ConfigSet, SetsScalarsArraysStringsAndEnums) {
    Config c;
    c.set("optim.lr", "1e-3");
    c.set("optim.betas", "[0.8, 0.9]");
    c.set("optim.schedule", "\"linear\"");
    c.set("train.steps", "20");
    c.set("accel.attention", "'matmul'");
    c.set("model.seed", "5  # comment is fine");
    EXPECT_DOUBLE_EQ(c.run().optim.lr, 1e-3);
    EXPECT_DOUBLE_EQ(c.run().optim.beta1, 0.8);
    EXPECT_DOUBLE_EQ(c.run().optim.beta2, 0.9);
    EXPECT_EQ(c.run().optim.schedule, Schedule::Linear);
    EXPECT_EQ(c.run().train.steps, 20);
    EXPECT_EQ(c.run().accel.attention, AttentionKind::Matmul);
    EXPECT_EQ(c.run().model.seed, 5u);
    c.set("train.steps", "30");  // again: the last value wins
    EXPECT_EQ(c.get_int("train.steps"), 30);
}

TEST(ConfigSet, OverridesFileValue) {
    Config c = Config::from_string("[train]\nbatch_size = 4\nsteps = 9\n", "");
    c.set("train.batch_size", "16");
    EXPECT_EQ(c.run().train.batch_size, 16);
    EXPECT_EQ(c.run().train.steps, 9);
}

TEST(ConfigSet, CrossKeyChangeBecomesValidTogether) {
    Config c;  // context_length 256
    EXPECT_EQ(error_of([&] { c.set("train.seq_len", "512"); }).find("train.seq_len") !=
                  std::string::npos,
              true);
    c.set("model.context_length", "1024");
    c.set("train.seq_len", "512");
    EXPECT_EQ(c.run().train.seq_len, 512);
}

void expect_unchanged_after(Config& c, const std::string& key, const std::string& value,
                            const std::string& must_mention) {
    const std::string before = c.dump();
    const RunConfig run_before = c.run();
    const std::string msg = error_of([&] { c.set(key, value); });
    EXPECT_THAT(msg, HasSubstr(must_mention)) << key << " = " << value;
    EXPECT_EQ(c.dump(), before) << key << " = " << value;
    expect_equal(c.run(), run_before);
}

TEST(ConfigSet, FailuresLeaveTheConfigUnchanged) {
    Config c = Config::from_string("[train]\nsteps = 3\n[optim]\nlr = 0.01\n", "");
    expect_unchanged_after(c, "optim.lr", "-1", "optim.lr");                 // range
    expect_unchanged_after(c, "optim.lr", "abc", "optim.lr");                // does not parse
    expect_unchanged_after(c, "optim.lr", "", "optim.lr");                   // empty value
    expect_unchanged_after(c, "train.steps", "2.5", "train.steps");          // wrong type
    expect_unchanged_after(c, "train.seq_len", "100000", "train.seq_len");   // cross-key
    expect_unchanged_after(c, "optim.min_lr", "0.5", "optim.min_lr");        // cross-key
    expect_unchanged_after(c, "optim.betas", "[0.9]", "optim.betas");        // shape
    expect_unchanged_after(c, "optim.schedule", "\"cos\"", "optim.schedule");  // enum
    expect_unchanged_after(c, "train.stepz", "4", "train.stepz");            // unknown key
    expect_unchanged_after(c, "train.steps", "4\nlr = 3", "train.steps");    // two values
    EXPECT_EQ(c.run().train.steps, 3);
    EXPECT_DOUBLE_EQ(c.run().optim.lr, 0.01);
}

TEST(ConfigSet, UnquotedStringHintsAtQuotes) {
    Config c;
    const std::string msg = error_of([&] { c.set("data.train", "shards/x.bin"); });
    EXPECT_THAT(msg, HasSubstr("data.train"));
    EXPECT_THAT(msg, HasSubstr("quotes"));
    EXPECT_EQ(c.run().data.train, "");
}

TEST(ConfigSet, UnknownKeySuggestsNearest) {
    Config c;
    const std::string msg = error_of([&] { c.set("optim.weightdecay", "0.1"); });
    EXPECT_THAT(msg, HasSubstr("optim.weightdecay"));
    EXPECT_THAT(msg, HasSubstr("optim.weight_decay"));
}

TEST(ConfigSet, ErrorAfterSetStillPointsIntoTheFile) {
    const fs::path dir = test_dir();
    write_file(dir / "c.toml", "[model]\ncontext_length = 512\n\n[train]\nseq_len = 256\n");
    Config c = Config::from_file((dir / "c.toml").string());
    Config copy = c;  // copies keep file positions too
    for (Config* cfg : {&c, &copy}) {
        const std::string msg = error_of([&] { cfg->set("model.context_length", "128"); });
        EXPECT_THAT(msg, HasSubstr("c.toml:5:"));
        EXPECT_THAT(msg, HasSubstr("train.seq_len"));
        EXPECT_EQ(cfg->run().model.context_length, 512);
    }
}

// ------------------------------------------------------------------ copies

TEST(ConfigCopy, CopiesAreIndependent) {
    Config a = Config::from_string("[train]\nsteps = 10\n", "/base");
    Config b = a;
    b.set("train.steps", "20");
    EXPECT_EQ(a.run().train.steps, 10);
    EXPECT_EQ(b.run().train.steps, 20);
    EXPECT_EQ(b.base_dir(), "/base");
    Config d;
    d = b;
    d.set("train.steps", "30");
    EXPECT_EQ(b.run().train.steps, 20);
    EXPECT_EQ(d.run().train.steps, 30);
    Config e = std::move(d);
    EXPECT_EQ(e.run().train.steps, 30);
    e.set("optim.lr", "0.5");  // sets made before the copy survive later sets
    EXPECT_EQ(e.run().train.steps, 30);
}

// ------------------------------------------------------------------ dump()

TEST(ConfigDump, RoundTripsNonDefaults) {
    Config c = Config::from_string(kFull, "/base");
    c.set("data.val", "\"we\\\"ird \\\\ name\\t.bin\"");
    c.set("optim.lr", "0.1");
    c.set("optim.eps", "1.5e-300");
    c.set("model.seed", "9223372036854775807");
    const std::string text = c.dump();
    const Config back = Config::from_string(text, "");
    expect_equal(back.run(), c.run());
    EXPECT_EQ(back.dump(), text);
    EXPECT_EQ(back.run().data.val, "/base/we\"ird \\ name\t.bin");
}

TEST(ConfigDump, RoundTripsDefaults) {
    const Config c;
    const Config back = Config::from_string(c.dump(), "");
    expect_equal(back.run(), RunConfig{});
    EXPECT_EQ(back.dump(), c.dump());
}

TEST(ConfigDump, HasEverySectionInOrderAndShowsResolvedPaths) {
    const std::string text =
        Config::from_string("[data]\ntrain = \"t/*.bin\"\n", "/root/cfg").dump();
    size_t pos = 0;
    for (const char* s : {"[model]", "[data]", "[train]", "[optim]", "[runtime]", "[accel]"}) {
        const size_t at = text.find(std::string("\n") + s + "\n");
        ASSERT_NE(at, std::string::npos) << s << " in\n" << text;
        EXPECT_GT(at + 1, pos) << s;
        pos = at + 1;
    }
    EXPECT_THAT(text, HasSubstr("train = \"/root/cfg/t/*.bin\"\n"));
    EXPECT_THAT(text, HasSubstr("betas = [0.9, 0.95]\n"));
    EXPECT_THAT(text, HasSubstr("schedule = \"cosine\"\n"));
    EXPECT_THAT(text, Not(HasSubstr("beta1")));
}

// ------------------------------------------------------------------ affects_losses

// Every key of the table says whether it affects the losses (the KeyDesc constructor takes
// it; this checks no entry holds anything else), and loss_entries() is exactly those keys
// with dump()'s values. The three the hand-kept resume list had missed are among them.
TEST(ConfigLosses, EveryKeyIsClassified) {
    Config c;
    c.set("runtime.precision", "\"bf16\"");
    const auto all = dump_entries(c.dump());
    EXPECT_EQ(all.size(), 82u);
    std::vector<std::pair<std::string, std::string>> affecting;
    for (const auto& [key, value] : all) {
        bool affects = false;
        EXPECT_NO_THROW(affects = key_affects_losses(key)) << key;
        if (affects) affecting.emplace_back(key, value);
    }
    auto entries = c.loss_entries();
    std::sort(entries.begin(), entries.end());
    EXPECT_EQ(entries, affecting);
    for (const char* key : {"runtime.precision", "dist.wire_dtype", "model.seed"})
        EXPECT_TRUE(key_affects_losses(key)) << key;
    for (const char* key : {"train.out_dir", "runtime.log_every", "data.train"})
        EXPECT_FALSE(key_affects_losses(key)) << key;
    EXPECT_THROW(key_affects_losses("runtime.precison"), Error);
}

// A dump read back as text: an older writer's dump (a key this build lacks, one it does not
// have) is no error.
TEST(ConfigLosses, DumpEntriesReadBackAnyDump) {
    const auto e = dump_entries("# comment\n[train]\nsteps = 5\nold_key = \"x\"\n\n[optim]\n"
                                "betas = [0.9, 0.95]\n");
    EXPECT_EQ(e.size(), 3u);
    EXPECT_EQ(e.at("train.steps"), "5");
    EXPECT_EQ(e.at("train.old_key"), "\"x\"");
    EXPECT_EQ(e.at("optim.betas"), "[0.9, 0.95]");
}

// docs/CONFIG.md documents every key that dump() lists.
TEST(ConfigDocs, EveryKeyIsDocumented) {
    std::ifstream f(fs::path(TRAINRT_SOURCE_DIR) / "docs" / "CONFIG.md");
    ASSERT_TRUE(f.good()) << "docs/CONFIG.md missing";
    const std::string doc((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::istringstream lines(Config().dump());
    std::string line, section;
    int keys = 0;
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (line[0] == '[') {
            section = line.substr(1, line.size() - 2);
            continue;
        }
        const std::string key = section + "." + line.substr(0, line.find(' '));
        EXPECT_THAT(doc, HasSubstr("`" + key + "`")) << key;
        ++keys;
    }
    EXPECT_EQ(keys, 82);
}

}  // namespace
}  // namespace trt
