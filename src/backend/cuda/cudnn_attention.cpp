// cuDNN fused causal attention (cudnn_attention.h, docs/CUDNN_ATTENTION.md): the CUDA side of
// the graphs in cudnn_sdpa_graph.h (bf16/fp16 casts, buffer layout, plan cache, execution).
//
// Why the classic op graphs and not CUDNN_BACKEND_OPERATION_SDPA_FWD/BWD: the forward
// descriptor needs cuDNN 9.13.1, the backward one 9.17, and neither has a causal-mask attribute
// (masks go through a score-modifier subgraph, 9.21+); the op graphs run on every 9.x.
//
// Determinism: the backward graph has no atomic fp32 dQ accumulator, and plan selection
// refuses engines whose numerical notes say NONDETERMINISTIC; without such an engine the shape
// is refused and the backend uses the matmul attention.
//
// Buffers (no permute kernels): qkv [B,T,3C] is cast to bf16/fp16 once into ctx.scratch and
// Q, K, V are strided views of it; `saved` holds the bf16/fp16 O and the fp32 Stats.
#include "backend/cuda/cudnn_attention.h"

#include <cuda_runtime.h>
#include <cudnn_graph.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <new>
#include <utility>
#include <vector>  // ShapePlans::seq_lens_host

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cudnn_graph.h"
#include "backend/cuda/cudnn_loader.h"
#include "backend/cuda/cudnn_sdpa_graph.h"
#include "core/error.h"

namespace trt::cuda {
namespace {

using cudnn::OpGraph;

// Offsets inside saved, scratch and ctx.scratch. The variant pack needs 16-byte aligned
// pointers; 256 keeps the casts' and the engines' accesses on whole cache lines.
constexpr size_t kAlign = 256;
constexpr size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
constexpr size_t kLowpBytes = 2;  // bf16 and fp16

// Byte sizes of the buffers one call touches.
struct Sizes {
    size_t qkv_lowp;  // [B,T,3C] bf16/fp16
    size_t out_lowp;  // [B,T,C] bf16/fp16 (O in saved, dO in ctx.scratch)
    size_t rows;      // [B,NH,T] fp32 (Stats, rowsum)
};

Sizes sizes_of(int B, int T, int C, int NH) {
    const size_t bt = static_cast<size_t>(B) * static_cast<size_t>(T);
    return Sizes{bt * 3 * static_cast<size_t>(C) * kLowpBytes,
                 bt * static_cast<size_t>(C) * kLowpBytes,
                 bt * static_cast<size_t>(NH) * sizeof(float)};
}

std::string shape_text(int B, int T, int C, int NH) {
    return cat("B=", B, " T=", T, " C=", C, " NH=", NH,
               NH > 0 && C % NH == 0 ? cat(" (head size ", C / NH, ")") : std::string());
}

// One call's variant pack: which memory each bound tensor uid reads or writes.
struct Bindings {
    int64_t uids[16];
    void* ptrs[16];
    int64_t n = 0;
    void add(int64_t uid, const void* p) {
        TRT_CHECK(n < 16, "too many cuDNN bindings");
        uids[n] = uid;
        ptrs[n] = const_cast<void*>(p);  // cuDNN's API is not const-correct; inputs are read only
        ++n;
    }
};

void require_aligned(const void* p, const char* what) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
        fail(Status::Internal, "cuDNN attention: ", what, " is not 16-byte aligned");
}

}  // namespace

// ---------------------------------------------------------------- per-shape plans

struct CudnnAttention::ShapePlans {
    ShapePlans(const CudnnApi& api, cudnnHandle_t h) : fwd(api, h), bwd(api, h) {}
    OpGraph fwd, bwd;
    // Scalars passed by value: the variant pack points at these host floats.
    float scale = 1.0f;
    float neg_inf = -std::numeric_limits<float>::infinity();
    float one = 1.0f;
    bool padded = false;           // the backward carries the padding-mask workaround
    int32_t* seq_lens = nullptr;   // [B] = T on the device (padded only)
    std::vector<int32_t> seq_lens_host;  // the copy's source, kept alive with the plans
    size_t fwd_scratch = 0, bwd_scratch = 0;  // ctx.scratch bytes
};

CudnnAttention::CudnnAttention(const CudnnApi& api, cudnnContext* handle, Precision p)
    : api_(api), handle_(handle), precision_(p) {}

CudnnAttention::~CudnnAttention() {
    plans_.clear();  // every descriptor before the handle they were made with
    if (handle_) api_.Destroy(handle_);
}

std::unique_ptr<CudnnAttention> CudnnAttention::create(int device, Precision p,
                                                       std::string* why) {
    std::string local;
    std::string& w = why ? *why : local;
    try {
        if (p != Precision::Bf16 && p != Precision::Fp16) {
            w = cat("cuDNN fused attention runs in bf16 or fp16; this run's precision is ",
                    p == Precision::Tf32 ? "tf32" : "fp32");
            return nullptr;
        }
        int major = 0;
        const cudaError_t e =
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
        if (e != cudaSuccess) {
            cudaGetLastError();
            w = cat("cannot query CUDA device ", device, ": ", cudaGetErrorString(e));
            return nullptr;
        }
        if (major < 8) {
            w = cat("cuDNN fused attention needs sm_80 or newer; device ", device, " is sm_",
                    major, "x");
            return nullptr;
        }
        std::string load_why;
        const CudnnApi* api = cudnn_api(&load_why);
        if (!api) {
            w = "cuDNN is not available: " + load_why;
            return nullptr;
        }
        cudnnHandle_t h = nullptr;
        if (const cudnnStatus_t s = api->Create(&h); s != CUDNN_STATUS_SUCCESS) {
            w = cudnn::status_text(*api, s, "cudnnCreate") + " (" + api->describe() + ")";
            return nullptr;
        }
        auto* obj = new (std::nothrow) CudnnAttention(*api, h, p);
        if (!obj) {
            api->Destroy(h);
            w = "out of host memory creating the cuDNN attention";
        }
        return std::unique_ptr<CudnnAttention>(obj);
    } catch (const std::exception& ex) {
        w = ex.what();
    } catch (...) {
        w = "unexpected failure creating the cuDNN attention";
    }
    return nullptr;
}

std::string CudnnAttention::library() const { return api_.describe(); }

bool CudnnAttention::prepared(int B, int T, int C, int NH) const {
    return plans_.count(Key{B, T, C, NH}) != 0;
}

bool CudnnAttention::prepare(const CudaCtx& ctx, int B, int T, int C, int NH,
                             const DeviceAlloc& alloc, std::string* why) {
    std::string local;
    std::string& w = why ? *why : local;
    const Key key{B, T, C, NH};
    try {
        if (plans_.count(key)) return true;
        if (auto it = refused_.find(key); it != refused_.end()) {
            w = it->second;
            return false;
        }
        // A refusal that depends only on the shape, the library and the device: remembered.
        auto refuse = [&](const std::string& reason) {
            w = cat("cuDNN attention cannot serve ", shape_text(B, T, C, NH), ": ", reason);
            refused_[key] = w;
            return false;
        };
        if (const std::string p = sdpa::shape_problem(B, T, C, NH); !p.empty()) return refuse(p);
        TRT_CHECK(ctx.precision == precision_, "cuDNN attention created for another precision");
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        TRT_CUDA_CHECK(cudaStreamIsCapturing(ctx.stream, &capture));
        if (capture != cudaStreamCaptureStatusNone) {
            w = cat("cuDNN attention plans for ", shape_text(B, T, C, NH),
                    " cannot be built while a CUDA graph is being captured (prepare the shape "
                    "before capture)");
            return false;  // not remembered: it is about when, not what
        }

        const sdpa::Geometry geo(B, T, C, NH);
        const cudnnDataType_t io =
            precision_ == Precision::Bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
        auto sp = std::make_unique<ShapePlans>(api_, handle_);
        sp->scale = 1.0f / std::sqrt(static_cast<float>(C / NH));
        sp->padded = sdpa::backward_needs_padding_mask(api_.version, T);

        std::string plan_why;
        sdpa::build_forward(sp->fwd, geo, io);
        if (!sp->fwd.plan(/*require_deterministic=*/true, &plan_why))
            return refuse("forward: " + plan_why);
        sdpa::build_backward(sp->bwd, geo, io, sp->padded);
        if (!sp->bwd.plan(/*require_deterministic=*/true, &plan_why))
            return refuse("backward: " + plan_why);

        const Sizes z = sizes_of(B, T, C, NH);
        sp->fwd_scratch =
            align_up(z.qkv_lowp) + align_up(static_cast<size_t>(sp->fwd.workspace_bytes()));
        sp->bwd_scratch = 2 * align_up(z.qkv_lowp) + align_up(z.out_lowp) +
                          align_up(static_cast<size_t>(sp->bwd.workspace_bytes()));
        if (sp->padded) {
            sp->seq_lens_host.assign(static_cast<size_t>(B), T);
            const size_t bytes = sp->seq_lens_host.size() * sizeof(int32_t);
            sp->seq_lens = static_cast<int32_t*>(alloc(bytes, "cuDNN attention sequence lengths"));
            // On ctx.stream, after alloc's zero-fill (same stream); from pageable memory the
            // call returns once the source is staged.
            TRT_CUDA_CHECK(cudaMemcpyAsync(sp->seq_lens, sp->seq_lens_host.data(), bytes,
                                           cudaMemcpyHostToDevice, ctx.stream));
        }
        plans_.emplace(key, std::move(sp));
        return true;
    } catch (const std::exception& ex) {
        // Not remembered: an allocation or device error may not repeat.
        w = cat("cuDNN attention for ", shape_text(B, T, C, NH), ": ", ex.what());
    } catch (...) {
        w = "unexpected failure preparing the cuDNN attention";
    }
    return false;
}

size_t CudnnAttention::saved_floats(int B, int T, int C, int NH) {
    const Sizes z = sizes_of(B, T, C, NH);
    return (align_up(z.out_lowp) + align_up(z.rows)) / sizeof(float);
}

size_t CudnnAttention::scratch_floats(int B, int T, int C, int NH) {
    return align_up(sizes_of(B, T, C, NH).rows) / sizeof(float);
}

const CudnnAttention::ShapePlans& CudnnAttention::plans_for(int B, int T, int C, int NH,
                                                            const char* who) const {
    const auto it = plans_.find(Key{B, T, C, NH});
    if (it == plans_.end())
        fail(Status::Internal, who, " called for ", shape_text(B, T, C, NH),
             ", which was not prepared (CudnnAttention::prepare)");
    return *it->second;
}

size_t CudnnAttention::ctx_scratch_bytes(int B, int T, int C, int NH) const {
    const ShapePlans& sp = plans_for(B, T, C, NH, "CudnnAttention::ctx_scratch_bytes");
    return std::max(sp.fwd_scratch, sp.bwd_scratch);
}

void CudnnAttention::forward(const CudaCtx& ctx, float* out, float* saved, const float* qkv,
                             int B, int T, int C, int NH) {
    const ShapePlans& sp = plans_for(B, T, C, NH, "cuDNN attention forward");
    TRT_CHECK(ctx.precision == precision_, "cuDNN attention created for another precision");
    if (ctx.scratch_bytes < sp.fwd_scratch)
        fail(Status::Internal, "cuDNN attention forward for ", shape_text(B, T, C, NH), " needs ",
             sp.fwd_scratch, " bytes of op scratch; the backend reserved ", ctx.scratch_bytes);
    require_aligned(ctx.scratch, "ctx.scratch");
    require_aligned(saved, "saved");
    const Sizes z = sizes_of(B, T, C, NH);
    const size_t block = static_cast<size_t>(C) * kLowpBytes;  // one of Q, K, V in a qkv row

    char* qkv_lp = static_cast<char*>(ctx.scratch);  // [B,T,3C] bf16/fp16
    void* workspace = sp.fwd.workspace_bytes() > 0 ? qkv_lp + align_up(z.qkv_lowp) : nullptr;
    char* o_lp = reinterpret_cast<char*>(saved);  // [B,T,C] bf16/fp16
    float* stats = reinterpret_cast<float*>(o_lp + align_up(z.out_lowp));  // [B,NH,T]

    cast_from_f32(ctx, qkv_lp, qkv, z.qkv_lowp / kLowpBytes, precision_);
    cudnn::check(api_, api_.SetStream(handle_, ctx.stream), "cudnnSetStream");
    Bindings b;
    b.add(sdpa::kQ, qkv_lp);
    b.add(sdpa::kK, qkv_lp + block);
    b.add(sdpa::kV, qkv_lp + 2 * block);
    b.add(sdpa::kO, o_lp);
    b.add(sdpa::kStats, stats);
    b.add(sdpa::kScale, &sp.scale);  // by value: host pointers
    b.add(sdpa::kNegInf, &sp.neg_inf);
    sp.fwd.execute(b.uids, b.ptrs, b.n, workspace);
    cast_to_f32(ctx, out, o_lp, z.out_lowp / kLowpBytes, precision_);
}

void CudnnAttention::backward(const CudaCtx& ctx, float* dqkv, float* scratch, const float* dout,
                              const float* qkv, const float* saved, int B, int T, int C,
                              int NH) {
    const ShapePlans& sp = plans_for(B, T, C, NH, "cuDNN attention backward");
    TRT_CHECK(ctx.precision == precision_, "cuDNN attention created for another precision");
    if (ctx.scratch_bytes < sp.bwd_scratch)
        fail(Status::Internal, "cuDNN attention backward for ", shape_text(B, T, C, NH),
             " needs ", sp.bwd_scratch, " bytes of op scratch; the backend reserved ",
             ctx.scratch_bytes);
    require_aligned(ctx.scratch, "ctx.scratch");
    require_aligned(saved, "saved");
    require_aligned(scratch, "scratch");
    const Sizes z = sizes_of(B, T, C, NH);
    const size_t block = static_cast<size_t>(C) * kLowpBytes;

    char* qkv_lp = static_cast<char*>(ctx.scratch);                // [B,T,3C]
    char* dout_lp = qkv_lp + align_up(z.qkv_lowp);                 // [B,T,C]
    char* dqkv_lp = dout_lp + align_up(z.out_lowp);                // [B,T,3C]
    void* workspace = sp.bwd.workspace_bytes() > 0 ? dqkv_lp + align_up(z.qkv_lowp) : nullptr;
    const char* o_lp = reinterpret_cast<const char*>(saved);        // [B,T,C]
    const float* stats = reinterpret_cast<const float*>(o_lp + align_up(z.out_lowp));
    float* row_sum = scratch;                                       // [B,NH,T]

    cast_from_f32(ctx, qkv_lp, qkv, z.qkv_lowp / kLowpBytes, precision_);
    cast_from_f32(ctx, dout_lp, dout, z.out_lowp / kLowpBytes, precision_);
    cudnn::check(api_, api_.SetStream(handle_, ctx.stream), "cudnnSetStream");
    Bindings b;
    b.add(sdpa::kQ, qkv_lp);
    b.add(sdpa::kK, qkv_lp + block);
    b.add(sdpa::kV, qkv_lp + 2 * block);
    b.add(sdpa::kO, o_lp);
    b.add(sdpa::kDO, dout_lp);
    b.add(sdpa::kStats, stats);
    b.add(sdpa::kDQ, dqkv_lp);
    b.add(sdpa::kDK, dqkv_lp + block);
    b.add(sdpa::kDV, dqkv_lp + 2 * block);
    b.add(sdpa::kRowSum, row_sum);
    b.add(sdpa::kScale, &sp.scale);  // by value: host pointers
    b.add(sdpa::kNegInf, &sp.neg_inf);
    b.add(sdpa::kOne, &sp.one);
    if (sp.padded) {
        b.add(sdpa::kSeqLenQ, sp.seq_lens);
        b.add(sdpa::kSeqLenKV, sp.seq_lens);
    }
    sp.bwd.execute(b.uids, b.ptrs, b.n, workspace);
    cast_to_f32(ctx, dqkv, dqkv_lp, z.qkv_lowp / kLowpBytes, precision_);
}

}  // namespace trt::cuda
