// Helpers shared by the data tests.
#pragma once
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

// Runs f, expects a trt::Error of `status` whose message holds every needle; returns the
// message.
template <typename F>
std::string expect_error(F&& f, trt::Status status, const std::vector<std::string>& needles) {
    try {
        f();
    } catch (const trt::Error& e) {
        EXPECT_EQ(static_cast<int>(e.status()), static_cast<int>(status)) << e.what();
        const std::string msg = e.what();
        for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos)
            << "missing '" << n << "' in: " << msg;
        return msg;
    }
    ADD_FAILURE() << "no trt::Error thrown";
    return {};
}

// A new, empty folder for the running test: TRAINRT_TEST_TMP/<suite>/<test name>.
inline std::string fresh_test_dir(const char* suite) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::filesystem::path dir =
        std::filesystem::path(TRAINRT_TEST_TMP) / suite / info->name();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
}

// The bytes of a file ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Writes `text` to path (created or truncated).
inline void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}
