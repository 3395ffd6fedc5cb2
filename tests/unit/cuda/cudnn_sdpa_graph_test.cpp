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

#include <algorithm>
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
    int B, T, C, NH, NKV = 0;  // NKV 0: NH (multi-head)
    int window = 0;            // a sliding window (Mistral's), 0: none
};
// tests/gpu/cudnn_attention_test.cpp's shapes, plus GPT-2 small at B=8, T=1024.
const Shape kShapes[] = {{2, 17, 64, 2},  {2, 256, 128, 2}, {1, 130, 96, 1}, {3, 40, 16, 2},
                         {4, 64, 768, 12}, {2, 17, 128, 2},  {4, 256, 768, 12},
                         {8, 1024, 768, 12},
                         // grouped-query and multi-query attention (issue 39): Llama 3.2 1B's
                         // heads (32 over 8, hs 64), a small GQA, MQA
                         {1, 2048, 2048, 32, 8}, {2, 17, 64, 4, 2}, {3, 40, 64, 4, 1},
                         // sliding windows (Mistral 7B's heads, 32 over 8 at hs 128, with a
                         // window of half the sequence; a small GQA band; MHA)
                         {1, 2048, 4096, 32, 8, 1024}, {2, 17, 64, 4, 2, 5},
                         {2, 256, 128, 2, 0, 64}};

enum class Kind { Forward, Backward, BackwardPadded };
const Kind kKinds[] = {Kind::Forward, Kind::Backward, Kind::BackwardPadded};

std::string label(const Shape& s, cudnnDataType_t io, Kind k) {
    const char* kind = k == Kind::Forward    ? "forward"
                       : k == Kind::Backward ? "backward"
                                             : "backward (padded)";
    return std::string(kind) + (io == CUDNN_DATA_BFLOAT16 ? " bf16" : " fp16") + " B" +
           std::to_string(s.B) + " T" + std::to_string(s.T) + " C" + std::to_string(s.C) +
           " NH" + std::to_string(s.NH) + (s.NKV ? " NKV" + std::to_string(s.NKV) : "") +
           (s.window ? " window" + std::to_string(s.window) : "");
}

void build(cudnn::OpGraph& g, const Shape& s, cudnnDataType_t io, Kind k) {
    const sdpa::Geometry geo(s.B, s.T, s.C, s.NH, s.NKV, s.window);
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

struct Device {
    const char* name;
    std::string json;
};
const Device kDevices[] = {
    {"sm_90", device_json(90, 132, 232448, 52428800, "NVIDIA H100 80GB HBM3")},
    {"sm_80", device_json(80, 108, 166912, 41943040, "NVIDIA A100-SXM4-40GB")},
};

// Deviceless planning needs cuDNN 9.8+ and a libcuda.so.1; "" when both are there.
std::string deviceless_problem(const CudnnApi& api) {
    if (api.version < 90800)
        return "deviceless planning needs cuDNN 9.8+, this is " + api.describe();
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))
        return "no libcuda.so.1 (a driver, or the CUDA toolkit's stub on LD_LIBRARY_PATH): "
               "cuDNN cannot judge its runtime-compiled engines";
    return "";
}

// d's device-property descriptor finalized into props; false + *why when this cuDNN reads
// another schema.
bool device_props(const CudnnApi& api, const Device& d, cudnn::Descriptor& props,
                  std::string* why) {
    const cudnnStatus_t set = api.BackendSetAttribute(
        props.get(), CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR,
        static_cast<int64_t>(d.json.size()), d.json.data());
    const cudnnStatus_t fin = set == CUDNN_STATUS_SUCCESS ? props.try_finalize() : set;
    if (fin == CUDNN_STATUS_SUCCESS) return true;
    *why = "this cuDNN (" + api.describe() + ") reads another device-property schema: " +
           cudnn::status_text(api, fin, "device properties");
    return false;
}

std::string ids(const std::vector<int64_t>& v) {
    std::string out;
    for (int64_t e : v) out += (out.empty() ? "" : ",") + std::to_string(e);
    return "[" + out + "]";
}

bool subset(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    for (int64_t e : a)
        if (std::find(b.begin(), b.end(), e) == b.end()) return false;
    return true;
}

TEST_F(CudnnSdpaGraph, FusedEnginesAcceptEveryGraphOnSm90AndSm80) {
    if (const std::string p = deviceless_problem(*api_); !p.empty()) GTEST_SKIP() << p;
    for (const Device& d : kDevices) {
        cudnn::Descriptor props(*api_, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
        std::string props_why;
        if (!device_props(*api_, d, props, &props_why)) GTEST_SKIP() << props_why;
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
                    if (s.B == 8 || s.window > 0)  // GPT-2's and the bands: what cuDNN offers
                        std::printf("[ engines  ] %s:%s\n", what.c_str(), engines.c_str());
                }
    }
}

// accel.deterministic: the backward planned with the NONDETERMINISTIC filter (the default)
// and without it (accel.deterministic = false). Both plannings see the same engines and mark
// the same ones nondeterministic; the filter only takes engines away (what is accepted without
// it includes what is accepted with it); the report names the engines the filter skipped, and
// a refusal caused by the filter says so and names the setting; without a plan every offered
// engine was either skipped or failed. Prints which engines cuDNN marks nondeterministic
// (informative). Without a driver (the stub libcuda) plan finalization cannot load the
// compiled kernels, so here every engine "fails" and only the bookkeeping is checked; on a GPU
// machine the plans finalize too. Each planning compiles kernels: two graphs per device.
TEST_F(CudnnSdpaGraph, DeterminismFilterReportsTheEnginesItSkips) {
    if (const std::string p = deviceless_problem(*api_); !p.empty()) GTEST_SKIP() << p;
    const struct {
        Shape shape;
        Kind kind;
    } graphs[] = {{{8, 1024, 768, 12}, Kind::Backward}, {{2, 17, 64, 2}, Kind::BackwardPadded}};
    for (const Device& d : kDevices) {
        cudnn::Descriptor props(*api_, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
        std::string props_why;
        if (!device_props(*api_, d, props, &props_why)) GTEST_SKIP() << props_why;
        for (const auto& gr : graphs) {
            const Shape& s = gr.shape;
            const Kind k = gr.kind;
            const std::string what =
                std::string(d.name) + " " + label(s, CUDNN_DATA_BFLOAT16, k);
            cudnn::OpGraph det(*api_, nullptr), any(*api_, nullptr);
            build(det, s, CUDNN_DATA_BFLOAT16, k);
            build(any, s, CUDNN_DATA_BFLOAT16, k);
            det.use_device_properties(props.get());
            any.use_device_properties(props.get());
            cudnn::OpGraph::PlanReport rd, ra;
            std::string why_d, why_a;
            const bool ok_d = det.plan(/*require_deterministic=*/true, &why_d, &rd);
            const bool ok_a = any.plan(/*require_deterministic=*/false, &why_a, &ra);

            EXPECT_FALSE(rd.offered.empty()) << what << ": " << why_d;
            EXPECT_EQ(rd.offered, ra.offered) << what;
            EXPECT_EQ(rd.nondeterministic, ra.nondeterministic) << what;
            EXPECT_TRUE(subset(rd.nondeterministic, rd.offered)) << what;
            // Only the filter skips, and only nondeterministic engines.
            EXPECT_TRUE(ra.skipped.empty()) << what;
            EXPECT_TRUE(subset(rd.skipped, rd.nondeterministic)) << what;
            // Accepted without the filter includes accepted with it: a deterministic plan
            // implies a plan without the filter, and the filtered one never runs a
            // nondeterministic engine.
            if (ok_d) {
                EXPECT_TRUE(ok_a) << what << ": " << why_a;
                EXPECT_FALSE(rd.engine_nondeterministic) << what;
                EXPECT_FALSE(det.plan_nondeterministic()) << what;
                EXPECT_EQ(det.engine_index(), rd.engine) << what;
            } else {
                EXPECT_EQ(rd.engine, -1) << what;
                if (rd.blocked_by_determinism()) {
                    EXPECT_NE(why_d.find("accel.deterministic = false"), std::string::npos)
                        << what << ": " << why_d;
                } else {
                    EXPECT_EQ(why_d.find("accel.deterministic"), std::string::npos)
                        << what << ": the setting would not help: " << why_d;
                }
                std::vector<int64_t> tried = rd.skipped;
                tried.insert(tried.end(), rd.failed.begin(), rd.failed.end());
                EXPECT_TRUE(subset(rd.offered, tried)) << what;
            }
            if (!ok_a) {
                EXPECT_EQ(ra.failed, ra.offered) << what;
            } else {
                EXPECT_NE(std::find(ra.offered.begin(), ra.offered.end(), ra.engine),
                          ra.offered.end())
                    << what;
                EXPECT_EQ(ra.engine_nondeterministic,
                          std::find(ra.nondeterministic.begin(), ra.nondeterministic.end(),
                                    ra.engine) != ra.nondeterministic.end())
                    << what;
            }
            std::printf("[ engines  ] %s: offered %s, nondeterministic %s; planned with the "
                        "filter %lld (skipped %s, failed %s), without %lld (failed %s)\n",
                        what.c_str(), ids(rd.offered).c_str(),
                        ids(rd.nondeterministic).c_str(), static_cast<long long>(rd.engine),
                        ids(rd.skipped).c_str(), ids(rd.failed).c_str(),
                        static_cast<long long>(ra.engine), ids(ra.failed).c_str());
        }
    }
}

}  // namespace
