#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/bf16.h"
#include "core/error.h"
#include "dist/communicator.h"

namespace trt::dist {
namespace {

// What the ranks of one world share: a reusable barrier and each rank's buffer of the
// collective in progress.
struct Shared {
    Shared(int n, std::chrono::milliseconds t)
        : size(n), timeout(t), buffers(static_cast<size_t>(n), nullptr) {}
    const int size;
    const std::chrono::milliseconds timeout;
    std::mutex mu;
    std::condition_variable cv;
    int arrived = 0;
    uint64_t generation = 0;
    std::vector<const void*> buffers;

    void barrier() {
        std::unique_lock<std::mutex> lock(mu);
        const uint64_t gen = generation;
        if (++arrived == size) {
            arrived = 0;
            ++generation;
            cv.notify_all();
            return;
        }
        // A rank that left (it failed, or stopped calling collectives) must not hang the
        // others forever: they fail after `timeout`, and the world is unusable after that.
        if (!cv.wait_for(lock, timeout, [&] { return generation != gen; }))
            fail(Status::Internal, "data parallel: a rank waited ", timeout.count(),
                 " ms for the others at a collective (world of ", size, "): one of them has "
                 "failed or left");
    }
};

class ThreadRank final : public Communicator {
public:
    ThreadRank(std::shared_ptr<Shared> shared, int rank) : shared_(std::move(shared)), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return shared_->size; }
    std::string name() const override { return "threads"; }
    void barrier() override {
        check_usable();
        shared_->barrier();
    }
    void all_reduce_sum(float* data, size_t n) override { reduce(data, n); }
    void all_reduce_sum(double* data, size_t n) override { reduce(data, n); }
    void all_reduce_sum_bf16(uint16_t* data, size_t n) override {
        check_usable();
        publish(data);
        std::vector<uint16_t> sum(static_cast<const uint16_t*>(shared_->buffers[0]),
                                  static_cast<const uint16_t*>(shared_->buffers[0]) + n);
        for (int r = 1; r < shared_->size; ++r) {
            const uint16_t* other = static_cast<const uint16_t*>(shared_->buffers[static_cast<size_t>(r)]);
            for (size_t i = 0; i < n; ++i)
                sum[i] = float_to_bf16(bf16_to_float(sum[i]) + bf16_to_float(other[i]));
        }
        shared_->barrier();
        std::copy(sum.begin(), sum.end(), data);
    }
    void all_gather(const void* mine, size_t bytes, void* all) override {
        check_usable();
        publish(mine);
        for (int r = 0; r < shared_->size; ++r)
            std::memcpy(static_cast<char*>(all) + static_cast<size_t>(r) * bytes,
                        shared_->buffers[static_cast<size_t>(r)], bytes);
        shared_->barrier();  // no one reads a buffer any more
    }
    void reduce_scatter_sum(float* data, const std::vector<size_t>& bounds) override {
        check_usable();
        publish(data);
        const size_t lo = bounds[static_cast<size_t>(rank_)], hi = bounds[static_cast<size_t>(rank_) + 1];
        std::vector<float> sum(static_cast<const float*>(shared_->buffers[0]) + lo,
                               static_cast<const float*>(shared_->buffers[0]) + hi);
        for (int r = 1; r < shared_->size; ++r) {
            const float* other = static_cast<const float*>(shared_->buffers[static_cast<size_t>(r)]);
            for (size_t i = lo; i < hi; ++i) sum[i - lo] += other[i];
        }
        shared_->barrier();  // no one reads a buffer any more
        std::copy(sum.begin(), sum.end(), data + lo);
    }
    void all_gather_parts(float* data, const std::vector<size_t>& bounds) override {
        check_usable();
        publish(data);
        for (int r = 0; r < shared_->size; ++r) {
            if (r == rank_) continue;
            const float* other = static_cast<const float*>(shared_->buffers[static_cast<size_t>(r)]);
            const size_t lo = bounds[static_cast<size_t>(r)], hi = bounds[static_cast<size_t>(r) + 1];
            std::copy(other + lo, other + hi, data + lo);  // part r: only rank r writes it
        }
        shared_->barrier();
    }
    // The others find out at their next collective, after the timeout (threads cannot be
    // ended from outside).
    void mark_failed() override { failed_ = true; }

private:
    // Every rank publishes its buffer; after a barrier each sums all of them in rank order
    // into its own scratch; after a second barrier (no one reads a buffer any more) each
    // writes the sum into its buffer.
    void check_usable() const {
        if (failed_)
            fail(Status::Internal, "data parallel: rank ", rank_, " failed earlier in this run; "
                 "its world cannot be used any more");
    }
    // Publishes this rank's buffer and waits until every rank has.
    void publish(const void* data) {
        {
            std::lock_guard<std::mutex> lock(shared_->mu);
            shared_->buffers[static_cast<size_t>(rank_)] = data;
        }
        shared_->barrier();
    }

    template <typename T>
    void reduce(T* data, size_t n) {
        check_usable();
        publish(data);
        std::vector<T> sum(static_cast<const T*>(shared_->buffers[0]),
                           static_cast<const T*>(shared_->buffers[0]) + n);
        for (int r = 1; r < shared_->size; ++r) {
            const T* other = static_cast<const T*>(shared_->buffers[static_cast<size_t>(r)]);
            for (size_t i = 0; i < n; ++i) sum[i] += other[i];
        }
        shared_->barrier();
        std::copy(sum.begin(), sum.end(), data);
    }

    std::shared_ptr<Shared> shared_;
    int rank_;
    bool failed_ = false;
};

}  // namespace

std::vector<std::shared_ptr<Communicator>> make_thread_world(int n,
                                                             std::chrono::milliseconds timeout) {
    TRT_CHECK(n >= 1, "make_thread_world: ", n, " ranks");
    auto shared = std::make_shared<Shared>(n, timeout);
    std::vector<std::shared_ptr<Communicator>> world;
    for (int r = 0; r < n; ++r) world.push_back(std::make_shared<ThreadRank>(shared, r));
    return world;
}

}  // namespace trt::dist
