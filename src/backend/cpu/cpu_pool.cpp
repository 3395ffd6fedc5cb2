// The pool behind run_parts (cpu_pool.h): a job protocol on three atomics, futex sleeps, and a
// free list of pools.
//
// A job is posted in `claim`, a 64-bit word: the job's id in the high half, the next unclaimed
// part in the low half. A thread claims a part by reading the job's description (fn, ctx,
// parts, team), then compare-and-swapping `claim` from the value it read to value + 1: success
// means the job it read is still the one posted, so its description was the job's own (the
// caller closes `claim` before it rewrites the description: a seqlock). A closed job's low
// half is kClosed, above any part count, so nothing more can be claimed from it.
#include "backend/cpu/cpu_pool.h"

#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace trt::cpu {
namespace {

// How long an idle thread spins before it sleeps: a worker waiting for the next job, the
// caller waiting for a part in progress. Long enough to span the gap between two ops of a
// step on a quiet machine (a futex wake-up costs 5-50 us); short enough that a parked worker
// gives its core back well inside a scheduler time slice beside busy work.
constexpr auto kSpin = std::chrono::microseconds(50);

constexpr uint64_t kClosed = 0xFFFFFFFFu;  // claim's low half once a job is over

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

// Sleep while *word == expected (spurious wake-ups allowed), and wake sleepers on word.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
#ifdef __linux__
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
            nullptr, 0);
#else
    (void)word, (void)expected;
    std::this_thread::yield();
#endif
}
void futex_wake(std::atomic<uint32_t>& word, int count) {
#ifdef __linux__
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr,
            nullptr, 0);
#else
    (void)word, (void)count;
#endif
}

// Spin up to kSpin until done() holds; false if it still does not.
template <typename Done>
bool spin_until(Done done) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (done()) return true;
            cpu_relax();
        }
        if (std::chrono::steady_clock::now() >= until) return done();
    }
}

// What the thread running a part is doing, so a nested run_parts runs inline in its slot.
thread_local bool t_in_part = false;
thread_local int t_slot = 0;

std::atomic<int> g_workers_started{0};

class Pool {
public:
    Pool() = default;
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;

    // Stops and joins the workers (none may be inside a job).
    ~Pool() {
        stop_.store(true);
        wake_.fetch_add(1);
        futex_wake(wake_, INT_MAX);
        for (auto& t : workers_) t.join();
    }

    void ensure_workers(int n) {
        if ((int)workers_.size() >= n) return;
        // Workers take no asynchronous signals: a host's handlers run on its own threads (a
        // handler on a thread in the middle of a kernel could find any stack pointer,
        // src/capi/signal_stack.h). Faults stay unblocked, so a crash handler (a host's, a
        // sanitizer's) still reports a fault in a worker.
        // (The caller's mask comes back even when a thread cannot be started: std::thread
        // throws on EAGAIN, a process or cgroup thread limit.)
        struct MaskAll {
            sigset_t saved;
            MaskAll() {
                sigset_t all;
                sigfillset(&all);
                for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS})
                    sigdelset(&all, fault);
                pthread_sigmask(SIG_SETMASK, &all, &saved);
            }
            ~MaskAll() { pthread_sigmask(SIG_SETMASK, &saved, nullptr); }
        } mask;
        while ((int)workers_.size() < n) {
            const int slot = (int)workers_.size() + 1;
            workers_.emplace_back([this, slot] { work(slot); });
            g_workers_started.fetch_add(1);
        }
    }

    void run(size_t parts, int team, PartFn fn, void* ctx) {
        // Post: `claim` is closed (the last job closed it), so the description can be
        // rewritten; then open the job under its new id and wake the workers.
        const uint64_t id = ++job_id_ & 0xFFFFFFFFu;
        done_.store(0, std::memory_order_relaxed);
        worker_failed_.store(false, std::memory_order_relaxed);
        worker_error_ = nullptr;
        fn_.store(fn, std::memory_order_relaxed);
        ctx_.store(ctx, std::memory_order_relaxed);
        parts_.store(parts, std::memory_order_relaxed);
        team_.store(team, std::memory_order_relaxed);
        claim_.store(id << 32, std::memory_order_release);
        wake_.fetch_add(1, std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake(wake_, INT_MAX);

        // Work alongside, then close the job and wait for the parts others hold.
        uint32_t mine = 0;
        std::exception_ptr error;
        t_in_part = true;
        t_slot = 0;
        try {
            uint64_t v = claim_.load(std::memory_order_acquire);
            while ((v & 0xFFFFFFFFu) < parts) {
                if (!claim_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) continue;
                mine++;  // counted before it runs: a part that throws was still claimed
                fn(ctx, (size_t)(v & 0xFFFFFFFFu), 0);
                v = claim_.load(std::memory_order_acquire);
            }
        } catch (...) {
            error = std::current_exception();
        }
        t_in_part = false;
        const uint64_t last = claim_.exchange(id << 32 | kClosed, std::memory_order_acq_rel);
        const uint32_t claimed = (uint32_t)std::min<uint64_t>(last & 0xFFFFFFFFu, parts);
        const uint32_t theirs = claimed - mine;
        if (!spin_until([&] { return done_.load(std::memory_order_acquire) == theirs; })) {
            caller_sleeping_.store(1, std::memory_order_seq_cst);
            for (uint32_t d; (d = done_.load(std::memory_order_seq_cst)) != theirs;)
                futex_wait(done_, d);
            caller_sleeping_.store(0, std::memory_order_relaxed);
        }
        // (Every worker's part has finished: worker_error_ is written and visible.)
        if (error) std::rethrow_exception(error);
        if (worker_error_) std::rethrow_exception(worker_error_);
    }

private:
    void work(int slot) {
        // OpenBLAS and oneDNN take their thread count from the calling thread's OpenMP
        // setting: on a worker they run single-threaded, inside our part (cpu_threads.h).
        omp_set_num_threads(1);
#ifdef __linux__
        pthread_setname_np(pthread_self(), "trainrt-cpu");
#endif
        t_in_part = true;
        t_slot = slot;
        uint32_t seen = wake_.load(std::memory_order_acquire);
        for (;;) {
            // (Checked before every wait: a worker that starts after its pool was told to
            // stop has already seen the last wake-up.)
            if (stop_.load()) return;
            take_parts(slot);
            // Wait for the next job: spin, then sleep.
            if (!spin_until([&] { return wake_.load(std::memory_order_acquire) != seen; })) {
                sleepers_.fetch_add(1, std::memory_order_seq_cst);
                while (wake_.load(std::memory_order_seq_cst) == seen) futex_wait(wake_, seen);
                sleepers_.fetch_sub(1, std::memory_order_relaxed);
            }
            seen = wake_.load(std::memory_order_acquire);
        }
    }

    void take_parts(int slot) {
        for (;;) {
            uint64_t v = claim_.load(std::memory_order_acquire);
            const PartFn fn = fn_.load(std::memory_order_relaxed);
            void* const ctx = ctx_.load(std::memory_order_relaxed);
            const size_t parts = parts_.load(std::memory_order_relaxed);
            const int team = team_.load(std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_acquire);
            if (slot >= team || (v & 0xFFFFFFFFu) >= parts) return;  // not invited, or all taken
            if (!claim_.compare_exchange_strong(v, v + 1, std::memory_order_acq_rel)) continue;
            try {
                fn(ctx, (size_t)(v & 0xFFFFFFFFu), slot);
            } catch (...) {  // the first one goes back to the caller (run rethrows it)
                if (!worker_failed_.exchange(true)) worker_error_ = std::current_exception();
            }
            done_.fetch_add(1, std::memory_order_seq_cst);
            if (caller_sleeping_.load(std::memory_order_seq_cst)) futex_wake(done_, 1);
        }
    }

    std::atomic<uint64_t> claim_{kClosed};
    std::atomic<PartFn> fn_{nullptr};
    std::atomic<void*> ctx_{nullptr};
    std::atomic<size_t> parts_{0};
    std::atomic<int> team_{0};
    alignas(64) std::atomic<uint32_t> done_{0};  // parts finished by workers; the caller's futex
    std::atomic<uint32_t> caller_sleeping_{0};
    alignas(64) std::atomic<uint32_t> wake_{0};  // bumped per job; the workers' futex
    std::atomic<int> sleepers_{0};
    std::atomic<bool> stop_{false};
    std::atomic<bool> worker_failed_{false};
    std::exception_ptr worker_error_;  // the first exception of a worker's part in this job
    uint64_t job_id_ = 0;              // the caller's only
    std::vector<std::thread> workers_;
};

// Pools not in use. Leased per run_parts call: one host thread keeps reusing the same pool;
// two at once get two. Never freed while the process runs (a pool's workers sleep); the
// Shutdown object joins the idle ones when the library is unloaded or the process exits.
struct Registry {
    std::mutex mutex;
    std::vector<Pool*> idle;
    bool closed = false;
};

// A forked child has none of the parent's workers (and maybe a held mutex): it starts a new
// registry and leaks the parent's, pools included.
std::atomic<Registry*> g_registry{nullptr};
void new_registry_in_child() { g_registry.store(new Registry); }

Registry& registry() {
    static const bool once = [] {
        g_registry.store(new Registry);  // outlives every static destructor
        pthread_atfork(nullptr, nullptr, new_registry_in_child);
        return true;
    }();
    (void)once;
    return *g_registry.load();
}

struct Shutdown {
    ~Shutdown() {
        Registry& r = registry();
        std::vector<Pool*> pools;
        {
            std::lock_guard<std::mutex> lock(r.mutex);
            r.closed = true;
            pools.swap(r.idle);
        }
        for (Pool* p : pools) delete p;
    }
} g_shutdown;

Pool* lease() {
    Registry& r = registry();
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        if (!r.idle.empty()) {
            Pool* p = r.idle.back();
            r.idle.pop_back();
            return p;
        }
    }
    return new Pool;
}

void give_back(Pool* p) {
    Registry& r = registry();
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        if (!r.closed) {
            r.idle.push_back(p);
            return;
        }
    }
    delete p;
}

}  // namespace

void run_parts(size_t parts, int team, PartFn fn, void* ctx) {
    if (parts == 0) return;
    if (parts < (size_t)team) team = (int)parts;
    // (A part count must fit the claim word's low half, below kClosed.)
    if (team <= 1 || t_in_part || parts >= kClosed) {
        for (size_t p = 0; p < parts; p++) fn(ctx, p, t_in_part ? t_slot : 0);
        return;
    }
    Pool* pool = lease();
    struct Return {
        Pool* p;
        ~Return() { give_back(p); }
    } back{pool};
    pool->ensure_workers(team - 1);
    pool->run(parts, team, fn, ctx);
}

int current_slot() { return t_in_part ? t_slot : 0; }

int pool_worker_count() { return g_workers_started.load(); }

}  // namespace trt::cpu
