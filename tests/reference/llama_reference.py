#!/usr/bin/python3
"""PyTorch Llama reference test for libtrainrt (TESTING.md, layer 2; issue 16).

An independent Llama written here from the equations (not from libtrainrt's C++, nor from
transformers, which is not used) trains from the same Hugging Face LlamaForCausalLM-named
safetensors init, on the same sequential batches, with the same AdamW / global-norm clip /
warmup+cosine schedule as `trainrt train` (all of that shared with gpt2_reference.py through
reference_common.py). Per step, the losses must agree within 1e-5 relative, the learning rates
within 1e-6 and the pre-clip gradient norms within 1e-4 (--strict: 1e-6 and 1e-5).

The model (HF Llama semantics, no biases anywhere):
    x = embed_tokens[ids]
    per layer:  a = rms(x, input_layernorm)
                h = x + o_proj(attn(rope(q_proj a), rope(k_proj a), v_proj a))
                m = rms(h, post_attention_layernorm)
                x = h + down_proj(silu(gate_proj m) * up_proj m)
    logits = lm_head(rms(x, norm))             (lm_head = embed_tokens when tied)
rms(x, w) = x * rsqrt(mean(x^2) + eps) * w; RoPE with rotate_half (dimension i pairs with
i + hs/2), inv_freq = theta^(-2j/hs), positions 0..T-1; causal attention scaled 1/sqrt(hs);
query head h reads kv head h // (n_head / n_kv_head); cross-entropy over the V logits.

Cases (V64, context 64, L2, H4, C64, d_ff 96; B4 T32; 12 steps by default):
    mha_untied         n_kv_head 4, untied head, grad_accum 1
    gqa_untied         n_kv_head 2, untied head, grad_accum 1
    gqa_tied           n_kv_head 1, tie_embeddings = true (no lm_head tensor), grad_accum 1
    gqa_untied_accum2  n_kv_head 2, untied head, grad_accum 2 (the sampler wraps on step 11)

With --families, the cases are the Llama-shaped families and RoPE scalings instead, each
started from a Hugging Face model folder (config.json + model.safetensors; [model] names only
init_from, so trainrt takes family and shape from the folder):
    qwen2_gqa          model_type qwen2: biases on q_proj, k_proj and v_proj (Qwen2Attention:
                       q = a W_q^T + b_q, likewise k and v), n_kv_head 2, untied head
    llama3_rope        rope_scaling llama3 (transformers' _compute_llama3_parameters): with
                       wavelength w_j = 2 pi / inv_freq_j, inv_freq_j / factor where
                       w_j > original / low_freq_factor, unchanged where w_j < original /
                       high_freq_factor, else (1 - s) inv_freq_j / factor + s inv_freq_j with
                       s = (original / w_j - low) / (high - low); factor 8, low 1, high 4,
                       original 64, so hs 16's pairs fall in all three regions; tied head
    llama_linear_rope  rope_scaling linear: inv_freq_j / factor, factor 2.5
    llama_head_dim     head_dim 24 with d_model 64 and 4 heads: q_proj [96, 64], k/v_proj
                       [48, 64], o_proj [64, 96], attention scaled 1/sqrt(24)
    qwen3_qk_norm      model_type qwen3 (Qwen3Attention): q = rope(rms(q_proj a per head,
                       q_norm)), k likewise with k_norm, each head of 24 normalised over its
                       own 24 values with eps rms_norm_eps; tied head
    mistral_window     model_type mistral, sliding_window 12 (query i reads keys j with
                       j <= i and i - j < 12, as transformers' sliding_window_overlay; the mask
                       itself is checked against a per-position loop)

Usage:
    /usr/bin/python3 llama_reference.py --trainrt PATH/trainrt --workdir DIR [--steps 12] [--strict] [--families]
    /usr/bin/python3 llama_reference.py --torch-only --workdir DIR   (reference side only)

Exit status: 0 pass, 1 mismatch or trainrt failure, 77 torch unavailable (CTest skip). Only the standard library, torch and numpy are used.
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Exits 77 when torch/numpy cannot be imported.
from reference_common import OPTIM as OPTIM_BASE  # noqa: E402
from reference_common import (Case, ModelSpec, Tolerances, attention_dropout_site,  # noqa: E402
                              cross_entropy, dropout, packed_causal_mask, residual_dropout_site,
                              run)
import torch  # noqa: E402

# ----------------------------------------------------------------------------- the test cases
BASE = dict(vocab_size=64, context_length=64, n_layer=2, n_head=4, d_model=64, d_ff=96,
            rope_theta=10000.0, norm_eps=1e-5, arch="llama", rope_scaling="none")
MODELS = {  # key: (n_kv_head, tie_embeddings, init seed)
    "mha_untied": (4, False, 5001),
    "gqa_untied": (2, False, 5002),
    "gqa_tied": (1, True, 5003),
}
# RoPE scaling in trainrt's [model] key names (hf_config_json writes HF's rope_scaling).
LLAMA3_SCALING = dict(rope_scaling="llama3", rope_scaling_factor=8.0, rope_low_freq_factor=1.0,
                      rope_high_freq_factor=4.0, rope_original_context=64)
FAMILY_MODELS = {  # key: (n_kv_head, tie_embeddings, init seed, arch, rope scaling keys)
    "qwen2_gqa": (2, False, 5004, "qwen2", {}),
    "llama3_rope": (2, True, 5005, "llama", LLAMA3_SCALING),
    "llama_linear_rope": (4, False, 5006, "llama",
                          dict(rope_scaling="linear", rope_scaling_factor=2.5)),
    # Mistral's sliding window, shorter than the sequence (T 32): query i reads keys j with
    # i - j < 12 only.
    "mistral_window": (2, False, 5007, "mistral", dict(sliding_window=12)),
    # Qwen3's explicit head_dim: 4 heads of 24 over d_model 64, so q is 96 wide and o_proj
    # maps 96 back to 64.
    "llama_head_dim": (2, False, 5008, "llama", dict(head_dim=24)),
    # Qwen3: RMSNorm over each q and k head (q_norm, k_norm [hs]) before RoPE, head_dim 24.
    "qwen3_qk_norm": (2, True, 5009, "qwen3", dict(head_dim=24)),
}
FAMILY_CASES = [(k, k, 1) for k in FAMILY_MODELS]
CASES = [  # (case name, model key, grad_accum)
    ("mha_untied", "mha_untied", 1),
    ("gqa_untied", "gqa_untied", 1),
    ("gqa_tied", "gqa_tied", 1),
    ("gqa_untied_accum2", "gqa_untied", 2),
]

LOSS_RTOL, LR_RTOL, GNORM_RTOL, WEIGHT_RTOL = 1e-5, 1e-6, 1e-4, 1e-4
# grad_clip 1.45 (GPT-2: 1.5) so the grad_accum 2 case clips on some steps (4/12) too.
OPTIM = dict(OPTIM_BASE, grad_clip=1.45)
STRICT_LOSS_RTOL, STRICT_GNORM_RTOL = 1e-6, 1e-5  # --strict


def model_cfg(key):
    if key in FAMILY_MODELS:
        nkv, tied, seed, arch, scaling = FAMILY_MODELS[key]
        return dict(BASE, n_kv_head=nkv, tie_embeddings=tied, seed=seed, arch=arch, **scaling)
    nkv, tied, seed = MODELS[key]
    return dict(BASE, n_kv_head=nkv, tie_embeddings=tied, seed=seed)


# ----------------------------------------------------------------------------- Llama from the math
def llama_param_shapes(cfg):
    """HF LlamaForCausalLM names and shapes; linear weights are [out, in] (y = x W^T)."""
    V, C, L, F = cfg["vocab_size"], cfg["d_model"], cfg["n_layer"], cfg["d_ff"]
    NH, NKV = cfg["n_head"], cfg["n_kv_head"]
    hs = cfg.get("head_dim") or C // NH
    shapes = [("model.embed_tokens.weight", (V, C))]
    for i in range(L):
        p = f"model.layers.{i}."
        shapes += [
            (p + "input_layernorm.weight", (C,)),
            (p + "self_attn.q_proj.weight", (NH * hs, C)),
            (p + "self_attn.k_proj.weight", (NKV * hs, C)),
            (p + "self_attn.v_proj.weight", (NKV * hs, C)),
        ]
        if cfg["arch"] == "qwen2":  # Qwen2Attention: q/k/v_proj with bias=True
            shapes += [(p + "self_attn.q_proj.bias", (NH * hs,)),
                       (p + "self_attn.k_proj.bias", (NKV * hs,)),
                       (p + "self_attn.v_proj.bias", (NKV * hs,))]
        shapes += [(p + "self_attn.o_proj.weight", (C, NH * hs))]
        if cfg["arch"] == "qwen3":  # Qwen3Attention: q_norm, k_norm over head_dim
            shapes += [(p + "self_attn.q_norm.weight", (hs,)), (p + "self_attn.k_norm.weight", (hs,))]
        shapes += [
            (p + "post_attention_layernorm.weight", (C,)),
            (p + "mlp.gate_proj.weight", (F, C)),
            (p + "mlp.up_proj.weight", (F, C)),
            (p + "mlp.down_proj.weight", (C, F)),
        ]
    shapes += [("model.norm.weight", (C,))]
    if not cfg["tie_embeddings"]:
        shapes += [("lm_head.weight", (V, C))]
    return shapes


def init_params(cfg, seed):
    """normal(0, 0.02) matrices and embeddings; RMSNorm weights 1 + 0.1 randn (a unit gain
    would hide a norm weight that is ignored, applied twice or taken from the wrong layer)."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in llama_param_shapes(cfg):
        r = torch.randn(shape, generator=g, dtype=torch.float32)
        params[name] = 1.0 + 0.1 * r if name.endswith("norm.weight") else 0.02 * r
    return params


def rms_norm(x, w, eps):
    """LlamaRMSNorm: x / sqrt(mean over the last dim of x^2 + eps), times the weight."""
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def silu(x):
    return x * torch.sigmoid(x)


def rope_inv_freq(hs, theta, cfg=None):
    """theta^(-2j/hs) for j < hs/2, in float64, with the cfg's RoPE scaling applied
    (transformers' linear and llama3 rules, see the module docstring)."""
    j = torch.arange(0, hs, 2, dtype=torch.float64)
    inv_freq = 1.0 / (theta ** (j / hs))                                   # (hs/2,)
    kind = "none" if cfg is None else cfg.get("rope_scaling", "none")
    if kind == "none":
        return inv_freq
    factor = cfg["rope_scaling_factor"]
    if kind == "linear":
        return inv_freq / factor
    assert kind == "llama3", kind
    low, high = cfg["rope_low_freq_factor"], cfg["rope_high_freq_factor"]
    original = cfg["rope_original_context"]
    out = inv_freq.clone()
    for i, f in enumerate(inv_freq.tolist()):
        wavelen = 2 * math.pi / f
        if wavelen > original / low:
            out[i] = f / factor
        elif wavelen >= original / high:
            s = (original / wavelen - low) / (high - low)
            out[i] = (1 - s) * f / factor + s * f
    return out


def rope_tables(T, hs, theta, dtype, cfg=None):
    """cos, sin of shape (T, hs): angle[t, j] = t * inv_freq[j] for j < hs/2, repeated for
    the second half (HF's cat(freqs, freqs)). Angles are computed in float64 and rounded once."""
    inv_freq = rope_inv_freq(hs, theta, cfg)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    ang = torch.cat([ang, ang], dim=-1)                                    # (T, hs)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def attention_mask(T, window=0):
    """(T, T) bool, True where query i may read key j: j <= i, and with a sliding window W
    (Mistral) also i - j < W, as transformers' sliding_window_overlay defines it."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = j <= i
    return allowed & (i - j < window) if window > 0 else allowed


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x, cos, sin):
    """x: (B, heads, T, hs). Rotates each pair (i, i + hs/2) by angle[t, i]."""
    return x * cos + rotate_half(x) * sin


def llama_logits(p, cfg, idx, positions=None):
    """(B, T, V) next-token logits of the Llama with HF-named parameters p for ids idx (B, T).
    positions (B, T), or None for 0 .. T-1: packed rows, an example beginning at each 0 — RoPE
    at the positions, and attention within an example only (block-diagonal causal)."""
    B, T = idx.shape
    C, L, NH, NKV = cfg["d_model"], cfg["n_layer"], cfg["n_head"], cfg["n_kv_head"]
    hs, eps = cfg.get("head_dim") or C // NH, cfg["norm_eps"]
    assert NH % NKV == 0
    group = NH // NKV
    kv_of_head = torch.arange(NH) // group                                 # HF repeat_kv
    emb = p["model.embed_tokens.weight"]
    if positions is None:
        cos, sin = rope_tables(T, hs, cfg["rope_theta"], emb.dtype, cfg)
        causal = attention_mask(T, cfg.get("sliding_window", 0))
    else:  # the rows of the tables at each token's position, (B, 1, T, hs) for the heads
        cos, sin = rope_tables(int(positions.max()) + 1, hs, cfg["rope_theta"], emb.dtype, cfg)
        cos, sin = cos[positions].unsqueeze(1), sin[positions].unsqueeze(1)
        causal = packed_causal_mask(positions, cfg.get("sliding_window", 0))
    x = dropout(emb[idx], 0)                                               # (B,T,C)
    for i in range(L):
        q_ = f"model.layers.{i}."
        a = rms_norm(x, p[q_ + "input_layernorm.weight"], eps)
        def proj(n):  # y = a W^T (+ b where the family has the bias)
            y = a @ p[q_ + f"self_attn.{n}.weight"].t()
            return y + p[q_ + f"self_attn.{n}.bias"] if q_ + f"self_attn.{n}.bias" in p else y
        q = proj("q_proj").view(B, T, NH, hs)
        k = proj("k_proj").view(B, T, NKV, hs)
        if q_ + "self_attn.q_norm.weight" in p:  # Qwen3: each head normalised, before RoPE
            q = rms_norm(q, p[q_ + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, p[q_ + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = proj("v_proj").view(B, T, NKV, hs).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k, v = k[:, kv_of_head], v[:, kv_of_head]                          # (B,NH,T,hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~causal, float("-inf"))
        att = dropout(torch.softmax(att, dim=-1), attention_dropout_site(i))  # (B,NH,T,T)
        y = (att @ v).transpose(1, 2).reshape(B, T, NH * hs)
        h = x + dropout(y @ p[q_ + "self_attn.o_proj.weight"].t(), residual_dropout_site(i, False))
        m = rms_norm(h, p[q_ + "post_attention_layernorm.weight"], eps)
        f = silu(m @ p[q_ + "mlp.gate_proj.weight"].t()) * (m @ p[q_ + "mlp.up_proj.weight"].t())
        x = h + dropout(f @ p[q_ + "mlp.down_proj.weight"].t(), residual_dropout_site(i, True))
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = emb if cfg["tie_embeddings"] else p["lm_head.weight"]
    return x @ head.t()


def llama_loss(p, cfg, idx, targets, per_token=False):
    """Mean next-token cross-entropy over the B*T positions of one micro-batch (or the (B, T)
    per-position losses with per_token=True)."""
    return cross_entropy(llama_logits(p, cfg, idx), targets, per_token)


# ----------------------------------------------------------------------------- self checks
def llama_self_check(spec):
    cfg, init = spec.cfg, spec.init
    C, NH, NKV = cfg["d_model"], cfg["n_head"], cfg["n_kv_head"]
    hs = cfg.get("head_dim") or C // NH
    g = torch.Generator().manual_seed(11)
    assert ("lm_head.weight" in init) == (not cfg["tie_embeddings"]), "lm_head iff untied"
    # RMSNorm against a float64 evaluation of the formula with a separate sqrt and division.
    x = torch.randn(3, 5, C, generator=g)
    w = init["model.layers.0.input_layernorm.weight"]
    xd = x.double()
    want = xd / torch.sqrt((xd ** 2).sum(-1, keepdim=True) / C + cfg["norm_eps"]) * w.double()
    assert torch.allclose(rms_norm(x, w, cfg["norm_eps"]).double(), want, rtol=1e-5, atol=1e-6)
    assert torch.allclose(silu(x), torch.nn.functional.silu(x), atol=1e-6)
    # RoPE: identity at position 0; rotate_half pairing (dimension 0 goes to hs/2 by
    # sin(t * inv_freq[0]) = sin(t)); norms kept; q.k depends only on the offset m - n.
    cos, sin = rope_tables(8, hs, cfg["rope_theta"], torch.float64)
    v = torch.randn(1, 1, 8, hs, generator=g, dtype=torch.float64)
    r = apply_rope(v, cos, sin)
    assert torch.allclose(r[..., 0, :], v[..., 0, :])
    e0 = torch.zeros(1, 1, 8, hs, dtype=torch.float64)
    e0[..., 0] = 1.0
    re0 = apply_rope(e0, cos, sin)
    assert abs(re0[0, 0, 3, hs // 2].item() - math.sin(3.0)) < 1e-12
    assert abs(re0[0, 0, 3, 0].item() - math.cos(3.0)) < 1e-12
    assert torch.allclose(r.norm(dim=-1), v.norm(dim=-1))
    qv = torch.randn(hs, generator=g, dtype=torch.float64).expand(1, 1, 8, hs)
    kv = torch.randn(hs, generator=g, dtype=torch.float64).expand(1, 1, 8, hs)
    rq, rk = apply_rope(qv, cos, sin)[0, 0], apply_rope(kv, cos, sin)[0, 0]
    assert abs((rq[5] @ rk[3]).item() - (rq[2] @ rk[0]).item()) < 1e-10, "RoPE not relative"
    # Grouped-query attention = multi-head attention with each kv head's rows repeated for the
    # n_head / n_kv_head consecutive query heads that read it (HF repeat_kv).
    if NKV != NH:
        group = NH // NKV
        mha_cfg = dict(cfg, n_kv_head=NH)
        mha = dict(init)
        for i in range(cfg["n_layer"]):
            for n in ("k_proj", "v_proj"):
                key = f"model.layers.{i}.self_attn.{n}.weight"
                mha[key] = init[key].view(NKV, hs, C).repeat_interleave(group, dim=0).reshape(NH * hs, C)
                bias = f"model.layers.{i}.self_attn.{n}.bias"
                if bias in init:
                    mha[bias] = init[bias].view(NKV, hs).repeat_interleave(group, dim=0).reshape(NH * hs)
        ids = torch.randint(0, cfg["vocab_size"], (2, 16), generator=g)
        with torch.no_grad():
            a, b = llama_logits(init, cfg, ids), llama_logits(mha, mha_cfg, ids)
        assert torch.allclose(a, b, rtol=0, atol=1e-6), "GQA != MHA with repeated kv heads"
    # RoPE scaling: the llama3 rule's three regions all occur, and the rule is continuous at
    # both edges of the blend (s = 0 gives f / factor, s = 1 gives f).
    if cfg["rope_scaling"] == "llama3":
        plain, scaled = rope_inv_freq(hs, cfg["rope_theta"]), rope_inv_freq(hs, cfg["rope_theta"], cfg)
        ratio = (scaled / plain).tolist()
        factor = cfg["rope_scaling_factor"]
        assert abs(ratio[0] - 1) < 1e-15 and abs(ratio[-1] - 1 / factor) < 1e-15, ratio
        assert any(1 / factor < r < 1 for r in ratio), ratio
    # The mask against its definition, position by position: causal, and within the window.
    for T, W in ((9, 0), (9, 3), (16, 5), (32, cfg.get("sliding_window", 0))):
        m = attention_mask(T, W)
        for i in range(T):
            for j in range(T):
                assert bool(m[i, j]) == (j <= i and (W == 0 or i - j < W)), (T, W, i, j)
    # Qwen2's biases reach the logits (zeroing them changes the output).
    if cfg["arch"] == "qwen2":
        ids = torch.randint(0, cfg["vocab_size"], (2, 16), generator=g)
        nobias = {n: (torch.zeros_like(t) if n.endswith("_proj.bias") else t) for n, t in init.items()}
        with torch.no_grad():
            assert not torch.allclose(llama_logits(init, cfg, ids), llama_logits(nobias, cfg, ids))
    # Tied: the head is the embedding (an untied copy gives the same logits).
    if cfg["tie_embeddings"]:
        untied = dict(init, **{"lm_head.weight": init["model.embed_tokens.weight"].clone()})
        ids = torch.randint(0, cfg["vocab_size"], (2, 16), generator=g)
        with torch.no_grad():
            a = llama_logits(init, cfg, ids)
            b = llama_logits(untied, dict(cfg, tie_embeddings=False), ids)
        assert torch.equal(a, b)


# ----------------------------------------------------------------------------- trainrt side
def model_toml(cfg, init_file):
    # arch first: when trainrt does not know it, it is the first problem reported.
    return f"""arch = "llama"
vocab_size = {cfg['vocab_size']}
context_length = {cfg['context_length']}
n_layer = {cfg['n_layer']}
n_head = {cfg['n_head']}
n_kv_head = {cfg['n_kv_head']}
d_model = {cfg['d_model']}
d_ff = {cfg['d_ff']}
rope_theta = {cfg['rope_theta']!r}
norm_eps = {cfg['norm_eps']!r}
tie_embeddings = {'true' if cfg['tie_embeddings'] else 'false'}
init_from = "{init_file}"
"""


def hf_rope_scaling(cfg):
    """config.json's rope_scaling for the cfg's RoPE scaling keys (None: none)."""
    kind = cfg.get("rope_scaling", "none")
    if kind == "none":
        return None
    out = dict(rope_type=kind, factor=cfg["rope_scaling_factor"])
    if kind == "llama3":
        out.update(low_freq_factor=cfg["rope_low_freq_factor"],
                   high_freq_factor=cfg["rope_high_freq_factor"],
                   original_max_position_embeddings=cfg["rope_original_context"])
    return out


def hf_config_json(cfg):
    """config.json as transformers' LlamaConfig / Qwen2Config write it (the keys trainrt reads)."""
    arch = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
            "mistral": "MistralForCausalLM", "qwen3": "Qwen3ForCausalLM"}[cfg["arch"]]
    c = dict(architectures=[arch], model_type=cfg["arch"], vocab_size=cfg["vocab_size"],
             max_position_embeddings=cfg["context_length"], hidden_size=cfg["d_model"],
             intermediate_size=cfg["d_ff"], num_hidden_layers=cfg["n_layer"],
             num_attention_heads=cfg["n_head"], num_key_value_heads=cfg["n_kv_head"],
             head_dim=cfg.get("head_dim") or cfg["d_model"] // cfg["n_head"],
             hidden_act="silu", rms_norm_eps=cfg["norm_eps"], rope_theta=cfg["rope_theta"],
             rope_scaling=hf_rope_scaling(cfg), tie_word_embeddings=cfg["tie_embeddings"],
             torch_dtype="float32")
    if cfg["arch"] in ("qwen2", "qwen3"):
        c.update(use_sliding_window=False, sliding_window=64, max_window_layers=2)
    elif cfg["arch"] == "mistral":
        c.update(sliding_window=cfg.get("sliding_window") or None)
    else:
        c.update(attention_bias=False, mlp_bias=False)
    return json.dumps(c, indent=2) + "\n"


def main():
    families = "--families" in sys.argv
    if families:
        sys.argv.remove("--families")
    models = FAMILY_MODELS if families else MODELS
    specs = {}
    for key in models:
        cfg = model_cfg(key)
        specs[key] = ModelSpec(
            key=key, cfg=cfg,
            describe=(f"{key}: V{cfg['vocab_size']} Tmax{cfg['context_length']} "
                      f"L{cfg['n_layer']} H{cfg['n_head']} KV{cfg['n_kv_head']} "
                      f"C{cfg['d_model']} F{cfg['d_ff']} "
                      f"{'tied' if cfg['tie_embeddings'] else 'untied'}"),
            param_shapes=llama_param_shapes(cfg), init=init_params(cfg, cfg["seed"]),
            loss=(lambda c: lambda p, x, y, per_token=False: llama_loss(p, c, x, y, per_token))(cfg),
            model_toml=(lambda c: lambda init_file: model_toml(c, init_file))(cfg),
            hf_config=hf_config_json(cfg) if families else None)
        if families:  # [model] is init_from alone: the folder gives family and shape
            specs[key].model_toml = lambda folder: f'init_from = "{folder}"\n'
    cases = [Case(name, specs[key], accum) for name, key, accum in
             (FAMILY_CASES if families else CASES)]

    return run(__doc__, "llama_reference.py", cases,
               Tolerances(LOSS_RTOL, LR_RTOL, GNORM_RTOL, WEIGHT_RTOL),
               Tolerances(STRICT_LOSS_RTOL, LR_RTOL, STRICT_GNORM_RTOL, WEIGHT_RTOL),
               extra_self_check=llama_self_check,
               optim=OPTIM)


if __name__ == "__main__":
    sys.exit(main())
