// runtime.threads = 0 on the CPU (cpu_topology.h): one thread per physical core of the
// affinity mask, SMT siblings once, capped by a cgroup quota — on fake machines given as
// files (/sys topology, /proc/self/cgroup, cgroup v2 cpu.max and v1 cfs files).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "backend/cpu/cpu_topology.h"

namespace {

using trt::cpu::CpuTopology;

struct FakeMachine {
    std::map<std::string, std::string> files;

    // Logical CPU `cpu` as hardware thread of core `core` on package `package`.
    void cpu(int cpu, int package, int core) {
        const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        files[dir + "physical_package_id"] = std::to_string(package) + "\n";
        files[dir + "core_id"] = std::to_string(core) + "\n";
    }
    trt::cpu::ReadFile reader() const {
        return [this](const std::string& path) {
            const auto it = files.find(path);
            return it == files.end() ? std::string() : it->second;
        };
    }
};

std::vector<int> range(int n) {
    std::vector<int> v;
    for (int i = 0; i < n; ++i) v.push_back(i);
    return v;
}

// 8 cores x 2 hardware threads, Linux numbering: CPUs 0-7 the first threads, 8-15 the second.
FakeMachine smt_machine() {
    FakeMachine m;
    for (int c = 0; c < 16; ++c) m.cpu(c, 0, c % 8);
    return m;
}

TEST(CpuTopology, OneThreadPerPhysicalCore) {
    const FakeMachine m = smt_machine();
    const CpuTopology t = trt::cpu::probe_topology(range(16), m.reader());
    EXPECT_EQ(t.cpus, 16);
    EXPECT_EQ(t.cores, 8);
    EXPECT_EQ(t.quota, 0);
    EXPECT_EQ(trt::cpu::default_threads(t), 8);
    EXPECT_EQ(trt::cpu::describe_default_threads(t), "physical cores: 8 of 16 CPUs");
}

TEST(CpuTopology, TheAffinityMaskDecides) {
    const FakeMachine m = smt_machine();
    // Both threads of cores 0 and 1 (taskset -c 0,1,8,9): 2 cores.
    EXPECT_EQ(trt::cpu::default_threads(trt::cpu::probe_topology({0, 1, 8, 9}, m.reader())), 2);
    // One thread of each of 3 cores.
    EXPECT_EQ(trt::cpu::default_threads(trt::cpu::probe_topology({0, 1, 2}, m.reader())), 3);
}

TEST(CpuTopology, CoresOfTwoPackagesAreDistinct) {
    FakeMachine m;
    for (int c = 0; c < 8; ++c) m.cpu(c, c / 4, c % 4);  // core ids repeat across packages
    EXPECT_EQ(trt::cpu::probe_topology(range(8), m.reader()).cores, 8);
}

TEST(CpuTopology, UnreadableTopologyFallsBackToTheCpus) {
    FakeMachine m;  // no /sys at all
    const CpuTopology t = trt::cpu::probe_topology(range(6), m.reader());
    EXPECT_EQ(t.cores, 0);
    EXPECT_EQ(trt::cpu::default_threads(t), 6);
    EXPECT_EQ(trt::cpu::describe_default_threads(t), "6 CPUs (cores unknown)");
    EXPECT_EQ(trt::cpu::default_threads(trt::cpu::probe_topology({}, m.reader())), 1);
}

TEST(CpuTopology, CgroupV2QuotaCapsTheCount) {
    FakeMachine m = smt_machine();
    m.files["/proc/self/cgroup"] = "0::/kubepods/pod1/ctr\n";
    m.files["/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max"] = "max 100000\n";
    m.files["/sys/fs/cgroup/kubepods/pod1/cpu.max"] = "250000 100000\n";  // 2.5 CPUs
    m.files["/sys/fs/cgroup/kubepods/cpu.max"] = "800000 100000\n";
    const CpuTopology t = trt::cpu::probe_topology(range(16), m.reader());
    EXPECT_DOUBLE_EQ(t.quota, 2.5);              // the smallest on the way up
    EXPECT_EQ(trt::cpu::default_threads(t), 3);  // rounded up
    EXPECT_EQ(trt::cpu::describe_default_threads(t),
              "physical cores: 8 of 16 CPUs, cgroup quota 2.5 CPUs");
    // A quota above the cores changes nothing.
    m.files["/sys/fs/cgroup/kubepods/pod1/cpu.max"] = "max 100000\n";
    EXPECT_EQ(trt::cpu::default_threads(trt::cpu::probe_topology(range(16), m.reader())), 8);
}

TEST(CpuTopology, CgroupV1QuotaCapsTheCount) {
    FakeMachine m = smt_machine();
    m.files["/proc/self/cgroup"] =
        "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n";
    m.files["/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us"] = "400000\n";
    m.files["/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us"] = "100000\n";
    EXPECT_EQ(trt::cpu::default_threads(trt::cpu::probe_topology(range(16), m.reader())), 4);
    m.files["/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us"] = "-1\n";  // none
    EXPECT_EQ(trt::cpu::default_threads(trt::cpu::probe_topology(range(16), m.reader())), 8);
}

TEST(CpuTopology, MalformedFilesAreNoQuota) {
    FakeMachine m = smt_machine();
    m.files["/proc/self/cgroup"] = "garbage\n0::/x\n::\n";
    m.files["/sys/fs/cgroup/x/cpu.max"] = "lots 0\n";
    EXPECT_EQ(trt::cpu::probe_topology(range(16), m.reader()).quota, 0);
    m.files["/sys/fs/cgroup/x/cpu.max"] = "100000 0\n";
    EXPECT_EQ(trt::cpu::probe_topology(range(16), m.reader()).quota, 0);
}

// This machine: a count in [1, CPUs of the mask].
TEST(CpuTopology, ThisMachineIsSane) {
    const CpuTopology t = trt::cpu::this_machine();
    EXPECT_GE(t.cpus, 1);
    EXPECT_LE(t.cores, t.cpus);
    const int n = trt::cpu::default_threads(t);
    EXPECT_GE(n, 1);
    EXPECT_LE(n, t.cpus);
}

}  // namespace
