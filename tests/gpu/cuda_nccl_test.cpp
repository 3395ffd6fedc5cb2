// NCCL inside libtrainrt-cuda (backend/cuda/nccl_group.h, docs/DISTRIBUTED.md): a group of one
// rank on this GPU sums in place — the data comes back bit for bit, floats and doubles, also
// inside a captured graph. Skips without a GPU or without libnccl.so.2 (saying why);
// TRAINRT_REQUIRE_NCCL=1 turns the missing library into a failure.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gpu_test_util.h"

namespace {

using trt::Precision;

// The backend's collectives, joined as a group of one; null (said why) without NCCL.
trt::DeviceCollectives* join_alone(trt::Backend& be) {
    std::string why;
    trt::DeviceCollectives* c = be.collectives(&why);
    if (!c) {
        const char* require = std::getenv("TRAINRT_REQUIRE_NCCL");
        if (require && std::string(require) == "1") ADD_FAILURE() << why;
        std::printf("skipped: %s\n", why.c_str());
        return nullptr;
    }
    uint8_t id[trt::DeviceCollectives::kIdBytes] = {};
    c->make_id(id);
    c->join(id, 0, 1);
    return c;
}

TEST(CudaNccl, AGroupOfOneSumsToItsOwnBits) {
    std::unique_ptr<trt::Backend> cuda;
    TRT_CUDA_BACKEND_OR_SKIP(cuda, Precision::Fp32);
    trt::DeviceCollectives* nccl = join_alone(*cuda);
    if (!nccl) GTEST_SKIP() << "no NCCL";
    const size_t n = 100003;  // not a multiple of anything NCCL chunks by
    std::vector<float> host(n), back(n);
    for (size_t i = 0; i < n; ++i) host[i] = 1.0f / static_cast<float>(i + 1) - 0.25f;
    auto* d = static_cast<float*>(cuda->alloc(n * sizeof(float), "test"));
    cuda->copy_to_device(d, host.data(), n * sizeof(float));
    nccl->all_reduce_sum(d, n);
    cuda->copy_to_host(back.data(), d, n * sizeof(float));
    EXPECT_EQ(std::memcmp(back.data(), host.data(), n * sizeof(float)), 0);

    double loss[2] = {12345.678901234, -1e-300};
    auto* dd = static_cast<double*>(cuda->alloc(sizeof loss, "test"));
    cuda->copy_to_device(dd, loss, sizeof loss);
    nccl->all_reduce_sum(dd, 2);
    double got[2] = {};
    cuda->copy_to_host(got, dd, sizeof got);
    EXPECT_EQ(std::memcmp(got, loss, sizeof loss), 0);
    cuda->free(d);
    cuda->free(dd);
}

TEST(CudaNccl, TheSumCanBeCapturedInAGraph) {
    std::unique_ptr<trt::Backend> cuda;
    TRT_CUDA_BACKEND_OR_SKIP(cuda, Precision::Fp32);
    trt::DeviceCollectives* nccl = join_alone(*cuda);
    if (!nccl) GTEST_SKIP() << "no NCCL";
    const size_t n = 4096;
    std::vector<float> host(n, 0.5f), back(n);
    auto* d = static_cast<float*>(cuda->alloc(n * sizeof(float), "test"));
    cuda->copy_to_device(d, host.data(), n * sizeof(float));
    cuda->begin_capture();
    nccl->all_reduce_sum(d, n);
    cuda->end_capture(7);
    cuda->replay_graph(7);
    cuda->replay_graph(7);
    cuda->copy_to_host(back.data(), d, n * sizeof(float));
    EXPECT_EQ(back, host);
    cuda->free(d);
}

// dist.overlap's fork and join: sums on the side stream, after what was enqueued before them,
// seen by what is enqueued after wait() — eagerly and inside a captured graph.
TEST(CudaNccl, SideStreamSumsJoinBack) {
    std::unique_ptr<trt::Backend> cuda;
    TRT_CUDA_BACKEND_OR_SKIP(cuda, Precision::Fp32);
    trt::DeviceCollectives* nccl = join_alone(*cuda);
    if (!nccl) GTEST_SKIP() << "no NCCL";
    const size_t n = 1 << 20;
    std::vector<float> host(n), back(n);
    for (size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 97) - 48.0f;
    auto* d = static_cast<float*>(cuda->alloc(n * sizeof(float), "test"));
    auto* e = static_cast<float*>(cuda->alloc(n * sizeof(float), "test"));
    for (int graph = 0; graph < 2; ++graph) {
        cuda->copy_to_device(d, host.data(), n * sizeof(float));
        if (graph) cuda->begin_capture();
        nccl->all_reduce_sum_async(d, n / 2);           // the first half, on the side stream
        nccl->all_reduce_sum_async(d + n / 2, n - n / 2);
        nccl->wait();
        cuda->gelu_forward(e, d, n);  // an op after the join reads the sums
        if (graph) {
            cuda->end_capture(11);
            cuda->replay_graph(11);
        }
        cuda->copy_to_host(back.data(), d, n * sizeof(float));
        EXPECT_EQ(back, host) << (graph ? "graph" : "eager");
    }
    cuda->free(d);
    cuda->free(e);
}

TEST(CudaNccl, SummingBeforeJoiningIsAnError) {
    std::unique_ptr<trt::Backend> cuda;
    TRT_CUDA_BACKEND_OR_SKIP(cuda, Precision::Fp32);
    trt::DeviceCollectives* nccl = cuda->collectives(nullptr);
    if (!nccl) GTEST_SKIP() << "no NCCL";
    float* d = static_cast<float*>(cuda->alloc(16, "test"));
    EXPECT_THROW(nccl->all_reduce_sum(d, 4), trt::Error);
    cuda->free(d);
}

}  // namespace
