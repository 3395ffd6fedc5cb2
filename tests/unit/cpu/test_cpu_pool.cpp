// The CPU kernels' thread pool (src/backend/cpu/cpu_pool.h): every part runs exactly once;
// no two parts running at once share a slot; nested loops run inline; an error in the caller's
// part comes back after the others finished; two host threads at once; a forked child; and
// the workers block signals and run OpenBLAS/oneDNN single-threaded.
#include <gtest/gtest.h>

#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_pool.h"

namespace {

using trt::cpu::run_parts;

// Runs `parts` parts on a team of `team` and checks each ran once, in a slot < team that no
// other running part held at the same time.
void check_job(size_t parts, int team) {
    std::vector<std::atomic<int>> runs(parts);
    std::vector<std::atomic<int>> busy(team > 0 ? team : 1);
    std::atomic<int> clashes{0}, bad_slot{0};
    run_parts(parts, team, [&](size_t part, int slot) {
        if (slot < 0 || slot >= std::max(team, 1)) {
            bad_slot++;
            return;
        }
        if (busy[slot].fetch_add(1) != 0) clashes++;
        runs[part]++;
        busy[slot].fetch_sub(1);
    });
    for (size_t p = 0; p < parts; p++) ASSERT_EQ(runs[p].load(), 1) << "part " << p;
    EXPECT_EQ(clashes.load(), 0);
    EXPECT_EQ(bad_slot.load(), 0);
}

TEST(CpuPool, EveryPartRunsOnceInItsOwnSlot) {
    for (int team : {1, 2, 3, 5})
        for (size_t parts : {0, 1, 2, 3, 7, 64, 1000}) {
            SCOPED_TRACE(testing::Message() << "team " << team << ", parts " << parts);
            check_job(parts, team);
        }
}

TEST(CpuPool, ThousandsOfJobsBackToBack) {
    // Short jobs one after another: the claim word, the done count and the wake-ups of
    // workers that are spinning, sleeping or still finishing the last job.
    for (int i = 0; i < 3000; i++) {
        std::atomic<long> sum{0};
        const size_t parts = 1 + i % 9;
        run_parts(parts, 1 + i % 4, [&](size_t part, int) { sum += (long)part + 1; });
        ASSERT_EQ(sum.load(), (long)(parts * (parts + 1) / 2)) << "job " << i;
    }
}

TEST(CpuPool, TwoPartsRunAtOnceOnTwoThreads) {
    // Each part waits for the other to start: only a worker can run the second.
    std::atomic<int> started{0};
    std::vector<int> slots(2, -1);
    std::vector<int> omp_threads(2, -1);
    std::vector<int> blocks_sigint(2, -1);
    run_parts(2, 2, [&](size_t part, int slot) {
        started++;
        while (started.load() < 2) std::this_thread::yield();
        slots[part] = slot;
        omp_threads[part] = omp_get_max_threads();
        sigset_t set;
        pthread_sigmask(SIG_BLOCK, nullptr, &set);
        blocks_sigint[part] = sigismember(&set, SIGINT) && !sigismember(&set, SIGSEGV);
    });
    ASSERT_NE(slots[0], slots[1]);
    for (int p = 0; p < 2; p++) {
        if (slots[p] == 0) continue;  // the caller: its settings are the host's
        EXPECT_EQ(omp_threads[p], 1) << "a worker would start OpenMP teams in OpenBLAS/oneDNN";
        EXPECT_EQ(blocks_sigint[p], 1)
            << "a worker takes the host's signals, or hides its faults from crash handlers";
    }
    EXPECT_GE(trt::cpu::pool_worker_count(), 1);
}

TEST(CpuPool, NestedLoopsRunInlineInTheirSlot) {
    std::atomic<int> mismatched{0}, inner_runs{0};
    run_parts(8, 3, [&](size_t, int outer) {
        run_parts(5, 3, [&](size_t, int inner) {
            if (inner != outer) mismatched++;
            inner_runs++;
        });
    });
    EXPECT_EQ(inner_runs.load(), 40);
    EXPECT_EQ(mismatched.load(), 0);
}

TEST(CpuPool, AnErrorInAWorkersPartComesBackToTheCaller) {
    // Two parts that wait for each other: one runs on a worker, and that one throws.
    std::atomic<int> started{0};
    EXPECT_THROW(run_parts(2, 2,
                           [&](size_t, int slot) {
                               started++;
                               while (started.load() < 2) std::this_thread::yield();
                               if (slot != 0) throw std::runtime_error("worker part failed");
                           }),
                 std::runtime_error);
    check_job(50, 2);
}

TEST(CpuPool, ALoopOfOneThreadInsideAPartUsesThatPartsSlot) {
    std::atomic<int> mismatched{0};
    run_parts(6, 2, [&](size_t, int outer) {
        trt::cpu::parallel_for_slots(4, 1, [&](int, int inner) {
            if (inner != outer) mismatched++;
        });
        if (trt::cpu::current_slot() != outer) mismatched++;
    });
    EXPECT_EQ(mismatched.load(), 0);
    EXPECT_EQ(trt::cpu::current_slot(), 0);
}

TEST(CpuPool, AnErrorInTheCallersPartComesBackAndThePoolGoesOn) {
    // Only the caller's parts throw (a worker's would end the process, as with OpenMP). A
    // spinning worker can take every part of a job of empty parts before the caller claims
    // one; parts that take a while leave the caller some.
    int thrown = 0;
    for (int attempt = 0; attempt < 100 && thrown == 0; attempt++) {
        try {
            run_parts(16, 2, [&](size_t, int slot) {
                if (slot == 0) throw std::runtime_error("part failed");
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            });
        } catch (const std::runtime_error&) {
            thrown++;
        }
    }
    EXPECT_EQ(thrown, 1);
    check_job(50, 2);
}

TEST(CpuPool, TwoHostThreadsAtOnce) {
    std::atomic<int> failures{0};
    auto host = [&] {
        for (int i = 0; i < 300; i++) {
            std::atomic<int> count{0};
            run_parts(11, 2, [&](size_t, int) { count++; });
            if (count.load() != 11) failures++;
        }
    };
    std::thread a(host), b(host);
    a.join();
    b.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST(CpuPool, WorksInAForkedChild) {
    check_job(20, 2);  // the parent has workers now
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        std::atomic<int> count{0};
        run_parts(20, 2, [&](size_t, int) { count++; });
        _exit(count.load() == 20 ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
