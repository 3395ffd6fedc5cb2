// The fused-attention operation graphs (src/backend/cuda/cudnn_sdpa_graph.h) checked by the
// installed cuDNN on the CPU, with no GPU (label cpu, registered in tests/gpu/CMakeLists.txt):
//   - every descriptor of the forward, backward and padded backward graphs finalizes and each
//     operation graph as a whole finalizes (shapes, broadcasts, data types agree), for the GPU
//     test's shapes and GPT-2's, bf16 and fp16;
//   - "deviceless" planning (cuDNN >= 9.8): for an H100 (sm_90) and an A100 (sm_80) described
//     by a device-property descriptor, cuDNN's heuristics offer at least one engine that has
//     passed its support checks and is not marked NONDETERMINISTIC, for every graph. That is the
//     fused-attention engines recognising the graphs. It needs a libcuda.so.1 to load (the
//     runtime-compiled engines check for it); the toolkit's stub, put on LD_LIBRARY_PATH by the
//     CTest registration, is enough. Skipped with the reason when either is missing.
// What only a GPU shows (kernels compiling for the device, numerical results, determinism in
// practice) is tests/gpu/cudnn_attention_test.cpp.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "backend/cuda/cudnn_graph.h"
#include "backend/cuda/cudnn_loader.h"
#include "backend/cuda/cudnn_sdpa_graph.h"

namespace {

namespace cudnn = trt::cuda::cudnn;
namespace sdpa = trt::cuda::sdpa;
using trt::cuda::CudnnApi;

struct Shape {
    int B, T, C, NH;
};
// tests/gpu/cudnn_attention_test.cpp's shapes, plus GPT-2 small at B=8, T=1024.
const Shape kShapes[] = {{2, 17, 64, 2},  {2, 256, 128, 2}, {1, 130, 96, 1}, {3, 40, 16, 2},
                         {4, 64, 768, 12}, {2, 17, 128, 2},  {4, 256, 768, 12},
                         {8, 1024, 768, 12}};

enum class Kind { Forward, Backward, BackwardPadded };
const Kind kKinds[] = {Kind::Forward, Kind::Backward, Kind::BackwardPadded};

std::string label(const Shape& s, cudnnDataType_t io, Kind k) {
    const char* kind = k == Kind::Forward    ? "forward"
                       : k == Kind::Backward ? "backward"
                                             : "backward (padded)";
    return std::string(kind) + (io == CUDNN_DATA_BFLOAT16 ? " bf16" : " fp16") + " B" +
           std::to_string(s.B) + " T" + std::to_string(s.T) + " C" + std::to_string(s.C) +
           " NH" + std::to_string(s.NH);
}

void build(cudnn::OpGraph& g, const Shape& s, cudnnDataType_t io, Kind k) {
    const sdpa::Geometry geo(s.B, s.T, s.C, s.NH);
    if (k == Kind::Forward)
        sdpa::build_forward(g, geo, io);
    else
        sdpa::build_backward(g, geo, io, k == Kind::BackwardPadded);
}

class CudnnSdpaGraph : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        api_ = trt::cuda::cudnn_api(&why);
        if (!api_) GTEST_SKIP() << "no usable cuDNN: " << why;
    }
    const CudnnApi* api_ = nullptr;
};

TEST_F(CudnnSdpaGraph, ShapesTheEnginesCannotTakeAreNamed) {
    EXPECT_EQ(sdpa::shape_problem(2, 17, 64, 2), "");
    EXPECT_EQ(sdpa::shape_problem(1, 1, 128, 1), "");  // head size 128: the largest
    EXPECT_EQ(sdpa::shape_problem(1, 8, 40, 5), "");   // head size 8: the smallest
    EXPECT_NE(sdpa::shape_problem(2, 17, 40, 5 * 2).find("head size 4"), std::string::npos);
    EXPECT_NE(sdpa::shape_problem(1, 8, 256, 1).find("head size 256"), std::string::npos);
    EXPECT_NE(sdpa::shape_problem(1, 8, 12, 3).find("head size 4"), std::string::npos);
    EXPECT_NE(sdpa::shape_problem(1, 8, 10, 3).find("not a multiple"), std::string::npos);
    EXPECT_NE(sdpa::shape_problem(0, 8, 64, 1), "");
    // The <= 9.15 padded-backward workaround applies exactly when T is not a multiple of 128.
    EXPECT_TRUE(sdpa::backward_needs_padding_mask(91400, 17));
    EXPECT_TRUE(sdpa::backward_needs_padding_mask(91500, 130));
    EXPECT_FALSE(sdpa::backward_needs_padding_mask(91400, 256));
    EXPECT_FALSE(sdpa::backward_needs_padding_mask(91600, 17));
    EXPECT_FALSE(sdpa::backward_needs_padding_mask(91900, 17));
}

TEST_F(CudnnSdpaGraph, EveryGraphFinalizesWithoutADevice) {
    for (const Shape& s : kShapes)
        for (cudnnDataType_t io : {CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF})
            for (Kind k : kKinds) {
                const std::string what = label(s, io, k);
                cudnn::OpGraph g(*api_, nullptr);
                try {
                    build(g, s, io, k);
                } catch (const std::exception& e) {
                    ADD_FAILURE() << what << ": " << e.what();
                    continue;
                }
                std::string why;
                EXPECT_TRUE(g.finalize(&why)) << what << ": " << why;
            }
}

// A cudaDeviceProp-like description of a GPU for deviceless planning (the JSON keys
// cuDNN 9.19's CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION reads).
std::string device_json(int sm, int sms, long smem_optin, long l2, const char* name) {
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "{\"deviceVer\":%d,\"driverVer\":13000,\"cudaDeviceId\":0,"
                  "\"totalGlobalMem\":42949672960,\"maxGridSize\":[2147483647,65535,65535],"
                  "\"maxBlockSize\":[1024,1024,64],\"regsPerBlock\":65536,"
                  "\"multiProcessorCount\":%d,\"warpSize\":32,\"maxSharedMemoryPerBlock\":49152,"
                  "\"maxSharedMemoryPerBlockOptin\":%ld,\"reservedSharedMemoryPerBlock\":1024,"
                  "\"maxRegistersPerSM\":65536,\"maxCtasPerSM\":32,\"maxThreadsPerBlock\":1024,"
                  "\"maxThreadsPerSM\":2048,\"pciDeviceId\":0,\"isTccDriver\":0,"
                  "\"supportCoopLaunch\":1,\"smClockRateKHz\":1410000,"
                  "\"memClockRateKHz\":1215000,\"l2CacheSize\":%ld,\"deviceName\":\"%s\"}",
                  sm * 10, sms, smem_optin, l2, name);
    return buf;
}

TEST_F(CudnnSdpaGraph, FusedEnginesAcceptEveryGraphOnSm90AndSm80) {
    if (api_->version < 90800)
        GTEST_SKIP() << "deviceless planning needs cuDNN 9.8+, this is " << api_->describe();
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))
        GTEST_SKIP() << "no libcuda.so.1 (a driver, or the CUDA toolkit's stub on "
                        "LD_LIBRARY_PATH): cuDNN cannot judge its runtime-compiled engines";
    struct Device {
        const char* name;
        std::string json;
    };
    const Device devices[] = {
        {"sm_90", device_json(90, 132, 232448, 52428800, "NVIDIA H100 80GB HBM3")},
        {"sm_80", device_json(80, 108, 166912, 41943040, "NVIDIA A100-SXM4-40GB")},
    };
    for (const Device& d : devices) {
        cudnn::Descriptor props(*api_, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
        const cudnnStatus_t set = api_->BackendSetAttribute(
            props.get(), CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
            static_cast<int64_t>(d.json.size()), d.json.data());
        const cudnnStatus_t fin = set == CUDNN_STATUS_SUCCESS ? props.try_finalize() : set;
        if (fin != CUDNN_STATUS_SUCCESS)
            GTEST_SKIP() << "this cuDNN (" << api_->describe()
                         << ") reads another device-property schema: "
                         << cudnn::status_text(*api_, fin, "device properties");
        for (const Shape& s : kShapes)
            for (cudnnDataType_t io : {CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF})
                for (Kind k : kKinds) {
                    const std::string what = std::string(d.name) + " " + label(s, io, k);
                    cudnn::OpGraph g(*api_, nullptr);
                    build(g, s, io, k);
                    g.use_device_properties(props.get());
                    std::string why;
                    const auto& choices = g.engine_choices(&why);
                    std::string engines;
                    int deterministic = 0;
                    for (const auto& c : choices) {
                        engines += " " + std::to_string(c.engine);
                        if (c.nondeterministic) engines += "(nondeterministic)";
                        deterministic += !c.nondeterministic;
                    }
                    EXPECT_GT(deterministic, 0)
                        << what << ": engines [" << engines << " ] " << why;
                    if (s.B == 8)  // GPT-2's shape: show what cuDNN offers
                        std::printf("[ engines  ] %s:%s\n", what.c_str(), engines.c_str());
                }
    }
}

}  // namespace
