// trainrt bench --profile (bench_profile.h). Each run is a fresh session of CONFIG with
// runtime.profile_ops = true: W warm-up steps, the profile reset, N profiled steps, the
// profile read back as JSON (docs/C_API.md, "Per-op profile"). On the CPU with more than one
// thread, a first run at 1 thread gives each op's serial time; the two runs give its
// parallel fraction p (Amdahl) and its time projected to 16, 32 and 64 threads.
#include "bench_profile.h"

#include <trainrt/trainrt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/amdahl.h"
#include "io/json_min.h"

namespace trainrt_cli {
namespace {

constexpr int kExitOutOfMemory = 3;

// One op row of a profile, summed over the layers (or one layer's, in by_layer).
struct OpRow {
    std::string label, op;
    long long calls = 0;
    double seconds = 0, flops = 0, bytes = 0;
};

// A library's choice for an op shape (cuBLASLt algorithm, cuDNN engine, oneDNN implementation).
struct ChoiceRow {
    std::string op, shape, choice;
    double workspace_bytes = 0;
};

struct ProfileRun {
    std::string raw;  // the JSON as the library wrote it
    std::string device, device_name, precision;
    std::string timing = "host";  // "device": each op on the device's clock (events)
    int threads = 1;
    long long steps = 0;
    double wall_s = 0, op_s = 0;
    double peak_flops = 0, peak_bytes_per_s = 0;  // 0: unknown (no floor)
    std::vector<ChoiceRow> choices;
    std::map<std::string, OpRow> ops;  // by label, all layers
    std::map<int, double> layer_s;     // by layer (-1: outside the blocks)

    double per_step_ms(double seconds) const { return steps > 0 ? 1e3 * seconds / steps : 0; }
};

const trt::json::Value& member(const trt::json::Value& o, const char* key) {
    const trt::json::Value* v = o.find(key);
    if (v == nullptr) throw std::runtime_error(std::string("the profile has no \"") + key + "\"");
    return *v;
}
double number(const trt::json::Value& v) {
    if (v.kind == trt::json::Value::Kind::Int) return static_cast<double>(v.i);
    if (v.kind == trt::json::Value::Kind::Uint) return static_cast<double>(v.u);
    if (v.kind == trt::json::Value::Kind::Double) return v.d;
    return NAN;  // null: not finite
}

ProfileRun parse_profile(const std::string& text) {
    const trt::json::Value doc = trt::json::parse(text, "the profile");
    ProfileRun r;
    r.raw = text;
    r.device = member(doc, "device").s;
    r.device_name = member(doc, "device_name").s;
    r.precision = member(doc, "precision").s;
    r.threads = static_cast<int>(number(member(doc, "threads")));
    r.steps = static_cast<long long>(number(member(doc, "steps")));
    if (const trt::json::Value* t = doc.find("timing")) r.timing = t->s;
    if (const trt::json::Value* v = doc.find("peak_flops")) r.peak_flops = number(*v);
    if (const trt::json::Value* v = doc.find("peak_bytes_per_s")) r.peak_bytes_per_s = number(*v);
    if (!(r.peak_flops > 0)) r.peak_flops = 0;  // null (not finite) or 0: unknown
    if (!(r.peak_bytes_per_s > 0)) r.peak_bytes_per_s = 0;
    if (const trt::json::Value* cs = doc.find("choices"))
        for (const trt::json::Value& c : cs->arr)
            r.choices.push_back({member(c, "op").s, member(c, "shape").s, member(c, "choice").s,
                                 number(member(c, "workspace_bytes"))});
    r.wall_s = number(member(doc, "wall_s"));
    r.op_s = number(member(doc, "op_s"));
    for (const trt::json::Value& o : member(doc, "ops").arr) {
        const std::string label = member(o, "label").s;
        OpRow& row = r.ops[label];
        row.label = label;
        row.op = member(o, "op").s;
        row.calls += static_cast<long long>(number(member(o, "calls")));
        const double seconds = number(member(o, "seconds"));
        row.seconds += seconds;
        row.flops += number(member(o, "flops"));
        row.bytes += number(member(o, "bytes"));
        r.layer_s[static_cast<int>(number(member(o, "layer")))] += seconds;
    }
    return r;
}

int fail_run(const char* what, trainrt_status st) {
    fail_status(what, st);
    return st == TRAINRT_ERR_OUT_OF_MEMORY ? kExitOutOfMemory : 1;
}

// One profiled session; threads < 0 keeps the config's runtime.threads. 0 and `out` filled,
// or the exit status after printing the error.
int profile_once(const BenchProfileArgs& args, int threads, ProfileRun& out) {
    trainrt_config* config = load_config(args.run);
    if (config == nullptr) return 1;
    const std::vector<std::pair<std::string, std::string>> sets = {
        {"runtime.profile_ops", "true"},  {"train.eval_every", "0"},
        {"train.checkpoint_every", "0"},  {"train.out_dir", "\"\""},
        {"runtime.log_every", "1000000"},
    };
    for (const auto& kv : sets) {
        const trainrt_status st = trainrt_config_set(config, kv.first.c_str(), kv.second.c_str());
        if (st != TRAINRT_OK) {
            trainrt_config_destroy(config);
            return fail_run(kv.first.c_str(), st);
        }
    }
    if (threads >= 0) {
        const std::string t = std::to_string(threads);
        const trainrt_status st = trainrt_config_set(config, "runtime.threads", t.c_str());
        if (st != TRAINRT_OK) {
            trainrt_config_destroy(config);
            return fail_run("runtime.threads", st);
        }
    }
    trainrt_session* session = nullptr;
    trainrt_status st = trainrt_session_create(&session, config);
    trainrt_config_destroy(config);
    if (st != TRAINRT_OK) return fail_run("creating the session", st);
    if (args.warmup > 0) st = trainrt_session_train(session, args.warmup, nullptr, nullptr);
    if (st == TRAINRT_OK) st = trainrt_session_profile_reset(session);
    if (st == TRAINRT_OK) st = trainrt_session_train(session, args.run.steps, nullptr, nullptr);
    if (st == TRAINRT_OK) st = trainrt_session_sync(nullptr, session);
    std::string text;
    bool ok = st == TRAINRT_OK;
    if (!ok) {
        fail_status("the profiled steps", st);
    } else {
        ok = fetch_string(text, "reading the profile", [&](char* b, size_t cap, size_t* n) {
            return trainrt_session_profile(b, cap, n, session);
        });
    }
    trainrt_session_destroy(session);
    if (!ok) return st == TRAINRT_ERR_OUT_OF_MEMORY ? kExitOutOfMemory : 1;
    try {
        out = parse_profile(text);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "trainrt bench: cannot read the profile: %s\n", e.what());
        return 1;
    }
    return 0;
}

double median(std::vector<double> x) {
    if (x.empty()) return 0;
    std::sort(x.begin(), x.end());
    const size_t h = x.size() / 2;
    return x.size() % 2 ? x[h] : 0.5 * (x[h - 1] + x[h]);
}

// Several sessions' profiles as the profile of one step: each op's median per-step seconds,
// calls, FLOPs and bytes (0 in a session without it), each layer's, the wall's and the ops'.
ProfileRun median_run(const std::vector<ProfileRun>& runs) {
    if (runs.size() == 1) return runs[0];
    ProfileRun m = runs[0];
    m.raw.clear();
    m.steps = 1;
    auto per_step = [](const ProfileRun& r, double v) { return r.steps > 0 ? v / r.steps : 0; };
    std::vector<double> wall, ops;
    for (const ProfileRun& r : runs) {
        wall.push_back(per_step(r, r.wall_s));
        ops.push_back(per_step(r, r.op_s));
    }
    m.wall_s = median(wall);
    m.op_s = median(ops);
    m.ops.clear();
    m.layer_s.clear();
    std::map<std::string, std::string> op_of;  // label -> backend op
    std::map<int, std::vector<double>> by_layer;
    for (const ProfileRun& r : runs) {
        for (const auto& kv : r.ops) op_of[kv.first] = kv.second.op;
        for (const auto& kv : r.layer_s) by_layer[kv.first].push_back(per_step(r, kv.second));
    }
    for (const auto& [label, op] : op_of) {
        std::vector<double> calls, seconds, flops, bytes;
        for (const ProfileRun& r : runs) {
            const auto it = r.ops.find(label);
            const OpRow* o = it == r.ops.end() ? nullptr : &it->second;
            calls.push_back(o ? per_step(r, static_cast<double>(o->calls)) : 0);
            seconds.push_back(o ? per_step(r, o->seconds) : 0);
            flops.push_back(o ? per_step(r, o->flops) : 0);
            bytes.push_back(o ? per_step(r, o->bytes) : 0);
        }
        OpRow& row = m.ops[label];
        row.label = label;
        row.op = op;
        row.calls = static_cast<long long>(std::llround(median(calls)));
        row.seconds = median(seconds);
        row.flops = median(flops);
        row.bytes = median(bytes);
    }
    for (const auto& [layer, s] : by_layer) m.layer_s[layer] = median(s);
    return m;
}

std::vector<const OpRow*> by_time(const ProfileRun& r) {
    std::vector<const OpRow*> rows;
    for (const auto& kv : r.ops) rows.push_back(&kv.second);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const OpRow* a, const OpRow* b) { return a->seconds > b->seconds; });
    return rows;
}

std::string rate(double amount, double seconds, double unit) {
    if (!(amount > 0) || !(seconds > 0)) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", amount / seconds / unit);
    return buf;
}

std::string percent(double part, double whole) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", whole > 0 ? 100.0 * part / whole : 0.0);
    return buf;
}

void print_header(const BenchProfileArgs& args, const ProfileRun& r, long long rounds) {
    std::printf("trainrt bench --profile: %s", args.run.config_path.c_str());
    for (const auto& kv : args.run.sets)
        std::printf(" --set %s=%s", kv.first.c_str(), kv.second.c_str());
    std::printf(
        "\n\ndevice %s (%s), precision %s; per session %lld warm-up steps, then %lld "
        "profiled (%s)",
        r.device.c_str(), r.device_name.c_str(), r.precision.c_str(), args.warmup, args.run.steps,
        r.timing == "device"
            ? "each op timed on the device by events before and after it, nothing waiting "
              "between the ops; steps run eagerly, without CUDA graphs"
            : "each op synchronized and timed on the host clock: steps run eagerly");
    if (r.peak_flops > 0 || r.peak_bytes_per_s > 0)
        std::printf("; roofline peaks %.4g TFLOP/s (%s), %.4g GB/s", r.peak_flops / 1e12,
                    r.precision.c_str(), r.peak_bytes_per_s / 1e9);
    if (rounds > 1)
        std::printf(
            "; %lld sessions per thread count, alternating: each figure is the median "
            "of its sessions' per-step values",
            rounds);
    std::printf("\n\n");
}

// An op's roofline floor: the least time its FLOPs and bytes take at the peaks (0: no peak).
double floor_seconds(const ProfileRun& r, const OpRow& o) {
    const double compute = r.peak_flops > 0 ? o.flops / r.peak_flops : 0;
    const double memory = r.peak_bytes_per_s > 0 ? o.bytes / r.peak_bytes_per_s : 0;
    return std::max(compute, memory);
}

// One run: ms per step, share of the step, rates; with the device's peaks, each op's share
// of them, its roofline floor and how far above it the op runs (the most time first;
// bench/roofline.py ranks by the time lost to the floor).
void print_single(const ProfileRun& r) {
    const bool roofline = r.peak_flops > 0 || r.peak_bytes_per_s > 0;
    std::printf(
        "| op | calls/step | ms/step | %% of step | GFLOP/s | GB/s |%s\n",
        roofline ? " % peak FLOP/s | % peak GB/s | floor ms | x floor | ms over floor |" : "");
    std::printf("|---|---|---|---|---|---|%s\n", roofline ? "---|---|---|---|---|" : "");
    double floor_ms = 0, over_ms = 0;
    for (const OpRow* o : by_time(r)) {
        std::printf("| %s | %.0f | %.3f | %s | %s | %s |", o->label.c_str(),
                    static_cast<double>(o->calls) / std::max(1LL, r.steps),
                    r.per_step_ms(o->seconds), percent(o->seconds, r.wall_s).c_str(),
                    rate(o->flops, o->seconds, 1e9).c_str(),
                    rate(o->bytes, o->seconds, 1e9).c_str());
        if (roofline) {
            const double f = floor_seconds(r, *o);
            auto share = [&](double amount, double peak) {
                return peak > 0 && amount > 0 && o->seconds > 0 ? percent(amount / o->seconds, peak)
                                                                : std::string();
            };
            char ratio[32] = "";
            if (f > 0) std::snprintf(ratio, sizeof ratio, "%.1f", o->seconds / f);
            std::printf(" %s | %s | %.3f | %s | %.3f |", share(o->flops, r.peak_flops).c_str(),
                        share(o->bytes, r.peak_bytes_per_s).c_str(), r.per_step_ms(f), ratio,
                        r.per_step_ms(o->seconds - f));
            floor_ms += r.per_step_ms(f);
            over_ms += r.per_step_ms(o->seconds - f);
        }
        std::printf("\n");
    }
    std::printf("| (between the ops) | | %.3f | %s | | |%s\n", r.per_step_ms(r.wall_s - r.op_s),
                percent(r.wall_s - r.op_s, r.wall_s).c_str(), roofline ? " | | | | |" : "");
    std::printf("| **step** | | **%.3f** | 100 | | |", r.per_step_ms(r.wall_s));
    if (roofline) std::printf(" | | %.3f | | %.3f |", floor_ms, over_ms);
    std::printf("\n");
    if (roofline)
        std::printf(
            "\nfloor = max(FLOPs / peak FLOP/s, bytes / peak GB/s) of each op (its least "
            "traffic, src/backend/op_costs.h); the step's floor is their sum, %.3f ms: the ops "
            "run %.3f ms above it, and %.3f ms pass between them.\n",
            floor_ms, over_ms, r.per_step_ms(r.wall_s - r.op_s));
}

// The libraries' choices for the shapes the step ran.
void print_choices(const ProfileRun& r) {
    if (r.choices.empty()) return;
    std::printf("\n| library choice | shape | chosen | workspace bytes |\n|---|---|---|---|\n");
    for (const ChoiceRow& c : r.choices)
        std::printf("| %s | %s | %s | %.0f |\n", c.op.c_str(), c.shape.c_str(), c.choice.c_str(),
                    c.workspace_bytes);
}

// Two runs (1 and n threads): each op's parallel fraction and projection.
void print_scaling(const ProfileRun& one, const ProfileRun& n, const std::vector<int>& to) {
    std::printf(
        "| op | calls/step | ms @1 | ms @%d | %% of step @%d | GFLOP/s @%d | GB/s @%d | "
        "parallel p",
        n.threads, n.threads, n.threads, n.threads);
    for (int m : to) std::printf(" | ms @%d", m);
    std::printf(" |\n|---|---|---|---|---|---|---|---");
    for (size_t i = 0; i < to.size(); ++i) std::printf("|---");
    std::printf("|\n");
    std::vector<double> projected(to.size(), 0.0);
    auto row = [&](const std::string& label, const std::string& calls, double t1, double tn,
                   const std::string& gflops, const std::string& gbs, bool bold) {
        const double p = trt::parallel_fraction(t1, tn, n.threads);
        const char* b = bold ? "**" : "";
        std::printf("| %s%s%s | %s | %.3f | %.3f | %s | %s | %s | %.2f", b, label.c_str(), b,
                    calls.c_str(), t1, tn, percent(tn, n.per_step_ms(n.wall_s)).c_str(),
                    gflops.c_str(), gbs.c_str(), p);
        for (size_t i = 0; i < to.size(); ++i) {
            const double ms = trt::amdahl_seconds(t1, p, to[i]);
            if (!bold) projected[i] += ms;
            std::printf(" | %.3f", bold ? projected[i] : ms);
        }
        std::printf(" |\n");
    };
    for (const OpRow* o : by_time(n)) {
        const auto at1 = one.ops.find(o->label);
        const double t1 = at1 == one.ops.end() ? 0 : one.per_step_ms(at1->second.seconds);
        char calls[32];
        std::snprintf(calls, sizeof calls, "%.0f",
                      static_cast<double>(o->calls) / std::max(1LL, n.steps));
        row(o->label, calls, t1, n.per_step_ms(o->seconds), rate(o->flops, o->seconds, 1e9),
            rate(o->bytes, o->seconds, 1e9), false);
    }
    row("(between the ops)", "", one.per_step_ms(one.wall_s - one.op_s),
        n.per_step_ms(n.wall_s - n.op_s), "", "", false);
    row("step", "", one.per_step_ms(one.wall_s), n.per_step_ms(n.wall_s), "", "", true);
    std::printf(
        "\nThe step's projection (bold) is the sum of its ops' (each with its own p), "
        "from the %d-thread run against the 1-thread run; speed-up at %d threads %.2fx "
        "(parallel efficiency %s %%).\n",
        n.threads, n.threads, n.wall_s > 0 ? one.wall_s / n.wall_s : 0.0,
        percent(one.wall_s / std::max(1e-12, n.wall_s), n.threads).c_str());
}

void print_layers(const ProfileRun& r) {
    std::printf("\n| layer | ms/step | %% of step |\n|---|---|---|\n");
    for (const auto& [layer, seconds] : r.layer_s) {
        const std::string name =
            layer < 0 ? "outside the blocks" : "block " + std::to_string(layer);
        std::printf("| %s | %.3f | %s |\n", name.c_str(), r.per_step_ms(seconds),
                    percent(seconds, r.wall_s).c_str());
    }
}

std::string profile_json(const BenchProfileArgs& args, const std::vector<ProfileRun>& runs) {
    std::string out = "{\n  \"schema\": \"trainrt-bench-profile/1\",\n  \"library_version\": " +
                      trt::json::quote(trainrt_version_string()) +
                      ",\n  \"config\": " + trt::json::quote(args.run.config_path) +
                      ",\n  \"sets\": [";
    for (size_t i = 0; i < args.run.sets.size(); ++i)
        out += (i ? ", " : "") +
               trt::json::quote(args.run.sets[i].first + "=" + args.run.sets[i].second);
    out += "],\n  \"warmup_steps\": " + std::to_string(args.warmup) + ",\n  \"runs\": [\n";
    for (size_t i = 0; i < runs.size(); ++i) out += (i ? ",\n" : "") + runs[i].raw;
    return out + "  ]\n}\n";
}

}  // namespace

int bench_profile(const BenchProfileArgs& args) {
    // The config's threads first: it says the device and the thread count. Then, on the CPU
    // at more than one thread, the 1-thread session; with rounds, the two alternate (N, 1 |
    // 1, N | ...) so that a change in the machine's load hits both.
    std::vector<ProfileRun> at_n(1), at_1;
    if (const int st = profile_once(args, -1, at_n[0])) return st;
    const bool scaling = at_n[0].device == "cpu" && at_n[0].threads > 1;
    for (long long r = 0; r < args.rounds; ++r) {
        const bool n_first = r % 2 == 0;  // round 0's N-thread session ran above
        for (int k = 0; k < 2; ++k) {
            const bool at_config_threads = (k == 0) == n_first;
            if (at_config_threads && r > 0) {
                at_n.emplace_back();
                if (const int st = profile_once(args, -1, at_n.back())) return st;
            } else if (!at_config_threads && scaling) {
                at_1.emplace_back();
                if (const int st = profile_once(args, 1, at_1.back())) return st;
            }
        }
    }
    if (!is_lead_rank()) return 0;
    const ProfileRun n = median_run(at_n);
    print_header(args, n, args.rounds);
    if (scaling)
        print_scaling(median_run(at_1), n, args.project_to);
    else
        print_single(n);
    print_layers(n);
    print_choices(n);
    std::vector<ProfileRun> runs = at_1;  // the JSON: every session, 1-thread ones first
    runs.insert(runs.end(), at_n.begin(), at_n.end());
    if (!args.json_path.empty() &&
        !write_file_replacing(args.json_path, profile_json(args, runs))) {
        std::fprintf(stderr, "trainrt bench: cannot write %s\n", args.json_path.c_str());
        return 1;
    }
    return 0;
}

}  // namespace trainrt_cli
