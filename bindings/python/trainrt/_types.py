"""The value types of the binding: enums and immutable records (NamedTuples) of the C structs."""
from __future__ import annotations

import enum
from typing import NamedTuple, Tuple


class LogLevel(enum.IntEnum):
    """Severity of a library log line (TRAINRT_LOG_*)."""

    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3


class Feature(enum.IntFlag):
    """Bits of :func:`trainrt.build_features` (TRAINRT_FEATURE_*)."""

    CPU = 1 << 0  #: CPU backend (always)
    OPENMP = 1 << 1  #: CPU ops threaded with OpenMP
    OPENBLAS = 1 << 2  #: matmuls through OpenBLAS
    CUDA_MODULE = 1 << 3  #: libtrainrt-cuda found and loadable
    CUDNN = 1 << 4  #: cuDNN attention available
    NCCL = 1 << 5  #: multi-GPU through NCCL
    MPI = 1 << 6  #: multi-process through MPI
    ONEDNN = 1 << 7  #: CPU matmuls can run on oneDNN (accel.cpu_matmul)


class ProgressKind(enum.IntEnum):
    """What a :class:`Progress` reports (TRAINRT_PROGRESS_*)."""

    STEP = 0  #: a train step was logged (every runtime.log_every)
    EVAL = 1  #: an eval finished (every train.eval_every steps and after the last step)


class DType(enum.IntEnum):
    """Element type of exported weights (TRAINRT_DTYPE_*)."""

    F32 = 0
    BF16 = 1


class ParamRole(enum.IntEnum):
    """What a model tensor is (TRAINRT_PARAM_ROLE_*)."""

    TOKEN_EMBEDDING = 0
    POSITION_EMBEDDING = 1
    NORM = 2  #: LayerNorm / RMSNorm weight
    NORM_BIAS = 3
    LINEAR = 4  #: a linear layer's weight
    LINEAR_BIAS = 5
    HEAD = 6  #: an untied output head
    LORA_A = 7  #: a LoRA adapter's down projection [r, in]
    LORA_B = 8  #: its up projection [out, r]


class StepResult(NamedTuple):
    """Figures of one completed optimizer step (trainrt_step_result)."""

    step: int  #: 1-based number of the step; 0 = no step completed yet
    loss: float  #: mean train loss over the step's micro-batches (nats/token)
    lr: float  #: learning rate the step used
    grad_norm: float  #: global L2 norm of the gradient before clipping
    tokens: int  #: tokens this step trained on (grad_accum * batch_size * seq_len)
    tokens_total: int  #: tokens trained on since step 1
    ms: float  #: wall time of the step, milliseconds


class EvalResult(NamedTuple):
    """A whole evaluation (trainrt_eval_result): every target of a stream scored once."""

    loss: float  #: mean loss over the scored targets (nats/token)
    perplexity: float  #: exp(loss)
    tokens: int  #: targets scored: the stream's tokens - 1
    windows: int  #: windows of train.seq_len targets run (the last may be shorter)


class Metrics(NamedTuple):
    """Running figures of a session (trainrt_metrics, version 4: every field)."""

    step: int  #: optimizer steps completed
    tokens_total: int  #: tokens trained on
    tokens_per_s: float  #: over the recent steps (a window of up to 100)
    step_ms_p50: float  #: median step time over the same window, milliseconds
    step_ms_p95: float  #: 95th percentile step time, milliseconds
    bytes_in_use: int  #: backend memory held by the session, bytes
    last_loss: float  #: NaN before the first step (nats/token)
    last_val_loss: float  #: NaN before the first eval (nats/token)
    bytes_reserved: int  #: backend memory reserved (>= bytes_in_use), bytes
    skipped_steps: int  #: updates skipped for a non-finite gradient
    loss_scale: float  #: current dynamic loss scale (fp16), else 1
    model_flops_per_token: float  #: training FLOPs per token, 6N + 6*L*C*T
    peak_flops: float  #: the device's dense peak FLOP/s in the run's precision; 0 = unknown
    mfu: float  #: model FLOPs utilisation, normally in [0, 1]; 0 when the peak is unknown
    rank: int  #: data parallel: this process's rank (0 alone)
    world_size: int  #: the ranks training together (1 alone)


class Progress(NamedTuple):
    """What :meth:`Session.train` reports to its callback (trainrt_progress)."""

    kind: ProgressKind  #: STEP or EVAL
    step: int  #: last completed step
    steps_total: int  #: train.steps
    loss: float  #: STEP: train loss of that step; EVAL: val loss (nats/token)
    lr: float
    grad_norm: float
    tokens_total: int
    ms: float  #: STEP: that step's time, milliseconds
    tokens_per_s: float  #: recent throughput
    elapsed_s: float  #: seconds since train() began
    eta_s: float  #: estimated seconds to train.steps


class ModelInfo(NamedTuple):
    """What a config's model costs (trainrt_model_info, version 2)."""

    parameters: int  #: the model's parameters (tied wte counted once; LoRA adapters included)
    flops_per_token: float  #: training FLOPs per token
    bytes_parameters: int  #: fp32 weights (+ the low-precision working copy), bytes
    bytes_optimizer: int  #: gradients + AdamW moments of the trainable parameters, bytes
    bytes_activations: int  #: activations + backward scratch for one micro-batch, bytes
    bytes_total: int  #: the three above: the backend memory a session holds, bytes
    trainable_parameters: int  #: those that train (all, or LoRA adapters / train.trainable)


class ParamInfo(NamedTuple):
    """One model tensor (trainrt_param_info and its name)."""

    name: str  #: Hugging Face name, e.g. "h.0.attn.c_attn.weight"
    shape: Tuple[int, ...]  #: as in Hugging Face files (1 or 2 dims)
    role: ParamRole
    layer: int  #: the block it belongs to; -1 for embeddings, final norm, head
    trainable: bool  #: False: frozen (LoRA base, train.trainable)
    numel: int  #: elements (floats)
    offset: int  #: its first element in the flat buffer of all tensors


class LossMask(enum.IntEnum):
    """Which tokens of a chat example are targets (TRAINRT_LOSS_MASK_*)."""

    DEFAULT = 0  #: assistant for "messages", completion for prompt-completion
    ASSISTANT = 1  #: every assistant turn, its end-of-turn token included
    COMPLETION = 2  #: the completion; of "messages", the last assistant turn
    ALL = 3  #: every token but the first


class PrepareResult(NamedTuple):
    """What :func:`prepare_text` wrote (trainrt_prepare_result, version 3)."""

    documents: int
    train_tokens: int
    val_tokens: int
    bytes: int  #: input bytes tokenized
    token_bytes: int  #: 2 or 4: the shards' id width
    vocab_size: int  #: the tokenizer's: the smallest model.vocab_size for these shards
    eos_id: int  #: the end-of-text token that begins each document
    train_shards: int  #: files written
    val_shards: int
    examples: int = 0  #: chat: examples written (per-turn conversations give several)
    target_tokens: int = 0  #: chat: tokens of both splits whose loss counts
    per_turn: int = 0  #: chat: conversations written one example per assistant turn


class TokenizerTrainResult(NamedTuple):
    """What :func:`tokenizer_train` did (trainrt_tokenizer_train_result)."""

    bytes: int  #: input bytes read
    pieces: int  #: pre-tokenized pieces counted
    distinct_pieces: int
    vocab_size: int  #: written (below the requested size when no pair was left)
    merges: int
