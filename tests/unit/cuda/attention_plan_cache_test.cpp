// The cuDNN attention plan cache's policy (src/backend/cuda/attention_plan_cache.h) and the
// padded-row layout of its length buckets (src/backend/cuda/padded_rows.h), on the CPU with a
// fake plan type (label cpu, registered in tests/gpu/CMakeLists.txt beside the cuDNN tests):
//   - bucket_length is the smallest 128·2^k >= T;
//   - sampling at B=1 for T = 1..1024 builds exactly one plan per bucket (128, 256, 512, 1024);
//   - arbitrary (B,T) calls never keep more than the capacity of on-demand plans alive, evict
//     the least recently used one, destroy every evicted plan exactly once, and plans free
//     their buffers when destroyed (evicted or with the cache);
//   - reserved shapes and plans used under capture (pinned) are never evicted; when every
//     on-demand plan is pinned a new shape is refused, without building anything;
//   - a failed build evicts nothing.
// Mutations these catch: bucket_length returning T (1024 builds instead of 4), eviction skipped
// (more than the capacity alive), the LRU order reversed, pins ignored.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/attention_plan_cache.h"
#include "backend/cuda/padded_rows.h"

namespace {

using trt::cuda::AttentionPlanCache;
using trt::cuda::AttnShape;
using trt::cuda::bucket_length;
using trt::cuda::plan_shape_for;

// Stands in for the device: hands out buffer ids, knows which are still held.
struct FakeDevice {
    int next = 0;
    std::set<int> held;
    int alloc() {
        held.insert(++next);
        return next;
    }
    void free(int id) {
        EXPECT_EQ(held.erase(id), 1u) << "buffer " << id << " freed twice or never allocated";
    }
};

// Counts what the cache does to plans.
struct Ledger {
    int built = 0;
    std::vector<AttnShape> built_shapes;
    std::map<int, int> destroyed;  // plan id -> times destroyed
    int alive() const { return built - static_cast<int>(destroyed.size()); }
};

// A plan that owns a device buffer and gives it back when destroyed (as CudnnAttention's
// plans give back their sequence-length buffer through the backend's free).
class FakePlan {
public:
    FakePlan(const AttnShape& s, Ledger& ledger, FakeDevice& dev)
        : shape(s), id(++ledger.built), ledger_(ledger), dev_(dev), buffer_(dev.alloc()) {
        ledger.built_shapes.push_back(s);
    }
    ~FakePlan() {
        ++ledger_.destroyed[id];
        dev_.free(buffer_);
    }
    FakePlan(const FakePlan&) = delete;
    FakePlan& operator=(const FakePlan&) = delete;

    const AttnShape shape;
    const int id;

private:
    Ledger& ledger_;
    FakeDevice& dev_;
    int buffer_;
};

using Cache = AttentionPlanCache<FakePlan>;
using Use = Cache::Use;

// GPT-2 small's training shape; what the model allocated bounds the buckets.
const AttnShape kTrain{8, 1024, 768, 12};

class PlanCache : public ::testing::Test {
protected:
    // The build callback of Cache::acquire.
    auto factory() {
        return [this](const AttnShape& s, std::string*) {
            return std::make_unique<FakePlan>(s, ledger, dev);
        };
    }
    // CudnnAttention's bucket test in miniature: the bucket's buffers (linear in B·T) fit what
    // the model allocated for kTrain.
    static bool fits(const AttnShape& b) {
        return static_cast<int64_t>(b.B) * b.T <= static_cast<int64_t>(kTrain.B) * kTrain.T;
    }
    // One attention call the way CudnnAttention serves it (plan_for, then acquire).
    FakePlan* call(Cache& cache, const AttnShape& s, std::string* why = nullptr) {
        const AttnShape p = plan_shape_for(s, cache.reserved(s), fits);
        return cache.acquire(p, Use::OnDemand, factory(), why);
    }

    Ledger ledger;
    FakeDevice dev;
};

TEST(BucketLength, IsTheSmallest128TimesAPowerOfTwoAtLeastT) {
    EXPECT_EQ(bucket_length(1), 128);
    EXPECT_EQ(bucket_length(17), 128);
    EXPECT_EQ(bucket_length(128), 128);
    EXPECT_EQ(bucket_length(129), 256);
    EXPECT_EQ(bucket_length(300), 512);
    EXPECT_EQ(bucket_length(1000), 1024);
    EXPECT_EQ(bucket_length(1024), 1024);
    EXPECT_EQ(bucket_length(1025), 2048);
    for (int T = 1; T <= 9000; ++T) {
        const int b = bucket_length(T);
        ASSERT_GE(b, T);
        ASSERT_EQ(b % 128, 0) << T;
        const int k = b / 128;
        ASSERT_EQ(k & (k - 1), 0) << T << " -> " << b << " is not 128 * 2^k";
        ASSERT_TRUE(b == 128 || b / 2 < T) << T << " -> " << b << " is not the smallest";
    }
}

TEST(PlanShape, ReservedShapesAreExactOthersTakeTheirBucketWhenItFits) {
    const auto yes = [](const AttnShape&) { return true; };
    const auto no = [](const AttnShape&) { return false; };
    const AttnShape s{1, 300, 768, 12};
    EXPECT_EQ(plan_shape_for(s, /*reserved=*/true, yes), s);
    EXPECT_EQ(plan_shape_for(s, false, yes), (AttnShape{1, 512, 768, 12}));
    EXPECT_EQ(plan_shape_for(s, false, no), s);  // the exact fallback
    const AttnShape whole{2, 256, 768, 12};      // already a bucket length
    EXPECT_EQ(plan_shape_for(whole, false, no), whole);
    // The buckets' test sees the bucket, not the call.
    AttnShape seen{};
    plan_shape_for(AttnShape{3, 129, 64, 2}, false, [&](const AttnShape& b) {
        seen = b;
        return true;
    });
    EXPECT_EQ(seen, (AttnShape{3, 256, 64, 2}));
}

TEST_F(PlanCache, SamplingAtB1BuildsOnePlanPerBucket) {
    Cache cache(4);
    ASSERT_NE(cache.acquire(kTrain, Use::Reserved, factory(), nullptr), nullptr);
    ASSERT_EQ(ledger.built, 1);
    for (int T = 1; T <= 1024; ++T) {
        FakePlan* p = call(cache, AttnShape{1, T, 768, 12});
        ASSERT_NE(p, nullptr) << "T=" << T;
        EXPECT_GE(p->shape.T, T);
        EXPECT_EQ(p->shape.T, bucket_length(T));
        ASSERT_LE(cache.on_demand(), cache.capacity()) << "T=" << T;
    }
    const std::vector<AttnShape> want = {kTrain, {1, 128, 768, 12}, {1, 256, 768, 12},
                                         {1, 512, 768, 12}, {1, 1024, 768, 12}};
    EXPECT_EQ(ledger.built, 5) << "one plan per length bucket, not per length";
    EXPECT_EQ(ledger.built_shapes, want);
    EXPECT_TRUE(ledger.destroyed.empty()) << "four buckets fit a capacity of four";
    // A second pass builds nothing more.
    for (int T = 1; T <= 1024; ++T) call(cache, AttnShape{1, T, 768, 12});
    EXPECT_EQ(ledger.built, 5);
}

TEST_F(PlanCache, ArbitraryForwardShapesStayWithinCapacityInLruOrder) {
    constexpr size_t kCap = 4;
    Cache cache(kCap);
    ASSERT_NE(cache.acquire(kTrain, Use::Reserved, factory(), nullptr), nullptr);
    // A reference LRU over plan shapes, front = least recently used.
    std::vector<AttnShape> lru;
    std::vector<AttnShape> evicted;
    cache.set_evict_hook([&](const AttnShape& s, FakePlan& p) {
        EXPECT_EQ(p.shape, s);
        evicted.push_back(s);
    });
    uint32_t x = 12345;  // a fixed pseudo-random walk over rows x seq_len <= 8 x 1024
    auto next = [&x](uint32_t mod) {
        x = x * 1664525u + 1013904223u;
        return static_cast<int>((x >> 8) % mod);
    };
    for (int i = 0; i < 3000; ++i) {
        const AttnShape s{1 + next(8), 1 + next(1024), 768, 12};
        const AttnShape p = plan_shape_for(s, cache.reserved(s), fits);
        const bool hit = cache.contains(p);
        const int built_before = ledger.built;
        const size_t evicted_before = evicted.size();
        FakePlan* got = call(cache, s);
        ASSERT_NE(got, nullptr);
        ASSERT_EQ(got->shape, p);
        if (p == kTrain) continue;  // the reserved plan: not on the LRU
        auto at = std::find(lru.begin(), lru.end(), p);
        if (hit) {
            ASSERT_EQ(ledger.built, built_before);
            ASSERT_NE(at, lru.end());
            lru.erase(at);
        } else {
            ASSERT_EQ(ledger.built, built_before + 1);
            if (lru.size() == kCap) {
                // Exactly one eviction, of the least recently used shape.
                ASSERT_EQ(evicted.size(), evicted_before + 1) << "call " << i;
                ASSERT_EQ(evicted.back(), lru.front()) << "call " << i << ": not the LRU one";
                ASSERT_FALSE(cache.contains(lru.front()));
                lru.erase(lru.begin());
            } else {
                ASSERT_EQ(evicted.size(), evicted_before);
            }
        }
        lru.push_back(p);
        ASSERT_LE(cache.on_demand(), kCap);
        ASSERT_EQ(ledger.alive(), static_cast<int>(cache.size()));
        ASSERT_LE(ledger.alive(), static_cast<int>(kCap) + 1);
        ASSERT_EQ(dev.held.size(), cache.size()) << "a destroyed plan kept its buffer";
    }
    EXPECT_GT(evicted.size(), 100u) << "the walk should have forced evictions";
    for (const auto& kv : ledger.destroyed) EXPECT_EQ(kv.second, 1) << "plan " << kv.first;
    EXPECT_TRUE(cache.contains(kTrain));
    EXPECT_EQ(ledger.destroyed.count(1), 0u) << "the reserved plan was evicted";
}

TEST_F(PlanCache, DestroyingTheCacheDestroysEveryPlanAndFreesItsBuffer) {
    {
        Cache cache(4);
        cache.acquire(kTrain, Use::Reserved, factory(), nullptr);
        for (int T : {1, 200, 300, 700, 1000}) call(cache, AttnShape{2, T, 768, 12});
        cache.pin(AttnShape{2, 1024, 768, 12});
        EXPECT_EQ(dev.held.size(), cache.size());
    }
    EXPECT_TRUE(dev.held.empty()) << dev.held.size() << " buffers outlived the cache";
    EXPECT_EQ(static_cast<int>(ledger.destroyed.size()), ledger.built);
    for (const auto& kv : ledger.destroyed) EXPECT_EQ(kv.second, 1) << "plan " << kv.first;
}

TEST_F(PlanCache, ReservedShapesAreNeverEvicted) {
    Cache cache(2);
    const AttnShape other{4, 300, 768, 12};  // a second reserve() of the tests' kind
    FakePlan* train = cache.acquire(kTrain, Use::Reserved, factory(), nullptr);
    FakePlan* extra = cache.acquire(other, Use::Reserved, factory(), nullptr);
    ASSERT_TRUE(train && extra);
    EXPECT_EQ(cache.on_demand(), 0u) << "reserved plans do not count against the capacity";
    for (int B = 1; B <= 8; ++B)
        for (int T : {1, 129, 257, 513}) ASSERT_NE(call(cache, AttnShape{B, T, 768, 12}), nullptr);
    EXPECT_TRUE(cache.reserved(kTrain));
    EXPECT_TRUE(cache.reserved(other));
    EXPECT_EQ(cache.find(kTrain), train);
    EXPECT_EQ(cache.find(other), extra);  // the exact reserved plan, not a bucket
    EXPECT_EQ(ledger.destroyed.count(train->id) + ledger.destroyed.count(extra->id), 0u);
    EXPECT_EQ(cache.on_demand(), 2u);
    // A reserved call of an on-demand shape makes it reserved (not counted any more).
    const AttnShape od{8, 512, 768, 12};
    ASSERT_TRUE(cache.contains(od));
    cache.acquire(od, Use::Reserved, factory(), nullptr);
    EXPECT_TRUE(cache.reserved(od));
    EXPECT_EQ(cache.on_demand(), 1u);
}

TEST_F(PlanCache, PlansUsedUnderCaptureAreNeverEvicted) {
    Cache cache(3);
    const AttnShape captured{2, 256, 768, 12};
    FakePlan* p = call(cache, AttnShape{2, 200, 768, 12});
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(p->shape, captured);
    cache.pin(captured);  // CudnnAttention::forward ran it while a graph was captured
    EXPECT_TRUE(cache.pinned(captured));
    for (int i = 0; i < 50; ++i) ASSERT_NE(call(cache, AttnShape{1 + i % 7, 300, 768, 12}), nullptr);
    EXPECT_TRUE(cache.contains(captured));
    EXPECT_EQ(cache.find(captured), p);
    EXPECT_EQ(ledger.destroyed.count(p->id), 0u);
    EXPECT_LE(cache.on_demand(), 3u) << "a pinned plan still counts against the capacity";
}

TEST_F(PlanCache, WhenEveryOnDemandPlanIsPinnedANewShapeIsRefused) {
    Cache cache(4);
    cache.acquire(kTrain, Use::Reserved, factory(), nullptr);
    for (int B = 1; B <= 4; ++B) {
        FakePlan* p = call(cache, AttnShape{B, 100, 768, 12});
        ASSERT_NE(p, nullptr);
        cache.pin(p->shape);
    }
    const int built = ledger.built;
    std::string why;
    EXPECT_EQ(call(cache, AttnShape{5, 100, 768, 12}, &why), nullptr);
    EXPECT_NE(why.find("pinned"), std::string::npos) << why;
    EXPECT_EQ(ledger.built, built) << "nothing may be built when it could not be kept";
    EXPECT_TRUE(ledger.destroyed.empty());
    EXPECT_EQ(cache.on_demand(), 4u);
    // Cached shapes are still served, and a reserved shape is still taken.
    EXPECT_NE(call(cache, AttnShape{3, 50, 768, 12}), nullptr);
    EXPECT_NE(cache.acquire(AttnShape{6, 64, 768, 12}, Use::Reserved, factory(), nullptr),
              nullptr);
}

TEST_F(PlanCache, AFailedBuildEvictsNothing) {
    Cache cache(2);
    call(cache, AttnShape{1, 10, 768, 12});
    call(cache, AttnShape{2, 10, 768, 12});
    std::string why;
    FakePlan* p = cache.acquire(
        AttnShape{3, 128, 768, 12}, Use::OnDemand,
        [](const AttnShape&, std::string* w) {
            *w = "no engine";
            return std::unique_ptr<FakePlan>();
        },
        &why);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(why, "no engine");
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_TRUE(ledger.destroyed.empty());
}

// ------------------------------------------------------------------ padded rows (CPU twins)

TEST(PaddedRows, PadFillsZeroRowsAndUnpadReadsOnlyTheFirstTRows) {
    const int B = 3, T = 5, Tb = 8, W = 4;
    std::vector<float> src(static_cast<size_t>(B) * T * W);
    for (size_t i = 0; i < src.size(); ++i) src[i] = 1.0f + static_cast<float>(i);
    std::vector<float> padded(static_cast<size_t>(B) * Tb * W, -7.0f);
    trt::cuda::pad_rows(padded.data(), src.data(), B, T, Tb, W, [](float v) { return v; });
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < Tb; ++t)
            for (int c = 0; c < W; ++c) {
                const float got = padded[(static_cast<size_t>(b) * Tb + t) * W + c];
                const float want = t < T ? src[(static_cast<size_t>(b) * T + t) * W + c] : 0.0f;
                ASSERT_EQ(got, want) << b << "," << t << "," << c;
            }
    // Garbage in the padded rows must not reach the output.
    for (int b = 0; b < B; ++b)
        for (int t = T; t < Tb; ++t)
            for (int c = 0; c < W; ++c) padded[(static_cast<size_t>(b) * Tb + t) * W + c] = 1e30f;
    std::vector<double> back(src.size(), -1.0);
    trt::cuda::unpad_rows(back.data(), padded.data(), B, T, Tb, W,
                          [](float v) { return static_cast<double>(v); });
    for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(back[i], static_cast<double>(src[i])) << i;
    // Tb == T: a plain copy.
    std::vector<float> same(src.size());
    trt::cuda::pad_rows(same.data(), src.data(), B, T, T, W, [](float v) { return v; });
    EXPECT_EQ(same, src);
}

}  // namespace
