// Helpers shared by the data tests.
#pragma once
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
