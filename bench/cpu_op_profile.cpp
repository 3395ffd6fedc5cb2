// cpu_op_profile: per-op time breakdown of one CPU training step (forward, backward,
// grad-norm, AdamW) at the bench/cpu_vs_torch.py shapes.
//
// The library's OpProfiler (backend/op_profiler.h) times every op call of a real
// Decoder::forward_backward plus the optimizer's step ops (the calls src/runtime/optimizer.cpp
// makes), keyed by op name, the matmuls by shape (the four block matmuls and the tied head are
// told apart by K, M). Prints ms per step, share of the step and GFLOP/s where the op's FLOP
// count is well defined.
//
//   cpu_op_profile [--threads N] [--steps S] [--warmup W] [--B 8] [--T 256]
//                  [--L 6] [--NH 6] [--C 384] [--V 256] [--bf16 1] [--dropout-pct 10]
//
// Not a test: it asserts nothing. Built with -DTRAINRT_BUILD_BENCH=ON (see bench/README.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/op_profiler.h"
#include "model/decoder.h"
#include "model/param_table.h"

namespace {

using Clock = std::chrono::steady_clock;

// One label's numbers over the timed steps (OpProfiler's rows, one profile per step).
struct Stat {
    std::vector<double> step_seconds;  // per timed step: this label's total time
    double flops = 0.0;                // all timed calls, 0 when not meaningful
    long calls = 0;
    double median() const {
        std::vector<double> s = step_seconds;
        std::sort(s.begin(), s.end());
        return s.empty() ? 0.0 : s[s.size() / 2];
    }
};

int arg_int(int argc, char** argv, const char* name, int def) {
    for (int i = 1; i + 1 < argc; i++)
        if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
    return def;
}

}  // namespace

int main(int argc, char** argv) {
    const int threads = arg_int(argc, argv, "--threads", 2);
    const int steps = arg_int(argc, argv, "--steps", 5);
    const int warmup = arg_int(argc, argv, "--warmup", 2);
    const int B = arg_int(argc, argv, "--B", 8), T = arg_int(argc, argv, "--T", 256);
    trt::ModelSpec shape =
        trt::gpt2_spec(arg_int(argc, argv, "--V", 256), T, arg_int(argc, argv, "--L", 6),
                       arg_int(argc, argv, "--NH", 6), arg_int(argc, argv, "--C", 384));
    shape.dropout = static_cast<float>(arg_int(argc, argv, "--dropout-pct", 0)) / 100.0f;

    const bool bf16 = arg_int(argc, argv, "--bf16", 0) != 0;
    trt::OpProfiler be(
        trt::make_cpu_backend(threads, bf16 ? trt::Precision::Bf16 : trt::Precision::Fp32));
    std::map<std::string, Stat> stats;
    trt::Decoder model(be, shape, B, T);
    const trt::ParamTable& table = model.table();
    const size_t P = table.total();
    // Init like the torch bench: N(0, 0.02) weights, LN weights 1, biases 0.
    {
        std::mt19937 gen(1337);
        std::normal_distribution<float> nd(0.0f, 0.02f);
        std::vector<float> p(P);  // through copy_to_device: bf16 refreshes its working copy
        for (const trt::ParamTensor& t : table.tensors()) {
            const bool ln_w = t.name.find("ln_") != std::string::npos &&
                              t.name.find("weight") != std::string::npos;
            for (size_t i = 0; i < t.numel; i++)
                p[t.offset + i] = t.shape.size() >= 2 ? nd(gen) : (ln_w ? 1.0f : 0.0f);
        }
        be.copy_to_device(model.params(), p.data(), P * sizeof(float));
    }
    float* m = static_cast<float*>(be.alloc(P * sizeof(float)));
    float* v = static_cast<float*>(be.alloc(P * sizeof(float)));
    // The optimizer's per-tensor segments (decay 0.1 on matrices) and step scalars, in
    // backend memory (host memory on the CPU).
    std::vector<int64_t> ends;
    std::vector<float> decays;
    for (const trt::ParamTensor& t : table.tensors()) {
        ends.push_back((int64_t)(t.offset + t.numel));
        decays.push_back(t.decay ? 0.1f : 0.0f);
    }
    const trt::ParamSegments segments{ends.data(), decays.data(), (int32_t)ends.size()};
    const trt::AdamWConfig hp{0.9f, 0.95f, 1e-8f};
    auto* scalars = static_cast<trt::StepScalars*>(be.alloc(sizeof(trt::StepScalars)));
    *scalars = trt::StepScalars{};
    std::mt19937 gen(1234);
    std::uniform_int_distribution<int32_t> tok(0, shape.V - 1);
    const size_t N = (size_t)B * T;

    std::vector<double> step_s;
    double loss = 0.0;
    for (int s = 0; s < warmup + steps; s++) {
        for (size_t i = 0; i < N; i++) {
            model.inputs_buffer()[i] = tok(gen);
            model.targets_buffer()[i] = tok(gen);
        }
        if (s >= warmup) {
            be.reset();
            be.start();
        }
        const auto t0 = Clock::now();
        model.zero_grads();
        scalars->step = s + 1;  // the dropout masks' step
        model.forward_backward(model.inputs_buffer(), model.targets_buffer(), B, T,
                               1.0f / (float)N, scalars);
        loss = model.mean_loss(B, T);
        trt::optimizer_step_of(be).begin_step(scalars, 3e-4f, s + 1);
        trt::optimizer_step_of(be).grad_norm_clip(scalars, model.grads(), P, 1.0f);
        trt::optimizer_step_of(be).adamw_step(model.params(), model.grads(), m, v, P, segments, hp,
                                              scalars);
        trt::optimizer_step_of(be).end_step(scalars, trt::LossScalePolicy{});
        const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
        if (s < warmup) continue;
        be.stop();
        step_s.push_back(dt);
        for (const trt::OpTiming& r : be.rows()) {
            Stat& st = stats[r.label];
            st.step_seconds.resize(step_s.size() - 1, 0.0);  // a label absent from a step: 0
            st.step_seconds.push_back(r.seconds);
            st.flops += r.flops;
            st.calls += r.calls;
        }
    }
    // Medians over the timed steps (per op and for the whole step): robust to the bursts of
    // load of a shared machine. Shares are of the median step.
    std::vector<double> sorted = step_s;
    std::sort(sorted.begin(), sorted.end());
    const double med = sorted[sorted.size() / 2];
    double ops = 0.0, flops = 0.0;
    for (auto& kv : stats) ops += kv.second.median();

    std::printf("cpu_op_profile: B%d T%d V%d L%d NH%d C%d, %d threads, %d timed steps "
                "(%d warm-up); last loss %.4f\n",
                B, T, shape.V, shape.L, shape.NH, shape.C, threads, steps, warmup, loss);
    std::printf("step: median %.1f ms (min %.1f, max %.1f) -> %.0f tok/s\n\n", med * 1e3,
                sorted.front() * 1e3, sorted.back() * 1e3, (double)N / med);
    std::printf("| op | calls/step | ms/step (median) | share | GFLOP/s |\n"
                "|---|---|---|---|---|\n");
    std::vector<std::pair<std::string, Stat>> rows(stats.begin(), stats.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.median() > b.second.median(); });
    for (auto& [k, st] : rows) {
        const double ms = st.median() * 1e3;
        const double f = st.flops / steps;
        flops += f;
        char gf[32] = "";
        if (f > 0) std::snprintf(gf, sizeof gf, "%.1f", f / st.median() * 1e-9);
        std::printf("| %s | %ld | %.2f | %.1f%% | %s |\n", k.c_str(), st.calls / steps, ms,
                    100.0 * st.median() / med, gf);
    }
    std::printf("| (sum of op medians) | | %.2f | %.1f%% | %.1f |\n", ops * 1e3,
                100.0 * ops / med, flops / ops * 1e-9);
    std::printf("| **step (median)** | | %.2f | 100%% | %.1f |\n", med * 1e3,
                flops / med * 1e-9);
    be.free(m);
    be.free(v);
    return 0;
}
