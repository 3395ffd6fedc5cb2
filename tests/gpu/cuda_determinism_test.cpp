// Run-to-run determinism of the CUDA backend (GPU.md "Bitwise claims"): the same op sequence
// on the same inputs gives bitwise identical outputs, for the reductions where a
// floating-point atomic or a device-dependent order would show: encoder backward with
// heavily repeated tokens, layernorm backward (dw/db column partials), bias gradients
// (matmul dbias, gelu_backward_bias column sums), attention backward, the classifier, the
// step reductions (loss sum, grad norm, clip scale) and fused AdamW, and a matmul on two
// separately created backends (cuBLASLt algorithm choice must not vary between instances,
// or two sessions of one run would differ). Every precision.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace {

using gpu::Cover;
using gpu::kCuda;
using gpu::Twin;
using trt::Backend;
using trt::Precision;
using trt::WeightLayout;

class CudaDeterminism : public gpu::CudaOpsP {
protected:
    // Runs `op` twice, each time on fresh copies of `outputs` restored to their initial
    // contents, and expects every output bitwise identical across the two runs.
    void expect_bitwise(const std::string& what, std::vector<Twin*> outputs,
                        const std::function<void()>& op) {
        std::vector<std::vector<float>> init, first;
        for (Twin* t : outputs) init.push_back(t->get<float>(kCuda, t->bytes() / 4));
        op();
        for (Twin* t : outputs) first.push_back(t->get<float>(kCuda, t->bytes() / 4));
        for (size_t k = 0; k < outputs.size(); k++)
            cuda_->copy_to_device(outputs[k]->raw(kCuda), init[k].data(), init[k].size() * 4);
        op();
        for (size_t k = 0; k < outputs.size(); k++) {
            const auto second = outputs[k]->get<float>(kCuda, outputs[k]->bytes() / 4);
            EXPECT_TRUE(gpu::same_bits(first[k], second))
                << tag(what) << ": output " << k << " differs between two identical runs";
            // Not vacuous: the op wrote something.
            EXPECT_FALSE(gpu::same_bits(first[k], init[k])) << tag(what) << ": output " << k
                                                            << " was not written";
        }
    }
};

TEST_P(CudaDeterminism, EncoderBackwardRepeatedTokens) {
    const int B = 8, T = 64, C = 96, V = 7;  // 512 positions onto 7 rows of wte
    reserve(Cover().add(B, T, C, 1, V));
    Twin in = up(gpu::rnd_ids(B * T, 2001, V)), dout = up(gpu::rnd(B * T * C, 2002));
    Twin dwte = up(gpu::rnd(V * C, 2003)), dwpe = up(gpu::rnd(T * C, 2004));
    expect_bitwise("encoder_backward", {&dwte, &dwpe}, [&] {
        cuda_->encoder_backward(dwte.f(kCuda), dwpe.f(kCuda), dout.f(kCuda), in.i(kCuda), B, T, C);
    });
}

TEST_P(CudaDeterminism, LayerNormBackward) {
    const int N = 1024, C = 768;
    reserve(Cover().add(1, N, C));
    Twin x = up(gpu::rnd(N * C, 2101, -2, 3)), w = up(gpu::rnd(C, 2102, 0.5f, 1.5f)),
         b = up(gpu::rnd(C, 2103)), out = alloc(N * C * 4), mean = alloc(N * 4),
         rstd = alloc(N * 4), dout = up(gpu::rnd(N * C, 2104));
    cuda_->layernorm_forward(out.f(kCuda), mean.f(kCuda), rstd.f(kCuda), x.f(kCuda), w.f(kCuda),
                             b.f(kCuda), N, C);
    Twin dx = up(gpu::rnd(N * C, 2105)), dw = up(gpu::rnd(C, 2106)), db = up(gpu::rnd(C, 2107));
    expect_bitwise("layernorm_backward", {&dx, &dw, &db}, [&] {
        cuda_->layernorm_backward(dx.f(kCuda), dw.f(kCuda), db.f(kCuda), dout.f(kCuda),
                                  x.f(kCuda), w.f(kCuda), mean.f(kCuda), rstd.f(kCuda), N, C);
    });
}

TEST_P(CudaDeterminism, BiasGradientColumnSums) {
    const int N = 2048, K = 64, M = 300;
    reserve(Cover().matmul(N, K, M));
    Twin x = up(gpu::rnd(N * K, 2201)), W = up(gpu::rnd(K * M, 2202)),
         dout = up(gpu::rnd(N * M, 2203)), dx = alloc(N * K * 4),
         dW = up(gpu::rnd(K * M, 2204)), db = up(gpu::rnd(M, 2205));
    for (auto layout : {WeightLayout::InOut, WeightLayout::OutIn})
        expect_bitwise(layout == WeightLayout::InOut ? "matmul_backward InOut"
                                                     : "matmul_backward OutIn",
                       {&dx, &dW, &db}, [&] {
                           cuda_->matmul_backward(dx.f(kCuda), dW.f(kCuda), db.f(kCuda),
                                                  dout.f(kCuda), x.f(kCuda), W.f(kCuda), N, K,
                                                  M, layout);
                       });
    Twin pre = up(gpu::rnd(N * M, 2206, -4, 4)), dpre = alloc(N * M * 4),
         dfb = up(gpu::rnd(M, 2207));
    expect_bitwise("gelu_backward_bias", {&dpre, &dfb}, [&] {
        cuda_->gelu_backward_bias(dpre.f(kCuda), dfb.f(kCuda), pre.f(kCuda), dout.f(kCuda), N, M);
    });
}

TEST_P(CudaDeterminism, AttentionForwardBackward) {
    const int B = 2, T = 130, C = 96, NH = 3;
    reserve(Cover().add(B, T, C, NH));
    const size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
    Twin qkv = up(gpu::rnd(nq, 2301, -2, 2)), dout = up(gpu::rnd(no, 2302));
    Twin out = alloc(no * 4), dqkv = alloc(nq * 4);
    Twin saved = alloc(
        cuda_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)) * 4 + 4);
    Twin scratch = alloc(
        cuda_->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)) * 4 + 4);
    expect_bitwise("attention fwd+bwd", {&out, &dqkv}, [&] {
        cuda_->attention_forward(out.f(kCuda), saved.f(kCuda), qkv.f(kCuda),
                                 trt::AttentionShape::from_width(B, T, C, NH, NH));
        cuda_->attention_backward(dqkv.f(kCuda), scratch.f(kCuda), dout.f(kCuda), qkv.f(kCuda),
                                  saved.f(kCuda), trt::AttentionShape::from_width(B, T, C, NH, NH));
    });
}

TEST_P(CudaDeterminism, Classifier) {
    const int N = 300, V = 1000, Vp = 1024;
    reserve(Cover().add(1, N, 64, 1, Vp));
    Twin logits = up(gpu::rnd((size_t)N * Vp, 2401, -4, 4)), losses = alloc(N * 4),
         targets = up(gpu::rnd_ids(N, 2402, V));
    expect_bitwise("classifier", {&logits, &losses}, [&] {
        cuda_->classifier_forward_backward(logits.f(kCuda), losses.f(kCuda), targets.i(kCuda), N,
                                           V, Vp, 1.0f / N, true, nullptr);
    });
}

TEST_P(CudaDeterminism, StepReductionsAndAdamW) {
    reserve(Cover().add(4, 256, 64, 1, 256));
    const size_t n = (size_t(5) << 20) + 3;
    Twin params = up(gpu::rnd(n, 2501)), grads = up(gpu::rnd(n, 2502)),
         m = up(gpu::rnd(n, 2503, -0.1f, 0.1f)), v = up(gpu::rnd(n, 2504, 1e-4f, 1e-2f)),
         losses = up(gpu::rnd(4 * 256, 2505, 0.5f, 8.0f)), s = alloc(sizeof(trt::StepScalars)),
         ends = up(std::vector<int64_t>{1000, (int64_t)n}), decay = up(std::vector<float>{0.0f, 0.1f});
    cuda_->register_params(params.f(kCuda), n);
    const trt::StepScalars init;
    s.set(&init, sizeof init);
    trt::ParamSegments seg;
    seg.ends = ends.as<int64_t>(kCuda);
    seg.weight_decay = decay.f(kCuda);
    seg.count = 2;
    auto* sc = s.as<trt::StepScalars>(kCuda);
    expect_bitwise("loss sum, grad norm, clip, adamw_step", {&params, &m, &v, &s}, [&] {
        trt::optimizer_step_of(*cuda_).begin_step(sc, 1e-3f, 1);
        trt::optimizer_step_of(*cuda_).accumulate_loss(sc, losses.f(kCuda), 4 * 256);
        trt::optimizer_step_of(*cuda_).grad_norm_clip(sc, grads.f(kCuda), n, 1.0f);
        trt::optimizer_step_of(*cuda_).adamw_step(params.f(kCuda), grads.f(kCuda), m.f(kCuda),
                                                  v.f(kCuda), n, seg, {0.9f, 0.95f, 1e-8f}, sc);
        trt::optimizer_step_of(*cuda_).end_step(sc, trt::LossScalePolicy{});
    });
}

// Two backends of the same precision in one process (two sessions) give the same bits.
TEST_P(CudaDeterminism, MatmulAcrossBackendInstances) {
    const int N = 512, K = 768, M = 2304;
    std::unique_ptr<Backend> other;
    TRT_CUDA_BACKEND_OR_SKIP(other, precision_);
    const trt::ModelDims dims = Cover().matmul(N, K, M).dims();
    cuda_->reserve(dims);
    other->reserve(dims);
    const auto xv = gpu::rnd(N * K, 2601), wv = gpu::rnd(K * M, 2602), bv = gpu::rnd(M, 2603),
               dyv = gpu::rnd(N * M, 2604);
    std::vector<float> results[2][4];
    Backend* bes[2] = {cuda_.get(), other.get()};
    for (int k = 0; k < 2; k++) {
        Backend& be = *bes[k];
        auto put = [&](const std::vector<float>& h) {
            float* p = static_cast<float*>(be.alloc(h.size() * 4, "test"));
            be.copy_to_device(p, h.data(), h.size() * 4);
            return p;
        };
        float *x = put(xv), *w = put(wv), *b = put(bv), *dy = put(dyv);
        float* out = static_cast<float*>(be.alloc((size_t)N * M * 4, "test"));
        float* dx = static_cast<float*>(be.alloc((size_t)N * K * 4, "test"));
        float* dw = static_cast<float*>(be.alloc((size_t)K * M * 4, "test"));
        float* db = static_cast<float*>(be.alloc((size_t)M * 4, "test"));
        be.matmul_forward(out, x, w, b, N, K, M, WeightLayout::InOut);
        be.matmul_backward(dx, dw, db, dy, x, w, N, K, M, WeightLayout::InOut);
        float* outs[4] = {out, dx, dw, db};
        const size_t sizes[4] = {(size_t)N * M, (size_t)N * K, (size_t)K * M, (size_t)M};
        for (int j = 0; j < 4; j++) {
            results[k][j].resize(sizes[j]);
            be.synchronize();
            be.copy_to_host(results[k][j].data(), outs[j], sizes[j] * 4);
        }
        for (float* p : {x, w, b, dy, out, dx, dw, db}) be.free(p);
    }
    const char* names[4] = {"out", "dinp", "dweight", "dbias"};
    for (int j = 0; j < 4; j++)
        EXPECT_TRUE(gpu::same_bits(results[0][j], results[1][j]))
            << tag(std::string("matmul ") + names[j]) << " differs between two backends";
}

INSTANTIATE_TEST_SUITE_P(Precision, CudaDeterminism,
                         ::testing::Values(Precision::Fp32, Precision::Tf32, Precision::Bf16,
                                           Precision::Fp16),
                         gpu::precision_param_name);

}  // namespace
