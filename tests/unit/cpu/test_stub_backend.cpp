// A backend that starts partial (docs/ARCHITECTURE.md, "Add a backend"): host memory and three
// ops written the plainest way, supports() naming them, no optimizer step. The op-case table runs
// on those three against the double reference, and every other op refuses with Unsupported — the
// checklist walked once, kept as a test so the interface stays open to a new backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "backend/backend.h"
#include "backend/op_dispatch.h"
#include "core/error.h"
#include "ops/op_cases.h"
#include "ops/op_runner.h"

namespace {

using trt::Act;
using trt::ConstAct;
using trt::OpKind;

class StubBackend final : public trt::Backend {
public:
    ~StubBackend() override {  // what an op that threw left behind
        for (auto& kv : sizes_) std::free(kv.first);
    }
    const char* name() const override { return "stub"; }
    int num_threads() const override { return 1; }

    // ---- memory: the host's
    void* alloc(size_t bytes, const char* /*what*/) override {
        void* p = std::calloc(bytes > 0 ? bytes : 1, 1);
        if (!p) trt::fail(trt::Status::OutOfMemory, "stub: calloc(", bytes, ") failed");
        in_use_ += bytes;
        sizes_[p] = bytes;
        return p;
    }
    void free(void* p) override {
        if (!p) return;
        in_use_ -= sizes_[p];
        sizes_.erase(p);
        std::free(p);
    }
    void copy_to_device(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
    void copy_to_host(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
    void synchronize() override {}
    size_t bytes_in_use() const override { return in_use_; }
    void zero(void* p, size_t n) override { std::memset(p, 0, n); }
    void upload_step_inputs(void* dst, const void* src, size_t n) override {
        std::memcpy(dst, src, n);
    }

    // ---- the three ops, fp32
    bool supports(OpKind op, const trt::ModelDims&, trt::Precision p) const override {
        return p == trt::Precision::Fp32 &&
               (op == OpKind::gelu_forward || op == OpKind::swiglu_forward ||
                op == OpKind::add_columns);
    }
    void gelu_forward(Act out, ConstAct inp, size_t n) override {
        const float* x = f32(inp);
        float* y = f32(out);
        const float k = std::sqrt(2.0f / 3.14159265358979f);
        for (size_t i = 0; i < n; ++i)
            y[i] = 0.5f * x[i] * (1.0f + std::tanh(k * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
    }
    void swiglu_forward(Act out, ConstAct inp, int N, int F) override {
        const float* x = f32(inp);  // [N, 2F]: gate | up
        float* y = f32(out);        // [N, F]
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < F; ++j) {
                const float g = x[n * 2 * F + j], u = x[n * 2 * F + F + j];
                y[n * F + j] = g / (1.0f + std::exp(-g)) * u;
            }
    }
    void add_columns(Act out, ConstAct in, float scale, int N, int W, int c0, int M) override {
        const float* x = f32(in);  // [N, M]
        float* y = f32(out);       // [N, W] +=
        for (int n = 0; n < N; ++n)
            for (int j = 0; j < M; ++j) y[n * W + c0 + j] += scale * x[n * M + j];
    }

private:
    static float* f32(Act a) { return static_cast<float*>(a.data); }
    static const float* f32(ConstAct a) { return static_cast<const float*>(a.data); }
    size_t in_use_ = 0;
    std::map<void*, size_t> sizes_;
};

TEST(StubBackend, PassesTheOpCasesOfTheOpsItSupports) {
    StubBackend be;
    std::set<std::string> ran;
    for (const opcase::OpCase& c : opcase::all_cases()) {
        OpKind kind;
        ASSERT_TRUE(opcase::op_kind(c.op, &kind)) << c.op << " is not an op of backend_ops.def";
        if (c.large || !be.supports(kind, c.dims, trt::Precision::Fp32)) continue;
        for (const opcase::Check& k : opcase::against_reference(c, be))
            EXPECT_TRUE(k.passed()) << c.op << " " << c.shape << " " << k.tensor << ": "
                                    << k.describe();
        ran.insert(c.op);
    }
    EXPECT_EQ(ran, (std::set<std::string>{"add_columns", "gelu_forward", "swiglu_forward"}));
    EXPECT_EQ(be.bytes_in_use(), 0u);  // the runner freed what it allocated
}

TEST(StubBackend, RefusesEveryOtherOpWithUnsupported) {
    StubBackend be;
    std::set<std::string> refused;
    for (const opcase::OpCase& c : opcase::all_cases()) {
        OpKind kind;
        ASSERT_TRUE(opcase::op_kind(c.op, &kind));
        if (c.large || be.supports(kind, c.dims, trt::Precision::Fp32) || refused.count(c.op))
            continue;
        try {
            opcase::against_reference(c, be);
            ADD_FAILURE() << c.op << " ran on a backend that does not have it";
        } catch (const trt::Error& e) {
            EXPECT_EQ(e.status(), trt::Status::Unsupported) << c.op << ": " << e.what();
            // (a backward case may stop at the forward it runs first: that op is named)
            EXPECT_NE(std::string(e.what()).find("the stub backend has no "), std::string::npos)
                << e.what();
        }
        refused.insert(c.op);
    }
    EXPECT_GT(refused.size(), 20u);
    EXPECT_EQ(be.optimizer_step(), nullptr);
    try {
        trt::optimizer_step_of(be);
        ADD_FAILURE() << "a backend without an optimizer step handed one out";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::Unsupported) << e.what();
    }
}

// Wrapped for a profiler or a recorder, it still has no optimizer step, and a step op called
// on the wrapper refuses by name rather than reaching a null one.
TEST(StubBackend, WrappedItStillHasNoOptimizerStep) {
    trt::OpDispatch wrapped(std::make_unique<StubBackend>());
    EXPECT_EQ(wrapped.optimizer_step(), nullptr);
    try {
        wrapped.begin_step(nullptr, 0.0f, 1);
        ADD_FAILURE() << "begin_step ran on a backend without an optimizer step";
    } catch (const trt::Error& e) {
        EXPECT_EQ(e.status(), trt::Status::Unsupported) << e.what();
        EXPECT_NE(std::string(e.what()).find("stub"), std::string::npos) << e.what();
    }
}

// Every op of the list has a name, and the names are what the op-case table calls them.
TEST(OpList, NamesEveryOpOnce) {
    std::set<std::string> names;
    for (int i = 0; i < trt::kOpKinds; ++i) names.insert(trt::op_name(static_cast<OpKind>(i)));
    EXPECT_EQ(static_cast<int>(names.size()), trt::kOpKinds);
    EXPECT_STREQ(trt::op_name(OpKind::matmul_forward), "matmul_forward");
    EXPECT_STREQ(trt::op_name(static_cast<OpKind>(trt::kOpKinds)), "(unknown op)");
}

}  // namespace
