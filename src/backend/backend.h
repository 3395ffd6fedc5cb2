// Backend: device memory plus the op set the model is written against (ARCHITECTURE.md); the
// ops themselves are listed, with their contracts, in backend_ops.def (and the optimizer
// step's in step_ops.def). The decoder (src/model/decoder.cpp) calls them in order and never
// knows which backend it drives. Only what the model and the session issue belongs here: an
// op a kernel needs internally, or one only a test calls, stays inside its backend
// (cpu_ops.h, cuda_ops.h). Pointers are backend memory (host memory on the CPU backend).
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
#include <vector>

#include "config/run_config.h"
#include "core/base_quant.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/q8_moments.h"
#include "core/token_draw.h"

namespace trt {

// The CUDA module is a separate shared object that implements Backend, and the loader refuses
// a module built against another version of this interface (src/backend/cuda_module.h):
// kBackendInterfaceVersion, below, is this revision combined with a hash of every op's
// signature as backend_ops.def and step_ops.def write it (an op added or changed needs no
// bump). Bump the revision when anything else in this header changes shape (a method outside
// the op lists, a struct).
// 23: op_timer, op_choices, device_draw, read_back, drop_graph; 22: threads_note
constexpr uint32_t kBackendInterfaceRevision = 23;

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

// One call of the attention ops and RoPE (backend_ops.def): the heads' layout and what varies
// between calls — a window, documents, dropout — as fields, so the next variant is a field
// rather than a new signature. qkv rows hold NH query heads, then NKV key heads, then NKV
// value heads, hs wide each (GPT-2: NKV = NH, c_attn's [B,T,3C]); out rows hold the NH heads'
// outputs, NH·hs wide (C, but for Qwen3's explicit head_dim). Held by value by OpDispatch: no
// field points at host memory that a replayed graph would read.
struct AttentionShape {
    int B = 0, T = 0;     // sequences, positions each (the cached op: 1 and its new rows)
    int NH = 0, NKV = 0;  // query heads; key/value heads (NKV divides NH; NH / NKV share one)
    int hs = 0;           // head size; even where RoPE applies
    // > 0: a sliding window (Mistral's sliding_window): query t attends keys s with
    // t - s < window only; 0 = the whole causal context.
    int window = 0;
    // Documents (packed examples): positions [B,T] in backend memory, or null (above the
    // encoder ops in backend_ops.def).
    const int32_t* pos = nullptr;
    // p > 0: dropout on the attention probabilities (model.dropout), this mask.
    DropoutMask dropout;

    int width() const { return NH * hs; }                  // out's rows
    int qkv_width() const { return (NH + 2 * NKV) * hs; }  // qkv's rows
    bool drops() const { return dropout.p > 0; }

    // Whole causal attention of NH heads of hs (from_width: over `width` columns, hs =
    // width / NH), no window, documents or dropout; the with_ calls add them.
    static AttentionShape from_heads(int B, int T, int NH, int NKV, int hs) {
        AttentionShape a;
        a.B = B;
        a.T = T;
        a.NH = NH;
        a.NKV = NKV;
        a.hs = hs;
        return a;
    }
    static AttentionShape from_width(int B, int T, int width, int NH, int NKV) {
        return from_heads(B, T, NH, NKV, NH > 0 ? width / NH : 0);
    }
    AttentionShape with_window(int w) const {
        AttentionShape a = *this;
        a.window = w;
        return a;
    }
    AttentionShape with_pos(const int32_t* p) const {
        AttentionShape a = *this;
        a.pos = p;
        return a;
    }
    AttentionShape with_dropout(const DropoutMask& m) const {
        AttentionShape a = *this;
        a.dropout = m;
        return a;
    }
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
    // The linears' weights are quantised (lora.base_dtype): they run through the qmatmul ops,
    // which a backend may stage otherwise than its plain matmuls.
    bool quantised_base = false;
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
    // CUDA's matmuls on a quantised base (lora.base_dtype: qmatmul_*, qencoder_forward;
    // cuda_qmatmul.cu). Not yet run on a GPU: a CUDA run with a quantised base is refused
    // unless asked for, here or by TRAINRT_CUDA_QUANTISED_BASE=1. The CPU always runs them.
    bool cuda_quantised_base = false;
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
    int threads = 0;                       // CPU: 0 = one per physical core (cpu_topology.h)
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
    // The CPU with runtime.threads = 0: how the count was chosen ("auto: physical cores: 8 of
    // 16 CPUs"). "" elsewhere.
    std::string threads_note;
};

// Device-side timing of the ops, for a backend whose ops finish after the call returns (CUDA:
// events on its compute stream). The profiler (op_profiler.h) stamps the stream before and
// after each op without waiting and reads the intervals once the step is synchronized: the
// host clock around a synchronized op would count the launch and the wait as the op's time.
class OpTimer {
public:
    virtual ~OpTimer() = default;
    // Enqueues a time stamp behind every op enqueued so far; its number (0, 1, ... since the
    // last clear()).
    virtual int mark() = 0;
    // Seconds from stamp a to stamp b. Only after Backend::synchronize().
    virtual double seconds_between(int a, int b) = 0;
    // Forgets the stamps (their storage is kept for the next ones). Never throws.
    virtual void clear() noexcept = 0;
};

// One choice a library made for an op shape the backend has run: cuBLASLt's algorithm for a
// GEMM shape, cuDNN's engine and workspace for an attention graph, oneDNN's implementation of
// a matmul. For the profile (docs/C_API.md, "Per-op profile"): what to read before a kernel.
struct OpChoice {
    std::string op;      // "matmul (cuBLASLt)", "attention fwd (cuDNN)", ...
    std::string shape;   // "768x2304x768 a·bᵀ bf16 -> bf16 +bias", ...
    std::string choice;  // "id 21 tile 23 stages 8 split-k 1 ...", "engine 8", "brg:..."
    int64_t workspace_bytes = 0;
};

// Logits per chunk of the output head (model/activations.h head_chunk_rows) where
// accel.head_chunk_rows is 0. The head's fp32 weight gradient [Vp, C] is read and written
// once per chunk (dhead += dlogitsᵀ · rows). On a GPU that traffic is the head's cost when
// chunks are small: GPT-2 at B 64 x T 1024 in 103 chunks of 640 rows moves 31.8 GB a step
// (9.5 ms at an H100's 3.35 TB/s), in 7 chunks of 10,624 rows 2.2 GB (0.7 ms). On a CPU
// the GEMMs dwarf it, and the small chunk's logits (128 MiB fp32) are what a host can spare.
// A device backend takes the larger chunk: 512 Mi logits = 1 GiB bf16.
inline constexpr size_t kHostHeadChunkLogits = size_t{1} << 25;
inline constexpr size_t kDeviceHeadChunkLogits = size_t{1} << 29;

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
    // Sampling draws each token with draw_token in backend memory and reads back the id (and
    // the non-finite flag), not the row of logits. Where the logits live on the host anyway
    // (the CPU) the host draws: the same arithmetic (core/token_draw.h), and its error names
    // the offending logit.
    bool device_draw = false;
    // About this many logits per chunk of the output head (kHostHeadChunkLogits above).
    size_t head_chunk_logits = kHostHeadChunkLogits;
};

// Sums across ranks in a backend's own memory (NCCL on CUDA; docs/DISTRIBUTED.md), handed
// out by Backend::collectives() where the backend has them.
class DeviceCollectives {
public:
    virtual ~DeviceCollectives() = default;
    // Rank 0 makes the group's id; every rank joins with it (a collective: all `world` ranks
    // call it, each with its rank, each on its own device).
    static constexpr size_t kIdBytes = 128;
    virtual void make_id(uint8_t* id /*[kIdBytes]*/) = 0;
    virtual void join(const uint8_t* id, int rank, int world) = 0;
    // data[i] = the sum over the ranks of their data[i] (backend memory, in place,
    // stream-ordered: a graph may hold it), the same bits on every rank.
    virtual void all_reduce_sum(float* data, size_t n) = 0;
    virtual void all_reduce_sum(double* data, size_t n) = 0;
    // all_reduce_sum that may run beside the ops enqueued after it (CUDA: on a side stream,
    // after the ops enqueued before it) until wait(), after which every op sees every sum.
    // The default sums at once.
    virtual void all_reduce_sum_async(float* data, size_t n) { all_reduce_sum(data, n); }
    virtual void wait() {}
};

// Every op of backend_ops.def and step_ops.def by name: what supports() is asked about and
// what OpDispatch (op_dispatch.h) hands a wrapper.
enum class OpKind : int {
#define TRT_OP(name, params, args) name,
#include "backend/backend_ops.def"
#include "backend/step_ops.def"
#undef TRT_OP
};
constexpr int kOpKinds = 0
#define TRT_OP(name, params, args) +1
#include "backend/backend_ops.def"
#include "backend/step_ops.def"
#undef TRT_OP
    ;
// Every op's name and parameter list as text (composed ops marked), hashed (FNV-1a) into the
// interface version: a module built against another op list is refused, not called through
// a vtable of another shape.
inline constexpr char kOpSignatures[] = ""
#define TRT_OP(name, params, args) #name #params ";"
#define TRT_OP_COMPOSED(name, params, args) "composed " #name #params ";"
#include "backend/backend_ops.def"
#undef TRT_OP_COMPOSED
#include "backend/step_ops.def"
#undef TRT_OP
    ;
constexpr uint32_t fnv1a_32(const char* s) {
    uint32_t h = 2166136261u;
    for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 16777619u;
    return h;
}
constexpr uint32_t kBackendInterfaceVersion =
    fnv1a_32(kOpSignatures) ^ (kBackendInterfaceRevision * 0x9E3779B1u);

inline const char* op_name(OpKind op) {
    static const char* const kNames[] = {
#define TRT_OP(name, params, args) #name,
#include "backend/backend_ops.def"
#include "backend/step_ops.def"
#undef TRT_OP
    };
    const int i = static_cast<int>(op);
    return i >= 0 && i < kOpKinds ? kNames[i] : "(unknown op)";
}

// The optimizer step on backend-resident scalars (step_ops.def: begin_step .. end_step, the
// fused AdamW), and the step scalars read back: what a backend that trains hands out
// (Backend::optimizer_step()). Every op of it is required.
class OptimizerStep {
public:
    virtual ~OptimizerStep() = default;
#define TRT_OP(name, params, args) virtual void name params = 0;
#include "backend/step_ops.def"
#undef TRT_OP
    // ---- the step's scalars, read back
    // Asynchronous read-back through a small ring of host slots (slot < kScalarSlots):
    // stream-ordered copy of *s into the slot; scalars_ready polls; read_scalars waits.
    static constexpr int kScalarSlots = 8;
    virtual void read_scalars_async(int slot, const StepScalars* s) = 0;
    virtual bool scalars_ready(int slot) = 0;
    virtual StepScalars read_scalars(int slot) = 0;
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

    // ---- sizes of the attention ops' buffers (attention_forward, backend_ops.def)
    // Floats of `saved` the forward writes for its backward (twice that under dropout: see
    // attention_forward), and of the backward's scratch, for calls of this shape (its B, T,
    // heads and head size; the window, documents and dropout do not change them). 0 on a
    // backend without attention.
    virtual size_t attention_saved_floats(const AttentionShape& /*a*/) const { return 0; }
    virtual size_t attention_scratch_floats(const AttentionShape& /*a*/) const { return 0; }

    // ---- the ops: backend_ops.def holds each one's contract and signature, once. An op a
    // backend does not implement throws Unsupported; supports() says which ones it runs.
#define TRT_OP(name, params, args) \
    virtual void name params { unsupported_op(#name); }
#define TRT_OP_COMPOSED(name, params, args) virtual void name params;
#include "backend/backend_ops.def"
#undef TRT_OP_COMPOSED
#undef TRT_OP
    // Whether this backend runs `op` for a model of these dims at this precision (what a
    // partial backend says; the op-case suites skip the rest). The CPU and CUDA backends run
    // every op at every precision they are created with.
    virtual bool supports(OpKind /*op*/, const ModelDims& /*dims*/,
                          Precision /*precision*/) const {
        return false;
    }

    // ---- per-step host values and whole-step graphs
    // Stream-ordered copy of a small host array (a step's window starts) into backend memory:
    // it lands before any op enqueued after this call, src may be reused as soon as the call
    // returns, and an op enqueued before it still sees the old contents.
    virtual void upload_step_inputs(void* dst, const void* src, size_t bytes) = 0;
    // Asynchronous read-back of a few bytes (<= kReadbackBytes: a decode step's drawn token)
    // through a ring of kReadbackSlots host slots: read_back_async starts a stream-ordered copy
    // of src (backend memory: it copies what the ops enqueued before it wrote) into slot
    // `slot`; read_back waits for that copy and hands the slot's bytes to dst. A slot is reused
    // only after its read_back. false (the default): not supported, nothing started — the
    // caller copies with copy_to_host.
    static constexpr int kReadbackSlots = 16;
    static constexpr size_t kReadbackBytes = 16;
    virtual bool read_back_async(int /*slot*/, const void* /*src*/, size_t /*bytes*/) {
        return false;
    }
    virtual void read_back(int /*slot*/, void* /*dst*/, size_t /*bytes*/) {
        fail(Status::Internal, "the ", name(), " backend has no asynchronous read-back");
    }
    // Internal unless slot < kReadbackSlots and bytes <= kReadbackBytes; the slot.
    static int check_readback(int slot, size_t bytes) {
        TRT_CHECK(slot >= 0 && slot < kReadbackSlots && bytes <= kReadbackBytes, "read-back slot ",
                  slot, " of ", bytes, " bytes outside [0, ", kReadbackSlots, ") x ",
                  kReadbackBytes);
        return slot;
    }
    // Graphs: between begin_capture() and end_capture(id) ops are recorded, NOT executed;
    // replay_graph(id) runs the recording (again and again). A recorded op must take every
    // per-step value from backend memory (StepScalars, upload_step_inputs), never from a host
    // argument, and must not read back or allocate. end_capture replaces graph id if it exists.
    // Without support (supports_graphs() false) the three calls throw Unsupported.
    virtual bool supports_graphs() const { return false; }
    virtual void begin_capture() { no_graphs(); }
    virtual void end_capture(int /*id*/) { no_graphs(); }
    virtual void replay_graph(int /*id*/) { no_graphs(); }
    // Forgets graph id (nothing if there is none): one that holds buffers about to be freed.
    virtual void drop_graph(int /*id*/) {}

    // ---- training: the optimizer step (null: the backend runs the model's ops only)
    virtual OptimizerStep* optimizer_step() { return nullptr; }

    // ---- profiling
    // The ops that follow belong to block `layer` of the model (kNoLayer: outside the blocks
    // — the embeddings, the final norm and head, the optimizer). A hint: the profiler
    // (op_profiler.h) files the ops by it; a backend ignores it.
    static constexpr int kNoLayer = -1;
    virtual void annotate_layer(int /*layer*/) {}
    // Device-side op timing (OpTimer, above; owned by the backend), or null: the profiler then
    // times each op on the host clock between two synchronize() calls.
    virtual OpTimer* op_timer() { return nullptr; }
    // The libraries' choices for the op shapes run so far (OpChoice), in a stable order.
    virtual std::vector<OpChoice> op_choices() const { return {}; }

    // ---- data parallelism in backend memory (NCCL on CUDA; docs/DISTRIBUTED.md)
    // The backend's own collectives, or null where it has none (then the session sums
    // through host copies over MPI); why not, in *why. Owned by the backend.
    virtual DeviceCollectives* collectives(std::string* why) {
        if (why) *why = cat("the ", name(), " backend has no collectives of its own");
        return nullptr;
    }

private:
    // Inline on purpose: an out-of-line virtual would pin Backend's vtable to the core
    // library, which the CUDA module must not link against.
    [[noreturn]] void no_graphs() const {
        fail(Status::Unsupported, "the ", name(), " backend does not capture graphs");
    }
    [[noreturn]] void unsupported_op(const char* op) const {
        fail(Status::Unsupported, "the ", name(), " backend has no ", op, " (supports() says "
             "which ops it runs)");
    }
};

// The backend's optimizer step, or Unsupported naming the backend (a training step needs it).
inline OptimizerStep& optimizer_step_of(Backend& be) {
    OptimizerStep* s = be.optimizer_step();
    if (!s)
        fail(Status::Unsupported, "the ", be.name(),
             " backend has no optimizer step: it "
             "cannot train (evaluation and sampling run the model's ops only)");
    return *s;
}

}  // namespace trt

// The defaults of the composed ops (TRT_OP_COMPOSED), inline like the rest of Backend.
#include "backend/backend_composed.h"

namespace trt {

// How many bytes of backend scratch ModelDims implies is the backend's business; how many
// floats of activations the model needs is the model's (src/model/activations.h).

// CPU backend: OpenBLAS sgemm for fp32 matmuls, OpenMP elsewhere. threads <= 0 = one per physical
// core. precision Fp32, Bf16 (bf16 activations and matmul operands, fp32 math: cpu_lowp.h) or Fp16
// (a test twin). `matmul`: accel.cpu_matmul, how bf16 matmuls run (oneDNN or sgemm).
std::unique_ptr<Backend> make_cpu_backend(int threads, Precision precision = Precision::Fp32,
                                          CpuMatmul matmul = CpuMatmul::Auto);

}  // namespace trt
