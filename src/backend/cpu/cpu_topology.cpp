#include "backend/cpu/cpu_topology.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace trt::cpu {
namespace {

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
    return s;
}

// "123" -> 123; false for anything else (an empty or unreadable file).
bool parse_int(const std::string& text, long long& out) {
    const std::string s = trimmed(text);
    if (s.empty()) return false;
    char* end = nullptr;
    out = std::strtoll(s.c_str(), &end, 10);
    return end != nullptr && *end == '\0';
}

// CPUs' worth of a v2 cpu.max ("max 100000" = none, "400000 100000" = 4), 0 = none.
double cpu_max_quota(const std::string& text) {
    std::istringstream in(trimmed(text));
    std::string quota;
    long long period = 0;
    if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
    long long q = 0;
    if (!parse_int(quota, q) || q <= 0) return 0;
    return static_cast<double>(q) / static_cast<double>(period);
}

// The smallest quota over `dir` and its ancestors up to `root` (a parent's quota caps its
// children), 0 = none.
template <typename QuotaAt>
double smallest_up(std::string dir, const std::string& root, QuotaAt quota_at) {
    double best = 0;
    for (;;) {
        const double q = quota_at(dir == "/" || dir.empty() ? root : root + dir);
        if (q > 0 && (best == 0 || q < best)) best = q;
        if (dir.empty() || dir == "/") break;
        const size_t slash = dir.find_last_of('/');
        dir = slash == std::string::npos || slash == 0 ? std::string("/") : dir.substr(0, slash);
    }
    return best;
}

double cgroup_quota(const ReadFile& read) {
    std::istringstream lines(read("/proc/self/cgroup"));
    std::string line;
    double best = 0;
    auto keep = [&](double q) {
        if (q > 0 && (best == 0 || q < best)) best = q;
    };
    while (std::getline(lines, line)) {
        // hierarchy-ID:controllers:path
        const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (line.compare(0, a, "0") == 0 && controllers.empty()) {  // v2
            keep(smallest_up(path, "/sys/fs/cgroup", [&](const std::string& dir) {
                return cpu_max_quota(read(dir + "/cpu.max"));
            }));
            continue;
        }
        std::string c;
        std::istringstream list(controllers);
        bool cpu = false;
        while (std::getline(list, c, ',')) cpu = cpu || c == "cpu";
        if (!cpu) continue;
        for (const char* mount : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {  // v1
            keep(smallest_up(path, mount, [&](const std::string& dir) {
                long long q = 0, p = 0;
                if (!parse_int(read(dir + "/cpu.cfs_quota_us"), q) ||
                    !parse_int(read(dir + "/cpu.cfs_period_us"), p) || q <= 0 || p <= 0)
                    return 0.0;
                return static_cast<double>(q) / static_cast<double>(p);
            }));
        }
    }
    return best;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    if (!f) return "";
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

}  // namespace

CpuTopology probe_topology(const std::vector<int>& cpus, const ReadFile& read) {
    CpuTopology t;
    t.cpus = static_cast<int>(cpus.size());
    std::set<std::pair<long long, long long>> cores;
    bool readable = !cpus.empty();
    for (int cpu : cpus) {
        const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        long long package = 0, core = 0;
        if (!parse_int(read(dir + "physical_package_id"), package) ||
            !parse_int(read(dir + "core_id"), core)) {
            readable = false;
            break;
        }
        cores.insert({package, core});
    }
    t.cores = readable ? static_cast<int>(cores.size()) : 0;
    t.quota = cgroup_quota(read);
    return t;
}

int default_threads(const CpuTopology& t) {
    int n = t.cores > 0 ? t.cores : t.cpus;
    if (t.quota > 0) n = std::min(n, static_cast<int>(std::ceil(t.quota - 1e-9)));
    return std::max(1, n);
}

std::string describe_default_threads(const CpuTopology& t) {
    std::string s = t.cores > 0 ? "physical cores: " + std::to_string(t.cores) + " of " +
                                      std::to_string(t.cpus) + " CPUs"
                                : std::to_string(t.cpus) + " CPUs (cores unknown)";
    if (t.quota > 0) {
        std::ostringstream q;
        q << t.quota;
        s += ", cgroup quota " + q.str() + " CPUs";
    }
    return s;
}

CpuTopology this_machine() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int i = 0; i < CPU_SETSIZE; ++i)
            if (CPU_ISSET(i, &set)) cpus.push_back(i);
    }
    if (cpus.empty()) {  // no mask: every online CPU
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long i = 0; i < std::max(1L, n); ++i) cpus.push_back(static_cast<int>(i));
    }
    return probe_topology(cpus, read_file);
}

}  // namespace trt::cpu
