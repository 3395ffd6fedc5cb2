// Backend: device memory plus the op set the model is written against (ARCHITECTURE.md).
// The decoder (src/model/decoder.cpp) calls these in order and never knows which backend it
// drives. Only what the model and the session issue belongs here: an op a kernel needs
// internally, or one only a test calls, stays inside its backend (cpu_ops.h, cuda_ops.h). Pointers are backend memory (host memory on the CPU backend).
// All tensors are contiguous row-major. N = B*T positions. Parameters, their gradients, norm
// statistics, losses and optimizer state are fp32 (float*); activations and their gradients
// are Act / ConstAct views in the backend's activation_dtype() (fp32, or bf16 on a backend
// computing in bf16), read into fp32 math and rounded once where an op stores them.
//
// Accumulation convention: gradients of *parameters* always accumulate (+=), so grad
// accumulation over micro-batches needs no extra pass; gradients of *activations* are
// overwritten unless the op says "+=".
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "config/run_config.h"
#include "core/dtype.h"
#include "core/q8_moments.h"
#include "core/error.h"

namespace trt {

// Bump whenever anything in this header changes shape (a method, a struct): the CUDA module
// is a separate shared object that implements Backend, and the loader refuses a module built
// against another version of this interface (src/backend/cuda_module.h).
constexpr uint32_t kBackendInterfaceVersion = 15;  // 15: classifier targets may be -1; 14: pos

// A target id that is not a target (instruction tuning trains on some tokens only): the
// position is an input, its loss is 0 and its logits get no gradient.
constexpr int32_t kIgnoredTarget = -1;

// A view of an activation buffer in backend memory: where it starts and what its elements
// are. A float* converts implicitly (an fp32 buffer), so fp32 call sites read as plain
// pointers; a backend refuses a view whose dtype is not its activation_dtype().
struct Act {
    void* data = nullptr;
    DType dtype = DType::F32;
    Act() = default;
    Act(std::nullptr_t) {}
    Act(float* p) : data(p) {}
    Act(void* p, DType d) : data(p), dtype(d) {}
    explicit operator bool() const { return data != nullptr; }
    // The view that starts `elements` further on.
    Act at(size_t elements) const {
        return {static_cast<char*>(data) + elements * float_dtype_size(dtype), dtype};
    }
};
struct ConstAct {
    const void* data = nullptr;
    DType dtype = DType::F32;
    ConstAct() = default;
    ConstAct(std::nullptr_t) {}
    ConstAct(const float* p) : data(p) {}
    ConstAct(const void* p, DType d) : data(p), dtype(d) {}
    ConstAct(Act a) : data(a.data), dtype(a.dtype) {}
    explicit operator bool() const { return data != nullptr; }
    ConstAct at(size_t elements) const {
        return {static_cast<const char*>(data) + elements * float_dtype_size(dtype), dtype};
    }
};

// How a matmul weight is stored. InOut = HF Conv1D [K, M] (y = x·W); OutIn = [M, K]
// (y = x·Wᵀ, e.g. the tied wte [V, C] as the output projection).
enum class WeightLayout { InOut, OutIn };

// Per-step scalars that live in backend memory, so nothing inside a step needs the host
// (ARCHITECTURE.md): the host writes lr/step with begin_step, the ops read them from here, and
// the host reads the outputs back asynchronously (read_scalars_async). Plain data, the same
// layout in host and device code. Initialise a fresh one by copying a default-constructed
// StepScalars into it (alloc zero-fills, and a loss_scale of 0 would zero every gradient).
struct StepScalars {
    // ---- inputs (begin_step)
    float lr = 0;
    float loss_scale = 1;        // the gradients carry this factor (fp16 dynamic scaling)
    int64_t step = 0;            // 1-based, AdamW bias correction
    // ---- outputs
    double loss_sum = 0;         // sum of per-position losses of this step's micro-batches
    double grad_norm = 0;        // global L2 norm of the unscaled gradient, before clipping
    float clip_scale = 1;        // factor applied to the unscaled gradient (1 = not clipped)
    int32_t nonfinite = 0;       // 1: the gradient was not finite; the update was skipped
    int64_t skipped_steps = 0;   // running count of skipped updates (never reset)
    int32_t good_steps = 0;      // finite steps since the loss scale last changed
    int32_t reserved0 = 0;
};
static_assert(sizeof(StepScalars) == 56, "StepScalars layout is shared with device code");

// grad_norm_clip's outputs from the gradient's sum of squares (the CPU's, and ZeRO-1's sum of
// its shards'): clip_grad_norm_'s coef = max_norm / (norm + 1e-6), applied only when < 1.
inline void set_grad_norm(StepScalars* s, double sum_squares, float max_norm) {
    s->nonfinite = std::isfinite(sum_squares) ? 0 : 1;
    s->grad_norm = std::sqrt(sum_squares) / static_cast<double>(s->loss_scale);
    s->clip_scale = 1.0f;
    if (max_norm > 0.0f && !s->nonfinite) {
        const double coef = static_cast<double>(max_norm) / (s->grad_norm + 1e-6);
        if (coef < 1.0) s->clip_scale = static_cast<float>(coef);
    }
}

// One dropout site's mask for one micro-batch (core/dropout_mask.h): element i is kept iff
// its Philox lane, keyed by (seed, scalars->step, micro_step, site, index0 + i), clears
// floor(p·2³²); a kept element is scaled by 1/(1-p). The step is read from backend memory, so
// a replayed graph draws the step's own mask.
struct DropoutMask {
    float p = 0;                           // drop probability, [0, 1)
    uint64_t seed = 0;                     // model.seed
    const StepScalars* scalars = nullptr;  // backend memory: the step
    uint32_t micro_step = 0;               // the micro-batch within the step
    uint32_t site = 0;                     // which dropout of the model (model/dropout_sites.h)
    uint64_t index0 = 0;                   // stream index of element 0 (0 but in chunked calls)
};

// AdamW hyper-parameters that do not change during a run. lr and step come from StepScalars.
struct AdamWConfig {
    float beta1, beta2, eps;
};

// Flat parameter buffer as tensors for the fused AdamW: tensor i covers elements
// [ends[i-1], ends[i]) (ends[-1] = 0) and decays with weight_decay[i]. Both arrays are in
// backend memory (the optimizer uploads them once).
struct ParamSegments {
    const int64_t* ends = nullptr;       // [count], strictly increasing, last = n
    const float* weight_decay = nullptr;  // [count]
    int32_t count = 0;
};

// Dynamic loss scaling (torch.cuda.amp.GradScaler semantics) for end_step.
struct LossScalePolicy {
    bool dynamic = false;       // false: loss_scale stays as it is
    float growth_factor = 2.0f;
    float backoff_factor = 0.5f;
    int32_t growth_interval = 2000;  // consecutive finite steps before the scale grows
};

// A token set resident in backend memory: shards concatenated, ids as uint16 (llm.c shards).
struct DeviceTokens {
    const uint16_t* tokens = nullptr;      // [total]
    const int64_t* shard_starts = nullptr;  // [num_shards + 1], backend memory
    int32_t num_shards = 0;
    int64_t total = 0;
    // Valid random-window starts per shard, max(0, n_shard - T), summed (the random sampler's
    // W), computed by the host for T = windows_T; sample_random refuses any other T.
    uint64_t random_windows = 0;
    int64_t windows_T = 0;
};

// Model dimensions, so a backend can size its scratch once, before the first step.
// NKV: key/value heads (grouped-query attention; NKV == NH for GPT-2, 0 means NH). F: the
// MLP's hidden width (GPT-2 4C; Llama d_ff, gate and up each F wide); 0 means 4C.
struct ModelDims {
    int B = 0, T = 0, C = 0, NH = 0, V = 0, L = 0;
    int NKV = 0, F = 0;
    // Sliding-window attention (Mistral): each query sees the last `window` keys; 0 = none.
    int window = 0;
    // The head size (config.json's head_dim); 0 means C / NH. Qwen3's NH·HS differs from C:
    // the attention's heads are NH·HS wide, o_proj maps them back to C.
    int HS = 0;
    // The model drops attention probabilities (attention_dropout_forward): a backend with a
    // fused attention that cannot draw those masks sizes for its matmul path.
    bool attention_dropout = false;
    // The batches may carry positions (documents: packed examples, the `pos` of the ops): a
    // backend whose fused attention cannot mask them sizes for its matmul path.
    bool documents = false;
    // The Llama shape: the MLP's up projection is [gate | up] (2F wide) and the linear weights
    // are [out, in] (WeightLayout::OutIn); else GPT-2's F-wide c_fc and [in, out] weights.
    bool gated_mlp = false;
    // Some block's MLP up-projection bias is frozen (GPT-2 c_fc.bias under LoRA or
    // train.trainable): gelu_backward_bias runs there without a bias gradient.
    bool frozen_up_bias = false;
};

// The head size and the attention's width (the NH heads side by side: attention's out, and
// o_proj's input), from ModelDims (C when HS is 0).
inline int dims_head_size(const ModelDims& d) { return d.HS > 0 ? d.HS : (d.NH > 0 ? d.C / d.NH : 0); }
inline int dims_attention_width(const ModelDims& d) { return d.HS > 0 ? d.NH * d.HS : d.C; }

// The accel.* switches a backend honours itself (the session handles cuda_graphs and
// fused_adamw). Each one has a correct slower path; a backend that cannot honour a switch
// says so in accel_status() instead of failing.
struct AccelOptions {
    bool cudnn_attention = false;  // accel.attention = "cudnn": cuDNN fused SDPA (bf16/fp16)
    // Grouped-query attention on cuDNN too (K/V with NKV heads read in place). Only when
    // accel.attention = "cudnn" is written: not yet run on a GPU, so "auto" keeps grouped-query
    // models on the matmul path until a GPU check has verified it (docs/STATUS.md).
    bool cudnn_grouped_query = false;
    // A sliding window shorter than T on cuDNN too (the band mask of cudnn_sdpa_graph.h). The
    // same rule: only when accel.attention = "cudnn" is written, until a GPU check verifies it.
    bool cudnn_sliding_window = false;
    // CUDA's matmul attention in its tiled form (no [B,NH,T,T] probabilities kept between the
    // passes; kernels/attention.cu). Not yet run on a GPU: off unless asked for, here or by
    // TRAINRT_CUDA_TILED_ATTENTION=1. The CPU's attention is always tiled.
    bool tiled_matmul_attention = false;
    bool matmul_epilogues = false; // bias / bias+GELU / bias-grad inside cuBLASLt matmuls
    bool fused_classifier = true;  // logits -> loss and dlogits in one pass
    // accel.deterministic: false lets the cuDNN attention pick engines marked nondeterministic
    // (the only nondeterministic kernels there are; every other kernel is deterministic either
    // way). The CPU backend is always deterministic and ignores it.
    bool deterministic = true;
    // accel.lowp_activations: under bf16/fp16, a backend whose activations are otherwise fp32
    // (CUDA) stores them in the low precision (docs/PRECISION.md). The CPU's bf16/fp16 always
    // store them so and ignore it.
    bool lowp_activations = false;
};

// What a backend is created with.
struct BackendOptions {
    int threads = 0;                       // CPU: 0 = all cores
    Precision precision = Precision::Fp32; // resolved (never Auto)
    int device = 0;                        // CUDA device ordinal
    AccelOptions accel;
};

// What a backend actually does with AccelOptions, for the session's startup log. A note says
// why a requested path is not taken, or what serves it when it is (attention: the cuDNN
// library and version); "" when there is nothing to say.
struct AccelStatus {
    std::string attention = "matmul";  // "matmul" | "cudnn"
    std::string attention_note;
    bool matmul_epilogues = false;
    std::string epilogues_note;
    bool fused_classifier = true;
    bool graphs = false;  // supports_graphs()
    // Whether run-to-run bitwise equality is promised (false only when AccelOptions allowed
    // nondeterministic engines), and what that allowance does now ("" when on).
    bool deterministic = true;
    std::string deterministic_note;
    // What the precision means on this device, when worth saying (the CPU: whether it has
    // native bf16, and what bf16 costs there).
    std::string precision_note;
    // The CPU: which library its matmuls run on ("onednn" or "openblas", accel.cpu_matmul),
    // and oneDNN's implementation or why not oneDNN. "" elsewhere.
    std::string cpu_matmul;
    std::string cpu_matmul_note;
};

// What a backend is, for the choices the session makes (never by comparing its name).
struct BackendCaps {
    // Its memory is apart from the host's: a train split resident there saves a host copy
    // per micro-batch (data.placement = "auto" takes "device").
    bool device_memory = false;
    // No path that accel.deterministic = false could make nondeterministic.
    bool always_deterministic = true;
    // No unfused classifier: accel.fused_classifier = false changes nothing.
    bool always_fused_classifier = true;
    // It has a cuDNN attention path and matmul epilogues (accel.attention = "cudnn",
    // accel.matmul_epilogues can apply; accel_status() says whether they are taken).
    bool cudnn_attention = false;
    bool matmul_epilogues = false;
    // attention_cached_forward is verified on this backend, so sampling keeps a KV cache
    // (otherwise it recomputes the whole window per token: same tokens, slower).
    bool cached_attention = false;
    // The longest cache attention_cached_forward takes (positions); 0: no limit. Longer
    // windows sample without the cache.
    int cached_attention_max_positions = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual BackendCaps capabilities() const { return BackendCaps{}; }
    virtual const char* name() const = 0;
    virtual int num_threads() const = 0;  // host threads the backend's ops use
    // The hardware, e.g. "NVIDIA H100 80GB HBM3" (the peak-FLOPs table keys on it).
    virtual std::string device_name() const { return name(); }
    // Valid after reserve(): attention and epilogue choices may depend on the shapes.
    virtual AccelStatus accel_status() const { return AccelStatus{}; }

    // The element type of every activation view the ops take (Act, ConstAct): fp32, or bf16
    // on a CPU backend computing in bf16. The model lays its activations out in it.
    virtual DType activation_dtype() const { return DType::F32; }

    // ---- memory
    // Zero-filled; Error(OutOfMemory) naming `what` and the size on failure.
    virtual void* alloc(size_t bytes, const char* what = "buffer") = 0;
    virtual void free(void* ptr) = 0;       // accepts nullptr
    virtual void zero(void* ptr, size_t bytes) = 0;
    virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
    virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
    virtual void synchronize() = 0;
    virtual size_t bytes_in_use() const = 0;
    virtual size_t bytes_reserved() const { return bytes_in_use(); }  // incl. allocator slack

    // Sizes the backend's own scratch (casts, reductions, GEMM workspace, batch staging) for
    // micro-batches up to dims.B x dims.T, so no step allocates. REQUIRED before the first op
    // on an asynchronous backend (ops larger than the reserved dims throw Internal); the
    // model calls it. A no-op on the CPU.
    virtual void reserve(const ModelDims& dims) {}
    // The flat fp32 master parameters. A backend computing in bf16/fp16 keeps a working copy
    // of this range, refreshed by adamw_step and after any copy_to_device into
    // it; freeing the buffer unregisters it.
    virtual void register_params(const float* params, size_t n) {}
    // Bytes register_params(n) allocates for that working copy (0: none), so a memory
    // estimate can count it without building the model.
    virtual size_t working_copy_bytes(size_t n) const { return 0; }
    // Bytes the ops keep as scratch of their own for a model of these dims (the CPU's
    // low-precision row chunks; 0: none, or what reserve() allocates), for the same estimate.
    virtual size_t op_scratch_bytes(const ModelDims& dims) const { return 0; }

    // ---- ops
    // Documents (packed examples). Several ops take a trailing `pos`: int32 [B,T] in backend
    // memory, or nullptr. pos[b,t] = 0 begins an example, else pos[b,t] = pos[b,t-1] + 1 (the
    // caller validates that). Row t of sequence b then has position pos[b,t] (the encoder's
    // wpe row, RoPE's angle), and attends only keys s of its own example:
    // t - pos[b,t] <= s <= t (intersected with a sliding window). nullptr: one example per
    // row, positions t (the same bits as before pos existed).
    //
    // out[n,:] = wte[inputs[n],:] + wpe[p(n),:], p(n) = n % T, or pos[n] when given; wpe ==
    // nullptr (rotary models): no position term.
    virtual void encoder_forward(Act out /*[N,C]*/, const int32_t* inputs /*[N]*/,
                                 const float* wte /*[V,C]*/, const float* wpe /*[>=T,C] or null*/,
                                 int B, int T, int C,
                                 const int32_t* pos = nullptr /*[B,T] or null*/) = 0;
    // dwte[inputs[n]] += dout[n]; dwpe[p(n)] += dout[n] (p as above; each element sums its
    // rows in n order). Each is skipped when null (no position table; a frozen token
    // embedding).
    virtual void encoder_backward(float* dwte /*or null*/, float* dwpe /*or null*/,
                                  ConstAct dout /*[N,C]*/, const int32_t* inputs /*[N]*/,
                                  int B, int T, int C,
                                  const int32_t* pos = nullptr /*[B,T] or null*/) = 0;

    // out = (inp - mean) * rstd * w + b over the last dim, eps 1e-5; saves mean, rstd.
    virtual void layernorm_forward(Act out /*[N,C]*/, float* mean /*[N]*/,
                                   float* rstd /*[N]*/, ConstAct inp /*[N,C]*/,
                                   const float* w /*[C]*/, const float* b /*[C]*/, int N,
                                   int C) = 0;
    // dinp += ..., dw += ..., db += ...
    virtual void layernorm_backward(Act dinp /*[N,C] +=*/, float* dw /*[C]*/,
                                    float* db /*[C]*/, ConstAct dout /*[N,C]*/,
                                    ConstAct inp, const float* w, const float* mean,
                                    const float* rstd, int N, int C) = 0;

    // out[N,M] = inp[N,K] · W (+ bias[M] if bias != nullptr)
    virtual void matmul_forward(Act out, ConstAct inp, const float* weight,
                                const float* bias, int N, int K, int M,
                                WeightLayout layout) = 0;
    // dinp[N,K] = dout · Wᵀ (overwritten; skipped if dinp == nullptr);
    // dweight += inpᵀ · dout (in the weight's layout; skipped if nullptr: a frozen weight);
    // dbias[M] += column sums (if non-null)
    virtual void matmul_backward(Act dinp, float* dweight, float* dbias,
                                 ConstAct dout /*[N,M]*/, ConstAct inp /*[N,K]*/,
                                 const float* weight, int N, int K, int M,
                                 WeightLayout layout) = 0;

    // Causal self-attention with NH query heads and NKV key/value heads (NKV divides NH;
    // NKV == NH is multi-head attention, NKV < NH grouped-query attention: query head h
    // reads key/value head h / (NH/NKV)). hs = C/NH. qkv[B,T,(NH+2*NKV)*hs] holds the Q block
    // (NH heads), then K (NKV heads), then V (NKV heads) along the last dim, head h of a
    // block at columns [h*hs, (h+1)*hs) of it (GPT-2: NKV = NH, the [B,T,3C] of c_attn).
    // out[B,T,C] holds the NH heads' outputs the same way; scale 1/sqrt(hs).
    // saved receives attention_saved_floats() floats the backward needs.
    virtual size_t attention_saved_floats(int B, int T, int C, int NH, int NKV) const = 0;
    // window > 0: a sliding window (Mistral's sliding_window): query t attends keys s with
    // t - s < window only; 0 = the whole causal context. The backward takes the forward's
    // window (a backend that recomputes the probabilities needs it).
    // pos (documents, above): query t of sequence b attends keys t - pos[b,t] .. t only
    // (block-diagonal causal); the backward takes the forward's. A backend whose fused
    // attention cannot mask so (CUDA's cuDNN) takes its matmul path for these calls.
    virtual void attention_forward(Act out /*[B,T,C]*/, float* saved,
                                   ConstAct qkv /*[B,T,(NH+2NKV)hs]*/, int B, int T, int C,
                                   int NH, int NKV, int window = 0,
                                   const int32_t* pos = nullptr /*[B,T] or null*/) = 0;
    // dqkv overwritten (a K/V head's gradient sums over the query heads sharing it).
    // scratch: attention_scratch_floats() floats.
    virtual size_t attention_scratch_floats(int B, int T, int C, int NH, int NKV) const = 0;
    virtual void attention_backward(Act dqkv /*[B,T,(NH+2NKV)hs]*/, float* scratch,
                                    ConstAct dout /*[B,T,C]*/, ConstAct qkv,
                                    const float* saved, int B, int T, int C, int NH,
                                    int NKV, int window = 0,
                                    const int32_t* pos = nullptr /*[B,T] or null*/) = 0;

    // KV-cached attention for generation (one sequence): the n new rows of qkv, at positions
    // pos0 .. pos0+n-1, first store their K and V heads into the caches (row p of head g at
    // k_cache[(g*max_T + p)*hs], fp32, the same for v_cache), then each new row's NH query
    // heads attend causally over cache rows 0 .. its position (GQA as attention_forward;
    // scale 1/sqrt(hs)): out[n, NH*hs]. Rows of the caches past pos0+n are untouched; the
    // ones before pos0 are the earlier tokens' keys and values. pos0 + n <= max_T.
    virtual void attention_cached_forward(Act out /*[n,NH*hs]*/,
                                          ConstAct qkv /*[n,(NH+2NKV)hs]*/,
                                          float* k_cache /*[NKV,max_T,hs] inout*/,
                                          float* v_cache /*[NKV,max_T,hs] inout*/, int pos0,
                                          int n, int NH, int NKV, int hs, int max_T,
                                          int window = 0) = 0;  // window: as attention_forward

    // Attention with dropout on the probabilities (model.dropout): P = causal softmax as
    // above, P' = P ⊙ mask / (1-p) with the mask of element ((b·NH + h)·T + t)·T + s of `m`,
    // out = P' · V. saved holds 2 × attention_saved_floats(): the backend's own, then room for
    // P' where the backend keeps it (CUDA's matmul path; the CPU draws it again from m). The
    // backward takes the forward's mask and window. A backend that has another attention path
    // takes the matmul one for these (ModelDims::attention_dropout tells reserve() to size
    // for it).
    virtual void attention_dropout_forward(Act out /*[B,T,C]*/, float* saved,
                                           ConstAct qkv /*[B,T,(NH+2NKV)hs]*/, int B, int T,
                                           int C, int NH, int NKV, const DropoutMask& m,
                                           int window = 0,
                                           const int32_t* pos = nullptr /*[B,T] or null*/) = 0;
    virtual void attention_dropout_backward(Act dqkv /*[B,T,(NH+2NKV)hs]*/, float* scratch,
                                            ConstAct dout /*[B,T,C]*/, ConstAct qkv,
                                            const float* saved, int B, int T, int C, int NH,
                                            int NKV, const DropoutMask& m,
                                            int window = 0,
                                            const int32_t* pos = nullptr /*[B,T] or null*/) = 0;

    // ---- Llama-family ops
    // RMSNorm (HF LlamaRMSNorm): rstd[n] = 1/sqrt(mean_c inp[n,c]² + eps),
    // out[n,c] = inp[n,c] * rstd[n] * w[c]; saves rstd.
    virtual void rmsnorm_forward(Act out /*[N,C]*/, float* rstd /*[N]*/,
                                 ConstAct inp /*[N,C]*/, const float* w /*[C]*/, int N,
                                 int C, float eps) = 0;
    // dinp += ..., dw += ...
    virtual void rmsnorm_backward(Act dinp /*[N,C] +=*/, float* dw /*[C] +=*/,
                                  ConstAct dout /*[N,C]*/, ConstAct inp /*[N,C]*/,
                                  const float* w /*[C]*/, const float* rstd /*[N]*/, int N,
                                  int C) = 0;
    // res_out = a + b, then rmsnorm_forward(out, rstd, res_out, w, N, C, eps) (res_out is
    // the next residual stream and the norm's saved input).
    virtual void residual_rmsnorm_forward(Act res_out /*[N,C]*/, Act out /*[N,C]*/,
                                          float* rstd /*[N]*/, ConstAct a /*[N,C]*/,
                                          ConstAct b /*[N,C]*/, const float* w /*[C]*/,
                                          int N, int C, float eps) = 0;
    // Rotary position embedding, HF Llama convention (rotate_half), IN PLACE on the Q and K
    // heads of qkv (layout of attention_forward; V untouched). Row n = b*T + t has position
    // p = pos0 + t, or p = pos[n] when pos is given (documents, above; pos0 is then ignored).
    // For each Q or K head vector x and i < hs/2, with c = cos[p*hs/2 + i],
    // s = sin[p*hs/2 + i]:
    //   x[i] <- x[i]*c - x[i + hs/2]*s ;  x[i + hs/2] <- x[i + hs/2]*c + x[i]*s
    // cos/sin are [max_pos, hs/2] tables in backend memory (built once by the model, so both
    // backends use the same values); pos0 + T <= max_pos. hs is even.
    virtual void rope_forward(Act qkv /*[B,T,(NH+2NKV)hs] inout*/, const float* cos,
                              const float* sin, int B, int T, int NH, int NKV, int hs,
                              int pos0,
                              const int32_t* pos = nullptr /*[B,T] or null*/) = 0;
    // The transpose, in place on the gradient w.r.t. the rotated q and k:
    //   d[i] <- d[i]*c + d[i + hs/2]*s ;  d[i + hs/2] <- d[i + hs/2]*c - d[i]*s
    virtual void rope_backward(Act dqkv /*[B,T,(NH+2NKV)hs] inout*/, const float* cos,
                               const float* sin, int B, int T, int NH, int NKV, int hs,
                               int pos0,
                               const int32_t* pos = nullptr /*[B,T] or null*/) = 0;
    // SwiGLU: inp = [gate | up] along the last dim ([N, 2F]: the stacked gate_proj and
    // up_proj outputs), out[n,j] = silu(gate[n,j]) * up[n,j], silu(x) = x / (1 + e^-x).
    virtual void swiglu_forward(Act out /*[N,F]*/, ConstAct inp /*[N,2F]*/, int N,
                                int F) = 0;
    // dinp [N,2F] overwritten: d gate = dout * up * silu'(gate), d up = dout * silu(gate).
    virtual void swiglu_backward(Act dinp /*[N,2F]*/, ConstAct inp /*[N,2F]*/,
                                 ConstAct dout /*[N,F]*/, int N, int F) = 0;

    // ---- fused ops (one pass / one parallel region instead of two or three). Each equals
    // the op sequence it names, up to float rounding of the reordered bias addition.
    //
    // res_out[n,:] = a[n,:] + b[n,:] (+ bb[:] if bb != nullptr), then
    // layernorm_forward(out, mean, rstd, res_out, w, bias, N, C). res_out is written (it is
    // the next residual stream and the layernorm's saved input). bb lets a matmul that feeds
    // the residual skip its own bias pass (matmul_forward with bias = nullptr).
    virtual void residual_layernorm_forward(Act res_out /*[N,C]*/, Act out /*[N,C]*/,
                                            float* mean /*[N]*/, float* rstd /*[N]*/,
                                            ConstAct a /*[N,C]*/, ConstAct b /*[N,C]*/,
                                            const float* bb /*[C] or null*/,
                                            const float* w /*[C]*/, const float* bias /*[C]*/,
                                            int N, int C) = 0;
    // pre[N,M] = inp[N,K] · W[K,M] + bias[M] (InOut layout; bias may be null), then
    // out[N,M] = gelu(pre), GELU's tanh form 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x³))).
    // pre is kept for gelu_backward_bias.
    virtual void matmul_gelu_forward(Act pre /*[N,M]*/, Act out /*[N,M]*/,
                                     ConstAct inp /*[N,K]*/, const float* weight /*[K,M]*/,
                                     const float* bias /*[M] or null*/, int N, int K,
                                     int M) = 0;
    // dinp[N,M] = gelu'(inp) * dout (overwritten), and dbias[M] += column sums of dinp over
    // the N rows (if dbias != nullptr) — the dbias of the matmul whose output was inp, so
    // that matmul_backward can be called with dbias = nullptr.
    virtual void gelu_backward_bias(Act dinp /*[N,M]*/, float* dbias /*[M] += or null*/,
                                    ConstAct inp /*[N,M]*/, ConstAct dout /*[N,M]*/,
                                    int N, int M) = 0;
    // out = gelu(inp) elementwise, the tanh form of matmul_gelu_forward (which equals
    // matmul_forward then this, up to the rounding of the bias addition).
    virtual void gelu_forward(Act out, ConstAct inp, size_t n) = 0;

    // ---- column slices (LoRA adapters add into a block of a wider output, model/lora.h)
    // out[n, c0 + j] += scale * in[n, j] for n < N, j < M: out rows are W wide, in rows M.
    virtual void add_columns(Act out /*[N,W] +=*/, ConstAct in /*[N,M]*/, float scale, int N,
                             int W, int c0, int M) = 0;
    // out[n, j] = scale * in[n, c0 + j] (overwritten): out rows are M wide, in rows W.
    virtual void copy_columns(Act out /*[N,M]*/, ConstAct in /*[N,W]*/, float scale, int N,
                              int W, int c0, int M) = 0;

    // ---- dropout (model.dropout, lora.dropout)
    // out[i] = in[i] · keep(i) / (1 - p) for i < n, the mask of m (in place allowed). The
    // backward calls it on the gradient with the same mask.
    virtual void dropout(Act out, ConstAct in, size_t n, const DropoutMask& m) = 0;

    // Softmax cross-entropy over the first V of Vp columns of each row of logits.
    // losses[n] = -log softmax(logits[n])[targets[n]]. If write_grad, logits is overwritten
    // with dloss * (softmax - onehot(target)) (columns >= V get 0). targets in [0, V), or
    // kIgnoredTarget (-1): losses[n] = 0 and (write_grad) the whole row of the gradient is 0.
    // Any other target is an error (the CPU throws; a device, which cannot check, gives NaN).
    // The gradient is scaled by dloss * scalars->loss_scale when scalars != nullptr (fp16
    // loss scaling reads the scale from backend memory, never from the host).
    virtual void classifier_forward_backward(Act logits /*[N,Vp] inout*/,
                                             float* losses /*[N]*/,
                                             const int32_t* targets /*[N]*/, int N, int V,
                                             int Vp, float dloss, bool write_grad,
                                             const StepScalars* scalars = nullptr) = 0;

    // ---- the optimizer step on backend-resident scalars (no host round-trip)
    // s->lr = lr, s->step = step; clears loss_sum, grad_norm, clip_scale (1), nonfinite.
    // loss_scale, skipped_steps and good_steps carry over from the previous step.
    virtual void begin_step(StepScalars* s, float lr, int64_t step) = 0;
    // s->loss_sum += sum of losses[0..n) (fixed-order reduction: reproducible bitwise).
    virtual void accumulate_loss(StepScalars* s, const float* losses, size_t n) = 0;
    // grad_norm = sqrt(sum grads²) / loss_scale (sum in double, fixed order); nonfinite = the
    // sum is not finite; clip_scale = max_norm / (grad_norm + 1e-6) if max_norm > 0 and that
    // is < 1, else 1 (torch.nn.utils.clip_grad_norm_). When nonfinite, clip_scale is
    // unspecified (the update is skipped) and grad_norm is inf or nan.
    virtual void grad_norm_clip(StepScalars* s, const float* grads, size_t n,
                                float max_norm) = 0;
    // Fused AdamW over the whole flat buffer in one pass: g = grads * clip_scale / loss_scale,
    // then torch.optim.AdamW with lr and step from s and per-tensor decay from seg. Does
    // nothing at all when s->nonfinite (GradScaler: a bad gradient never reaches the weights).
    // Refreshes the bf16/fp16 working copy when params is the registered buffer.
    virtual void adamw_step(float* params, const float* grads, float* m, float* v, size_t n,
                            const ParamSegments& seg, const AdamWConfig& hp,
                            const StepScalars* s) = 0;
    // optim.state_dtype = "int8" (core/q8_moments.h): adamw_step with the moments as 8-bit
    // codes m8, v8 [n] and per-block scales m_scale, v_scale [q8_blocks(n)] (blocks of
    // kQ8Block elements from element 0). Each element's update is adamw_step's on the decoded
    // moments; the new moments are then encoded with their block's new scales (the largest
    // magnitude). tables: a Q8Tables in backend memory. Skipped when s->nonfinite.
    virtual void adamw_step_q8(float* params, const float* grads, uint8_t* m8, uint8_t* v8,
                               float* m_scale, float* v_scale, const Q8Tables* tables, size_t n,
                               const ParamSegments& seg, const AdamWConfig& hp,
                               const StepScalars* s) = 0;
    // After the update: nonfinite → skipped_steps += 1, good_steps = 0 and (dynamic) the
    // scale backs off; else good_steps += 1 and (dynamic) the scale grows every
    // growth_interval finite steps.
    virtual void end_step(StepScalars* s, const LossScalePolicy& policy) = 0;
    // Asynchronous read-back through a small ring of host slots (slot < kScalarSlots):
    // stream-ordered copy of *s into the slot; scalars_ready polls; read_scalars waits.
    static constexpr int kScalarSlots = 8;
    virtual void read_scalars_async(int slot, const StepScalars* s) = 0;
    virtual bool scalars_ready(int slot) = 0;
    virtual StepScalars read_scalars(int slot) = 0;

    // ---- batches
    // B rows of T+1 host ids → inputs/targets [B, T] in backend memory (the "host" placement;
    // an asynchronous backend stages through pinned, double-buffered memory). host_rows may
    // be reused by the caller as soon as the call returns.
    virtual void load_rows(int32_t* inputs, int32_t* targets, const int32_t* host_rows,
                           int B, int T) = 0;
    // Packed examples (documents): host [B,T] arrays → inputs, targets and positions [B,T] in
    // backend memory, staged as load_rows stages (host arrays reusable on return). targets may
    // hold -1 (an ignored target) and are copied as they are; positions as documented above
    // the encoder (host_positions null: positions is not written and may be null).
    virtual void load_batch(int32_t* inputs, int32_t* targets, int32_t* positions /*or null*/,
                            const int32_t* host_inputs, const int32_t* host_targets,
                            const int32_t* host_positions /*or null*/, int B, int T) = 0;
    // Sequential window on a resident token set: row b = tokens[*start + b*T, +T+1).
    // start is backend memory (written by upload_step_inputs), so a replayed graph reads
    // this step's window; a start outside the token set yields no rows (asynchronous
    // backends cannot throw from the device) — the host validates before uploading.
    virtual void sample_window(int32_t* inputs, int32_t* targets, const DeviceTokens& data,
                               const int64_t* start /*backend memory*/, int B, int T) = 0;
    // Random sampler on a resident token set: exactly sample_random of src/data/sampler.h
    // (Philox4x32-10, key = seed, counter = (s->step, micro_step, row0 + row, 0), idx = u mod
    // W; row0: data parallel, the rank's first global row). The step comes from backend
    // memory (begin_step), so a replayed graph draws this step's.
    virtual void sample_random(int32_t* inputs, int32_t* targets, const DeviceTokens& data,
                               uint64_t seed, const StepScalars* s, int64_t micro_step, int B,
                               int T, int64_t row0 = 0) = 0;

    // ---- per-step host values and whole-step graphs
    // Stream-ordered copy of a small host array (a step's window starts) into backend memory:
    // it lands before any op enqueued after this call, src may be reused as soon as the call
    // returns, and an op enqueued before it still sees the old contents.
    virtual void upload_step_inputs(void* dst, const void* src, size_t bytes) = 0;
    // Graphs: between begin_capture() and end_capture(id) ops are recorded, NOT executed;
    // replay_graph(id) runs the recording (again and again). A recorded op must take every
    // per-step value from backend memory (StepScalars, upload_step_inputs), never from a host
    // argument, and must not read back or allocate. end_capture replaces graph id if it exists.
    // Without support (supports_graphs() false) the three calls throw Unsupported.
    virtual bool supports_graphs() const { return false; }
    virtual void begin_capture() { no_graphs(); }
    virtual void end_capture(int /*id*/) { no_graphs(); }
    virtual void replay_graph(int /*id*/) { no_graphs(); }

    // ---- data parallelism in backend memory (NCCL on CUDA; docs/DISTRIBUTED.md)
    // Whether this backend can sum across ranks in its own memory (false: the session sums
    // through host copies over MPI); why not, in *why.
    virtual bool device_collectives(std::string* why) {
        if (why) *why = cat("the ", name(), " backend has no collectives of its own");
        return false;
    }
    // Rank 0 makes the group's id; every rank joins with it (a collective: all `world` ranks
    // call it, each with its rank, each on its own device).
    static constexpr size_t kCollectiveIdBytes = 128;
    virtual void make_collective_id(uint8_t* /*id [kCollectiveIdBytes]*/) { no_collectives(); }
    virtual void join_collectives(const uint8_t* /*id*/, int /*rank*/, int /*world*/) {
        no_collectives();
    }
    // data[i] = the sum over the ranks of their data[i] (backend memory, in place,
    // stream-ordered: a graph may hold it), the same bits on every rank.
    virtual void all_reduce_sum(float* /*data*/, size_t /*n*/) { no_collectives(); }
    virtual void all_reduce_sum(double* /*data*/, size_t /*n*/) { no_collectives(); }
    // all_reduce_sum that may run beside the ops enqueued after it (CUDA: on a side stream,
    // after the ops enqueued before it) until wait_collectives(), after which every op sees
    // every sum. The default sums at once.
    virtual void all_reduce_sum_async(float* data, size_t n) { all_reduce_sum(data, n); }
    virtual void wait_collectives() {}

private:
    // Inline on purpose: an out-of-line virtual would pin Backend's vtable to the core
    // library, which the CUDA module must not link against.
    [[noreturn]] void no_graphs() const {
        fail(Status::Unsupported, "the ", name(), " backend does not capture graphs");
    }
    [[noreturn]] void no_collectives() const {
        fail(Status::Unsupported, "the ", name(), " backend has no collectives of its own");
    }
};

// How many bytes of backend scratch ModelDims implies is the backend's business; how many
// floats of activations the model needs is the model's (src/model/activations.h).

// CPU backend: OpenBLAS sgemm for fp32 matmuls, OpenMP elsewhere. threads <= 0 = all cores.
// precision Fp32, Bf16 (bf16 activations and matmul operands, fp32 math: cpu_lowp.h) or Fp16
// (a test twin). `matmul`: accel.cpu_matmul, how bf16 matmuls run (oneDNN or sgemm).
std::unique_ptr<Backend> make_cpu_backend(int threads, Precision precision = Precision::Fp32,
                                          CpuMatmul matmul = CpuMatmul::Auto);

}  // namespace trt
