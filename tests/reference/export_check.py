#!/usr/bin/env python3
"""Hugging Face export check (issue: export): per case, trains a small byte-level model with
`trainrt train` (which writes a checkpoint at the end), exports it with `trainrt export` as F32
and BF16, loads each export with this folder's own safetensors reader (no trainrt code) and
config.json, builds an independent PyTorch model of the family from config.json's fields alone
(never from the TOML), runs it on a batch and compares with trainrt's logits for the same batch
(tests/reference/dump_logits.c):
  - config.json: the family's fixed fields (architectures, model_type, activation, ...) and
    every dimension/hyper-parameter equal the model that was trained; the tensor names and
    shapes are exactly the family's HF layout for that model (unpadded vocabulary)
  - F32 export: max |torch - trainrt| / max |trainrt| <= 1e-5
  - BF16 export: every tensor equals the F32 export rounded to nearest-even bf16, and its
    logits stay within 5e-2 relative (the rounding of the weights, not a bug).
Families (--family, default gpt2):
  gpt2   GPT2LMHeadModel, L2 H4 C64 (gpt2_reference.py's gpt2_logits)
  llama  LlamaForCausalLM and Qwen2ForCausalLM (llama_reference.py's llama_logits):
         gqa_untied    n_kv_head 2, untied head, d_ff 96, rope_theta 500000, norm_eps 1e-6
         gqa_tied      n_kv_head 1, tied head (no lm_head.weight), d_ff 128, theta 1e4, eps 1e-5
         llama3_rope   rope_scaling llama3 (factor 8, low 1, high 4, original 32)
         qwen2_biases  model_type qwen2: q/k/v_proj biases, n_kv_head 2, tied head
         head_dim      head_dim 24 with d_model 64, 4 heads (q 96 wide; Qwen3's shape of head)
         qwen3         model_type qwen3: q/k norms over heads of 24 (head_dim), tied head
         mistral       model_type mistral, sliding_window 64 (= the sequence: the causal mask)
Exit 0 pass, 1 fail, 77 skipped (no torch).

  /usr/bin/python3 tests/reference/export_check.py --trainrt build/trainrt \
      --dump-logits build/tests/reference/dump_logits --workdir /tmp/export_check [--family llama]
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
except ImportError as exc:  # Debian's python3-torch lives under /usr/bin/python3
    print(f"export_check: skipped, cannot import torch/numpy: {exc}")
    sys.exit(77)
from reference_common import read_safetensors, write_shard  # noqa: E402
from gpt2_reference import gpt2_logits, hf_param_shapes  # noqa: E402
from llama_reference import llama_logits, llama_param_shapes  # noqa: E402

RTOL_F32 = 1e-5
RTOL_BF16 = 5e-2
ROWS, SEQ = 3, 48

# The models trained, in trainrt's [model] keys (written to the TOML in this order: arch first).
GPT2 = dict(arch="gpt2", vocab_size=256, context_length=64, n_layer=2, n_head=4, d_model=64)
LLAMA = dict(arch="llama", vocab_size=256, context_length=64, n_layer=2, n_head=4, d_model=64)
CASES = {  # family: [(case name, model)]
    "gpt2": [("gpt2", GPT2)],
    "llama": [
        ("gqa_untied", dict(LLAMA, n_kv_head=2, d_ff=96, rope_theta=500000.0, norm_eps=1e-6,
                            tie_embeddings=False)),
        ("gqa_tied", dict(LLAMA, n_kv_head=1, d_ff=128, rope_theta=10000.0, norm_eps=1e-5,
                          tie_embeddings=True)),
        ("llama3_rope", dict(LLAMA, n_kv_head=2, d_ff=96, rope_scaling="llama3",
                             rope_scaling_factor=8.0, rope_low_freq_factor=1.0,
                             rope_high_freq_factor=4.0, rope_original_context=32,
                             tie_embeddings=False)),
        ("qwen2_biases", dict(LLAMA, arch="qwen2", n_kv_head=2, d_ff=96, tie_embeddings=True)),
        ("head_dim", dict(LLAMA, n_kv_head=2, d_ff=96, head_dim=24, tie_embeddings=False)),
        ("qwen3", dict(LLAMA, arch="qwen3", n_kv_head=2, d_ff=96, head_dim=24,
                       tie_embeddings=True)),
        ("mistral", dict(LLAMA, arch="mistral", n_kv_head=2, d_ff=96, sliding_window=64,
                         tie_embeddings=False)),
    ],
}

RUN_TOML = """[data]
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


class Unsupported(Exception):
    """config.json describes something the reference model does not implement."""


def f32(x):
    """config.json floats are fp32 values printed shortest; compare them as fp32."""
    return float(np.float32(x))


def same(got, want):
    if isinstance(want, bool):
        return got is want
    if isinstance(want, float):
        return isinstance(got, (int, float)) and not isinstance(got, bool) and f32(got) == f32(want)
    return type(got) is type(want) and got == want


def need(hf, **fixed):
    for key, want in fixed.items():
        if not same(hf.get(key), want):
            raise Unsupported(f"{key} = {hf.get(key, '<missing>')!r}, expected {want!r}")


# ----------------------------------------------------------------------------- the families
# model_from_hf: the reference model's cfg (in trainrt's [model] key names, so that it compares
# with the trained model key for key) from config.json alone; raises Unsupported for what the
# reference cannot run. shapes: the family's HF tensor names and shapes for a cfg.
def gpt2_from_hf(hf):
    need(hf, architectures=["GPT2LMHeadModel"], model_type="gpt2",
         activation_function="gelu_new", tie_word_embeddings=True, layer_norm_epsilon=1e-5)
    if hf.get("n_inner") not in (None, 4 * hf["n_embd"]):  # gpt2_logits: 4 * C
        raise Unsupported(f"n_inner = {hf['n_inner']!r}")
    if hf.get("n_ctx", hf["n_positions"]) != hf["n_positions"]:
        raise Unsupported(f"n_ctx = {hf['n_ctx']!r} != n_positions = {hf['n_positions']!r}")
    return dict(arch="gpt2", vocab_size=hf["vocab_size"], context_length=hf["n_positions"],
                n_layer=hf["n_layer"], n_head=hf["n_head"], d_model=hf["n_embd"])


def rope_scaling_from_hf(rs):
    """config.json's rope_scaling as trainrt's [model] rope keys (only what the kind has)."""
    if rs is None:
        return dict(rope_scaling="none")
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "linear":
        return dict(rope_scaling="linear", rope_scaling_factor=rs["factor"])
    if kind == "llama3":
        return dict(rope_scaling="llama3", rope_scaling_factor=rs["factor"],
                    rope_low_freq_factor=rs["low_freq_factor"],
                    rope_high_freq_factor=rs["high_freq_factor"],
                    rope_original_context=rs["original_max_position_embeddings"])
    raise Unsupported(f"rope_scaling = {rs!r}")


def llama_from_hf(hf):
    classes = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
               "mistral": "MistralForCausalLM", "qwen3": "Qwen3ForCausalLM"}
    arch = hf.get("model_type")
    if arch not in classes:
        raise Unsupported(f"model_type = {arch!r}")
    need(hf, architectures=[classes[arch]], hidden_act="silu")
    # Absent: the config class's default (false). Qwen2's q/k/v biases are its model type's.
    for key in ("attention_bias", "mlp_bias", "use_sliding_window"):
        if hf.get(key):
            raise Unsupported(f"{key} = {hf[key]!r}")
    C, NH = hf["hidden_size"], hf["num_attention_heads"]
    # head_dim absent, null or C / NH: the plain model (trainrt's head_dim 0)
    head_dim = hf.get("head_dim") or 0
    head = {} if head_dim in (0, C // NH) and C % NH == 0 else {"head_dim": head_dim}
    return dict(arch=arch, vocab_size=hf["vocab_size"],
                context_length=hf["max_position_embeddings"],
                n_layer=hf["num_hidden_layers"], n_head=NH, d_model=C,
                n_kv_head=hf["num_key_value_heads"], d_ff=hf["intermediate_size"],
                rope_theta=hf["rope_theta"], norm_eps=hf["rms_norm_eps"],
                tie_embeddings=hf["tie_word_embeddings"],
                **rope_scaling_from_hf(hf.get("rope_scaling")), **head,
                **({"sliding_window": hf.get("sliding_window") or 0} if arch == "mistral" else {}))


FAMILIES = {  # family: (config.json -> cfg, cfg -> [(name, shape)], logits(params, cfg, ids))
    "gpt2": (gpt2_from_hf, hf_param_shapes, gpt2_logits),
    "llama": (llama_from_hf, llama_param_shapes, llama_logits),
}


# ----------------------------------------------------------------------------- the check
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


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def load_export(folder, family, model, dtype, failures):
    """Reads folder/config.json and model.safetensors; returns (cfg built from config.json,
    params) or None (failures appended) when the export cannot be run or does not describe
    the trained model."""
    from_hf, shapes, _ = FAMILIES[family]
    tag = os.path.basename(folder)
    with open(os.path.join(folder, "config.json")) as f:
        hf = json.load(f)
    try:
        cfg = from_hf(hf)
    except (Unsupported, KeyError) as exc:
        failures.append(f"{tag}/config.json: {exc!r}")
        return None
    ok = True
    for key, want in model.items():
        got = cfg.get(key)
        if not same(got, want):
            failures.append(f"{tag}/config.json gives {key} = {got!r}, trained with {want!r}")
            ok = False
    if hf.get("torch_dtype") != dtype:
        failures.append(f"{tag}/config.json torch_dtype = {hf.get('torch_dtype')!r}, expected {dtype!r}")
    params = read_safetensors(os.path.join(folder, "model.safetensors"))
    want_shapes = dict(shapes(model))
    got_shapes = {n: tuple(t.shape) for n, t in params.items()}
    if got_shapes != want_shapes:
        for n in sorted(set(want_shapes) | set(got_shapes)):
            if want_shapes.get(n) != got_shapes.get(n):
                failures.append(f"{tag}/model.safetensors: {n}: shape {got_shapes.get(n)}, "
                                f"expected {want_shapes.get(n)}")
        ok = False
    return (cfg, params) if ok else None


def check_case(a, work, family, name, model):
    """One model: train, export F32 and BF16, compare. Returns the list of failures."""
    print(f"== {family} {name}: " + " ".join(f"{k}={v}" for k, v in model.items()))
    logits_fn = FAMILIES[family][2]
    os.makedirs(work)
    rng = np.random.default_rng(5)
    V = model["vocab_size"]
    write_shard(os.path.join(work, "train.bin"), rng.integers(0, V, 20000))
    write_shard(os.path.join(work, "val.bin"), rng.integers(0, V, 5000))
    with open(os.path.join(work, "run.toml"), "w") as f:
        f.write(f"# written by tests/reference/export_check.py ({family} {name})\n[model]\n")
        f.writelines(f"{k} = {toml_value(v)}\n" for k, v in model.items())
        f.write(RUN_TOML)
    run([a.trainrt, "train", os.path.join(work, "run.toml")])
    ckpt = os.path.join(work, "out")  # resolved through out/latest
    run([a.trainrt, "export", ckpt, os.path.join(work, "hf32")])
    run([a.trainrt, "export", ckpt, os.path.join(work, "hf16"), "--dtype", "bf16"])

    tokens = rng.integers(0, V, ROWS * (SEQ + 1)).astype("<i4")
    tokens.tofile(os.path.join(work, "tokens.i32"))
    run([a.dump_logits, ckpt, os.path.join(work, "tokens.i32"), str(ROWS), str(SEQ),
         os.path.join(work, "logits.f32")])
    trt = torch.from_numpy(np.fromfile(os.path.join(work, "logits.f32"), dtype="<f4"))
    idx = torch.from_numpy(tokens.reshape(ROWS, SEQ + 1)[:, :SEQ].astype(np.int64))
    failures = []

    loaded = load_export(os.path.join(work, "hf32"), family, model, "float32", failures)
    if loaded is None:
        return failures
    cfg, p32 = loaded
    with torch.no_grad():
        ref = logits_fn(p32, cfg, idx).reshape(-1)
    if ref.shape != trt.shape:
        return failures + [f"logits sizes differ: torch {tuple(ref.shape)}, trainrt {tuple(trt.shape)}"]
    err32 = ((ref - trt).abs().max() / trt.abs().max()).item()
    print(f"F32 export: max |torch - trainrt| / max |trainrt| = {err32:.3e} (limit {RTOL_F32:g})")
    if not err32 <= RTOL_F32:
        failures.append(f"F32 export logits differ by {err32:.3e} > {RTOL_F32:g}")

    loaded = load_export(os.path.join(work, "hf16"), family, model, "bfloat16", failures)
    if loaded is None:
        return failures
    cfg16, p16 = loaded
    for n, t in p32.items():
        if not torch.equal(p16[n], bf16_round(t)):
            failures.append(f"BF16 export: {n} is not the round-to-nearest-even of the F32 one")
    with torch.no_grad():
        ref16 = logits_fn(p16, cfg16, idx).reshape(-1)
    err16 = ((ref16 - trt).abs().max() / trt.abs().max()).item()
    print(f"BF16 export: logits within {err16:.3e} of trainrt's fp32 (limit {RTOL_BF16:g})")
    if not err16 <= RTOL_BF16:
        failures.append(f"BF16 export logits differ by {err16:.3e} > {RTOL_BF16:g}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trainrt", required=True)
    ap.add_argument("--dump-logits", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--family", choices=sorted(CASES), default="gpt2")
    a = ap.parse_args()
    torch.set_num_threads(1)
    work = os.path.abspath(a.workdir)
    shutil.rmtree(work, ignore_errors=True)
    failures = []
    for name, model in CASES[a.family]:
        failures += [f"{name}: {f}" for f in check_case(a, os.path.join(work, name), a.family, name, model)]
    for f in failures:
        print("FAIL:", f)
    print(f"export check ({a.family}):", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
