// Every op of the Backend interface on the CUDA backend against the CPU backend, for each
// CUDA precision (fp32, tf32, bf16, fp16), on seeded random inputs (never zeros) and shapes
// that are multiples of nothing (C=40 NH=5 T=17, N not a multiple of 32, V=67 Vp=80, hs=4).
// Outputs an op must write are poisoned with NaN first; parameter gradients (+=) are
// pre-filled with the same random values on both backends and judged on the increment.
//
// Tolerances (gpu_test_util.h, TESTING.md): relative ‖cuda − cpu‖ / ‖cpu‖ per tensor
//   no matrix product (layernorm, gelu, encoder bwd, classifier, adamw...): 1e-5 in every
//     precision (they compute in fp32);
//   matrix products (matmul, matmul+gelu, attention): fp32 1e-5, tf32 2e-3,
//     bf16/fp16 forward 1e-2 / backward 2e-2 with both backends fed the same bf16/fp16-rounded
//     inputs;
//   single IEEE additions (residual, add_inplace, encoder forward): bitwise;
//   sum_squares: 1e-12 against a long double sum (it is a double reduction).
// The step ops (begin_step ... end_step), samplers and determinism have their own files.
#include <gtest/gtest.h>

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

class CudaOps : public gpu::CudaOpsP {};

std::string shape(std::initializer_list<std::pair<const char*, int>> dims) {
    std::string s;
    for (const auto& d : dims) s += std::string(" ") + d.first + std::to_string(d.second);
    return s;
}

// ------------------------------------------------------------------ memory

TEST_P(CudaOps, MemoryZeroFilledCopiesAndOutOfMemory) {
    reserve(Cover().add(1, 64, 64));
    Backend& g = *cuda_;
    const size_t before = g.bytes_in_use();
    const size_t n = (1 << 20) + 7;
    {
        // Dirty memory, free it, allocate again: still zero-filled.
        void* p = g.alloc(n * 4, "dirty");
        g.copy_to_device(p, std::vector<float>(n, 3.5f).data(), n * 4);
        g.synchronize();
        g.free(p);
    }
    void* p = g.alloc(n * 4, "fresh");
    EXPECT_GE(g.bytes_in_use(), before + n * 4);
    std::vector<float> back(n, 1.0f);
    g.copy_to_host(back.data(), p, n * 4);
    size_t nonzero = 0;
    for (float x : back) nonzero += x != 0.0f;
    EXPECT_EQ(nonzero, 0u) << "alloc is documented zero-filled";
    auto v = gpu::rnd(n, 11);
    g.copy_to_device(p, v.data(), n * 4);
    g.zero(static_cast<float*>(p) + 5, 100 * 4);
    g.copy_to_host(back.data(), p, n * 4);
    for (size_t i = 0; i < n; i++) {
        const float want = i >= 5 && i < 105 ? 0.0f : v[i];
        ASSERT_EQ(back[i], want) << i;
    }
    g.free(p);
    g.free(nullptr);
    EXPECT_EQ(g.bytes_in_use(), before);
    try {
        g.alloc(size_t(1) << 50, "an absurd test buffer");
        ADD_FAILURE() << "a 1 PiB allocation succeeded";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::OutOfMemory) << e.what();
        EXPECT_NE(std::string(e.what()).find("an absurd test buffer"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(g.bytes_in_use(), before);
    // The backend still works after the failed allocation.
    void* q = g.alloc(64, "after");
    g.copy_to_device(q, v.data(), 64);
    std::vector<float> w(16);
    g.copy_to_host(w.data(), q, 64);
    EXPECT_EQ(0, std::memcmp(w.data(), v.data(), 64));
    g.free(q);
}

// ------------------------------------------------------------------ encoder

TEST_P(CudaOps, EncoderForwardBackward) {
    struct Case { int B, T, C, V; };
    const Case cases[] = {{3, 17, 40, 67}, {2, 5, 3, 2}, {4, 64, 768, 50}, {1, 1, 8, 3}};
    Cover cov;
    for (auto c : cases) cov.add(c.B, c.T, c.C, 1, c.V);
    reserve(cov);
    for (auto c : cases) {
        const int B = c.B, T = c.T, C = c.C, V = c.V, P = T + 3;  // wpe has more rows than T
        const std::string sh = shape({{"B", B}, {"T", T}, {"C", C}, {"V", V}});
        auto ids = gpu::rnd_ids(B * T, 101, V);
        ids[0] = V - 1;  // the last row of wte is reachable
        Twin in = up(ids), wte = up(gpu::rnd(V * C, 102)), wpe = up(gpu::rnd(P * C, 103));
        Twin out = nan_floats(B * T * C);
        both([&](Backend& be, int s) {
            be.encoder_forward(out.f(s), in.i(s), wte.f(s), wpe.f(s), B, T, C);
        });
        expect_equal<float>("encoder fwd (bitwise: one add)" + sh, out, B * T * C);

        const auto dwte0 = gpu::rnd(V * C, 104), dwpe0 = gpu::rnd(P * C, 105);
        Twin dout = up(gpu::rnd(B * T * C, 106)), dwte = up(dwte0), dwpe = up(dwpe0);
        both([&](Backend& be, int s) {
            be.encoder_backward(dwte.f(s), dwpe.f(s), dout.f(s), in.i(s), B, T, C);
        });
        expect_close_accum("encoder bwd dwte" + sh, dwte, dwte0, gpu::kTolFp32);
        // dwpe rows >= T are not touched; judge rows < T on their increment.
        auto gpe = dwpe.get<float>(kCuda, P * C), cpe = dwpe.get<float>(kCpu, P * C);
        for (int k = T * C; k < P * C; k++) ASSERT_EQ(gpe[k], dwpe0[k]) << "dwpe row >= T, " << sh;
        gpe.resize(T * C);
        cpe.resize(T * C);
        const double e = gpu::accum_error(gpe, cpe, {dwpe0.begin(), dwpe0.begin() + T * C});
        ref::report(tag("encoder bwd dwpe (+=)" + sh), e);
        EXPECT_LE(e, gpu::kTolFp32) << sh;
        // wte rows of tokens that do not occur are not touched.
        std::vector<bool> seen(V, false);
        for (int t : ids) seen[t] = true;
        const auto gte = dwte.get<float>(kCuda, V * C);
        for (int v = 0; v < V; v++) {
            if (seen[v]) continue;
            for (int k = 0; k < C; k++) ASSERT_EQ(gte[v * C + k], dwte0[v * C + k]) << sh;
        }
    }
}

// ------------------------------------------------------------------ layernorm

TEST_P(CudaOps, LayerNormForwardBackward) {
    const std::pair<int, int> cases[] = {{51, 40}, {33, 385}, {1030, 768}, {7, 1600}, {5, 3}};
    Cover cov;
    for (auto [N, C] : cases) cov.add(1, N, C);
    reserve(cov);
    for (auto [N, C] : cases) {
        const std::string sh = shape({{"N", N}, {"C", C}});
        Twin x = up(gpu::rnd(N * C, 201, -2, 3)), w = up(gpu::rnd(C, 202, 0.5f, 1.5f)),
             b = up(gpu::rnd(C, 203));
        Twin out = nan_floats(N * C), mean = nan_floats(N), rstd = nan_floats(N);
        both([&](Backend& be, int s) {
            be.layernorm_forward(out.f(s), mean.f(s), rstd.f(s), x.f(s), w.f(s), b.f(s), N, C);
        });
        expect_close("layernorm fwd out" + sh, out, N * C, gpu::kTolFp32);
        expect_close("layernorm fwd mean" + sh, mean, N, gpu::kTolFp32);
        expect_close("layernorm fwd rstd" + sh, rstd, N, gpu::kTolFp32);

        const auto dx0 = gpu::rnd(N * C, 205), dw0 = gpu::rnd(C, 206), db0 = gpu::rnd(C, 207);
        Twin dout = up(gpu::rnd(N * C, 204)), dx = up(dx0), dw = up(dw0), db = up(db0);
        both([&](Backend& be, int s) {
            // Both sides use their own saved mean/rstd, as in a real step.
            be.layernorm_backward(dx.f(s), dw.f(s), db.f(s), dout.f(s), x.f(s), w.f(s),
                                  mean.f(s), rstd.f(s), N, C);
        });
        expect_close_accum("layernorm bwd dinp" + sh, dx, dx0, gpu::kTolFp32);
        expect_close_accum("layernorm bwd dw" + sh, dw, dw0, gpu::kTolFp32);
        expect_close_accum("layernorm bwd db" + sh, db, db0, gpu::kTolFp32);
    }
}

TEST_P(CudaOps, ResidualLayerNormForward) {
    const std::pair<int, int> cases[] = {{51, 40}, {33, 385}, {1030, 768}};
    Cover cov;
    for (auto [N, C] : cases) cov.add(1, N, C);
    reserve(cov);
    for (auto [N, C] : cases)
        for (bool with_bb : {false, true}) {
            const std::string sh = shape({{"N", N}, {"C", C}}) + (with_bb ? " +bb" : "");
            Twin a = up(gpu::rnd(N * C, 301, -2, 2)), b = up(gpu::rnd(N * C, 302)),
                 bb = up(gpu::rnd(C, 303)), w = up(gpu::rnd(C, 304, 0.5f, 1.5f)),
                 bias = up(gpu::rnd(C, 305));
            Twin res = nan_floats(N * C), out = nan_floats(N * C), mean = nan_floats(N),
                 rstd = nan_floats(N);
            both([&](Backend& be, int s) {
                be.residual_layernorm_forward(res.f(s), out.f(s), mean.f(s), rstd.f(s), a.f(s),
                                              b.f(s), with_bb ? bb.f(s) : nullptr, w.f(s),
                                              bias.f(s), N, C);
            });
            // One or two float adds (the order of the two may differ): 1e-7.
            expect_close("residual+layernorm res_out" + sh, res, N * C, 1e-7);
            expect_close("residual+layernorm out" + sh, out, N * C, gpu::kTolFp32);
            expect_close("residual+layernorm mean" + sh, mean, N, gpu::kTolFp32);
            expect_close("residual+layernorm rstd" + sh, rstd, N, gpu::kTolFp32);
        }
}

// ------------------------------------------------------------------ matmul

struct MatmulCase {
    int N, K, M;
};
const MatmulCase kMatmulCases[] = {
    {51, 40, 120}, {51, 160, 40}, {37, 29, 19}, {130, 67, 201}, {512, 768, 768}, {3, 5, 1}};

// `registered`: the weight lives inside the buffer given to register_params (at an offset
// that is not a multiple of 8 floats), so a bf16/fp16 backend uses its working copy; it is
// written there with copy_to_device, which must refresh that copy.
TEST_P(CudaOps, MatmulForwardBackward) {
    Cover cov;
    size_t max_w = 0, max_m = 0;
    for (auto c : kMatmulCases) {
        cov.matmul(c.N, c.K, c.M);
        max_w = std::max(max_w, (size_t)c.K * c.M);
        max_m = std::max(max_m, (size_t)c.M);
    }
    reserve(cov);
    const size_t kOffset = 6;  // floats: 24 bytes in fp32, 12 in bf16
    const size_t n_params = kOffset + max_w + max_m + 64;
    Twin params = up(gpu::rnd(n_params, 399));
    both([&](Backend& be, int s) { be.register_params(params.f(s), n_params); });

    for (auto c : kMatmulCases)
        for (auto layout : {WeightLayout::InOut, WeightLayout::OutIn})
            for (bool with_bias : {true, false})
                for (bool registered : {false, true}) {
                    const int N = c.N, K = c.K, M = c.M;
                    const std::string sh =
                        shape({{"N", N}, {"K", K}, {"M", M}}) +
                        (layout == WeightLayout::InOut ? " InOut" : " OutIn") +
                        (with_bias ? " +bias" : "") + (registered ? " registered" : "");
                    const auto xv = in(N * K, 401), wv = in(K * M, 402), bv = in(M, 403);
                    Twin x = up(xv), wplain = up(wv), bplain = up(bv);
                    if (registered) {
                        // Weight then bias inside the registered parameters.
                        for (int s = 0; s < 2; s++) {
                            be(s).copy_to_device(params.f(s) + kOffset, wv.data(), wv.size() * 4);
                            be(s).copy_to_device(params.f(s) + kOffset + wv.size(), bv.data(),
                                                 bv.size() * 4);
                        }
                    }
                    auto W = [&](int s) {
                        return registered ? params.f(s) + kOffset : wplain.f(s);
                    };
                    auto Bias = [&](int s) -> float* {
                        if (!with_bias) return nullptr;
                        return registered ? params.f(s) + kOffset + K * M : bplain.f(s);
                    };
                    Twin out = nan_floats(N * M);
                    both([&](Backend& be, int s) {
                        be.matmul_forward(out.f(s), x.f(s), W(s), Bias(s), N, K, M, layout);
                    });
                    expect_close("matmul fwd" + sh, out, N * M, tol(false));

                    const auto dW0 = gpu::rnd(K * M, 405), db0 = gpu::rnd(M, 406);
                    Twin dout = up(in(N * M, 404)), dx = nan_floats(N * K), dW = up(dW0),
                         db = up(db0);
                    both([&](Backend& be, int s) {
                        be.matmul_backward(dx.f(s), dW.f(s), with_bias ? db.f(s) : nullptr,
                                           dout.f(s), x.f(s), W(s), N, K, M, layout);
                    });
                    expect_close("matmul bwd dinp" + sh, dx, N * K, tol(true));
                    expect_close_accum("matmul bwd dweight" + sh, dW, dW0, tol(true));
                    if (with_bias) {
                        expect_close_accum("matmul bwd dbias" + sh, db, db0, tol(true));
                    } else {
                        const auto g = db.get<float>(kCuda, M);
                        EXPECT_TRUE(gpu::same_bits(g, db0)) << "dbias touched with null" << sh;
                    }
                    // dinp == nullptr: only the weight gradient, accumulated again.
                    Twin dW2 = up(dW0);
                    both([&](Backend& be, int s) {
                        be.matmul_backward(nullptr, dW2.f(s), nullptr, dout.f(s), x.f(s), W(s),
                                           N, K, M, layout);
                    });
                    expect_close_accum("matmul bwd dinp=null dweight" + sh, dW2, dW0, tol(true));
                }
}

TEST_P(CudaOps, MatmulGeluForward) {
    const MatmulCase cases[] = {{51, 40, 160}, {37, 29, 43}, {130, 67, 301}, {256, 768, 3072}};
    Cover cov;
    size_t max_w = 0;
    for (auto c : cases) {
        cov.matmul(c.N, c.K, c.M);
        max_w = std::max(max_w, (size_t)c.K * c.M + c.M);
    }
    reserve(cov);
    const size_t kOffset = 6, n_params = kOffset + max_w + 64;
    Twin params = up(gpu::rnd(n_params, 499));
    both([&](Backend& be, int s) { be.register_params(params.f(s), n_params); });
    for (auto c : cases)
        for (bool with_bias : {false, true})
            for (bool registered : {false, true}) {
                const int N = c.N, K = c.K, M = c.M;
                const std::string sh = shape({{"N", N}, {"K", K}, {"M", M}}) +
                                       (with_bias ? " +bias" : "") +
                                       (registered ? " registered" : "");
                const auto xv = in(N * K, 501, -2, 2), wv = in(K * M, 502), bv = in(M, 503);
                Twin x = up(xv), wplain = up(wv), bplain = up(bv);
                if (registered)
                    for (int s = 0; s < 2; s++) {
                        be(s).copy_to_device(params.f(s) + kOffset, wv.data(), wv.size() * 4);
                        be(s).copy_to_device(params.f(s) + kOffset + wv.size(), bv.data(),
                                             bv.size() * 4);
                    }
                auto W = [&](int s) { return registered ? params.f(s) + kOffset : wplain.f(s); };
                auto Bias = [&](int s) -> float* {
                    if (!with_bias) return nullptr;
                    return registered ? params.f(s) + kOffset + K * M : bplain.f(s);
                };
                Twin pre = nan_floats(N * M), out = nan_floats(N * M);
                both([&](Backend& be, int s) {
                    be.matmul_gelu_forward(pre.f(s), out.f(s), x.f(s), W(s), Bias(s), N, K, M);
                });
                expect_close("matmul+gelu pre" + sh, pre, N * M, tol(false));
                expect_close("matmul+gelu out" + sh, out, N * M, tol(false));
            }
}

// The bf16/fp16 working copy follows the master weights: after copy_to_device into the
// registered buffer and after adamw_step on it, a matmul sees the new values.
TEST_P(CudaOps, RegisteredWorkingCopyFollowsTheMasterWeights) {
    const int N = 64, K = 96, M = 80;
    reserve(Cover().matmul(N, K, M));
    const size_t n = (size_t)K * M + 10;
    Twin params = up(in(n, 551)), grads = up(gpu::rnd(n, 552)), m = up(gpu::rnd(n, 553, -0.01f, 0.01f)),
         v = up(gpu::rnd(n, 554, 1e-5f, 1e-3f));
    both([&](Backend& be, int s) { be.register_params(params.f(s), n); });
    Twin x = up(in(N * K, 555)), out = nan_floats(N * M);
    auto matmul = [&](const std::string& what) {
        out.poison();
        both([&](Backend& be, int s) {
            be.matmul_forward(out.f(s), x.f(s), params.f(s) + 3, nullptr, N, K, M,
                              WeightLayout::InOut);
        });
        expect_close(what, out, N * M, tol(false));
    };
    matmul("working copy: registered");
    // copy_to_device of part of the buffer.
    const auto part = in(K * M / 2, 556, 2.0f, 3.0f);
    for (int s = 0; s < 2; s++) be(s).copy_to_device(params.f(s) + 3 + 100, part.data(), part.size() * 4);
    matmul("working copy: after copy_to_device");
    // adamw_step over the registered buffer (lr large enough to move bf16 values).
    const std::vector<int64_t> ends = {(int64_t)n};
    const std::vector<float> decay = {0.0f};
    Twin e = up(ends), d = up(decay), sc = alloc(sizeof(trt::StepScalars));
    const trt::StepScalars init;
    sc.set(&init, sizeof init);
    const trt::AdamWConfig hp{0.9f, 0.95f, 1e-8f};
    both([&](Backend& be, int s) {
        trt::ParamSegments seg;
        seg.ends = e.as<int64_t>(s);
        seg.weight_decay = d.f(s);
        seg.count = 1;
        auto* st = sc.as<trt::StepScalars>(s);
        be.begin_step(st, 0.05f, 1);  // step 1: every weight moves by about lr
        be.adamw_step(params.f(s), grads.f(s), m.f(s), v.f(s), n, seg, hp, st);
    });
    expect_close("adamw_step params (registered)", params, n, gpu::kTolFp32);
    matmul("working copy: after adamw_step");
}

// ------------------------------------------------------------------ gelu, residual

TEST_P(CudaOps, GeluForwardBackward) {
    reserve(Cover().add(1, 64, 64));  // as the model does before any op
    for (size_t n : {size_t(1), size_t(1237), size_t(1 << 20) + 3}) {
        const std::string sh = " n" + std::to_string(n);
        Twin x = up(gpu::rnd(n, 601, -5, 5)), dout = up(gpu::rnd(n, 602));
        Twin out = nan_floats(n), dx = nan_floats(n);
        both([&](Backend& be, int s) {
            be.gelu_forward(out.f(s), x.f(s), n);
            be.gelu_backward(dx.f(s), x.f(s), dout.f(s), n);
        });
        expect_close("gelu fwd" + sh, out, n, gpu::kTolFp32);
        expect_close("gelu bwd" + sh, dx, n, gpu::kTolFp32);
    }
}

TEST_P(CudaOps, GeluBackwardBias) {
    const std::pair<int, int> cases[] = {{67, 13}, {67, 300}, {2053, 96}, {29, 1037}, {1, 1}};
    Cover cov;
    for (auto [N, M] : cases) cov.add(1, N, (M + 3) / 4);  // column sums cover M <= 4C
    reserve(cov);
    for (auto [N, M] : cases) {
        const std::string sh = shape({{"N", N}, {"M", M}});
        const auto db0 = gpu::rnd(M, 623);
        Twin x = up(gpu::rnd(N * M, 621, -5, 5)), dout = up(gpu::rnd(N * M, 622)),
             dx = nan_floats(N * M), db = up(db0);
        both([&](Backend& be, int s) {
            be.gelu_backward_bias(dx.f(s), db.f(s), x.f(s), dout.f(s), N, M);
        });
        expect_close("gelu bwd+bias dinp" + sh, dx, N * M, gpu::kTolFp32);
        expect_close_accum("gelu bwd+bias dbias" + sh, db, db0, gpu::kTolFp32);
        Twin dx2 = nan_floats(N * M);
        both([&](Backend& be, int s) {
            be.gelu_backward_bias(dx2.f(s), nullptr, x.f(s), dout.f(s), N, M);
        });
        expect_close("gelu bwd+bias (dbias null) dinp" + sh, dx2, N * M, gpu::kTolFp32);
    }
}

TEST_P(CudaOps, ResidualAndAddInplaceAreBitwise) {
    reserve(Cover().add(1, 64, 64));
    for (size_t n : {size_t(1), size_t(1001), size_t(1 << 20) + 5}) {
        const std::string sh = " n" + std::to_string(n);
        const auto av = gpu::rnd(n, 701), bv = gpu::rnd(n, 702);
        Twin a = up(av), b = up(bv), out = nan_floats(n), dst = up(av);
        both([&](Backend& be, int s) {
            be.residual_forward(out.f(s), a.f(s), b.f(s), n);
            be.add_inplace(dst.f(s), b.f(s), n);
        });
        expect_equal<float>("residual" + sh, out, n);
        expect_equal<float>("add_inplace" + sh, dst, n);
        const auto g = out.get<float>(kCuda, n);
        for (size_t i = 0; i < n; i += 97) ASSERT_EQ(g[i], av[i] + bv[i]) << i;
    }
}

// ------------------------------------------------------------------ attention

TEST_P(CudaOps, AttentionForwardBackward) {
    struct Case { int B, T, C, NH; };
    const Case cases[] = {{2, 17, 40, 5}, {1, 1, 8, 2},    {2, 7, 12, 3},
                          {2, 64, 64, 4}, {1, 130, 96, 2}, {2, 256, 768, 12}};
    Cover cov;
    for (auto c : cases) cov.add(c.B, c.T, c.C, c.NH);
    reserve(cov);
    for (auto c : cases) {
        const int B = c.B, T = c.T, C = c.C, NH = c.NH;
        const std::string sh = shape({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}});
        const size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
        Twin qkv = up(in(nq, 801, -2, 2)), out = nan_floats(no);
        // Each backend saves what its own backward needs: its own sizes.
        const size_t saved_c = cpu_->attention_saved_floats(B, T, C, NH, NH);
        const size_t saved_g = cuda_->attention_saved_floats(B, T, C, NH, NH);
        const size_t scr_c = cpu_->attention_scratch_floats(B, T, C, NH, NH);
        const size_t scr_g = cuda_->attention_scratch_floats(B, T, C, NH, NH);
        Twin saved = nan_floats(std::max(saved_c, saved_g));
        Twin scratch = nan_floats(std::max(scr_c, scr_g));
        both([&](Backend& be, int s) {
            be.attention_forward(out.f(s), saved.f(s), qkv.f(s), B, T, C, NH, NH);
        });
        expect_close("attention fwd" + sh, out, no, tol(false));

        Twin dout = up(in(no, 802)), dqkv = nan_floats(nq);
        both([&](Backend& be, int s) {
            be.attention_backward(dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s), B,
                                  T, C, NH, NH);
        });
        expect_close("attention bwd dqkv" + sh, dqkv, nq, tol(true));
    }
}

// ------------------------------------------------------------------ classifier

TEST_P(CudaOps, ClassifierLossAndGradient) {
    struct Case { int N, V, Vp; };
    const Case cases[] = {{51, 67, 80}, {64, 256, 256}, {33, 1000, 1024}, {5, 50257, 50304}};
    Cover cov;
    for (auto c : cases) cov.add(1, c.N, 64, 1, c.Vp);
    reserve(cov);
    for (auto c : cases)
        for (bool write_grad : {false, true})
            for (bool scaled : {false, true}) {
                const int N = c.N, V = c.V, Vp = c.Vp;
                const std::string sh = shape({{"N", N}, {"V", V}, {"Vp", Vp}}) +
                                       (write_grad ? " grad" : " loss-only") +
                                       (scaled ? " loss_scale=4" : " scalars=null");
                auto lv = gpu::rnd((size_t)N * Vp, 901, -4, 4);
                for (int n = 0; n < N; n++)  // padded columns: garbage that must be ignored
                    for (int i = V; i < Vp; i++) lv[(size_t)n * Vp + i] = 3e4f;
                auto tg = gpu::rnd_ids(N, 902, V);
                tg[0] = V - 1;
                if (N > 1) tg[1] = 0;
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
                expect_close("classifier losses" + sh, losses, N, gpu::kTolFp32);
                const auto g = logits.get<float>(kCuda, (size_t)N * Vp);
                if (!write_grad) {
                    EXPECT_TRUE(gpu::same_bits(g, lv)) << "logits changed without write_grad" << sh;
                } else {
                    expect_close("classifier dlogits" + sh, logits, (size_t)N * Vp,
                                 gpu::kTolFp32);
                    for (int n = 0; n < N; n++)
                        for (int i = V; i < Vp; i++)
                            ASSERT_EQ(g[(size_t)n * Vp + i], 0.0f) << "padded column " << i << sh;
                    // The scale really applies: the CPU side holds the ground truth, so
                    // check its ratio once (the comparison above covers CUDA).
                    if (scaled) {
                        Twin l2 = up(lv), loss2 = nan_floats(N);
                        cpu_->classifier_forward_backward(l2.f(kCpu), loss2.f(kCpu),
                                                          targets.i(kCpu), N, V, Vp, dloss,
                                                          true, nullptr);
                        const auto unscaled = l2.get<float>(kCpu, (size_t)N * Vp);
                        const auto c4 = logits.get<float>(kCpu, (size_t)N * Vp);
                        for (size_t k = 0; k < c4.size(); k += 131)
                            ASSERT_FLOAT_EQ(c4[k], 4.0f * unscaled[k]) << k << sh;
                    }
                }
            }
}

// ------------------------------------------------------------------ optimizer helpers

TEST_P(CudaOps, SumSquares) {
    reserve(Cover().add(1, 64, 64));  // the reduction partials live in the op scratch
    for (size_t n : {size_t(1), size_t(7), size_t(1000), size_t(100003), size_t(3 << 20) + 5}) {
        auto x = gpu::rnd(n, 1001 + (uint32_t)n, -3, 3);
        long double want = 0;
        for (float f : x) want += (long double)f * f;
        Twin d = up(x);
        const double got_c = cpu_->sum_squares(d.f(kCpu), n);
        const double got_g = cuda_->sum_squares(d.f(kCuda), n);
        const double eg = (double)(std::fabs((long double)got_g - want) / want);
        const double ec = (double)(std::fabs((long double)got_c - want) / want);
        ref::report(tag("sum_squares cuda n=" + std::to_string(n)), eg);
        EXPECT_LE(eg, gpu::kTolDoubleSum) << n;
        EXPECT_LE(ec, gpu::kTolDoubleSum) << n;
        // Deterministic: same input, same bits.
        const double again = cuda_->sum_squares(d.f(kCuda), n);
        EXPECT_EQ(0, std::memcmp(&again, &got_g, sizeof again)) << n;
    }
    Twin empty = alloc(4);
    EXPECT_EQ(cuda_->sum_squares(empty.f(kCuda), 0), 0.0);
}

TEST_P(CudaOps, AdamWUpdate) {
    reserve(Cover().add(1, 64, 64));
    const size_t n = 100003;
    const auto p0 = gpu::rnd(n, 1101), g0 = gpu::rnd(n, 1102, -2, 2),
               m0 = gpu::rnd(n, 1103, -0.1f, 0.1f), v0 = gpu::rnd(n, 1104, 1e-4f, 1e-2f);
    Twin p = up(p0), g = up(g0), m = up(m0), v = up(v0);
    trt::AdamWParams h{};
    h.lr = 3e-3f;
    h.beta1 = 0.9f;
    h.beta2 = 0.95f;
    h.eps = 1e-8f;
    h.weight_decay = 0.1f;
    h.grad_scale = 0.37f;
    for (int step = 3; step <= 5; step++) {
        h.step = step;
        both([&](Backend& be, int s) {
            be.adamw_update(p.f(s), g.f(s), m.f(s), v.f(s), n, h);
        });
    }
    expect_close_accum("adamw_update params (3 steps)", p, p0, gpu::kTolFp32);
    expect_close("adamw_update m", m, n, gpu::kTolFp32);
    expect_close("adamw_update v", v, n, gpu::kTolFp32);
    const bool bitwise = gpu::same_bits(p.get<float>(kCpu, n), p.get<float>(kCuda, n));
    std::printf("[  info    ] adamw_update params bitwise equal to the CPU: %s\n",
                bitwise ? "yes" : "no");
}

INSTANTIATE_TEST_SUITE_P(Precision, CudaOps,
                         ::testing::Values(Precision::Fp32, Precision::Tf32, Precision::Bf16,
                                           Precision::Fp16),
                         gpu::precision_param_name);

}  // namespace
