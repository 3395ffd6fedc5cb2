// NCCL's run-time loader in libtrainrt-cuda (src/backend/cuda/nccl_group.cpp) without a GPU:
// where libnccl.so.2 is installed it loads with every entry point and draws a group id; a
// library that is not there is reported by path, never a crash.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backend/cuda/nccl_group.h"
#include "core/error.h"

TEST(NcclLoader, LoadsWhereInstalledOrSaysWhy) {
    // (One process loads NCCL once: this test and the next run in separate processes.)
    std::string why;
    const bool ok = trt::cuda::NcclGroup::available(&why);
    if (!ok) {
        EXPECT_NE(why.find("libnccl.so.2"), std::string::npos) << why;
        GTEST_SKIP() << why;
    }
    EXPECT_EQ(why, "");
    uint8_t id[trt::cuda::NcclGroup::kIdBytes] = {};
    trt::cuda::NcclGroup::make_id(id);  // a bootstrap address: no GPU needed
    bool nonzero = false;
    for (uint8_t b : id) nonzero = nonzero || b != 0;
    EXPECT_TRUE(nonzero);
}

TEST(NcclLoader, AMissingLibraryIsNamed) {
    setenv("TRAINRT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    std::string why;
    EXPECT_FALSE(trt::cuda::NcclGroup::available(&why));
    EXPECT_NE(why.find("/nonexistent/libnccl.so.2"), std::string::npos) << why;
    EXPECT_NE(why.find("TRAINRT_NCCL_LIBRARY"), std::string::npos) << why;
    uint8_t id[trt::cuda::NcclGroup::kIdBytes] = {};
    try {
        trt::cuda::NcclGroup::make_id(id);
        ADD_FAILURE() << "make_id without NCCL";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::Unsupported);
    }
}
