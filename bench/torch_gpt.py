#!/usr/bin/env python3
"""The PyTorch twin of `trainrt bench`: GPT-2 training throughput in PyTorch, same model,
batch and tokens per step, for the GPU benchmark ladder (bench/gpu_ladder.py).

Model: GPT-2 as libtrainrt trains it -- learned position embeddings, pre-LN blocks
(LayerNorm eps 1e-5), causal self-attention with biases, MLP 4C with GELU (tanh
approximation), final LayerNorm, output head tied to the token embedding; no dropout.
The initialisation is GPT-2's (normal 0.02, residual projections 0.02/sqrt(2L), zero biases),
not libtrainrt's bit for bit: only throughput is compared, the losses are reported for
sanity (both start near ln V).
The module also holds a Llama twin (class Llama; `[model] arch = "llama"` of libtrainrt:
RMSNorm, RoPE with rotate_half, grouped-query attention, SwiGLU, no biases, untied head unless
tie_embeddings) used by bench/cpu_vs_torch.py --model small-llama and by the preset
smoke-llama here; make_model(cfg) picks by cfg["arch"] (default "gpt2").
Step: grad_accum micro-batches of B x T (forward + backward, loss / grad_accum), global-norm
clip 1.0, AdamW (lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on tensors with >= 2
dims), zero_grad. Batches: random windows of a resident token tensor on the device (the
--data llm.c shard, else uniform random tokens), drawn with torch.randint on the device.

Modes (--modes, comma-separated):
  eager          the model as is
  compile        torch.compile(model)
  compile-ro     torch.compile(model, mode="reduce-overhead")  (CUDA graphs)
(the compiled modes on CUDA only: on the CPU they are recorded as n/a)
CUDA: bf16 autocast, TF32 matmuls for what stays fp32, F.scaled_dot_product_attention
(is_causal=True, flash attention where available), AdamW(fused=True). What the installed
torch lacks degrades, and is recorded: no SDPA -> explicit masked softmax; no fused AdamW ->
the default implementation; no torch.compile -> the mode is "n/a (reason)". CPU: fp32, no
autocast (a smoke run of the harness, e.g. --device cpu --preset tiny --steps 3).

Timing: --warmup steps (compilation and CUDA-graph recording happen there), synchronize, then
--steps timed steps with no host synchronisation inside (per-step times from CUDA events on
the GPU, perf_counter on the CPU; losses read back after the last step), synchronize.
tokens/s = steps x tokens per step / wall time; p50/p95 are nearest-rank percentiles of the
per-step times. On CUDA out-of-memory the mode is retried at half the batch with twice the
grad_accum (same tokens per step), down to batch 1.

Kernels (--profile-steps N, issue 43): after the timed steps, N more steps of the same mode
run under torch.profiler, and the run's record gets "kernels": every kernel (CUDA; on the CPU
every operator) with its calls and its own device (CPU) time per step, the most time first,
and "kernel_ms_per_step", their sum. It is what torch.compile's step is made of, for the
results file beside libtrainrt's per-op profile; the timed figures above come before it and
are not affected.

Output: a line per mode on stdout and, with --json FILE, {"runs": [...]} (fields:
bench/README.md). Exit status 0 when every requested mode ran or is n/a, 1 when one failed,
77 when torch cannot be imported.
"""

import argparse
import gc
import json
import math
import os
import struct
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except Exception as exc:  # noqa: BLE001 - any import failure means "no torch here"
    print(f"torch_gpt: PyTorch not importable with {sys.executable}: {exc}", file=sys.stderr)
    sys.exit(77)

PRESETS = {
    # GPT-2 124M at T = 1024.
    "gpt2": dict(vocab_size=50257, context_length=1024, n_layer=12, n_head=12, d_model=768,
                 batch=64, seq_len=1024, grad_accum=1),
    # The ladder's tiny model: V=256, L6 H6 C384, T=256, B=64.
    "tiny": dict(vocab_size=256, context_length=256, n_layer=6, n_head=6, d_model=384,
                 batch=64, seq_len=256, grad_accum=1),
    # The CPU smoke test of the harness.
    "smoke": dict(vocab_size=256, context_length=64, n_layer=2, n_head=2, d_model=64,
                  batch=4, seq_len=64, grad_accum=1),
    # The CPU smoke test of the Llama twin (grouped-query attention, untied head).
    "smoke-llama": dict(arch="llama", vocab_size=256, context_length=64, n_layer=2, n_head=4,
                        n_kv_head=2, d_model=64, d_ff=160, rope_theta=10000.0, norm_eps=1e-5,
                        tie_embeddings=False, batch=4, seq_len=64, grad_accum=1),
}
OPTIM = dict(lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, grad_clip=1.0)
SHARD_MAGIC, SHARD_VERSION = 20240520, 1
MODES = ("eager", "compile", "compile-ro")

HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")


# ----------------------------------------------------------------------------- model
class CausalSelfAttention(nn.Module):
    def __init__(self, C, H, Tmax):
        super().__init__()
        self.H = H
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        if not HAVE_SDPA:
            self.register_buffer("mask", torch.ones(Tmax, Tmax, dtype=torch.bool).tril()
                                 .view(1, 1, Tmax, Tmax), persistent=False)

    def forward(self, x):  # x [B, T, C]
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        if HAVE_SDPA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, H, T, hs]
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf")).softmax(dim=-1)
            y = att @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, C, H, Tmax):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.attn = CausalSelfAttention(C, H, Tmax)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.mlp = MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        V, Tmax, L = cfg["vocab_size"], cfg["context_length"], cfg["n_layer"]
        C, H = cfg["d_model"], cfg["n_head"]
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(Tmax, C)
        self.h = nn.ModuleList(Block(C, H, Tmax) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, eps=1e-5)
        for name, p in self.named_parameters():  # GPT-2 init
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln_" in name:
                nn.init.ones_(p)
            else:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, idx, targets):  # idx, targets [B, T]
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied head: [B, T, V]
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))


# ----------------------------------------------------------------------------- Llama twin
# The Llama family as libtrainrt trains it (`[model] arch = "llama"`, docs/FORMATS.md §2, HF
# LlamaForCausalLM): RMSNorm, rotary positions (rotate_half pairing, cos/sin precomputed once),
# grouped-query attention, SwiGLU MLP, no biases, tied or untied head; no dropout. Written the
# way a PyTorch user would (separate q/k/v projections, repeat_interleave of the kv heads);
# libtrainrt's init: normal 0.02 for every matrix and embedding, norm weights 1.
class RMSNorm(nn.Module):  # torch < 2.4 has no nn.RMSNorm
    def __init__(self, C, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.size(-1) // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, C, H, KV, Tmax, qkv_bias=False):
        super().__init__()
        self.H, self.KV, self.hs = H, KV, C // H
        self.q_proj = nn.Linear(C, H * self.hs, bias=qkv_bias)  # Qwen2: biases on q, k, v
        self.k_proj = nn.Linear(C, KV * self.hs, bias=qkv_bias)
        self.v_proj = nn.Linear(C, KV * self.hs, bias=qkv_bias)
        self.o_proj = nn.Linear(H * self.hs, C, bias=False)
        if not HAVE_SDPA:
            self.register_buffer("mask", torch.ones(Tmax, Tmax, dtype=torch.bool).tril()
                                 .view(1, 1, Tmax, Tmax), persistent=False)

    def forward(self, x, cos, sin):  # x [B, T, C]; cos, sin [T, hs]
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.hs).transpose(1, 2)   # [B, H, T, hs]
        k = self.k_proj(x).view(B, T, self.KV, self.hs).transpose(1, 2)  # [B, KV, T, hs]
        v = self.v_proj(x).view(B, T, self.KV, self.hs).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if self.KV != self.H:  # query head h reads kv head h // (H / KV)
            k = k.repeat_interleave(self.H // self.KV, dim=1)
            v = v.repeat_interleave(self.H // self.KV, dim=1)
        if HAVE_SDPA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hs))
            att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf")).softmax(dim=-1)
            y = att @ v
        return self.o_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class LlamaMLP(nn.Module):
    def __init__(self, C, D):
        super().__init__()
        self.gate_proj = nn.Linear(C, D, bias=False)
        self.up_proj = nn.Linear(C, D, bias=False)
        self.down_proj = nn.Linear(D, C, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, C, H, KV, D, Tmax, eps, qkv_bias=False):
        super().__init__()
        self.input_layernorm = RMSNorm(C, eps)
        self.self_attn = LlamaAttention(C, H, KV, Tmax, qkv_bias)
        self.post_attention_layernorm = RMSNorm(C, eps)
        self.mlp = LlamaMLP(C, D)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    """cfg: vocab_size, context_length, n_layer, n_head, d_model and optionally n_kv_head
    (0 / absent = n_head), d_ff (0 / absent = 4 d_model), rope_theta (10000), norm_eps (1e-5),
    tie_embeddings (False) -- the keys and defaults of docs/CONFIG.md except the head, which
    is untied here unless asked (HF Llama's default)."""

    def __init__(self, cfg):
        super().__init__()
        V, Tmax, L = cfg["vocab_size"], cfg["context_length"], cfg["n_layer"]
        C, H = cfg["d_model"], cfg["n_head"]
        KV = cfg.get("n_kv_head") or H
        D = cfg.get("d_ff") or 4 * C
        eps, theta = cfg.get("norm_eps", 1e-5), cfg.get("rope_theta", 10000.0)
        hs = C // H
        if C % H or H % KV or hs % 2:
            raise ValueError(f"Llama: d_model {C}, n_head {H}, n_kv_head {KV}: need C % H == 0, "
                             "H % KV == 0 and an even head size")
        self.embed_tokens = nn.Embedding(V, C)
        qkv_bias = cfg.get("arch") == "qwen2"  # libtrainrt's `qwen2` family: Llama + q/k/v biases
        self.layers = nn.ModuleList(LlamaBlock(C, H, KV, D, Tmax, eps, qkv_bias)
                                    for _ in range(L))
        self.norm = RMSNorm(C, eps)
        self.tied = bool(cfg.get("tie_embeddings", False))
        self.lm_head = None if self.tied else nn.Linear(C, V, bias=False)
        inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
        ang = torch.arange(Tmax, dtype=torch.float64)[:, None] * inv_freq[None, :]
        ang = torch.cat((ang, ang), dim=-1)                                # [Tmax, hs]
        self.register_buffer("rope_cos", ang.cos().float(), persistent=False)
        self.register_buffer("rope_sin", ang.sin().float(), persistent=False)
        for name, p in self.named_parameters():  # libtrainrt's Llama init
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
            else:
                nn.init.normal_(p, mean=0.0, std=0.02)

    def forward(self, idx, targets):  # idx, targets [B, T]
        T = idx.size(1)
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        x = self.embed_tokens(idx)
        for block in self.layers:
            x = block(x, cos, sin)
        x = self.norm(x)
        logits = x @ self.embed_tokens.weight.t() if self.tied else self.lm_head(x)
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))


def make_model(cfg):
    """GPT (the default) or Llama, by cfg["arch"] ("gpt2" / "llama" / "qwen2": Llama with q/k/v
    biases)."""
    arch = cfg.get("arch", "gpt2")
    if arch in ("llama", "qwen2"):
        return Llama(cfg)
    if arch == "gpt2":
        return GPT(cfg)
    raise ValueError(f"unknown arch {arch!r}")


def count_params(model):
    return sum(p.numel() for p in model.parameters())  # the tied wte counts once


# ----------------------------------------------------------------------------- data
def read_shard(path):
    """An llm.c token shard (docs/FORMATS.md §1): 256 int32 header, then uint16 ids."""
    with open(path, "rb") as f:
        data = f.read()
    magic, version, n = struct.unpack("<3i", data[:12])
    if magic != SHARD_MAGIC or version != SHARD_VERSION or len(data) != 1024 + 2 * n:
        raise ValueError(f"{path}: not an llm.c shard (magic {magic}, version {version})")
    ids = torch.frombuffer(bytearray(data[1024:]), dtype=torch.int16)
    return ids.to(torch.int64) & 0xFFFF


class ResidentBatches:
    """Random windows of B x (T+1) tokens of a token tensor resident on the device."""

    def __init__(self, tokens, device, T, seed):
        self.tokens, self.T = tokens.to(device), T
        self.offsets = torch.arange(T + 1, device=device)
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed)

    def next(self, B):
        starts = torch.randint(0, self.tokens.numel() - self.T - 1, (B, 1), device=self.tokens.device,
                               generator=self.gen)
        rows = self.tokens[starts + self.offsets]  # [B, T+1]
        return rows[:, :-1], rows[:, 1:]


# ----------------------------------------------------------------------------- one mode
def nearest_rank(xs, q):
    if not xs:
        return 0.0
    s = sorted(xs)
    rank = math.ceil(q * len(s) - 1e-9)
    return s[min(max(rank, 1), len(s)) - 1]


def is_oom(exc):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom_type is not None and isinstance(exc, oom_type)) or "out of memory" in str(exc)


def make_optimizer(model, device):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [dict(params=decay, weight_decay=OPTIM["weight_decay"]),
              dict(params=no_decay, weight_decay=0.0)]
    kw = dict(lr=OPTIM["lr"], betas=OPTIM["betas"], eps=OPTIM["eps"])
    if device.type == "cuda":
        try:
            return torch.optim.AdamW(groups, fused=True, **kw), True
        except (TypeError, RuntimeError, ValueError):
            pass  # this torch has no fused AdamW
    return torch.optim.AdamW(groups, **kw), False


def run_mode(mode, cfg, args, device, tokens):
    """Warm-up + timed steps of one mode; a dict of figures (status ok/n/a/error)."""
    rec = dict(mode=mode, status="ok", reason="", batch_size=cfg["batch"], seq_len=cfg["seq_len"],
               grad_accum=cfg["grad_accum"], attention="sdpa" if HAVE_SDPA else "manual")
    if mode != "eager" and not hasattr(torch, "compile"):
        return dict(rec, status="n/a", reason=f"torch {torch.__version__} has no torch.compile")
    if mode != "eager" and device.type != "cuda":
        # CPU runs are smoke tests of the harness; inductor's CPU compile would dominate them.
        return dict(rec, status="n/a", reason="compiled modes are measured on CUDA only")
    torch.manual_seed(1337)
    model = make_model(cfg).to(device)
    rec["parameters"] = count_params(model)
    opt, fused = make_optimizer(model, device)
    rec["fused_adamw"] = fused
    step_model = model
    if mode == "compile":
        step_model = torch.compile(model)
    elif mode == "compile-ro":
        step_model = torch.compile(model, mode="reduce-overhead")
    cuda = device.type == "cuda"
    rec["autocast"] = "bf16" if cuda else "none"
    batches = ResidentBatches(tokens, device, cfg["seq_len"], seed=1)
    B, GA = cfg["batch"], cfg["grad_accum"]
    params = list(model.parameters())

    # reduce-overhead replays CUDA graphs whose outputs the next replay overwrites: mark each
    # micro-step as a new one (every output used below is copied out before that).
    mark_step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    mark_step = mark_step if mode == "compile-ro" else None

    def one_step():
        total = None
        for _ in range(GA):
            x, y = batches.next(B)
            if mark_step is not None:
                mark_step()
            if cuda:
                with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                    loss = step_model(x, y) / GA
            else:
                loss = step_model(x, y) / GA
            loss.backward()
            total = loss.detach() if total is None else total + loss.detach()
        torch.nn.utils.clip_grad_norm_(params, OPTIM["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total

    t_warm = time.perf_counter()
    for _ in range(args.warmup):
        one_step()
    if cuda:
        torch.cuda.synchronize()
    rec["warmup_s"] = time.perf_counter() - t_warm
    losses, marks = [], []
    t0 = time.perf_counter()
    for _ in range(args.steps):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            losses.append(one_step())
            end.record()
            marks.append((start, end))
        else:
            s = time.perf_counter()
            losses.append(one_step())
            marks.append(1000.0 * (time.perf_counter() - s))
    if cuda:
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    step_ms = [a.elapsed_time(b) for a, b in marks] if cuda else marks
    losses = [float(l) for l in losses]
    tokens_per_step = B * cfg["seq_len"] * GA
    rec.update(
        tokens_per_step=tokens_per_step, warmup_steps=args.warmup, timed_steps=args.steps,
        wall_s=wall, tokens_per_s=args.steps * tokens_per_step / wall,
        steps_per_s=args.steps / wall, step_ms_mean=1000.0 * wall / args.steps,
        step_ms_p50=nearest_rank(step_ms, 0.5), step_ms_p95=nearest_rank(step_ms, 0.95),
        first_loss=losses[0], last_loss=losses[-1], losses=losses, step_ms=step_ms,
        max_memory_bytes=torch.cuda.max_memory_allocated() if cuda else 0)
    if not all(math.isfinite(l) for l in losses):
        rec.update(status="error", reason="non-finite loss")
    if args.profile_steps > 0 and rec["status"] == "ok":
        try:
            rows, total, n = kernel_table(one_step, args.profile_steps, cuda, args.profile_top)
            rec.update(kernels=rows, kernel_ms_per_step=total, kernel_kinds=n,
                       kernel_profiled_steps=args.profile_steps,
                       kernel_what="CUDA kernels, own device time" if cuda
                       else "CPU operators, own time")
        except Exception as exc:  # noqa: BLE001 - the timed figures stand without the table
            rec["kernels_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return rec


def self_time_us(avg, cuda):
    """A profiler row's own time on the device (CUDA) or the CPU, in microseconds, across torch
    versions (self_device_time_total from 2.4, self_cuda_time_total before)."""
    if not cuda:
        return float(avg.self_cpu_time_total)
    for name in ("self_device_time_total", "self_cuda_time_total"):
        v = getattr(avg, name, None)
        if v is not None:
            return float(v)
    return 0.0


def kernel_table(one_step, steps, cuda, top):
    """`steps` calls of one_step under torch.profiler: the kernels (CUDA) or operators (CPU) by
    their own time per step, the most first (at most `top`), and their summed time per step."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            one_step()
        if cuda:
            torch.cuda.synchronize()
    rows = []
    for avg in prof.key_averages():
        us = self_time_us(avg, cuda)
        # On CUDA a kernel is a row with device time of its own and no CPU time of its own
        # (the launching operators have CPU time; their device time is their kernels').
        if us <= 0 or (cuda and float(avg.self_cpu_time_total) > 0):
            continue
        rows.append(dict(name=avg.key, calls_per_step=avg.count / steps,
                         ms_per_step=us / 1000.0 / steps))
    rows.sort(key=lambda r: -r["ms_per_step"])
    total = sum(r["ms_per_step"] for r in rows)
    for r in rows:
        r["share"] = r["ms_per_step"] / total if total > 0 else 0.0
    return rows[:top], total, len(rows)


def run_mode_with_oom_retry(mode, cfg, args, device, tokens):
    cfg = dict(cfg)
    while True:
        try:
            return run_mode(mode, cfg, args, device, tokens)
        except Exception as exc:  # noqa: BLE001 - reported in the record
            if device.type == "cuda" and is_oom(exc) and cfg["batch"] > 1:
                print(f"torch_gpt: {mode}: out of memory at batch {cfg['batch']}; retrying at "
                      f"{cfg['batch'] // 2} x grad_accum {cfg['grad_accum'] * 2}", file=sys.stderr)
                cfg["batch"] //= 2
                cfg["grad_accum"] *= 2
            else:
                return dict(mode=mode, status="error", reason=f"{type(exc).__name__}: {exc}"[:500],
                            batch_size=cfg["batch"], seq_len=cfg["seq_len"],
                            grad_accum=cfg["grad_accum"])
        finally:
            gc.collect()  # the failed attempt's model and optimizer state
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if hasattr(torch, "_dynamo"):
                torch._dynamo.reset()  # a fresh compile per mode and retry


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    for k in ("vocab_size", "context_length", "n_layer", "n_head", "d_model", "batch", "seq_len",
              "grad_accum"):
        ap.add_argument("--" + k.replace("_", "-"), type=int, help="override the preset's " + k)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--data", help="llm.c token shard (default: uniform random tokens)")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch's default)")
    ap.add_argument("--json", help="write {'runs': [...]} here")
    ap.add_argument("--profile-steps", type=int, default=0,
                    help="after the timed steps, this many under torch.profiler: the kernel table")
    ap.add_argument("--profile-top", type=int, default=40, help="kernels kept in the table")
    args = ap.parse_args()
    cfg = dict(PRESETS[args.preset])
    for k in cfg:
        if getattr(args, k, None) is not None:
            cfg[k] = getattr(args, k)
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad or args.steps < 1 or args.warmup < 0 or args.profile_steps < 0 or args.profile_top < 1:
        ap.error(f"bad --modes {bad} or --steps/--warmup/--profile-steps/--profile-top")

    if args.device == "cuda" and not torch.cuda.is_available():
        runs = [dict(mode=m, status="n/a", reason="torch.cuda.is_available() is False") for m in modes]
        device = None
    else:
        device = torch.device(args.device)
        if args.threads > 0:
            torch.set_num_threads(args.threads)
        if device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        if args.data:
            tokens = read_shard(args.data)
        else:
            tokens = torch.randint(0, cfg["vocab_size"], (2_000_000,),
                                   generator=torch.Generator().manual_seed(1))
        if int(tokens.max()) >= cfg["vocab_size"]:
            sys.exit(f"torch_gpt: {args.data} holds ids >= vocab_size {cfg['vocab_size']}")
        runs = [run_mode_with_oom_retry(m, cfg, args, device, tokens) for m in modes]

    env = dict(torch_version=torch.__version__, python=sys.version.split()[0],
               device=args.device, preset=args.preset, model={k: cfg[k] for k in (
                   "vocab_size", "context_length", "n_layer", "n_head", "d_model")},
               device_name=torch.cuda.get_device_name(0) if device is not None and device.type == "cuda"
               else "cpu", sdpa=HAVE_SDPA)
    for r in runs:
        if r["status"] == "ok":
            print(f"torch {r['mode']}: {r['tokens_per_s']:.0f} tok/s, step ms p50 "
                  f"{r['step_ms_p50']:.2f} p95 {r['step_ms_p95']:.2f}, loss {r['first_loss']:.4f} -> "
                  f"{r['last_loss']:.4f} (B{r['batch_size']} x GA{r['grad_accum']}, "
                  f"{r['parameters']} params, attention {r['attention']}, fused AdamW "
                  f"{r['fused_adamw']}, warm-up {r['warmup_s']:.1f} s)")
        else:
            print(f"torch {r['mode']}: {r['status']} ({r['reason']})")
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(env, runs=runs), f, indent=1)
        os.replace(tmp, args.json)
    return 1 if any(r["status"] == "error" for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
