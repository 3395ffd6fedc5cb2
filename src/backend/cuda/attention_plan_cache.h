// Which cuDNN attention plans exist, and for how long: the policy behind CudnnAttention's plan
// cache (docs/CUDNN_ATTENTION.md, "Length buckets and the plan cache"). Host-only and free of
// CUDA and cuDNN, so tests/unit/cuda/attention_plan_cache_test.cpp proves the bound on the CPU
// with a fake plan type.
//
// Why a bound: a plan is an NVRTC compile (seconds) and may own device memory. Sampling calls
// the model at B=1 for every length t = 1, 2, 3, ... and Session::forward at arbitrary
// rows x seq_len, so one plan per exact shape would compile on every generated token and grow
// without end. Instead:
//   - a shape that reserve() prepared (the training shape, and any other shape reserve() was
//     called with) is "reserved": planned exactly, kept for the cache's life;
//   - any other call is served at its length bucket Tb = the smallest 128·2^k >= T (causality
//     makes the first T rows exact; CudnnAttention pads and unpads), or at its exact length
//     when the bucket's buffers do not fit what the model allocated;
//   - at most `capacity` such on-demand plans are alive; beyond that the least recently used
//     one is evicted (its plan destroyed, which frees what it owns), unless it is pinned: a
//     plan used while a CUDA graph was captured may still be launched by that graph, so it is
//     never evicted. When every on-demand plan is pinned, a new shape is refused.
#pragma once
#include <climits>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

namespace trt::cuda {

// Bucket lengths are 128·2^k: a multiple of 128 (cuDNN's tile, and what spares cuDNN <= 9.15 its
// padded-backward workaround), and few of them (4 up to 1024, 6 up to 4096).
constexpr int kAttentionBucketBase = 128;

// The smallest 128·2^k >= T, for T >= 1 (T itself if no such int exists).
inline int bucket_length(int T) {
    int b = kAttentionBucketBase;
    while (b < T) {
        if (b > INT_MAX / 2) return T;
        b *= 2;
    }
    return b;
}

// One attention shape: B sequences of T positions, width C, NH query heads, NKV key/value
// heads (0: NH, multi-head attention; callers store 0 for NKV == NH, so a shape has one key).
struct AttnShape {
    int B = 0, T = 0, C = 0, NH = 0, NKV = 0;
    int window = 0;  // a sliding window shorter than T (0: none)
    friend bool operator<(const AttnShape& a, const AttnShape& b) {
        return std::tie(a.B, a.T, a.C, a.NH, a.NKV, a.window) <
               std::tie(b.B, b.T, b.C, b.NH, b.NKV, b.window);
    }
    friend bool operator==(const AttnShape& a, const AttnShape& b) {
        return a.B == b.B && a.T == b.T && a.C == b.C && a.NH == b.NH && a.NKV == b.NKV &&
               a.window == b.window;
    }
    friend bool operator!=(const AttnShape& a, const AttnShape& b) { return !(a == b); }
};

inline AttnShape bucketed(const AttnShape& s) {
    return {s.B, bucket_length(s.T), s.C, s.NH, s.NKV, s.window};
}

// The shape of the plan that serves a call: the call's own shape when it is reserved (or its
// length already is a bucket length); else its bucket when bucket_usable(bucket) says the
// bucket's buffers fit and its plans can be built; else the call's own shape (the exact
// fallback). A pure function of its inputs, so a forward and the backward after it agree on the
// plan, and with it on the layout of `saved`.
template <typename Usable>
AttnShape plan_shape_for(const AttnShape& call, bool reserved, Usable&& bucket_usable) {
    if (reserved) return call;
    const AttnShape b = bucketed(call);
    if (b == call) return call;
    return bucket_usable(b) ? b : call;
}

// Plans by shape: reserved ones forever, at most `capacity` on-demand ones in LRU order.
// Plan is any type; destroying it must release everything it owns (CudnnAttention's plans
// free their device buffers through the backend). Not thread-safe (the backend's ops run on one
// thread at a time).
template <typename Plan>
class AttentionPlanCache {
public:
    static constexpr size_t kDefaultCapacity = 4;
    enum class Use { Reserved, OnDemand };
    // Called with an entry about to be evicted, before its plan is destroyed (CudnnAttention
    // waits for its stream there: queued kernels may still belong to the plan). May throw; the
    // entry then stays.
    using EvictHook = std::function<void(const AttnShape&, Plan&)>;

    explicit AttentionPlanCache(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}
    AttentionPlanCache(const AttentionPlanCache&) = delete;
    AttentionPlanCache& operator=(const AttentionPlanCache&) = delete;

    void set_evict_hook(EvictHook h) { evict_hook_ = std::move(h); }

    // The cached plan for s (marked most recently used), or nullptr.
    Plan* find(const AttnShape& s) {
        const auto it = entries_.find(s);
        if (it == entries_.end()) return nullptr;
        it->second.last_use = ++clock_;
        return it->second.plan.get();
    }
    const Plan* peek(const AttnShape& s) const {
        const auto it = entries_.find(s);
        return it == entries_.end() ? nullptr : it->second.plan.get();
    }
    bool contains(const AttnShape& s) const { return entries_.count(s) != 0; }
    bool reserved(const AttnShape& s) const {
        const auto it = entries_.find(s);
        return it != entries_.end() && it->second.reserved;
    }
    // Never evicted: reserved, or used while a graph was captured.
    bool pinned(const AttnShape& s) const {
        const auto it = entries_.find(s);
        return it != entries_.end() && (it->second.reserved || it->second.pinned);
    }

    // The plan for s: the cached one (marked most recently used; a Reserved use makes an
    // on-demand entry reserved), else build(s, &why) -> std::unique_ptr<Plan>, cached as `use`.
    // An on-demand entry that would exceed the capacity first evicts the least recently used
    // unpinned on-demand entry (after a successful build, so a failed one costs nothing). When
    // every on-demand entry is pinned nothing is built. nullptr + *why on refusal, or when
    // build returns nullptr (its why is passed on). Exceptions from build or the evict hook
    // propagate with the cache unchanged.
    template <typename Build>
    Plan* acquire(const AttnShape& s, Use use, Build&& build, std::string* why) {
        if (Plan* p = find(s)) {
            if (use == Use::Reserved) entries_.find(s)->second.reserved = true;
            return p;
        }
        if (use == Use::OnDemand && on_demand() >= capacity_ && !evictable()) {
            if (why)
                *why = "every one of the " + std::to_string(capacity_) +
                       " on-demand cuDNN attention plans is pinned by a captured CUDA graph";
            return nullptr;
        }
        std::string local;
        std::unique_ptr<Plan> plan = build(s, why ? why : &local);
        if (!plan) return nullptr;
        if (use == Use::OnDemand)
            while (on_demand() >= capacity_ && evictable()) evict_one();
        Entry& e = entries_[s];
        e.plan = std::move(plan);
        e.reserved = use == Use::Reserved;
        e.last_use = ++clock_;
        return e.plan.get();
    }

    // Never evict s's plan from now on (a graph captured with it may launch its kernels at any
    // later replay). No-op for a shape not cached.
    void pin(const AttnShape& s) {
        const auto it = entries_.find(s);
        if (it != entries_.end()) it->second.pinned = true;
    }

    size_t size() const { return entries_.size(); }
    // Entries not reserved (pinned or not): what the capacity bounds.
    size_t on_demand() const {
        size_t n = 0;
        for (const auto& kv : entries_) n += kv.second.reserved ? 0 : 1;
        return n;
    }
    size_t capacity() const { return capacity_; }

    // Visits every (shape, plan) in shape order.
    template <typename F>
    void for_each(F&& f) const {
        for (const auto& kv : entries_) f(kv.first, static_cast<const Plan&>(*kv.second.plan));
    }

    // Destroys every plan, reserved and pinned ones included (teardown: no hook is called).
    void clear() { entries_.clear(); }

private:
    struct Entry {
        std::unique_ptr<Plan> plan;
        bool reserved = false;
        bool pinned = false;
        uint64_t last_use = 0;
    };

    bool evictable() const {
        for (const auto& kv : entries_)
            if (!kv.second.reserved && !kv.second.pinned) return true;
        return false;
    }
    void evict_one() {
        auto victim = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
            const Entry& e = it->second;
            if (e.reserved || e.pinned) continue;
            if (victim == entries_.end() || e.last_use < victim->second.last_use) victim = it;
        }
        if (evict_hook_) evict_hook_(victim->first, *victim->second.plan);
        entries_.erase(victim);  // destroys the plan
    }

    size_t capacity_;
    std::map<AttnShape, Entry> entries_;
    uint64_t clock_ = 0;  // last_use stamps: larger = more recent
    EvictHook evict_hook_;
};

}  // namespace trt::cuda
