// Helpers shared by the C API tests (they see only the public header).
#pragma once
#include <trainrt/trainrt.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

inline std::string last_error() { return trainrt_last_error_message(); }

// True when `word` occurs in `text` as a whole identifier (not inside trainrt_config_set).
inline bool names(const std::string& text, const std::string& word) {
    const std::regex re("(^|[^A-Za-z0-9_])" + word + "($|[^A-Za-z0-9_])");
    return std::regex_search(text, re);
}

// A NULL argument must give INVALID_ARGUMENT and a message naming the argument.
#define EXPECT_NULL_ARG(call, arg)                                                   \
    do {                                                                             \
        const trainrt_status st_ = (call);                                           \
        EXPECT_EQ(st_, TRAINRT_ERR_INVALID_ARGUMENT) << #call;                       \
        const std::string msg_ = trainrt_last_error_message();                       \
        EXPECT_TRUE(names(msg_, arg)) << #call << ": message does not name '" << arg \
                                      << "': " << msg_;                              \
    } while (0)

// ---------------------------------------------------------------- scratch files

// A fresh folder for the running test under TRAINRT_TEST_TMP.
inline std::string scratch_dir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string dir = std::string(TRAINRT_TEST_TMP) + "/capi/" +
                            info->test_suite_name() + "." + info->name();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}


// Pseudo-random ids in [0, vocab).
inline std::vector<uint16_t> lcg_tokens(size_t n, uint32_t seed, int vocab) {
    std::vector<uint16_t> out(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        out[i] = static_cast<uint16_t>((x >> 8) % static_cast<uint32_t>(vocab));
    }
    return out;
}

// An llm.c uint16 shard (FORMATS.md §1): 256 int32 header [magic, version, ntok, 0...], then
// the ids. ntok_field < 0: the real count.
inline void write_shard(const std::string& path, const std::vector<uint16_t>& tokens,
                 int32_t magic = 20240520, int32_t version = 1, int64_t ntok_field = -1) {
    int32_t header[256] = {};
    header[0] = magic;
    header[1] = version;
    header[2] = static_cast<int32_t>(ntok_field < 0 ? static_cast<int64_t>(tokens.size())
                                                    : ntok_field);
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(header), sizeof header);
    f.write(reinterpret_cast<const char*>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
    ASSERT_TRUE(f.good()) << path;
}

