// CPU backend memory: zero-filled aligned allocations, bytes_in_use bookkeeping, copies.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"

namespace {

TEST(CpuMemory, AllocZeroFillsAlignsAndTracks) {
    auto be = trt::make_cpu_backend(2);
    EXPECT_STREQ(be->name(), "cpu");
    EXPECT_EQ(be->bytes_in_use(), 0u);
    const size_t sizes[] = {1, 100, 4099, 1 << 20};
    std::vector<void*> ptrs;
    size_t total = 0;
    for (size_t s : sizes) {
        // Dirty the heap first so a non-zeroing allocator would be caught.
        std::vector<unsigned char> junk(s, 0xAB);
        void* p = be->alloc(s);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << s;
        const unsigned char* c = static_cast<const unsigned char*>(p);
        for (size_t i = 0; i < s; i++) ASSERT_EQ(c[i], 0) << "byte " << i << " of " << s;
        total += s;
        EXPECT_EQ(be->bytes_in_use(), total);
        ptrs.push_back(p);
    }
    for (size_t i = 0; i < ptrs.size(); i++) {
        be->free(ptrs[i]);
        total -= sizes[i];
        EXPECT_EQ(be->bytes_in_use(), total);
    }
    be->free(nullptr);  // accepted, no effect
    EXPECT_EQ(be->bytes_in_use(), 0u);
    // Repeated alloc/free of the same size still comes back zeroed.
    for (int k = 0; k < 3; k++) {
        float* f = static_cast<float*>(be->alloc(1000 * sizeof(float)));
        for (int i = 0; i < 1000; i++) ASSERT_EQ(f[i], 0.0f);
        for (int i = 0; i < 1000; i++) f[i] = 1.5f;
        be->free(f);
    }
    EXPECT_EQ(be->bytes_in_use(), 0u);
}

TEST(CpuMemory, ZeroByteAllocIsDistinctAndFreeable) {
    auto be = trt::make_cpu_backend(1);
    void* a = be->alloc(0);
    void* b = be->alloc(0);
    EXPECT_NE(a, nullptr);
    EXPECT_NE(a, b);
    EXPECT_EQ(be->bytes_in_use(), 0u);
    be->free(a);
    be->free(b);
}

TEST(CpuMemory, HugeAllocThrowsOutOfMemory) {
    auto be = trt::make_cpu_backend(1);
    try {
        be->alloc(SIZE_MAX - 8);
        FAIL() << "no exception";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::OutOfMemory);
        EXPECT_NE(std::string(e.what()).find("bytes"), std::string::npos) << e.what();
    }
    EXPECT_EQ(be->bytes_in_use(), 0u);
}

TEST(CpuMemory, CopiesAndZero) {
    auto be = trt::make_cpu_backend(0);  // 0 = all cores
    std::vector<float> src(257);
    for (size_t i = 0; i < src.size(); i++) src[i] = 0.5f * i + 1;
    float* d = static_cast<float*>(be->alloc(src.size() * sizeof(float)));
    be->copy_to_device(d, src.data(), src.size() * sizeof(float));
    std::vector<float> back(src.size());
    be->synchronize();
    be->copy_to_host(back.data(), d, back.size() * sizeof(float));
    EXPECT_EQ(back, src);
    be->zero(d + 1, 10 * sizeof(float));
    be->copy_to_host(back.data(), d, back.size() * sizeof(float));
    EXPECT_EQ(back[0], src[0]);
    for (int i = 1; i <= 10; i++) EXPECT_EQ(back[i], 0.0f);
    EXPECT_EQ(back[11], src[11]);
    be->free(d);
    EXPECT_EQ(be->bytes_in_use(), 0u);
}

}  // namespace
