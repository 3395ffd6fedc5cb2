// Helpers shared by the C API tests (they see only the public header).
#pragma once
#include <trainrt/trainrt.h>

#include <regex>
#include <string>

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
