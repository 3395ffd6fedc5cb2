// LoRA's model side (issue 19): which linear layers [lora] selects (PEFT's target_modules
// rule), the adapter tensors the table gains (names, shapes, place), their fresh init, the
// merge into the base weights, and the PEFT folder round trip. The training math itself is
// held against an independent PyTorch LoRA by tests/reference (reference.pytorch_*_lora_*).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "core/error.h"
#include "io/fs_util.h"
#include "model/decoder.h"
#include "model/lora.h"
#include "model/model_weights.h"
#include "model/peft_adapter.h"

using namespace trt;

namespace {

LoraConfig lora(int64_t rank, std::vector<std::string> targets, double alpha = 8.0) {
    LoraConfig c;
    c.rank = rank;
    c.alpha = alpha;
    c.target_modules = std::move(targets);
    return c;
}

std::vector<std::string> adapted(const ModelSpec& s, const LoraSpec& l) {
    ModelSpec with = s;
    with.lora = l;
    const ParamTable t(with);
    std::vector<std::string> out;
    for (const ParamTensor& p : t.tensors())
        if (p.role == ParamRole::LoraA) out.push_back(p.name.substr(0, p.name.rfind(".lora_A")));
    return out;
}

std::string config_error(const LoraConfig& c, const ModelSpec& s) {
    try {
        lora_spec(c, s);
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config);
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

}  // namespace

TEST(LoraTargets, PeftModuleMatching) {
    EXPECT_TRUE(module_matches("c_attn", "h.0.attn.c_attn"));
    EXPECT_TRUE(module_matches("attn.c_attn", "h.0.attn.c_attn"));
    EXPECT_TRUE(module_matches("h.0.attn.c_attn", "h.0.attn.c_attn"));
    EXPECT_FALSE(module_matches("attn", "h.0.attn.c_attn"));
    EXPECT_FALSE(module_matches("_attn", "h.0.attn.c_attn"));  // only after a '.'
    EXPECT_FALSE(module_matches("", "h.0.attn.c_attn"));
    EXPECT_FALSE(module_matches("x.h.0.attn.c_attn", "h.0.attn.c_attn"));
}

TEST(LoraTargets, FamilyDefaultsAllLinearAndErrors) {
    const ModelSpec gpt2 = gpt2_spec(9, 6, 2, 2, 8);
    EXPECT_EQ(adapted(gpt2, lora_spec(lora(2, {}), gpt2)),
              (std::vector<std::string>{"h.0.attn.c_attn", "h.1.attn.c_attn"}));
    EXPECT_EQ(adapted(gpt2, lora_spec(lora(2, {"c_proj"}), gpt2)),
              (std::vector<std::string>{"h.0.attn.c_proj", "h.0.mlp.c_proj", "h.1.attn.c_proj",
                                        "h.1.mlp.c_proj"}));
    EXPECT_EQ(adapted(gpt2, lora_spec(lora(2, {"h.1.mlp.c_fc"}), gpt2)),
              (std::vector<std::string>{"h.1.mlp.c_fc"}));
    EXPECT_EQ(adapted(gpt2, lora_spec(lora(2, {"all-linear"}), gpt2)).size(), 8u);
    const ModelSpec llama = llama_spec(9, 6, 2, 4, 2, 8, 12, false);
    EXPECT_EQ(adapted(llama, lora_spec(lora(2, {}), llama)),
              (std::vector<std::string>{
                  "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                  "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj"}));
    EXPECT_EQ(adapted(llama, lora_spec(lora(2, {"all-linear"}), llama)).size(), 14u);
    EXPECT_FALSE(lora_spec(lora(0, {}), llama).on());
    const std::string e = config_error(lora(2, {"q_proj"}), gpt2);
    EXPECT_NE(e.find("lora.target_modules: \"q_proj\" names no linear layer of the gpt2 model"),
              std::string::npos) << e;
    EXPECT_NE(e.find("\"h.0.attn.c_attn\""), std::string::npos) << e;
}

TEST(LoraTable, AdaptersFollowTheBaseWithPeftShapes) {
    const ModelSpec base = llama_spec(9, 6, 2, 4, 2, 8, 12, false);
    ModelSpec s = base;
    s.lora = lora_spec(lora(3, {"k_proj", "up_proj"}, 6.0), s);
    EXPECT_FLOAT_EQ(s.lora.scale(), 2.0f);
    const ParamTable plain(base), t(s);
    // The base tensors keep their offsets; the adapters come after them.
    for (const ParamTensor& p : plain.tensors()) EXPECT_EQ(t.find(p.name)->offset, p.offset);
    EXPECT_EQ(t.num_params(), plain.num_params() + 2 * (3 * 8 + 4 * 3) + 2 * (3 * 8 + 12 * 3));
    const ParamTensor* a = t.lora_a(Slot::K, 1);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->name, "model.layers.1.self_attn.k_proj.lora_A.weight");
    EXPECT_EQ(a->shape, (std::vector<int64_t>{3, 8}));  // [r, in]
    EXPECT_EQ((a + 1)->name, "model.layers.1.self_attn.k_proj.lora_B.weight");
    EXPECT_EQ((a + 1)->shape, (std::vector<int64_t>{4, 3}));  // [out = NKV * hs, r]
    EXPECT_GE(a->offset, plain.total());
    EXPECT_EQ(t.lora_a(Slot::Q, 1), nullptr);
    EXPECT_EQ(t.lora_a(Slot::Up, 0)->shape, (std::vector<int64_t>{3, 8}));
    // Where each adapted layer's output sits in its fused matmul.
    EXPECT_EQ(linear_shape(s, Slot::K).column, 8);   // after NH * hs = 8 q columns
    EXPECT_EQ(linear_shape(s, Slot::V).column, 12);
    EXPECT_EQ(linear_shape(s, Slot::Up).column, 12);  // after F = 12 gate columns
    EXPECT_EQ(linear_shape(s, Slot::Up).fused_width, 24);
}

TEST(LoraInit, PeftInitIsDeterministicAndStartsAtTheBase) {
    ModelSpec s = gpt2_spec(9, 6, 2, 2, 8);
    s.lora = lora_spec(lora(4, {"all-linear"}), s);
    const ParamTable t(s);
    std::vector<float> a(t.total(), 5.0f), b(t.total(), 7.0f);
    init_lora(t, 11, a.data());
    init_lora(t, 11, b.data());
    for (const ParamTensor& p : t.tensors()) {
        if (p.role == ParamRole::LoraB)
            for (size_t i = 0; i < p.numel; ++i) ASSERT_EQ(a[p.offset + i], 0.0f) << p.name;
        if (p.role != ParamRole::LoraA) continue;
        const float bound = 1.0f / std::sqrt(static_cast<float>(p.shape[1]));
        float lo = 1, hi = -1;
        for (size_t i = 0; i < p.numel; ++i) {
            ASSERT_EQ(a[p.offset + i], b[p.offset + i]);
            lo = std::min(lo, a[p.offset + i]);
            hi = std::max(hi, a[p.offset + i]);
        }
        EXPECT_GE(lo, -bound);
        EXPECT_LE(hi, bound);
        EXPECT_LT(lo, -bound / 4) << p.name;  // spread over the interval
        EXPECT_GT(hi, bound / 4) << p.name;
    }
    EXPECT_EQ(a[0], 5.0f);  // the base is not touched
}

// The merged weights compute the same function as base + adapters (a fp32 forward each).
TEST(LoraMerge, MergedBaseEqualsTheAdaptedModel) {
    for (const bool llama : {false, true}) {
        SCOPED_TRACE(llama ? "llama" : "gpt2");
        ModelSpec s = llama ? llama_spec(9, 6, 2, 4, 2, 8, 12, false) : gpt2_spec(9, 6, 2, 2, 8);
        s.lora = lora_spec(lora(3, {"all-linear"}, 5.0), s);
        const auto be = make_cpu_backend(1);
        Decoder adapted_model(*be, s, 2, 5);
        std::vector<float> p(adapted_model.table().total());
        init_random(adapted_model.table(), 3, p.data());
        std::mt19937 rng(4);
        std::normal_distribution<float> n(0.0f, 0.3f);
        for (const ParamTensor& t : adapted_model.table().tensors())
            if (t.role == ParamRole::LoraB)
                for (size_t i = 0; i < t.numel; ++i) p[t.offset + i] = n(rng);  // B != 0
        be->copy_to_device(adapted_model.params(), p.data(), p.size() * 4);
        const std::vector<float> merged = merge_lora(adapted_model.table(), p.data());
        Decoder plain(*be, base_spec(s), 2, 5);
        ASSERT_EQ(merged.size(), plain.table().total());
        be->copy_to_device(plain.params(), merged.data(), merged.size() * 4);
        std::vector<int32_t> in(10), tg(10);
        for (int i = 0; i < 10; ++i) in[i] = (i * 7) % 9, tg[i] = (i * 5 + 1) % 9;
        adapted_model.forward(in.data(), tg.data(), 2, 5);
        plain.forward(in.data(), tg.data(), 2, 5);
        const double a = adapted_model.mean_loss(2, 5), b = plain.mean_loss(2, 5);
        EXPECT_NEAR(a, b, 1e-5 * std::fabs(a));
        // ... and the adapters changed the function (B != 0).
        std::vector<float> base_only(p.begin(), p.begin() + static_cast<long>(merged.size()));
        be->copy_to_device(plain.params(), base_only.data(), base_only.size() * 4);
        plain.forward(in.data(), tg.data(), 2, 5);
        EXPECT_GT(std::fabs(plain.mean_loss(2, 5) - a), 1e-4);
    }
}

TEST(PeftAdapter, FolderRoundTripAndRefusals) {
    const std::string dir = std::string(TRAINRT_TEST_TMP) + "/peft_round_trip";
    std::filesystem::remove_all(dir);
    ModelSpec s = gpt2_spec(9, 6, 2, 2, 8);
    s.lora = lora_spec(lora(2, {"c_attn", "mlp.c_proj"}, 4.0), s);
    const ParamTable t(s);
    std::vector<float> p(t.total());
    init_random(t, 1, p.data());
    for (size_t i = 0; i < p.size(); ++i) p[i] += 0.001f * static_cast<float>(i % 97);
    write_peft_adapter(t, p.data(), dir, "base/model");
    EXPECT_EQ(peft_tensor_name(s, "h.0.attn.c_attn.lora_A.weight"),
              "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight");
    std::vector<float> q(t.total(), 0.0f);
    load_peft_adapter(t, dir, q.data());
    for (const ParamTensor& x : t.tensors()) {
        const bool adapter = x.role == ParamRole::LoraA || x.role == ParamRole::LoraB;
        for (size_t i = 0; i < x.numel; ++i)
            ASSERT_EQ(q[x.offset + i], adapter ? p[x.offset + i] : 0.0f) << x.name;
    }
    // Another rank, alpha or set of modules than the folder's: a config error, nothing read.
    auto refused = [&](LoraConfig c, const std::string& word) {
        ModelSpec o = base_spec(s);
        o.lora = lora_spec(c, o);
        const ParamTable ot(o);
        std::vector<float> buf(ot.total(), 3.0f);
        try {
            load_peft_adapter(ot, dir, buf.data());
            ADD_FAILURE() << "loaded";
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), Status::Config) << e.what();
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
        }
        for (float v : buf) ASSERT_EQ(v, 3.0f);
    };
    refused(lora(4, {"c_attn", "mlp.c_proj"}, 4.0), "set lora.rank = 2");
    refused(lora(2, {"c_attn", "mlp.c_proj"}, 8.0), "set lora.alpha = 4");
    refused(lora(2, {"c_attn"}, 4.0), "lora.target_modules does not select");
    refused(lora(2, {"c_attn", "c_proj"}, 4.0), "it does not adapt h.0.attn.c_proj");

    // What disagrees is shown with every digit it needs ("r = 2 but lora.rank = 2" said
    // nothing), and a key twice is refused: PEFT reads the last "r", this reader the first.
    const std::string cfg_path = dir + "/" + kPeftConfigFile;
    const std::string cfg = read_small_file(cfg_path, 1 << 20);
    auto edited = [&](const std::string& from, const std::string& to, Status status,
                      const std::string& word) {
        std::string text = cfg;
        ASSERT_NE(text.find(from), std::string::npos) << text;
        text.replace(text.find(from), from.size(), to);
        write_file_atomic(cfg_path, text);
        std::vector<float> buf(t.total(), 3.0f);
        try {
            load_peft_adapter(t, dir, buf.data());
            ADD_FAILURE() << "loaded with " << to;
        } catch (const Error& e) {
            EXPECT_EQ(e.status(), status) << e.what();
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
        }
    };
    edited("\"r\": 2,", "\"r\": 2.0000000001,", Status::Format,
           "adapter_config.json: \"r\" = 2.0000000001 is not a rank");
    edited("\"lora_alpha\": 4,", "\"lora_alpha\": 4.000001,", Status::Config,
           "the adapter has lora_alpha = 4.000001 but lora.alpha = 4; set lora.alpha = 4.000001");
    edited("\"r\": 2,", "\"r\": 2, \"r\": 4,", Status::Format, "duplicate key \"r\"");
    write_file_atomic(cfg_path, cfg);
    load_peft_adapter(t, dir, q.data());
}

// Writing over an adapter folder never leaves a mixed pair: the old config goes before the
// new weights land. What a crash between the two would leave (weights without a config) is
// refused by name, and a complete rewrite loads as the new adapter.
TEST(PeftAdapter, RewritingAFolderReplacesThePair) {
    const std::string dir = std::string(TRAINRT_TEST_TMP) + "/peft_rewrite";
    std::filesystem::remove_all(dir);
    ModelSpec s = gpt2_spec(9, 6, 1, 2, 8);
    s.lora = lora_spec(lora(2, {"c_attn"}, 4.0), s);
    const ParamTable t(s);
    std::vector<float> p(t.total(), 0.25f);
    write_peft_adapter(t, p.data(), dir, "base");
    ModelSpec s8 = base_spec(s);
    s8.lora = lora_spec(lora(2, {"c_attn"}, 8.0), s8);
    const ParamTable t8(s8);
    std::vector<float> p8(t8.total(), -0.5f);
    write_peft_adapter(t8, p8.data(), dir, "base");
    std::vector<float> q(t8.total(), 0.0f);
    load_peft_adapter(t8, dir, q.data());
    for (const ParamTensor& x : t8.tensors())
        if (x.role == ParamRole::LoraA || x.role == ParamRole::LoraB)
            ASSERT_EQ(q[x.offset], -0.5f) << x.name;
    std::filesystem::remove(dir + "/" + kPeftConfigFile);  // the state a crash could leave
    try {
        load_peft_adapter(t8, dir, q.data());
        ADD_FAILURE() << "an adapter without its config loaded";
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Io) << e.what();
        EXPECT_NE(std::string(e.what()).find(kPeftConfigFile), std::string::npos) << e.what();
    }
}
