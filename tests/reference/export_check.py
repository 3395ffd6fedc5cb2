#!/usr/bin/env python3
"""Hugging Face export check (issue: export): trains a small byte-level model with `trainrt
train` (which writes a checkpoint at the end), exports it with `trainrt export` as F32 and
BF16, loads each export with this folder's own safetensors reader (no trainrt code) and
config.json, runs an independent PyTorch GPT-2 forward on a batch, and compares with trainrt's
logits for the same batch (tests/reference/dump_logits.c):
  - F32 export: max |torch - trainrt| / max |trainrt| <= 1e-5
  - BF16 export: every tensor equals the F32 export rounded to nearest-even bf16, and its
    logits stay within 5e-2 relative (the rounding of the weights, not a bug).
Exit 0 pass, 1 fail, 77 skipped (no torch).

  /usr/bin/python3 tests/reference/export_check.py --trainrt build/trainrt \
      --dump-logits build/tests/reference/dump_logits --workdir /tmp/export_check
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    from gpt2_reference import gpt2_logits, read_safetensors, write_shard
except ImportError as exc:  # Debian's python3-torch lives under /usr/bin/python3
    print(f"export_check: skipped, cannot import torch/numpy: {exc}")
    sys.exit(77)

RTOL_F32 = 1e-5
RTOL_BF16 = 5e-2
ROWS, SEQ = 3, 48

CONFIG = """# written by tests/reference/export_check.py
[model]
vocab_size = 256
context_length = 64
n_layer = 2
n_head = 4
d_model = 64
[data]
train = "train.bin"
val = "val.bin"
[train]
batch_size = 4
seq_len = 64
steps = 6
eval_every = 0
out_dir = "out"
[optim]
lr = 3e-3
[runtime]
threads = 1
"""


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stdout}{r.stderr}")
        sys.exit(1)
    return r.stdout


def bf16_round(t):
    """fp32 -> bf16 -> fp32, round to nearest even (NaN-free inputs)."""
    u = t.contiguous().view(torch.int32).numpy().astype(np.int64) & 0xFFFFFFFF
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return torch.from_numpy(u.astype(np.uint32).view(np.float32).copy())


def load_export(folder):
    with open(os.path.join(folder, "config.json")) as f:
        hf = json.load(f)
    for key, want in (("model_type", "gpt2"), ("activation_function", "gelu_new"),
                      ("tie_word_embeddings", True)):
        if hf.get(key) != want:
            print(f"FAIL: {folder}/config.json: {key} = {hf.get(key)!r}, expected {want!r}")
            sys.exit(1)
    if hf.get("architectures") != ["GPT2LMHeadModel"]:
        print(f"FAIL: {folder}/config.json: architectures = {hf.get('architectures')!r}")
        sys.exit(1)
    cfg = dict(vocab_size=hf["vocab_size"], context_length=hf["n_positions"],
               n_layer=hf["n_layer"], n_head=hf["n_head"], d_model=hf["n_embd"])
    return cfg, hf, read_safetensors(os.path.join(folder, "model.safetensors"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trainrt", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    work = os.path.abspath(a.workdir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = np.random.default_rng(5)
    write_shard(os.path.join(work, "train.bin"), rng.integers(0, 256, 20000))
    write_shard(os.path.join(work, "val.bin"), rng.integers(0, 256, 5000))
    with open(os.path.join(work, "run.toml"), "w") as f:
        f.write(CONFIG)
    run([a.trainrt, "train", os.path.join(work, "run.toml")])
    ckpt = os.path.join(work, "out")  # resolved through out/latest
    run([a.trainrt, "export", ckpt, os.path.join(work, "hf32")])
    run([a.trainrt, "export", ckpt, os.path.join(work, "hf16"), "--dtype", "bf16"])

    tokens = rng.integers(0, 256, ROWS * (SEQ + 1)).astype("<i4")
    tokens.tofile(os.path.join(work, "tokens.i32"))
    run([a.dump_logits, ckpt, os.path.join(work, "tokens.i32"), str(ROWS), str(SEQ),
         os.path.join(work, "logits.f32")])
    trt = torch.from_numpy(np.fromfile(os.path.join(work, "logits.f32"), dtype="<f4"))
    idx = torch.from_numpy(tokens.reshape(ROWS, SEQ + 1)[:, :SEQ].astype(np.int64))
    failures = []

    cfg, hf, p32 = load_export(os.path.join(work, "hf32"))
    if hf.get("torch_dtype") != "float32":
        failures.append(f"hf32/config.json torch_dtype = {hf.get('torch_dtype')!r}")
    if tuple(p32["wte.weight"].shape) != (256, 64):
        failures.append(f"wte.weight shape {tuple(p32['wte.weight'].shape)}: expected unpadded (256, 64)")
    with torch.no_grad():
        ref = gpt2_logits(p32, cfg, idx).reshape(-1)
    if ref.shape != trt.shape:
        print(f"FAIL: logits sizes differ: torch {ref.shape}, trainrt {trt.shape}")
        return 1
    err32 = ((ref - trt).abs().max() / trt.abs().max()).item()
    print(f"F32 export: max |torch - trainrt| / max |trainrt| = {err32:.3e} (limit {RTOL_F32:g})")
    if not err32 <= RTOL_F32:
        failures.append(f"F32 export logits differ by {err32:.3e} > {RTOL_F32:g}")

    cfg16, hf16, p16 = load_export(os.path.join(work, "hf16"))
    if hf16.get("torch_dtype") != "bfloat16":
        failures.append(f"hf16/config.json torch_dtype = {hf16.get('torch_dtype')!r}")
    for name, t in p32.items():
        if not torch.equal(p16[name], bf16_round(t)):
            failures.append(f"BF16 export: {name} is not the round-to-nearest-even of the F32 one")
    with torch.no_grad():
        ref16 = gpt2_logits(p16, cfg16, idx).reshape(-1)
    err16 = ((ref16 - trt).abs().max() / trt.abs().max()).item()
    print(f"BF16 export: logits within {err16:.3e} of trainrt's fp32 (limit {RTOL_BF16:g})")
    if not err16 <= RTOL_BF16:
        failures.append(f"BF16 export logits differ by {err16:.3e} > {RTOL_BF16:g}")

    for f in failures:
        print("FAIL:", f)
    print("export check:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
