// write_checkpoint / read_checkpoint: exact round trips, the refusal cases (existing dir,
// newer format, other model shape, malformed state.json) and stale .tmp handling.
#include <limits>

#include "checkpoint/checkpoint.h"
#include "checkpoint_test_util.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "io/safetensors.h"

using namespace trt;
using namespace ckpt_test;

namespace {

void expect_same_state(const CheckpointState& a, const CheckpointState& b) {
    EXPECT_EQ(a.format_version, b.format_version);
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.tokens_total, b.tokens_total);
    EXPECT_EQ(a.world_size, b.world_size);
    EXPECT_EQ(a.cursor_shard, b.cursor_shard);
    EXPECT_EQ(a.cursor_pos, b.cursor_pos);
    EXPECT_EQ(a.loss_scale, b.loss_scale);
    EXPECT_EQ(a.library_version, b.library_version);
    EXPECT_EQ(a.config_toml, b.config_toml);
    EXPECT_EQ(a.run_id, b.run_id);
}

std::string write_sample(const std::string& root, const Model& model) {
    const std::string dir = root + "/step_00001234";
    write_checkpoint(dir, model.table, model.params.data(), model.m.data(), model.v.data(),
                     sample_state());
    return dir;
}

}  // namespace

TEST(CheckpointRw, RoundTripIsExact) {
    const std::string root = fresh_dir();
    const Model model;
    const std::string dir = write_sample(root, model);
    for (const char* f : {"model.safetensors", "config.json", "optimizer.safetensors",
                          "state.json", "MANIFEST.sha256"})
        EXPECT_EQ(path_kind(dir + "/" + f), PathKind::File) << f;
    EXPECT_EQ(path_kind(dir + ".tmp"), PathKind::Missing);
    EXPECT_EQ(list_dir(dir).size(), 5u);  // no leftover per-file .tmp

    std::vector<float> p(model.table.total()), m(p.size()), v(p.size());
    const CheckpointState st = read_checkpoint(dir, model.table, p.data(), m.data(), v.data());
    EXPECT_EQ(p, model.params);
    EXPECT_EQ(m, model.m);
    EXPECT_EQ(v, model.v);
    expect_same_state(st, sample_state());
    expect_same_state(read_checkpoint_state(dir), sample_state());
    EXPECT_EQ(read_checkpoint_state(dir + "/").step, 1234);  // trailing slash is fine
}

TEST(CheckpointRw, ExtremeStateValuesRoundTrip) {
    const std::string root = fresh_dir();
    const Model model;
    int n = 0;
    for (double scale : {1.0, 65536.0, 1.0 / 3.0, 5e-324, std::numeric_limits<double>::max()}) {
        CheckpointState s;
        s.step = int64_t{1} << 40;  // the largest train.steps
        s.tokens_total = int64_t{1} << 62;
        s.loss_scale = scale;
        s.config_toml = std::string("a\0b\x01\x7f", 5);  // control characters are escaped
        const std::string dir = root + "/c" + std::to_string(n++);
        write_checkpoint(dir, model.table, model.params.data(), model.m.data(), model.v.data(), s);
        expect_same_state(read_checkpoint_state(dir), s);
    }
}

// The data-parallel ranks that trained a checkpoint (its global batch is B x ranks): in
// state.json when more than one, so one process's checkpoints are written as before.
TEST(CheckpointRw, WorldSizeIsRecordedWhenAboveOne) {
    const std::string root = fresh_dir();
    const Model model;
    CheckpointState s = sample_state();
    write_checkpoint(root + "/one", model.table, model.params.data(), model.m.data(),
                     model.v.data(), s);
    EXPECT_EQ(slurp(root + "/one/state.json").find("world_size"), std::string::npos);
    EXPECT_EQ(read_checkpoint_state(root + "/one").world_size, 1);
    s.world_size = 2;
    write_checkpoint(root + "/two", model.table, model.params.data(), model.m.data(),
                     model.v.data(), s);
    EXPECT_HAS(slurp(root + "/two/state.json"), "\"world_size\": 2,");
    expect_same_state(read_checkpoint_state(root + "/two"), s);
}

// state.json's "run" (FORMATS.md §4): the metrics.jsonl run a session that loads the
// checkpoint continues; absent in older checkpoints (and then not written back as "").
TEST(CheckpointRw, RunIdRoundTripsAndIsOptional) {
    const std::string root = fresh_dir();
    const Model model;
    CheckpointState s = sample_state();
    s.run_id = "20261206T123456Z-0123abcd";
    write_checkpoint(root + "/with", model.table, model.params.data(), model.m.data(),
                     model.v.data(), s);
    expect_same_state(read_checkpoint_state(root + "/with"), s);
    EXPECT_EQ(json::parse(slurp(root + "/with/state.json"), "state.json").find("run")->s, s.run_id);
    const std::string without = write_sample(root, model);
    EXPECT_EQ(read_checkpoint_state(without).run_id, "");
    EXPECT_EQ(slurp(without + "/state.json").find("\"run\""), std::string::npos);
}

TEST(CheckpointRw, OptimizerMayBeSkipped) {
    const std::string root = fresh_dir();
    const Model model;
    const std::string dir = write_sample(root, model);
    std::vector<float> p(model.table.total());
    read_checkpoint(dir, model.table, p.data(), nullptr, nullptr);
    EXPECT_EQ(p, model.params);
    std::vector<float> m(p.size());
    error_of([&] { read_checkpoint(dir, model.table, p.data(), m.data(), nullptr); },
             Status::InvalidArgument);
}

TEST(CheckpointRw, FilesAreWhatTheFormatSays) {
    const std::string root = fresh_dir();
    const Model model;
    const std::string dir = write_sample(root, model);
    // model.safetensors: HF names, F32, format metadata; loadable as HF init weights.
    const SafetensorsFile mf = SafetensorsFile::open(dir + "/model.safetensors");
    ASSERT_EQ(mf.tensors().size(), model.table.tensors().size());
    EXPECT_EQ(mf.metadata().at("format"), "pt");
    EXPECT_EQ(mf.tensors()[0].name, "wte.weight");
    std::vector<float> p(model.table.total());
    load_hf_weights(model.table, dir + "/model.safetensors", p.data());
    EXPECT_EQ(p, model.params);
    // optimizer.safetensors: m.<name> then v.<name>.
    const SafetensorsFile of = SafetensorsFile::open(dir + "/optimizer.safetensors");
    ASSERT_EQ(of.tensors().size(), 2 * model.table.tensors().size());
    EXPECT_NE(of.find("m.h.1.mlp.c_fc.weight"), nullptr);
    EXPECT_NE(of.find("v.ln_f.bias"), nullptr);
    // state.json keys.
    const json::Value st = json::parse(slurp(dir + "/state.json"), "state.json");
    EXPECT_EQ(st.find("format_version")->i, kCheckpointFormatAllMoments);
    EXPECT_EQ(st.find("sampler_cursor")->find("pos")->i, 98765);
    EXPECT_EQ(st.find("loss_scale")->kind, json::Value::Kind::Double);
    EXPECT_EQ(st.find("config_toml")->s, sample_state().config_toml);
    // MANIFEST.sha256: sorted, sha256sum format.
    const std::string man = slurp(dir + "/MANIFEST.sha256");
    EXPECT_EQ(man, sha256_file_hex(dir + "/config.json") + "  config.json\n" +
                       sha256_file_hex(dir + "/model.safetensors") + "  model.safetensors\n" +
                       sha256_file_hex(dir + "/optimizer.safetensors") +
                       "  optimizer.safetensors\n" + sha256_file_hex(dir + "/state.json") +
                       "  state.json\n");
}

TEST(CheckpointRw, ExistingDirectoryRefused) {
    const std::string root = fresh_dir();
    const Model model;
    const std::string dir = write_sample(root, model);
    const std::string before = slurp(dir + "/MANIFEST.sha256");
    const std::string msg = error_of(
        [&] { write_sample(root, model); }, Status::Io);
    EXPECT_HAS(msg, "checkpoint directory '" + dir + "' already exists");
    EXPECT_EQ(slurp(dir + "/MANIFEST.sha256"), before);
    make_dirs(root + "/empty");  // even an empty directory is not replaced
    error_of([&] {
        write_checkpoint(root + "/empty", model.table, model.params.data(), model.m.data(),
                         model.v.data(), sample_state());
    }, Status::Io);
}

TEST(CheckpointRw, StaleTmpDirectoryIsReplaced) {
    const std::string root = fresh_dir();
    const Model model;
    const std::string dir = root + "/step_00001234";
    make_dirs(dir + ".tmp/junk");
    spit(dir + ".tmp/model.safetensors", "half written");
    spit(dir + ".tmp/stray", "x");
    write_sample(root, model);
    EXPECT_EQ(path_kind(dir + ".tmp"), PathKind::Missing);
    EXPECT_EQ(path_kind(dir + "/stray"), PathKind::Missing);
    std::vector<float> p(model.table.total());
    read_checkpoint(dir, model.table, p.data(), nullptr, nullptr);
    EXPECT_EQ(p, model.params);
}

TEST(CheckpointRw, InvalidInputsWriteNothing) {
    const std::string root = fresh_dir();
    const Model model;
    CheckpointState bad = sample_state();
    bad.loss_scale = std::numeric_limits<double>::infinity();
    const std::string dir = root + "/x";
    error_of([&] {
        write_checkpoint(dir, model.table, model.params.data(), model.m.data(), model.v.data(), bad);
    }, Status::InvalidArgument);
    bad = sample_state();
    bad.config_toml = "\xff";
    error_of([&] {
        write_checkpoint(dir, model.table, model.params.data(), model.m.data(), model.v.data(), bad);
    }, Status::InvalidArgument);
    error_of([&] {
        write_checkpoint(dir, model.table, model.params.data(), nullptr, model.v.data(),
                         sample_state());
    }, Status::InvalidArgument);
    EXPECT_EQ(path_kind(dir), PathKind::Missing);
    EXPECT_EQ(path_kind(dir + ".tmp"), PathKind::Missing);
}

TEST(CheckpointRw, NewerFormatVersionRefused) {
    const std::string root = fresh_dir();
    const Model model;
    const std::string dir = write_sample(root, model);
    // A future writer may change other keys too: only format_version must be readable.
    edit(dir + "/state.json", "\"format_version\": 1", "\"format_version\": 4");
    edit(dir + "/state.json", "\"step\"", "\"steps_v4\"");
    rehash(dir);
    const std::string want = "checkpoint '" + dir +
                             "' has format version 4; this libtrainrt reads up to 3; upgrade "
                             "libtrainrt";
    std::vector<float> p(model.table.total(), 7.0f);
    EXPECT_EQ(error_of([&] { read_checkpoint(dir, model.table, p.data(), nullptr, nullptr); },
                       Status::VersionMismatch),
              want);
    EXPECT_EQ(error_of([&] { read_checkpoint_state(dir); }, Status::VersionMismatch), want);
    EXPECT_EQ(p, std::vector<float>(p.size(), 7.0f));  // untouched
}

TEST(CheckpointRw, MalformedStateJsonNamesTheKey) {
    const std::string root = fresh_dir();
    const Model model;
    const std::string dir = write_sample(root, model);
    const std::string orig = slurp(dir + "/state.json");
    const struct {
        const char* from;
        const char* to;
        const char* needle;
    } cases[] = {
        {"\"step\": 1234,", "", "key \"step\" is missing"},
        {"\"step\": 1234", "\"step\": \"1234\"", "key \"step\" must be a non-negative integer"},
        {"\"step\": 1234", "\"step\": -1", "key \"step\" must be a non-negative integer"},
        {"\"pos\": 98765", "\"position\": 98765", "key \"sampler_cursor.pos\" is missing"},
        {"\"loss_scale\": 0.1", "\"loss_scale\": \"0.1\"", "key \"loss_scale\" must be a number"},
        {"\"loss_scale\": 0.1", "\"loss_scale\": 0.0", "key \"loss_scale\" must be a positive"},
        {"\"library_version\": \"0.1.0\"", "\"library_version\": 1", "key \"library_version\" must be a string"},
        {"\"format_version\": 1", "\"format_version\": 1.0", "key \"format_version\" must be a positive integer"},
        {"\"step\": 1234,", "\"step\": 1234, \"step\": 1,", "duplicate key \"step\" at byte"},
        {"{", "[", "state.json: invalid JSON"},
        // step + 1 must not overflow on resume (issue 15: a state.json with step = INT64_MAX).
        {"\"step\": 1234", "\"step\": 9223372036854775807", "key \"step\" must be at most 1099511627776"},
        {"\"step\": 1234", "\"step\": 1099511627777", "key \"step\" must be at most"},
        {"\"tokens_total\": 1099511627779", "\"tokens_total\": 9223372036854775807", "key \"tokens_total\" must be at most 2^62"},
        // The ranks that trained it (optional; absent = 1).
        {"\"step\"", "\"world_size\": 0, \"step\"", "key \"world_size\" must be between 1 and 2^24"},
        {"\"step\"", "\"world_size\": 16777217, \"step\"", "key \"world_size\" must be between"},
        {"\"step\"", "\"world_size\": 2.0, \"step\"", "key \"world_size\" must be a non-negative integer"},
        // The user's metadata (optional): an object of strings within the session's rules.
        {"\"step\"", "\"metadata\": [], \"step\"", "key \"metadata\" must be an object"},
        {"\"step\"", "\"metadata\": {\"k\": 1}, \"step\"", "key \"metadata.k\" must be a string"},
        {"\"step\"", "\"metadata\": {\"a b\": \"v\"}, \"step\"", "key \"metadata.a b\" is invalid"},
        {"\"step\"", "\"metadata\": {\"k\": \"1\", \"k\": \"2\"}, \"step\"", "duplicate key \"k\" at byte"},
        {"\"step\"", "\"metadata\": {\"k\": \"1\", \"k\": \"2\"}, \"step\"", "($.metadata.k)"},
        // JSON escapes a NUL, C strings end there (trainrt_session_get_metadata's caller).
        {"\"step\"", "\"metadata\": {\"k\": \"a\\u0000b\"}, \"step\"", "holds a NUL character at byte 1"},
        // The metrics.jsonl run it belongs to (optional): a short id.
        {"\"step\"", "\"run\": 7, \"step\"", "key \"run\" must be a string"},
        {"\"step\"", "\"run\": \"\", \"step\"", "key \"run\" is invalid: a run id must be 1 to 64"},
        {"\"step\"", "\"run\": \"a\\nb\", \"step\"", "key \"run\" is invalid: a run id may only"},
    };
    for (const auto& c : cases) {
        spit(dir + "/state.json", orig);
        edit(dir + "/state.json", c.from, c.to);
        rehash(dir);
        const std::string msg = error_of([&] { read_checkpoint_state(dir); }, Status::Format);
        EXPECT_HAS(msg, "corrupt checkpoint '" + dir + "': state.json");
        EXPECT_HAS(msg, c.needle);
    }
    // Unknown keys are ignored (version policy: additions old readers may skip).
    spit(dir + "/state.json", orig);
    edit(dir + "/state.json", "\"step\"", "\"future_note\": [1, {}], \"step\"");
    rehash(dir);
    EXPECT_EQ(read_checkpoint_state(dir).step, 1234);
}

TEST(CheckpointRw, ShapeMismatchNamesTensorShapesAndKeys) {
    const std::string root = fresh_dir();
    const Model model;
    const std::string dir = write_sample(root, model);
    const auto msg_for = [&](const ModelSpec& s) {
        const ParamTable other(s);
        std::vector<float> p(other.total(), 7.0f);
        const std::string msg = error_of(
            [&] { read_checkpoint(dir, other, p.data(), nullptr, nullptr); }, Status::Config);
        EXPECT_EQ(p, std::vector<float>(p.size(), 7.0f));
        EXPECT_HAS(msg, "checkpoint '" + dir + "' does not match the configured model");
        return msg;
    };
    std::string msg = msg_for(gpt2_spec(13, 8, 2, 2, 16));  // d_model 16
    EXPECT_HAS(msg, "tensor 'wte.weight' has shape [13, 8] in the checkpoint but the config's "
                    "model needs [13, 16]");
    EXPECT_HAS(msg, "model.d_model = 8 (the config has 16)");
    msg = msg_for(gpt2_spec(50, 8, 2, 2, 8));
    EXPECT_HAS(msg, "[13, 8]");
    EXPECT_HAS(msg, "[50, 8]");
    EXPECT_HAS(msg, "model.vocab_size = 13 (the config has 50)");
    msg = msg_for(gpt2_spec(13, 8, 3, 2, 8));  // one more layer than the checkpoint
    EXPECT_HAS(msg, "tensor 'h.2.ln_1.weight' [8] that the config's model needs is not in the checkpoint");
    EXPECT_HAS(msg, "model.n_layer = 2 (the config has 3)");
    msg = msg_for(gpt2_spec(13, 8, 1, 2, 8));  // one fewer
    EXPECT_HAS(msg, "the checkpoint has tensor 'h.1.");
    EXPECT_HAS(msg, "model.n_layer = 2 (the config has 1)");
    msg = msg_for(gpt2_spec(13, 8, 2, 4, 8));  // n_head shows in no shape
    EXPECT_HAS(msg, "model.n_head = 2 (the config has 4)");
    msg = msg_for(gpt2_spec(13, 4, 2, 2, 8));
    EXPECT_HAS(msg, "model.context_length = 8 (the config has 4)");
}
