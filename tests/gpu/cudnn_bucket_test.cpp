// cuDNN attention's length buckets and bounded plan cache (src/backend/cuda/cudnn_attention.h,
// attention_plan_cache.h), driven directly on CudnnAttention (linked into
// test_gpu_cudnn_buckets) so that short lengths the backend would hand to the matmul path are
// served by a bucket on purpose:
//   - forward and backward at T = 1, 17, 100, 129, 300 run on the plan of their bucket
//     (128, 128, 128, 256, 512: plan_shape says so) and match the CPU backend's attention on
//     the same bf16/fp16-rounded inputs within the matrix-product tolerances;
//   - sampling at B=1 for every T = 1..512 leaves exactly three on-demand plans (128, 256,
//     512), however many lengths were served;
//   - when the bucket's buffers do not fit the call budget the exact length serves instead,
//     and any device buffer a plan owns (cuDNN <= 9.15's sequence lengths) goes back when the
//     plan is evicted or the object ends;
//   - a plan used while a graph is being captured is never evicted;
//   - with bf16/fp16 activations (ctx.act, accel.lowp_activations) the same calls read qkv and
//     dout and write out and dqkv in that type: in place when the call's length is its plan's
//     and the buffers are 16-byte aligned, through padded copies otherwise (a bucket, or a
//     view 2 bytes off alignment) — each path against the CPU.
// Needs a CUDA device (sm_80+) and cuDNN; without a device the cases are skipped (failed under
// TRAINRT_REQUIRE_CUDA=1).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/attention_plan_cache.h"
#include "backend/cuda/cudnn_attention.h"
#include "core/bf16.h"
#include "core/fp16.h"
#include "gpu/gpu_test_util.h"

namespace {

using trt::Precision;
using trt::cuda::CudnnAttention;

#define CUDA_OK(call)                                                                   \
    do {                                                                                \
        const cudaError_t cuda_ok_e_ = (call);                                          \
        ASSERT_EQ(cuda_ok_e_, cudaSuccess) << #call << ": " << cudaGetErrorString(cuda_ok_e_); \
    } while (0)

constexpr size_t kScratchBytes = 256ull << 20;  // op scratch: more than any case needs

std::string shape(int B, int T, int C, int NH) {
    return " B" + std::to_string(B) + " T" + std::to_string(T) + " C" + std::to_string(C) +
           " NH" + std::to_string(NH);
}

class CudnnBuckets : public ::testing::TestWithParam<Precision> {
protected:
    void SetUp() override {
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n == 0) {
            cudaGetLastError();
            const std::string why = e != cudaSuccess ? cudaGetErrorString(e) : "no device";
            if (gpu::cuda_required()) FAIL() << "no CUDA device (" << why << ")";
            GTEST_SKIP() << "no CUDA device: " << why;
        }
        CUDA_OK(cudaSetDevice(0));
        CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        CUDA_OK(cudaMalloc(&scratch_, kScratchBytes));
        ctx_.stream = stream_;
        ctx_.precision = GetParam();
        ctx_.scratch = scratch_;
        ctx_.scratch_bytes = kScratchBytes;
        open(/*require_deterministic=*/true);
        cpu_ = trt::make_cpu_backend(4);
    }
    void TearDown() override {
        att_.reset();
        if (stream_) cudaStreamSynchronize(stream_);
        EXPECT_TRUE(live_.empty()) << live_.size() << " plan buffers outlived CudnnAttention";
        if (scratch_) cudaFree(scratch_);
        if (stream_) cudaStreamDestroy(stream_);
    }
    void open(bool require_deterministic) {
        std::string why;
        att_ = CudnnAttention::create(
            0, GetParam(), require_deterministic,
            [this](size_t bytes, const char* what) {
                void* p = nullptr;
                if (cudaMalloc(&p, bytes) != cudaSuccess)
                    trt::fail(trt::Status::OutOfMemory, "test alloc of ", what);
                cudaMemsetAsync(p, 0, bytes, stream_);
                live_.insert(p);
                return p;
            },
            [this](void* p) {
                EXPECT_EQ(live_.erase(p), 1u) << "freed twice or not ours";
                cudaFree(p);
            },
            &why);
        ASSERT_NE(att_, nullptr) << "cuDNN attention unavailable: " << why;
    }

    // The budget of a model that allocated for (B,T,C,NH).
    void budget_for(int B, int T, int C, int NH) {
        att_->set_call_budget(CudnnAttention::saved_floats(B, T, C, NH),
                              CudnnAttention::scratch_floats(B, T, C, NH));
    }

    // Device copy of a host vector (freed at the end of the test).
    struct Dev {
        float* p = nullptr;
        ~Dev() { cudaFree(p); }
    };
    void up(Dev& d, const std::vector<float>& v) {
        CUDA_OK(cudaMalloc(&d.p, std::max<size_t>(v.size(), 1) * sizeof(float)));
        CUDA_OK(cudaMemcpy(d.p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
    }
    std::vector<float> down(const Dev& d, size_t n) {
        std::vector<float> v(n);
        EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(v.data(), d.p, n * sizeof(float), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        return v;
    }

    // The CPU backend's attention forward (out) and backward (dqkv) of qkv and dout (host
    // memory is its backend memory).
    void cpu_attention(int B, int T, int C, int NH, const std::vector<float>& qkv,
                       const std::vector<float>& dout, std::vector<float>& out,
                       std::vector<float>& dqkv) {
        out.assign(static_cast<size_t>(B) * T * C, 0.0f);
        dqkv.assign(qkv.size(), 0.0f);
        std::vector<float> saved(
            cpu_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)) + 1);
        std::vector<float> scratch(
            cpu_->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)) + 1);
        cpu_->attention_forward(out.data(), saved.data(), qkv.data(),
                                trt::AttentionShape::from_width(B, T, C, NH, NH));
        cpu_->attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), saved.data(),
                                 trt::AttentionShape::from_width(B, T, C, NH, NH));
    }

    // Forward + backward through CudnnAttention (the call must be served: prepare_call) and
    // through the CPU backend; CUDA within the bf16/fp16 matrix-product tolerances.
    void compare_with_cpu(int B, int T, int C, int NH, uint32_t seed) {
        const Precision p = GetParam();
        const std::string sh = shape(B, T, C, NH) + " [" + gpu::pname(p) + "]";
        const size_t nq = static_cast<size_t>(B) * T * 3 * C, no = static_cast<size_t>(B) * T * C;
        const auto qkv = gpu::rounded(gpu::rnd(nq, seed, -2, 2), p);
        const auto dout = gpu::rounded(gpu::rnd(no, seed + 1), p);

        std::vector<float> c_out, c_dqkv;
        cpu_attention(B, T, C, NH, qkv, dout, c_out, c_dqkv);

        // CUDA
        std::string why;
        ASSERT_TRUE(att_->prepare_call(ctx_, B, T, C, NH, &why)) << sh << ": " << why;
        Dev d_qkv, d_dout, d_out, d_dqkv, d_saved, d_scratch;
        up(d_qkv, qkv);
        up(d_dout, dout);
        up(d_out, std::vector<float>(no, gpu::kNaN));
        up(d_dqkv, std::vector<float>(nq, gpu::kNaN));
        up(d_saved, std::vector<float>(att_->call_saved_floats(B, T, C, NH), gpu::kNaN));
        up(d_scratch, std::vector<float>(att_->call_scratch_floats(B, T, C, NH), gpu::kNaN));
        att_->forward(ctx_, d_out.p, d_saved.p, d_qkv.p, B, T, C, NH);
        att_->backward(ctx_, d_dqkv.p, d_scratch.p, d_dout.p, d_qkv.p, d_saved.p, B, T, C, NH);
        const double e_out = ref::rel_error(down(d_out, no), c_out);
        const double e_dqkv = ref::rel_error(down(d_dqkv, nq), c_dqkv);
        ref::report("cudnn bucket fwd" + sh, e_out);
        ref::report("cudnn bucket bwd dqkv" + sh, e_dqkv);
        EXPECT_LE(e_out, gpu::matmul_tol(p, false)) << sh;
        EXPECT_LE(e_dqkv, gpu::matmul_tol(p, true)) << sh;
    }

    // The same with activations stored in the precision's 16-bit type (ctx.act), each device
    // buffer starting `offset` elements into its allocation (1: 2 bytes off 16-byte alignment,
    // so nothing can be used in place).
    void compare_lowp_acts_with_cpu(int B, int T, int C, int NH, uint32_t seed, size_t offset) {
        const Precision p = GetParam();
        const bool bf16 = p == Precision::Bf16;
        const trt::DType dt = bf16 ? trt::DType::BF16 : trt::DType::F16;
        const std::string sh = shape(B, T, C, NH) + " [" + gpu::pname(p) + " acts, offset " +
                               std::to_string(offset) + "]";
        const size_t nq = static_cast<size_t>(B) * T * 3 * C, no = static_cast<size_t>(B) * T * C;
        const auto qkv = gpu::rounded(gpu::rnd(nq, seed, -2, 2), p);
        const auto dout = gpu::rounded(gpu::rnd(no, seed + 1), p);
        std::vector<float> c_out, c_dqkv;
        cpu_attention(B, T, C, NH, qkv, dout, c_out, c_dqkv);

        auto to16 = [&](const std::vector<float>& v) {
            std::vector<uint16_t> h(v.size());
            for (size_t i = 0; i < v.size(); i++)
                h[i] = bf16 ? trt::float_to_bf16(v[i]) : trt::float_to_fp16(v[i]);
            return h;
        };
        struct Dev16 {
            uint16_t* base = nullptr;
            ~Dev16() { cudaFree(base); }
        };
        auto up16 = [&](Dev16& d, const std::vector<uint16_t>& h) {
            ASSERT_EQ(cudaMalloc(&d.base, (h.size() + offset + 8) * 2), cudaSuccess);
            ASSERT_EQ(cudaMemcpy(d.base + offset, h.data(), h.size() * 2, cudaMemcpyHostToDevice),
                      cudaSuccess);
        };
        auto down16 = [&](const Dev16& d, size_t n) {
            std::vector<uint16_t> h(n);
            EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
            EXPECT_EQ(cudaMemcpy(h.data(), d.base + offset, n * 2, cudaMemcpyDeviceToHost),
                      cudaSuccess);
            std::vector<float> v(n);
            for (size_t i = 0; i < n; i++)
                v[i] = bf16 ? trt::bf16_to_float(h[i]) : trt::fp16_to_float(h[i]);
            return v;
        };
        std::string why;
        ASSERT_TRUE(att_->prepare_call(ctx_, B, T, C, NH, &why)) << sh << ": " << why;
        trt::cuda::CudaCtx ctx = ctx_;
        ctx.act = dt;
        Dev16 d_qkv, d_dout, d_out, d_dqkv;
        up16(d_qkv, to16(qkv));
        up16(d_dout, to16(dout));
        up16(d_out, std::vector<uint16_t>(no, 0x7FC0));  // NaN in both types' high bits
        up16(d_dqkv, std::vector<uint16_t>(nq, 0x7FC0));
        if (HasFatalFailure()) return;
        Dev d_saved, d_scratch;
        up(d_saved, std::vector<float>(att_->call_saved_floats(B, T, C, NH), gpu::kNaN));
        up(d_scratch, std::vector<float>(att_->call_scratch_floats(B, T, C, NH), gpu::kNaN));
        const trt::Act out(d_out.base + offset, dt), dqkv(d_dqkv.base + offset, dt);
        const trt::ConstAct in(d_qkv.base + offset, dt), dy(d_dout.base + offset, dt);
        att_->forward(ctx, out, d_saved.p, in, B, T, C, NH);
        att_->backward(ctx, dqkv, d_scratch.p, dy, in, d_saved.p, B, T, C, NH);
        const double e_out = ref::rel_error(down16(d_out, no), c_out);
        const double e_dqkv = ref::rel_error(down16(d_dqkv, nq), c_dqkv);
        ref::report("cudnn acts fwd" + sh, e_out);
        ref::report("cudnn acts bwd dqkv" + sh, e_dqkv);
        EXPECT_LE(e_out, gpu::matmul_tol(p, false)) << sh;
        EXPECT_LE(e_dqkv, gpu::matmul_tol(p, true)) << sh;
    }

    cudaStream_t stream_ = nullptr;
    void* scratch_ = nullptr;
    trt::cuda::CudaCtx ctx_;
    std::unique_ptr<CudnnAttention> att_;
    std::unique_ptr<trt::Backend> cpu_;
    std::set<void*> live_;  // plan buffers alloc'ed and not yet freed
};

TEST_P(CudnnBuckets, BucketedForwardBackwardMatchTheCpu) {
    const int B = 2, C = 128, NH = 2;  // head size 64
    budget_for(B, 512, C, NH);         // a model trained at T=512
    uint32_t seed = 9300;
    for (int T : {1, 17, 100, 129, 300}) {
        SCOPED_TRACE(shape(B, T, C, NH));
        const std::array<int, 4> want{B, trt::cuda::bucket_length(T), C, NH};
        EXPECT_EQ(att_->plan_shape(ctx_, B, T, C, NH), want) << "not served by its bucket";
        compare_with_cpu(B, T, C, NH, seed);
        seed += 10;
    }
    EXPECT_EQ(att_->on_demand_plans(), 3u);  // 128, 256, 512
}

// Low-precision activations through each buffer path: in place (T = 128, its own bucket,
// aligned), padded copies (T = 17 and 129 on buckets 128 and 256), staged copies of an
// unaligned view (offset 1) at a bucket's own length.
TEST_P(CudnnBuckets, LowPrecisionActivationsInPlaceAndPaddedMatchTheCpu) {
    const int B = 2, C = 128, NH = 2;  // head size 64
    budget_for(B, 512, C, NH);
    uint32_t seed = 9500;
    for (int T : {128, 17, 129}) {
        SCOPED_TRACE(shape(B, T, C, NH));
        compare_lowp_acts_with_cpu(B, T, C, NH, seed, /*offset=*/0);
        seed += 10;
    }
    compare_lowp_acts_with_cpu(B, 128, C, NH, seed, /*offset=*/1);
}

TEST_P(CudnnBuckets, GptWidthBucketsMatchTheCpu) {
    const int C = 768, NH = 12;  // GPT-2 small's width, head size 64
    budget_for(4, 256, C, NH);
    compare_with_cpu(1, 1, C, NH, 9400);
    compare_with_cpu(3, 130, C, NH, 9410);
    compare_with_cpu(4, 200, C, NH, 9420);
}

TEST_P(CudnnBuckets, SamplingEveryLengthKeepsOnePlanPerBucket) {
    const int C = 64, NH = 1;
    ASSERT_TRUE(att_->prepare(ctx_, 2, 512, C, NH, nullptr));  // the reserved training shape
    budget_for(2, 512, C, NH);
    Dev d_qkv, d_out, d_saved;
    up(d_qkv, gpu::rounded(gpu::rnd(512 * 3 * C, 9500), GetParam()));
    up(d_out, std::vector<float>(512 * C));
    up(d_saved, std::vector<float>(CudnnAttention::saved_floats(2, 512, C, NH)));
    for (int T = 1; T <= 512; ++T) {
        std::string why;
        ASSERT_TRUE(att_->prepare_call(ctx_, 1, T, C, NH, &why)) << "T=" << T << ": " << why;
        att_->forward(ctx_, d_out.p, d_saved.p, d_qkv.p, 1, T, C, NH);
        ASSERT_LE(att_->on_demand_plans(), CudnnAttention::kOnDemandPlans);
    }
    CUDA_OK(cudaStreamSynchronize(stream_));
    EXPECT_EQ(att_->on_demand_plans(), 3u) << "one plan per bucket (128, 256, 512)";
    EXPECT_EQ(att_->plans_alive(), 4u);
    EXPECT_TRUE(att_->prepared(2, 512, C, NH));
}

TEST_P(CudnnBuckets, ExactFallbackWhenTheBucketDoesNotFitAndBuffersGoBack) {
    const int C = 64, NH = 1;
    budget_for(1, 200, C, NH);  // the 256 bucket does not fit: exact lengths serve
    for (int T : {130, 150, 170, 190, 199, 131, 140}) {
        const std::array<int, 4> want{1, T, C, NH};
        EXPECT_EQ(att_->plan_shape(ctx_, 1, T, C, NH), want);
        std::string why;
        ASSERT_TRUE(att_->prepare_call(ctx_, 1, T, C, NH, &why)) << why;
        EXPECT_LE(att_->on_demand_plans(), CudnnAttention::kOnDemandPlans);
        // cuDNN <= 9.15 gives these plans a [B] sequence-length buffer; evicted plans free it.
        EXPECT_LE(live_.size(), att_->plans_alive());
    }
    compare_with_cpu(1, 177, C, NH, 9600);
    EXPECT_EQ(att_->on_demand_plans(), CudnnAttention::kOnDemandPlans);
    // TearDown checks that destroying the object freed every buffer still held.
}

TEST_P(CudnnBuckets, APlanUsedUnderCaptureIsNeverEvicted) {
    const int C = 64, NH = 1;
    budget_for(8, 1024, C, NH);
    ASSERT_TRUE(att_->prepare_call(ctx_, 1, 100, C, NH, nullptr));
    Dev d_qkv, d_out, d_saved;
    up(d_qkv, std::vector<float>(100 * 3 * C, 0.5f));
    up(d_out, std::vector<float>(100 * C));
    up(d_saved, std::vector<float>(att_->call_saved_floats(1, 100, C, NH)));
    CUDA_OK(cudaStreamSynchronize(stream_));
    CUDA_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    att_->forward(ctx_, d_out.p, d_saved.p, d_qkv.p, 1, 100, C, NH);
    cudaGraph_t graph = nullptr;
    CUDA_OK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphDestroy(graph);
    // Five other buckets (B = 2..6 at T=100): more than the capacity.
    for (int B = 2; B <= 6; ++B) ASSERT_TRUE(att_->prepare_call(ctx_, B, 100, C, NH, nullptr));
    EXPECT_TRUE(att_->serves(ctx_, 1, 100, C, NH)) << "the captured plan was evicted";
    EXPECT_EQ(att_->on_demand_plans(), CudnnAttention::kOnDemandPlans);
}

TEST_P(CudnnBuckets, NondeterministicEnginesOnlyWhenAllowed) {
    // Either setting serves the shape here; with the default only deterministic engines run.
    budget_for(2, 256, 128, 2);
    compare_with_cpu(2, 100, 128, 2, 9700);
    EXPECT_FALSE(att_->nondeterministic_in_use());
    att_.reset();
    open(/*require_deterministic=*/false);
    budget_for(2, 256, 128, 2);
    compare_with_cpu(2, 100, 128, 2, 9710);
    std::printf("[ engines  ] require_deterministic=false: nondeterministic engine in use: %s\n",
                att_->nondeterministic_in_use() ? "yes" : "no");
}

INSTANTIATE_TEST_SUITE_P(LowPrecision, CudnnBuckets,
                         ::testing::Values(Precision::Bf16, Precision::Fp16),
                         gpu::precision_param_name);

}  // namespace
