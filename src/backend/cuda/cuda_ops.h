// Private to the CUDA backend: the kernel launchers, one family per file under kernels/
// (and cuda_matmul.cu / kernels/attention.cu for cuBLASLt). Shapes and conventions are those
// of backend.h; each launcher is the CUDA twin of the cpu:: function of the same name and is
// tested against it (tests/gpu/). Launchers only enqueue on ctx.stream: no allocation, no
// synchronization, no host read of device values. Every launch is followed by
// TRT_CUDA_LAUNCH_CHECK(). The default path uses no floating-point atomics: every reduction
// has a fixed order, so results are bitwise reproducible run to run (GPU.md).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "backend/backend.h"
#include "core/error.h"

namespace trt::cuda {

struct MatmulState;  // cuBLASLt descriptors/algorithms chosen once per shape (cuda_matmul.cu)

// Everything a launcher may use. Built by CudaBackend; const during a call.
struct CudaCtx {
    cudaStream_t stream = nullptr;
    Precision precision = Precision::Fp32;  // Fp32 | Tf32 | Bf16 | Fp16 (never Auto)
    // Activation storage (Backend::activation_dtype()): F32, or BF16/F16 under precision
    // Bf16/Fp16 with accel.lowp_activations (docs/PRECISION.md). Every Act/ConstAct a launcher
    // gets has this dtype (act_storage() checks it); math is fp32 whatever it is.
    DType act = DType::F32;
    cublasLtHandle_t lt = nullptr;
    void* lt_workspace = nullptr;  // cuBLASLt workspace
    size_t lt_workspace_bytes = 0;
    MatmulState* matmul = nullptr;
    // accel switches the launchers honour (BackendOptions::accel; each has a fallback).
    bool matmul_epilogues = false;  // cuBLASLt bias / bias+GELU / bias-grad epilogues
    bool fused_classifier = true;   // false: softmax, loss and dlogits as separate kernels
    // The matmul attention in its tiled form (kernels/attention.cu): no [B,NH,T,T] state.
    bool tiled_attention = false;
    // Scratch: an op may use all of [scratch, scratch + scratch_bytes) during its call (ops
    // run one after another on one stream). Sized by CudaBackend::reserve from the
    // *_scratch_bytes functions below; 256-byte aligned.
    void* scratch = nullptr;
    size_t scratch_bytes = 0;
    // bf16/fp16 working copy of the registered fp32 master parameters (precision Bf16/Fp16).
    const float* params = nullptr;
    size_t n_params = 0;
    void* params_lowp = nullptr;  // __nv_bfloat16* or __half*, n_params elements

    bool lowp() const { return precision == Precision::Bf16 || precision == Precision::Fp16; }
    // The working copy of w (inside the registered parameters), or nullptr.
    const void* lowp_of(const float* w) const {
        if (!params_lowp || w < params || w >= params + n_params) return nullptr;
        const size_t elem = 2;  // bf16 and fp16 are both 2 bytes
        return static_cast<const char*>(params_lowp) + static_cast<size_t>(w - params) * elem;
    }
};

// The widths ModelDims implies (backend.h): key/value heads (0 means NH), the MLP's hidden
// width F (0 means 4C, GPT-2's) and the qkv row (NH + 2*NKV) * hs (3C when NH does not divide
// C). Every scratch size below derives its widths from these, never from 3C/4C directly.
inline int dims_nkv(const ModelDims& d) { return d.NKV > 0 ? d.NKV : d.NH; }
inline size_t dims_ff(const ModelDims& d) {
    return d.F > 0 ? static_cast<size_t>(d.F) : 4 * static_cast<size_t>(d.C > 0 ? d.C : 0);
}
inline size_t dims_qkv_width(const ModelDims& d) {
    if (d.HS > 0 && d.NH > 0)  // an explicit head_dim (ModelDims::HS)
        return static_cast<size_t>(d.NH + 2 * dims_nkv(d)) * static_cast<size_t>(d.HS);
    if (d.C <= 0) return 0;
    if (d.NH <= 0 || d.C % d.NH != 0) return 3 * static_cast<size_t>(d.C);
    return static_cast<size_t>(d.NH + 2 * dims_nkv(d)) * static_cast<size_t>(d.C / d.NH);
}
// The widest activation a bias gradient / column sum may run over: the qkv row, the MLP's
// hidden width and the stacked [gate | up] (2F) of a SwiGLU MLP.
inline size_t dims_max_width(const ModelDims& d) {
    size_t m = d.C > 0 ? static_cast<size_t>(d.C) : 0;
    if (dims_qkv_width(d) > m) m = dims_qkv_width(d);
    if (static_cast<size_t>(std::max(dims_attention_width(d), 0)) > m)
        m = static_cast<size_t>(dims_attention_width(d));
    if (2 * dims_ff(d) > m) m = 2 * dims_ff(d);
    return m;
}

// Scratch bytes each family needs for the largest micro-batch of dims (max over its ops).
size_t elementwise_scratch_bytes(const ModelDims& d);  // encoder bwd sort, column sums
size_t layernorm_scratch_bytes(const ModelDims& d);    // dw/db partials
size_t rmsnorm_scratch_bytes(const ModelDims& d);      // dw partials
size_t classifier_scratch_bytes(const ModelDims& d);
// bf16/fp16 operand casts (act F32) or the fp32 product chunks of a bias/GELU fallback (act
// BF16/F16, cuda_matmul.cu).
size_t matmul_scratch_bytes(const ModelDims& d, Precision p, DType act);
size_t optimizer_scratch_bytes(size_t n_params, const ModelDims& d);  // reduction partials
size_t sampler_scratch_bytes(const ModelDims& d);

// Activation arguments are Act / ConstAct views (backend.h) in ctx.act: a launcher calls
// act_storage(ctx, {views...}) once and instantiates its kernel for the storage type with
// with_storage (kernels/lowp.cuh). Kernels load through to_f32, compute in fp32 and round
// each value they store once with from_f32<T> (the CPU twin's rounding points,
// docs/PRECISION.md); for T = float both are the identity, so fp32 is bit-identical to before.
// Parameters, statistics, gradients of parameters and losses stay float*.
inline DType act_storage(const CudaCtx& ctx, std::initializer_list<ConstAct> views) {
    for (const ConstAct& v : views)
        TRT_CHECK(!v || v.dtype == ctx.act, "cuda backend: an activation view of dtype ",
                  static_cast<int>(v.dtype), " where the backend stores ",
                  static_cast<int>(ctx.act));
    return ctx.act;
}

// ---- kernels/elementwise.cu
// wpe == nullptr: no position term (rotary models); dwpe == nullptr in the backward likewise.
// pos [B*T] device memory or null: row n's wpe row is pos[n] (documents), not n % T.
void encoder_forward(const CudaCtx& ctx, Act out, const int32_t* inputs, const float* wte,
                     const float* wpe, int B, int T, int C, const int32_t* pos = nullptr);
// Deterministic: positions grouped by token with a stable sort, each token's rows summed in
// position order (no atomics); with pos, dwpe's rows the same way, grouped by position.
void encoder_backward(const CudaCtx& ctx, float* dwte, float* dwpe, ConstAct dout,
                      const int32_t* inputs, int B, int T, int C, const int32_t* pos = nullptr);
void gelu_forward(const CudaCtx& ctx, Act out, ConstAct inp, size_t n);
// out[n, c0+j] += scale*in[n, j] | out[n, j] = scale*in[n, c0+j] (backend.h's column slices)
void add_columns(const CudaCtx& ctx, Act out, ConstAct in, float scale, int N, int W, int c0,
                 int M);
void copy_columns(const CudaCtx& ctx, Act out, ConstAct in, float scale, int N, int W, int c0,
                  int M);
// out[i] = in[i] · keep(i) / (1 - p) (backend.h; in place allowed)
void dropout(const CudaCtx& ctx, Act out, ConstAct in, size_t n, const DropoutMask& m);
// The same on fp32 buffers whatever ctx.act is (attention's probabilities).
void dropout_floats(const CudaCtx& ctx, float* out, const float* in, size_t n,
                    const DropoutMask& m);
void gelu_backward(const CudaCtx& ctx, Act dinp, ConstAct inp, ConstAct dout, size_t n);
void gelu_backward_bias(const CudaCtx& ctx, Act dinp, float* dbias, ConstAct inp,
                        ConstAct dout, int N, int M);
// dst[i] += src[i] (the bias-gradient epilogue's accumulation).
void add_inplace(const CudaCtx& ctx, float* dst, const float* src, size_t n);
// dst[m] += sum over rows n of x[n, m], fixed order (per-block partials in scratch, then
// one ordered pass). Used for every bias gradient.
void column_sums(const CudaCtx& ctx, float* dst, ConstAct x, int N, int M);
// dst[i] = (bf16 or fp16) src[i], round to nearest even; p is Bf16 or Fp16.
void cast_from_f32(const CudaCtx& ctx, void* dst, const float* src, size_t n, Precision p);
void cast_to_f32(const CudaCtx& ctx, float* dst, const void* src, size_t n, Precision p);

// ---- kernels/padded_cast.cu (cuDNN attention's length buckets; twins in padded_rows.h)
// dst [B,Tb,W] bf16/fp16 = src [B,T,W] in rows t < T of each batch, +0 in rows T..Tb-1
// (Tb >= T; p is Bf16 or Fp16).
void cast_padded_from_f32(const CudaCtx& ctx, void* dst, const float* src, int B, int T, int Tb,
                          int W, Precision p);
// dst [B,T,W] fp32 = rows t < T of each batch of src [B,Tb,W] bf16/fp16.
void cast_unpadded_to_f32(const CudaCtx& ctx, float* dst, const void* src, int B, int T, int Tb,
                          int W, Precision p);

// ---- kernels/layernorm.cu
void layernorm_forward(const CudaCtx& ctx, Act out, float* mean, float* rstd,
                       ConstAct inp, const float* w, const float* b, int N, int C);
void layernorm_backward(const CudaCtx& ctx, Act dinp, float* dw, float* db,
                        ConstAct dout, ConstAct inp, const float* w,
                        const float* mean, const float* rstd, int N, int C);
void residual_layernorm_forward(const CudaCtx& ctx, Act res_out, Act out, float* mean,
                                float* rstd, ConstAct a, ConstAct b, const float* bb,
                                const float* w, const float* bias, int N, int C);

// ---- kernels/rmsnorm.cu (HF LlamaRMSNorm; dw reduced like layernorm's: colred, no atomics)
void rmsnorm_forward(const CudaCtx& ctx, Act out, float* rstd, ConstAct inp,
                     const float* w, int N, int C, float eps);
void rmsnorm_backward(const CudaCtx& ctx, Act dinp, float* dw, ConstAct dout,
                      ConstAct inp, const float* w, const float* rstd, int N, int C);
void residual_rmsnorm_forward(const CudaCtx& ctx, Act res_out, Act out, float* rstd,
                              ConstAct a, ConstAct b, const float* w, int N, int C,
                              float eps);

// ---- kernels/rope.cu (rotary embedding in place on the Q and K heads of qkv)
// pos [B*T] device memory or null: row n's position is pos[n] (documents), not pos0 + n % T.
void rope_forward(const CudaCtx& ctx, Act qkv, const float* cos, const float* sin, int B,
                  int T, int NH, int NKV, int hs, int pos0, const int32_t* pos = nullptr);
void rope_backward(const CudaCtx& ctx, Act dqkv, const float* cos, const float* sin, int B,
                   int T, int NH, int NKV, int hs, int pos0, const int32_t* pos = nullptr);

// ---- kernels/swiglu.cu (inp [N, 2F] = [gate | up])
void swiglu_forward(const CudaCtx& ctx, Act out, ConstAct inp, int N, int F);
void swiglu_backward(const CudaCtx& ctx, Act dinp, ConstAct inp, ConstAct dout, int N, int F);

// ---- kernels/classifier.cu
void classifier_forward_backward(const CudaCtx& ctx, Act logits, float* losses,
                                 const int32_t* targets, int N, int V, int Vp, float dloss,
                                 bool write_grad, const StepScalars* scalars);

// ---- cuda_matmul.cu (cuBLASLt; precision from ctx)
MatmulState* create_matmul_state();
void destroy_matmul_state(MatmulState* s);
// For AccelStatus::epilogues_note: per epilogue family (bias, gelu, bias-grad), how many GEMM
// shapes so far run it inside cuBLASLt and how many fell back because cuBLASLt had no
// algorithm for it ("" before any epilogue was tried). Fallbacks decided by the alignment/ld
// rules (cuda_matmul.cu) never reach cuBLASLt and are not counted.
std::string matmul_epilogue_note(const MatmulState* s);
// For the profile (Backend::op_choices): every GEMM plan made so far, in key order — its shape
// in row-major terms, types and epilogue, and cuBLASLt's algorithm (id, tile, stages, split-k,
// reduction scheme, swizzle, custom option) and workspace; "falls back" for a rejected one.
std::vector<OpChoice> matmul_choices(const MatmulState* s);
void matmul_forward(const CudaCtx& ctx, Act out, ConstAct inp, const float* weight,
                    const float* bias, int N, int K, int M, WeightLayout layout);
void matmul_backward(const CudaCtx& ctx, Act dinp, float* dweight, float* dbias,
                     ConstAct dout, ConstAct inp, const float* weight, int N, int K,
                     int M, WeightLayout layout);
void matmul_gelu_forward(const CudaCtx& ctx, Act pre, Act out, ConstAct inp,
                         const float* weight, const float* bias, int N, int K, int M);

// ---- cuda_qmatmul.cu (a quantised base, lora.base_dtype: the twins of cpu_qmatmul.cpp;
// CudaBackend offers them only when asked, AccelOptions::cuda_quantised_base)
// Scratch for the dequantised tiles and casts (0 unless d.quantised_base).
size_t qmatmul_scratch_bytes(const ModelDims& d, Precision p, DType act);
// out[N,M] = inp[N,K] · Wᵀ (+ bias[M]), W = w dequantised ([M, K]).
void qmatmul_forward(const CudaCtx& ctx, Act out, ConstAct inp, const QuantWeight& w,
                     const float* bias, int N, int K, int M);
// dinp[N,K] = dout[N,M] · W (overwritten; skipped if null); dbias[M] += column sums of dout.
void qmatmul_backward(const CudaCtx& ctx, Act dinp, float* dbias, ConstAct dout,
                      const QuantWeight& w, int N, int K, int M);
// out[n] = wte[inputs[n]] dequantised (+ wpe[pos ? pos[n] : n % T]).
void qencoder_forward(const CudaCtx& ctx, Act out, const int32_t* inputs, const QuantWeight& wte,
                      const float* wpe, int B, int T, int C, const int32_t* pos = nullptr);

// ---- kernels/attention.cu (batched GEMM + causal softmax: the portable path)
// NKV key/value heads (grouped-query when NKV < NH; NKV divides NH), qkv [B,T,(NH+2NKV)hs].
// tiled (CudaCtx::tiled_attention): the sizes of the tiled form, which keeps each softmax
// row's {max, 1/sum} instead of the probabilities.
size_t attention_saved_floats(int B, int T, int C, int NH, int NKV, bool tiled = false);
size_t attention_scratch_floats(int B, int T, int C, int NH, int NKV, bool tiled = false);
// mask: attention dropout (the untiled form keeps P' after P in saved; the tiled one draws it
// again in the backward from the same mask). window > 0: a sliding window (query t attends
// keys t-window+1 .. t; Backend::attention_forward); the backward takes the forward's. pos
// [B,T] device memory or null: documents (query t attends keys t - pos[b,t] .. t only).
// ctx.tiled_attention picks the tiled form (attention_forward_tiled / _backward_tiled).
void attention_forward(const CudaCtx& ctx, Act out, float* saved, ConstAct qkv, int B,
                       int T, int C, int NH, int NKV, const DropoutMask* mask = nullptr,
                       int window = 0, const int32_t* pos = nullptr);
void attention_backward(const CudaCtx& ctx, Act dqkv, float* scratch, ConstAct dout,
                        ConstAct qkv, const float* saved, int B, int T, int C, int NH,
                        int NKV, const DropoutMask* mask = nullptr, int window = 0,
                        const int32_t* pos = nullptr);
// The tiled form: [bc,NH,T,T] tiles of attention_tile_seqs() sequences; the forward's tiles
// live in ctx.scratch (attention_tiled_ctx_scratch_bytes), the backward's in scratch.
int attention_tile_seqs(int B, int T, int NH);
size_t attention_tiled_ctx_scratch_bytes(const ModelDims& d, Precision p);
void attention_forward_tiled(const CudaCtx& ctx, Act out, float* saved, ConstAct qkv, int B,
                             int T, int C, int NH, int NKV, const DropoutMask* mask, int window,
                             const int32_t* pos = nullptr);
void attention_backward_tiled(const CudaCtx& ctx, Act dqkv, float* scratch, ConstAct dout,
                              ConstAct qkv, const float* saved, int B, int T, int C, int NH,
                              int NKV, const DropoutMask* mask, int window,
                              const int32_t* pos = nullptr);

// ---- kernels/attention_cached.cu (generation: n new rows over fp32 K/V caches)
// One row of fp32 scores in the default 48 KiB of shared memory, beside the kernel's 16 bytes
// of reduction scratch: the longest cache it takes.
inline constexpr int kCachedAttentionMaxKeys = (48 * 1024 - 16) / 4 - 8;  // - padding
// pos_at (device memory, or null): the first row's position, read when the kernels run
// (pos0 is then ignored; a position outside the cache leaves everything untouched).
void attention_cached_forward(const CudaCtx& ctx, Act out, ConstAct qkv, float* k_cache,
                              float* v_cache, int pos0, int n, int NH, int NKV, int hs, int max_T,
                              int window = 0, const int32_t* pos_at = nullptr);

// ---- kernels/optimizer.cu
void begin_step(const CudaCtx& ctx, StepScalars* s, float lr, int64_t step);
void accumulate_loss(const CudaCtx& ctx, StepScalars* s, const float* losses, size_t n);
void grad_norm_clip(const CudaCtx& ctx, StepScalars* s, const float* grads, size_t n,
                    float max_norm);
// params_lowp: the working copy to refresh (nullptr = none), element type from ctx.precision.
void adamw_step(const CudaCtx& ctx, float* params, void* params_lowp, const float* grads,
                float* m, float* v, size_t n, const ParamSegments& seg, const AdamWConfig& hp,
                const StepScalars* s);
void adamw_step_q8(const CudaCtx& ctx, float* params, void* params_lowp, const float* grads,
                   uint8_t* m8, uint8_t* v8, float* m_scale, float* v_scale,
                   const Q8Tables* tables, size_t n, const ParamSegments& seg,
                   const AdamWConfig& hp, const StepScalars* s);
void end_step(const CudaCtx& ctx, StepScalars* s, const LossScalePolicy& policy);

// ---- kernels/sampler.cu
// rows [B, T+1] (device) → inputs/targets [B, T].
void split_rows(const CudaCtx& ctx, int32_t* inputs, int32_t* targets, const int32_t* rows,
                int B, int T);
// ---- kernels/draw_token.cu: generation's next token, with the host's arithmetic
// (core/token_draw.h). out [2] in device memory; scratch: draw_token_scratch_bytes.
size_t draw_token_scratch_bytes(const ModelDims& d);
void draw_token(const CudaCtx& ctx, int32_t* out, ConstAct logits, int V, const TokenDraw& d);

// start: device memory. A window outside the token set writes token 0 (see the kernel).
void sample_window(const CudaCtx& ctx, int32_t* inputs, int32_t* targets,
                   const DeviceTokens& data, const int64_t* start, int B, int T);
// The step is read from s->step on the device.
void sample_random(const CudaCtx& ctx, int32_t* inputs, int32_t* targets,
                   const DeviceTokens& data, uint64_t seed, const StepScalars* s,
                   int64_t micro_step, int B, int T, int64_t row0 = 0);

}  // namespace trt::cuda
