// C API tests of the per-op profile (runtime.profile_ops, trainrt_session_profile and
// trainrt_session_profile_reset) on the tiny GPT-2 of capi_test_util.h: every kind of train
// step is profiled, nothing else is, the profile changes no bit of training, and a session
// without the key refuses, saying which key to set. No assertion on a measured time beyond
// its invariants (ops nested inside the profiled interval).
// Written against include/trainrt/trainrt.h only.
#include <gtest/gtest.h>
#include <trainrt/trainrt.h>

#include <cstdint>
#include <cstring>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "capi/capi_test_util.h"

namespace {

class CapiProfile : public CapiSessionTest {
protected:
    void SetUp() override {
        CapiSessionTest::SetUp();
        write_shard(dir_ + "/train.bin", lcg_tokens(4096, 1, 32));
        write_shard(dir_ + "/val.bin", lcg_tokens(512, 2, 32));
    }
};

std::string profile_of(trainrt_session* s) {
    size_t needed = 0;
    EXPECT_EQ(trainrt_session_profile(nullptr, 0, &needed, s), TRAINRT_OK) << last_error();
    std::string text(needed + 1, '\0');
    EXPECT_EQ(trainrt_session_profile(&text[0], text.size(), &needed, s), TRAINRT_OK)
        << last_error();
    text.resize(needed);
    return text;
}

// The value of a top-level number member ("steps": 3 -> 3).
double member(const std::string& json, const std::string& key) {
    const std::regex re("\"" + key + "\": ([-0-9.eE+]+)");
    std::smatch m;
    EXPECT_TRUE(std::regex_search(json, m, re)) << key << " in " << json;
    return m.empty() ? -1 : std::stod(m[1].str());
}

struct Row {
    int layer;
    std::string label, op;
    long long calls;
    double seconds, flops, bytes;
};

std::vector<Row> rows_of(const std::string& json) {
    const std::regex re(
        "\\{\"layer\": (-?[0-9]+), \"label\": \"([^\"]*)\", \"op\": \"([a-z_0-9]+)\", "
        "\"calls\": ([0-9]+), \"seconds\": ([-0-9.eE+]+), \"flops\": ([-0-9.eE+]+), "
        "\"bytes\": ([-0-9.eE+]+)\\}");
    std::vector<Row> rows;
    for (auto it = std::sregex_iterator(json.begin(), json.end(), re); it != std::sregex_iterator();
         ++it) {
        const std::smatch& m = *it;
        rows.push_back({std::stoi(m[1].str()), m[2].str(), m[3].str(), std::stoll(m[4].str()),
                        std::stod(m[5].str()), std::stod(m[6].str()), std::stod(m[7].str())});
    }
    return rows;
}

std::vector<int32_t> host_rows() {  // one step_tokens batch: B 2 rows of T 8 + 1 ids
    std::vector<int32_t> rows;
    for (int i = 0; i < 2 * 9; ++i) rows.push_back((7 * i + 3) % 32);
    return rows;
}

TEST_F(CapiProfile, EveryKindOfTrainStepIsProfiledAndNothingElse) {
    trainrt_session* s = open_from(kTinyGpt2Toml, {{"runtime.profile_ops", "true"}});
    ASSERT_NE(s, nullptr);
    std::string json = profile_of(s);
    EXPECT_EQ(member(json, "steps"), 0);
    EXPECT_TRUE(rows_of(json).empty()) << json;
    EXPECT_NE(json.find("\"schema\": \"trainrt-op-profile/1\""), std::string::npos) << json;

    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    const std::vector<int32_t> rows = host_rows();
    ASSERT_EQ(trainrt_session_step_tokens(nullptr, s, rows.data(), rows.size()), TRAINRT_OK);
    std::vector<uint8_t> mask(2 * 8, 1);
    mask[0] = 0;
    ASSERT_EQ(trainrt_session_step_masked(nullptr, s, rows.data(), rows.size(), mask.data(),
                                          nullptr, mask.size()),
              TRAINRT_OK)
        << last_error();
    ASSERT_EQ(trainrt_session_train(s, 2, nullptr, nullptr), TRAINRT_OK) << last_error();
    json = profile_of(s);
    EXPECT_EQ(member(json, "steps"), 5);
    EXPECT_EQ(member(json, "tokens_per_step"), 16);
    EXPECT_EQ(member(json, "threads"), 1);

    // Not steps: evaluation, forward, sampling.
    double loss = 0;
    ASSERT_EQ(trainrt_session_eval(&loss, s), TRAINRT_OK) << last_error();
    ASSERT_EQ(trainrt_session_forward(&loss, nullptr, 0, s, rows.data(), 2, 8), TRAINRT_OK);
    EXPECT_EQ(profile_of(s), json);

    const std::vector<Row> r = rows_of(json);
    ASSERT_FALSE(r.empty()) << json;
    double op_s = 0;
    std::set<int> layers;
    for (const Row& row : r) {
        layers.insert(row.layer);
        op_s += row.seconds;
        EXPECT_GE(row.seconds, 0) << row.label;
        EXPECT_GE(row.calls, 1) << row.label;
        if (row.op == "adamw_step") EXPECT_EQ(row.calls, 5);  // one update per step
        if (row.label == "matmul fwd 16x48") {                // qkv: 5 steps, 1 layer, 2 FLOPs
            EXPECT_EQ(row.layer, 0);                          // per (N, K, M)
            EXPECT_EQ(row.calls, 5);
            EXPECT_EQ(row.flops, 5 * 2.0 * 16 * 16 * 48);
        }
    }
    EXPECT_EQ(layers, (std::set<int>{-1, 0}));  // the one block, and outside it
    // The ops lie inside the profiled interval, one after another.
    EXPECT_LE(member(json, "op_s"), member(json, "wall_s"));
    EXPECT_NEAR(op_s, member(json, "op_s"), 1e-9 * r.size() + 1e-12);

    ASSERT_EQ(trainrt_session_profile_reset(s), TRAINRT_OK) << last_error();
    json = profile_of(s);
    EXPECT_EQ(member(json, "steps"), 0);
    EXPECT_EQ(member(json, "wall_s"), 0);
    EXPECT_TRUE(rows_of(json).empty()) << json;
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(member(profile_of(s), "steps"), 1);
}

// A step that fails is not in the profile: its ops and time are taken back out.
TEST_F(CapiProfile, AFailedStepLeavesTheProfileAsItWas) {
    trainrt_session* s = open_from(kTinyGpt2Toml, {{"runtime.profile_ops", "true"}});
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    const std::string before = profile_of(s);
    std::vector<int32_t> rows = host_rows();
    rows[5] = 32;  // not below model.vocab_size
    EXPECT_EQ(trainrt_session_step_tokens(nullptr, s, rows.data(), rows.size()),
              TRAINRT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(profile_of(s), before);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    EXPECT_EQ(member(profile_of(s), "steps"), 2);
}

// Timing the ops changes when they run, never what they compute.
TEST_F(CapiProfile, ProfiledTrainingGivesTheSameBits) {
    std::vector<double> losses[2];
    for (int profiled = 0; profiled < 2; ++profiled) {
        trainrt_session* s = open_from(
            kTinyGpt2Toml,
            {{"runtime.profile_ops", profiled ? "true" : "false"}, {"runtime.threads", "2"}});
        ASSERT_NE(s, nullptr);
        for (int i = 0; i < 3; ++i) losses[profiled].push_back(step_result(s).loss);
        double val = 0;
        ASSERT_EQ(trainrt_session_eval(&val, s), TRAINRT_OK) << last_error();
        losses[profiled].push_back(val);
    }
    ASSERT_EQ(losses[0].size(), losses[1].size());
    for (size_t i = 0; i < losses[0].size(); ++i)
        EXPECT_TRUE(same_bits(losses[0][i], losses[1][i])) << i;
}

TEST_F(CapiProfile, WithoutTheKeyBothCallsRefuseNamingIt) {
    trainrt_session* s = open_from(kTinyGpt2Toml);
    ASSERT_NE(s, nullptr);
    char buf[16] = "untouched";
    size_t needed = 99;
    EXPECT_EQ(trainrt_session_profile(buf, sizeof buf, &needed, s), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("runtime.profile_ops"), std::string::npos) << last_error();
    EXPECT_STREQ(buf, "untouched");
    EXPECT_EQ(trainrt_session_profile_reset(s), TRAINRT_ERR_CONFIG);
    EXPECT_NE(last_error().find("runtime.profile_ops"), std::string::npos) << last_error();
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();  // still usable
}

// On the CPU: the host clock; the roofline peaks the config gives (none in the table for a
// CPU); the choices an array (oneDNN's block shapes where it ran the matmuls, else empty).
TEST_F(CapiProfile, SaysHowItTimedThePeaksAndTheChoices) {
    trainrt_session* s = open_from(kTinyGpt2Toml, {{"runtime.profile_ops", "true"}});
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    std::string json = profile_of(s);
    EXPECT_NE(json.find("\"timing\": \"host\""), std::string::npos) << json;
    EXPECT_EQ(member(json, "peak_flops"), 0);
    EXPECT_EQ(member(json, "peak_bytes_per_s"), 0);
    EXPECT_TRUE(std::regex_search(json, std::regex("\"choices\": \\[(\\]|\n    \\{\"op\": )")))
        << json;

    trainrt_session* p = open_from(
        kTinyGpt2Toml,
        {{"runtime.profile_ops", "true"}, {"runtime.peak_tflops", "2"}, {"runtime.peak_gbs", "3"}});
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, p), TRAINRT_OK) << last_error();
    json = profile_of(p);
    EXPECT_EQ(member(json, "peak_flops"), 2e12);
    EXPECT_EQ(member(json, "peak_bytes_per_s"), 3e9);
}

// A buffer too small gets the size needed and a terminated prefix (trainrt.h's convention).
TEST_F(CapiProfile, SmallBufferGetsTheSizeNeeded) {
    trainrt_session* s = open_from(kTinyGpt2Toml, {{"runtime.profile_ops", "true"}});
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(trainrt_session_step(nullptr, s), TRAINRT_OK) << last_error();
    const std::string full = profile_of(s);
    char small[8];
    size_t needed = 0;
    EXPECT_EQ(trainrt_session_profile(small, sizeof small, &needed, s), TRAINRT_OK);
    EXPECT_EQ(needed, full.size());
    EXPECT_EQ(std::string(small), full.substr(0, sizeof small - 1));
}

}  // namespace
