// Properties of the Llama-family ops on the CUDA backend beyond one call against the CPU
// (which the op-case table, cuda_op_cases_test.cpp, checks at every shape and precision):
//   - grouped-query attention equals the CUDA backend's own multi-head attention on K/V heads
//     replicated per query group (an oracle that does not depend on the CPU side);
//   - the fused residual+RMSNorm is bitwise the add, then RMSNorm; RoPE's backward undoes
//     its forward;
//   - scratch sized from ModelDims{NKV, F} alone serves a Llama-shaped layer;
//   - sliding-window attention (Mistral, issue 39: window shorter than T) forward, backward and
//     the KV-cached forward against the CPU backend's banded attention.
// Tolerances (gpu_test_util.h): attention is a matrix product: fp32 1e-5, tf32 2e-3,
// bf16/fp16 forward 1e-2 / backward 2e-2 on bf16/fp16-rounded inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

class LlamaOps : public gpu::CudaOpsP {};

std::string shape(std::initializer_list<std::pair<const char*, int>> dims) {
    std::string s;
    for (const auto& d : dims) s += std::string(" ") + d.first + std::to_string(d.second);
    return s;
}

// ------------------------------------------------------------------ fused and inverse

// residual_rmsnorm_forward is exactly the one add, then rmsnorm_forward of its result, on the
// CUDA side (the same row code): bitwise.
TEST_P(LlamaOps, ResidualRmsNormIsTheAddThenRmsNorm) {
    const std::pair<int, int> cases[] = {{51, 40}, {33, 385}, {1030, 768}, {9, 2100}};
    Cover cov;
    for (auto [N, C] : cases) cov.add(1, N, C);
    reserve(cov);
    const float eps = 1e-5f;
    Backend& g = *cuda_;
    for (auto [N, C] : cases) {
        const std::string sh = shape({{"N", N}, {"C", C}});
        Twin a = up(gpu::rnd(N * C, 3301, -2, 2)), b = up(gpu::rnd(N * C, 3302)),
             w = up(gpu::rnd(C, 3304, 0.5f, 1.5f));
        Twin res = nan_floats(N * C), out = nan_floats(N * C), rstd = nan_floats(N);
        g.residual_rmsnorm_forward(res.f(kCuda), out.f(kCuda), rstd.f(kCuda), a.f(kCuda),
                                   b.f(kCuda), w.f(kCuda), N, C, eps);
        Twin out2 = nan_floats(N * C), rstd2 = nan_floats(N);
        g.rmsnorm_forward(out2.f(kCuda), rstd2.f(kCuda), res.f(kCuda), w.f(kCuda), N, C, eps);
        EXPECT_TRUE(gpu::same_bits(out2.get<float>(kCuda, N * C), out.get<float>(kCuda, N * C)))
            << tag("residual_rmsnorm out != rmsnorm(res_out)") << sh;
        EXPECT_TRUE(gpu::same_bits(rstd2.get<float>(kCuda, N), rstd.get<float>(kCuda, N)))
            << tag("residual_rmsnorm rstd != rmsnorm(res_out)") << sh;
    }
}

// rope_backward is the transpose of an orthogonal map: applied after rope_forward it gives
// the input back, up to rounding.
TEST_P(LlamaOps, RopeBackwardUndoesTheForward) {
    struct Case { int B, T, NH, NKV, hs, pos0; };
    const Case cases[] = {{2, 17, 4, 2, 10, 5}, {1, 33, 6, 1, 16, 3}, {2, 64, 12, 4, 64, 100}};
    reserve(Cover().add(3, 64, 64 * 12, 12));
    Backend& g = *cuda_;
    for (auto c : cases) {
        const std::string sh = shape({{"B", c.B}, {"T", c.T}, {"NH", c.NH}, {"NKV", c.NKV},
                                      {"hs", c.hs}, {"pos0", c.pos0}});
        ref::Vec cd, sd;
        ref::rope_tables(c.pos0 + c.T + 2, c.hs, 10000.0, cd, sd);
        Twin cos_t = up(std::vector<float>(cd.begin(), cd.end())),
             sin_t = up(std::vector<float>(sd.begin(), sd.end()));
        const size_t n = (size_t)c.B * c.T * (c.NH + 2 * c.NKV) * c.hs;
        const auto xv = gpu::rnd(n, 3401, -2, 2);
        Twin x = up(xv);
        g.rope_forward(x.f(kCuda), cos_t.f(kCuda), sin_t.f(kCuda), c.pos0,
                       trt::AttentionShape::from_heads(c.B, c.T, c.NH, c.NKV, c.hs));
        g.rope_backward(x.f(kCuda), cos_t.f(kCuda), sin_t.f(kCuda), c.pos0,
                        trt::AttentionShape::from_heads(c.B, c.T, c.NH, c.NKV, c.hs));
        const double e = ref::rel_error(x.get<float>(kCuda, n), xv);
        ref::report(tag("rope bwd(fwd(x)) vs x" + sh), e);
        EXPECT_LE(e, gpu::kTolFp32) << sh;
    }
}

// ------------------------------------------------------------------ grouped-query attention

struct AttnCase {
    int B, T, C, NH;
};
const AttnCase kAttnCases[] = {{2, 17, 40, 4}, {1, 1, 8, 2},    {2, 7, 12, 2},
                               {2, 64, 64, 4}, {1, 130, 96, 6}, {2, 256, 768, 12}};

std::vector<int> kv_counts(int NH) {
    std::vector<int> v = {NH};
    if (NH % 2 == 0 && NH / 2 != NH) v.push_back(NH / 2);
    if (NH > 1 && v.back() != 1) v.push_back(1);
    return v;
}

// GQA on the CUDA backend equals its own multi-head attention with each K/V head repeated for
// the G query heads that read it; the K/V gradients are the sums of the repeated heads'.
TEST_P(LlamaOps, GroupedQueryAttentionEqualsReplicatedMultiHead) {
    const AttnCase cases[] = {{2, 17, 40, 4}, {1, 130, 96, 6}, {2, 64, 256, 8}};
    Cover cov;
    for (auto c : cases) cov.add(c.B, c.T, c.C, c.NH);
    reserve(cov);
    for (auto c : cases)
        for (int NKV : kv_counts(c.NH)) {
            if (NKV == c.NH) continue;
            const int B = c.B, T = c.T, C = c.C, NH = c.NH, hs = C / NH, G = NH / NKV;
            const std::string sh =
                shape({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}, {"NKV", NKV}});
            const size_t W = static_cast<size_t>(NH + 2 * NKV) * hs, BT = (size_t)B * T;
            const size_t nq = BT * W, nm = BT * 3 * C, no = BT * C;
            const auto qv = in(nq, 3801, -2, 2), dov = in(no, 3802);
            std::vector<float> mv(nm);
            for (size_t r = 0; r < BT; r++) {
                const float* src = &qv[r * W];
                float* dst = &mv[r * 3 * C];
                std::copy(src, src + C, dst);  // Q
                for (int h = 0; h < NH; h++)
                    for (int i = 0; i < hs; i++) {
                        dst[C + h * hs + i] = src[C + (h / G) * hs + i];              // K
                        dst[2 * C + h * hs + i] = src[C + (NKV + h / G) * hs + i];    // V
                    }
            }
            Backend& g = *cuda_;
            Twin qkv = up(qv), mqkv = up(mv), dout = up(dov);
            Twin out = nan_floats(no), mout = nan_floats(no), dqkv = nan_floats(nq),
                 mdqkv = nan_floats(nm);
            Twin saved = nan_floats(
                g.attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)));
            Twin msaved = nan_floats(
                g.attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)));
            Twin scratch = nan_floats(std::max(
                g.attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)),
                g.attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NH))));
            g.attention_forward(out.f(kCuda), saved.f(kCuda), qkv.f(kCuda),
                                trt::AttentionShape::from_width(B, T, C, NH, NKV));
            g.attention_backward(dqkv.f(kCuda), scratch.f(kCuda), dout.f(kCuda), qkv.f(kCuda),
                                 saved.f(kCuda), trt::AttentionShape::from_width(B, T, C, NH, NKV));
            g.attention_forward(mout.f(kCuda), msaved.f(kCuda), mqkv.f(kCuda),
                                trt::AttentionShape::from_width(B, T, C, NH, NH));
            g.attention_backward(mdqkv.f(kCuda), scratch.f(kCuda), dout.f(kCuda), mqkv.f(kCuda),
                                 msaved.f(kCuda), trt::AttentionShape::from_width(B, T, C, NH, NH));
            const auto go = out.get<float>(kCuda, no), mo = mout.get<float>(kCuda, no);
            const double eo = ref::rel_error(go, mo);
            ref::report(tag("gqa fwd vs replicated mha" + sh), eo);
            EXPECT_LE(eo, tol(false)) << sh;
            // Expected dqkv: dQ as is, dK/dV of kv head j = sum over its query group.
            const auto md = mdqkv.get<float>(kCuda, nm);
            std::vector<double> want(nq, 0.0);
            for (size_t r = 0; r < BT; r++) {
                const float* src = &md[r * 3 * C];
                double* dst = &want[r * W];
                for (int k = 0; k < C; k++) dst[k] = src[k];
                for (int h = 0; h < NH; h++)
                    for (int i = 0; i < hs; i++) {
                        dst[C + (h / G) * hs + i] += src[C + h * hs + i];
                        dst[C + (NKV + h / G) * hs + i] += src[2 * C + h * hs + i];
                    }
            }
            const double ed = ref::rel_error(dqkv.get<float>(kCuda, nq), want);
            ref::report(tag("gqa bwd vs replicated mha" + sh), ed);
            EXPECT_LE(ed, tol(true)) << sh;
        }
}

// ------------------------------------------------------------------ scratch from ModelDims

// A Llama-shaped model reserves through ModelDims{NKV, F} alone (C stays the model's width,
// not the widest matrix): every matmul of its layer — qkv (NH+2NKV)·hs wide, the stacked
// gate|up 2F, down F -> C, the classifier — and its GQA attention run without a scratch
// error and match the CPU. bf16/fp16 need the operand casts' scratch, the part sized from F.
TEST_P(LlamaOps, ScratchSizedFromLlamaDims) {
    const int B = 2, T = 33, C = 96, NH = 6, NKV = 2, F = 344, V = 301, hs = C / NH;
    const int N = B * T, QKV = (NH + 2 * NKV) * hs;
    trt::ModelDims d{B, T, C, NH, V, 1, NKV, F};
    cpu_->reserve(d);
    cuda_->reserve(d);
    struct Mm { int K, M; const char* what; };
    const Mm mms[] = {{C, QKV, "qkv"}, {C, C, "o_proj"}, {C, 2 * F, "gate|up"},
                      {F, C, "down"}, {C, V, "lm_head"}};
    for (const Mm& m : mms) {
        const std::string sh = std::string(" ") + m.what + shape({{"K", m.K}, {"M", m.M}});
        Twin x = up(in((size_t)N * m.K, 3901)), w = up(in((size_t)m.K * m.M, 3902));
        Twin out = nan_floats((size_t)N * m.M);
        both([&](Backend& be, int s) {
            be.matmul_forward(out.f(s), x.f(s), w.f(s), nullptr, N, m.K, m.M,
                              WeightLayout::InOut);
        });
        expect_close("llama dims matmul fwd" + sh, out, (size_t)N * m.M, tol(false));
        const auto dW0 = gpu::rnd((size_t)m.K * m.M, 3904);
        Twin dout = up(in((size_t)N * m.M, 3903)), dx = nan_floats((size_t)N * m.K),
             dW = up(dW0);
        both([&](Backend& be, int s) {
            be.matmul_backward(dx.f(s), dW.f(s), nullptr, dout.f(s), x.f(s), w.f(s), N, m.K,
                               m.M, WeightLayout::InOut);
        });
        expect_close("llama dims matmul bwd dinp" + sh, dx, (size_t)N * m.K, tol(true));
        expect_close_accum("llama dims matmul bwd dweight" + sh, dW, dW0, tol(true));
    }
    // The attention of that model, and its norm / MLP ops.
    const size_t nq = (size_t)N * QKV, no = (size_t)N * C;
    Twin qkv = up(in(nq, 3905, -2, 2)), out = nan_floats(no), dqkv = nan_floats(nq);
    Twin saved = attention_saved(B, T, C, NH, NKV);
    Twin scratch = attention_scratch(B, T, C, NH, NKV);
    Twin dout = up(in(no, 3906));
    both([&](Backend& be, int s) {
        be.attention_forward(out.f(s), saved.f(s), qkv.f(s),
                             trt::AttentionShape::from_width(B, T, C, NH, NKV));
        be.attention_backward(dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s),
                              trt::AttentionShape::from_width(B, T, C, NH, NKV));
    });
    expect_close("llama dims attention fwd", out, no, tol(false));
    expect_close("llama dims attention bwd", dqkv, nq, tol(true));
    const auto dw0 = gpu::rnd(C, 3908), dx0 = gpu::rnd(no, 3909);
    Twin x = up(gpu::rnd(no, 3907)), w = up(gpu::rnd(C, 3910, 0.5f, 1.5f)),
         rstd = nan_floats(N), y = nan_floats(no), dx = up(dx0), dw = up(dw0);
    both([&](Backend& be, int s) {
        be.rmsnorm_forward(y.f(s), rstd.f(s), x.f(s), w.f(s), N, C, 1e-5f);
        be.rmsnorm_backward(dx.f(s), dw.f(s), dout.f(s), x.f(s), w.f(s), rstd.f(s), N, C);
    });
    expect_close("llama dims rmsnorm fwd", y, no, gpu::kTolFp32);
    expect_close_accum("llama dims rmsnorm bwd dw", dw, dw0, gpu::kTolFp32);
}

// A sliding window of 5 over T 19 (GQA 4 over 2): the matmul path's banded softmax, the
// backward through its zeros, and the cached kernel reading the window's keys, vs the CPU.
TEST_P(LlamaOps, SlidingWindowAttentionMatchesTheCpu) {
    const int B = 2, T = 19, C = 64, NH = 4, NKV = 2, W = 5, hs = C / NH;
    trt::ModelDims d{B, T, C, NH, 1, 1, NKV, 0};
    d.window = W;
    cpu_->reserve(d);
    cuda_->reserve(d);
    const size_t nq = (size_t)B * T * (NH + 2 * NKV) * hs, no = (size_t)B * T * C;
    Twin qkv = up(in(nq, 3951, -2, 2)), out = nan_floats(no), dqkv = nan_floats(nq);
    Twin saved = attention_saved(B, T, C, NH, NKV);
    Twin scratch = attention_scratch(B, T, C, NH, NKV);
    Twin dout = up(in(no, 3952));
    both([&](Backend& be, int s) {
        be.attention_forward(out.f(s), saved.f(s), qkv.f(s),
                             trt::AttentionShape::from_width(B, T, C, NH, NKV).with_window(W));
        be.attention_backward(dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s),
                              trt::AttentionShape::from_width(B, T, C, NH, NKV).with_window(W));
    });
    expect_close("sliding window attention fwd", out, no, tol(false));
    expect_close("sliding window attention bwd", dqkv, nq, tol(true));
    // Cached: one sequence, its 19 rows in two calls (12, then 7 at position 12).
    const size_t cache = (size_t)NKV * T * hs;
    Twin kc = nan_floats(cache), vc = nan_floats(cache), cout = nan_floats((size_t)T * C);
    const size_t row = (size_t)(NH + 2 * NKV) * hs;
    both([&](Backend& be, int s) {
        be.attention_cached_forward(
            cout.f(s), qkv.f(s), kc.f(s), vc.f(s), 0, T,
            trt::AttentionShape::from_heads(1, 12, NH, NKV, hs).with_window(W));
        be.attention_cached_forward(
            cout.f(s) + 12 * (size_t)C, qkv.f(s) + 12 * row, kc.f(s), vc.f(s), 12, T,
            trt::AttentionShape::from_heads(1, T - 12, NH, NKV, hs).with_window(W));
    });
    expect_close("sliding window cached attention", cout, (size_t)T * C, tol(false));
}

INSTANTIATE_TEST_SUITE_P(Precision, LlamaOps,
                         ::testing::Values(Precision::Fp32, Precision::Tf32, Precision::Bf16,
                                           Precision::Fp16),
                         gpu::precision_param_name);

}  // namespace
