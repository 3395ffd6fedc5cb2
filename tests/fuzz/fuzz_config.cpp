// fuzz_config: a run config's TOML text (src/config), the parser every trainrt_config_from_*
// call and every `--set` goes through.
//
// Input: TOML text, optionally followed by a set request "#%set KEY=VALUE" (the last such
// marker; everything after the first '=' is the value, newlines included).
//   1. Config::from_string(text) (if refused, the defaults, so set is fuzzed anyway);
//   2. Config::set(KEY, VALUE), then get_string(KEY);
//   3. dump(), and the dump parsed again: a dump must always re-parse, to the same dump
//      (it is what `trainrt config` prints and what a checkpoint's state.json keeps).
// trt::Error is the parser's clean refusal; anything else (a crash, a sanitizer report,
// another exception, a failed round trip) is a finding.
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"
#include "core/error.h"
#include "fuzz_util.h"

namespace {
constexpr std::string_view kSetMarker = "#%set ";
const std::string kBase = "/fuzz/base";  // relative paths resolve against this
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in(reinterpret_cast<const char*>(data), size);
    std::string_view text = in, key, value;
    bool have_set = false;
    if (const size_t at = in.rfind(kSetMarker); at != std::string_view::npos) {
        text = in.substr(0, at);
        const std::string_view req = in.substr(at + kSetMarker.size());
        const size_t eq = req.find('=');
        key = req.substr(0, eq);
        value = eq == std::string_view::npos ? std::string_view() : req.substr(eq + 1);
        have_set = true;
    }

    trt::Config cfg;
    try {
        cfg = trt::Config::from_string(text, kBase, "fuzz.toml");
    } catch (const trt::Error& e) {
        fuzz::refused("Config::from_string", e);
        cfg = trt::Config::from_string("", kBase, "empty.toml");  // the defaults
    }
    if (have_set) {
        try {
            cfg.set(std::string(key), std::string(value));
        } catch (const trt::Error& e) {
            fuzz::refused("Config::set", e);
        }
        try {
            (void)cfg.get_string(std::string(key));
        } catch (const trt::Error&) {
        }
    }

    const std::string dump = cfg.dump();
    std::string again;
    try {
        again = trt::Config::from_string(dump, cfg.base_dir(), "dump.toml").dump();
    } catch (const trt::Error& e) {
        fuzz::die(std::string("Config::dump() does not parse back: ") + e.what() + "\n" + dump);
    }
    if (again != dump) fuzz::die("Config::dump() changes when parsed back:\n" + dump + "\n---\n" + again);
    return 0;
}
