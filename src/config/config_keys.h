// The config key table: one descriptor per key (section, name, type, bounds, whether it
// affects the losses, its field in RunConfig). It drives parsing, validation, the typed
// getters, get_string's TOML text and dump() (config_toml.cpp), so they cannot drift apart.
// Add a key here (docs/ARCHITECTURE.md, "Add a config key"). Free of toml++, like config.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_config.h"

namespace trt::config_keys {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr double kNoBound = std::numeric_limits<double>::quiet_NaN();

enum class KType { Int, Seed, Float, Bool, Path, Enum, Betas, Names };

// A Names key: at most this many strings, each 1 to kMaxNameBytes bytes.
constexpr size_t kMaxNames = 4096;
constexpr size_t kMaxNameBytes = 1024;

// The key table's affects_losses column: whether a different value makes a run compute other
// losses - the model, the data it sees and in what order, the optimizer, the precision
// (runtime.device too: it decides what "auto" precision is) - so that a run resumed under it
// is not the uninterrupted one (Session warns, Config::loss_entries). runtime.threads is one:
// the CPU's results are bitwise the same per thread count. Paths, cadences, logging, and
// switches that give the same bits or only another order of float sums (data.placement,
// accel.cuda_graphs, accel.attention, accel.cpu_matmul, dist.zero) are kNoLoss. A KeyDesc
// cannot be made without it: every new key is decided.
enum class Losses { Affected = 1, Unaffected = 2 };
constexpr Losses kLoss = Losses::Affected;
constexpr Losses kNoLoss = Losses::Unaffected;

struct KeyDesc {
    KeyDesc(const char* s, const char* n, KType t, Losses l)
        : section(s), name(n), type(t), losses(l) {}
    const char* section;
    const char* name;
    KType type;
    Losses losses;
    // Exactly the accessor(s) of `type` are set.
    int64_t& (*i64)(RunConfig&) = nullptr;
    uint64_t& (*u64)(RunConfig&) = nullptr;
    double& (*f64)(RunConfig&) = nullptr;
    double& (*f64b)(RunConfig&) = nullptr;  // Betas: the second element
    bool& (*b)(RunConfig&) = nullptr;
    std::string& (*str)(RunConfig&) = nullptr;
    std::vector<std::string>& (*names)(RunConfig&) = nullptr;
    int (*eget)(const RunConfig&) = nullptr;
    void (*eset)(RunConfig&, int) = nullptr;
    const char* (*ename)(int) = nullptr;  // to_string of the enum's value i ("?" past the end)
    // Ranges. Int/Seed: [imin, imax]. Float/Betas: fmin..fmax, NaN = unbounded.
    int64_t imin = 0, imax = kI64Max;
    double fmin = kNoBound, fmax = kNoBound;
    bool fmin_excl = false, fmax_excl = false;
    // Int: the string "auto" is accepted too, stored as 0 (outside [imin, imax]).
    bool auto_ok = false;
    bool is_auto(RunConfig& r) const { return auto_ok && i64(r) == 0; }

    std::string path() const { return std::string(section) + "." + name; }
};

// The table, in the order of dump() and of docs/CONFIG.md.
const std::vector<KeyDesc>& keys();
// The sections, in table order ("model", "lora", ...).
const std::vector<std::string>& sections();
// The key's descriptor, or null: by section and name, or by dotted path ("optim.lr").
const KeyDesc* find_key(std::string_view section, std::string_view name);
const KeyDesc* find_key(std::string_view dotted);
// An Enum key's value names, in enum order.
std::vector<std::string> enum_names(const KeyDesc& d);
// Every key's dotted path, in table order.
std::vector<std::string> all_paths();

}  // namespace trt::config_keys
