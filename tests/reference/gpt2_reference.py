#!/usr/bin/python3
"""PyTorch reference test for libtrainrt (TESTING.md, layer 2).

An independent GPT-2 written here from the math (not from libtrainrt's C++) trains from the
same Hugging Face-named safetensors init, on the same sequential batches, with the same
AdamW / global-norm clip / warmup+cosine schedule as `trainrt train`. Per step, the losses must
agree within 1e-4 relative, the learning rates within 1e-6 and the pre-clip gradient norms
within 1e-3. Two cases: grad_accum = 1 and grad_accum = 2.

Usage:
    /usr/bin/python3 gpt2_reference.py --trainrt PATH/trainrt --workdir DIR [--steps 12]
    /usr/bin/python3 gpt2_reference.py --torch-only --workdir DIR   (reference side only)

Exit status: 0 pass, 1 mismatch or trainrt failure, 77 torch unavailable (CTest skip).
Only the standard library, torch and numpy are used. What is not GPT-2 (data, sampler,
safetensors, AdamW/clip/schedule, the trainrt run, comparison, command line) lives in
reference_common.py, shared with llama_reference.py.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Exits 77 when torch/numpy cannot be imported.
from reference_common import (Case, ModelSpec, Tolerances, attention_dropout_site,  # noqa: E402
                              dropout, packed_causal_mask, residual_dropout_site, run)
import torch  # noqa: E402

# ----------------------------------------------------------------------------- the test case
MODEL = dict(vocab_size=64, context_length=64, n_layer=2, n_head=4, d_model=64)
INIT_SEED = 4321

LOSS_RTOL, LR_RTOL, GNORM_RTOL, WEIGHT_RTOL = 1e-4, 1e-6, 1e-3, 1e-4
STRICT_LOSS_RTOL, STRICT_GNORM_RTOL = 1e-6, 1e-5  # --strict


# ----------------------------------------------------------------------------- GPT-2 from the math
def hf_param_shapes(cfg):
    V, Tm, L, C = cfg["vocab_size"], cfg["context_length"], cfg["n_layer"], cfg["d_model"]
    shapes = [("wte.weight", (V, C)), ("wpe.weight", (Tm, C))]
    for i in range(L):
        p = f"h.{i}."
        shapes += [
            (p + "ln_1.weight", (C,)), (p + "ln_1.bias", (C,)),
            (p + "attn.c_attn.weight", (C, 3 * C)), (p + "attn.c_attn.bias", (3 * C,)),
            (p + "attn.c_proj.weight", (C, C)), (p + "attn.c_proj.bias", (C,)),
            (p + "ln_2.weight", (C,)), (p + "ln_2.bias", (C,)),
            (p + "mlp.c_fc.weight", (C, 4 * C)), (p + "mlp.c_fc.bias", (4 * C,)),
            (p + "mlp.c_proj.weight", (4 * C, C)), (p + "mlp.c_proj.bias", (C,)),
        ]
    shapes += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    return shapes


def init_params(cfg, seed):
    """normal(0, 0.02) matrices/embeddings; deliberately non-trivial biases and LayerNorm
    parameters (a zero bias or unit gain would hide a missing or transposed term)."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in hf_param_shapes(cfg):
        r = torch.randn(shape, generator=g, dtype=torch.float32)
        if name.startswith("ln") or ".ln_" in name:
            t = 1.0 + 0.1 * r if name.endswith(".weight") else 0.1 * r
        else:  # matmul weights, embeddings and (non-zero) matmul biases
            t = 0.02 * r
        params[name] = t
    return params


def layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased variance
    return (x - mean) / torch.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gpt2_loss(p, cfg, idx, targets, per_token=False):
    """Mean next-token cross-entropy over the B*T positions of one micro-batch (or the (B, T)
    per-position losses with per_token=True)."""
    logp = torch.log_softmax(gpt2_logits(p, cfg, idx), dim=-1)
    nll = -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return nll if per_token else nll.mean()


def gpt2_logits(p, cfg, idx, positions=None):
    """(B, T, V) next-token logits of GPT-2 with HF-named parameters p for ids idx (B, T).
    positions (B, T), or None for 0 .. T-1: packed rows, an example beginning at each 0 — wpe
    at the positions, and attention within an example only (block-diagonal causal)."""
    B, T = idx.shape
    C, H, L = cfg["d_model"], cfg["n_head"], cfg["n_layer"]
    hs = C // H
    if positions is None:
        x = dropout(p["wte.weight"][idx] + p["wpe.weight"][:T].unsqueeze(0), 0)  # (B,T,C)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
    else:
        x = dropout(p["wte.weight"][idx] + p["wpe.weight"][positions], 0)
        causal = packed_causal_mask(positions)                            # (B,1,T,T)
    for i in range(L):
        q_ = f"h.{i}."
        h = layer_norm(x, p[q_ + "ln_1.weight"], p[q_ + "ln_1.bias"])
        qkv = h @ p[q_ + "attn.c_attn.weight"] + p[q_ + "attn.c_attn.bias"]  # Conv1D: x.W + b
        q, k, v = qkv.split(C, dim=-1)
        q = q.view(B, T, H, hs).transpose(1, 2)                             # (B,H,T,hs)
        k = k.view(B, T, H, hs).transpose(1, 2)
        v = v.view(B, T, H, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~causal, float("-inf"))
        att = dropout(torch.softmax(att, dim=-1), attention_dropout_site(i))  # (B,H,T,T)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + dropout(y @ p[q_ + "attn.c_proj.weight"] + p[q_ + "attn.c_proj.bias"],
                        residual_dropout_site(i, mlp=False))
        h = layer_norm(x, p[q_ + "ln_2.weight"], p[q_ + "ln_2.bias"])
        h = gelu_tanh(h @ p[q_ + "mlp.c_fc.weight"] + p[q_ + "mlp.c_fc.bias"])
        x = x + dropout(h @ p[q_ + "mlp.c_proj.weight"] + p[q_ + "mlp.c_proj.bias"],
                        residual_dropout_site(i, mlp=True))
    x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
    return x @ p["wte.weight"].t()                                        # tied head


# ----------------------------------------------------------------------------- the test
def key_bias_split(n, g, ref):
    """The key third of each c_attn.bias is reported but not asserted: its gradient is zero in
    exact arithmetic (a per-query constant added to every score cancels in the softmax), so
    AdamW turns rounding noise into lr-sized updates there (~6e-5 between torch fp32 and fp64
    already) and it never affects the loss."""
    if not n.endswith("attn.c_attn.bias"):
        return None
    C = MODEL["d_model"]
    kb = (g[C:2 * C] - ref[C:2 * C]).norm().item() / ref[C:2 * C].norm().item()
    keep = torch.cat([torch.arange(0, C), torch.arange(2 * C, 3 * C)])
    return g[keep], ref[keep], kb


def gpt2_self_check(spec):
    """The hand-written math against torch's building blocks."""
    init = spec.init
    h = torch.randn(3, 5, MODEL["d_model"], generator=torch.Generator().manual_seed(7))
    w, b = init["h.0.ln_1.weight"], init["h.0.ln_1.bias"]
    assert torch.allclose(layer_norm(h, w, b), torch.nn.functional.layer_norm(h, (h.shape[-1],), w, b, 1e-5), atol=1e-5)
    assert torch.allclose(gelu_tanh(h), torch.nn.functional.gelu(h, approximate="tanh"), atol=1e-6)


def model_toml(init_file):
    return f"""vocab_size = {MODEL['vocab_size']}
context_length = {MODEL['context_length']}
n_layer = {MODEL['n_layer']}
n_head = {MODEL['n_head']}
d_model = {MODEL['d_model']}
init_from = "{init_file}"
"""


def main():
    spec = ModelSpec(
        key="", cfg=MODEL,
        describe=(f"V{MODEL['vocab_size']} Tmax{MODEL['context_length']} L{MODEL['n_layer']} "
                  f"H{MODEL['n_head']} C{MODEL['d_model']}"),
        param_shapes=hf_param_shapes(MODEL), init=init_params(MODEL, INIT_SEED),
        loss=lambda p, x, y, per_token=False: gpt2_loss(p, MODEL, x, y, per_token),
        model_toml=model_toml)
    cases = [Case(f"accum{a}", spec, a) for a in (1, 2)]
    return run(__doc__, "gpt2_reference.py", cases,
               Tolerances(LOSS_RTOL, LR_RTOL, GNORM_RTOL, WEIGHT_RTOL),
               Tolerances(STRICT_LOSS_RTOL, LR_RTOL, STRICT_GNORM_RTOL, WEIGHT_RTOL),
               extra_self_check=gpt2_self_check, weight_split=key_bias_split,
               weight_split_label="key bias")


if __name__ == "__main__":
    sys.exit(main())
