// Logger: the sink it writes to, and what a data-parallel rank keeps (core/log.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/log.h"

using namespace trt;

namespace {

struct Captured {
    std::vector<std::pair<int32_t, std::string>> lines;
};

void capture(int32_t level, const char* message, void* payload) {
    static_cast<Captured*>(payload)->lines.emplace_back(level, message);
}

}  // namespace

TEST(Logger, RanksPrefixTheirLinesAndOnlyRankZeroKeepsInfo) {
    Captured got;
    const LogSink sink{capture, &got, TRAINRT_LOG_DEBUG};
    Logger alone(sink), lead(sink), other(sink);
    lead.set_rank(0, 2);
    other.set_rank(1, 2);
    alone.info("a");
    lead.info("b");
    other.info("c");  // dropped: rank 0 speaks for the run
    other.warn("d");
    other.error("e");
    const std::vector<std::pair<int32_t, std::string>> want = {
        {TRAINRT_LOG_INFO, "a"},
        {TRAINRT_LOG_INFO, "[rank 0/2] b"},
        {TRAINRT_LOG_WARN, "[rank 1/2] d"},
        {TRAINRT_LOG_ERROR, "[rank 1/2] e"}};
    EXPECT_EQ(got.lines, want);
}
