// Causal self-attention through cuDNN's fused (flash-attention class) SDPA kernels, the
// accel.attention = "cudnn" path of the CUDA backend for bf16/fp16 on sm_80+. The backend owns
// one CudnnAttention and falls back to the matmul attention (kernels/attention.cu) whenever
// create() or prepare() says no, keeping the reason for accel_status().attention_note.
// docs/CUDNN_ATTENTION.md describes the graphs, layouts, length buckets and fallback rules.
//
// Plans: the shapes reserve() prepares are planned exactly and kept ("reserved"); any other
// call shape (sampling, Session::forward) is served by a plan of its length bucket (the
// smallest 128·2^k >= T, rows padded with zeros) or, when the bucket's buffers do not fit what
// the model allocated, of its exact length; at most kOnDemandPlans of those live at once
// (least recently used evicted; never one a captured CUDA graph used). attention_plan_cache.h
// holds that policy.
//
// Contract of forward/backward: exactly Backend::attention_forward/backward (backend.h), and
// call_saved_floats/call_scratch_floats as the saved/scratch sizes. Every method takes the
// key/value heads NKV last (0 or NH: multi-head attention, qkv [B,T,3C]; fewer: grouped-query
// attention, qkv [B,T,(NH+2NKV)hs], K and V read in place with NKV heads, no repeat; the
// backward sums each group's dK, dV in the graph, cudnn_sdpa_graph.h), then the sliding
// window (0, or one at least T: none; shorter: the band mask, cudnn_sdpa_graph.h — a shape
// with a window is a shape of its own). They only enqueue on
// ctx.stream (no allocation, no synchronization), so they may run inside CUDA graph capture.
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/attention_plan_cache.h"
#include "backend/cuda/cuda_ops.h"

struct cudnnContext;  // cuDNN's handle type (cudnnHandle_t = cudnnContext*): no header needed

namespace trt::cuda {

struct CudnnApi;

// The backend's allocator (zero-filled device memory, enqueued on ctx.stream; freed with the
// backend). Throws trt::Error on failure.
using DeviceAlloc = std::function<void*(size_t bytes, const char* what)>;
// Gives back what DeviceAlloc returned (a plan evicted from the cache, or the object's end).
using DeviceFree = std::function<void(void* ptr)>;

class CudnnAttention {
public:
    // On-demand (non-reserved) shapes whose plans are kept at once.
    static constexpr size_t kOnDemandPlans = 4;

    // nullptr + *why when cuDNN cannot serve: precision not Bf16/Fp16, device below sm_80,
    // libcudnn missing or too old (cudnn_loader.h), handle creation failed. Call with `device`
    // current; creates a cudnnHandle_t on it. require_deterministic (accel.deterministic):
    // plan only engines not marked NONDETERMINISTIC. alloc/free: the backend's device memory,
    // for the plans' sequence-length buffers. Never throws.
    static std::unique_ptr<CudnnAttention> create(int device, Precision p,
                                                  bool require_deterministic, DeviceAlloc alloc,
                                                  DeviceFree free, std::string* why);
    ~CudnnAttention();  // never throws
    CudnnAttention(const CudnnAttention&) = delete;
    CudnnAttention& operator=(const CudnnAttention&) = delete;

    // reserve(): builds the forward and backward execution plans for exactly (B,T,C,NH) and keeps
    // them for the object's life. Host work, except that the padded-sequence workaround
    // (cuDNN <= 9.15, T % 128 != 0) allocates a [B] int32 sequence-length buffer and fills it on
    // ctx.stream. Must not run while ctx.stream is being captured. false + *why when no engine
    // serves the shape (head size not a multiple of 8 or above 128, no deterministic engine
    // under require_deterministic, finalize failure...); a refused shape is remembered and
    // refused again at no cost. Never throws.
    bool prepare(const CudaCtx& ctx, int B, int T, int C, int NH, std::string* why,
                 int NKV = 0, int window = 0);
    // (B,T,C,NH,NKV) was prepared by prepare(): a call of it runs that exact plan.
    bool prepared(int B, int T, int C, int NH, int NKV = 0, int window = 0) const;

    // What a call of a shape prepare() did not see may use: the `saved` and `scratch` floats the
    // model allocated (those of the shape it sized its buffers for). 0 until set: then only
    // prepared shapes are served.
    void set_call_budget(size_t saved_floats, size_t scratch_floats);

    // The plan shape {B, T', C, NH} that serves a call of (B,T,C,NH): T' = T for a prepared
    // shape; else the length bucket when its saved/scratch fit the call budget and its plans
    // were not refused (nor found needing more than ctx.scratch_bytes); else T.
    std::array<int, 4> plan_shape(const CudaCtx& ctx, int B, int T, int C, int NH,
                                  int NKV = 0, int window = 0) const;
    // A plan serves calls of (B,T,C,NH): cached, or built now (on demand, possibly evicting
    // the least recently used on-demand plan). Must not run while ctx.stream is being captured.
    // false + *why when neither the bucket nor the exact shape can be served: no engine, more
    // saved/scratch than the call budget or more op scratch than ctx.scratch_bytes, every
    // on-demand plan pinned by a captured graph. Never throws.
    bool prepare_call(const CudaCtx& ctx, int B, int T, int C, int NH, std::string* why,
                      int NKV = 0, int window = 0);
    // A plan for the call shape is cached now (no build needed).
    bool serves(const CudaCtx& ctx, int B, int T, int C, int NH, int NKV = 0, int window = 0) const;

    // Floats of `saved` for a plan of (B,T,C,NH): the bf16/fp16 output O [B,T,C] (the backward
    // needs it as cuDNN computed it) and the softmax statistics [B,NH,T] fp32.
    static size_t saved_floats(int B, int T, int C, int NH);
    // Floats of `scratch` for a plan of (B,T,C,NH): rowsum(dO * O) [B,NH,T] fp32.
    static size_t scratch_floats(int B, int T, int C, int NH);
    // For a call shape: what the plan serving it uses (a prepared shape: its own sizes; else
    // an upper bound, the bucket's sizes when they fit the call budget).
    size_t call_saved_floats(int B, int T, int C, int NH, int NKV = 0, int window = 0) const;
    size_t call_scratch_floats(int B, int T, int C, int NH, int NKV = 0, int window = 0) const;
    // Bytes of ctx.scratch forward/backward use for a prepared shape (the bf16/fp16 copies of
    // qkv, dout and dqkv, grouped-query's per-query-head dK and dV, plus the plans'
    // workspaces). Error(Internal) for an unprepared one.
    size_t ctx_scratch_bytes(int B, int T, int C, int NH, int NKV = 0, int window = 0) const;

    // qkv [B,T,3C] -> out [B,T,C] in ctx.act (fp32: cast to and from bf16/fp16 around cuDNN;
    // bf16/fp16: read in place and O copied out, no casts); saved: call_saved_floats().
    // Error(Internal) if no plan serves the shape (prepare / prepare_call) or ctx.scratch is
    // too small; Error(Device) with cuDNN's message if execution fails. Under capture the plan
    // is pinned: never evicted.
    void forward(const CudaCtx& ctx, Act out, float* saved, ConstAct qkv, int B, int T, int C,
                 int NH, int NKV = 0, int window = 0);
    // dqkv [B,T,3C] overwritten; dout [B,T,C]; qkv and saved as given to forward; scratch:
    // call_scratch_floats(). bf16/fp16 activations: dQ/dK/dV written into dqkv directly.
    void backward(const CudaCtx& ctx, Act dqkv, float* scratch, ConstAct dout, ConstAct qkv,
                  const float* saved, int B, int T, int C, int NH, int NKV = 0, int window = 0);

    // "cuDNN 9.19.0 (built for CUDA 13.1) from /usr/local/cuda/lib64/libcudnn.so.9" (logs).
    std::string library() const;
    bool require_deterministic() const { return require_deterministic_; }
    // Some cached plan runs an engine marked NONDETERMINISTIC (only without
    // require_deterministic).
    bool nondeterministic_in_use() const;
    // For the profile (Backend::op_choices): each cached plan's shape, with the engine cuDNN's
    // heuristics gave its forward and its backward and their workspaces, in shape order.
    std::vector<OpChoice> plan_choices() const;
    // Plans alive now: prepared ones plus on-demand ones (<= kOnDemandPlans).
    size_t plans_alive() const { return cache_.size(); }
    size_t on_demand_plans() const { return cache_.on_demand(); }

private:
    struct ShapePlans;

    CudnnAttention(const CudnnApi& api, cudnnContext* handle, Precision p,
                   bool require_deterministic, DeviceAlloc alloc, DeviceFree free);
    // Builds both plans of `s`; nullptr + *why (remembered in refused_ when it depends only on
    // the shape). scratch_limit: refuse (and remember in needs_scratch_) a plan whose op
    // scratch exceeds it.
    std::unique_ptr<ShapePlans> build(const CudaCtx& ctx, const AttnShape& s,
                                      size_t scratch_limit, std::string* why);
    AttnShape plan_for(const CudaCtx& ctx, const AttnShape& call) const;
    // The shape whose saved/scratch sizes bound a call's (call_saved/scratch_floats).
    AttnShape sizing_shape(const AttnShape& call) const;
    ShapePlans& plans_for(const CudaCtx& ctx, const AttnShape& call, const char* who);

    const CudnnApi& api_;
    cudnnContext* handle_;
    Precision precision_;
    bool require_deterministic_;
    DeviceAlloc alloc_;
    DeviceFree free_;
    size_t budget_saved_ = 0, budget_scratch_ = 0;  // set_call_budget
    AttentionPlanCache<ShapePlans> cache_;
    std::map<AttnShape, std::string> refused_;   // shapes no plan can serve, and why
    std::map<AttnShape, size_t> needs_scratch_;  // bucket plans refused for op scratch: bytes
    cudaStream_t evict_stream_ = nullptr;  // of the prepare_call that may evict
};

}  // namespace trt::cuda
