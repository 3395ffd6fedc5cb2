// What `runtime.threads = 0` means on the CPU (issue 42): one thread per physical core this
// process may run on. The cores are those of the CPUs in the process's affinity mask, a core's
// SMT siblings counted once (a second hardware thread shares its core's FPUs and caches: dense
// kernels gain little from it and a straggler sibling stalls every barrier), and never more
// than a cgroup CPU quota allows (a container given 4 CPUs of a 64-core host). This is also
// PyTorch's default (torch.get_num_threads() = physical cores).
//
// The probing is split from the reading of files so that tests can give it a machine: a fake
// /sys and /proc through `read`.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace trt::cpu {

struct CpuTopology {
    int cpus = 0;      // logical CPUs in the affinity mask
    int cores = 0;     // distinct (package, core) among them; 0 = the topology was unreadable
    double quota = 0;  // CPUs' worth of the cgroup quota (cpu.max), 0 = no quota
};

// The contents of a file, or "" when it cannot be read.
using ReadFile = std::function<std::string(const std::string& path)>;

// The topology of `cpus` (logical CPU numbers) from /sys/devices/system/cpu/cpuN/topology
// (physical_package_id, core_id) and the quota from the process's cgroup (/proc/self/cgroup;
// v2 cpu.max up the hierarchy, the smallest; v1 cpu.cfs_quota_us / cpu.cfs_period_us).
CpuTopology probe_topology(const std::vector<int>& cpus, const ReadFile& read);

// The thread count for runtime.threads = 0: the cores (the CPUs when the cores are unknown),
// capped by the quota rounded up, at least 1.
int default_threads(const CpuTopology& t);
// How that count came about, for the log ("physical cores: 8 of 16 CPUs", "cgroup quota 4").
std::string describe_default_threads(const CpuTopology& t);

// This process, now (sched_getaffinity and the real files).
CpuTopology this_machine();

}  // namespace trt::cpu
