// Generation speed with and without the KV cache, side by side in one run: the same session
// (a config, optionally a checkpoint's weights), the same prompt and seed, N tokens each way;
// prints tokens/s of both, the ratio, and whether the tokens are identical (they must be).
//   sample_speed CONFIG [CHECKPOINT] [--tokens N] [--prompt TEXT] [--temperature T] [--set K=V]...
//                [--cached-only]
// The prompt is taken as bytes (byte-level models such as the demo's). bench/README.md.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/error.h"
#include "runtime/session.h"

using namespace trt;

int main(int argc, char** argv) try {
    std::string config_path, checkpoint, prompt_text = "ROMEO:";
    size_t n = 1000;
    double temperature = 0.8;
    bool cached_only = false;  // --cached-only: skip the slow path (for profiling)
    std::vector<std::pair<std::string, std::string>> sets;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--tokens" && i + 1 < argc) n = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--prompt" && i + 1 < argc) prompt_text = argv[++i];
        else if (a == "--cached-only") cached_only = true;
        else if (a == "--temperature" && i + 1 < argc) temperature = std::atof(argv[++i]);
        else if (a == "--set" && i + 1 < argc) {
            const std::string kv = argv[++i];
            const size_t eq = kv.find('=');
            if (eq == std::string::npos) throw Error(Status::InvalidArgument, "--set K=V");
            sets.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else if (config_path.empty()) config_path = a;
        else if (checkpoint.empty()) checkpoint = a;
        else throw Error(Status::InvalidArgument, "unexpected argument " + a);
    }
    if (config_path.empty()) {
        std::fprintf(stderr, "usage: sample_speed CONFIG [CHECKPOINT] [--tokens N] [--prompt "
                             "TEXT] [--temperature T] [--set K=V]...\n");
        return 2;
    }
    Config cfg = Config::from_file(config_path);
    for (const auto& [k, v] : sets) cfg.set(k, v);
    Session s(cfg, LogSink{});
    if (!checkpoint.empty()) s.load(checkpoint);
    std::vector<int32_t> prompt(prompt_text.begin(), prompt_text.end());
    TokenSamplingOptions o;
    o.temperature = temperature;
    o.seed = 7;
    std::vector<int32_t> cached(n), whole(n);
    auto timed = [&](bool kv, std::vector<int32_t>& out) {
        o.kv_cache = kv;
        const auto t0 = std::chrono::steady_clock::now();
        s.sample(prompt.data(), prompt.size(), n, o, out.data());
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    const double t_cached = timed(true, cached);
    if (cached_only) {
        std::printf("KV cache: %zu tokens in %.3f s, %.1f tokens/s\n", n, t_cached, n / t_cached);
        return 0;
    }
    const double t_whole = timed(false, whole);
    std::printf("| path | tokens | seconds | tokens/s |\n|---|---|---|---|\n");
    std::printf("| whole window per token | %zu | %.3f | %.1f |\n", n, t_whole, n / t_whole);
    std::printf("| KV cache | %zu | %.3f | %.1f |\n", n, t_cached, n / t_cached);
    std::printf("\nspeed-up %.1fx; tokens identical: %s\n", t_whole / t_cached,
                cached == whole ? "yes" : "NO");
    return cached == whole ? 0 : 1;
} catch (const Error& e) {
    std::fprintf(stderr, "sample_speed: %s\n", e.what());
    return 1;
}
