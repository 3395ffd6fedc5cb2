// `trainrt plan CONFIG [--set K=V]... [--max-batch] [--memory BYTES]`: the memory a run needs,
// by component, for its device and precision (trainrt_config_model_info), and what a real
// session of it holds; with --max-batch, the largest micro-batch that fits, and the
// batch_size / grad_accum that keep the config's tokens per step.
//
// The largest micro-batch: on the CPU by the estimate (binary search on batch_size; the CPU
// allocator overcommits, so allocating proves nothing), within --memory or else the
// machine's available memory (/proc/meminfo MemAvailable). On CUDA by allocating for real:
// binary search creating sessions, an out-of-memory one being too large, within the GPU's
// memory (--memory then only caps the search).
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "cli_common.h"

namespace trainrt_cli {
namespace {

int64_t mem_available_bytes() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    int64_t kb = 0;
    std::string unit;
    while (f >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024;
    return 0;
}


// model info at batch size b (the config is changed and left so).
bool info_at(trainrt_config* c, int64_t b, trainrt_model_info& out) {
    out = TRAINRT_MODEL_INFO_INIT;
    return trainrt_config_set(c, "train.batch_size", std::to_string(b).c_str()) == TRAINRT_OK &&
           trainrt_config_model_info(&out, c) == TRAINRT_OK;
}

// A real session at batch size b: 1 fits (bytes_in_use into *bytes), 0 out of memory, -1 error.
// With `step` it also runs one train step first (the ops grow their scratch on first use), and
// *stepped says whether it could (a config without data.train cannot).
int session_fits(trainrt_config* c, int64_t b, int64_t* bytes, bool step = false,
                 bool* stepped = nullptr) {
    if (trainrt_config_set(c, "train.batch_size", std::to_string(b).c_str()) != TRAINRT_OK)
        return -1;
    trainrt_session* s = nullptr;
    const trainrt_status st = trainrt_session_create(&s, c);
    if (st == TRAINRT_ERR_OUT_OF_MEMORY) return 0;
    if (st != TRAINRT_OK) return -1;
    if (step) {
        const trainrt_status ran = trainrt_session_step(nullptr, s);
        if (ran == TRAINRT_ERR_OUT_OF_MEMORY) {
            trainrt_session_destroy(s);
            return 0;
        }
        if (stepped) *stepped = ran == TRAINRT_OK;
    }
    trainrt_metrics m;
    trainrt_metrics_init(&m);
    const bool ok = trainrt_session_metrics(&m, s) == TRAINRT_OK;
    trainrt_session_destroy(s);
    if (bytes) *bytes = m.bytes_in_use;
    return ok ? 1 : -1;
}

// train.batch_size = "auto": what a session of this config resolves it to on this machine
// (its config dump records the number); 0 with the error printed when none can be created.
int64_t resolved_auto_batch(trainrt_config* c) {
    trainrt_session* s = nullptr;
    if (trainrt_session_create(&s, c) != TRAINRT_OK) {
        std::fprintf(stderr, "trainrt: plan: train.batch_size = \"auto\": %s\n",
                     trainrt_last_error_message());
        return 0;
    }
    size_t needed = 0;
    trainrt_session_config_dump(nullptr, 0, &needed, s);
    std::string dump(needed, '\0');
    trainrt_session_config_dump(&dump[0], dump.size(), &needed, s);
    trainrt_session_destroy(s);
    const size_t at = dump.find("\nbatch_size = ");
    return at == std::string::npos ? 0 : std::strtoll(dump.c_str() + at + 14, nullptr, 10);
}

int plan_usage(const std::string& error) {
    return usage_error("plan", error, "usage: trainrt plan CONFIG [--set KEY=VALUE]... "
                                      "[--max-batch] [--memory BYTES]\n\n");
}

}  // namespace

int cmd_plan(int argc, char** argv) {
    bool max_batch = false;
    int64_t memory = 0;
    std::vector<char*> rest;
    for (int i = 0; i < argc; ++i) {
        if (std::strcmp(argv[i], "--max-batch") == 0) {
            max_batch = true;
        } else if (std::strcmp(argv[i], "--memory") == 0) {
            if (i + 1 >= argc) return plan_usage("--memory needs a number of bytes");
            char* end = nullptr;
            const double v = std::strtod(argv[++i], &end);
            if (end == argv[i] || *end != '\0' || !(v >= 1) || v > 9.0e18)
                return plan_usage(std::string("--memory needs a positive number of bytes, got '") +
                                  argv[i] + "'");
            memory = static_cast<int64_t>(v);
        } else {
            rest.push_back(argv[i]);
        }
    }
    RunArgs args;
    std::string error;
    if (!parse_run_args(static_cast<int>(rest.size()), rest.data(), 0, args, error,
                        {"--max-batch", "--memory"}))
        return plan_usage(error);
    trainrt_config* config = load_config(args);
    if (config == nullptr) return 1;
    trainrt_config_set_log(config, nullptr, nullptr, TRAINRT_LOG_ERROR);  // plan's own output
    int64_t B = 0, T = 0, GA = 0;
    trainrt_config_get_int(&B, config, "train.batch_size");
    trainrt_config_get_int(&T, config, "train.seq_len");
    trainrt_config_get_int(&GA, config, "train.grad_accum");
    std::string precision(64, '\0'), recompute(64, '\0'), base(64, '\0');
    size_t needed = 0;
    trainrt_config_get_string(&precision[0], precision.size(), &needed, config, "runtime.precision");
    trainrt_config_get_string(&recompute[0], recompute.size(), &needed, config, "train.recompute");
    trainrt_config_get_string(&base[0], base.size(), &needed, config, "lora.base_dtype");
    precision.resize(std::strlen(precision.c_str()));
    recompute.resize(std::strlen(recompute.c_str()));
    base.resize(std::strlen(base.c_str()));
    // QLoRA: the frozen base's linear weights in base (the vocabulary matrices in bf16).
    const std::string quantised =
        base == "fp32" || base.empty()
            ? std::string()
            : "; the frozen base's linear weights in " + base + ", embeddings in bf16";

    if (B == 0) {  // "auto"
        B = resolved_auto_batch(config);
        if (B == 0) {
            trainrt_config_destroy(config);
            return 1;
        }
        std::printf("plan: train.batch_size = \"auto\" is %" PRId64 " here (what a session "
                    "of this config resolves it to)\n", B);
    }
    trainrt_model_info m;
    if (!info_at(config, B, m)) {
        const int rc = fail_status("plan: model info", trainrt_config_model_info(&m, config));
        trainrt_config_destroy(config);
        return rc;
    }
    // The real thing, at the config's batch size.
    int64_t measured = 0;
    bool stepped = false;
    const int fits = session_fits(config, B, &measured, true, &stepped);
    std::string device(64, '\0');
    trainrt_config_get_string(&device[0], device.size(), &needed, config, "runtime.device");
    device.resize(std::strlen(device.c_str()));

    std::printf("plan: micro-batch %" PRId64 " x %" PRId64 " (x %" PRId64 " accumulated), "
                "precision %s, recompute %s, device %s\n",
                B, T, GA, precision.c_str(), recompute.c_str(), device.c_str());
    std::printf("  parameters            %12s  (%" PRId64
                " parameters: fp32 master weights, "
                "and the working copy under bf16/fp16%s)\n",
                human_bytes(static_cast<double>(m.bytes_parameters)).c_str(), m.parameters,
                quantised.c_str());
    std::printf("  gradients + AdamW m,v %12s  (%" PRId64 " trainable parameters, %.2f%%)\n",
                human_bytes(static_cast<double>(m.bytes_optimizer)).c_str(), m.trainable_parameters,
                100.0 * static_cast<double>(m.trainable_parameters) /
                    static_cast<double>(m.parameters));
    std::printf("  activations           %12s  (one micro-batch, forward + backward scratch, "
                "train.recompute = %s)\n",
                human_bytes(static_cast<double>(m.bytes_activations)).c_str(), recompute.c_str());
    std::printf("  total (estimate)      %12s\n", human_bytes(static_cast<double>(m.bytes_total)).c_str());
    if (fits == 1) {
        const double diff = 100.0 * (static_cast<double>(m.bytes_total) - measured) /
                            static_cast<double>(measured);
        std::printf("  a session holds       %12s  (bytes_in_use %s; the estimate is %+.1f%%)\n",
                    human_bytes(static_cast<double>(measured)).c_str(),
                    stepped ? "after one train step" : "after creation (no step without data.train)",
                    diff);
    } else if (fits == 0) {
        std::printf("  a session at this batch size does not fit: out of memory\n");
    } else {
        std::printf("  no session could be created to measure: %s\n", trainrt_last_error_message());
    }
    if (!max_batch) {
        trainrt_config_destroy(config);
        return 0;
    }

    // --max-batch. The CPU (or a run the estimate must decide): the estimate against the budget.
    const bool cuda = device.find("cuda") != std::string::npos;
    int64_t budget = memory > 0 ? memory : (cuda ? 0 : mem_available_bytes());
    if (!cuda && budget <= 0) {
        trainrt_config_destroy(config);
        return plan_usage("--max-batch: the available memory is unknown here; give --memory BYTES");
    }
    auto fits_at = [&](int64_t b) -> int {
        if (cuda) {
            if (budget > 0) {
                trainrt_model_info i;
                if (!info_at(config, b, i)) return -1;
                if (i.bytes_total > budget) return 0;
            }
            return session_fits(config, b, nullptr);
        }
        trainrt_model_info i;
        if (!info_at(config, b, i)) return -1;
        return i.bytes_total <= budget ? 1 : 0;
    };
    int64_t lo = 0, hi = 1;  // lo fits (0: none found), hi the next try
    const int64_t kMax = int64_t{1} << 24;  // train.batch_size's bound
    for (;;) {  // grow until one does not fit
        const int f = fits_at(hi);
        if (f < 0) break;
        if (f == 0) break;
        lo = hi;
        if (hi >= kMax || hi * T >= 2147483647LL) break;
        hi = std::min(kMax, hi * 2);
    }
    if (lo == hi) hi = lo + 1;
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        const int f = fits_at(mid);
        if (f < 0) break;
        (f == 1 ? lo : hi) = mid;
    }
    trainrt_config_destroy(config);
    const std::string within = cuda ? (memory > 0 ? "the GPU, at most " + human_bytes(static_cast<double>(budget))
                                                  : std::string("the GPU (sessions allocated for real)"))
                                    : human_bytes(static_cast<double>(budget)) +
                                          (memory > 0 ? " (--memory)" : " (MemAvailable)");
    if (lo == 0) {
        std::fprintf(stderr, "trainrt: plan: no micro-batch fits (none fits within %s at "
                     "seq_len %" PRId64 "); lower train.seq_len, or set train.recompute, [lora] "
                     "or train.trainable\n", within.c_str(), T);
        return 3;
    }
    std::printf("max micro-batch: %" PRId64 " x %" PRId64 " within %s\n", lo, T, within.c_str());
    // Keep tokens per step: the largest batch_size <= lo dividing B * GA rows per step.
    const int64_t rows = B * GA;
    int64_t b = std::min(lo, rows);
    while (rows % b != 0) --b;
    std::printf("to keep %" PRId64 " tokens per step: train.batch_size = %" PRId64
                ", train.grad_accum = %" PRId64 "\n", rows * T, b, rows / b);
    return 0;
}

}  // namespace trainrt_cli
