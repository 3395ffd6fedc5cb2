// train.trainable (issue 19): the name patterns, the compact gradient layout they give the
// parameter table, and the decoder's backward with frozen tensors — the trainable tensors'
// gradients are bit for bit those of a run where everything trains (same kernels; frozen
// tensors only skip their weight products), on both families and both CPU precisions.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/decoder.h"
#include "model/model_weights.h"
#include "model/trainable.h"

using namespace trt;

namespace {

std::string config_error(const ParamTable& table, const std::vector<std::string>& patterns) {
    try {
        trainable_flags(table, patterns);
    } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::Config) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

std::vector<std::string> trained_names(const ParamTable& table,
                                       const std::vector<std::string>& patterns) {
    const std::vector<bool> flags = trainable_flags(table, patterns);
    std::vector<std::string> out;
    for (size_t i = 0; i < flags.size(); ++i)
        if (flags[i]) out.push_back(table.tensors()[i].name);
    return out;
}

}  // namespace

TEST(TrainablePatterns, GlobMatchesWholeNames) {
    EXPECT_TRUE(name_matches("h.11.*", "h.11.attn.c_attn.weight"));
    EXPECT_FALSE(name_matches("h.1.*", "h.11.attn.c_attn.weight"));
    EXPECT_TRUE(name_matches("*.mlp.*", "h.0.mlp.c_fc.bias"));
    EXPECT_TRUE(name_matches("*", "anything"));
    EXPECT_TRUE(name_matches("ln_f.*", "ln_f.bias"));
    EXPECT_FALSE(name_matches("ln_f", "ln_f.bias"));  // whole names: no implicit prefix
    EXPECT_TRUE(name_matches("h.?.ln_1.weight", "h.3.ln_1.weight"));
    EXPECT_FALSE(name_matches("h.?.ln_1.weight", "h.13.ln_1.weight"));
    EXPECT_TRUE(name_matches("*q_proj*", "model.layers.0.self_attn.q_proj.weight"));
    EXPECT_TRUE(name_matches("a**b", "ab"));
    EXPECT_FALSE(name_matches("", "a"));
    EXPECT_TRUE(name_matches("", ""));
    // Backtracking over many stars stays fast and right.
    EXPECT_FALSE(name_matches("*a*a*a*a*a*a*a*a*b", std::string(200, 'a')));
}

TEST(TrainablePatterns, SelectsTensorsAndRefusesWhatCannotBe) {
    const ParamTable gpt2(gpt2_spec(9, 6, 2, 2, 8));
    EXPECT_EQ(trained_names(gpt2, {}).size(), gpt2.tensors().size());
    EXPECT_EQ(trained_names(gpt2, {"h.1.*", "ln_f.*"}),
              (std::vector<std::string>{
                  "h.1.ln_1.weight", "h.1.ln_1.bias", "h.1.attn.c_attn.weight",
                  "h.1.attn.c_attn.bias", "h.1.attn.c_proj.weight", "h.1.attn.c_proj.bias",
                  "h.1.ln_2.weight", "h.1.ln_2.bias", "h.1.mlp.c_fc.weight", "h.1.mlp.c_fc.bias",
                  "h.1.mlp.c_proj.weight", "h.1.mlp.c_proj.bias", "ln_f.weight", "ln_f.bias"}));
    const std::string e = config_error(gpt2, {"h.1.*", "transformer.h.1.*"});
    EXPECT_NE(e.find("train.trainable: the pattern \"transformer.h.1.*\" matches no tensor of "
                     "the gpt2 model"), std::string::npos) << e;
    EXPECT_NE(e.find("\"wte.weight\""), std::string::npos) << e;

    // '[' is an ordinary character (no classes), so this matches nothing.
    const ParamTable llama(llama_spec(9, 6, 2, 4, 2, 8, 12, false));
    EXPECT_NE(config_error(llama, {"*.self_attn.[qkv]_proj.*"}).find("matches no tensor"),
              std::string::npos);
}

TEST(TrainablePatterns, FusedGroupsTrainTogether) {
    const ParamTable llama(llama_spec(9, 6, 2, 4, 2, 8, 12, false));
    std::string e = config_error(llama, {"*.q_proj.*", "*.v_proj.*"});
    EXPECT_NE(e.find("\"model.layers.0.self_attn.q_proj.weight\" trains but "
                     "\"model.layers.0.self_attn.k_proj.weight\" is frozen"),
              std::string::npos) << e;
    e = config_error(llama, {"*.up_proj.*"});
    EXPECT_NE(e.find("\"model.layers.0.mlp.up_proj.weight\" trains but "
                     "\"model.layers.0.mlp.gate_proj.weight\" is frozen"),
              std::string::npos) << e;
    EXPECT_EQ(trained_names(llama, {"*.self_attn.*", "*gate_proj*", "*up_proj*"}).size(), 12u);
    // Qwen2's q/k/v biases are one fused bias too; the weights may freeze without them.
    ModelSpec qs = llama_spec(9, 6, 2, 4, 2, 8, 12, false);
    qs.arch = ModelArch::Qwen2;
    const ParamTable qwen2(qs);
    e = config_error(qwen2, {"*.q_proj.bias"});
    EXPECT_NE(e.find("\"model.layers.0.self_attn.q_proj.bias\" trains but "
                     "\"model.layers.0.self_attn.k_proj.bias\" is frozen"),
              std::string::npos) << e;
    EXPECT_EQ(trained_names(qwen2, {"*_proj.bias"}).size(), 6u);
}

TEST(TrainableLayout, CompactGradientOffsets) {
    ParamTable t(gpt2_spec(9, 6, 2, 2, 8));
    EXPECT_TRUE(t.all_trainable());
    EXPECT_EQ(t.grad_total(), t.total());
    for (const ParamTensor& p : t.tensors()) EXPECT_EQ(p.grad_offset, p.offset) << p.name;
    // Freeze the embeddings (wte with its padding rows) and block 0.
    t.set_trainable(trainable_flags(t, {"h.1.*", "ln_f.*"}));
    EXPECT_FALSE(t.all_trainable());
    size_t next = 0, params = 0;
    for (const ParamTensor& p : t.tensors()) {
        if (!p.trainable) continue;
        EXPECT_EQ(p.grad_offset, next) << p.name;  // in table order, back to back
        next += p.numel + p.padding;
        params += p.numel;
    }
    EXPECT_EQ(t.grad_total(), next);
    EXPECT_EQ(t.num_trainable_params(), params);
    EXPECT_LT(t.grad_total(), t.total() / 2);  // the tied 128-row wte dominates
    EXPECT_THROW(t.set_trainable({true}), Error);
}

namespace {

struct FrozenCase {
    const char* name;
    ModelSpec spec;
    std::vector<std::string> trainable;
    Precision precision;
};

void PrintTo(const FrozenCase& c, std::ostream* os) { *os << c.name; }

class DecoderFrozen : public ::testing::TestWithParam<FrozenCase> {};

// Forward+backward of one micro-batch on a decoder with the given patterns; returns the
// gradient of every trainable tensor by name order of the table (compact buffer as is).
std::vector<float> trainable_grads(const FrozenCase& c, const std::vector<std::string>& patterns,
                                   std::vector<float>* losses) {
    const int B = 2, T = 5;
    const auto be = make_cpu_backend(1, c.precision);
    Decoder model(*be, c.spec, B, T, patterns);
    std::vector<float> p(model.table().total());
    init_random(model.table(), 11, p.data());
    be->copy_to_device(model.params(), p.data(), p.size() * sizeof(float));
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> tok(0, c.spec.V - 1);
    std::vector<int32_t> in(B * T), tg(B * T);
    for (int i = 0; i < B * T; ++i) in[i] = tok(rng), tg[i] = tok(rng);
    model.zero_grads();
    model.forward_backward(in.data(), tg.data(), B, T, 1.0f / (B * T));
    losses->assign(model.losses(), model.losses() + B * T);
    // The gradients of the tensors that train under c.trainable, from this run's layout.
    ParamTable want(c.spec);
    want.set_trainable(trainable_flags(want, c.trainable));
    std::vector<float> out;
    for (const ParamTensor& t : model.table().tensors()) {
        const ParamTensor* w = want.find(t.name);
        if (!w->trainable) continue;
        EXPECT_TRUE(t.trainable) << t.name;
        const float* g = model.grads() + t.grad_offset;
        out.insert(out.end(), g, g + t.numel);
    }
    return out;
}

}  // namespace

TEST_P(DecoderFrozen, TrainableGradientsEqualTheFullBackwardBitForBit) {
    const FrozenCase& c = GetParam();
    std::vector<float> loss_all, loss_frozen;
    const std::vector<float> all = trainable_grads(c, {}, &loss_all);
    const std::vector<float> frozen = trainable_grads(c, c.trainable, &loss_frozen);
    ASSERT_EQ(all.size(), frozen.size());
    ASSERT_GT(all.size(), 0u);
    EXPECT_EQ(std::memcmp(loss_all.data(), loss_frozen.data(), loss_all.size() * 4), 0);
    EXPECT_EQ(std::memcmp(all.data(), frozen.data(), all.size() * 4), 0);
    double norm = 0;
    for (float g : frozen) norm += double(g) * g;
    EXPECT_GT(norm, 0.0);  // the trainable tensors did get a gradient
}

INSTANTIATE_TEST_SUITE_P(
    Families, DecoderFrozen,
    ::testing::Values(
        FrozenCase{"gpt2_top_fp32", gpt2_spec(9, 6, 3, 2, 8), {"h.2.*", "ln_f.*"}, Precision::Fp32},
        FrozenCase{"gpt2_top_bf16", gpt2_spec(9, 6, 3, 2, 8), {"h.2.*", "ln_f.*"}, Precision::Bf16},
        FrozenCase{"gpt2_wpe_mlp_fp32", gpt2_spec(9, 6, 2, 2, 8), {"wpe.weight", "*.mlp.*"},
                   Precision::Fp32},
        FrozenCase{"gpt2_wte_only_fp32", gpt2_spec(9, 6, 2, 2, 8), {"wte.weight"},
                   Precision::Fp32},
        FrozenCase{"llama_attn_fp32", llama_spec(9, 6, 2, 4, 2, 8, 12, false),
                   {"*.self_attn.*"}, Precision::Fp32},
        FrozenCase{"llama_head_bf16", llama_spec(9, 6, 2, 4, 2, 8, 12, false),
                   {"lm_head.weight", "model.layers.1.*"}, Precision::Bf16},
        FrozenCase{"qwen2_biases_fp32", [] {
                       ModelSpec s = llama_spec(9, 6, 2, 4, 2, 8, 12, false);
                       s.arch = ModelArch::Qwen2;
                       return s;
                   }(), {"*_proj.bias"}, Precision::Fp32}),
    [](const ::testing::TestParamInfo<FrozenCase>& i) { return i.param.name; });
