// Config: a run's TOML document plus its validated RunConfig. Every change (load, set) is
// validated as a whole; a failed change leaves the Config as it was. toml++ is used in
// exactly one translation unit (config_toml.cpp); this header is free of it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/run_config.h"

namespace trt {

class Config {
public:
    // All defaults; relative paths resolve against base_dir ("" = current directory).
    Config();
    // Throws Error(Io) if unreadable, Error(Config) with file:line and key path if invalid.
    static Config from_file(const std::string& path);
    // source_name is used in messages ("<string>" when empty).
    static Config from_string(std::string_view toml, const std::string& base_dir,
                              const std::string& source_name = "");

    Config(const Config&);
    Config& operator=(const Config&);
    Config(Config&&) noexcept;
    Config& operator=(Config&&) noexcept;
    ~Config();

    // key = dotted path ("optim.betas"), value = TOML value text ("[0.9, 0.95]").
    // Throws Error(Config) naming the key on unknown key, wrong type, out-of-range value.
    void set(const std::string& key, const std::string& toml_value);

    // Resolved values (defaults applied); throws Error(Config) on unknown key or other type.
    int64_t get_int(const std::string& key) const;
    double get_double(const std::string& key) const;  // also accepts integer keys
    bool get_bool(const std::string& key) const;
    // String keys: the string; any other key: its value as TOML text.
    std::string get_string(const std::string& key) const;

    // Every key with its resolved value, as TOML with [sections].
    std::string dump() const;
    // The keys whose value changes the losses of a run (the key table's affects_losses
    // column) with their values as dump() writes them, in dump() order: what a resumed run
    // must share with its checkpoint's config to continue the uninterrupted run.
    std::vector<std::pair<std::string, std::string>> loss_entries() const;

    const RunConfig& run() const;
    const std::string& base_dir() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A dump() text read back as "section.key" -> value text, unvalidated: a checkpoint's config,
// which may come from an older writer (keys it did not know are absent) and name paths that
// no longer exist.
std::map<std::string, std::string> dump_entries(const std::string& dump);

// Whether `key` ("train.seq_len") is in the key table's affects_losses column. Throws
// Error(Config) on an unknown key.
bool key_affects_losses(const std::string& key);

}  // namespace trt
