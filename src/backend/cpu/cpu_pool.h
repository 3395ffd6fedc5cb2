// The CPU kernels' own worker threads, in place of OpenMP teams.
//
// Why not OpenMP: libgomp's threads spin at every barrier for a count read once, when libgomp
// loads (GOMP_SPINCOUNT, OMP_WAIT_POLICY: out of a library's reach), and a region ends only
// when every member has reached its barrier. With another process busy on the cores, the
// member the scheduler parks stalls the rest for a time slice: 2 threads ran at 0.76x of one
// beside one busy process on 2 cores, 0.59x beside two
// (bench/results/2026-12-06-cpu-contention-baseline.md).
//
// How this pool avoids it: the calling thread and up to team - 1 workers claim parts
// [0, parts) one at a time from a shared counter. A worker that is not running claims
// nothing, and the caller does its share; the caller waits only for parts another thread
// has claimed and not yet finished. Workers spin briefly for the next job (the gaps between
// a step's ops are short), then sleep on a futex, so they cost nothing beside other work.
//
// Which thread runs a part never changes a result: a part writes its own outputs, and
// per-thread scratch is indexed by `slot` (0 for the caller, 1..team-1 for workers), a
// buffer no other running part uses. OpenBLAS and oneDNN run single-threaded inside a part
// (SerialLibrariesScope, cpu_threads.h): all parallelism is ours.
//
// A part that calls run_parts again runs that inner loop inline, in part order, in the
// enclosing part's slot: scratch indexed by slot is sized for the outer team (`threads`).
// Sessions stepped from two host threads at once each lease their own pool. A part that
// throws: the first exception (the caller's own first) is rethrown by run_parts once every
// claimed part has finished; parts not yet claimed then may not run.
#pragma once
#include <cstddef>
#include <type_traits>

namespace trt::cpu {

using PartFn = void (*)(void* ctx, size_t part, int slot);

// fn(ctx, part, slot) for every part in [0, parts), on the caller and up to team - 1
// workers; returns when every part has finished.
void run_parts(size_t parts, int team, PartFn fn, void* ctx);

// body(part, slot) for every part in [0, parts).
template <typename Body>
inline void run_parts(size_t parts, int team, Body&& body) {
    using B = std::remove_reference_t<Body>;
    run_parts(
        parts, team,
        [](void* ctx, size_t part, int slot) { (*static_cast<B*>(ctx))(part, slot); },
        const_cast<void*>(static_cast<const void*>(&body)));
}

// The slot of the part the calling thread is running (0 outside any part).
int current_slot();

// Worker threads started so far, over every pool (for tests).
int pool_worker_count();

}  // namespace trt::cpu
