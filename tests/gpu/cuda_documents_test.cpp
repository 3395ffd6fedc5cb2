// Documents (packed examples, backend.h's `pos`) through a whole decoder step on CUDA against
// the CPU backend: a row packing several examples, positions restarting at each, for GPT-2
// (the wpe rows and their gradient by position) and Llama with grouped-query attention (RoPE
// angles), on the matmul attention in both its forms (untiled, and tiled: its recomputed
// probabilities). Per-position losses and the gradient, fp32 (1e-4 relative: the CUDA sums run
// in another order). The op-case table (cuda_op_cases_test.cpp) checks the ops one by one at
// every precision; this checks that the decoder hands the positions to each of them.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"
#include "model/decoder.h"
#include "model/model_weights.h"

namespace {

using trt::Precision;

struct DocCase {
    const char* name;
    trt::ModelSpec spec;
    bool tiled;
};
void PrintTo(const DocCase& c, std::ostream* os) { *os << c.name; }

class CudaDocuments : public ::testing::TestWithParam<DocCase> {};

double rel_norm(const std::vector<float>& got, const std::vector<float>& want) {
    double d = 0, w = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        d += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        w += double(want[i]) * want[i];
    }
    return std::sqrt(d / std::max(w, 1e-30));
}

TEST_P(CudaDocuments, DecoderStepMatchesTheCpu) {
    const DocCase& dc = GetParam();
    trt::AccelOptions accel;
    accel.tiled_matmul_attention = dc.tiled;
    std::unique_ptr<trt::Backend> cuda;
    TRT_CUDA_BACKEND_WITH_OR_SKIP(cuda, Precision::Fp32, accel);
    auto cpu = trt::make_cpu_backend(4);
    // Two rows of T = 80 (a query block edge at 64 on the CPU): examples of 5, 59, 1 and 15
    // tokens in row 0, and 64 and 16 in row 1.
    const int B = 2, T = 80;
    std::vector<int32_t> pos;
    for (const std::vector<int>& row : {std::vector<int>{5, 59, 1, 15}, std::vector<int>{64, 16}})
        for (int len : row)
            for (int i = 0; i < len; ++i) pos.push_back(i);
    ASSERT_EQ(pos.size(), static_cast<size_t>(B * T));
    const std::vector<int32_t> inputs = gpu::rnd_ids(B * T, 21, dc.spec.V);
    const std::vector<int32_t> targets = gpu::rnd_ids(B * T, 22, dc.spec.V);

    trt::Decoder on_cpu(*cpu, dc.spec, B, T), on_cuda(*cuda, dc.spec, B, T);
    const size_t np = on_cpu.table().total(), ng = on_cpu.table().grad_total();
    std::vector<float> params(np);
    trt::init_random(on_cpu.table(), 5, params.data());
    struct Result {
        std::vector<float> losses, grads;
        double whole_rows = 0;  // the mean loss without documents
    };
    auto run = [&](trt::Backend& be, trt::Decoder& m) {
        Result r;
        be.copy_to_device(m.params(), params.data(), np * sizeof(float));
        be.load_batch(m.inputs_buffer(), m.targets_buffer(), m.positions_buffer(),
                      inputs.data(), targets.data(), pos.data(), B, T);
        m.forward(m.inputs_buffer(), m.targets_buffer(), B, T);
        r.whole_rows = m.mean_loss(B, T);
        m.zero_grads();
        m.forward_backward(m.inputs_buffer(), m.targets_buffer(), B, T, 1.0f / (B * T), nullptr,
                           0, m.positions_buffer());
        r.losses.resize(static_cast<size_t>(B) * T);
        r.grads.resize(ng);
        be.copy_to_host(r.losses.data(), m.losses(), r.losses.size() * sizeof(float));
        be.copy_to_host(r.grads.data(), m.grads(), ng * sizeof(float));
        return r;
    };
    const Result want = run(*cpu, on_cpu), got = run(*cuda, on_cuda);
    // The documents matter (else this would not test them).
    double packed = 0;
    for (float l : want.losses) packed += l;
    EXPECT_GT(std::fabs(packed / (B * T) - want.whole_rows), 1e-4);
    EXPECT_LE(rel_norm(got.losses, want.losses), 1e-4);
    EXPECT_LE(rel_norm(got.grads, want.grads), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Families, CudaDocuments,
    ::testing::Values(DocCase{"gpt2", trt::gpt2_spec(37, 96, 2, 4, 32), false},
                      DocCase{"gpt2_tiled", trt::gpt2_spec(37, 96, 2, 4, 32), true},
                      DocCase{"llama_gqa", trt::llama_spec(37, 96, 2, 4, 2, 32, 48, false), false},
                      DocCase{"llama_gqa_tiled", trt::llama_spec(37, 96, 2, 4, 2, 32, 48, false),
                              true}),
    [](const ::testing::TestParamInfo<DocCase>& i) { return i.param.name; });

}  // namespace
