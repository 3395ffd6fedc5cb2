// Each family as llama.cpp's GGUF holds it (model/gguf_model.h), written and read back by the
// test's own GGUF reader: the tensor names and ne llama.cpp's per-architecture tables expect
// (listed here by hand), GPT-2's Conv1D transposed, Llama's and Mistral's q/k rows in adjacent
// RoPE pairs (checked element by element against the definition), Qwen's untouched, Llama 3's
// rope_freqs from the published scaling rule, and the hyper-parameter keys with their types.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/gguf_test_reader.h"
#include "model/gguf_model.h"
#include "model/param_table.h"

namespace fs = std::filesystem;

namespace trt {
namespace {

std::vector<float> distinct_values(size_t n) {  // every value its own: a moved one shows
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++) v[i] = 0.001f * static_cast<float>(i) - 3.0f;
    return v;
}

struct Written {
    GgufModel model;
    gguf_test::File file;
};

Written write_and_read(const ParamTable& table, const std::vector<float>& params) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "gguf_model";
    fs::create_directories(dir);
    const std::string path = (dir / (std::string(info->name()) + ".gguf")).string();
    Written w;
    w.model = gguf_model(table, params.data());
    gguf::Writer writer;
    add_gguf_hyperparameters(writer, table.spec());
    for (const GgufModelTensor& t : w.model.tensors)
        writer.add_tensor(t.name, t.shape, gguf::TensorType::F32, t.values());
    writer.write(path);
    w.file = gguf_test::read_file(path);
    return w;
}

std::set<std::string> names(const gguf_test::File& f) {
    std::set<std::string> out;
    for (const auto& t : f.tensors) out.insert(t.name);
    return out;
}

std::set<std::string> block_names(int L, const std::vector<std::string>& per_block) {
    std::set<std::string> out;
    for (int l = 0; l < L; l++)
        for (const std::string& n : per_block) out.insert("blk." + std::to_string(l) + "." + n);
    return out;
}

const float* hf(const ParamTable& t, const std::vector<float>& p, Slot slot, int layer = -1) {
    return p.data() + t.get(slot, layer)->offset;
}

uint64_t u32_key(const gguf_test::File& f, const std::string& key) {
    const auto it = f.kv.find(key);
    EXPECT_NE(it, f.kv.end()) << key;
    if (it == f.kv.end()) return 0;
    EXPECT_EQ(it->second.type, 4u) << key << " is not UINT32";
    return it->second.u;
}

double f32_key(const gguf_test::File& f, const std::string& key) {
    const auto it = f.kv.find(key);
    EXPECT_NE(it, f.kv.end()) << key;
    if (it == f.kv.end()) return 0;
    EXPECT_EQ(it->second.type, 6u) << key << " is not FLOAT32";
    return it->second.f;
}

}  // namespace

TEST(GgufModel, Gpt2NamesShapesAndTransposedConv1D) {
    const ModelSpec s = gpt2_spec(64, 16, 2, 2, 8);  // C 8, F 32
    const ParamTable t(s);
    const std::vector<float> p = distinct_values(t.total());
    const Written w = write_and_read(t, p);
    std::set<std::string> want = block_names(
        2, {"attn_norm.weight", "attn_norm.bias", "attn_qkv.weight", "attn_qkv.bias",
            "attn_output.weight", "attn_output.bias", "ffn_norm.weight", "ffn_norm.bias",
            "ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias"});
    want.insert(
        {"token_embd.weight", "position_embd.weight", "output_norm.weight", "output_norm.bias"});
    EXPECT_EQ(names(w.file), want);  // tied: no output.weight
    const gguf_test::File& f = w.file;
    EXPECT_EQ(f.kv.at("general.architecture").s, "gpt2");
    EXPECT_EQ(f.tensor("token_embd.weight").ne, (std::vector<uint64_t>{8, 64}));
    EXPECT_EQ(f.tensor("position_embd.weight").ne, (std::vector<uint64_t>{8, 16}));
    EXPECT_EQ(f.tensor("blk.1.attn_qkv.weight").ne, (std::vector<uint64_t>{8, 24}));
    EXPECT_EQ(f.tensor("blk.1.ffn_up.weight").ne, (std::vector<uint64_t>{8, 32}));
    EXPECT_EQ(f.tensor("blk.1.ffn_down.weight").ne, (std::vector<uint64_t>{32, 8}));
    // c_attn is HF Conv1D [in 8, out 24]: ggml row o (ne[1]) holds HF column o.
    const std::vector<float> qkv = f.values("blk.1.attn_qkv.weight");
    const float* c_attn = hf(t, p, Slot::Qkv, 1);
    for (int o = 0; o < 24; o++)
        for (int i = 0; i < 8; i++) ASSERT_EQ(qkv[o * 8 + i], c_attn[i * 24 + o]) << o << "," << i;
    const std::vector<float> down = f.values("blk.0.ffn_down.weight");
    const float* c_proj = hf(t, p, Slot::Down, 0);  // [in 32, out 8]
    for (int o = 0; o < 8; o++)
        for (int i = 0; i < 32; i++) ASSERT_EQ(down[o * 32 + i], c_proj[i * 8 + o]);
    const std::vector<float> emb = f.values("token_embd.weight");
    EXPECT_TRUE(std::equal(emb.begin(), emb.end(), hf(t, p, Slot::TokenEmbedding)));
    EXPECT_EQ(f.values("blk.0.attn_qkv.bias"),
              std::vector<float>(hf(t, p, Slot::QkvBias, 0), hf(t, p, Slot::QkvBias, 0) + 24));
    EXPECT_EQ(u32_key(f, "gpt2.context_length"), 16u);
    EXPECT_EQ(u32_key(f, "gpt2.embedding_length"), 8u);
    EXPECT_EQ(u32_key(f, "gpt2.block_count"), 2u);
    EXPECT_EQ(u32_key(f, "gpt2.feed_forward_length"), 32u);
    EXPECT_EQ(u32_key(f, "gpt2.attention.head_count"), 2u);
    EXPECT_EQ(u32_key(f, "gpt2.vocab_size"), 64u);  // sizes the embedding without a tokenizer
    EXPECT_FLOAT_EQ(f32_key(f, "gpt2.attention.layer_norm_epsilon"), 1e-5);
    for (const GgufModelTensor& g : w.model.tensors) {
        const bool want_f32 = g.shape.size() == 1 || g.name == "position_embd.weight";
        EXPECT_EQ(g.keep_f32, want_f32) << g.name;
    }
    EXPECT_TRUE(w.model.notes.empty());
}

// Llama (grouped-query, untied): q and k rows in adjacent pairs per head, v and the rest as
// they are; output.weight written; the llama keys. A head of 8 rows, where the reordering is
// not its own inverse: ggml rows 0..7 are HF rows 0, 4, 1, 5, 2, 6, 3, 7.
TEST(GgufModel, LlamaReordersQAndKIntoAdjacentPairs) {
    const ModelSpec s = llama_spec(64, 16, 2, 2, 1, 16, 24, /*tied=*/false);  // hs 8
    const ParamTable t(s);
    const std::vector<float> p = distinct_values(t.total());
    const Written w = write_and_read(t, p);
    std::set<std::string> want =
        block_names(2, {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                        "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight",
                        "ffn_down.weight"});
    want.insert({"token_embd.weight", "output_norm.weight", "output.weight"});
    EXPECT_EQ(names(w.file), want);
    const gguf_test::File& f = w.file;
    EXPECT_EQ(f.kv.at("general.architecture").s, "llama");
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight").ne, (std::vector<uint64_t>{16, 16}));
    EXPECT_EQ(f.tensor("blk.0.attn_k.weight").ne, (std::vector<uint64_t>{16, 8}));
    const int order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    EXPECT_EQ(f.tensor("blk.0.ffn_gate.weight").ne, (std::vector<uint64_t>{16, 24}));
    EXPECT_EQ(f.tensor("output.weight").ne, (std::vector<uint64_t>{16, 64}));
    for (const auto& [slot, name, rows] :
         {std::tuple{Slot::Q, "blk.1.attn_q.weight", 16}, {Slot::K, "blk.1.attn_k.weight", 8}}) {
        const std::vector<float> got = f.values(name);
        const float* src = hf(t, p, slot, 1);
        for (int r = 0; r < rows; r++) {
            const int from = r / 8 * 8 + order[r % 8];
            for (int c = 0; c < 16; c++)
                ASSERT_EQ(got[r * 16 + c], src[from * 16 + c]) << name << " " << r;
        }
    }
    const std::vector<float> v = f.values("blk.1.attn_v.weight");
    EXPECT_TRUE(std::equal(v.begin(), v.end(), hf(t, p, Slot::V, 1)));
    EXPECT_EQ(u32_key(f, "llama.attention.head_count"), 2u);
    EXPECT_EQ(u32_key(f, "llama.attention.head_count_kv"), 1u);
    EXPECT_EQ(u32_key(f, "llama.rope.dimension_count"), 8u);
    EXPECT_EQ(u32_key(f, "llama.vocab_size"), 64u);
    EXPECT_FLOAT_EQ(f32_key(f, "llama.rope.freq_base"), 10000.0);
    EXPECT_FLOAT_EQ(f32_key(f, "llama.attention.layer_norm_rms_epsilon"), s.norm_eps);
    EXPECT_EQ(f.kv.count("llama.attention.key_length"), 0u);  // d_model / n_head
}

// Llama 3's RoPE scaling is the rope_freqs tensor: for each pair i, with f = θ^(-2i/D) and
// wavelength 2π/f, the factor llama.cpp divides f by is 1 (wavelength < original/high), the
// factor (> original/low), else 1 / ((1 - smooth)/factor + smooth) with smooth =
// (original/wavelength - low) / (high - low). No rope.scaling key.
TEST(GgufModel, Llama3RopeScalingIsTheRopeFreqsTensor) {
    ModelSpec s = llama_spec(64, 64, 1, 2, 2, 32, 24, /*tied=*/true);  // hs 16: 8 pairs
    s.rope_theta = 500000.0f;
    s.rope_scaling.kind = RopeScaling::Llama3;
    s.rope_scaling.factor = 8.0f;
    s.rope_scaling.low_freq_factor = 1.0f;
    s.rope_scaling.high_freq_factor = 4.0f;
    s.rope_scaling.original_context = 64;
    const ParamTable t(s);
    const Written w = write_and_read(t, distinct_values(t.total()));
    const gguf_test::File& f = w.file;
    EXPECT_EQ(f.tensor("rope_freqs.weight").ne, (std::vector<uint64_t>{8}));
    EXPECT_EQ(f.tensor("rope_freqs.weight").type, 0u);
    EXPECT_EQ(f.kv.count("llama.rope.scaling.type"), 0u);
    EXPECT_EQ(names(w.file).count("output.weight"), 0u);  // tied
    const std::vector<float> got = f.values("rope_freqs.weight");
    const double pi = std::acos(-1.0), old_ctx = 64, low = 1, high = 4, factor = 8;
    int kept = 0, divided = 0, smoothed = 0;
    for (int i = 0; i < 8; i++) {
        const double freq = std::pow(500000.0, -2.0 * i / 16), wavelen = 2 * pi / freq;
        double want;
        if (wavelen < old_ctx / high) {
            want = 1, ++kept;
        } else if (wavelen > old_ctx / low) {
            want = factor, ++divided;
        } else {
            const double smooth = (old_ctx / wavelen - low) / (high - low);
            want = 1 / ((1 - smooth) / factor + smooth), ++smoothed;
        }
        EXPECT_NEAR(got[static_cast<size_t>(i)], want, 1e-5 * want) << i;
    }
    EXPECT_GT(kept, 0);  // the shape covers all three cases
    EXPECT_GT(divided, 0);
    EXPECT_GT(smoothed, 0);
}

// Qwen2: q/k/v biases, no reordering (NEOX RoPE). Qwen3: per-head q/k norms (F32), an
// explicit head_dim as key_length/value_length.
TEST(GgufModel, QwenKeepsHfOrderWithBiasesAndHeadNorms) {
    ModelSpec q2 = llama_spec(64, 16, 1, 4, 2, 16, 24, true);
    q2.arch = ModelArch::Qwen2;
    const ParamTable t2(q2);
    const std::vector<float> p2 = distinct_values(t2.total());
    const Written w2 = write_and_read(t2, p2);
    EXPECT_EQ(w2.file.kv.at("general.architecture").s, "qwen2");
    for (const char* n : {"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias"})
        EXPECT_EQ(w2.file.tensor(n).ne.size(), 1u) << n;
    const std::vector<float> q = w2.file.values("blk.0.attn_q.weight");
    EXPECT_TRUE(std::equal(q.begin(), q.end(), hf(t2, p2, Slot::Q, 0)));
    const std::vector<float> kb = w2.file.values("blk.0.attn_k.bias");
    EXPECT_TRUE(std::equal(kb.begin(), kb.end(), hf(t2, p2, Slot::KBias, 0)));
    EXPECT_EQ(w2.file.kv.count("qwen2.rope.dimension_count"), 0u);

    ModelSpec q3 = llama_spec(64, 16, 1, 4, 2, 8, 24, true);
    q3.arch = ModelArch::Qwen3;
    q3.head_dim = 6;  // 4 heads of 6 over d_model 8
    const ParamTable t3(q3);
    const Written w3 = write_and_read(t3, distinct_values(t3.total()));
    const gguf_test::File& f = w3.file;
    EXPECT_EQ(f.kv.at("general.architecture").s, "qwen3");
    EXPECT_EQ(f.tensor("blk.0.attn_q_norm.weight").ne, (std::vector<uint64_t>{6}));
    EXPECT_EQ(f.tensor("blk.0.attn_k_norm.weight").ne, (std::vector<uint64_t>{6}));
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight").ne, (std::vector<uint64_t>{8, 24}));
    EXPECT_EQ(f.tensor("blk.0.attn_output.weight").ne, (std::vector<uint64_t>{24, 8}));
    EXPECT_EQ(u32_key(f, "qwen3.attention.key_length"), 6u);
    EXPECT_EQ(u32_key(f, "qwen3.attention.value_length"), 6u);
    for (const GgufModelTensor& g : w3.model.tensors)
        if (g.name.find("_norm.weight") != std::string::npos) EXPECT_TRUE(g.keep_f32) << g.name;

    ModelSpec bad = q2;  // llama.cpp's qwen2 reads q as [d_model, d_model]
    bad.head_dim = 6;
    const ParamTable tb(bad);
    const std::vector<float> pb(tb.total());
    try {
        gguf_model(tb, pb.data());
        FAIL() << "a Qwen2 with n_head x head_dim != d_model exported";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Unsupported);
    }
}

// Mistral is llama.cpp's llama: reordered q/k; its sliding window is not kept, and a note
// says so.
TEST(GgufModel, MistralIsLlamaWithANoteOnItsWindow) {
    ModelSpec s = llama_spec(64, 16, 1, 2, 1, 16, 24, true);  // hs 8
    s.arch = ModelArch::Mistral;
    s.sliding_window = 8;
    const ParamTable t(s);
    const std::vector<float> p = distinct_values(t.total());
    const Written w = write_and_read(t, p);
    EXPECT_EQ(w.file.kv.at("general.architecture").s, "llama");
    const std::vector<float> k = w.file.values("blk.0.attn_k.weight");
    const float* src = hf(t, p, Slot::K, 0);
    const int order[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // ggml row r of the head: HF row order[r]
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 16; c++) ASSERT_EQ(k[r * 16 + c], src[order[r] * 16 + c]);
    ASSERT_EQ(w.model.notes.size(), 1u);
    EXPECT_NE(w.model.notes[0].find("sliding window"), std::string::npos);
    EXPECT_EQ(w.file.kv.count("llama.attention.sliding_window"), 0u);
}

}  // namespace trt
