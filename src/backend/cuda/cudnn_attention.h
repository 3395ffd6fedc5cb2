// Causal self-attention through cuDNN's fused (flash-attention class) SDPA kernels, the
// accel.attention = "cudnn" path of the CUDA backend for bf16/fp16 on sm_80+. The backend owns
// one CudnnAttention and falls back to the matmul attention (kernels/attention.cu) whenever
// create() or prepare() says no, keeping the reason for accel_status().attention_note.
// docs/CUDNN_ATTENTION.md describes the graphs, layouts and fallback rules.
//
// Contract of forward/backward: exactly Backend::attention_forward/backward (backend.h), with
// this class's own saved/scratch sizes. They only enqueue on ctx.stream (no allocation, no
// synchronization), so they may run inside CUDA graph capture.
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "backend/cuda/cuda_ops.h"

struct cudnnContext;  // cuDNN's handle type (cudnnHandle_t = cudnnContext*): no header needed

namespace trt::cuda {

struct CudnnApi;

// The backend's allocator (zero-filled device memory, enqueued on ctx.stream; freed with the
// backend). Throws trt::Error on failure.
using DeviceAlloc = std::function<void*(size_t bytes, const char* what)>;

class CudnnAttention {
public:
    // nullptr + *why when cuDNN cannot serve: precision not Bf16/Fp16, device below sm_80,
    // libcudnn missing or too old (cudnn_loader.h), handle creation failed. Call with `device`
    // current; creates a cudnnHandle_t on it. Never throws.
    static std::unique_ptr<CudnnAttention> create(int device, Precision p, std::string* why);
    ~CudnnAttention();  // never throws
    CudnnAttention(const CudnnAttention&) = delete;
    CudnnAttention& operator=(const CudnnAttention&) = delete;

    // Builds and caches the forward and backward execution plans for (B,T,C,NH): host work,
    // except that the padded-sequence workaround (cuDNN <= 9.15, T % 128 != 0) allocates a
    // [B] int32 sequence-length buffer through alloc and fills it on ctx.stream. Must not run
    // while ctx.stream is being captured. false + *why when no engine serves the shape (head
    // size not a multiple of 8 or above 128, no deterministic engine, finalize failure...);
    // a refused shape is remembered and refused again at no cost. Never throws.
    bool prepare(const CudaCtx& ctx, int B, int T, int C, int NH, const DeviceAlloc& alloc,
                 std::string* why);
    bool prepared(int B, int T, int C, int NH) const;

    // Floats of Backend::attention_forward's `saved`: the bf16/fp16 output O [B,T,C] (the
    // backward needs it as cuDNN computed it) and the softmax statistics [B,NH,T] fp32.
    static size_t saved_floats(int B, int T, int C, int NH);
    // Floats of Backend::attention_backward's `scratch`: rowsum(dO * O) [B,NH,T] fp32.
    static size_t scratch_floats(int B, int T, int C, int NH);
    // Bytes of ctx.scratch forward/backward use for a prepared shape (the bf16/fp16 copies of
    // qkv, dout and dqkv, plus the plans' workspaces). Error(Internal) for an unprepared one.
    size_t ctx_scratch_bytes(int B, int T, int C, int NH) const;

    // qkv [B,T,3C] fp32 -> out [B,T,C] fp32; saved: saved_floats(). Error(Internal) if the
    // shape is not prepared or ctx.scratch is smaller than ctx_scratch_bytes();
    // Error(Device) with cuDNN's message if execution fails.
    void forward(const CudaCtx& ctx, float* out, float* saved, const float* qkv, int B, int T,
                 int C, int NH);
    // dqkv [B,T,3C] fp32 overwritten; dout [B,T,C]; qkv and saved as given to forward;
    // scratch: scratch_floats().
    void backward(const CudaCtx& ctx, float* dqkv, float* scratch, const float* dout,
                  const float* qkv, const float* saved, int B, int T, int C, int NH);

    // "cuDNN 9.19.0 (built for CUDA 13.1) from /usr/local/cuda/lib64/libcudnn.so.9" (logs).
    std::string library() const;

private:
    struct ShapePlans;
    using Key = std::array<int, 4>;  // B, T, C, NH

    CudnnAttention(const CudnnApi& api, cudnnContext* handle, Precision p);
    const ShapePlans& plans_for(int B, int T, int C, int NH, const char* who) const;

    const CudnnApi& api_;
    cudnnContext* handle_;
    Precision precision_;
    std::map<Key, std::unique_ptr<ShapePlans>> plans_;
    std::map<Key, std::string> refused_;
};

}  // namespace trt::cuda
