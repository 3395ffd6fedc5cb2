// The CUDA backend's optional paths against the CPU backend, for every precision:
//   - cuBLASLt epilogues (accel.matmul_epilogues): matmul_forward with a bias, matmul_gelu_forward
//     (pre and out), matmul_backward with dbias (accumulated over two calls). Each case runs on
//     the CPU, on a CUDA backend with the epilogues and on one without: both CUDA results are
//     held to the CPU, to each other (within the precision's tolerance), and the epilogue path
//     is bitwise reproducible run to run. Biases sit at aligned and misaligned offsets (the
//     misaligned ones take the fallback), M is sometimes odd or not a multiple of 8 (the GELU
//     epilogue's aux rule), so both sides of every fallback are covered.
//   - the GELU epilogue is the tanh form of backend.h: its out is held to gelu_tanh(pre) of its
//     own pre, on data where the erf form is 10x the tolerance away.
//   - the unfused classifier (accel.fused_classifier = false): losses, dlogits, padding columns,
//     the loss scale read from StepScalars, -inf and huge logits.
//   - the 128-bit vectorised elementwise kernels at C = 40 / C = 3 and odd pointer offsets
//     (scalar and vector paths), bitwise where the op is one IEEE operation.
//   - the chunked bf16/fp16 backward of the tied output projection (N = 3000 rows, V = 50257).
// Which epilogues cuBLASLt actually ran is printed from accel_status().epilogues_note (a
// fallback is legitimate, so it is reported, not asserted).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace {

using gpu::Cover;
using gpu::kCpu;
using gpu::kCuda;
using gpu::Twin;
using trt::Backend;
using trt::Precision;
using trt::WeightLayout;

constexpr int kOff = 2;  // the third side: a CUDA backend with the default accel switches

std::string shape(std::initializer_list<std::pair<const char*, int>> dims) {
    std::string s;
    for (const auto& d : dims) s += std::string(" ") + d.first + std::to_string(d.second);
    return s;
}

// A buffer on three backends at once (CPU, CUDA variant, CUDA default); like gpu::Twin.
class Trio {
public:
    Trio(std::array<Backend*, 3> be, size_t floats) : be_(be), n_(floats) {
        for (int s = 0; s < 3; s++) p_[s] = be_[s]->alloc(n_ ? n_ * 4 : 4, "trio test buffer");
    }
    ~Trio() {
        for (int s = 0; s < 3; s++) be_[s]->free(p_[s]);
    }
    Trio(const Trio&) = delete;
    Trio& operator=(const Trio&) = delete;

    float* f(int s) const { return static_cast<float*>(p_[s]); }
    size_t size() const { return n_; }
    void set(const std::vector<float>& v) {
        EXPECT_LE(v.size(), n_);
        for (int s = 0; s < 3; s++) be_[s]->copy_to_device(p_[s], v.data(), v.size() * 4);
    }
    void set_side(int s, const std::vector<float>& v) {
        be_[s]->copy_to_device(p_[s], v.data(), v.size() * 4);
    }
    std::vector<float> get(int s) const {
        std::vector<float> v(n_);
        be_[s]->synchronize();
        if (n_) be_[s]->copy_to_host(v.data(), p_[s], n_ * 4);
        return v;
    }

private:
    std::array<Backend*, 3> be_;
    size_t n_;
    void* p_[3] = {nullptr, nullptr, nullptr};
};

// cpu_, cuda_ = the CUDA backend with the switches under test (variant()), off_ = the CUDA
// backend with the default switches.
class CudaVariant : public gpu::CudaVsCpu, public ::testing::WithParamInterface<Precision> {
protected:
    virtual trt::AccelOptions variant() const = 0;

    void SetUp() override {
        precision_ = GetParam();
        create(variant(), cuda_);
        if (!cuda_) return;
        create(trt::AccelOptions{}, off_);
        if (!off_) return;
        cpu_ = trt::make_cpu_backend(4);
    }
    void create(const trt::AccelOptions& accel, std::unique_ptr<Backend>& out) {
        std::string why;
        bool skip = false;
        out = gpu::try_cuda(precision_, why, skip, accel);
        if (out) return;
        if (skip) GTEST_SKIP() << "no CUDA backend: " << why;
        FAIL() << "the CUDA backend could not be created: " << why;
    }
    void reserve3(const trt::ModelDims& d) {
        cpu_->reserve(d);
        cuda_->reserve(d);
        off_->reserve(d);
    }
    std::array<Backend*, 3> sides() { return {cpu_.get(), cuda_.get(), off_.get()}; }
    std::unique_ptr<Trio> trio(const std::vector<float>& v) {
        auto t = std::make_unique<Trio>(sides(), v.size());
        t->set(v);
        return t;
    }
    std::unique_ptr<Trio> nan_trio(size_t n) {
        return trio(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
    }
    // Runs f(backend, side) on the CPU, the variant and the default CUDA backend.
    void all3(const std::function<void(Backend&, int)>& f) {
        Backend* b[3] = {cpu_.get(), cuda_.get(), off_.get()};
        for (int s = 0; s < 3; s++) f(*b[s], s);
        cuda_->synchronize();
        off_->synchronize();
    }
    // Both CUDA results against the CPU, and against each other (pre: the += outputs'
    // initial contents, judged on the increment; empty for overwritten outputs).
    void expect_close3(const std::string& what, const Trio& t, double tol,
                       const std::vector<float>& pre = {}) {
        const auto c = t.get(kCpu), on = t.get(kCuda), off = t.get(kOff);
        auto err = [&](const std::vector<float>& got, const std::vector<float>& want) {
            return pre.empty() ? ref::rel_error(got, want) : gpu::accum_error(got, want, pre);
        };
        const double e_on = err(on, c), e_off = err(off, c), e_pair = err(on, off);
        ref::report(tag(what + " variant vs cpu"), e_on);
        ref::report(tag(what + " default vs cpu"), e_off);
        ref::report(tag(what + " variant vs default"), e_pair);
        EXPECT_LE(e_on, tol) << tag(what) << " variant vs cpu";
        EXPECT_LE(e_off, tol) << tag(what) << " default vs cpu";
        EXPECT_LE(e_pair, tol) << tag(what) << " variant vs default";
    }
    void print_note() {
        const trt::AccelStatus a = cuda_->accel_status();
        std::printf("[  info    ] [%s] epilogues=%d fused_classifier=%d note: %s\n",
                    gpu::pname(precision_), a.matmul_epilogues ? 1 : 0,
                    a.fused_classifier ? 1 : 0, a.epilogues_note.c_str());
    }

    std::unique_ptr<Backend> off_;
};

class CudaEpilogues : public CudaVariant {
protected:
    trt::AccelOptions variant() const override {
        trt::AccelOptions a;
        a.matmul_epilogues = true;
        return a;
    }
};

class CudaUnfusedClassifier : public CudaVariant {
protected:
    trt::AccelOptions variant() const override {
        trt::AccelOptions a;
        a.fused_classifier = false;
        return a;
    }
};

struct MatmulCase {
    int N, K, M;
};
// M: a multiple of 8 (GELU aux rule), of 4 only, odd; a GPT-2-sized one.
const MatmulCase kCases[] = {{51, 40, 120}, {37, 29, 19}, {130, 64, 256}, {33, 24, 44},
                             {512, 768, 768}};
// Float offsets of the bias / dbias inside their buffer: 16-byte aligned (the epilogue may
// run), 4-byte aligned (the fallback must run).
const int kBiasOffsets[] = {0, 1};

// ------------------------------------------------------------------ forward + bias

TEST_P(CudaEpilogues, MatmulForwardBias) {
    Cover cov;
    for (auto c : kCases) cov.matmul(c.N, c.K, c.M);
    reserve3(cov.dims());
    for (auto c : kCases)
        for (auto layout : {WeightLayout::InOut, WeightLayout::OutIn})
            for (int boff : kBiasOffsets) {
                const int N = c.N, K = c.K, M = c.M;
                const std::string sh = shape({{"N", N}, {"K", K}, {"M", M}, {"bias_off", boff}}) +
                                       (layout == WeightLayout::InOut ? " InOut" : " OutIn");
                auto x = trio(in((size_t)N * K, 3001)), w = trio(in((size_t)K * M, 3002));
                auto b = trio(in((size_t)M + boff, 3003));
                auto out = nan_trio((size_t)N * M);
                all3([&](Backend& be, int s) {
                    be.matmul_forward(out->f(s), x->f(s), w->f(s), b->f(s) + boff, N, K, M,
                                      layout);
                });
                expect_close3("matmul fwd +bias" + sh, *out, tol(false));
                // Run to run, bitwise.
                const auto first = out->get(kCuda);
                out->set_side(kCuda, std::vector<float>(out->size(), gpu::kNaN));
                cuda_->matmul_forward(out->f(kCuda), x->f(kCuda), w->f(kCuda),
                                      b->f(kCuda) + boff, N, K, M, layout);
                EXPECT_TRUE(gpu::same_bits(first, out->get(kCuda)))
                    << tag("matmul fwd +bias not reproducible" + sh);
            }
    print_note();
}

// ------------------------------------------------------------------ matmul + gelu

TEST_P(CudaEpilogues, MatmulGeluForward) {
    Cover cov;
    for (auto c : kCases) cov.matmul(c.N, c.K, c.M);
    cov.matmul(256, 768, 3072);
    reserve3(cov.dims());
    std::vector<MatmulCase> cases(std::begin(kCases), std::end(kCases));
    cases.push_back({256, 768, 3072});
    for (auto c : cases)
        for (int boff : {-1, 0, 1}) {  // -1: no bias
            const int N = c.N, K = c.K, M = c.M;
            const std::string sh = shape({{"N", N}, {"K", K}, {"M", M}}) +
                                   (boff < 0 ? " no bias" : " bias_off" + std::to_string(boff));
            auto x = trio(in((size_t)N * K, 3101, -2, 2)), w = trio(in((size_t)K * M, 3102));
            auto b = trio(in((size_t)M + 1, 3103));
            auto pre = nan_trio((size_t)N * M), out = nan_trio((size_t)N * M);
            auto bias = [&](int s) -> const float* { return boff < 0 ? nullptr : b->f(s) + boff; };
            all3([&](Backend& be, int s) {
                be.matmul_gelu_forward(pre->f(s), out->f(s), x->f(s), w->f(s), bias(s), N, K, M);
            });
            expect_close3("matmul+gelu pre" + sh, *pre, tol(false));
            expect_close3("matmul+gelu out" + sh, *out, tol(false));
            const auto pre1 = pre->get(kCuda), out1 = out->get(kCuda);
            pre->set_side(kCuda, std::vector<float>(pre->size(), gpu::kNaN));
            out->set_side(kCuda, std::vector<float>(out->size(), gpu::kNaN));
            cuda_->matmul_gelu_forward(pre->f(kCuda), out->f(kCuda), x->f(kCuda), w->f(kCuda),
                                       bias(kCuda), N, K, M);
            EXPECT_TRUE(gpu::same_bits(pre1, pre->get(kCuda))) << tag("pre not reproducible" + sh);
            EXPECT_TRUE(gpu::same_bits(out1, out->get(kCuda))) << tag("out not reproducible" + sh);
        }
    print_note();
}

// cuBLASLt's GELU must be backend.h's tanh form: out against gelu_tanh(pre) of the backend's
// own pre (so the GEMM's rounding is out of the picture), in double. The pre values have a
// spread (sigma ~1.3) where the erf form differs by ~2e-4 relative: the check can tell them
// apart, which the second expectation confirms on the data.
TEST_P(CudaEpilogues, GeluEpilogueIsTheTanhForm) {
    const int N = 64, K = 16, M = 64;  // M % 8 == 0: the epilogue's aux rule holds
    reserve3(Cover().matmul(N, K, M).dims());
    auto x = trio(in((size_t)N * K, 3201)), w = trio(in((size_t)K * M, 3202)),
         b = trio(in((size_t)M, 3203));
    auto pre = nan_trio((size_t)N * M), out = nan_trio((size_t)N * M);
    cuda_->matmul_gelu_forward(pre->f(kCuda), out->f(kCuda), x->f(kCuda), w->f(kCuda),
                               b->f(kCuda), N, K, M);
    const auto p = pre->get(kCuda), o = out->get(kCuda);
    std::vector<double> tanh_form(p.size()), erf_form(p.size());
    for (size_t i = 0; i < p.size(); i++) {
        const double v = p[i];
        const double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);  // sqrt(2/pi)(...)
        tanh_form[i] = 0.5 * v * (1.0 + std::tanh(u));
        erf_form[i] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    }
    const double e_tanh = ref::rel_error(o, tanh_form), e_erf = ref::rel_error(o, erf_form);
    ref::report(tag("gelu out vs tanh form of its pre"), e_tanh);
    ref::report(tag("gelu out vs erf form of its pre"), e_erf);
    EXPECT_LE(e_tanh, gpu::kTolFp32) << tag("the GELU is not the tanh approximation");
    EXPECT_GT(ref::rel_error(erf_form, tanh_form), 3 * gpu::kTolFp32)
        << "the data cannot tell the two GELU forms apart";
    print_note();
}

// ------------------------------------------------------------------ backward + dbias

TEST_P(CudaEpilogues, MatmulBackwardBiasGradAccumulates) {
    Cover cov;
    for (auto c : kCases) cov.matmul(c.N, c.K, c.M);
    reserve3(cov.dims());
    for (auto c : kCases)
        for (auto layout : {WeightLayout::InOut, WeightLayout::OutIn})
            for (int boff : kBiasOffsets)
                for (bool with_dinp : {true, false}) {
                    const int N = c.N, K = c.K, M = c.M;
                    const std::string sh =
                        shape({{"N", N}, {"K", K}, {"M", M}, {"dbias_off", boff}}) +
                        (layout == WeightLayout::InOut ? " InOut" : " OutIn") +
                        (with_dinp ? "" : " dinp=null");
                    auto x = trio(in((size_t)N * K, 3301)), w = trio(in((size_t)K * M, 3302));
                    auto dout = trio(in((size_t)N * M, 3303));
                    const auto dW0 = gpu::rnd((size_t)K * M, 3304);
                    auto db0 = gpu::rnd((size_t)M + boff, 3305);
                    auto dW = trio(dW0), db = trio(db0), dx = nan_trio((size_t)N * K);
                    auto step = [&](Backend& be, int s) {
                        be.matmul_backward(with_dinp ? dx->f(s) : nullptr, dW->f(s),
                                           db->f(s) + boff, dout->f(s), x->f(s), w->f(s), N, K,
                                           M, layout);
                    };
                    // Two micro-batches: dbias and dweight accumulate, dinp is overwritten.
                    all3([&](Backend& be, int s) {
                        step(be, s);
                        step(be, s);
                    });
                    const std::vector<float> db_pre(db0.begin() + boff, db0.end());
                    // dbias judged on its increment, its first boff floats untouched.
                    {
                        const auto c0 = db->get(kCpu), on = db->get(kCuda), off = db->get(kOff);
                        for (int k = 0; k < boff; k++) {
                            ASSERT_EQ(on[k], db0[k]) << "dbias written before its start" << sh;
                            ASSERT_EQ(off[k], db0[k]) << "dbias written before its start" << sh;
                        }
                        auto cut = [&](const std::vector<float>& v) {
                            return std::vector<float>(v.begin() + boff, v.end());
                        };
                        const double e_on = gpu::accum_error(cut(on), cut(c0), db_pre);
                        const double e_off = gpu::accum_error(cut(off), cut(c0), db_pre);
                        const double e_pair = gpu::accum_error(cut(on), cut(off), db_pre);
                        ref::report(tag("matmul bwd dbias x2 (+=) variant" + sh), e_on);
                        ref::report(tag("matmul bwd dbias x2 (+=) default" + sh), e_off);
                        EXPECT_LE(e_on, tol(true)) << tag("dbias variant vs cpu" + sh);
                        EXPECT_LE(e_off, tol(true)) << tag("dbias default vs cpu" + sh);
                        EXPECT_LE(e_pair, tol(true)) << tag("dbias variant vs default" + sh);
                    }
                    expect_close3("matmul bwd dweight x2" + sh, *dW, tol(true), dW0);
                    if (with_dinp) expect_close3("matmul bwd dinp" + sh, *dx, tol(true));
                    // Run to run, bitwise, from the same initial dweight/dbias.
                    const auto dW1 = dW->get(kCuda), db1 = db->get(kCuda), dx1 = dx->get(kCuda);
                    dW->set_side(kCuda, dW0);
                    db->set_side(kCuda, db0);
                    dx->set_side(kCuda, std::vector<float>(dx->size(), gpu::kNaN));
                    step(*cuda_, kCuda);
                    step(*cuda_, kCuda);
                    EXPECT_TRUE(gpu::same_bits(dW1, dW->get(kCuda))) << tag("dweight rerun" + sh);
                    EXPECT_TRUE(gpu::same_bits(db1, db->get(kCuda))) << tag("dbias rerun" + sh);
                    if (with_dinp) {
                        EXPECT_TRUE(gpu::same_bits(dx1, dx->get(kCuda))) << tag("dinp rerun" + sh);
                    }
                }
    print_note();
}

// ------------------------------------------------------------------ chunked lm-head backward

// The tied output projection: dinp[N,C] = dlogits[N,Vp] · wte[Vp,C], dwte += dlogitsᵀ · x
// (OutIn layout), wte inside the registered parameters (bf16/fp16: the working copy). At K = 64,
// M = 50304 the bf16/fp16 casts of 3000 rows (~300 MB) exceed the backend's chunk budget
// (256 MiB: 2624 rows), so matmul_backward runs two chunks of 1536 rows; dbias (not used by the
// model, but the chunked path accumulates it per chunk) is checked too.
TEST_P(CudaEpilogues, LmHeadBackwardInRowChunks) {
    const int N = 3000, K = 64, V = 50257, M = (V + 127) / 128 * 128;
    trt::ModelDims d;
    d.B = 1;
    d.T = N;
    d.C = K;
    d.NH = 1;
    d.V = V;
    d.L = 1;
    reserve3(d);
    const size_t wn = (size_t)M * K;
    auto params = trio(in(wn + 16, 3401));
    all3([&](Backend& be, int s) { be.register_params(params->f(s), wn + 16); });
    auto x = trio(in((size_t)N * K, 3402)), dout = trio(in((size_t)N * M, 3403, -0.01f, 0.01f));
    const auto dW0 = gpu::rnd(wn, 3404), db0 = gpu::rnd((size_t)M, 3405);
    auto dW = trio(dW0), db = trio(db0), dx = nan_trio((size_t)N * K);
    auto step = [&](Backend& be, int s) {
        be.matmul_backward(dx->f(s), dW->f(s), db->f(s), dout->f(s), x->f(s), params->f(s), N,
                           K, M, WeightLayout::OutIn);
    };
    all3(step);
    expect_close3("lm-head bwd dinp", *dx, tol(true));
    expect_close3("lm-head bwd dweight", *dW, tol(true), dW0);
    expect_close3("lm-head bwd dbias", *db, tol(true), db0);
    const auto dx1 = dx->get(kCuda), dW1 = dW->get(kCuda), db1 = db->get(kCuda);
    dW->set_side(kCuda, dW0);
    db->set_side(kCuda, db0);
    dx->set_side(kCuda, std::vector<float>(dx->size(), gpu::kNaN));
    step(*cuda_, kCuda);
    EXPECT_TRUE(gpu::same_bits(dx1, dx->get(kCuda))) << tag("lm-head dinp rerun");
    EXPECT_TRUE(gpu::same_bits(dW1, dW->get(kCuda))) << tag("lm-head dweight rerun");
    EXPECT_TRUE(gpu::same_bits(db1, db->get(kCuda))) << tag("lm-head dbias rerun");
    print_note();
}

// ------------------------------------------------------------------ unfused classifier

TEST_P(CudaUnfusedClassifier, LossAndGradientMatchTheCpu) {
    struct Case {
        int N, V, Vp;
    };
    const Case cases[] = {{51, 67, 80}, {64, 256, 256}, {33, 1000, 1024}, {5, 50257, 50304}};
    Cover cov;
    for (auto c : cases) cov.add(1, c.N, 64, 1, c.Vp);
    reserve3(cov.dims());
    for (auto c : cases)
        for (bool write_grad : {false, true})
            for (bool scaled : {false, true}) {
                const int N = c.N, V = c.V, Vp = c.Vp;
                const std::string sh = shape({{"N", N}, {"V", V}, {"Vp", Vp}}) +
                                       (write_grad ? " grad" : " loss-only") +
                                       (scaled ? " loss_scale=4" : " scalars=null");
                auto lv = gpu::rnd((size_t)N * Vp, 3501, -4, 4);
                for (int n = 0; n < N; n++)  // padded columns: garbage that must be ignored
                    for (int i = V; i < Vp; i++) lv[(size_t)n * Vp + i] = 3e4f;
                auto tg = gpu::rnd_ids(N, 3502, V);
                tg[0] = V - 1;
                if (N > 2) {
                    tg[1] = 0;
                    lv[(size_t)1 * Vp + 1] = -std::numeric_limits<float>::infinity();  // -inf
                    lv[(size_t)2 * Vp + (tg[2] + 1) % V] = 60.0f;  // dominates its row
                }
                for (int n = 4; n < N; n += 5) tg[n] = trt::kIgnoredTarget;  // loss 0, grad 0
                Twin logits = up(lv), targets = up(tg), losses = nan_floats(N);
                trt::StepScalars sc;
                sc.loss_scale = 4.0f;
                Twin scalars = alloc(sizeof sc);
                scalars.set(&sc, sizeof sc);
                const float dloss = 1.0f / N;
                both([&](Backend& be, int s) {
                    be.classifier_forward_backward(
                        logits.f(s), losses.f(s), targets.i(s), N, V, Vp, dloss, write_grad,
                        scaled ? scalars.as<trt::StepScalars>(s) : nullptr);
                });
                expect_close("unfused classifier losses" + sh, losses, N, gpu::kTolFp32);
                const auto g = logits.get<float>(kCuda, (size_t)N * Vp);
                if (!write_grad) {
                    EXPECT_TRUE(gpu::same_bits(g, lv)) << "logits changed without write_grad" << sh;
                    continue;
                }
                expect_close("unfused classifier dlogits" + sh, logits, (size_t)N * Vp,
                             gpu::kTolFp32);
                for (int n = 0; n < N; n++)
                    for (int i = V; i < Vp; i++)
                        ASSERT_EQ(g[(size_t)n * Vp + i], 0.0f) << "padded column " << i << sh;
                for (int n = 4; n < N; n += 5)
                    for (int i = 0; i < Vp; i++)
                        ASSERT_EQ(g[(size_t)n * Vp + i], 0.0f) << "ignored row " << n << sh;
                if (N > 2) {
                    // e^(-inf) = 0 (the CPU's clamped exp gives ~1e-40: also "zero").
                    EXPECT_LE(std::fabs(g[(size_t)1 * Vp + 1]), 1e-30f) << "-inf logit" << sh;
                    // Row 2's target has probability ~e^-56: its gradient is -d, d = dloss
                    // times the loss scale read from the device.
                    const double d = (scaled ? 4.0 : 1.0) * dloss;
                    EXPECT_NEAR(g[(size_t)2 * Vp + tg[2]], -d, 1e-6 * d) << sh;
                }
            }
    print_note();
}

// The fused (default) and unfused CUDA classifiers agree on one batch.
TEST_P(CudaUnfusedClassifier, AgreesWithTheFusedKernel) {
    const int N = 40, V = 5000, Vp = 5120;
    reserve3(Cover().add(1, N, 64, 1, Vp).dims());
    auto lv = gpu::rnd((size_t)N * Vp, 3601, -6, 6);
    auto tg = gpu::rnd_ids(N, 3602, V);
    for (int n = 3; n < N; n += 7) tg[n] = trt::kIgnoredTarget;
    auto logits = trio(lv);
    std::vector<float> tgf(N);
    std::memcpy(tgf.data(), tg.data(), N * 4);  // int32 ids through a float-typed buffer
    auto targets = trio(tgf), losses = nan_trio(N);
    all3([&](Backend& be, int s) {
        be.classifier_forward_backward(logits->f(s), losses->f(s),
                                       reinterpret_cast<const int32_t*>(targets->f(s)), N, V, Vp,
                                       0.5f, true, nullptr);
    });
    expect_close3("classifier losses unfused/fused", *losses, gpu::kTolFp32);
    expect_close3("classifier dlogits unfused/fused", *logits, gpu::kTolFp32);
}

// ------------------------------------------------------------------ vectorised kernels

class CudaVectorized : public gpu::CudaOpsP {};

// The internal elementwise kernels (GELU, add) at odd offsets: cuda_elementwise_test.cpp.

// The encoder (forward: one add per element, bitwise; dwpe: B adds in order) at C = 40 (vector
// path), C = 3 and C = 42 (scalar: rows not 16-byte aligned), and wte/wpe views at an odd
// offset (scalar).
TEST_P(CudaVectorized, EncoderAtOddWidthsAndOffsets) {
    struct Case {
        int B, T, C, V, off;
    };
    const Case cases[] = {{3, 17, 40, 67, 0}, {3, 17, 40, 67, 1}, {2, 5, 3, 7, 0},
                          {2, 9, 42, 11, 0},  {4, 64, 768, 50, 0}, {4, 64, 768, 50, 2}};
    Cover cov;
    for (auto c : cases) cov.add(c.B, c.T, c.C, 1, c.V);
    reserve(cov);
    for (auto c : cases) {
        const int B = c.B, T = c.T, C = c.C, V = c.V, off = c.off;
        const std::string sh = shape({{"B", B}, {"T", T}, {"C", C}, {"off", off}});
        auto ids = gpu::rnd_ids(B * T, 3901, V);
        Twin in = up(ids), wte = up(gpu::rnd((size_t)V * C + off, 3902)),
             wpe = up(gpu::rnd((size_t)T * C + off, 3903));
        Twin out = nan_floats((size_t)B * T * C + off);
        both([&](Backend& be, int s) {
            be.encoder_forward(out.f(s) + off, in.i(s), wte.f(s) + off, wpe.f(s) + off, B, T, C);
        });
        expect_equal<float>("encoder fwd (bitwise)" + sh, out, (size_t)B * T * C + off);
        const auto dwpe0 = gpu::rnd((size_t)T * C + off, 3904);
        const auto dwte0 = gpu::rnd((size_t)V * C, 3905);
        Twin dout = up(gpu::rnd((size_t)B * T * C + off, 3906)), dwpe = up(dwpe0),
             dwte = up(dwte0);
        both([&](Backend& be, int s) {
            be.encoder_backward(dwte.f(s), dwpe.f(s) + off, dout.f(s) + off, in.i(s), B, T, C);
        });
        // B in-order float adds per element on both sides: bitwise.
        expect_equal<float>("encoder bwd dwpe (bitwise)" + sh, dwpe, (size_t)T * C + off);
        expect_close_accum("encoder bwd dwte" + sh, dwte, dwte0, gpu::kTolFp32);
    }
}

// bf16/fp16 operand casts (vector path when the source is 16-byte aligned, scalar otherwise,
// and a tail that is not a multiple of 8): a matmul whose input starts at odd offsets.
TEST_P(CudaVectorized, MatmulInputsAtOddOffsets) {
    const int N = 37, K = 29, M = 43;
    reserve(Cover().matmul(N, K, M));
    for (int off : {0, 1, 2, 5}) {
        const std::string sh = " off" + std::to_string(off);
        Twin x = up(gpu::rounded(gpu::rnd((size_t)N * K + off, 4001), precision_)),
             w = up(gpu::rounded(gpu::rnd((size_t)K * M + off, 4002), precision_));
        Twin out = nan_floats((size_t)N * M);
        both([&](Backend& be, int s) {
            be.matmul_forward(out.f(s), x.f(s) + off, w.f(s) + off, nullptr, N, K, M,
                              WeightLayout::InOut);
        });
        expect_close("matmul fwd, operands at offset" + sh, out, (size_t)N * M,
                     gpu::matmul_tol(precision_, false));
    }
}

const auto kPrecisions = ::testing::Values(Precision::Fp32, Precision::Tf32, Precision::Bf16,
                                           Precision::Fp16);
INSTANTIATE_TEST_SUITE_P(Precision, CudaEpilogues, kPrecisions, gpu::precision_param_name);
INSTANTIATE_TEST_SUITE_P(Precision, CudaUnfusedClassifier, kPrecisions,
                         gpu::precision_param_name);
INSTANTIATE_TEST_SUITE_P(Precision, CudaVectorized, kPrecisions, gpu::precision_param_name);

}  // namespace
