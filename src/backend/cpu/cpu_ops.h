// Private to the CPU backend: the op kernels, one family per .cpp file. Each takes the
// thread count explicitly (the team of its parallel loops, cpu_pool.h; and, for the
// reductions, how their work is partitioned). Shapes and conventions are those of backend.h.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace trt::cpu {

class OnednnGemm;  // cpu_onednn_gemm.h

// cpu_matmul.cpp — cblas_sgemm for every product.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int N, int K, int M, WeightLayout layout, int threads);
// N = 1 (generation's decode step): a matrix-vector product in our own loops (matmul_forward
// and onednn_matmul_forward take it for one row); the rows of W are summed in parts fixed by
// K, so its bits do not depend on `threads`.
void matmul_forward_row(float* out, const float* inp, const float* weight, const float* bias,
                        int K, int M, WeightLayout layout, int threads);
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int N, int K, int M,
                     WeightLayout layout, int threads);
void matmul_gelu_forward(float* pre, float* out, const float* inp, const float* weight,
                         const float* bias, int N, int K, int M, int threads);

// cpu_qmatmul.cpp — a frozen quantised weight (core/base_quant.h), dequantised a tile at
// a time, each value rounded to `round_to` (F32: not rounded; BF16/F16: the low-precision
// modes' one rounding of a matmul operand).
void qmatmul_forward(float* out, const float* inp, const QuantWeight& w, const float* bias, int N,
                     int K, int M, int threads, DType round_to);
void qmatmul_backward(float* dinp, float* dbias, const float* dout, const QuantWeight& w, int N,
                      int K, int M, int threads, DType round_to);
void qencoder_forward(float* out, const int32_t* inputs, const QuantWeight& wte, const float* wpe,
                      int B, int T, int C, int threads, const int32_t* pos);
// The same over rows [m0, m1) of W only (a block of output columns: the low-precision mode's
// wide output head): out[N, 0 : m1-m0] (row stride ldo) = inp · W[m0:m1, :]ᵀ (+ bias[0 :
// m1-m0]); dinp[N,K] = dout[N, 0 : m1-m0] (row stride ldd) · W[m0:m1, :], overwritten.
void qmatmul_rows_forward(float* out, size_t ldo, const float* inp, const QuantWeight& w, int m0,
                          int m1, const float* bias, int N, int K, int threads, DType round_to);
void qmatmul_rows_backward(float* dinp, const float* dout, size_t ldd, const QuantWeight& w, int m0,
                           int m1, int N, int K, int threads, DType round_to);
// Rows [r0, r1) x columns [k0, k1) of w dequantised and rounded once to bf16 (nearest even):
// a panel [r1 - r0, k1 - k0] (row stride ld) for oneDNN's bf16 kernels, rows over the threads.
void dequantise_panel_bf16(const QuantWeight& w, int r0, int r1, int k0, int k1, uint16_t* out,
                           size_t ld, int threads);

// cpu_attention.cpp — multi-head (NKV == NH) and grouped-query (NKV < NH) attention.
// How the per-head products run on fp32 operands:
struct AttentionProducts {
    // By oneDNN's sgemm instead of OpenBLAS's (accel.cpu_matmul; the backend sets it where
    // oneDNN's fp32 kernels are the faster).
    bool onednn_sgemm = false;
    // The bf16 mode on widened operands: P and dS rounded to bf16 before their products, as
    // attention_*_bf16 (and the CUDA bf16 paths) take them.
    bool round_bf16 = false;
};
size_t attention_saved_floats(int B, int T, int C, int NH, int NKV);
size_t attention_scratch_floats(int B, int T, int C, int NH, int NKV, int threads);
// saved: each softmax row's max and 1/sum [B,NH,T,2] (the probabilities are recomputed).
// With dropout (mask != nullptr) the output is P'·V, P' = P ⊙ mask/(1-p); the backward takes
// the same mask and draws P' again. window > 0: query t attends keys s in (t - window, t] only
// (Backend::attention_forward); the backward takes the forward's window. pos [B,T] or null:
// documents (backend.h), query t attends keys t - pos[b,t] .. t only.
void attention_forward(float* out, float* saved, const float* qkv, int B, int T, int C, int NH,
                       int NKV, int threads, const AttentionProducts& how = {},
                       const DropoutMask* mask = nullptr, int window = 0,
                       const int32_t* pos = nullptr);
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                        const float* saved, int B, int T, int C, int NH, int NKV, int threads,
                        const AttentionProducts& how = {}, const DropoutMask* mask = nullptr,
                        int window = 0, const int32_t* pos = nullptr);
// The same on bf16 activations as stored (the bf16 mode with oneDNN's bf16 matmuls,
// cpu_lowp.h): the products by `gemm`'s primitives on the bf16 values (fp32 accumulation;
// out and dq rounded once), softmax and its backward in fp32, P and dS rounded to bf16 for
// their products, dk and dv summed in fp32 and rounded once. The backward's scratch:
// attention_bf16_scratch_floats.
void attention_forward_bf16(OnednnGemm& gemm, uint16_t* out, float* saved, const uint16_t* qkv,
                            int B, int T, int C, int NH, int NKV, int threads,
                            const DropoutMask* mask, int window, const int32_t* pos);
void attention_backward_bf16(OnednnGemm& gemm, uint16_t* dqkv, float* scratch, const uint16_t* dout,
                             const uint16_t* qkv, const float* saved, int B, int T, int C, int NH,
                             int NKV, int threads, const DropoutMask* mask, int window,
                             const int32_t* pos);
size_t attention_bf16_scratch_floats(int B, int T, int C, int NH, int NKV, int threads);
// KV-cached attention of n new rows at positions pos0.. over caches [NKV, max_T, hs]
// (Backend::attention_cached_forward): the rows' K, V stored first, then one causal softmax
// row per (row, head) over cache rows 0 .. its position, as attention_forward's (round_bf16:
// P rounded to bf16 before its product, as the bf16 mode's attention_forward takes it).
void attention_cached_forward(float* out, const float* qkv, float* k_cache, float* v_cache,
                              int pos0, int n, int NH, int NKV, int hs, int max_T, int threads,
                              int window = 0, bool round_bf16 = false);

// cpu_layernorm.cpp
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* w, const float* b, int N, int C, int threads);
void layernorm_backward(float* dinp, float* dw, float* db, const float* dout,
                        const float* inp, const float* w, const float* mean,
                        const float* rstd, int N, int C, int threads);
void residual_layernorm_forward(float* res_out, float* out, float* mean, float* rstd,
                                const float* a, const float* b, const float* bb,
                                const float* w, const float* bias, int N, int C, int threads);

// cpu_rmsnorm.cpp — RMSNorm (LlamaRMSNorm) and its fusion with the residual add.
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* w, int N, int C,
                     float eps, int threads);
void rmsnorm_backward(float* dinp, float* dw, const float* dout, const float* inp,
                      const float* w, const float* rstd, int N, int C, int threads);
void residual_rmsnorm_forward(float* res_out, float* out, float* rstd, const float* a,
                              const float* b, const float* w, int N, int C, float eps,
                              int threads);
// Qwen3's q_norm/k_norm in place on qkv's Q and K heads (backend_ops.def qk_norm_forward);
// W = (NH + 2 NKV) hs.
void qk_norm_forward(float* qkv, float* pre, float* rstd, const float* wq, const float* wk, int N,
                     int NH, int NKV, int hs, float eps, int threads);

// cpu_rope.cpp — rotary position embedding (rotate_half), in place on qkv's Q and K heads.
// pos [B*T] or null: row n's position is pos[n] instead of pos0 + n % T (documents).
void rope_forward(float* qkv, const float* cos, const float* sin, int B, int T, int NH,
                  int NKV, int hs, int pos0, int threads, const int32_t* pos = nullptr);
void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int NH,
                   int NKV, int hs, int pos0, int threads, const int32_t* pos = nullptr);

// cpu_swiglu.cpp — silu(gate) * up on [gate | up] rows.
void swiglu_forward(float* out, const float* inp, int N, int F, int threads);
void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F,
                     int threads);

// cpu_elementwise.cpp — encoder and GELU. gelu_forward/gelu_backward are the elementwise
// units of the fused GELU ops (tests hold them against the reference on their own).
// pos [B*T] or null: row n's wpe row is pos[n] instead of n % T (documents).
void encoder_forward(float* out, const int32_t* inputs, const float* wte, const float* wpe,
                     int B, int T, int C, int threads, const int32_t* pos = nullptr);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* inputs,
                      int B, int T, int C, int threads, const int32_t* pos = nullptr);
void gelu_forward(float* out, const float* inp, size_t n, int threads);
// Column slices: out[n, c0+j] += scale*in[n, j] | out[n, j] = scale*in[n, c0+j] (backend.h).
void add_columns(float* out, const float* in, float scale, int N, int W, int c0, int M,
                 int threads);
void copy_columns(float* out, const float* in, float scale, int N, int W, int c0, int M,
                  int threads);
// ptr[0, bytes) = 0 over the team: a step's gradients are as large as the weights, and one
// thread's memset of them was a serial part of every step (and, in alloc, puts the pages
// where the team's threads first touch them).
void zero_bytes(void* ptr, size_t bytes, int threads);
// out[i] = in[i] · keep(i) / (1 - p) (backend.h; in place allowed).
void dropout(float* out, const float* in, size_t n, const DropoutMask& m, int threads);
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n, int threads);
void gelu_backward_bias(float* dinp, float* dbias, const float* inp, const float* dout, int N,
                        int M, int threads);

// cpu_classifier.cpp
void classifier_forward_backward(float* logits, float* losses, const int32_t* targets, int N,
                                 int V, int Vp, float dloss, bool write_grad, int threads);

// cpu_adamw.cpp — one torch.optim.AdamW step over one tensor (adamw_step runs it per
// segment), and sum_squares (the clipping norm).
struct AdamWParams {
    float lr;
    float beta1, beta2, eps;
    float weight_decay;  // decoupled, torch.optim.AdamW style
    int64_t step;        // 1-based, for bias correction
    float grad_scale;    // grads are multiplied by this first (clipping)
};
// sum of x[i]² in double, deterministic for a fixed thread count.
double sum_squares(const float* x, size_t n, int threads);
void adamw_update(float* params, const float* grads, float* m, float* v, size_t n,
                  const AdamWParams& p, int threads);
// The same on int8 moments (core/q8_moments.h), blocks of kQ8Block in parallel, the decay of
// each element's segment (p.weight_decay unused).
void adamw_update_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8,
                     float* m_scale, float* v_scale, const Q8Tables& tables, size_t n,
                     const ParamSegments& seg, const AdamWParams& p, int threads);

// cpu_step.cpp — the optimizer step on StepScalars (host memory here).
void begin_step(StepScalars* s, float lr, int64_t step);
void accumulate_loss(StepScalars* s, const float* losses, size_t n);
void grad_norm_clip(StepScalars* s, const float* grads, size_t n, float max_norm, int threads);
void adamw_step(float* params, const float* grads, float* m, float* v, size_t n,
                const ParamSegments& seg, const AdamWConfig& hp, const StepScalars* s,
                int threads);
// optim.state_dtype = "int8" (backend.h, core/q8_moments.h): blocks in parallel.
void adamw_step_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8, float* m_scale,
                   float* v_scale, const Q8Tables& tables, size_t n, const ParamSegments& seg,
                   const AdamWConfig& hp, const StepScalars* s, int threads);
void end_step(StepScalars* s, const LossScalePolicy& policy);

// cpu_batches.cpp — micro-batches from host rows or a resident token set.
void load_rows(int32_t* inputs, int32_t* targets, const int32_t* rows, int B, int T);
// Host [B,T] inputs, targets (as they are: -1 ignored) and positions (or null) copied in.
void load_batch(int32_t* inputs, int32_t* targets, int32_t* positions,
                const int32_t* host_inputs, const int32_t* host_targets,
                const int32_t* host_positions, int B, int T);
void sample_window(int32_t* inputs, int32_t* targets, const DeviceTokens& data, int64_t start,
                   int B, int T);
void sample_random(int32_t* inputs, int32_t* targets, const DeviceTokens& data, uint64_t seed,
                   int64_t step, int64_t micro_step, int B, int T, int64_t row0 = 0);

}  // namespace trt::cpu
