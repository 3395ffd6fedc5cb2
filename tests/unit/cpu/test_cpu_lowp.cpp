// The CPU backend's low-precision modes (cpu_lowp.h) beyond one op call: a bf16/fp16 matmul
// must equal the fp32 matmul on the rounded operands, bit for bit — the weights and the bias
// rounded by the backend's working copy (never read unrounded from the master; a caller's own
// bias buffer rounded too), the bias added to the fp32 product before the output's rounding —
// and the working copy must follow every write of the master (copy_to_device, zero,
// adamw_step). Both ways of running bf16 matmuls (accel.cpu_matmul: oneDNN's bf16
// kernels, where this CPU has them, and OpenBLAS sgemm on widened operands) are held to it: the
// operands are chosen so that every sum is exact in fp32 (activations k/8, |k| <= 16; rounded
// weights and biases of magnitude >= 1/8, also after the test's writes: products on a 2^-13
// grid in bf16, 2^-16 in fp16, sums below 2^8), so the order of accumulation cannot change a
// bit, while an unrounded weight does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_lowp.h"
#include "core/base_quant.h"
#include "core/bf16.h"
#include "core/fp16.h"
#include "cpu/reference_ops.h"

namespace {

using trt::Precision;

struct Lowp {
    Precision p;
    trt::DType dtype;
    trt::CpuMatmul matmul = trt::CpuMatmul::Openblas;
    float round(float x) const {
        return p == Precision::Bf16 ? trt::round_to_bf16(x) : trt::round_to_fp16(x);
    }
    uint16_t narrow(float x) const {
        return p == Precision::Bf16 ? trt::float_to_bf16(x) : trt::float_to_fp16(x);
    }
    float widen(uint16_t b) const {
        return p == Precision::Bf16 ? trt::bf16_to_float(b) : trt::fp16_to_float(b);
    }
};

class CpuLowp : public ::testing::TestWithParam<Lowp> {};

constexpr int N = 37, K = 50, M = 29;

// out = round(inp · round(W) + round(bias)) on the fp32 backend: what the low-precision one
// must give.
std::vector<uint16_t> expected(const Lowp& lp, const std::vector<float>& inp,
                               const std::vector<float>& W, const std::vector<float>& bias) {
    auto be = trt::make_cpu_backend(2);
    std::vector<float> Wr(W), br(bias);
    for (float& x : Wr) x = lp.round(x);
    for (float& x : br) x = lp.round(x);
    std::vector<float> out((size_t)N * M);
    be->matmul_forward(out.data(), inp.data(), Wr.data(), br.data(), N, K, M,
                       trt::WeightLayout::InOut);
    std::vector<uint16_t> r(out.size());
    for (size_t i = 0; i < out.size(); i++) r[i] = lp.narrow(out[i]);
    return r;
}

// n values of magnitude in [lo, hi), random signs: master values, unrounded.
std::vector<float> magnitudes(size_t n, uint32_t seed, float lo, float hi) {
    std::vector<float> v = ref::random_floats(n, seed, lo, hi);
    const std::vector<float> sign = ref::random_floats(n, seed + 100);
    for (size_t i = 0; i < n; i++) v[i] = sign[i] < 0 ? -v[i] : v[i];
    return v;
}

TEST_P(CpuLowp, MatmulReadsTheRoundedWorkingCopyAndItFollowsTheMaster) {
    const Lowp lp = GetParam();
    auto be = trt::make_cpu_backend(2, lp.p, lp.matmul);
    ASSERT_EQ(be->activation_dtype(), lp.dtype);
    if (lp.matmul == trt::CpuMatmul::Onednn) {
        if (be->accel_status().cpu_matmul != "onednn")
            GTEST_SKIP() << "no oneDNN bf16 matmul here: "
                         << be->accel_status().cpu_matmul_note;
    } else if (lp.p == Precision::Bf16) {
        ASSERT_EQ(be->accel_status().cpu_matmul, "openblas");
    }
    std::vector<float> inp = ref::random_floats((size_t)N * K, 1, -2, 2);
    for (float& x : inp) x = std::nearbyint(x * 8) / 8;  // an activation, exact in bf16/fp16
    std::vector<float> W = magnitudes((size_t)K * M, 2, 0.25f, 1.0f);  // unrounded masters
    const std::vector<float> bias = magnitudes(M, 3, 0.25f, 1.0f);

    // Parameters: [W | bias] in one registered buffer; activations as dtype.
    const size_t P = W.size() + bias.size();
    auto* params = static_cast<float*>(be->alloc(P * sizeof(float)));
    be->register_params(params, P);
    be->copy_to_device(params, W.data(), W.size() * sizeof(float));
    be->copy_to_device(params + W.size(), bias.data(), bias.size() * sizeof(float));
    std::vector<uint16_t> inp_b(inp.size());
    for (size_t i = 0; i < inp.size(); i++) inp_b[i] = lp.narrow(inp[i]);
    void* inp_d = be->alloc(inp_b.size() * 2);
    void* out_d = be->alloc((size_t)N * M * 2);
    be->copy_to_device(inp_d, inp_b.data(), inp_b.size() * 2);
    auto run = [&] {
        be->matmul_forward(trt::Act(out_d, lp.dtype), trt::ConstAct(inp_d, lp.dtype), params,
                           params + W.size(), N, K, M, trt::WeightLayout::InOut);
        std::vector<uint16_t> got((size_t)N * M);
        be->copy_to_host(got.data(), out_d, got.size() * 2);
        return got;
    };
    EXPECT_EQ(run(), expected(lp, inp, W, bias)) << "the weights were not read rounded";
    {  // A bias outside the registered parameters (a caller's buffer) is rounded the same way.
        auto* own_bias = static_cast<float*>(be->alloc(bias.size() * sizeof(float)));
        be->copy_to_device(own_bias, bias.data(), bias.size() * sizeof(float));
        be->matmul_forward(trt::Act(out_d, lp.dtype), trt::ConstAct(inp_d, lp.dtype), params,
                           own_bias, N, K, M, trt::WeightLayout::InOut);
        std::vector<uint16_t> got((size_t)N * M);
        be->copy_to_host(got.data(), out_d, got.size() * 2);
        EXPECT_EQ(got, expected(lp, inp, W, bias)) << "an unregistered bias was not rounded";
        be->free(own_bias);
    }

    // A host write of part of the master: the working copy follows.
    for (size_t i = 0; i < 100; i++) W[i] = -W[i] * 1.37f;
    be->copy_to_device(params, W.data(), 100 * sizeof(float));
    EXPECT_EQ(run(), expected(lp, inp, W, bias)) << "after copy_to_device";

    // An optimizer step (lr 0.1, one step, g = 1): the working copy follows the update.
    std::vector<float> grads(P, 1.0f);
    auto* g = static_cast<float*>(be->alloc(P * sizeof(float)));
    auto* m = static_cast<float*>(be->alloc(P * sizeof(float)));
    auto* v = static_cast<float*>(be->alloc(P * sizeof(float)));
    be->copy_to_device(g, grads.data(), P * sizeof(float));
    const int64_t ends[] = {(int64_t)W.size(), (int64_t)P};
    const float decay[] = {0.0f, 0.0f};
    const trt::ParamSegments seg{ends, decay, 2};
    trt::StepScalars s{};
    trt::optimizer_step_of(*be).begin_step(&s, 0.1f, 1);
    trt::optimizer_step_of(*be).adamw_step(params, g, m, v, P, seg,
                                           trt::AdamWConfig{0.9f, 0.95f, 1e-8f}, &s);
    std::vector<float> after(P);
    be->copy_to_host(after.data(), params, P * sizeof(float));
    ASSERT_NE(after[0], W[0]) << "the step changed nothing";
    const std::vector<float> W2(after.begin(), after.begin() + (long)W.size());
    const std::vector<float> b2(after.begin() + (long)W.size(), after.end());
    EXPECT_EQ(run(), expected(lp, inp, W2, b2)) << "after adamw_step";

    // zero() of the master: the working copy is zero too (only the bias is left).
    be->zero(params, W.size() * sizeof(float));
    EXPECT_EQ(run(), expected(lp, inp, std::vector<float>(W.size(), 0.0f), b2))
        << "after zero";
    for (void* q : {(void*)params, inp_d, out_d, (void*)g, (void*)m, (void*)v}) be->free(q);
}

// A view of another dtype (an fp32 buffer handed to a bf16 backend, or the reverse) is a
// caller's bug: refused, never read as the wrong type.
TEST_P(CpuLowp, RefusesViewsOfAnotherDtype) {
    const Lowp lp = GetParam();
    auto low = trt::make_cpu_backend(1, lp.p), fp32 = trt::make_cpu_backend(1);
    std::vector<float> a(64, 1.0f), b(64), w(8, 1.0f), bias(8, 0.0f), stats(8);
    EXPECT_THROW(low->layernorm_forward(b.data(), stats.data(), stats.data(), a.data(),
                                        w.data(), bias.data(), 8, 8),
                 trt::Error);
    std::vector<uint16_t> h(64);
    EXPECT_THROW(fp32->layernorm_forward(trt::Act(h.data(), lp.dtype), stats.data(),
                                         stats.data(), a.data(), w.data(), bias.data(), 8, 8),
                 trt::Error);
}

INSTANTIATE_TEST_SUITE_P(Precision, CpuLowp,
                         ::testing::Values(Lowp{Precision::Bf16, trt::DType::BF16},
                                           Lowp{Precision::Bf16, trt::DType::BF16,
                                                trt::CpuMatmul::Onednn},
                                           Lowp{Precision::Fp16, trt::DType::F16}),
                         [](const auto& info) {
                             if (info.param.matmul == trt::CpuMatmul::Onednn)
                                 return std::string("bf16_onednn");
                             return std::string(info.param.p == Precision::Bf16 ? "bf16"
                                                                                : "fp16");
                         });

}  // namespace

namespace {

// A quantised weight's bf16 matmuls on oneDNN (its bf16 panels of the weight) give the widened
// path's bits (OpenBLAS sgemm on the dequantised values rounded to bf16), forward with a bias
// and backward with dinp and dbias, the panels forced to 3 rows / columns so every boundary is
// crossed. Exact sums again: NF4 with every block's absmax 1 (a ±1 first in each block), so
// the weights are code-book values (|w| >= 0.0796 or 0), activations k/8.
TEST(CpuLowpQuantised, TheOnednnPanelsGiveTheWidenedPathsBits) {
    constexpr int QN = 37, QK = 130, QM = 29;
    auto dnn = trt::make_cpu_backend(2, Precision::Bf16, trt::CpuMatmul::Onednn);
    auto blas = trt::make_cpu_backend(2, Precision::Bf16, trt::CpuMatmul::Openblas);
    if (dnn->accel_status().cpu_matmul != "onednn")
        GTEST_SKIP() << "no oneDNN bf16 matmul here: " << dnn->accel_status().cpu_matmul_note;
    ASSERT_EQ(blas->accel_status().cpu_matmul, "openblas");
    struct Reset {
        ~Reset() { trt::cpu::LowpBackend::set_panel_extent_for_tests(0); }
    } reset;
    std::vector<float> w = ref::random_floats((size_t)QM * QK, 4, -1, 1);
    for (size_t e = 0; e < w.size(); e += trt::kNf4Block) w[e] = (e / 64) % 2 ? -1.0f : 1.0f;
    trt::QuantisedMatrix q(trt::BaseDType::Nf4, /*double_quant=*/true, QK);
    q.append(w.data(), QM);
    const trt::QuantWeight W = q.host_view();
    std::vector<float> bias = magnitudes(QM, 5, 0.25f, 1.0f);
    auto eighths = [](size_t n, uint32_t seed) {
        std::vector<uint16_t> v(n);
        const std::vector<float> r = ref::random_floats(n, seed, -2, 2);
        for (size_t i = 0; i < n; i++) v[i] = trt::float_to_bf16(std::nearbyint(r[i] * 8) / 8);
        return v;
    };
    std::vector<uint16_t> inp = eighths((size_t)QN * QK, 6), dout = eighths((size_t)QN * QM, 7);
    struct Result {
        std::vector<uint16_t> out, dinp;
        std::vector<float> dbias;
    };
    auto run = [&](trt::Backend& be) {
        Result r;
        r.out.resize((size_t)QN * QM);
        r.dinp.resize((size_t)QN * QK);
        r.dbias.assign(QM, 0.5f);  // accumulated into
        be.qmatmul_forward(trt::Act(r.out.data(), trt::DType::BF16),
                           trt::ConstAct(inp.data(), trt::DType::BF16), W, bias.data(), QN, QK, QM);
        be.qmatmul_backward(trt::Act(r.dinp.data(), trt::DType::BF16), r.dbias.data(),
                            trt::ConstAct(dout.data(), trt::DType::BF16), W, QN, QK, QM);
        return r;
    };
    const Result want = run(*blas);
    for (size_t extent : {size_t{0}, size_t{3}}) {
        trt::cpu::LowpBackend::set_panel_extent_for_tests(extent);
        const Result got = run(*dnn);
        EXPECT_EQ(got.out, want.out) << "forward, panels of " << extent;
        EXPECT_EQ(got.dinp, want.dinp) << "dinp, panels of " << extent;
        EXPECT_EQ(got.dbias, want.dbias) << "dbias, panels of " << extent;
    }
}

}  // namespace
