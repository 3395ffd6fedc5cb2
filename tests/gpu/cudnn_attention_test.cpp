// accel.attention = "cudnn" (src/backend/cuda/cudnn_attention.h, docs/CUDNN_ATTENTION.md),
// through the Backend interface, against the CPU backend's attention on the same
// bf16/fp16-rounded inputs:
//   - forward output and backward dqkv within the bf16/fp16 matrix-product tolerances, for
//     head sizes 8..96 and lengths that are and are not multiples of 128 (T % 128 != 0 takes
//     the padded-backward workaround on cuDNN <= 9.15). Each case gets a fresh backend whose
//     first reserve is that shape, so cuDNN prepares and serves exactly it (accel_status
//     "cudnn" is checked, so a silent fallback to the matmul path cannot pass);
//   - shorter sequences than the reserved one (inference) still match the CPU, whichever path
//     the backend picks for them (matmul when its buffers fit in what was reserved, else the
//     cuDNN plan of their length bucket, built on demand); more inference shapes than the plan
//     cache keeps (evictions, rebuilds) stay correct;
//   - accel.deterministic = false still serves and matches; accel_status reports it;
//   - accel_status: "cudnn" after reserve in bf16/fp16; "matmul" plus a reason in fp32;
//   - grouped-query attention (NKV < NH): without AccelOptions::cudnn_grouped_query (what
//     accel.attention = "auto" gives) a grouped-query model runs the matmul path and says why;
//     with it (accel.attention = "cudnn") cuDNN serves it — K/V with NKV heads read in place,
//     dK/dV summed over each group in the graph — and matches the CPU (GQA, MQA, padded and
//     bucketed lengths); a grouped-query call on a multi-head cuDNN reservation runs the
//     matmul path when it fits, else is refused (Unsupported);
//   - TRAINRT_CUDNN_LIBRARY=/nonexistent: matmul, the reason names the path, results still
//     match the CPU (the loader caches per process: ctest runs each case in its own process);
//   - two identical forward+backward runs are bitwise equal (cuDNN's backward is made
//     deterministic: dQ without an atomic fp32 accumulator, NONDETERMINISTIC engines refused).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace {

using gpu::kCpu;
using gpu::kCuda;
using gpu::Twin;
using trt::Backend;
using trt::Precision;

// Set once a bf16/fp16 backend with cuDNN attention was created in this process: from then on
// the process-wide loader has answered, and TRAINRT_CUDNN_LIBRARY set later is not read.
bool g_cudnn_loader_used = false;

std::string shape(int B, int T, int C, int NH) {
    return " B" + std::to_string(B) + " T" + std::to_string(T) + " C" + std::to_string(C) +
           " NH" + std::to_string(NH) + " (hs " + std::to_string(C / NH) + ")";
}

// CudnnAttention::saved_floats (cudnn_attention.h): O in bf16/fp16 plus fp32 statistics, each
// padded to 256 bytes. The matmul attention saves [B,NH,T,T] probabilities instead, so this
// size tells which path serves a shape.
size_t cudnn_saved_floats(int B, int T, int C, int NH) {
    auto align = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
    const size_t bt = static_cast<size_t>(B) * T;
    return (align(bt * C * 2) + align(bt * NH * 4)) / 4;
}

// grouped_query: accel.attention = "cudnn" written (grouped-query attention and sliding
// windows on cuDNN too, not yet verified on a GPU).
trt::AccelOptions with_cudnn(bool deterministic = true, bool grouped_query = false) {
    trt::AccelOptions a;
    a.cudnn_attention = true;
    a.cudnn_grouped_query = grouped_query;
    a.cudnn_sliding_window = grouped_query;
    a.deterministic = deterministic;
    return a;
}

class CudnnAttention : public gpu::CudaVsCpu, public ::testing::WithParamInterface<Precision> {
protected:
    void SetUp() override { open_with_cudnn(GetParam()); }

    void open_with_cudnn(Precision p) {
        precision_ = p;
        std::string why;
        bool skip = false;
        cuda_ = gpu::try_cuda(p, why, skip, with_cudnn());
        if (!cuda_) {
            if (skip) GTEST_SKIP() << "no CUDA backend: " << why;
            FAIL() << "the CUDA backend could not be created: " << why;
        }
        g_cudnn_loader_used = true;
        cpu_ = trt::make_cpu_backend(4);
    }

    // A new CUDA backend (the first reserve decides which shape cuDNN is prepared for).
    void reopen(bool grouped_query = false) {
        cuda_.reset();
        std::string why;
        bool skip = false;
        cuda_ = gpu::try_cuda(precision_, why, skip, with_cudnn(true, grouped_query));
        ASSERT_NE(cuda_, nullptr) << why;
    }

    // Forward and backward on both backends (qkv [B,T,(NH+2NKV)hs]; NKV = NH: multi-head,
    // NKV < NH: grouped-query), with a sliding window when given; CUDA within
    // the matrix-product tolerances. saved/scratch: the larger of both backends' sizes for
    // (B, T), and for reserved_T when the backend was reserved longer.
    void compare_gqa_with_cpu(int B, int T, int C, int NH, int NKV, uint32_t seed,
                              int reserved_T = 0, int window = 0) {
        const std::string sh = shape(B, T, C, NH) +
                               (NKV != NH ? " NKV=" + std::to_string(NKV) : "") +
                               (window > 0 ? " window=" + std::to_string(window) : "");
        const int hs = C / NH;
        const size_t nq = static_cast<size_t>(B) * T * (NH + 2 * NKV) * hs;
        const size_t no = static_cast<size_t>(B) * T * C;
        size_t n_saved = std::max(
            cpu_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)),
            cuda_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)));
        size_t n_scratch = std::max(
            cpu_->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)),
            cuda_->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)));
        if (reserved_T > T) {
            n_saved =
                std::max(n_saved, cuda_->attention_saved_floats(
                                      trt::AttentionShape::from_width(B, reserved_T, C, NH, NKV)));
            n_scratch =
                std::max(n_scratch, cuda_->attention_scratch_floats(trt::AttentionShape::from_width(
                                        B, reserved_T, C, NH, NKV)));
        }
        Twin qkv = up(in(nq, seed, -2, 2)), dout = up(in(no, seed + 1));
        Twin out = nan_floats(no), dqkv = nan_floats(nq);
        Twin saved = nan_floats(n_saved), scratch = nan_floats(n_scratch);
        both([&](Backend& be, int s) {
            be.attention_forward(
                out.f(s), saved.f(s), qkv.f(s),
                trt::AttentionShape::from_width(B, T, C, NH, NKV).with_window(window));
        });
        expect_close("cudnn attention fwd" + sh, out, no, gpu::matmul_tol(precision_, false));
        both([&](Backend& be, int s) {
            be.attention_backward(
                dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s),
                trt::AttentionShape::from_width(B, T, C, NH, NKV).with_window(window));
        });
        expect_close("cudnn attention bwd dqkv" + sh, dqkv, nq, gpu::matmul_tol(precision_, true));
    }

    void reserve_for(int B, int T, int C, int NH) {
        const trt::ModelDims d{B, T, C, NH, 1, 1};
        cpu_->reserve(d);
        cuda_->reserve(d);
    }


    // After the first reserve with this shape: cuDNN serves it (not the matmul fallback),
    // and the model is told cuDNN's buffer sizes.
    void expect_served_by_cudnn(int B, int T, int C, int NH) {
        const trt::AccelStatus st = cuda_->accel_status();
        ASSERT_EQ(st.attention, "cudnn") << tag(shape(B, T, C, NH)) << ": " << st.attention_note;
        EXPECT_EQ(cuda_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)),
                  cudnn_saved_floats(B, T, C, NH))
            << tag(shape(B, T, C, NH)) << ": saved is not cuDNN-sized";
    }

    // Multi-head attention (qkv [B,T,3C]) the same way; reserved_T: the T the backend was
    // reserved for, when larger (the model sizes its saved/scratch buffers for that one and
    // reuses them for shorter calls).
    void compare_with_cpu(int B, int T, int C, int NH, uint32_t seed, int reserved_T = 0) {
        compare_gqa_with_cpu(B, T, C, NH, NH, seed, reserved_T);
    }
};

TEST_P(CudnnAttention, StatusIsCudnnAfterReserve) {
    reserve_for(2, 64, 128, 2);
    const trt::AccelStatus st = cuda_->accel_status();
    EXPECT_EQ(st.attention, "cudnn") << st.attention_note;
    expect_served_by_cudnn(2, 64, 128, 2);
}

TEST_P(CudnnAttention, ForwardBackwardMatchTheCpu) {
    struct Case { int B, T, C, NH; };
    const Case cases[] = {
        {2, 17, 64, 2},    // hs 32, T not a multiple of 128 (padded backward on <= 9.15)
        {2, 256, 128, 2},  // hs 64, T a multiple of 128
        {1, 130, 96, 1},   // hs 96, one past a 128 tile
        {3, 40, 16, 2},    // hs 8, the smallest head size
        {4, 64, 768, 12},  // GPT-2 small's width
    };
    uint32_t seed = 8100;
    for (const Case& c : cases) {
        SCOPED_TRACE(shape(c.B, c.T, c.C, c.NH));
        reopen();
        if (HasFatalFailure()) return;
        reserve_for(c.B, c.T, c.C, c.NH);
        expect_served_by_cudnn(c.B, c.T, c.C, c.NH);
        compare_with_cpu(c.B, c.T, c.C, c.NH, seed);
        seed += 10;
    }
}

TEST_P(CudnnAttention, ShorterSequencesThanReservedStillMatchTheCpu) {
    reserve_for(2, 64, 128, 2);
    expect_served_by_cudnn(2, 64, 128, 2);
    // Inference-style calls: the backend picks the path (see the file comment).
    compare_with_cpu(2, 17, 128, 2, 8300, /*reserved_T=*/64);
    compare_with_cpu(2, 63, 128, 2, 8305, /*reserved_T=*/64);
    compare_with_cpu(2, 64, 128, 2, 8310);  // and the reserved shape still works after them
}

// Lengths whose matmul buffers do not fit in the cuDNN-sized ones the model allocated run on the
// cuDNN plan of their length bucket (the saved size says so: the bucket's) and match the CPU.
TEST_P(CudnnAttention, InferenceLengthsRunOnTheirBucketAndMatchTheCpu) {
    const int B = 4, T = 256, C = 768, NH = 12;
    reserve_for(B, T, C, NH);
    expect_served_by_cudnn(B, T, C, NH);
    EXPECT_TRUE(cuda_->accel_status().deterministic);
    struct Case { int B, T; };
    const Case cases[] = {{4, 129}, {4, 200}, {1, 1}, {1, 255}, {2, 130}, {3, 100}, {3, 256}};
    uint32_t seed = 8600;
    for (const Case& c : cases) {
        SCOPED_TRACE(shape(c.B, c.T, C, NH));
        const int Tb = c.T <= 128 ? 128 : 256;
        if (c.T > 1) {  // T=1's matmul buffers fit: the matmul path serves it
            EXPECT_EQ(
                cuda_->attention_saved_floats(trt::AttentionShape::from_width(c.B, c.T, C, NH, NH)),
                cudnn_saved_floats(c.B, Tb, C, NH))
                << "not served by the length bucket " << Tb;
        }
        compare_with_cpu(c.B, c.T, C, NH, seed, /*reserved_T=*/T);
        seed += 10;
    }
    compare_with_cpu(B, T, C, NH, seed);  // the reserved shape still works after them
}

// More inference shapes than the plan cache keeps: evicted plans are rebuilt when needed and
// every result still matches the CPU.
TEST_P(CudnnAttention, InferenceShapesBeyondTheCacheStayCorrect) {
    const int B = 4, T = 256, C = 128, NH = 2;
    reserve_for(B, T, C, NH);
    expect_served_by_cudnn(B, T, C, NH);
    uint32_t seed = 8700;
    for (int round = 0; round < 2; ++round)
        for (int b = 1; b <= 3; ++b)
            for (int t : {100, 200}) {  // six plan shapes: (b, 128), (b, 256)
                SCOPED_TRACE(shape(b, t, C, NH));
                compare_with_cpu(b, t, C, NH, seed, /*reserved_T=*/T);
                seed += 10;
            }
}

TEST_P(CudnnAttention, NondeterministicEnginesAllowedStillMatchTheCpu) {
    cuda_.reset();
    std::string why;
    bool skip = false;
    cuda_ = gpu::try_cuda(precision_, why, skip, with_cudnn(/*deterministic=*/false));
    ASSERT_NE(cuda_, nullptr) << why;
    reserve_for(2, 256, 128, 2);
    expect_served_by_cudnn(2, 256, 128, 2);
    const trt::AccelStatus st = cuda_->accel_status();
    EXPECT_FALSE(st.deterministic);
    EXPECT_FALSE(st.deterministic_note.empty());
    std::printf("[ engines  ] accel.deterministic = false [%s]: %s\n", gpu::pname(precision_),
                st.deterministic_note.c_str());
    compare_with_cpu(2, 256, 128, 2, 8800);
    compare_with_cpu(2, 200, 128, 2, 8810, /*reserved_T=*/256);
}

TEST_P(CudnnAttention, TwoIdenticalRunsAreBitwiseEqual) {
    const int B = 4, T = 256, C = 768, NH = 12;
    reserve_for(B, T, C, NH);
    expect_served_by_cudnn(B, T, C, NH);
    const size_t nq = static_cast<size_t>(B) * T * 3 * C, no = static_cast<size_t>(B) * T * C;
    Twin qkv = up(in(nq, 8400, -2, 2)), dout = up(in(no, 8401));
    Twin out = nan_floats(no), dqkv = nan_floats(nq);
    Twin saved =
        nan_floats(cuda_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)));
    Twin scratch = nan_floats(
        cuda_->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)));
    std::vector<float> out_runs[2], dqkv_runs[2];
    for (int run = 0; run < 2; ++run) {
        out.poison();
        dqkv.poison();
        cuda_->attention_forward(out.f(kCuda), saved.f(kCuda), qkv.f(kCuda),
                                 trt::AttentionShape::from_width(B, T, C, NH, NH));
        cuda_->attention_backward(dqkv.f(kCuda), scratch.f(kCuda), dout.f(kCuda), qkv.f(kCuda),
                                  saved.f(kCuda), trt::AttentionShape::from_width(B, T, C, NH, NH));
        out_runs[run] = out.get<float>(kCuda, no);
        dqkv_runs[run] = dqkv.get<float>(kCuda, nq);
    }
    // Not vacuous: the outputs were written (the poison was NaN everywhere).
    const auto nans = [](const std::vector<float>& v) {
        return std::count_if(v.begin(), v.end(), [](float x) { return std::isnan(x); });
    };
    EXPECT_EQ(nans(out_runs[0]), 0) << tag("forward left NaN");
    EXPECT_EQ(nans(dqkv_runs[0]), 0) << tag("backward left NaN");
    EXPECT_TRUE(gpu::same_bits(out_runs[0], out_runs[1])) << tag("forward differs between runs");
    EXPECT_TRUE(gpu::same_bits(dqkv_runs[0], dqkv_runs[1]))
        << tag("backward differs between runs (nondeterministic engine?)");
}

// cuDNN attention serves multi-head attention only: a grouped-query model (its first reserve
// has NKV < NH) runs every attention call on the matmul path, says so in accel_status, and
// still matches the CPU.
TEST_P(CudnnAttention, GroupedQueryModelRunsTheMatmulPathAndSaysWhy) {
    const int B = 2, T = 64, C = 128, NH = 4, NKV = 2, hs = C / NH;
    const trt::ModelDims d{B, T, C, NH, 1, 1, NKV, 0};
    cpu_->reserve(d);
    cuda_->reserve(d);
    const trt::AccelStatus st = cuda_->accel_status();
    EXPECT_EQ(st.attention, "matmul");
    EXPECT_NE(st.attention_note.find("grouped-query"), std::string::npos) << st.attention_note;
    EXPECT_EQ(cuda_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)),
              static_cast<size_t>(B) * NH * T * T)
        << "the matmul path saves the [B,NH,T,T] probabilities";
    const size_t nq = static_cast<size_t>(B) * T * (NH + 2 * NKV) * hs;
    const size_t no = static_cast<size_t>(B) * T * C;
    Twin qkv = up(in(nq, 8900, -2, 2)), dout = up(in(no, 8901));
    Twin out = nan_floats(no), dqkv = nan_floats(nq);
    Twin saved = attention_saved(B, T, C, NH, NKV);
    Twin scratch = attention_scratch(B, T, C, NH, NKV);
    both([&](Backend& be, int s) {
        be.attention_forward(out.f(s), saved.f(s), qkv.f(s),
                             trt::AttentionShape::from_width(B, T, C, NH, NKV));
        be.attention_backward(dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s),
                              trt::AttentionShape::from_width(B, T, C, NH, NKV));
    });
    expect_close("gqa (cudnn requested) fwd", out, no, gpu::matmul_tol(precision_, false));
    expect_close("gqa (cudnn requested) bwd", dqkv, nq, gpu::matmul_tol(precision_, true));
}

// accel.attention = "cudnn" (AccelOptions::cudnn_grouped_query): cuDNN serves a grouped-query
// model, K/V read in place with NKV heads, each group's dK/dV summed in the graph; results
// match the CPU. Shapes: GQA 4 over 2 (T % 128 != 0: the padded backward on old cuDNN), MQA,
// Llama-3.2-1B-like heads (hs 64, 8 over 2) at T 256, and a shorter inference call.
TEST_P(CudnnAttention, GroupedQueryOnCudnnWhenAskedMatchesTheCpu) {
    struct Case { int B, T, C, NH, NKV; };
    const Case cases[] = {{2, 64, 128, 4, 2}, {2, 100, 128, 4, 1}, {2, 256, 512, 8, 2}};
    uint32_t seed = 9100;
    for (const Case& c : cases) {
        reopen(/*grouped_query=*/true);
        const trt::ModelDims d{c.B, c.T, c.C, c.NH, 1, 1, c.NKV, 0};
        cpu_->reserve(d);
        cuda_->reserve(d);
        const trt::AccelStatus st = cuda_->accel_status();
        ASSERT_EQ(st.attention, "cudnn") << shape(c.B, c.T, c.C, c.NH) << " NKV=" << c.NKV
                                         << ": " << st.attention_note;
        EXPECT_LT(cuda_->attention_saved_floats(
                      trt::AttentionShape::from_width(c.B, c.T, c.C, c.NH, c.NKV)),
                  static_cast<size_t>(c.B) * c.NH * c.T * c.T)
            << "cuDNN saves no [B,NH,T,T] probabilities";
        compare_gqa_with_cpu(c.B, c.T, c.C, c.NH, c.NKV, seed);
        seed += 10;
        // A shorter call (sampling, forward) on the same reservation.
        compare_gqa_with_cpu(1, c.T / 2 + 1, c.C, c.NH, c.NKV, seed, c.T);
        seed += 10;
    }
}

// A sliding window shorter than T on cuDNN when accel.attention = "cudnn" is written: the band
// mask after the causal one (cudnn_sdpa_graph.h), results matching the CPU's banded softmax.
// Shapes: Mistral-like GQA (8 over 2, hs 64) with a window of 100 over T 256, MHA with a
// window across the 128-row bucket edge, and a shorter call on the same reservation (a window
// at least as long as the call: no band). Without the explicit setting the note says why the
// matmul path serves.
TEST_P(CudnnAttention, SlidingWindowOnCudnnWhenAskedMatchesTheCpu) {
    struct Case { int B, T, C, NH, NKV, window; };
    const Case cases[] = {{2, 256, 512, 8, 2, 100}, {2, 200, 128, 4, 4, 130}};
    uint32_t seed = 9300;
    for (const Case& c : cases) {
        reopen(/*grouped_query=*/true);
        trt::ModelDims d{c.B, c.T, c.C, c.NH, 1, 1, c.NKV, 0};
        d.window = c.window;
        cpu_->reserve(d);
        cuda_->reserve(d);
        const trt::AccelStatus st = cuda_->accel_status();
        ASSERT_EQ(st.attention, "cudnn") << shape(c.B, c.T, c.C, c.NH) << " window="
                                         << c.window << ": " << st.attention_note;
        compare_gqa_with_cpu(c.B, c.T, c.C, c.NH, c.NKV, seed, 0, c.window);
        seed += 10;
        compare_gqa_with_cpu(1, c.window / 2 + 1, c.C, c.NH, c.NKV, seed, c.T, c.window);
        seed += 10;
    }
    reopen(/*grouped_query=*/false);
    trt::ModelDims d{2, 256, 512, 8, 1, 1, 2, 0};
    d.window = 100;
    cuda_->reserve(d);
    const trt::AccelStatus st = cuda_->accel_status();
    EXPECT_EQ(st.attention, "matmul");
    EXPECT_NE(st.attention_note.find("sliding window"), std::string::npos) << st.attention_note;
}

// A grouped-query call on a backend whose model reserved multi-head attention for cuDNN: the
// matmul path serves it when its T×T buffers fit in the cuDNN-sized ones, else it is refused
// (Unsupported, naming the way out) rather than overrunning the model's buffers.
TEST_P(CudnnAttention, GroupedQueryCallOnAMultiHeadReservation) {
    const int B = 4, T = 256, C = 128, NH = 4;
    reserve_for(B, T, C, NH);
    expect_served_by_cudnn(B, T, C, NH);
    const int NKV = 2, hs = C / NH;
    {
        const size_t nq = static_cast<size_t>(B) * T * (NH + 2 * NKV) * hs;
        const size_t no = static_cast<size_t>(B) * T * C;
        Twin qkv = up(in(nq, 8950, -2, 2)), out = nan_floats(no);
        Twin saved = nan_floats(
            cuda_->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NKV)));
        try {
            cuda_->attention_forward(out.f(kCuda), saved.f(kCuda), qkv.f(kCuda),
                                     trt::AttentionShape::from_width(B, T, C, NH, NKV));
            ADD_FAILURE() << "a [B,NH,T,T] matmul attention does not fit the cuDNN-sized buffers";
        } catch (const trt::Error& e) {
            EXPECT_EQ(e.status(), trt::Status::Unsupported) << e.what();
            EXPECT_NE(std::string(e.what()).find("accel.attention"), std::string::npos)
                << e.what();
        }
    }
    // B=1, T=8: the matmul path's buffers fit in the cuDNN-sized ones; it serves the call.
    const int b = 1, t = 8;
    const size_t nq = static_cast<size_t>(b) * t * (NH + 2 * NKV) * hs;
    const size_t no = static_cast<size_t>(b) * t * C;
    Twin qkv = up(in(nq, 8960, -2, 2)), dout = up(in(no, 8961));
    Twin out = nan_floats(no), dqkv = nan_floats(nq);
    Twin saved = attention_saved(b, t, C, NH, NKV);
    Twin scratch = attention_scratch(b, t, C, NH, NKV);
    both([&](Backend& be, int s) {
        be.attention_forward(out.f(s), saved.f(s), qkv.f(s),
                             trt::AttentionShape::from_width(b, t, C, NH, NKV));
        be.attention_backward(dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s),
                              trt::AttentionShape::from_width(b, t, C, NH, NKV));
    });
    expect_close("gqa B1 T8 on a cudnn reservation fwd", out, no,
                 gpu::matmul_tol(precision_, false));
    expect_close("gqa B1 T8 on a cudnn reservation bwd", dqkv, nq,
                 gpu::matmul_tol(precision_, true));
}

INSTANTIATE_TEST_SUITE_P(LowPrecision, CudnnAttention,
                         ::testing::Values(Precision::Bf16, Precision::Fp16),
                         gpu::precision_param_name);

// ---------------------------------------------------------------- fallbacks

TEST(CudnnAttentionFallback, Fp32RunsTheMatmulAttentionAndSaysWhy) {
    std::string why;
    bool skip = false;
    auto cuda = gpu::try_cuda(Precision::Fp32, why, skip, with_cudnn());
    if (!cuda) {
        if (skip) GTEST_SKIP() << "no CUDA backend: " << why;
        FAIL() << "the CUDA backend could not be created: " << why;
    }
    cuda->reserve(trt::ModelDims{2, 64, 128, 2, 1, 1});
    const trt::AccelStatus st = cuda->accel_status();
    EXPECT_EQ(st.attention, "matmul");
    EXPECT_FALSE(st.attention_note.empty()) << "a requested path not taken must say why";
}

TEST(CudnnAttentionFallback, MissingLibraryRunsTheMatmulAttentionAndNamesThePath) {
    if (g_cudnn_loader_used)
        GTEST_SKIP() << "cuDNN was already loaded in this process; this case must run alone "
                        "(ctest runs every case in its own process)";
    const char* kPath = "/nonexistent/libcudnn.so.9";
    setenv("TRAINRT_CUDNN_LIBRARY", kPath, 1);  // before the first cuDNN use in this process
    struct Restore {
        ~Restore() { unsetenv("TRAINRT_CUDNN_LIBRARY"); }
    } restore;

    std::string why;
    bool skip = false;
    auto cuda = gpu::try_cuda(Precision::Bf16, why, skip, with_cudnn());
    if (!cuda) {
        if (skip) GTEST_SKIP() << "no CUDA backend: " << why;
        FAIL() << "the CUDA backend could not be created: " << why;
    }
    auto cpu = trt::make_cpu_backend(4);
    const int B = 2, T = 17, C = 64, NH = 2;
    const trt::ModelDims d{B, T, C, NH, 1, 1};
    cpu->reserve(d);
    cuda->reserve(d);
    const trt::AccelStatus st = cuda->accel_status();
    EXPECT_EQ(st.attention, "matmul");
    EXPECT_NE(st.attention_note.find(kPath), std::string::npos) << st.attention_note;

    // The matmul attention still matches the CPU.
    const size_t nq = static_cast<size_t>(B) * T * 3 * C, no = static_cast<size_t>(B) * T * C;
    Twin qkv(*cpu, *cuda, nq * 4), out(*cpu, *cuda, no * 4), dout(*cpu, *cuda, no * 4),
        dqkv(*cpu, *cuda, nq * 4);
    qkv.set(gpu::rounded(gpu::rnd(nq, 8500, -2, 2), Precision::Bf16));
    dout.set(gpu::rounded(gpu::rnd(no, 8501), Precision::Bf16));
    const size_t n_saved =
        std::max(cpu->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)),
                 cuda->attention_saved_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)));
    const size_t n_scratch =
        std::max(cpu->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)),
                 cuda->attention_scratch_floats(trt::AttentionShape::from_width(B, T, C, NH, NH)));
    Twin saved(*cpu, *cuda, n_saved * 4), scratch(*cpu, *cuda, n_scratch * 4);
    Backend* sides[2] = {cpu.get(), cuda.get()};
    for (int s = 0; s < 2; ++s) {
        sides[s]->attention_forward(out.f(s), saved.f(s), qkv.f(s),
                                    trt::AttentionShape::from_width(B, T, C, NH, NH));
        sides[s]->attention_backward(dqkv.f(s), scratch.f(s), dout.f(s), qkv.f(s), saved.f(s),
                                     trt::AttentionShape::from_width(B, T, C, NH, NH));
    }
    cuda->synchronize();
    const double e_out = ref::rel_error(out.get<float>(kCuda, no), out.get<float>(kCpu, no));
    const double e_dqkv = ref::rel_error(dqkv.get<float>(kCuda, nq), dqkv.get<float>(kCpu, nq));
    ref::report("matmul fallback fwd [bf16]", e_out);
    ref::report("matmul fallback bwd dqkv [bf16]", e_dqkv);
    EXPECT_LE(e_out, gpu::matmul_tol(Precision::Bf16, false));
    EXPECT_LE(e_dqkv, gpu::matmul_tol(Precision::Bf16, true));
}

}  // namespace
