#!/usr/bin/env python3
"""Checks a `trainrt export --gguf` file against what llama.cpp needs (docs/FORMATS.md section 6),
reading it with a reader written here from the GGUF format, and against the same checkpoint's
Hugging Face export (model.safetensors, read here too) and tokenizer folder:

  - the architecture, hyper-parameter keys and their value types (llama.cpp checks types);
  - the tensors llama.cpp's table for the family expects, each with its ne, its type (1-D,
    norms and position embeddings F32; the rest the file's type) and its values: the HF
    tensor, transposed for GPT-2's Conv1D, q/k rows in adjacent RoPE pairs for Llama, within
    the type's rounding (F16: exact after rounding; Q8_0: half a step plus the fp16 scale's);
  - the tokenizer: "gpt2" model, the pre-tokenizer name, one token per embedding row (the
    tokenizer.json's, then [PAD<id>] UNUSED), the merges, CONTROL added tokens and end-of-turn
    tokens, the eos id of tokenizer_config.json, the chat template;
  - with --node-modules, the file as @huggingface/gguf (npm) reads it: the same keys, tensor
    names, shapes and data offset.

usage: gguf_check.py --gguf F --hf DIR --tokenizer DIR --family gpt2|llama|qwen3 --type f16|q8_0
                     --pre NAME [--node-modules DIR]
Exits 1 with the failures listed.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
    return cond


# ----------------------------------------------------------------------------- GGUF reader
class Cursor:
    def __init__(self, b):
        self.b, self.at = b, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.at)
        self.at += struct.calcsize("<" + fmt)
        return v[0]

    def string(self):
        n = self.take("Q")
        s = self.b[self.at:self.at + n].decode("utf-8")
        self.at += n
        return s


SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_value(c, t):
    if t in SCALARS:
        return c.take(SCALARS[t])
    if t == 8:
        return c.string()
    if t == 9:
        it, n = c.take("I"), c.take("Q")
        assert it != 9, "nested array"
        return (it, [read_value(c, it) for _ in range(n)])
    raise ValueError(f"value type {t}")


def read_gguf(path):
    b = open(path, "rb").read()
    c = Cursor(b)
    assert b[:4] == b"GGUF", "magic"
    c.at = 4
    version, n_t, n_kv = c.take("I"), c.take("Q"), c.take("Q")
    kv, types = {}, {}
    for _ in range(n_kv):
        k = c.string()
        t = c.take("I")
        assert k not in kv, f"key {k} twice"
        kv[k], types[k] = read_value(c, t), t
    tensors = []
    for _ in range(n_t):
        name = c.string()
        nd = c.take("I")
        ne = [c.take("Q") for _ in range(nd)]
        tensors.append(dict(name=name, ne=ne, type=c.take("I"), offset=c.take("Q")))
    align = kv.get("general.alignment", 32)
    start = (c.at + align - 1) // align * align
    return dict(version=version, kv=kv, types=types, tensors=tensors, data_start=start, bytes=b)


def tensor_bytes(t):
    n = int(np.prod(t["ne"]))
    return {0: 4 * n, 1: 2 * n, 30: 2 * n, 8: n // 32 * 34}[t["type"]]


def values(g, t):
    """The tensor as float64, shaped as PyTorch would (ne reversed)."""
    n = int(np.prod(t["ne"]))
    at = g["data_start"] + t["offset"]
    raw = g["bytes"][at:at + tensor_bytes(t)]
    if t["type"] == 0:
        v = np.frombuffer(raw, "<f4").astype(np.float64)
    elif t["type"] == 1:
        v = np.frombuffer(raw, "<f2").astype(np.float64)
    elif t["type"] == 30:
        v = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    elif t["type"] == 8:
        blocks = np.frombuffer(raw, np.uint8).reshape(-1, 34)
        d = blocks[:, :2].copy().view("<f2").astype(np.float64)
        q = blocks[:, 2:].view(np.int8).astype(np.float64)
        v = (q * d).reshape(-1)
    else:
        raise ValueError(t["type"])
    assert v.size == n
    return v.reshape(list(reversed(t["ne"])))


# ----------------------------------------------------------------------------- safetensors
def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack_from("<Q", b, 0)[0]
    header = json.loads(b[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        assert info["dtype"] == "F32", f"{name}: {info['dtype']}"
        out[name] = np.frombuffer(b[8 + n + lo:8 + n + hi], "<f4").astype(np.float64).reshape(info["shape"])
    return out


# ----------------------------------------------------------------------------- expectations
def expected_tensors(family, hf, L):
    """GGUF name -> (HF tensor as llama.cpp wants it, keep F32) for the family."""
    out = {}
    if family == "gpt2":
        p = "transformer." if "transformer.wte.weight" in hf else ""
        out["token_embd.weight"] = (hf[p + "wte.weight"], False)
        out["position_embd.weight"] = (hf[p + "wpe.weight"], True)
        out["output_norm.weight"] = (hf[p + "ln_f.weight"], True)
        out["output_norm.bias"] = (hf[p + "ln_f.bias"], True)
        names = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
                 "ln_2": "ffn_norm", "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
        for i in range(L):
            for h, g in names.items():
                w, b = hf[f"{p}h.{i}.{h}.weight"], hf[f"{p}h.{i}.{h}.bias"]
                conv = h.startswith(("attn", "mlp"))
                out[f"blk.{i}.{g}.weight"] = (w.T if conv else w, not conv)
                out[f"blk.{i}.{g}.bias"] = (b, True)
        return out
    out["token_embd.weight"] = (hf["model.embed_tokens.weight"], False)
    out["output_norm.weight"] = (hf["model.norm.weight"], True)
    if "lm_head.weight" in hf:
        out["output.weight"] = (hf["lm_head.weight"], False)
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"}
    for i in range(L):
        for h, g in names.items():
            key = f"model.layers.{i}.{h}.weight"
            if key not in hf:
                continue
            w = hf[key]
            out[f"blk.{i}.{g}.weight"] = (w, w.ndim == 1)
            for bias in ("bias",):
                bk = f"model.layers.{i}.{h}.{bias}"
                if bk in hf:
                    out[f"blk.{i}.{g}.bias"] = (hf[bk], True)
    return out


def adjacent_pairs(w, heads):
    """HF's rotate-half rows (i, i + D/2) per head -> ggml's (2i, 2i + 1)."""
    D = w.shape[0] // heads
    rest = w.shape[1:]
    return w.reshape(heads, 2, D // 2, *rest).swapaxes(1, 2).reshape(w.shape)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--gguf", "--hf", "--tokenizer", "--family", "--type", "--pre"):
        ap.add_argument(a, required=True)
    ap.add_argument("--node-modules")
    args = ap.parse_args()

    g = read_gguf(args.gguf)
    kv, types = g["kv"], g["types"]
    arch = {"gpt2": "gpt2", "llama": "llama", "qwen3": "qwen3"}[args.family]
    check(g["version"] == 3, f"version {g['version']}")
    check(kv.get("general.architecture") == arch, f"architecture {kv.get('general.architecture')}")
    config = json.load(open(os.path.join(args.hf, "config.json")))
    L = config.get("n_layer", config.get("num_hidden_layers"))
    V = config["vocab_size"]
    u32 = ["context_length", "embedding_length", "block_count", "feed_forward_length",
           "attention.head_count"]
    f32 = ["attention.layer_norm_epsilon"] if arch == "gpt2" else \
        ["attention.layer_norm_rms_epsilon", "rope.freq_base"]
    if arch != "gpt2":
        u32.append("attention.head_count_kv")
    for k in u32:
        check(types.get(f"{arch}.{k}") == 4, f"{arch}.{k}: type {types.get(f'{arch}.{k}')}, not UINT32")
    for k in f32:
        check(types.get(f"{arch}.{k}") == 6, f"{arch}.{k}: not FLOAT32")
    check(kv.get(f"{arch}.block_count") == L, "block_count")
    check(types.get("general.file_type") == 4, "general.file_type not UINT32")
    check(kv.get("general.file_type") == {"f16": 1, "q8_0": 7}[args.type], "general.file_type value")

    # ---- tensors
    hf = {}
    for f in sorted(os.listdir(args.hf)):
        if f.endswith(".safetensors"):
            hf.update(read_safetensors(os.path.join(args.hf, f)))
    want = expected_tensors(args.family, hf, L)
    have = {t["name"]: t for t in g["tensors"]}
    check(set(have) == set(want), f"tensors: extra {sorted(set(have) - set(want))}, "
                                  f"missing {sorted(set(want) - set(have))}")
    offset = 0
    for t in g["tensors"]:  # llama.cpp checks each offset exactly
        check(t["offset"] == offset, f"{t['name']}: offset {t['offset']}, expected {offset}")
        offset += (tensor_bytes(t) + 31) // 32 * 32
    check(len(g["bytes"]) == g["data_start"] + offset, "file size")
    nh = config.get("n_head", config.get("num_attention_heads"))
    nkv = config.get("num_key_value_heads", nh)
    file_type = {"f16": 1, "q8_0": 8}[args.type]
    for name, (ref, keep_f32) in want.items():
        if name not in have:
            continue
        t = have[name]
        if args.family == "llama" and (".attn_q." in name or ".attn_k." in name):
            ref = adjacent_pairs(ref, nh if ".attn_q." in name else nkv)
        check(list(reversed(t["ne"])) == list(ref.shape),
              f"{name}: ne {t['ne']} for HF shape {list(ref.shape)}")
        want_type = 0 if keep_f32 else file_type
        if want_type == 8 and t["ne"][0] % 32:
            want_type = 1  # not whole Q8_0 blocks: F16, as llama.cpp's converter
        check(t["type"] == want_type, f"{name}: type {t['type']}, expected {want_type}")
        if list(reversed(t["ne"])) != list(ref.shape):
            continue
        got = values(g, t)
        if t["type"] == 0:
            ok = np.array_equal(got, ref.astype(np.float32).astype(np.float64))
        elif t["type"] == 1:
            ok = np.array_equal(got, ref.astype(np.float16).astype(np.float64))
        else:  # Q8_0: per block of 32 along a row, half a step + the fp16 scale's error
            r = ref.reshape(-1, 32)
            step = np.abs(r).max(axis=1, keepdims=True) / 127
            bound = 0.5 * step + 127 * np.abs(step.astype(np.float16).astype(np.float64) - step) + 1e-7
            ok = bool((np.abs(got.reshape(-1, 32) - r) <= bound).all())
        check(ok, f"{name}: values differ from the HF export's beyond {args.type}'s rounding")

    # ---- tokenizer
    tj = json.load(open(os.path.join(args.tokenizer, "tokenizer.json")))
    tc_path = os.path.join(args.tokenizer, "tokenizer_config.json")
    tc = json.load(open(tc_path)) if os.path.exists(tc_path) else {}
    check(kv.get("tokenizer.ggml.model") == "gpt2", f"tokenizer.ggml.model {kv.get('tokenizer.ggml.model')}")
    check(kv.get("tokenizer.ggml.pre") == args.pre, f"tokenizer.ggml.pre {kv.get('tokenizer.ggml.pre')}, expected {args.pre}")
    it, tokens = kv["tokenizer.ggml.tokens"]
    tt, ttypes = kv["tokenizer.ggml.token_type"]
    check(it == 8 and tt == 5, "tokens not strings or token_type not INT32")
    check(len(tokens) == V == len(ttypes), f"{len(tokens)} tokens, {len(ttypes)} types, vocab_size {V}")
    check(len(set(tokens)) == len(tokens), "token texts not unique")
    by_id = {i: s for s, i in tj["model"]["vocab"].items()}
    added = {a["id"]: a for a in tj.get("added_tokens", [])}
    for i in range(V):
        if i in added:
            exp, ty = added[i]["content"], 3 if added[i]["special"] else 4
        elif i in by_id:
            exp, ty = by_id[i], 1
        else:
            exp, ty = f"[PAD{i}]", 5
        if not check(tokens[i] == exp, f"token {i}: {tokens[i]!r}, expected {exp!r}"):
            break
        if ty == 4 and exp.startswith("<|") and exp.endswith("|>"):
            ty = 3
        if ttypes[i] != ty and not (ttypes[i] == 3 and ty in (1, 4)):  # end-of-turn: CONTROL
            check(False, f"token {i} ({exp!r}): type {ttypes[i]}, expected {ty}")
            break
    merges = tj["model"]["merges"]
    check(kv["tokenizer.ggml.merges"][1] == [m if isinstance(m, str) else " ".join(m) for m in merges],
          "merges differ from tokenizer.json's")

    def content(v):
        return v["content"] if isinstance(v, dict) else v

    ids = {s: i for i, s in enumerate(tokens)}
    if tc.get("eos_token"):
        eos = ids[content(tc["eos_token"])]
        check(kv.get("tokenizer.ggml.eos_token_id") == eos, f"eos id {kv.get('tokenizer.ggml.eos_token_id')}, expected {eos}")
        check(types.get("tokenizer.ggml.eos_token_id") == 4, "eos id not UINT32")
        check(ttypes[eos] == 3, "the eos token is not CONTROL")
    # add_bos / add_eos always written (what training did: no BOS added), as BOOL.
    for flag in ("add_bos_token", "add_eos_token"):
        key = "tokenizer.ggml." + flag
        check(types.get(key) == 7, f"{key}: type {types.get(key)}, not BOOL")
        check(kv.get(key) == bool(tc.get(flag, False)), f"{key} = {kv.get(key)}")
    check("tokenizer.ggml.eos_token_id" in kv, "no eos_token_id")
    if "tokenizer.ggml.eot_token_id" in kv:
        check(ttypes[kv["tokenizer.ggml.eot_token_id"]] == 3, "the eot token is not CONTROL")
    if tc.get("chat_template"):
        check(kv.get("tokenizer.chat_template") == tc["chat_template"], "chat template differs")

    # ---- the npm reader
    if args.node_modules:
        out = subprocess.run(["node", os.path.join(HERE, "hf_gguf_read.mjs"), args.node_modules, args.gguf],
                             capture_output=True, text=True)
        if check(out.returncode == 0, f"@huggingface/gguf could not read it: {out.stderr[-800:]}"):
            js = json.loads(out.stdout)
            keys = set(js["metadata"]) - {"version", "tensor_count", "kv_count"}
            check(keys == set(kv), f"@huggingface/gguf keys differ: {sorted(keys ^ set(kv))}")
            check(js["metadata"]["tokenizer.ggml.tokens"]["length"] == V, "npm: tokens length")
            check(js["data_offset"] == g["data_start"], "npm: data offset")
            check([(t["name"], t["shape"], t["dtype"], t["offset"]) for t in js["tensors"]] ==
                  [(t["name"], t["ne"], t["type"], t["offset"]) for t in g["tensors"]],
                  "npm: tensor infos differ")

    for f in FAILURES:
        print("FAIL:", f, file=sys.stderr)
    print(f"{args.gguf}: {len(g['tensors'])} tensors, {len(kv)} keys, "
          f"{'ok' if not FAILURES else str(len(FAILURES)) + ' failure(s)'}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
