// cuDNN fused causal attention (cudnn_attention.h, docs/CUDNN_ATTENTION.md): the CUDA side of
// the graphs in cudnn_sdpa_graph.h (bf16/fp16 casts, buffer layout, plan cache, execution).
//
// Why the classic op graphs and not CUDNN_BACKEND_OPERATION_SDPA_FWD/BWD: the forward
// descriptor needs cuDNN 9.13.1, the backward one 9.17, and neither has a causal-mask attribute
// (masks go through a score-modifier subgraph, 9.21+); the op graphs run on every 9.x.
//
// Determinism: the backward graph has no atomic fp32 dQ accumulator, and with
// require_deterministic (accel.deterministic, the default) plan selection refuses engines whose
// numerical notes say NONDETERMINISTIC; without such an engine the shape is refused, saying
// which engines were skipped, and the backend uses the matmul attention.
//
// Buffers (no permute kernels): Q, K, V are strided views of a bf16/fp16 qkv [B,T,3C]: the
// activation itself when activations are bf16/fp16 (ctx.act, accel.lowp_activations) and the
// plan's length is the call's, else a copy cast (fp32 activations) or copied into ctx.scratch.
// `saved` holds the bf16/fp16 O and the fp32 Stats; `out` gets O cast (fp32) or copied. The
// backward writes dQ/dK/dV into dqkv directly when it is bf16/fp16 and unpadded. A call of T
// positions served by a plan of Tp > T (its length bucket, attention_plan_cache.h) goes through
// [B,Tp,·] buffers whose rows T..Tp-1 are zero and brings back only rows < T: causality keeps
// rows < T exact, and zero dO rows add nothing to dK/dV (docs/CUDNN_ATTENTION.md).
#include "backend/cuda/cudnn_attention.h"
#include "backend/cudnn_attention_sizes.h"

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
#include "backend/cuda/kernels/launch.cuh"
#include "core/error.h"

namespace trt::cuda {
namespace {

using cudnn::OpGraph;

// Offsets inside saved, scratch and ctx.scratch. The variant pack needs 16-byte aligned
// pointers; 256 keeps the casts' and the engines' accesses on whole cache lines.
using cudnn_sizes::align_up;
using cudnn_sizes::kLowpBytes;
using cudnn_sizes::Sizes;
using cudnn_sizes::sizes_of;

std::string shape_text(int B, int T, int C, int NH, int NKV = 0) {
    return cat("B=", B, " T=", T, " C=", C, " NH=", NH,
               NKV > 0 && NKV != NH ? cat(" NKV=", NKV) : std::string(),
               NH > 0 && C % NH == 0 ? cat(" (head size ", C / NH, ")") : std::string());
}
std::string shape_text(const AttnShape& s) {
    return shape_text(s.B, s.T, s.C, s.NH, s.NKV) +
           (s.window > 0 ? cat(" with a sliding window of ", s.window) : std::string());
}

// The key of a call's shape: NKV stored as 0 for multi-head attention (NKV == NH), the window
// as 0 when it bands nothing (none, or at least T keys: the whole causal row).
AttnShape attn_shape(int B, int T, int C, int NH, int NKV, int window) {
    return AttnShape{B, T, C, NH, NKV == NH ? 0 : NKV, window > 0 && window < T ? window : 0};
}

bool stream_capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    TRT_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    return capture != cudaStreamCaptureStatusNone;
}

// One call's variant pack: which memory each bound tensor uid reads or writes.
struct Bindings {
    int64_t uids[24];
    void* ptrs[24];
    int64_t n = 0;
    void add(int64_t uid, const void* p) {
        TRT_CHECK(n < 24, "too many cuDNN bindings");
        uids[n] = uid;
        ptrs[n] = const_cast<void*>(p);  // cuDNN's API is not const-correct; inputs are read only
        ++n;
    }
};

void require_aligned(const void* p, const char* what) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
        fail(Status::Internal, "cuDNN attention: ", what, " is not 16-byte aligned");
}

// Low-precision activations (ctx.act bf16/fp16): a buffer cuDNN can use where it lies — the
// plan's length is the call's and the pointer is 16-byte aligned (the variant pack's rule).
bool usable_in_place(ConstAct v, int T, int Tp) {
    return v.dtype != DType::F32 && Tp == T && aligned16(v.data);
}

// dst [B,Tp,row] = src [B,T,row] in rows t < T of each batch, zero in rows T..Tp-1 (Tp >= T);
// the same element type on both sides (bf16/fp16 activations): copies, not casts. Memcpy and
// memset nodes, so it may run under graph capture.
void copy_padded(const CudaCtx& ctx, void* dst, const void* src, int B, int T, int Tp,
                 size_t row_bytes) {
    const size_t src_pitch = static_cast<size_t>(T) * row_bytes;
    const size_t dst_pitch = static_cast<size_t>(Tp) * row_bytes;
    if (B <= 0 || row_bytes == 0) return;
    if (T > 0)
        TRT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, src_pitch, B,
                                         cudaMemcpyDeviceToDevice, ctx.stream));
    if (Tp > T)
        TRT_CUDA_CHECK(cudaMemset2DAsync(static_cast<char*>(dst) + src_pitch, dst_pitch, 0,
                                         dst_pitch - src_pitch, B, ctx.stream));
}
// dst [B,T,row] = rows t < T of each batch of src [B,Tp,row] (same element type).
void copy_unpadded(const CudaCtx& ctx, void* dst, const void* src, int B, int T, int Tp,
                   size_t row_bytes) {
    if (B <= 0 || T <= 0 || row_bytes == 0) return;
    const size_t dst_pitch = static_cast<size_t>(T) * row_bytes;
    TRT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, static_cast<size_t>(Tp) * row_bytes,
                                     dst_pitch, B, cudaMemcpyDeviceToDevice, ctx.stream));
}

// src [B,T,W] as the plan's bf16/fp16 [B,Tp,W] input: in place when it can be (low-precision
// activations, Tp == T, aligned), else copied (bf16/fp16) or cast (fp32) into `staging`.
const char* lowp_input(const CudaCtx& ctx, char* staging, ConstAct src, int B, int T, int Tp,
                       int W, Precision p) {
    if (usable_in_place(src, T, Tp)) return static_cast<const char*>(src.data);
    if (src.dtype == DType::F32)
        cast_padded_from_f32(ctx, staging, static_cast<const float*>(src.data), B, T, Tp, W, p);
    else
        copy_padded(ctx, staging, src.data, B, T, Tp, static_cast<size_t>(W) * kLowpBytes);
    return staging;
}
// The plan's bf16/fp16 [B,Tp,W] result `lp` into dst [B,T,W] (rows < T): a cast for fp32
// activations, a copy for low-precision ones (nothing when lp is dst itself).
void lowp_output(const CudaCtx& ctx, Act dst, const char* lp, int B, int T, int Tp, int W,
                 Precision p) {
    if (lp == dst.data) return;
    if (dst.dtype == DType::F32)
        cast_unpadded_to_f32(ctx, static_cast<float*>(dst.data), lp, B, T, Tp, W, p);
    else
        copy_unpadded(ctx, dst.data, lp, B, T, Tp, static_cast<size_t>(W) * kLowpBytes);
}

}  // namespace

// ---------------------------------------------------------------- per-shape plans

struct CudnnAttention::ShapePlans {
    ShapePlans(const CudnnApi& api, cudnnHandle_t h, int t, DeviceFree f)
        : fwd(api, h), bwd(api, h), T(t), free(std::move(f)) {}
    // Evicted or at the object's end: the device buffer goes back to the backend. Never
    // throws (destructors); the backend's free reports a lost device on its next checked call.
    ~ShapePlans() {
        if (seq_lens && free) {
            try {
                free(seq_lens);
            } catch (...) {
            }
        }
    }
    ShapePlans(const ShapePlans&) = delete;
    ShapePlans& operator=(const ShapePlans&) = delete;

    OpGraph fwd, bwd;
    int T;  // the plan's sequence length (a call's T, or its bucket)
    // Scalars passed by value: the variant pack points at these host floats.
    float scale = 1.0f;
    float neg_inf = -std::numeric_limits<float>::infinity();
    float window = 0.0f;  // the sliding window W as the graph's fp32 scalar (0: none)
    float one = 1.0f;
    bool padded = false;           // the backward carries the padding-mask workaround
    int32_t* seq_lens = nullptr;   // [B] = T on the device (padded only), owned
    std::vector<int32_t> seq_lens_host;  // the copy's source, kept alive with the plans
    size_t fwd_scratch = 0, bwd_scratch = 0;  // ctx.scratch bytes
    DeviceFree free;
};

CudnnAttention::CudnnAttention(const CudnnApi& api, cudnnContext* handle, Precision p,
                               bool require_deterministic, DeviceAlloc alloc, DeviceFree free)
    : api_(api),
      handle_(handle),
      precision_(p),
      require_deterministic_(require_deterministic),
      alloc_(std::move(alloc)),
      free_(std::move(free)),
      cache_(kOnDemandPlans) {
    // An evicted plan's kernels may still be queued (eager calls return before they run): wait
    // for them before its descriptors go. Only prepare_call evicts, never under capture.
    cache_.set_evict_hook([this](const AttnShape&, ShapePlans&) {
        if (evict_stream_) TRT_CUDA_CHECK(cudaStreamSynchronize(evict_stream_));
    });
}

CudnnAttention::~CudnnAttention() {
    cache_.clear();  // every descriptor before the handle they were made with
    if (handle_) api_.Destroy(handle_);
}

std::unique_ptr<CudnnAttention> CudnnAttention::create(int device, Precision p,
                                                       bool require_deterministic,
                                                       DeviceAlloc alloc, DeviceFree free,
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
        auto* obj = new (std::nothrow)
            CudnnAttention(*api, h, p, require_deterministic, std::move(alloc), std::move(free));
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

bool CudnnAttention::nondeterministic_in_use() const {
    bool any = false;
    cache_.for_each([&any](const AttnShape&, const ShapePlans& sp) {
        any |= sp.fwd.plan_nondeterministic() || sp.bwd.plan_nondeterministic();
    });
    return any;
}

std::vector<OpChoice> CudnnAttention::plan_choices() const {
    std::vector<OpChoice> out;
    cache_.for_each([&](const AttnShape& s, const ShapePlans& sp) {
        std::string shape = cat("B ", s.B, " T ", s.T, " C ", s.C, " heads ", s.NH);
        if (s.NKV > 0 && s.NKV != s.NH) shape += cat(" kv heads ", s.NKV);
        if (s.window > 0) shape += cat(" window ", s.window);
        if (sp.T != s.T) shape += cat(" (bucket ", sp.T, ")");
        if (!cache_.reserved(s)) shape += " on demand";
        for (const OpGraph* g : {&sp.fwd, &sp.bwd}) {
            out.push_back({g == &sp.fwd ? "attention fwd (cuDNN)" : "attention bwd (cuDNN)", shape,
                           cat("engine ", g->engine_index(),
                               g->plan_nondeterministic() ? " (nondeterministic)" : ""),
                           g->workspace_bytes()});
        }
    });
    return out;
}

bool CudnnAttention::prepared(int B, int T, int C, int NH, int NKV, int window) const {
    return cache_.reserved(attn_shape(B, T, C, NH, NKV, window));
}

void CudnnAttention::set_call_budget(size_t saved_floats, size_t scratch_floats) {
    budget_saved_ = saved_floats;
    budget_scratch_ = scratch_floats;
}

std::unique_ptr<CudnnAttention::ShapePlans> CudnnAttention::build(const CudaCtx& ctx,
                                                                  const AttnShape& s,
                                                                  size_t scratch_limit,
                                                                  std::string* why) {
    if (const auto it = refused_.find(s); it != refused_.end()) {
        *why = it->second;
        return nullptr;
    }
    // A refusal that depends only on the shape, the library and the device: remembered.
    auto refuse = [&](const std::string& reason) {
        *why = cat("cuDNN attention cannot serve ", shape_text(s), ": ", reason);
        refused_[s] = *why;
        return nullptr;
    };
    if (const std::string p = sdpa::shape_problem(s.B, s.T, s.C, s.NH); !p.empty())
        return refuse(p);
    if (s.NKV > 0 && (s.NKV > s.NH || s.NH % s.NKV != 0))
        return refuse(cat("NKV=", s.NKV, " does not divide NH=", s.NH));
    TRT_CHECK(ctx.precision == precision_, "cuDNN attention created for another precision");

    const sdpa::Geometry geo(s.B, s.T, s.C, s.NH, s.NKV, s.window);
    const cudnnDataType_t io =
        precision_ == Precision::Bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    auto sp = std::make_unique<ShapePlans>(api_, handle_, s.T, free_);
    sp->scale = 1.0f / std::sqrt(static_cast<float>(s.C / s.NH));
    sp->window = static_cast<float>(s.window);
    sp->padded = sdpa::backward_needs_padding_mask(api_.version, s.T);

    // plan()'s reason, or, when only the determinism filter stood in the way, one that names
    // the graph, the skipped engines and the setting that would allow them.
    auto no_plan = [](const char* which, const std::string& plan_why,
                      const OpGraph::PlanReport& r) {
        if (!r.blocked_by_determinism() || !r.failed.empty()) return cat(which, ": ", plan_why);
        std::string engines;
        for (int64_t e : r.skipped) engines += cat(engines.empty() ? "" : ", ", e);
        return cat("the GPU offers only nondeterministic cuDNN ", which,
                   " engines for this shape (engines ", engines,
                   "); set accel.deterministic = false to allow them");
    };
    std::string plan_why;
    OpGraph::PlanReport report;
    sdpa::build_forward(sp->fwd, geo, io);
    if (!sp->fwd.plan(require_deterministic_, &plan_why, &report))
        return refuse(no_plan("forward", plan_why, report));
    sdpa::build_backward(sp->bwd, geo, io, sp->padded);
    if (!sp->bwd.plan(require_deterministic_, &plan_why, &report))
        return refuse(no_plan("backward", plan_why, report));

    const Sizes z = sizes_of(s.B, s.T, s.C, s.NH, s.NKV);
    sp->fwd_scratch =
        align_up(z.qkv_lowp) + align_up(static_cast<size_t>(sp->fwd.workspace_bytes()));
    sp->bwd_scratch = 2 * align_up(z.qkv_lowp) + align_up(z.out_lowp) + 2 * align_up(z.fullhead) +
                      align_up(static_cast<size_t>(sp->bwd.workspace_bytes()));
    const size_t need = std::max(sp->fwd_scratch, sp->bwd_scratch);
    if (need > scratch_limit) {
        // Remembered with the size: a later, larger op scratch lets the shape in again.
        needs_scratch_[s] = need;
        *why = cat("cuDNN attention for ", shape_text(s), " needs ", need,
                   " bytes of op scratch; the backend reserved ", scratch_limit);
        return nullptr;
    }
    if (sp->padded) {
        sp->seq_lens_host.assign(static_cast<size_t>(s.B), s.T);
        const size_t bytes = sp->seq_lens_host.size() * sizeof(int32_t);
        sp->seq_lens =
            static_cast<int32_t*>(alloc_(bytes, "cuDNN attention sequence lengths"));
        // On ctx.stream, after alloc's zero-fill (same stream); from pageable memory the
        // call returns once the source is staged.
        TRT_CUDA_CHECK(cudaMemcpyAsync(sp->seq_lens, sp->seq_lens_host.data(), bytes,
                                       cudaMemcpyHostToDevice, ctx.stream));
    }
    return sp;
}

bool CudnnAttention::prepare(const CudaCtx& ctx, int B, int T, int C, int NH, std::string* why,
                             int NKV, int window) {
    std::string local;
    std::string& w = why ? *why : local;
    const AttnShape s = attn_shape(B, T, C, NH, NKV, window);
    try {
        if (cache_.reserved(s)) return true;
        if (auto it = refused_.find(s); it != refused_.end()) {
            w = it->second;
            return false;
        }
        if (stream_capturing(ctx.stream)) {
            w = cat("cuDNN attention plans for ", shape_text(s),
                    " cannot be built while a CUDA graph is being captured (prepare the shape "
                    "before capture)");
            return false;  // not remembered: it is about when, not what
        }
        // Reserved: no op-scratch limit (reserve() sizes the op scratch after this).
        return cache_.acquire(
                   s, AttentionPlanCache<ShapePlans>::Use::Reserved,
                   [&](const AttnShape& sh, std::string* y) {
                       return build(ctx, sh, std::numeric_limits<size_t>::max(), y);
                   },
                   &w) != nullptr;
    } catch (const std::exception& ex) {
        // Not remembered: an allocation or device error may not repeat.
        w = cat("cuDNN attention for ", shape_text(s), ": ", ex.what());
    } catch (...) {
        w = "unexpected failure preparing the cuDNN attention";
    }
    return false;
}

AttnShape CudnnAttention::plan_for(const CudaCtx& ctx, const AttnShape& call) const {
    return plan_shape_for(call, cache_.reserved(call), [&](const AttnShape& b) {
        if (saved_floats(b.B, b.T, b.C, b.NH) > budget_saved_ ||
            scratch_floats(b.B, b.T, b.C, b.NH) > budget_scratch_ || refused_.count(b))
            return false;
        const auto it = needs_scratch_.find(b);
        return it == needs_scratch_.end() || it->second <= ctx.scratch_bytes;
    });
}

std::array<int, 4> CudnnAttention::plan_shape(const CudaCtx& ctx, int B, int T, int C, int NH,
                                              int NKV, int window) const {
    const AttnShape s = plan_for(ctx, attn_shape(B, T, C, NH, NKV, window));
    return {s.B, s.T, s.C, s.NH};
}

bool CudnnAttention::serves(const CudaCtx& ctx, int B, int T, int C, int NH, int NKV,
                            int window) const {
    return cache_.contains(plan_for(ctx, attn_shape(B, T, C, NH, NKV, window)));
}

bool CudnnAttention::prepare_call(const CudaCtx& ctx, int B, int T, int C, int NH,
                                  std::string* why, int NKV, int window) {
    std::string local;
    std::string& w = why ? *why : local;
    const AttnShape call = attn_shape(B, T, C, NH, NKV, window);
    try {
        std::string bucket_why;  // why the bucket could not serve, when it was tried
        for (int attempt = 0; attempt < 2; ++attempt) {
            const AttnShape s = plan_for(ctx, call);
            if (cache_.find(s)) return true;
            const size_t saved = saved_floats(s.B, s.T, s.C, s.NH);
            const size_t scratch = scratch_floats(s.B, s.T, s.C, s.NH);
            if (saved > budget_saved_ || scratch > budget_scratch_) {
                w = cat("cuDNN attention for ", shape_text(call), " needs ", saved,
                        " floats of saved activations and ", scratch,
                        " of scratch per layer; the model allocated ", budget_saved_, " and ",
                        budget_scratch_);
                break;
            }
            if (stream_capturing(ctx.stream)) {
                w = cat("cuDNN attention plans for ", shape_text(s),
                        " cannot be built while a CUDA graph is being captured");
                return false;
            }
            evict_stream_ = ctx.stream;
            w.clear();
            if (cache_.acquire(
                    s, AttentionPlanCache<ShapePlans>::Use::OnDemand,
                    [&](const AttnShape& sh, std::string* y) {
                        return build(ctx, sh, ctx.scratch_bytes, y);
                    },
                    &w))
                return true;
            if (s == call) break;
            // The bucket is out for good (refused, or more op scratch than there is): the next
            // plan_for gives the exact shape. Anything else (no room, a failure that may not
            // repeat) would stop the exact shape as well.
            if (!refused_.count(s) && !needs_scratch_.count(s)) break;
            bucket_why = cat(" (its length bucket T=", s.T, ": ", w, ")");
        }
        w += bucket_why;
    } catch (const std::exception& ex) {
        w = cat("cuDNN attention for ", shape_text(call), ": ", ex.what());
    } catch (...) {
        w = "unexpected failure preparing the cuDNN attention";
    }
    return false;
}

size_t CudnnAttention::saved_floats(int B, int T, int C, int NH) {
    return cudnn_sizes::saved_floats(B, T, C, NH);
}

size_t CudnnAttention::scratch_floats(int B, int T, int C, int NH) {
    return cudnn_sizes::scratch_floats(B, T, C, NH);
}

// The shape whose buffers bound a call's: plan_for picks the bucket only when its sizes fit
// the budget, else the exact shape, whose sizes are no larger.
AttnShape CudnnAttention::sizing_shape(const AttnShape& call) const {
    const AttnShape b = bucketed(call);
    if (!cache_.reserved(call) && saved_floats(b.B, b.T, b.C, b.NH) <= budget_saved_ &&
        scratch_floats(b.B, b.T, b.C, b.NH) <= budget_scratch_)
        return b;
    return call;
}

size_t CudnnAttention::call_saved_floats(int B, int T, int C, int NH, int NKV, int window) const {
    const AttnShape s = sizing_shape(attn_shape(B, T, C, NH, NKV, window));
    return saved_floats(s.B, s.T, s.C, s.NH);
}

size_t CudnnAttention::call_scratch_floats(int B, int T, int C, int NH, int NKV, int window) const {
    const AttnShape s = sizing_shape(attn_shape(B, T, C, NH, NKV, window));
    return scratch_floats(s.B, s.T, s.C, s.NH);
}

CudnnAttention::ShapePlans& CudnnAttention::plans_for(const CudaCtx& ctx, const AttnShape& call,
                                                      const char* who) {
    const AttnShape s = plan_for(ctx, call);
    ShapePlans* sp = cache_.find(s);
    if (!sp)
        fail(Status::Internal, who, " called for ", shape_text(call),
             ", which no plan serves (CudnnAttention::prepare / prepare_call)");
    // A graph captured now launches this plan's kernels at every replay: never evict it.
    if (stream_capturing(ctx.stream)) cache_.pin(s);
    return *sp;
}

size_t CudnnAttention::ctx_scratch_bytes(int B, int T, int C, int NH, int NKV, int window) const {
    const ShapePlans* sp = cache_.peek(attn_shape(B, T, C, NH, NKV, window));
    if (!sp)
        fail(Status::Internal, "CudnnAttention::ctx_scratch_bytes called for ",
             shape_text(B, T, C, NH, NKV), ", which was not prepared (CudnnAttention::prepare)");
    return std::max(sp->fwd_scratch, sp->bwd_scratch);
}

void CudnnAttention::forward(const CudaCtx& ctx, Act out, float* saved, ConstAct qkv, int B,
                             int T, int C, int NH, int NKV, int window) {
    act_storage(ctx, {out, qkv});
    const AttnShape call = attn_shape(B, T, C, NH, NKV, window);
    const ShapePlans& sp = plans_for(ctx, call, "cuDNN attention forward");
    TRT_CHECK(ctx.precision == precision_, "cuDNN attention created for another precision");
    if (ctx.scratch_bytes < sp.fwd_scratch)
        fail(Status::Internal, "cuDNN attention forward for ", shape_text(call), " needs ",
             sp.fwd_scratch, " bytes of op scratch; the backend reserved ", ctx.scratch_bytes);
    require_aligned(ctx.scratch, "ctx.scratch");
    require_aligned(saved, "saved");
    const int Tp = sp.T;  // the plan's length: T, or T's bucket
    const Sizes z = sizes_of(B, Tp, C, NH, NKV);
    // A qkv row: Q (C), then K and V (NKV heads each); their offsets in bytes.
    const int W = static_cast<int>(cudnn_sizes::qkv_width(C, NH, NKV));
    const size_t k_at = static_cast<size_t>(C) * kLowpBytes;
    const size_t v_at = k_at + (static_cast<size_t>(W - C) / 2) * kLowpBytes;

    char* qkv_stage = static_cast<char*>(ctx.scratch);  // [B,Tp,W] bf16/fp16
    void* workspace = sp.fwd.workspace_bytes() > 0 ? qkv_stage + align_up(z.qkv_lowp) : nullptr;
    // O stays in saved, as cuDNN computed it, for the backward (which gets no `out`).
    char* o_lp = reinterpret_cast<char*>(saved);  // [B,Tp,C] bf16/fp16
    float* stats = reinterpret_cast<float*>(o_lp + align_up(z.out_lowp));  // [B,NH,Tp]

    const char* qkv_lp = lowp_input(ctx, qkv_stage, qkv, B, T, Tp, W, precision_);
    cudnn::check(api_, api_.SetStream(handle_, ctx.stream), "cudnnSetStream");
    Bindings b;
    b.add(sdpa::kQ, qkv_lp);
    b.add(sdpa::kK, qkv_lp + k_at);
    b.add(sdpa::kV, qkv_lp + v_at);
    b.add(sdpa::kO, o_lp);
    b.add(sdpa::kStats, stats);
    b.add(sdpa::kScale, &sp.scale);  // by value: host pointers
    b.add(sdpa::kNegInf, &sp.neg_inf);
    if (sp.window > 0) b.add(sdpa::kWindow, &sp.window);
    sp.fwd.execute(b.uids, b.ptrs, b.n, workspace);
    lowp_output(ctx, out, o_lp, B, T, Tp, C, precision_);  // rows < T only
}

void CudnnAttention::backward(const CudaCtx& ctx, Act dqkv, float* scratch, ConstAct dout,
                              ConstAct qkv, const float* saved, int B, int T, int C, int NH,
                              int NKV, int window) {
    act_storage(ctx, {dqkv, dout, qkv});
    const AttnShape call = attn_shape(B, T, C, NH, NKV, window);
    const ShapePlans& sp = plans_for(ctx, call, "cuDNN attention backward");
    TRT_CHECK(ctx.precision == precision_, "cuDNN attention created for another precision");
    if (ctx.scratch_bytes < sp.bwd_scratch)
        fail(Status::Internal, "cuDNN attention backward for ", shape_text(call),
             " needs ", sp.bwd_scratch, " bytes of op scratch; the backend reserved ",
             ctx.scratch_bytes);
    require_aligned(ctx.scratch, "ctx.scratch");
    require_aligned(saved, "saved");
    require_aligned(scratch, "scratch");
    const int Tp = sp.T;
    const Sizes z = sizes_of(B, Tp, C, NH, NKV);
    const int W = static_cast<int>(cudnn_sizes::qkv_width(C, NH, NKV));
    const size_t k_at = static_cast<size_t>(C) * kLowpBytes;
    const size_t v_at = k_at + (static_cast<size_t>(W - C) / 2) * kLowpBytes;

    char* qkv_stage = static_cast<char*>(ctx.scratch);            // [B,Tp,W]
    char* dout_stage = qkv_stage + align_up(z.qkv_lowp);           // [B,Tp,C], rows >= T zero
    char* dqkv_stage = dout_stage + align_up(z.out_lowp);          // [B,Tp,W]
    // Grouped-query: dK, dV per query head ([B,NH,Tp,hs] fp32 each), summed by the graph.
    char* dk_full = dqkv_stage + align_up(z.qkv_lowp);
    char* dv_full = dk_full + align_up(z.fullhead);
    void* workspace =
        sp.bwd.workspace_bytes() > 0 ? dv_full + align_up(z.fullhead) : nullptr;
    const char* o_lp = reinterpret_cast<const char*>(saved);        // [B,Tp,C]
    const float* stats = reinterpret_cast<const float*>(o_lp + align_up(z.out_lowp));
    float* row_sum = scratch;                                       // [B,NH,Tp]

    const char* qkv_lp = lowp_input(ctx, qkv_stage, qkv, B, T, Tp, W, precision_);
    const char* dout_lp = lowp_input(ctx, dout_stage, dout, B, T, Tp, C, precision_);
    // dQ, dK, dV straight into dqkv when it can hold them as they are.
    char* dqkv_lp =
        usable_in_place(dqkv, T, Tp) ? static_cast<char*>(dqkv.data) : dqkv_stage;
    cudnn::check(api_, api_.SetStream(handle_, ctx.stream), "cudnnSetStream");
    Bindings b;
    b.add(sdpa::kQ, qkv_lp);
    b.add(sdpa::kK, qkv_lp + k_at);
    b.add(sdpa::kV, qkv_lp + v_at);
    b.add(sdpa::kO, o_lp);
    b.add(sdpa::kDO, dout_lp);
    b.add(sdpa::kStats, stats);
    b.add(sdpa::kDQ, dqkv_lp);
    b.add(sdpa::kDK, dqkv_lp + k_at);
    b.add(sdpa::kDV, dqkv_lp + v_at);
    if (z.fullhead > 0) {
        b.add(sdpa::kDKFull, dk_full);
        b.add(sdpa::kDVFull, dv_full);
    }
    b.add(sdpa::kRowSum, row_sum);
    b.add(sdpa::kScale, &sp.scale);  // by value: host pointers
    b.add(sdpa::kNegInf, &sp.neg_inf);
    b.add(sdpa::kOne, &sp.one);
    if (sp.window > 0) b.add(sdpa::kWindow, &sp.window);
    if (sp.padded) {
        b.add(sdpa::kSeqLenQ, sp.seq_lens);
        b.add(sdpa::kSeqLenKV, sp.seq_lens);
    }
    sp.bwd.execute(b.uids, b.ptrs, b.n, workspace);
    lowp_output(ctx, dqkv, dqkv_lp, B, T, Tp, W, precision_);  // rows < T only
}

}  // namespace trt::cuda
