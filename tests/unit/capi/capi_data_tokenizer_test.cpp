// data.tokenizer through the public header: checked when a session starts (it must load and
// fit model.vocab_size), recorded in checkpoints, written into every Hugging Face export with
// its companions, and the default when model.init_from is a model folder holding one.
#include <trainrt/trainrt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>
#include <fstream>
#include <sstream>
#include <string>

#include "capi/capi_test_util.h"

namespace {

namespace fs = std::filesystem;

// A one-layer GPT-2 wide enough for the test tokenizer's 301 ids; no data (sessions here
// only start, save and export).
constexpr const char* kToml = R"(
[model]
vocab_size = 320
context_length = 16
n_layer = 1
n_head = 2
d_model = 16

[train]
batch_size = 1
seq_len = 8
eval_every = 0

[runtime]
threads = 1
)";

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string get_string(trainrt_config* c, const char* key) {
    size_t needed = 0;
    EXPECT_EQ(trainrt_config_get_string(nullptr, 0, &needed, c, key), TRAINRT_OK) << last_error();
    std::string s(needed + 1, '\0');
    EXPECT_EQ(trainrt_config_get_string(s.data(), s.size(), &needed, c, key), TRAINRT_OK);
    s.resize(needed);
    return s;
}

class CapiDataTokenizer : public CapiSessionTest {
protected:
    void SetUp() override {
        CapiSessionTest::SetUp();
        tok_dir_ = dir_ + "/tok";
        fs::create_directories(tok_dir_);
        std::ofstream(tok_dir_ + "/tokenizer.json") << tiny_tokenizer_json();
        std::ofstream(tok_dir_ + "/tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    }
    // trainrt_session_create's status for kToml with `sets` (the session is kept if made).
    trainrt_status create_status(const ConfigSets& sets) {
        trainrt_config* c = config_from(kToml, sets);
        if (c == nullptr) return TRAINRT_ERR_INTERNAL;
        trainrt_session* s = nullptr;
        const trainrt_status st = trainrt_session_create(&s, c);
        trainrt_config_destroy(c);
        if (s != nullptr) sessions_.push_back(s);
        return st;
    }
    std::string tok_dir_;
};

TEST_F(CapiDataTokenizer, IsCheckedWhenASessionStarts) {
    EXPECT_EQ(create_status({{"data.tokenizer", "\"tok\""}}), TRAINRT_OK) << last_error();
    // Ids beyond the model's vocabulary: the tokenizer the data was prepared with cannot be it.
    EXPECT_EQ(create_status({{"data.tokenizer", "\"tok\""}, {"model.vocab_size", "300"}}),
              TRAINRT_ERR_CONFIG);
    EXPECT_TRUE(names(last_error(), "data.tokenizer")) << last_error();
    EXPECT_TRUE(names(last_error(), "model.vocab_size")) << last_error();
    // Missing, a folder without tokenizer.json, a file that is not a tokenizer: named.
    EXPECT_NE(create_status({{"data.tokenizer", "\"nowhere/tokenizer.json\""}}), TRAINRT_OK);
    EXPECT_TRUE(names(last_error(), "data.tokenizer")) << last_error();
    fs::create_directories(dir_ + "/empty");
    EXPECT_NE(create_status({{"data.tokenizer", "\"empty\""}}), TRAINRT_OK);
    EXPECT_TRUE(names(last_error(), "tokenizer.json")) << last_error();
    std::ofstream(dir_ + "/bad.json") << "{\"model\": ";
    EXPECT_NE(create_status({{"data.tokenizer", "\"bad.json\""}}), TRAINRT_OK);
    EXPECT_TRUE(names(last_error(), "bad.json")) << last_error();
}

TEST_F(CapiDataTokenizer, ExportsWriteItAndCheckpointsRecordIt) {
    trainrt_session* s = open_from(kToml, {{"data.tokenizer", "\"tok\""}});
    ASSERT_NE(s, nullptr);
    const std::string out = dir_ + "/hf";
    ASSERT_EQ(trainrt_session_export(s, out.c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(slurp(out + "/tokenizer.json"), tiny_tokenizer_json());
    EXPECT_EQ(slurp(out + "/tokenizer_config.json"), R"({"eos_token": "<|eot|>"})");
    EXPECT_FALSE(fs::exists(out + "/special_tokens_map.json"));  // none beside the source

    const std::string ckpt = dir_ + "/ckpt";
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    trainrt_config* stored = nullptr;
    ASSERT_EQ(trainrt_config_from_checkpoint(&stored, ckpt.c_str()), TRAINRT_OK) << last_error();
    EXPECT_EQ(fs::path(get_string(stored, "data.tokenizer")), fs::path(tok_dir_));
    trainrt_config_destroy(stored);
    const std::string out2 = dir_ + "/hf2";
    ASSERT_EQ(trainrt_checkpoint_export(ckpt.c_str(), out2.c_str(), TRAINRT_DTYPE_BF16),
              TRAINRT_OK) << last_error();
    EXPECT_EQ(slurp(out2 + "/tokenizer.json"), tiny_tokenizer_json());
    EXPECT_EQ(slurp(out2 + "/tokenizer_config.json"), R"({"eos_token": "<|eot|>"})");

    // Gone by export time: refused before anything is written.
    fs::remove_all(tok_dir_);
    const std::string out3 = dir_ + "/hf3";
    EXPECT_NE(trainrt_checkpoint_export(ckpt.c_str(), out3.c_str(), TRAINRT_DTYPE_F32),
              TRAINRT_OK);
    EXPECT_TRUE(names(last_error(), "data.tokenizer")) << last_error();
    EXPECT_FALSE(fs::exists(out3 + "/model.safetensors"));
}

// A tokenizer.json alone (`trainrt tokenizer train` writes no tokenizer_config.json): both
// exports write one, for transformers' AutoTokenizer (issue 38): the fast tokenizer class, the
// end-of-text token as bos/eos (none when it has none), the model's context as
// model_max_length.
TEST_F(CapiDataTokenizer, ABareTokenizerJsonGetsATokenizerConfig) {
    const std::string bare = dir_ + "/bare";
    fs::create_directories(bare);
    std::string json = tiny_tokenizer_json();
    json.replace(json.find("<|eot|>"), 7, "<|endoftext|>");
    std::ofstream(bare + "/tok.json") << json;
    std::ofstream(dir_ + "/plain.json") << tiny_tokenizer_json();  // no known end-of-text
    trainrt_session* s = open_from(kToml, {{"data.tokenizer", "\"bare/tok.json\""}});
    ASSERT_NE(s, nullptr);
    const std::string want =
        "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n"
        "  \"bos_token\": \"<|endoftext|>\",\n  \"eos_token\": \"<|endoftext|>\",\n"
        "  \"model_max_length\": 16,\n  \"clean_up_tokenization_spaces\": false\n}\n";
    const std::string out = dir_ + "/hf";
    ASSERT_EQ(trainrt_session_export(s, out.c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(slurp(out + "/tokenizer.json"), json);
    EXPECT_EQ(slurp(out + "/tokenizer_config.json"), want);
    EXPECT_FALSE(fs::exists(bare + "/tokenizer_config.json"));  // the source is left alone
    const std::string ckpt = dir_ + "/ckpt";
    ASSERT_EQ(trainrt_session_save(nullptr, 0, nullptr, s, ckpt.c_str()), TRAINRT_OK)
        << last_error();
    const std::string out2 = dir_ + "/hf2";
    ASSERT_EQ(trainrt_checkpoint_export(ckpt.c_str(), out2.c_str(), TRAINRT_DTYPE_F32),
              TRAINRT_OK) << last_error();
    EXPECT_EQ(slurp(out2 + "/tokenizer_config.json"), want);

    trainrt_session* plain = open_from(kToml, {{"data.tokenizer", "\"plain.json\""}});
    ASSERT_NE(plain, nullptr);
    const std::string out3 = dir_ + "/hf3";
    ASSERT_EQ(trainrt_session_export(plain, out3.c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
        << last_error();
    EXPECT_EQ(slurp(out3 + "/tokenizer_config.json"),
              "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n"
              "  \"model_max_length\": 16,\n  \"clean_up_tokenization_spaces\": false\n}\n");
}

// An exported folder (config.json + tokenizer.json) as model.init_from: its tokenizer is the
// run's unless data.tokenizer names another.
TEST_F(CapiDataTokenizer, DefaultsToTheInitFromFoldersTokenizer) {
    trainrt_session* s = open_from(kToml, {{"data.tokenizer", "\"tok\""}});
    ASSERT_NE(s, nullptr);
    const std::string out = dir_ + "/hf";
    ASSERT_EQ(trainrt_session_export(s, out.c_str(), TRAINRT_DTYPE_F32), TRAINRT_OK)
        << last_error();
    trainrt_config* c = config_from(kToml, {{"model.init_from", "\"hf\""}});
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(fs::path(get_string(c, "data.tokenizer")), fs::path(out));
    trainrt_config_destroy(c);
    c = config_from(kToml, {{"model.init_from", "\"hf\""}, {"data.tokenizer", "\"tok\""}});
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(fs::path(get_string(c, "data.tokenizer")), fs::path(tok_dir_));
    trainrt_config_destroy(c);
    // A folder without a tokenizer.json leaves it empty.
    fs::remove(out + "/tokenizer.json");
    c = config_from(kToml, {{"model.init_from", "\"hf\""}});
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(get_string(c, "data.tokenizer"), "");
    trainrt_config_destroy(c);
}

// data.document_attention: a window holding two documents (each opened by the tokenizer's
// end-of-text token, as prepare lays them out) gives the second document the logits it has
// alone, whatever the first one holds; without it the first one leaks into the second.
TEST_F(CapiDataTokenizer, DocumentAttentionKeepsEachDocumentToItself) {
    constexpr int kT = 8, kV = 320;
    // [eot a a a | eot b b b] + one more id; the second row changes only the first document.
    const std::vector<int32_t> first = {300, 10, 11, 12, 300, 40, 41, 42, 43};
    const std::vector<int32_t> other = {300, 20, 21, 22, 300, 40, 41, 42, 43};
    const auto logits_of = [&](bool documents, const std::vector<int32_t>& row) {
        trainrt_session* s = open_from(kToml, {{"data.tokenizer", "\"tok\""},
                                                {"data.document_attention",
                                                 documents ? "true" : "false"}});
        std::vector<float> logits(static_cast<size_t>(kT) * kV);
        EXPECT_NE(s, nullptr);
        if (s == nullptr) return logits;
        EXPECT_EQ(trainrt_session_forward(nullptr, logits.data(), logits.size(), s, row.data(), 1,
                                          kT),
                  TRAINRT_OK)
            << last_error();
        return logits;  // the fixture destroys the session
    };
    const auto second_document_differs = [&](bool documents) {
        const std::vector<float> a = logits_of(documents, first), b = logits_of(documents, other);
        float worst = 0.0f;
        for (size_t i = 4 * kV; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
        return worst;
    };
    EXPECT_LE(second_document_differs(true), 1e-6f);
    EXPECT_GT(second_document_differs(false), 1e-4f);  // the test can tell the difference
    // Without a tokenizer there is no end-of-text token to restart at.
    trainrt_config* c = config_from(kToml, {{"data.document_attention", "true"}});
    ASSERT_NE(c, nullptr);
    trainrt_session* s = nullptr;
    EXPECT_EQ(trainrt_session_create(&s, c), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("data.tokenizer"), std::string::npos) << last_error();
    trainrt_config_destroy(c);
    trainrt_session_destroy(s);
}

}  // namespace
