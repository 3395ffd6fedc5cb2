// Helpers shared by the checkpoint tests: scratch directories, a small model with distinct
// values in params/m/v, raw file edits, and error expectations.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "io/sha256.h"
#include "model/model_weights.h"

namespace ckpt_test {

namespace fs = std::filesystem;

// <TRAINRT_TEST_TMP>/checkpoint/<suite>.<test>, emptied.
inline std::string fresh_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const fs::path dir = fs::path(TRAINRT_TEST_TMP) / "checkpoint" /
                         (std::string(info->test_suite_name()) + "." + info->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

inline const trt::ModelSpec kShape = trt::gpt2_spec(13, 8, 2, 2, 8);  // V, maxT, L, NH, C

// params, m and v of one model, each different so a swapped buffer shows.
struct Model {
    trt::ParamTable table;
    std::vector<float> params, m, v;
    explicit Model(const trt::ModelSpec& s = kShape, uint64_t seed = 1)
        : table(s), params(table.total()), m(table.total()), v(table.total()) {
        trt::init_random(table, seed, params.data());
        for (size_t i = 0; i < m.size(); ++i) {
            m[i] = params[i] * 0.5f - 1e-7f * static_cast<float>(i);
            v[i] = params[i] * params[i] + 1e-9f * static_cast<float>(i);
        }
        table.clear_padding(m.data());  // wte's padding rows are zero in every buffer
        table.clear_padding(v.data());
    }
};

inline trt::CheckpointState sample_state() {
    trt::CheckpointState s;
    s.step = 1234;
    s.tokens_total = (int64_t{1} << 40) + 3;
    s.cursor_shard = 2;
    s.cursor_pos = 98765;
    s.loss_scale = 0.1;  // not exactly representable: checks round-trip formatting
    s.library_version = "0.1.0";
    s.config_toml = "[model]\nn_layer = 2\nname = \"q\\\"uote\" # ünïcode\n\ttab\n";
    return s;
}

inline std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline void spit(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Rewrites MANIFEST.sha256 for the checkpoint's four files, so a test can change a file's
// content deliberately and reach the checks behind the manifest.
inline void rehash(const std::string& dir) {
    std::string text;
    for (const char* f : {"config.json", "model.safetensors", "optimizer.safetensors", "state.json"})
        text += trt::sha256_file_hex(dir + "/" + f) + "  " + f + "\n";
    spit(dir + "/MANIFEST.sha256", text);
}

// Replaces the first occurrence of `from` in a file.
inline void edit(const std::string& path, const std::string& from, const std::string& to) {
    std::string s = slurp(path);
    const size_t at = s.find(from);
    ASSERT_NE(at, std::string::npos) << from << " not in " << path;
    s.replace(at, from.size(), to);
    spit(path, s);
}

// Runs f, expects a trt::Error with `status`, returns its message.
inline std::string error_of(const std::function<void()>& f, trt::Status status) {
    try {
        f();
    } catch (const trt::Error& e) {
        EXPECT_EQ(static_cast<int>(e.status()), static_cast<int>(status)) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no trt::Error thrown";
    return "";
}

#define EXPECT_HAS(msg, needle) \
    EXPECT_NE((msg).find(needle), std::string::npos) << "missing '" << (needle) << "' in: " << (msg)

}  // namespace ckpt_test
