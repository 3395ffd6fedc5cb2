// Backend: device memory plus the op set the model is written against (ARCHITECTURE.md).
// The GPT orchestration (src/model/gpt.cpp) calls these in order and never knows which
// backend it drives. Pointers are backend memory (host memory on the CPU backend).
// All tensors are contiguous row-major fp32. N = B*T positions.
//
// Accumulation convention: gradients of *parameters* always accumulate (+=), so grad
// accumulation over micro-batches needs no extra pass; gradients of *activations* are
// overwritten unless the op says "+=".
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace trt {

// How a matmul weight is stored. InOut = HF Conv1D [K, M] (y = x·W); OutIn = [M, K]
// (y = x·Wᵀ, e.g. the tied wte [V, C] as the output projection).
enum class WeightLayout { InOut, OutIn };

struct AdamWParams {
    float lr;
    float beta1, beta2, eps;
    float weight_decay;  // decoupled, torch.optim.AdamW style
    int64_t step;        // 1-based, for bias correction
    float grad_scale;    // grads are multiplied by this first (clipping)
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual const char* name() const = 0;
    virtual int num_threads() const = 0;  // host threads the backend's ops use

    // ---- memory
    virtual void* alloc(size_t bytes) = 0;  // zero-filled; Error(OutOfMemory) on failure
    virtual void free(void* ptr) = 0;       // accepts nullptr
    virtual void zero(void* ptr, size_t bytes) = 0;
    virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
    virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
    virtual void synchronize() = 0;
    virtual size_t bytes_in_use() const = 0;

    // ---- ops
    // out[n,:] = wte[inputs[n],:] + wpe[n % T,:]
    virtual void encoder_forward(float* out /*[N,C]*/, const int32_t* inputs /*[N]*/,
                                 const float* wte /*[V,C]*/, const float* wpe /*[>=T,C]*/,
                                 int B, int T, int C) = 0;
    // dwte[inputs[n]] += dout[n]; dwpe[t] += sum_b dout[b,t]
    virtual void encoder_backward(float* dwte, float* dwpe, const float* dout /*[N,C]*/,
                                  const int32_t* inputs /*[N]*/, int B, int T, int C) = 0;

    // out = (inp - mean) * rstd * w + b over the last dim, eps 1e-5; saves mean, rstd.
    virtual void layernorm_forward(float* out /*[N,C]*/, float* mean /*[N]*/,
                                   float* rstd /*[N]*/, const float* inp /*[N,C]*/,
                                   const float* w /*[C]*/, const float* b /*[C]*/, int N,
                                   int C) = 0;
    // dinp += ..., dw += ..., db += ...
    virtual void layernorm_backward(float* dinp /*[N,C] +=*/, float* dw /*[C]*/,
                                    float* db /*[C]*/, const float* dout /*[N,C]*/,
                                    const float* inp, const float* w, const float* mean,
                                    const float* rstd, int N, int C) = 0;

    // out[N,M] = inp[N,K] · W (+ bias[M] if bias != nullptr)
    virtual void matmul_forward(float* out, const float* inp, const float* weight,
                                const float* bias, int N, int K, int M,
                                WeightLayout layout) = 0;
    // dinp[N,K] = dout · Wᵀ (overwritten; skipped if dinp == nullptr);
    // dweight += inpᵀ · dout (in the weight's layout); dbias[M] += column sums (if non-null)
    virtual void matmul_backward(float* dinp, float* dweight, float* dbias,
                                 const float* dout /*[N,M]*/, const float* inp /*[N,K]*/,
                                 const float* weight, int N, int K, int M,
                                 WeightLayout layout) = 0;

    // Causal multi-head self-attention. qkv[B,T,3C] holds Q, K, V blocks along the last dim,
    // head h at columns [h*hs, (h+1)*hs) of each block, hs = C/NH; scale 1/sqrt(hs).
    // saved receives attention_saved_floats() floats the backward needs.
    virtual size_t attention_saved_floats(int B, int T, int C, int NH) const = 0;
    virtual void attention_forward(float* out /*[B,T,C]*/, float* saved,
                                   const float* qkv /*[B,T,3C]*/, int B, int T, int C,
                                   int NH) = 0;
    // dqkv overwritten. scratch: attention_scratch_floats() floats.
    virtual size_t attention_scratch_floats(int B, int T, int C, int NH) const = 0;
    virtual void attention_backward(float* dqkv /*[B,T,3C]*/, float* scratch,
                                    const float* dout /*[B,T,C]*/, const float* qkv,
                                    const float* saved, int B, int T, int C, int NH) = 0;

    // GELU, tanh approximation: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x³)))
    virtual void gelu_forward(float* out, const float* inp, size_t n) = 0;
    virtual void gelu_backward(float* dinp /*overwritten*/, const float* inp,
                               const float* dout, size_t n) = 0;

    virtual void residual_forward(float* out, const float* a, const float* b, size_t n) = 0;
    virtual void add_inplace(float* dst /* += src */, const float* src, size_t n) = 0;

    // ---- fused ops (one pass / one parallel region instead of two or three). Each equals
    // the op sequence it names, up to float rounding of the reordered bias addition.
    //
    // res_out[n,:] = a[n,:] + b[n,:] (+ bb[:] if bb != nullptr), then
    // layernorm_forward(out, mean, rstd, res_out, w, bias, N, C). res_out is written (it is
    // the next residual stream and the layernorm's saved input). bb lets a matmul that feeds
    // the residual skip its own bias pass (matmul_forward with bias = nullptr).
    virtual void residual_layernorm_forward(float* res_out /*[N,C]*/, float* out /*[N,C]*/,
                                            float* mean /*[N]*/, float* rstd /*[N]*/,
                                            const float* a /*[N,C]*/, const float* b /*[N,C]*/,
                                            const float* bb /*[C] or null*/,
                                            const float* w /*[C]*/, const float* bias /*[C]*/,
                                            int N, int C) = 0;
    // pre[N,M] = inp[N,K] · W[K,M] + bias[M] (InOut layout; bias may be null), then
    // out[N,M] = gelu(pre). pre is kept for gelu_backward_bias.
    virtual void matmul_gelu_forward(float* pre /*[N,M]*/, float* out /*[N,M]*/,
                                     const float* inp /*[N,K]*/, const float* weight /*[K,M]*/,
                                     const float* bias /*[M] or null*/, int N, int K,
                                     int M) = 0;
    // dinp[N,M] = gelu'(inp) * dout (overwritten), and dbias[M] += column sums of dinp over
    // the N rows (if dbias != nullptr) — the dbias of the matmul whose output was inp, so
    // that matmul_backward can be called with dbias = nullptr.
    virtual void gelu_backward_bias(float* dinp /*[N,M]*/, float* dbias /*[M] += or null*/,
                                    const float* inp /*[N,M]*/, const float* dout /*[N,M]*/,
                                    int N, int M) = 0;

    // Softmax cross-entropy over the first V of Vp columns of each row of logits.
    // losses[n] = -log softmax(logits[n])[targets[n]]. If write_grad, logits is overwritten
    // with dloss * (softmax - onehot(target)) (columns >= V get 0). targets in [0, V).
    virtual void classifier_forward_backward(float* logits /*[N,Vp] inout*/,
                                             float* losses /*[N]*/,
                                             const int32_t* targets /*[N]*/, int N, int V,
                                             int Vp, float dloss, bool write_grad) = 0;

    // sum of x[i]^2 in double, deterministic for a fixed thread count.
    virtual double sum_squares(const float* x, size_t n) = 0;

    // One torch.optim.AdamW step over n elements (grads scaled by p.grad_scale first).
    virtual void adamw_update(float* params, const float* grads, float* m, float* v, size_t n,
                              const AdamWParams& p) = 0;
};

// CPU backend: OpenBLAS sgemm for every matmul, OpenMP elsewhere. threads <= 0 = all cores.
std::unique_ptr<Backend> make_cpu_backend(int threads);

}  // namespace trt
