// cpu_op_profile: per-op time breakdown of one CPU training step (forward, backward,
// grad-norm, AdamW) at the bench/cpu_vs_torch.py shapes.
//
// A Backend decorator times every op call of a real Decoder::forward_backward plus the
// optimizer's grad_norm_clip and fused adamw_step (the calls src/runtime/optimizer.cpp
// makes), keyed by op and shape (the four block matmuls and the tied
// head are told apart by K, M). Prints ms per step, share of the step and GFLOP/s where
// the op's FLOP count is well defined.
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
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/decoder.h"
#include "model/param_table.h"

namespace {

using Clock = std::chrono::steady_clock;
using trt::Act;
using trt::ConstAct;

struct Stat {
    std::vector<double> step_seconds;  // per timed step: this op's total time
    double flops = 0.0;                // all timed calls, 0 when not meaningful
    long calls = 0;
    double median() const {
        std::vector<double> s = step_seconds;
        std::sort(s.begin(), s.end());
        return s.empty() ? 0.0 : s[s.size() / 2];
    }
};

class TimedBackend final : public trt::Backend {
public:
    explicit TimedBackend(std::unique_ptr<trt::Backend> inner) : in_(std::move(inner)) {}
    std::map<std::string, Stat> stats;
    bool on = false;
    int step = 0;  // index of the timed step

    const char* name() const override { return in_->name(); }
    int num_threads() const override { return in_->num_threads(); }
    trt::DType activation_dtype() const override { return in_->activation_dtype(); }
    void* alloc(size_t b, const char* what = "buffer") override { return in_->alloc(b, what); }
    void reserve(const trt::ModelDims& d) override { in_->reserve(d); }
    void register_params(const float* p, size_t n) override { in_->register_params(p, n); }
    void free(void* p) override { in_->free(p); }
    void zero(void* p, size_t b) override {
        timed("zero", 0, [&] { in_->zero(p, b); });
    }
    void copy_to_device(void* d, const void* s, size_t b) override {
        in_->copy_to_device(d, s, b);
    }
    void copy_to_host(void* d, const void* s, size_t b) override { in_->copy_to_host(d, s, b); }
    void synchronize() override { in_->synchronize(); }
    size_t bytes_in_use() const override { return in_->bytes_in_use(); }

    void encoder_forward(Act out, const int32_t* inputs, const float* wte, const float* wpe,
                         int B, int T, int C, const int32_t* pos) override {
        timed("encoder fwd", 0,
              [&] { in_->encoder_forward(out, inputs, wte, wpe, B, T, C, pos); });
    }
    void encoder_backward(float* dwte, float* dwpe, ConstAct dout, const int32_t* inputs,
                          int B, int T, int C, const int32_t* pos) override {
        timed("encoder bwd", 0,
              [&] { in_->encoder_backward(dwte, dwpe, dout, inputs, B, T, C, pos); });
    }
    void layernorm_forward(Act out, float* mean, float* rstd, ConstAct inp,
                           const float* w, const float* b, int N, int C) override {
        timed("layernorm fwd", 0,
              [&] { in_->layernorm_forward(out, mean, rstd, inp, w, b, N, C); });
    }
    void layernorm_backward(Act dinp, float* dw, float* db, ConstAct dout,
                            ConstAct inp, const float* w, const float* mean,
                            const float* rstd, int N, int C) override {
        timed("layernorm bwd", 0, [&] {
            in_->layernorm_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
        });
    }
    void matmul_forward(Act out, ConstAct inp, const float* weight, const float* bias,
                        int N, int K, int M, trt::WeightLayout layout) override {
        timed(mm_name("fwd", K, M, layout), 2.0 * N * K * M,
              [&] { in_->matmul_forward(out, inp, weight, bias, N, K, M, layout); });
    }
    void matmul_backward(Act dinp, float* dweight, float* dbias, ConstAct dout,
                         ConstAct inp, const float* weight, int N, int K, int M,
                         trt::WeightLayout layout) override {
        const double f = 2.0 * N * K * M * ((dinp ? 1 : 0) + (dweight ? 1 : 0));
        timed(mm_name("bwd", K, M, layout), f, [&] {
            in_->matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, K, M, layout);
        });
    }
    size_t attention_saved_floats(int B, int T, int C, int NH, int NKV) const override {
        return in_->attention_saved_floats(B, T, C, NH, NKV);
    }
    size_t attention_scratch_floats(int B, int T, int C, int NH, int NKV) const override {
        return in_->attention_scratch_floats(B, T, C, NH, NKV);
    }
    // Attention FLOPs counted as the causal minimum (lower triangle incl. diagonal):
    // forward 2 products, backward 4, each 2·T(T+1)/2·hs per (b, h).
    void attention_cached_forward(Act out, ConstAct qkv, float* k_cache, float* v_cache,
                                  int pos0, int n, int NH, int NKV, int hs, int max_T,
                                  int window) override {
        const double f = 2.0 * 2.0 * n * (pos0 + (n + 1) / 2.0) * NH * hs;
        timed("attention cached", f, [&] {
            in_->attention_cached_forward(out, qkv, k_cache, v_cache, pos0, n, NH, NKV, hs,
                                          max_T, window);
        });
    }
    void attention_forward(Act out, float* saved, ConstAct qkv, int B, int T, int C,
                           int NH, int NKV, int window, const int32_t* pos) override {
        const double f = 2.0 * 2.0 * B * (double)T * (T + 1) / 2.0 * C;
        timed("attention fwd", f,
              [&] { in_->attention_forward(out, saved, qkv, B, T, C, NH, NKV, window, pos); });
    }
    void attention_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                            const float* saved, int B, int T, int C, int NH, int NKV,
                            int window, const int32_t* pos) override {
        const double f = 4.0 * 2.0 * B * (double)T * (T + 1) / 2.0 * C;
        timed("attention bwd", f, [&] {
            in_->attention_backward(dqkv, scratch, dout, qkv, saved, B, T, C, NH, NKV, window,
                                    pos);
        });
    }
    void attention_dropout_forward(Act out, float* saved, ConstAct qkv, int B, int T, int C,
                                   int NH, int NKV, const trt::DropoutMask& m,
                                   int window, const int32_t* pos) override {
        const double f = 2.0 * 2.0 * B * (double)T * (T + 1) / 2.0 * C;
        timed("attention fwd (dropout)", f, [&] {
            in_->attention_dropout_forward(out, saved, qkv, B, T, C, NH, NKV, m, window, pos);
        });
    }
    void attention_dropout_backward(Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                                    const float* saved, int B, int T, int C, int NH, int NKV,
                                    const trt::DropoutMask& m, int window,
                                    const int32_t* pos) override {
        const double f = 4.0 * 2.0 * B * (double)T * (T + 1) / 2.0 * C;
        timed("attention bwd (dropout)", f, [&] {
            in_->attention_dropout_backward(dqkv, scratch, dout, qkv, saved, B, T, C, NH, NKV, m,
                                            window, pos);
        });
    }
    void dropout(Act out, ConstAct in, size_t n, const trt::DropoutMask& m) override {
        timed("dropout", 0, [&] { in_->dropout(out, in, n, m); });
    }
    // The Llama-family ops (not called by this GPT-2 profile; forwarded so it compiles).
    void rmsnorm_forward(Act out, float* rstd, ConstAct inp, const float* w, int N,
                         int C, float eps) override {
        timed("rmsnorm fwd", 0, [&] { in_->rmsnorm_forward(out, rstd, inp, w, N, C, eps); });
    }
    void rmsnorm_backward(Act dinp, float* dw, ConstAct dout, ConstAct inp,
                          const float* w, const float* rstd, int N, int C) override {
        timed("rmsnorm bwd", 0,
              [&] { in_->rmsnorm_backward(dinp, dw, dout, inp, w, rstd, N, C); });
    }
    void residual_rmsnorm_forward(Act res_out, Act out, float* rstd, ConstAct a,
                                  ConstAct b, const float* w, int N, int C,
                                  float eps) override {
        timed("residual+rmsnorm fwd", 0, [&] {
            in_->residual_rmsnorm_forward(res_out, out, rstd, a, b, w, N, C, eps);
        });
    }
    void rope_forward(Act qkv, const float* cos, const float* sin, int B, int T, int NH,
                      int NKV, int hs, int pos0, const int32_t* pos) override {
        timed("rope fwd", 0,
              [&] { in_->rope_forward(qkv, cos, sin, B, T, NH, NKV, hs, pos0, pos); });
    }
    void rope_backward(Act dqkv, const float* cos, const float* sin, int B, int T, int NH,
                       int NKV, int hs, int pos0, const int32_t* pos) override {
        timed("rope bwd", 0,
              [&] { in_->rope_backward(dqkv, cos, sin, B, T, NH, NKV, hs, pos0, pos); });
    }
    void swiglu_forward(Act out, ConstAct inp, int N, int F) override {
        timed("swiglu fwd", 0, [&] { in_->swiglu_forward(out, inp, N, F); });
    }
    void swiglu_backward(Act dinp, ConstAct inp, ConstAct dout, int N,
                         int F) override {
        timed("swiglu bwd", 0, [&] { in_->swiglu_backward(dinp, inp, dout, N, F); });
    }
    void classifier_forward_backward(Act logits, float* losses, const int32_t* targets,
                                     int N, int V, int Vp, float dloss, bool write_grad,
                                     const trt::StepScalars* sc) override {
        timed("classifier", 0, [&] {
            in_->classifier_forward_backward(logits, losses, targets, N, V, Vp, dloss,
                                             write_grad, sc);
        });
    }
    // The step-scalar and batch ops (begin/end of step untimed: a few scalars).
    void begin_step(trt::StepScalars* s, float lr, int64_t step) override {
        in_->begin_step(s, lr, step);
    }
    void accumulate_loss(trt::StepScalars* s, const float* l, size_t n) override {
        in_->accumulate_loss(s, l, n);
    }
    void grad_norm_clip(trt::StepScalars* s, const float* g, size_t n, float mx) override {
        timed("grad norm + clip", 0, [&] { in_->grad_norm_clip(s, g, n, mx); });
    }
    void adamw_step(float* p, const float* g, float* m, float* v, size_t n,
                    const trt::ParamSegments& seg, const trt::AdamWConfig& hp,
                    const trt::StepScalars* s) override {
        timed("adamw", 0, [&] { in_->adamw_step(p, g, m, v, n, seg, hp, s); });
    }
    void adamw_step_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8,
                       float* m_scale, float* v_scale, const trt::Q8Tables* tables, size_t n,
                       const trt::ParamSegments& seg, const trt::AdamWConfig& hp,
                       const trt::StepScalars* s) override {
        timed("adamw (int8 state)", 0, [&] {
            in_->adamw_step_q8(params, grads, m8, v8, m_scale, v_scale, tables, n, seg, hp, s);
        });
    }
    void end_step(trt::StepScalars* s, const trt::LossScalePolicy& pol) override {
        in_->end_step(s, pol);
    }
    void read_scalars_async(int slot, const trt::StepScalars* s) override {
        in_->read_scalars_async(slot, s);
    }
    bool scalars_ready(int slot) override { return in_->scalars_ready(slot); }
    trt::StepScalars read_scalars(int slot) override { return in_->read_scalars(slot); }
    void load_rows(int32_t* in, int32_t* tg, const int32_t* rows, int B, int T) override {
        in_->load_rows(in, tg, rows, B, T);
    }
    void load_batch(int32_t* in, int32_t* tg, int32_t* ps, const int32_t* hin,
                    const int32_t* htg, const int32_t* hps, int B, int T) override {
        in_->load_batch(in, tg, ps, hin, htg, hps, B, T);
    }
    void sample_window(int32_t* in, int32_t* tg, const trt::DeviceTokens& d,
                       const int64_t* start, int B, int T) override {
        in_->sample_window(in, tg, d, start, B, T);
    }
    void sample_random(int32_t* in, int32_t* tg, const trt::DeviceTokens& d, uint64_t seed,
                       const trt::StepScalars* s, int64_t micro, int B, int T,
                       int64_t row0) override {
        in_->sample_random(in, tg, d, seed, s, micro, B, T, row0);
    }
    void upload_step_inputs(void* dst, const void* src, size_t bytes) override {
        in_->upload_step_inputs(dst, src, bytes);
    }
    void residual_layernorm_forward(Act res_out, Act out, float* mean, float* rstd,
                                    ConstAct a, ConstAct b, const float* bb,
                                    const float* w, const float* bias, int N, int C) override {
        timed("residual+layernorm fwd", 0, [&] {
            in_->residual_layernorm_forward(res_out, out, mean, rstd, a, b, bb, w, bias, N, C);
        });
    }
    void matmul_gelu_forward(Act pre, Act out, ConstAct inp, const float* weight,
                             const float* bias, int N, int K, int M) override {
        timed(mm_name("fwd+gelu", K, M, trt::WeightLayout::InOut), 2.0 * N * K * M,
              [&] { in_->matmul_gelu_forward(pre, out, inp, weight, bias, N, K, M); });
    }
    void gelu_backward_bias(Act dinp, float* dbias, ConstAct inp, ConstAct dout,
                            int N, int M) override {
        timed("gelu bwd (+fc dbias)", 0,
              [&] { in_->gelu_backward_bias(dinp, dbias, inp, dout, N, M); });
    }
    void gelu_forward(Act out, ConstAct inp, size_t n) override {
        timed("gelu fwd", 0, [&] { in_->gelu_forward(out, inp, n); });
    }
    void add_columns(Act out, ConstAct in, float scale, int N, int W, int c0,
                     int M) override {
        timed("lora add columns", 0, [&] { in_->add_columns(out, in, scale, N, W, c0, M); });
    }
    void copy_columns(Act out, ConstAct in, float scale, int N, int W, int c0,
                      int M) override {
        timed("lora copy columns", 0, [&] { in_->copy_columns(out, in, scale, N, W, c0, M); });
    }

private:
    std::string mm_name(const char* dir, int K, int M, trt::WeightLayout layout) const {
        char buf[96];
        std::snprintf(buf, sizeof buf, "matmul %s %s %dx%d", dir,
                      layout == trt::WeightLayout::OutIn ? "(head, OutIn)" : "", K, M);
        return buf;
    }
    template <typename F>
    void timed(const std::string& key, double flops, F&& f) {
        if (!on) {
            f();
            return;
        }
        const auto t0 = Clock::now();
        f();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        Stat& st = stats[key];
        if (st.step_seconds.size() <= (size_t)step) st.step_seconds.resize(step + 1, 0.0);
        st.step_seconds[step] += s;
        st.flops += flops;
        st.calls += 1;
    }
    std::unique_ptr<trt::Backend> in_;
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
    TimedBackend be(trt::make_cpu_backend(
        threads, bf16 ? trt::Precision::Bf16 : trt::Precision::Fp32));
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
        be.on = s >= warmup;
        be.step = s - warmup;
        const auto t0 = Clock::now();
        model.zero_grads();
        scalars->step = s + 1;  // the dropout masks' step
        model.forward_backward(model.inputs_buffer(), model.targets_buffer(), B, T,
                               1.0f / (float)N, scalars);
        loss = model.mean_loss(B, T);
        be.begin_step(scalars, 3e-4f, s + 1);
        be.grad_norm_clip(scalars, model.grads(), P, 1.0f);
        be.adamw_step(model.params(), model.grads(), m, v, P, segments, hp, scalars);
        be.end_step(scalars, trt::LossScalePolicy{});
        const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
        if (s >= warmup) step_s.push_back(dt);
    }
    be.on = false;
    // Medians over the timed steps (per op and for the whole step): robust to the bursts of
    // load of a shared machine. Shares are of the median step.
    std::vector<double> sorted = step_s;
    std::sort(sorted.begin(), sorted.end());
    const double med = sorted[sorted.size() / 2];
    double ops = 0.0, flops = 0.0;
    for (auto& kv : be.stats) ops += kv.second.median();

    std::printf("cpu_op_profile: B%d T%d V%d L%d NH%d C%d, %d threads, %d timed steps "
                "(%d warm-up); last loss %.4f\n",
                B, T, shape.V, shape.L, shape.NH, shape.C, threads, steps, warmup, loss);
    std::printf("step: median %.1f ms (min %.1f, max %.1f) -> %.0f tok/s\n\n", med * 1e3,
                sorted.front() * 1e3, sorted.back() * 1e3, (double)N / med);
    std::printf("| op | calls/step | ms/step (median) | share | GFLOP/s |\n"
                "|---|---|---|---|---|\n");
    std::vector<std::pair<std::string, Stat>> rows(be.stats.begin(), be.stats.end());
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
