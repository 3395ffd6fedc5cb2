// The tokenizer agreement check (data/tokenizer_agreement.h): shards prepared with one
// tokenizer, data.tokenizer and the model folder's tokenizer must be one tokenizer. A
// disagreement is refused naming all three (path, kind, short digest) and what to do, or with
// the override a WARN and the run goes on; a folder and its tokenizer.json agree; shards whose
// tokenizer is unknown (no manifest, or one written before it named the tokenizer) are not
// checked, and one INFO line says so.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "data/data_test_util.h"
#include "data/prepare.h"
#include "data/prepare_text.h"
#include "data/token_dataset.h"
#include "data/tokenizer_agreement.h"
#include "tokenizer/synthetic_tokenizer.h"  // tests/tokenizer
#include "tokenizer/tokenizer_identity.h"

namespace fs = std::filesystem;
using trt::Status;
using trt::TokenDataset;

namespace {

struct Lines {
    std::vector<std::pair<int32_t, std::string>> lines;
    static void collect(int32_t level, const char* message, void* payload) {
        static_cast<Lines*>(payload)->lines.emplace_back(level, message);
    }
    trt::Logger logger() { return trt::Logger(trt::LogSink{&Lines::collect, this, 0}); }
};

// A folder with the synthetic tokenizer (tok/), another one (other/: one merge more), text
// prepared byte-level (bytes/) and with tok (bpe/).
class TokenizerAgreement : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fresh_test_dir("tokenizer_agreement");
        fs::create_directories(dir_ + "/tok");
        fs::create_directories(dir_ + "/other");
        write_text(dir_ + "/tok/tokenizer.json", synthetic::tokenizer_json());
        write_text(dir_ + "/tok/tokenizer_config.json", R"({"eos_token": "<|end|>"})");
        synthetic::Spec more;
        more.extra_merges = {"he l"};
        write_text(dir_ + "/other/tokenizer.json", synthetic::tokenizer_json(more));
        std::string text;
        for (int i = 0; i < 40; i++) text += "hello hello llama\nhe said hello\n";
        write_text(dir_ + "/in.txt", text);
        trt::prepare_bytes(dir_ + "/in.txt", dir_ + "/bytes", 0.1);
        trt::PrepareTextOptions o;
        o.tokenizer = dir_ + "/tok/tokenizer.json";
        o.val_fraction = 0.1;
        trt::prepare_text({dir_ + "/in.txt"}, dir_ + "/bpe", o);
    }
    TokenDataset open(const std::string& rel) { return TokenDataset::open(dir_ + "/" + rel, 263); }
    std::string tok() const { return dir_ + "/tok/tokenizer.json"; }

    std::string dir_;
};

const std::string kBytes = "bytes (vocab 256, sha256:e670ee7c1772)";

TEST_F(TokenizerAgreement, BytesDataWithABpeTokenizerIsRefusedNamingAllThree) {
    const TokenDataset train = open("bytes/train.bin");
    trt::RunTokenizers run;
    run.datasets = {{"data.train", &train}};
    run.data_tokenizer = tok();
    Lines log;
    const trt::tok::TokenizerIdentity want = trt::tok::load_tokenizer_identity(tok(), "test");
    expect_error([&] { trt::check_tokenizer_agreement(run, true, log.logger()); },
                 Status::Config,
                 {"data.train: the shards in '" + dir_ + "/bytes'", kBytes,
                  dir_ + "/bytes/prepare.json", "data.tokenizer is hf-bpe '" + tok() + "'",
                  "vocab 263, " + want.short_digest(), "model.init_from is not set",
                  "trainrt prepare --tokenizer", "data.tokenizer_check = false"});
    EXPECT_TRUE(log.lines.empty());
}

TEST_F(TokenizerAgreement, TheOverrideWarnsAndGoesOn) {
    const TokenDataset train = open("bytes/train.bin");
    trt::RunTokenizers run;
    run.datasets = {{"data.train", &train}};
    run.data_tokenizer = tok();
    Lines log;
    trt::check_tokenizer_agreement(run, false, log.logger());
    ASSERT_EQ(log.lines.size(), 1u);
    EXPECT_EQ(log.lines[0].first, TRAINRT_LOG_WARN);
    EXPECT_NE(log.lines[0].second.find("data.tokenizer_check = false"), std::string::npos);
    EXPECT_NE(log.lines[0].second.find(kBytes), std::string::npos) << log.lines[0].second;
    EXPECT_NE(log.lines[0].second.find("hf-bpe '" + tok() + "'"), std::string::npos);
}

TEST_F(TokenizerAgreement, TheSameTokenizerByFileOrFolderPasses) {
    const TokenDataset train = open("bpe/train.bin"), val = open("bpe/val.bin");
    Lines log;
    for (const std::string& path : {tok(), dir_ + "/tok"}) {
        trt::RunTokenizers run;
        run.datasets = {{"data.train", &train}, {"data.val", &val}};
        run.data_tokenizer = path;
        run.init_from = dir_ + "/tok";
        trt::check_tokenizer_agreement(run, true, log.logger());
    }
    // Byte-level data with nothing else known: nothing to compare.
    const TokenDataset bytes = open("bytes/train.bin");
    trt::RunTokenizers run;
    run.datasets = {{"data.train", &bytes}};
    trt::check_tokenizer_agreement(run, true, log.logger());
    EXPECT_TRUE(log.lines.empty());
}

TEST_F(TokenizerAgreement, TheModelFolderCountsToo) {
    // Byte-level data and a model folder with a tokenizer (data.tokenizer defaulted to it).
    const TokenDataset bytes = open("bytes/train.bin");
    trt::RunTokenizers run;
    run.datasets = {{"data.train", &bytes}};
    run.data_tokenizer = dir_ + "/tok";
    run.init_from = dir_ + "/tok";
    Lines log;
    expect_error([&] { trt::check_tokenizer_agreement(run, true, log.logger()); },
                 Status::Config, {kBytes, "model.init_from holds hf-bpe '" + dir_ + "/tok'"});
    // data.tokenizer and the folder disagree, whatever the data.
    const TokenDataset bpe = open("bpe/train.bin");
    run.datasets = {{"data.train", &bpe}};
    run.data_tokenizer = tok();
    run.init_from = dir_ + "/other";
    expect_error([&] { trt::check_tokenizer_agreement(run, true, log.logger()); },
                 Status::Config,
                 {"data.tokenizer is hf-bpe '" + tok() + "'",
                  "model.init_from holds hf-bpe '" + dir_ + "/other'"});
    // A folder without a tokenizer is not a claim.
    run.init_from = dir_ + "/bytes";
    trt::check_tokenizer_agreement(run, true, log.logger());
    EXPECT_TRUE(log.lines.empty());
}

TEST_F(TokenizerAgreement, SplitsOfTwoTokenizersAreRefused) {
    const TokenDataset train = open("bpe/train.bin"), val = open("bytes/val.bin");
    trt::RunTokenizers run;
    run.datasets = {{"data.train", &train}, {"data.val", &val}};
    Lines log;
    expect_error([&] { trt::check_tokenizer_agreement(run, true, log.logger()); },
                 Status::Config,
                 {"data.train: the shards in '" + dir_ + "/bpe' were made with hf-bpe",
                  "data.val: the shards in '" + dir_ + "/bytes' were made with " + kBytes,
                  "data.tokenizer is not set"});
}

TEST_F(TokenizerAgreement, ShardsOfUnknownTokenizerAreNotCheckedAndOneInfoSaysSo) {
    // No manifest at all, and a manifest of an earlier prepare (no "tokenizer").
    fs::create_directories(dir_ + "/raw");
    fs::copy_file(dir_ + "/bytes/train.bin", dir_ + "/raw/train.bin");
    const std::string old = slurp(dir_ + "/bytes/prepare.json");
    const size_t at = old.find("  \"tokenizer\"");
    ASSERT_NE(at, std::string::npos);
    write_text(dir_ + "/bytes/prepare.json",
               old.substr(0, at) + old.substr(old.find('\n', at) + 1));
    const TokenDataset raw = open("raw/train.bin"), val = open("bytes/val.bin");
    trt::RunTokenizers run;
    run.datasets = {{"data.train", &raw}, {"data.val", &val}};
    Lines log;
    trt::check_tokenizer_agreement(run, true, log.logger());  // nothing known: silent
    EXPECT_TRUE(log.lines.empty());
    run.data_tokenizer = tok();
    trt::check_tokenizer_agreement(run, true, log.logger());
    ASSERT_EQ(log.lines.size(), 1u);
    EXPECT_EQ(log.lines[0].first, TRAINRT_LOG_INFO);
    const std::string& line = log.lines[0].second;
    EXPECT_NE(line.find("tokenizer not checked"), std::string::npos) << line;
    EXPECT_NE(line.find(dir_ + "/raw' record no tokenizer"), std::string::npos) << line;
    EXPECT_NE(line.find("older trainrt prepare"), std::string::npos) << line;
}

}  // namespace
