// RunConfig: the typed, validated form of a run's TOML config. Every field has its default
// here; docs/CONFIG.md documents each key (TOML path = section.field). Paths are already
// resolved against the config file's folder when a RunConfig reaches the runtime.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/base_quant.h"

namespace trt {

enum class ModelArch { Gpt2, Llama, Qwen2, Mistral, Qwen3 };  // one row each in model/family.cpp
// model.rope_scaling: how RoPE's frequencies are stretched (config.json's rope_scaling).
enum class RopeScaling { None, Linear, Llama3 };
enum class SamplerKind { Random, Sequential };
enum class Schedule { Constant, Cosine, Linear };
enum class DeviceKind { Auto, Cpu, Cuda };
enum class Precision { Auto, Fp32, Tf32, Bf16, Fp16 };
enum class AttentionKind { Auto, Cudnn, Matmul };
// Which library the CPU backend's matmuls run on (docs/CONFIG.md, accel.cpu_matmul).
enum class CpuMatmul { Auto, Onednn, Openblas };
// train.recompute: which activations the backward recomputes instead of keeping
// (model/activations.h).
enum class Recompute { None, Mlp, Block };
// How AdamW keeps its moments (optim.state_dtype): fp32, or 8-bit blockwise codes
// (core/q8_moments.h).
enum class StateDType { Fp32, Int8 };
enum class Placement { Auto, Device, Host };
// Which world of ranks a session trains in (dist.backend; docs/DISTRIBUTED.md).
enum class DistBackend { Auto, None, Mpi, Nccl };
// The gradients' type while they are summed across ranks (dist.wire_dtype).
enum class WireDType { Fp32, Bf16 };
// What an eval scores (train.eval_mode): train.eval_batches windows from the start of
// data.val, or every token of it once (data/eval_windows.h).
enum class EvalMode { Sampled, Whole };

struct ModelConfig {
    ModelArch arch = ModelArch::Gpt2;  // the family: which tensors and ops (model/param_table.h)
    int64_t vocab_size = 256;      // tokens ids are in [0, vocab_size)
    int64_t context_length = 256;  // T_max: rows of wpe (gpt2), positions of RoPE (llama)
    int64_t n_layer = 4;
    int64_t n_head = 4;
    int64_t n_kv_head = 0;         // key/value heads, divides n_head; 0 = n_head (llama only)
    int64_t d_model = 128;         // C; must be divisible by n_head (unless head_dim is set)
    int64_t head_dim = 0;          // head size when not d_model / n_head (Qwen3); 0 = that
    int64_t d_ff = 0;              // MLP hidden width; 0 = 4 * d_model
    double rope_theta = 10000.0;   // llama: RoPE base
    // RoPE frequency scaling (transformers' rope_scaling): "linear" divides every frequency
    // by rope_scaling_factor; "llama3" (Llama 3.1+) divides the low ones, keeps the high ones
    // and blends between, around rope_original_context (original_max_position_embeddings).
    RopeScaling rope_scaling = RopeScaling::None;
    double rope_scaling_factor = 1.0;
    double rope_low_freq_factor = 1.0;
    double rope_high_freq_factor = 4.0;
    int64_t rope_original_context = 0;
    // Attention sees at most the last sliding_window positions (Mistral's sliding_window;
    // 0 = the whole causal context). Both backends run any window (CUDA: a window shorter
    // than the sequence on its matmul attention).
    int64_t sliding_window = 0;
    double norm_eps = 1e-5;        // RMSNorm epsilon (llama); gpt2's LayerNorm uses 1e-5
    bool tie_embeddings = true;    // the output head is the token embedding (gpt2: always)
    std::string init_from;         // HF GPT-2 safetensors; empty = random init from seed
    uint64_t seed = 1337;          // random init, and the key of the dropout masks
    // Training only (eval and sampling never drop): the probability of zeroing an element at
    // each of three places, as GPT-2's embd/attn/resid_pdrop: the embeddings, the attention
    // probabilities, and each residual branch's output before the add (core/dropout_mask.h).
    double dropout = 0.0;
};

struct DataConfig {
    std::string train;  // shard path or glob (required to train with the sampler)
    std::string val;    // shard path or glob (required for eval)
    // The tokenizer the shards were prepared with: a tokenizer.json, a SentencePiece tokenizer.model or a model folder ("" =
    // none: bytes, or not recorded). Defaults to model.init_from when that folder has one.
    std::string tokenizer;
    // Refuse a run whose shards (their prepare.json), data.tokenizer and model folder name
    // different tokenizers (data/tokenizer_agreement.h); false: warn and go on.
    bool tokenizer_check = true;
    SamplerKind sampler = SamplerKind::Random;
    uint64_t seed = 1;  // random sampler key
    Placement placement = Placement::Auto;
    // Data prepared with loss masks (`prepare --chat`): examples packed into rows, attention
    // and positions restarting at each (data/example_batches.h); false: one example a row,
    // padded. Plain token data ignores it.
    bool packing = true;
    // Plain token data (prepare's documents, each opened by the end-of-text token): attention
    // never crosses a document and positions restart at each one's end-of-text token.
    bool document_attention = false;
};

struct TrainConfig {
    int64_t batch_size = 8;      // B: rows per micro-batch; 0 = "auto" (runtime/batch_size.h)
    int64_t seq_len = 128;       // T: tokens per row; <= model.context_length
    int64_t grad_accum = 1;      // micro-batches per optimizer step
    int64_t steps = 1000;        // total optimizer steps (the schedule spans these)
    int64_t eval_every = 100;    // 0 disables
    int64_t eval_batches = 10;
    EvalMode eval_mode = EvalMode::Sampled;
    int64_t checkpoint_every = 0;  // 0 disables periodic checkpoints into out_dir
    int64_t keep_last = 3;         // checkpoints kept in out_dir (newest); 0 = all
    int64_t max_skipped_steps = 25;  // consecutive non-finite steps before the run stops; 0 = never
    std::string out_dir;         // metrics.jsonl (and checkpoints) go here; empty = none
    // Tensor-name patterns of the parameters that train (model/trainable.h); the others are
    // frozen. Empty = every parameter trains.
    std::vector<std::string> trainable;
    Recompute recompute = Recompute::None;  // activations recomputed in the backward
};

struct OptimConfig {
    double lr = 3e-4;
    double beta1 = 0.9, beta2 = 0.95;  // key: optim.betas = [beta1, beta2]
    double eps = 1e-8;
    double weight_decay = 0.1;  // on tensors with >= 2 dims only (GPT-2 convention)
    double grad_clip = 1.0;     // max global L2 norm; 0 disables
    Schedule schedule = Schedule::Cosine;
    int64_t warmup_steps = 0;
    double min_lr = 0.0;        // absolute
    StateDType state_dtype = StateDType::Fp32;  // AdamW's m and v
};

struct RuntimeConfig {
    DeviceKind device = DeviceKind::Auto;
    Precision precision = Precision::Auto;  // auto: fp32 on CPU, bf16 on CUDA
    int64_t threads = 0;                    // 0 = one per physical core (the CPU)
    int64_t log_every = 10;                 // train steps between logged lines (>= 1)
    int64_t max_inflight = 2;               // steps a device may run ahead of the host
    double peak_tflops = 0;                 // MFU denominator per device; 0 = from the table
    double peak_gbs = 0;                    // the profile's bandwidth peak; 0 = from the table
    // Bytes train.batch_size = "auto" may plan for: the CPU's budget (0 = what the machine
    // has available), a cap on CUDA's search (0 = the GPU's memory).
    int64_t memory_limit = 0;
    // Time every backend op of every train step (backend/op_profiler.h), read with
    // trainrt_session_profile. Steps then run eagerly (no CUDA graph), each op synchronized.
    bool profile_ops = false;
};

// The CUDA fast paths are on by default since a GPU run verified them against the CPU twin
// (bench/results/2026-11-26-gpu-check-h100-80gb-hbm3.md, docs/STATUS.md); each falls back
// where it cannot run (auto attention: cuDNN when it serves the shape, else matmul, silently).
// On the CPU they change nothing.
struct AccelConfig {
    bool fused_adamw = true;
    bool cuda_graphs = true;
    AttentionKind attention = AttentionKind::Auto;
    bool fused_classifier = true;
    bool matmul_epilogues = true;
    // bf16/fp16 activations on CUDA under precision bf16/fp16 (docs/PRECISION.md).
    bool lowp_activations = true;
    // false allows nondeterministic cuDNN attention engines (CUDA only; docs/CONFIG.md).
    bool deterministic = true;
    // CPU matmuls: oneDNN where it is the faster (auto: fp32 on AVX-512, bf16 on native
    // bf16), asked for (onednn), or OpenBLAS sgemm (bf16: on widened operands).
    CpuMatmul cpu_matmul = CpuMatmul::Auto;
    // Rows per chunk of the output head (logits exist for this many rows at a time); 0 =
    // the backend's choice (model/activations.h head_chunk_rows).
    int64_t head_chunk_rows = 0;
};

// LoRA adapters (model/lora.h), the PEFT LoraConfig's keys: a rank-r update B·A scaled by
// alpha/r beside each targeted linear layer, which freezes the base model.
struct LoraConfig {
    int64_t rank = 0;        // r; 0 = no adapters
    double alpha = 8.0;      // lora_alpha: the update is scaled by alpha / rank
    // Module names as PEFT's target_modules: a name matches a linear layer whose module path
    // is it or ends in "." + it ("c_attn", "q_proj", "mlp.c_proj"); "all-linear" = every
    // linear layer but the output head. Empty = the family's PEFT default (gpt2: c_attn;
    // llama: q_proj, v_proj).
    std::vector<std::string> target_modules;
    std::string init_from;   // a PEFT adapter folder to start from; "" = fresh (B = 0)
    double dropout = 0.0;    // lora_dropout: on each adapter's input (training only)
    // QLoRA: the frozen base kept in fewer bits (core/base_quant.h, model/quantised_base.h):
    // every block's linear weights in base_dtype, and then the token embedding and an untied
    // head in bf16; fp32 = as loaded.
    BaseDType base_dtype = BaseDType::Fp32;
    bool double_quant = true;  // nf4: the blocks' absmax quantised again (QLoRA's choice)
};

// Data parallelism (docs/DISTRIBUTED.md): every rank runs the same config on its own rows of
// each global batch; the gradients are summed across ranks before each update.
struct DistConfig {
    // auto: MPI when the launcher (mpirun, srun) started several ranks, else one process, and
    // on CUDA the gradients over NCCL when it loads; none: one process whatever the launcher
    // says; mpi: MPI (libtrainrt-mpi) always, gradients through host memory; nccl: as mpi,
    // and the gradients over NCCL on the GPU (an error where it cannot).
    DistBackend backend = DistBackend::Auto;
    // Seconds a rank may wait at one collective before it ends the whole job (a peer hung).
    int64_t timeout = 300;
    // 1 = ZeRO-1: each rank keeps and updates 1/N of the AdamW state (gradients
    // reduce-scattered, parameters all-gathered); 0 = every rank keeps all of it.
    int64_t zero = 0;
    // bf16: gradients rounded to bf16 for the sum (half the bytes; each partial sum rounds to
    // bf16, as NCCL's bf16 all-reduce does); fp32: summed in fp32.
    WireDType wire_dtype = WireDType::Fp32;
    // true: each block's gradients are summed as soon as its backward is done (NCCL: on a side
    // stream, beside the rest of the backward); false: all at once after the backward.
    bool overlap = false;
};

struct RunConfig {
    ModelConfig model;
    LoraConfig lora;
    DataConfig data;
    TrainConfig train;
    OptimConfig optim;
    RuntimeConfig runtime;
    AccelConfig accel;
    DistConfig dist;
};

// Names as written in TOML ("random", "cosine", "bf16", ...).
const char* to_string(ModelArch v);
// Every model.arch value, quoted, for messages: "\"gpt2\", \"llama\", ... and \"qwen3\"".
std::string model_arch_names();
const char* to_string(RopeScaling v);
const char* to_string(SamplerKind v);
const char* to_string(Schedule v);
const char* to_string(DeviceKind v);
const char* to_string(Precision v);
const char* to_string(AttentionKind v);
const char* to_string(CpuMatmul v);
const char* to_string(Recompute v);
const char* to_string(StateDType v);
const char* to_string(Placement v);
const char* to_string(DistBackend v);
const char* to_string(WireDType v);
const char* to_string(EvalMode v);

}  // namespace trt
