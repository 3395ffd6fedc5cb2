// `trainrt bench --profile`: the per-op profile of CONFIG's train step (runtime.profile_ops,
// trainrt_session_profile), at 1 thread and at the config's threads on the CPU, with each
// op's parallel fraction and its Amdahl projection to more threads. Public C API only.
#pragma once
#include <string>
#include <vector>

#include "cli_common.h"

namespace trainrt_cli {

struct BenchProfileArgs {
    RunArgs run;  // CONFIG, --set, --steps (the profiled steps)
    long long warmup = 0;
    long long rounds = 1;  // sessions per thread count, alternating; each op's median is shown
    std::string json_path;                    // "" = no JSON
    std::vector<int> project_to{16, 32, 64};  // thread counts of the projection
};

// Prints the profile as tables on stdout (and the JSON to json_path); the exit status of
// `trainrt bench` (0 ok, 1 error, 3 out of memory).
int bench_profile(const BenchProfileArgs& args);

}  // namespace trainrt_cli
