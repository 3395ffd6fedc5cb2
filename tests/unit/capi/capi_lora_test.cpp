// LoRA fine-tuning through the C API (issue 19): a Hugging Face folder as the base, [lora] on
// top; the base never changes, the adapters export as a PEFT folder that lora.init_from loads
// back bit for bit, the merged export is the same model without adapters, and checkpoints
// hold only the adapters' optimizer state. For both families.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "trainrt/trainrt.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

class CapiLora : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        dir_ = scratch_dir();
        write_shard(dir_ + "/train.bin", lcg_tokens(3000, 1, 32));
        write_shard(dir_ + "/val.bin", lcg_tokens(600, 2, 32));
        llama_ = std::string(GetParam()) == "llama";
        // The base: a randomly initialised model exported as a Hugging Face folder.
        trainrt_session* s = session(base_toml());
        ASSERT_NE(s, nullptr);
        ASSERT_EQ(trainrt_session_export(s, (dir_ + "/base").c_str(), TRAINRT_DTYPE_F32),
                  TRAINRT_OK) << last_error();
        trainrt_session_destroy(s);
    }
    std::string base_toml() const {
        std::string t = kTinyGpt2Toml;
        if (llama_)
            t.replace(t.find("[model]\n"), 8,
                      "[model]\narch = \"llama\"\nn_kv_head = 1\nd_ff = 24\n"
                      "tie_embeddings = false\n");
        return t;
    }
    // The base folder + [lora] (extra: more [lora] lines).
    std::string lora_toml(const std::string& extra = "") const {
        std::string t = kTinyGpt2Toml;
        const size_t end = t.find("\n[data]");
        t = "[model]\ninit_from = \"base\"\n" + t.substr(end) +
            "\n[lora]\nrank = 3\nalpha = 6.0\ntarget_modules = [\"all-linear\"]\n" + extra;
        return t;
    }
    trainrt_session* session(const std::string& toml) {
        trainrt_config* c = nullptr;
        EXPECT_EQ(trainrt_config_from_string(&c, toml.c_str(), dir_.c_str()), TRAINRT_OK)
            << last_error();
        if (!c) return nullptr;
        trainrt_session* s = nullptr;
        EXPECT_EQ(trainrt_session_create(&s, c), TRAINRT_OK) << last_error();
        trainrt_config_destroy(c);
        return s;
    }
    double forward(trainrt_session* s) {
        const std::vector<uint16_t> t = lcg_tokens(2 * 9, 7, 32);
        const std::vector<int32_t> rows(t.begin(), t.end());
        double loss = 0;
        EXPECT_EQ(trainrt_session_forward(&loss, nullptr, 0, s, rows.data(), 2, 8), TRAINRT_OK)
            << last_error();
        return loss;
    }
    std::string dir_;
    bool llama_ = false;
};

}  // namespace

TEST_P(CapiLora, FineTuneExportReloadAndMerge) {
    trainrt_session* s = session(lora_toml());
    ASSERT_NE(s, nullptr);
    const double before = forward(s);
    // Fresh adapters (B = 0) leave the base model's function unchanged: the same loss as a
    // plain session on the base folder.
    trainrt_session* plain = session(lora_toml().substr(0, lora_toml().find("\n[lora]")));
    ASSERT_NE(plain, nullptr);
    EXPECT_TRUE(same_bits(before, forward(plain))) << before << " vs " << forward(plain);

    for (int i = 0; i < 5; ++i) ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    const double trained = forward(s);
    EXPECT_NE(trained, before);

    // The adapters as a PEFT folder, loaded back by lora.init_from: the same function.
    ASSERT_EQ(trainrt_session_export_adapter(s, (dir_ + "/adapter").c_str(), TRAINRT_DTYPE_F32),
              TRAINRT_OK) << last_error();
    EXPECT_TRUE(fs::exists(dir_ + "/adapter/adapter_model.safetensors"));
    const std::string cfg = slurp(dir_ + "/adapter/adapter_config.json");
    EXPECT_NE(cfg.find("\"peft_type\": \"LORA\""), std::string::npos) << cfg;
    EXPECT_NE(cfg.find("\"r\": 3"), std::string::npos) << cfg;
    EXPECT_NE(cfg.find("\"lora_alpha\": 6"), std::string::npos) << cfg;
    const std::string weights = slurp(dir_ + "/adapter/adapter_model.safetensors");
    const std::string a0 = llama_ ? "base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight"
                                  : "base_model.model.transformer.h.0.mlp.c_proj.lora_B.weight";
    EXPECT_NE(weights.find(a0), std::string::npos);
    trainrt_session* reloaded = session(lora_toml("init_from = \"adapter\"\n"));
    ASSERT_NE(reloaded, nullptr);
    EXPECT_TRUE(same_bits(forward(reloaded), trained)) << forward(reloaded) << " vs " << trained;

    // The merged export is a plain model of the base's family with the same function.
    ASSERT_EQ(trainrt_session_export(s, (dir_ + "/merged").c_str(), TRAINRT_DTYPE_F32),
              TRAINRT_OK) << last_error();
    std::string merged_toml = lora_toml();
    merged_toml = merged_toml.substr(0, merged_toml.find("\n[lora]"));
    merged_toml.replace(merged_toml.find("\"base\""), 6, "\"merged\"");
    trainrt_session* merged = session(merged_toml);
    ASSERT_NE(merged, nullptr);
    EXPECT_NEAR(forward(merged), trained, 1e-5 * trained);

    // A checkpoint of a fine-tune holds the adapters and their moments only (format 3): the
    // frozen base is model.init_from's, named by its digests. Both exports from it match the
    // session's.
    char path[4096];
    size_t needed = 0;
    ASSERT_EQ(trainrt_session_save(path, sizeof path, &needed, s, (dir_ + "/ck").c_str()),
              TRAINRT_OK) << last_error();
    const std::string optim = slurp(dir_ + "/ck/optimizer.safetensors");
    EXPECT_NE(optim.find(".lora_A.weight"), std::string::npos);
    EXPECT_EQ(optim.find(llama_ ? "m.model.embed_tokens.weight" : "m.wte.weight"),
              std::string::npos);
    const std::string model = slurp(dir_ + "/ck/model.safetensors");
    EXPECT_NE(model.find(".lora_B.weight"), std::string::npos);
    EXPECT_EQ(model.find(llama_ ? "model.embed_tokens.weight" : "wte.weight"), std::string::npos);
    const std::string state = slurp(dir_ + "/ck/state.json");
    EXPECT_NE(state.find("\"format_version\": 3"), std::string::npos) << state;
    EXPECT_NE(state.find("\"frozen_base\""), std::string::npos) << state;
    EXPECT_LT(fs::file_size(dir_ + "/ck/model.safetensors"),
              fs::file_size(dir_ + "/base/model.safetensors") / 2);
    ASSERT_EQ(trainrt_checkpoint_export_adapter((dir_ + "/ck").c_str(),
                                                (dir_ + "/adapter_ck").c_str(), TRAINRT_DTYPE_F32),
              TRAINRT_OK) << last_error();
    EXPECT_EQ(slurp(dir_ + "/adapter_ck/adapter_model.safetensors"), weights);
    ASSERT_EQ(trainrt_checkpoint_export((dir_ + "/ck").c_str(), (dir_ + "/merged_ck").c_str(),
                                        TRAINRT_DTYPE_F32),
              TRAINRT_OK) << last_error();
    EXPECT_EQ(slurp(dir_ + "/merged_ck/model.safetensors"),
              slurp(dir_ + "/merged/model.safetensors"));
    EXPECT_EQ(slurp(dir_ + "/merged_ck/config.json"), slurp(dir_ + "/merged/config.json"));

    // Resume: the same next steps, bit for bit.
    trainrt_session* resumed = session(lora_toml());
    ASSERT_EQ(trainrt_session_load(resumed, (dir_ + "/ck").c_str()), TRAINRT_OK) << last_error();
    for (int i = 0; i < 2; ++i) {
        trainrt_step_result a, b;
        trainrt_step_result_init(&a);
        trainrt_step_result_init(&b);
        ASSERT_EQ(trainrt_session_step(&a, s), TRAINRT_OK);
        ASSERT_EQ(trainrt_session_step(&b, resumed), TRAINRT_OK);
        EXPECT_TRUE(same_bits(a.loss, b.loss)) << a.loss << " vs " << b.loss;
    }
    // Another base under the same [lora] (here the merged model): the checkpoint refuses it.
    std::string other = lora_toml();
    other.replace(other.find("\"base\""), 6, "\"merged\"");
    trainrt_session* wrong = session(other);
    ASSERT_NE(wrong, nullptr);
    EXPECT_EQ(trainrt_session_load(wrong, (dir_ + "/ck").c_str()), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("holds only the tensors that trained"), std::string::npos)
        << last_error();
    for (trainrt_session* x : {s, reloaded, merged, resumed, plain, wrong})
        trainrt_session_destroy(x);
}

TEST_P(CapiLora, AdapterMismatchesAreConfigErrors) {
    trainrt_session* s = session(lora_toml());
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_export_adapter(s, (dir_ + "/adapter").c_str(), TRAINRT_DTYPE_F32),
              TRAINRT_OK) << last_error();
    trainrt_session_destroy(s);
    struct Bad {
        std::string toml, word;
    };
    const Bad bad[] = {
        {"[lora]\nrank = 4\nalpha = 6.0\ntarget_modules = [\"all-linear\"]\n", "lora.rank = 4"},
        {"[lora]\nrank = 3\nalpha = 8.0\ntarget_modules = [\"all-linear\"]\n", "lora.alpha"},
        {"[lora]\nrank = 3\nalpha = 6.0\n", "lora.target_modules"},
        {"[lora]\nrank = 3\nalpha = 6.0\ntarget_modules = [\"no_such_proj\"]\n",
         "\"no_such_proj\" names no linear layer"},
    };
    std::string toml = lora_toml();
    toml = toml.substr(0, toml.find("\n[lora]")) + "\n";
    for (const Bad& b : bad) {
        SCOPED_TRACE(b.toml);
        trainrt_config* c = nullptr;
        ASSERT_EQ(trainrt_config_from_string(
                      &c, (toml + b.toml + "init_from = \"adapter\"\n").c_str(), dir_.c_str()),
                  TRAINRT_OK) << last_error();
        trainrt_session* x = nullptr;
        EXPECT_EQ(trainrt_session_create(&x, c), TRAINRT_ERR_CONFIG);
        EXPECT_NE(last_error().find(b.word), std::string::npos) << last_error();
        EXPECT_EQ(x, nullptr);
        trainrt_config_destroy(c);
    }
    // [lora] keys without a rank are refused by the config itself.
    trainrt_config* c = nullptr;
    EXPECT_EQ(trainrt_config_from_string(&c, (toml + "[lora]\ninit_from = \"adapter\"\n").c_str(),
                                         dir_.c_str()),
              TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("lora.init_from: an adapter folder needs lora.rank"),
              std::string::npos) << last_error();
}

INSTANTIATE_TEST_SUITE_P(Families, CapiLora, ::testing::Values("gpt2", "llama"));
