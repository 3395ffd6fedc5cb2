// Hugging Face export: F32 is exact, BF16 is round-to-nearest-even, config.json has the
// GPT2LMHeadModel fields, and exporting a checkpoint equals exporting its parameters.
#include <cmath>
#include <limits>

#include "checkpoint/checkpoint.h"
#include "checkpoint_test_util.h"
#include "io/fs_util.h"
#include "io/json_min.h"
#include "io/safetensors.h"
#include "model/model_weights.h"

#include <gmock/gmock.h>

using namespace trt;
using namespace ckpt_test;

namespace {

// Written independently of the library: nearest, ties to even, on the upper 16 bits.
uint16_t rne_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t lower = u & 0xFFFFu, upper = u >> 16;
    if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u))) return static_cast<uint16_t>(upper + 1);
    return static_cast<uint16_t>(upper);
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Parameters including exact ties, both parities, and values just either side of a tie.
Model tricky_model() {
    Model m;
    const uint32_t bits[] = {0x3F808000u, 0x3F818000u, 0x3F808001u, 0x3F807FFFu, 0xBF818000u,
                             0x7F7FFFFFu, 0x00008000u, 0x00018000u, 0x3F80FFFFu};
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; ++i) m.params[i] = from_bits(bits[i]);
    return m;
}

void expect_hf_config(const std::string& path, const ModelSpec& s, const char* dtype) {
    const json::Value c = json::parse(slurp(path), path);
    ASSERT_TRUE(c.is_object());
    ASSERT_TRUE(c.find("architectures")->is_array());
    EXPECT_EQ(c.find("architectures")->arr.at(0).s, "GPT2LMHeadModel");
    EXPECT_EQ(c.find("model_type")->s, "gpt2");
    EXPECT_EQ(c.find("vocab_size")->i, s.V);
    EXPECT_EQ(c.find("n_positions")->i, s.maxT);
    EXPECT_EQ(c.find("n_ctx")->i, s.maxT);
    EXPECT_EQ(c.find("n_embd")->i, s.C);
    EXPECT_EQ(c.find("n_layer")->i, s.L);
    EXPECT_EQ(c.find("n_head")->i, s.NH);
    EXPECT_EQ(c.find("n_inner")->kind, json::Value::Kind::Null);
    EXPECT_EQ(c.find("activation_function")->s, "gelu_new");
    EXPECT_EQ(c.find("layer_norm_epsilon")->d, 1e-5);
    for (const char* k : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) EXPECT_EQ(c.find(k)->d, 0.0) << k;
    EXPECT_EQ(c.find("initializer_range")->d, 0.02);
    EXPECT_EQ(c.find("tie_word_embeddings")->kind, json::Value::Kind::Bool);
    EXPECT_TRUE(c.find("tie_word_embeddings")->b);
    EXPECT_EQ(c.find("torch_dtype")->s, dtype);
}

}  // namespace

TEST(CheckpointExport, F32IsExact) {
    const std::string out = fresh_dir() + "/new/sub";  // created (mkdir -p)
    const Model m = tricky_model();
    export_hf(out, m.table, m.params.data(), ExportDType::F32);
    const SafetensorsFile f = SafetensorsFile::open(out + "/model.safetensors");
    EXPECT_EQ(f.metadata().at("format"), "pt");
    ASSERT_EQ(f.tensors().size(), m.table.tensors().size());
    for (const ParamTensor& pt : m.table.tensors()) {
        const TensorInfo* t = f.find(pt.name);
        ASSERT_NE(t, nullptr) << pt.name;
        EXPECT_EQ(t->dtype, DType::F32);
        EXPECT_EQ(t->shape, pt.shape);
        EXPECT_EQ(std::memcmp(f.data(*t), m.params.data() + pt.offset, pt.numel * 4), 0) << pt.name;
    }
    expect_hf_config(out + "/config.json", m.table.spec(), "float32");
    EXPECT_EQ(list_dir(out).size(), 2u);  // no .tmp leftovers
}

TEST(CheckpointExport, Bf16IsRoundToNearestEven) {
    const std::string out = fresh_dir();
    const Model m = tricky_model();
    export_hf(out, m.table, m.params.data(), ExportDType::BF16);
    const SafetensorsFile f = SafetensorsFile::open(out + "/model.safetensors");
    for (const ParamTensor& pt : m.table.tensors()) {
        const TensorInfo* t = f.find(pt.name);
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->dtype, DType::BF16);
        const uint8_t* raw = f.data(*t);
        for (size_t i = 0; i < pt.numel; ++i) {
            uint16_t got;
            std::memcpy(&got, raw + 2 * i, 2);
            ASSERT_EQ(got, rne_bf16(m.params[pt.offset + i])) << pt.name << "[" << i << "]";
        }
    }
    // Spot-check the ties directly: 1.00390625 (even below) stays, 1.01171875 rounds up.
    uint16_t w0, w1;
    std::memcpy(&w0, f.data(*f.find("wte.weight")), 2);
    std::memcpy(&w1, f.data(*f.find("wte.weight")) + 2, 2);
    EXPECT_EQ(w0, 0x3F80);
    EXPECT_EQ(w1, 0x3F82);
    expect_hf_config(out + "/config.json", m.table.spec(), "bfloat16");
}

TEST(CheckpointExport, ReplacesAnEarlierExport) {
    const std::string out = fresh_dir();
    const Model a, b(kShape, 2);
    export_hf(out, a.table, a.params.data(), ExportDType::BF16);
    export_hf(out, b.table, b.params.data(), ExportDType::F32);
    std::vector<float> p(b.table.total());
    load_hf_weights(b.table, out + "/model.safetensors", p.data());
    EXPECT_EQ(p, b.params);
}

TEST(CheckpointExport, CheckpointExportMatchesDirectExport) {
    const std::string root = fresh_dir();
    const Model m(gpt2_spec(17, 6, 3, 4, 8));
    const std::string ck = root + "/step_00000001";
    write_checkpoint(ck, m.table, m.params.data(), m.m.data(), m.v.data(), sample_state());
    for (ExportDType dt : {ExportDType::F32, ExportDType::BF16}) {
        const std::string tag = dt == ExportDType::F32 ? "f32" : "bf16";
        export_hf(root + "/direct_" + tag, m.table, m.params.data(), dt);
        export_checkpoint_hf(ck, root + "/from_ckpt_" + tag, dt);
        for (const char* f : {"model.safetensors", "config.json"})
            EXPECT_EQ(slurp(root + "/from_ckpt_" + tag + "/" + f),
                      slurp(root + "/direct_" + tag + "/" + f)) << tag << " " << f;
    }
    // A checkpoint is itself an F32 export.
    EXPECT_EQ(slurp(ck + "/model.safetensors"), slurp(root + "/direct_f32/model.safetensors"));
    EXPECT_EQ(slurp(ck + "/config.json"), slurp(root + "/direct_f32/config.json"));
}

TEST(CheckpointExport, CheckpointExportVerifiesAndRefusesItself) {
    const std::string root = fresh_dir();
    const Model m;
    const std::string ck = root + "/step_00000001";
    write_checkpoint(ck, m.table, m.params.data(), m.m.data(), m.v.data(), sample_state());
    std::string msg = error_of([&] { export_checkpoint_hf(ck, ck, ExportDType::BF16); },
                               Status::InvalidArgument);
    EXPECT_HAS(msg, "is the checkpoint directory itself");
    std::string s = slurp(ck + "/model.safetensors");
    s[s.size() - 1] ^= 1;
    spit(ck + "/model.safetensors", s);
    msg = error_of([&] { export_checkpoint_hf(ck, root + "/out", ExportDType::F32); },
                   Status::Format);
    EXPECT_HAS(msg, "corrupt checkpoint '" + ck + "': model.safetensors");
    EXPECT_EQ(path_kind(root + "/out"), PathKind::Missing);
}

// Found with fuzz_checkpoint (out-of-memory on tests/fuzz/regressions/fuzz_checkpoint/
// export-n-layer-2e31.bin): a config.json with n_layer = 2^31 - 1 and every other dim 1 passes the parameter-count
// bound (~5e10 < 2^40), and export built a ParamTable of 2^31 layers from it — gigabytes of
// tensor names before anything was compared. Each dim is now bounded like its model.* key.
TEST(CheckpointExport, HostileConfigDimsAreRefusedBeforeAnyTable) {
    const std::string root = fresh_dir();
    const Model m;
    const std::string ck = root + "/step_00000001";
    write_checkpoint(ck, m.table, m.params.data(), m.m.data(), m.v.data(), sample_state());
    edit(ck + "/config.json", "\"vocab_size\": 13", "\"vocab_size\": 1");
    edit(ck + "/config.json", "\"n_positions\": 8", "\"n_positions\": 1");
    edit(ck + "/config.json", "\"n_embd\": 8", "\"n_embd\": 1");
    edit(ck + "/config.json", "\"n_layer\": 2", "\"n_layer\": 2147483647");
    edit(ck + "/config.json", "\"n_head\": 2", "\"n_head\": 1");
    rehash(ck);  // as an attacker would
    std::string msg = error_of([&] { export_checkpoint_hf(ck, root + "/out", ExportDType::F32); },
                               Status::Format);
    EXPECT_HAS(msg, "corrupt checkpoint '" + ck + "': config.json");
    EXPECT_HAS(msg, "\"n_layer\" = 2147483647 is above 16384, the largest model.n_layer");
    EXPECT_EQ(path_kind(root + "/out"), PathKind::Missing);
    // The resume path reads the same file.
    msg = error_of([&] { read_checkpoint(ck, m.table, std::vector<float>(m.table.total()).data(),
                                         nullptr, nullptr); },
                   Status::Format);
    EXPECT_HAS(msg, "n_layer");
}

// ---------------------------------------------------------------- Llama and sharded folders

namespace {

const ModelSpec kLlama = llama_spec(13, 8, 2, 4, 2, 8, 12, /*tied=*/false);

// What load_hf_weights reads back from `dir` equals the exported parameters (padding zero).
void expect_folder_loads(const std::string& dir, const Model& m) {
    std::vector<float> back(m.table.total(), -1.0f);
    load_hf_weights(m.table, dir, back.data());
    for (size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], m.params[i]) << i;
}

}  // namespace

TEST(HfExport, LlamaFolderHasLlamaNamesAndConfigAndLoadsBack) {
    const Model m(kLlama);
    const std::string out = fresh_dir() + "/out";
    export_hf(out, m.table, m.params.data(), ExportDType::F32);
    const SafetensorsFile f = SafetensorsFile::open(out + "/model.safetensors");
    ASSERT_NE(f.find("model.layers.1.self_attn.k_proj.weight"), nullptr);
    EXPECT_EQ(f.find("model.layers.1.self_attn.k_proj.weight")->shape, (std::vector<int64_t>{4, 8}));
    ASSERT_NE(f.find("lm_head.weight"), nullptr);
    EXPECT_EQ(f.find("lm_head.weight")->shape, (std::vector<int64_t>{13, 8}));  // unpadded
    const json::Value c = json::parse(slurp(out + "/config.json"), "config.json");
    EXPECT_EQ(c.find("architectures")->arr.at(0).s, "LlamaForCausalLM");
    EXPECT_EQ(c.find("num_key_value_heads")->i, 2);
    EXPECT_EQ(c.find("intermediate_size")->i, 12);
    EXPECT_FALSE(c.find("tie_word_embeddings")->b);
    expect_folder_loads(out, m);
}

TEST(HfExport, AboveTheShardSizeTheFolderIsShardedWithAnIndex) {
    const Model m(kLlama);
    const std::string out = fresh_dir() + "/out";
    // A single model.safetensors from an earlier export must not outlive the sharded one.
    export_hf(out, m.table, m.params.data(), ExportDType::F32);
    ASSERT_TRUE(fs::exists(out + "/model.safetensors"));
    const uint64_t shard = 13 * 8 * 4 + 64;  // a little more than the embedding
    export_hf(out, m.table, m.params.data(), ExportDType::F32, shard);
    EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
    const json::Value index = json::parse(slurp(out + "/model.safetensors.index.json"), "index");
    const json::Value* map = index.find("weight_map");
    ASSERT_NE(map, nullptr);
    EXPECT_EQ(map->obj.size(), m.table.tensors().size());
    size_t shards = 0, total = 0;
    for (const DirEntry& e : list_dir(out))
        if (e.name.rfind("model-", 0) == 0) {
            ++shards;
            const SafetensorsFile f = SafetensorsFile::open(out + "/" + e.name);
            size_t bytes = 0;
            for (const TensorInfo& t : f.tensors()) {
                bytes += static_cast<size_t>(t.numel()) * 4;
                EXPECT_EQ(map->find(t.name)->s, e.name) << t.name;
            }
            // Only a shard holding a single larger tensor may pass the limit.
            if (f.tensors().size() > 1) EXPECT_LE(bytes, shard) << e.name;
            total += bytes;
        }
    EXPECT_GT(shards, 2u);
    EXPECT_EQ(static_cast<size_t>(index.find("metadata")->find("total_size")->i), total);
    EXPECT_EQ(total, m.table.num_params() * 4);
    expect_folder_loads(out, m);
    // And back to one file: the shards and the index go.
    export_hf(out, m.table, m.params.data(), ExportDType::F32);
    for (const DirEntry& e : list_dir(out)) EXPECT_EQ(e.name.rfind("model-", 0), std::string::npos) << e.name;
    EXPECT_FALSE(fs::exists(out + "/model.safetensors.index.json"));
    expect_folder_loads(out, m);
}

TEST(HfExport, ABadShardIndexIsRefusedByName) {
    const Model m(kLlama);
    const std::string out = fresh_dir() + "/out";
    export_hf(out, m.table, m.params.data(), ExportDType::F32, 13 * 8 * 4 + 64);
    const std::string index = out + "/model.safetensors.index.json";
    const std::string good = slurp(index);
    std::vector<float> back(m.table.total());
    const auto refused = [&](const std::string& text, const char* what) {
        spit(index, text);
        try {
            load_hf_weights(m.table, out, back.data());
            ADD_FAILURE() << "accepted: " << what;
        } catch (const Error& e) {
            EXPECT_THAT(e.what(), ::testing::HasSubstr(what));
        }
    };
    refused("{\"weight_map\": {\"model.norm.weight\": \"../etc/passwd\"}}", "file name of a shard");
    refused("{\"weight_map\": {}}", "no \"weight_map\"");
    refused("{\"weight_map\": {\"model.norm.weight\": \"model-00009-of-00009.safetensors\"}}",
            "is missing from the folder");
    spit(index, good);
    remove_tree(out + "/model-00001-of-" + good.substr(good.find("-of-") + 4, 5) + ".safetensors");
    try {
        load_hf_weights(m.table, out, back.data());
        ADD_FAILURE() << "a missing shard was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Io);
    }
}

// A sharded export over an older sharded export of the same layout (same shard names) that
// stops half-way (here: an error before the second shard; a kill is the same) must not leave
// the old index and config.json over a mix of new and old shards, which loaded as one model.
// The index and config.json go first and come back last.
TEST(HfExport, AnInterruptedReExportNeverLooksComplete) {
    const Model a(kLlama), b(kLlama, 2);
    const std::string out = fresh_dir() + "/out";
    const uint64_t shard = 13 * 8 * 4 + 64;
    export_hf(out, a.table, a.params.data(), ExportDType::F32, shard);
    expect_folder_loads(out, a);
    const auto stop_at = [](const std::string& at) {
        return [at](const std::string& name) {
            if (name.rfind(at, 0) == 0) fail(Status::Io, "stopped before ", name, " (simulated)");
        };
    };
    for (const char* at : {"model-00002-of-", "model.safetensors.index.json", "config.json"}) {
        error_of([&] { export_hf(out, b.table, b.params.data(), ExportDType::F32, shard,
                                 stop_at(at)); }, Status::Io);
        EXPECT_FALSE(fs::exists(out + "/config.json")) << at;
        std::vector<float> back(b.table.total());
        if (std::string(at) != "config.json")
            error_of([&] { load_hf_weights(b.table, out, back.data()); }, Status::Io);
        EXPECT_FALSE(fs::exists(out + "/trainrt.lock")) << at;
    }
    export_hf(out, b.table, b.params.data(), ExportDType::F32, shard);
    expect_folder_loads(out, b);
    EXPECT_TRUE(fs::exists(out + "/config.json"));

    // One file over the shards, stopped before config.json: no config, so no model.
    error_of([&] { export_hf(out, a.table, a.params.data(), ExportDType::F32,
                             kDefaultMaxShardBytes, stop_at("config.json")); }, Status::Io);
    EXPECT_FALSE(fs::exists(out + "/config.json"));
    export_hf(out, a.table, a.params.data(), ExportDType::F32);
    expect_folder_loads(out, a);
}

// Two exports into one folder: the second is refused at once, naming the folder and the
// holder; an export killed earlier left temporary files, which the next export removes
// (only those of the files an export writes).
TEST(HfExport, TheFolderIsLockedAndAKilledExportsFilesAreRemoved) {
    const Model m(kLlama);
    const std::string out = fresh_dir() + "/out";
    {
        const std::unique_ptr<DirLock> held = lock_export_folder(out);
        const std::string msg =
            error_of([&] { export_hf(out, m.table, m.params.data(), ExportDType::F32); },
                     Status::Busy);
        EXPECT_HAS(msg, "export out_dir '" + out + "' is in use by another run (pid ");
        EXPECT_HAS(msg, "mix their files");
        EXPECT_FALSE(fs::exists(out + "/model.safetensors"));
    }
    spit(out + "/.model-00001-of-00003.safetensors.tmp.4242.0123456789abcdef", "half");
    spit(out + "/.config.json.tmp.4242.0123456789abcdef", "{");
    spit(out + "/model.safetensors.tmp", "an earlier version's name");
    spit(out + "/.README.md.tmp.4242.0123456789abcdef", "not an export's");
    export_hf(out, m.table, m.params.data(), ExportDType::F32);
    std::vector<std::string> names;
    for (const DirEntry& e : list_dir(out)) names.push_back(e.name);
    EXPECT_EQ(names, (std::vector<std::string>{".README.md.tmp.4242.0123456789abcdef",
                                               "config.json", "model.safetensors"}));
}
