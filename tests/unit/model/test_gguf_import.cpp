// model.init_from naming a GGUF file (model/gguf_import.h, config/gguf_model_config.h): every
// family written by the export (model/gguf_model.h) and read back into the same table gives
// the same bits (F32), the format's rounding (F16, BF16) or Q8_0's decoded values; the shape
// comes back from the metadata; a QLoRA table gets its quantised tensors a piece at a time
// in HF's layout; and every mismatch between the file and the config is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/gguf_model_config.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/fp16.h"
#include "io/ggml_blocks.h"
#include "io/gguf_reader.h"
#include "model/gguf_import.h"
#include "model/gguf_model.h"
#include "model/lora.h"
#include "model/model_weights.h"
#include "model/param_table.h"

namespace fs = std::filesystem;

namespace trt {
namespace {

std::vector<float> distinct_values(size_t n) {  // every value its own: a moved one shows
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = 0.001f * static_cast<float>(i % 4001) - 2.0f + 1e-7f * i;
    return v;
}

std::string tmp_path(const std::string& name) {
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "gguf_import";
    fs::create_directories(dir);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return (dir / (std::string(info->name()) + "_" + name + ".gguf")).string();
}

// The export's model of `table` written as `type` (the F32-kept tensors as F32), plus `extra`.
std::string write_model(const ParamTable& table, const std::vector<float>& params,
                        gguf::TensorType type, const std::string& name,
                        const std::vector<float>* extra = nullptr,
                        const std::string& extra_name = "blk.0.extra.weight",
                        const std::vector<int64_t>& extra_shape = {}) {
    const GgufModel m = gguf_model(table, params.data());
    gguf::Writer w;
    add_gguf_hyperparameters(w, table.spec());
    for (const GgufModelTensor& t : m.tensors)
        w.add_tensor(t.name, t.shape, t.keep_f32 ? gguf::TensorType::F32 : type, t.values());
    if (extra)
        w.add_tensor(extra_name,
                     extra_shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(extra->size())}
                                         : extra_shape,
                     gguf::TensorType::F32, extra->data());
    const std::string path = tmp_path(name);
    w.write(path);
    return path;
}

ModelSpec llama3_spec() {
    ModelSpec s = llama_spec(64, 64, 2, 2, 1, 32, 64, /*tied=*/false);  // hs 16: 8 pairs
    s.rope_theta = 500000.0f;
    s.rope_scaling.kind = RopeScaling::Llama3;
    s.rope_scaling.factor = 8.0f;
    s.rope_scaling.low_freq_factor = 1.0f;
    s.rope_scaling.high_freq_factor = 4.0f;
    s.rope_scaling.original_context = 8192;  // Meta's value: what the metadata parse assumes
    return s;
}

struct Family {
    const char* name;
    ModelSpec spec;
};

std::vector<Family> families() {
    std::vector<Family> out;
    out.push_back({"gpt2", gpt2_spec(64, 16, 2, 2, 32)});
    out.push_back({"llama_gqa_untied", llama_spec(64, 16, 2, 4, 2, 32, 64, false)});
    out.push_back({"llama3_rope", llama3_spec()});
    ModelSpec q2 = llama_spec(64, 16, 1, 4, 2, 32, 64, true);
    q2.arch = ModelArch::Qwen2;
    out.push_back({"qwen2", q2});
    ModelSpec q3 = llama_spec(64, 16, 1, 4, 2, 32, 64, true);
    q3.arch = ModelArch::Qwen3;
    q3.head_dim = 12;  // 4 heads of 12 over d_model 32
    out.push_back({"qwen3_head_dim", q3});
    return out;
}

// Every tensor's values (not the padding) of two flat buffers of `table` bit for bit.
void expect_same_tensors(const ParamTable& table, const std::vector<float>& want,
                         const std::vector<float>& got, const char* what) {
    for (const ParamTensor& t : table.tensors())
        ASSERT_EQ(std::memcmp(want.data() + t.offset, got.data() + t.offset, t.numel * 4), 0)
            << what << ": " << t.name;
}

TEST(GgufImport, EveryFamilyComesBackBitForBitFromF32) {
    for (const Family& fam : families()) {
        SCOPED_TRACE(fam.name);
        const ParamTable table(fam.spec);
        std::vector<float> params = distinct_values(table.total());
        table.clear_padding(params.data());
        const std::string path = write_model(table, params, gguf::TensorType::F32, fam.name);
        std::vector<float> got(table.total(), -7.0f);
        load_gguf_weights(table, path, got.data());
        expect_same_tensors(table, params, got, fam.name);
        std::vector<float> again(table.total(), -7.0f);  // load_init_weights finds it by content
        load_init_weights(table, path, again.data());
        expect_same_tensors(table, params, again, fam.name);

        // The metadata gives the same model back.
        const ModelConfig mc = parse_gguf_model_config(gguf::Reader::open(path));
        const ModelSpec back = model_spec(mc);
        EXPECT_EQ(back.arch, fam.spec.arch);
        EXPECT_EQ(describe(back), describe(fam.spec));
        EXPECT_EQ(ParamTable(back).total(), table.total());
        EXPECT_EQ(back.tied, fam.spec.tied);
        EXPECT_EQ(back.hs(), fam.spec.hs());
        EXPECT_EQ(back.NKV, fam.spec.NKV);
        EXPECT_FLOAT_EQ(back.norm_eps, fam.spec.norm_eps);
        EXPECT_FLOAT_EQ(back.rope_theta, fam.spec.rope_theta);
        EXPECT_EQ(back.rope_scaling.kind, fam.spec.rope_scaling.kind);
        EXPECT_NEAR(back.rope_scaling.factor, fam.spec.rope_scaling.factor, 1e-5);
        EXPECT_EQ(back.rope_scaling.original_context, fam.spec.rope_scaling.original_context);
    }
}

// F16 and BF16 files give each value rounded as the format rounds it; Q8_0 gives the values
// ggml decodes (an fp16 scale times an int8), each within a block's step of the original.
TEST(GgufImport, ReducedTypesGiveTheFormatsValues) {
    const ModelSpec s = llama_spec(64, 16, 2, 4, 2, 32, 64, false);
    const ParamTable table(s);
    std::vector<float> params = distinct_values(table.total());
    table.clear_padding(params.data());
    const GgufModel m = gguf_model(table, params.data());
    for (gguf::TensorType type :
         {gguf::TensorType::F16, gguf::TensorType::BF16, gguf::TensorType::Q8_0}) {
        SCOPED_TRACE(gguf::type_name(type));
        const std::string path = write_model(table, params, type, gguf::type_name(type));
        std::vector<float> got(table.total());
        load_gguf_weights(table, path, got.data());
        for (const ParamTensor& t : table.tensors()) {
            const bool kept = t.shape.size() == 1;  // norms stay F32
            const float* want = params.data() + t.offset;
            const float* have = got.data() + t.offset;
            for (size_t i = 0; i < t.numel; i++) {
                if (kept || type == gguf::TensorType::F32) {
                    ASSERT_EQ(have[i], want[i]) << t.name << " " << i;
                } else if (type == gguf::TensorType::F16) {
                    ASSERT_EQ(have[i], round_to_fp16(want[i])) << t.name << " " << i;
                } else if (type == gguf::TensorType::BF16) {
                    ASSERT_EQ(have[i], round_to_bf16(want[i])) << t.name << " " << i;
                } else {  // Q8_0: blocks of 32 along a row of the file (q/k rows reordered:
                          // whole rows move, so a row's blocks hold the same elements)
                    const size_t b0 = i / 32 * 32;
                    uint8_t block[gguf::kQ8BlockBytes];
                    float decoded[32];
                    gguf::encode_q8_0_block(want + b0, block);
                    gguf::decode(gguf::TensorType::Q8_0, block, 32, decoded);
                    ASSERT_EQ(have[i], decoded[i - b0]) << t.name << " " << i;
                    // ggml's quantiser: q from the fp32 scale, x from its fp16 rounding.
                    float amax = 0;
                    for (size_t j = b0; j < b0 + 32; j++)
                        amax = std::fmax(amax, std::fabs(want[j]));
                    ASSERT_LE(std::fabs(have[i] - want[i]), amax / 127.0f * 0.57f + 1e-7f)
                        << t.name << " " << i;
                }
            }
        }
    }
}

// A QLoRA table: its quantised tensors reach the sink in pieces of rows in HF's layout (q/k
// rows back in rotate-half order), the same values the unquantised twin loads.
TEST(GgufImport, AQuantisedBaseGetsHfRowsThroughTheSink) {
    for (const Family& fam : families()) {
        SCOPED_TRACE(fam.name);
        ModelSpec s = fam.spec;
        LoraConfig l;
        l.rank = 4;
        l.target_modules = {"all-linear"};
        l.base_dtype = BaseDType::Nf4;
        s.lora = lora_spec(l, s);
        const ParamTable table(s);
        const ParamTable full(fam.spec);  // the model without adapters, as a file holds it
        ASSERT_FALSE(table.quantised_tensors().empty());
        std::vector<float> params = distinct_values(full.total());
        full.clear_padding(params.data());
        const std::string path = write_model(full, params, gguf::TensorType::F32, fam.name);
        std::map<std::string, std::vector<float>> sunk;
        const QuantisedSink sink = [&](const ParamTensor& t, const float* v, int64_t row0,
                                       int64_t rows) {
            std::vector<float>& dst = sunk[t.name];
            const size_t cols = t.numel / static_cast<size_t>(t.shape[0]);
            dst.resize(t.numel);
            std::copy(v, v + rows * cols, dst.begin() + row0 * cols);
        };
        std::vector<float> host(table.total(), -7.0f);
        load_gguf_weights(table, path, host.data(), sink);
        for (const ParamTensor& t : table.tensors()) {
            if (t.role == ParamRole::LoraA || t.role == ParamRole::LoraB) continue;
            const ParamTensor* f = full.find(t.name);
            ASSERT_NE(f, nullptr) << t.name;
            ASSERT_EQ(std::memcmp(host.data() + t.offset, params.data() + f->offset, t.numel * 4),
                      0)
                << t.name;
        }
        for (const ParamTensor& t : table.quantised_tensors()) {
            const ParamTensor* f = full.find(t.name);
            ASSERT_NE(f, nullptr) << t.name;
            ASSERT_EQ(sunk.count(t.name), 1u) << t.name;
            ASSERT_EQ(std::memcmp(sunk[t.name].data(), params.data() + f->offset, t.numel * 4), 0)
                << t.name;
        }
    }
}

template <typename F>
void expect_refused(F&& f, Status status, const std::string& words) {
    try {
        f();
        FAIL() << "not refused; expected: " << words;
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), status) << e.what();
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

TEST(GgufImport, AFileOfAnotherModelIsRefusedByName) {
    const ModelSpec s = llama_spec(64, 16, 2, 4, 2, 32, 64, false);
    const ParamTable table(s);
    std::vector<float> params = distinct_values(table.total());
    const std::string path = write_model(table, params, gguf::TensorType::F32, "llama");
    std::vector<float> host;

    const ParamTable gpt2(gpt2_spec(64, 16, 2, 2, 32));  // another architecture
    host.assign(gpt2.total(), 0);
    expect_refused([&] { load_gguf_weights(gpt2, path, host.data()); }, Status::Format,
                   "a GGUF file of architecture 'llama'");
    const ParamTable wider(llama_spec(64, 16, 2, 4, 2, 32, 96, false));  // d_ff 96
    host.assign(wider.total(), 0);
    expect_refused([&] { load_gguf_weights(wider, path, host.data()); }, Status::Format,
                   "tensor 'blk.0.ffn_gate.weight' has shape [64, 32]");
    const ParamTable deeper(llama_spec(64, 16, 3, 4, 2, 32, 64, false));  // a layer more
    host.assign(deeper.total(), 0);
    expect_refused(
        [&] { load_gguf_weights(deeper, path, host.data()); }, Status::Format,
        "tensor 'blk.2.attn_q.weight' (model.layers.2.self_attn.q_proj.weight) is missing");
    const ParamTable shallower(llama_spec(64, 16, 1, 4, 2, 32, 64, false));
    host.assign(shallower.total(), 0);
    expect_refused([&] { load_gguf_weights(shallower, path, host.data()); }, Status::Format,
                   "unexpected tensor 'blk.1.");
    const std::vector<float> extra(8, 1.0f);
    const std::string with_extra =
        write_model(table, params, gguf::TensorType::F32, "extra", &extra);
    host.assign(table.total(), 0);
    expect_refused([&] { load_gguf_weights(table, with_extra, host.data()); }, Status::Format,
                   "unexpected tensor 'blk.0.extra.weight'");
    expect_refused([&] { load_gguf_weights(table, path + ".missing", host.data()); }, Status::Io,
                   "cannot open");
}

// llama.cpp's converter writes GPT-2's tied head as a copy, output.weight: read as tied when
// it is one, refused when it is not.
TEST(GgufImport, Gpt2sHeadCopyIsTheTiedHead) {
    const ParamTable table(gpt2_spec(64, 16, 2, 2, 32));
    std::vector<float> params = distinct_values(table.total());
    table.clear_padding(params.data());
    const ParamTensor& wte = *table.get(Slot::TokenEmbedding);
    std::vector<float> head(params.data() + wte.offset, params.data() + wte.offset + wte.numel);
    const std::string copy = write_model(table, params, gguf::TensorType::F32, "copy", &head,
                                         "output.weight", wte.shape);
    EXPECT_TRUE(model_spec(parse_gguf_model_config(gguf::Reader::open(copy))).tied);
    std::vector<float> got(table.total());
    load_gguf_weights(table, copy, got.data());
    expect_same_tensors(table, params, got, "head copy");
    head[5] += 1.0f;
    const std::string other = write_model(table, params, gguf::TensorType::F32, "other", &head,
                                          "output.weight", wte.shape);
    expect_refused([&] { load_gguf_weights(table, other, got.data()); }, Status::Format,
                   "output.weight differs from token_embd.weight");
}

// What a GGUF file of llama.cpp's may be that the decoder does not run: refused by name from
// the metadata, before any weight is read.
TEST(GgufImport, ModelsTheDecoderCannotRunAreRefusedFromTheMetadata) {
    const ModelSpec s = llama_spec(64, 16, 1, 4, 2, 32, 64, true);
    const ParamTable table(s);
    const std::vector<float> params = distinct_values(table.total());
    const GgufModel m = gguf_model(table, params.data());
    const auto with = [&](const std::string& name, const std::string& arch, auto&& add) {
        gguf::Writer w;
        ModelSpec as = s;
        as.arch = arch == "qwen2" ? ModelArch::Qwen2 : ModelArch::Llama;
        add_gguf_hyperparameters(w, as);
        add(w);
        for (const GgufModelTensor& t : m.tensors)
            w.add_tensor(t.name, t.shape, gguf::TensorType::F32, t.values());
        const std::string path = tmp_path(name);
        w.write(path);
        return path;
    };
    const std::vector<float> ones(8, 1.0f);
    const std::string moe =
        with("moe", "llama", [](gguf::Writer& w) { w.add_u32("llama.expert_count", 8); });
    const std::string split =
        with("split", "llama", [](gguf::Writer& w) { w.add_u32("split.count", 2); });
    const std::string freqs = with("freqs", "qwen2", [&](gguf::Writer& w) {
        w.add_tensor("rope_freqs.weight", {4}, gguf::TensorType::F32, ones.data());
    });
    const std::string plain = with("plain", "llama", [](gguf::Writer&) {});
    for (const auto& [path, words] : {std::pair{moe, "mixture-of-experts"},
                                      {split, "split GGUF"},
                                      {freqs, "rope_freqs tensor in a qwen2"}})
        expect_refused([&] { parse_gguf_model_config(gguf::Reader::open(path)); },
                       Status::Unsupported, words);
    EXPECT_NO_THROW(parse_gguf_model_config(gguf::Reader::open(plain)));
}

// Llama 3's scaling is only rope_freqs in the file: a config that runs RoPE otherwise is
// refused, and so is a Llama 3 config over a file without it.
TEST(GgufImport, RopeFreqsMustBeTheConfigsScaling) {
    const ModelSpec s = llama3_spec();
    const ParamTable table(s);
    const std::vector<float> params = distinct_values(table.total());
    const std::string scaled = write_model(table, params, gguf::TensorType::F32, "scaled");
    ModelSpec other = s;
    other.rope_scaling.factor = 4.0f;
    const ParamTable t_other(other);
    std::vector<float> host(t_other.total());
    expect_refused([&] { load_gguf_weights(t_other, scaled, host.data()); }, Status::Format,
                   "rope_freqs");
    ModelSpec none = s;
    none.rope_scaling = {};
    const ParamTable t_none(none);
    expect_refused([&] { load_gguf_weights(t_none, scaled, host.data()); }, Status::Format,
                   "model.rope_scaling = \"none\"");
    const std::string plain = write_model(t_none, params, gguf::TensorType::F32, "plain");
    expect_refused([&] { load_gguf_weights(table, plain, host.data()); }, Status::Format,
                   "has no rope_freqs tensor");
}

// model.init_from = "<file>.gguf" in a config: the [model] keys it does not write come from
// the file; one that contradicts it is refused at the key; "mistral" over llama.cpp's llama
// (with its window) is the file's model run as Mistral.
TEST(GgufImport, TheConfigTakesTheShapeFromTheFile) {
    const ModelSpec s = llama_spec(64, 16, 2, 4, 2, 32, 64, false);
    const ParamTable table(s);
    const std::string path =
        write_model(table, distinct_values(table.total()), gguf::TensorType::F32, "llama");
    const std::string train = "[train]\nseq_len = 16\n";
    const Config c = Config::from_string("[model]\ninit_from = \"" + path + "\"\n" + train, "/");
    const ModelConfig& m = c.run().model;
    EXPECT_EQ(m.arch, ModelArch::Llama);
    EXPECT_EQ(m.vocab_size, 64);
    EXPECT_EQ(m.context_length, 16);
    EXPECT_EQ(m.n_layer, 2);
    EXPECT_EQ(m.n_head, 4);
    EXPECT_EQ(m.n_kv_head, 2);
    EXPECT_EQ(m.d_model, 32);
    EXPECT_EQ(m.d_ff, 64);
    EXPECT_FALSE(m.tie_embeddings);
    EXPECT_EQ(c.run().data.tokenizer, "");  // a GGUF file's tokenizer is not read
    expect_refused(
        [&] {
            Config::from_string("[model]\ninit_from = \"" + path + "\"\nn_layer = 3\n" + train,
                                "/");
        },
        Status::Config, "contradicts the GGUF file's metadata");
    const Config mistral = Config::from_string(
        "[model]\ninit_from = \"" + path + "\"\narch = \"mistral\"\nsliding_window = 8\n" + train,
        "/");
    EXPECT_EQ(mistral.run().model.arch, ModelArch::Mistral);
    EXPECT_EQ(mistral.run().model.sliding_window, 8);
    std::vector<float> host(ParamTable(model_spec(mistral.run().model)).total());
    load_gguf_weights(ParamTable(model_spec(mistral.run().model)), path, host.data());
}

}  // namespace
}  // namespace trt
