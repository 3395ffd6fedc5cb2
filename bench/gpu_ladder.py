#!/usr/bin/env python3
"""The GPU benchmark ladder: libtrainrt's training throughput rung by rung, each rung adding
one acceleration to the one before, and PyTorch on the same GPU beside it (bench/README.md).

Rungs (cumulative; `trainrt bench` with --set over a generated config):
  fp32-host        runtime.device = cuda, fp32, host-fed batches (data.placement = host), no
                   fused AdamW / epilogues / fused classifier, matmul attention, no graphs
  resident         + data.placement = device (the train split resident in GPU memory)
  tf32             + runtime.precision = tf32
  bf16             + runtime.precision = bf16
  fused-adamw      + accel.fused_adamw
  fused-kernels    + accel.matmul_epilogues (cuBLASLt bias/GELU epilogues) + accel.fused_classifier
  cudnn-attention  + accel.attention = cudnn
  cuda-graphs      + accel.cuda_graphs
  bf16-activations + accel.lowp_activations (activations stored in bf16: no cast kernels)
for two models: `tiny` (V=256, L6 H6 C384, T=256, B=64) and `gpt2` (GPT-2 124M, V=50257,
L12 H12 C768, T=1024, B=64; tokens per step B*T*grad_accum, --gpt2-tokens-per-step, default
65,536 = one micro-batch, since a GPU run is short; 524,288 = llm.c's is grad_accum 8).
Each rung's losses are compared with the fp32 rung's, step for step (same data, same init).
Then bench/torch_gpt.py trains the same model with the same batch and tokens per step in
PyTorch (bf16 autocast, SDPA, fused AdamW): eager, torch.compile, and for the tiny model
torch.compile(mode="reduce-overhead"); the ratios ours / torch are reported.

Where the time goes (issue 43), in the same call: after the torch modes, our best rung runs
once more under `trainrt bench --profile` (each op timed on the GPU by events, eager: no CUDA
graph), and the report gets its per-op table against the device's roofline (bench/roofline.py:
each op's floor from its FLOPs and bytes, how far above it it runs) and the libraries' choices
(cuBLASLt algorithm per GEMM shape, cuDNN engine per attention plan); torch.compile's run (eager
where compile is not measured) ends with a few steps under torch.profiler, whose kernel table
(kernels by their own GPU time per step) goes beside it.

Experiments, last and as the budget allows: one switch each on top of the last rung (our
defaults), not cumulative: the default-off fast paths and the suspects a profile names, so one
loan measures each (tok/s against that rung's, and the loss against its loss step for step).
gpt2: nondeterministic (accel.deterministic = false: cuDNN may take nondeterministic attention
engines), head-chunk-640 (the CPU's chunk of the output head: 103 chunks at B 64 x T 1024) and
head-whole (the head in one chunk); tiny: nondeterministic. --experiments NAME,... or none.

Time: every rung and torch mode runs in its own process under its own cap, all within --budget
seconds; what is not reached is marked so. On CUDA out-of-memory (trainrt bench exit 3) a rung
is retried at half the batch with twice the grad_accum (same tokens per step), down to batch 1;
every rung and every torch mode starts again from the configured batch (a rung that needs less
memory, e.g. cuDNN attention, is measured at the batch it fits, not at an earlier rung's
fallback). OUT/ladder.md and OUT/ladder.json are rewritten
after every run, so a run that is cut off still reports what it did.

--smoke: the machinery on the CPU backend (a CTest, label cpu): a very small model, two rungs
(host-fed, then resident data: their losses must agree bit for bit) and torch_gpt.py on the
CPU for 2 steps (skipped, with the reason, when no interpreter here imports torch); checks
the outputs and exits 1 if something is off.

Usage:
  python3 bench/gpu_ladder.py --trainrt BUILD/trainrt --out DIR [--models tiny,gpt2]
      [--budget 540] [--rungs NAME,...] [--torch-modes eager,compile,compile-ro]
      [--torch-python PY] [--gpt2-tokens-per-step N] [--experiments NAME,...|none]
      [--no-profile] [--smoke]
Exit status: 0 when every run that was reached completed (a timeout is reported, not a
failure), 1 when one failed (non-OOM error, non-finite loss) or a --smoke check failed.
Standard library only.
"""

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import roofline  # noqa: E402 - bench/roofline.py, beside this file

REPO = os.path.dirname(HERE)
TORCH_GPT = os.path.join(HERE, "torch_gpt.py")
EXIT_OOM = 3  # trainrt bench: out of memory

# name, what it adds, --set delta over the previous rung
BASE = {"runtime.device": "cuda", "runtime.precision": "fp32", "data.placement": "host",
        "accel.fused_adamw": "false", "accel.matmul_epilogues": "false",
        "accel.fused_classifier": "false", "accel.attention": "matmul",
        "accel.cuda_graphs": "false", "accel.lowp_activations": "false"}
GPU_RUNGS = [
    ("fp32-host", "CUDA fp32, host-fed batches, nothing fused", dict(BASE)),
    ("resident", "+ resident dataset (data.placement = device)", {"data.placement": "device"}),
    ("tf32", "+ TF32 matmuls", {"runtime.precision": "tf32"}),
    ("bf16", "+ bf16 matmuls", {"runtime.precision": "bf16"}),
    ("fused-adamw", "+ fused AdamW", {"accel.fused_adamw": "true"}),
    ("fused-kernels", "+ cuBLASLt epilogues, fused classifier",
     {"accel.matmul_epilogues": "true", "accel.fused_classifier": "true"}),
    ("cudnn-attention", "+ cuDNN attention", {"accel.attention": "cudnn"}),
    ("cuda-graphs", "+ CUDA graphs", {"accel.cuda_graphs": "true"}),
    ("bf16-activations", "+ bf16 activations (no cast kernels)",
     {"accel.lowp_activations": "true"}),
]
# One switch each over the last rung's settings (the module comment).
EXPERIMENTS = {
    "nondeterministic": ("accel.deterministic = false: cuDNN may take nondeterministic "
                         "attention engines", {"accel.deterministic": "false"}),
    "head-chunk-640": ("the CPU's head chunk, 640 rows (103 chunks at B 64 x T 1024)",
                       {"accel.head_chunk_rows": "640"}),
    "head-whole": ("the output head in one chunk", {"accel.head_chunk_rows": "2147483647"}),
    "head-chunk-64": ("the output head in chunks of 64 rows", {"accel.head_chunk_rows": "64"}),
}
SMOKE_RUNGS = [
    ("cpu-host", "CPU fp32, host-fed batches", {"runtime.device": "cpu", "data.placement": "host",
                                                "runtime.threads": "2"}),
    ("cpu-resident", "+ resident dataset (data.placement = device)", {"data.placement": "device"}),
]

MODELS = {
    "tiny": dict(vocab_size=256, context_length=256, n_layer=6, n_head=6, d_model=384,
                 batch=64, seq_len=256, grad_accum=1, steps=100, warmup=10, rung_cap=60,
                 torch_cap=150, torch_modes=("eager", "compile", "compile-ro"), torch_preset="tiny",
                 profile_steps=5, profile_cap=60, torch_profile_mode="compile",
                 torch_profile_steps=5, experiments=("nondeterministic",)),
    "gpt2": dict(vocab_size=50257, context_length=1024, n_layer=12, n_head=12, d_model=768,
                 batch=64, seq_len=1024, grad_accum=1, steps=6, warmup=2, rung_cap=120,
                 torch_cap=200, torch_modes=("eager", "compile"), torch_preset="gpt2",
                 profile_steps=2, profile_cap=90, torch_profile_mode="compile",
                 torch_profile_steps=2,
                 experiments=("nondeterministic", "head-chunk-640", "head-whole")),
    "smoke": dict(vocab_size=256, context_length=64, n_layer=2, n_head=2, d_model=64,
                  batch=4, seq_len=64, grad_accum=1, steps=3, warmup=1, rung_cap=60,
                  torch_cap=60, torch_modes=("eager", "compile"), torch_preset="smoke",
                  profile_steps=2, profile_cap=60, torch_profile_mode="eager",
                  torch_profile_steps=1, experiments=("head-chunk-64",)),
}
# Goals on an H100 (the issue): reported, never judged by the exit status.
GOALS = {
    "gpt2": [("tokens_per_s", None, 560e3, "bf16 >= 560K tok/s"),
             ("ratio", "compile", 1.4, ">= 1.4x torch.compile")],
    "tiny": [("ratio", "eager", 3.0, ">= 3x PyTorch eager"),
             ("ratio", "compile-ro", 1.3, ">= 1.3x torch.compile(reduce-overhead)")],
}


def config_toml(shape, shard):
    """The model, data and optimizer every rung shares; the rungs differ only by --set."""
    return f"""# Generated by bench/gpu_ladder.py
[model]
vocab_size = {shape['vocab_size']}
context_length = {shape['context_length']}
n_layer = {shape['n_layer']}
n_head = {shape['n_head']}
d_model = {shape['d_model']}
seed = 1337

[data]
train = {json.dumps(shard)}
sampler = "random"
seed = 1

[train]
batch_size = {shape['batch']}
seq_len = {shape['seq_len']}
grad_accum = {shape['grad_accum']}
steps = 100000
eval_every = 0

[optim]
lr = 3e-4
betas = [0.9, 0.95]
eps = 1e-8
weight_decay = 0.1
grad_clip = 1.0
schedule = "constant"
warmup_steps = 0

[runtime]
log_every = 1
"""


class Clock:
    def __init__(self, budget):
        self.t0, self.budget = time.time(), budget

    def left(self):
        return self.budget - (time.time() - self.t0)

    def elapsed(self):
        return time.time() - self.t0


def run_logged(cmd, log_path, timeout):
    """Runs cmd with stdout+stderr appended to log_path; (returncode or 'timeout', seconds)."""
    t = time.time()
    with open(log_path, "a") as log:
        log.write("$ " + " ".join(cmd) + f"   (cap {timeout:.0f} s)\n")
        log.flush()
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return rc, time.time() - t


def tail(path, n=6):
    """The last n output lines of a log (not the command lines), joined, at most 400 chars."""
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip() and not l.startswith("$ ")]
    except OSError:
        return ""
    return " / ".join(lines[-n:])[-400:]


def accel_line(report):
    return next((l for l in report.get("log", []) if l.startswith("acceleration:")), "")


# ----------------------------------------------------------------------------- our rungs
def run_rung(args, clock, model_dir, cfg_path, name, sets, delta, shape):
    """One rung through `trainrt bench` with the cumulative `sets` (`delta` is what this rung
    adds), from the configured batch, retried at half the batch on OOM; a result dict."""
    res = dict(rung=name, sets=dict(delta), all_sets=dict(sets), status="not reached")
    # Each rung starts from the configured batch: the memory a rung needs depends on what it
    # turns on (cuDNN attention stores no T x T probabilities), so one rung's OOM fallback
    # says nothing about the next.
    state = dict(batch=shape["batch"], grad_accum=shape["grad_accum"])
    while True:
        cap = min(shape["rung_cap"], clock.left())
        if cap < 5:
            return res
        B, GA = state["batch"], state["grad_accum"]
        jpath = os.path.join(model_dir, f"{name}.json")
        if os.path.exists(jpath):
            os.remove(jpath)
        cmd = [args.trainrt, "bench", cfg_path, "--steps", str(shape["steps"]),
               "--warmup", str(shape["warmup"]), "--json", jpath,
               "--set", f"train.batch_size={B}", "--set", f"train.grad_accum={GA}"]
        for k, v in sets.items():
            cmd += ["--set", f"{k}={v}"]
        log = os.path.join(model_dir, f"{name}.log")
        rc, secs = run_logged(cmd, log, cap)
        res.update(seconds=round(secs, 1), batch_size=B, grad_accum=GA, log=os.path.relpath(log, args.out))
        if rc == EXIT_OOM and B > 1:
            state["batch"], state["grad_accum"] = B // 2, GA * 2
            res.setdefault("oom_retries", []).append(B)
            continue
        if rc == "timeout":
            res.update(status="timeout", reason=f"cut off by the {cap:.0f} s cap")
        elif rc != 0:
            res.update(status="error", reason=f"exit {rc}" + (" (out of memory at batch 1)" if rc == EXIT_OOM else "")
                       + ": " + tail(log, 3))
        else:
            with open(jpath) as f:
                rep = json.load(f)
            finite = all(isinstance(x, (int, float)) and math.isfinite(x) for x in rep["losses"])
            res.update(status="ok" if finite else "error", reason="" if finite else "non-finite loss",
                       report=rep, json=os.path.relpath(jpath, args.out))
        return res


def loss_deltas(res, ref):
    """|loss - reference loss| at the last common step and the max over common steps."""
    if res.get("status") != "ok" or ref is None or ref.get("status") != "ok":
        return None, None
    a, b = res["report"], ref["report"]
    la = {a["first_step"] + i: x for i, x in enumerate(a["losses"])}
    lb = {b["first_step"] + i: x for i, x in enumerate(b["losses"])}
    common = sorted(set(la) & set(lb))
    if not common:
        return None, None
    d = [abs(la[s] - lb[s]) for s in common]
    return d[-1], max(d)


# ----------------------------------------------------------------------------- torch
def find_torch_python(requested):
    if requested and requested != "auto":
        cands = [requested]
    else:
        cands = [sys.executable, "python3", "/usr/bin/python3"]
    for py in cands:
        try:
            ok = subprocess.run([py, "-c", "import torch"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=120).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return py, ""
    return None, "no interpreter here imports torch (tried " + ", ".join(cands) + ")"


def run_torch(args, clock, model_dir, shape, mode, shard, batch, grad_accum, device):
    res = dict(mode=mode, status="not reached")
    if args.torch_python is None:
        return dict(res, status="skipped", reason=args.torch_missing)
    cap = min(shape["torch_cap"], clock.left())
    if cap < 10:
        return res
    jpath = os.path.join(model_dir, f"torch-{mode}.json")
    if os.path.exists(jpath):
        os.remove(jpath)
    warmup = shape["warmup"] if mode == "eager" else max(shape["warmup"], 3)
    cmd = [args.torch_python, TORCH_GPT, "--device", device, "--preset", shape["torch_preset"],
           "--vocab-size", str(shape["vocab_size"]), "--context-length", str(shape["context_length"]),
           "--n-layer", str(shape["n_layer"]), "--n-head", str(shape["n_head"]),
           "--d-model", str(shape["d_model"]), "--batch", str(batch), "--seq-len",
           str(shape["seq_len"]), "--grad-accum", str(grad_accum), "--modes", mode,
           "--steps", str(shape["steps"]), "--warmup", str(warmup), "--data", shard, "--json", jpath]
    if device == "cpu":
        cmd += ["--threads", "2"]
    if mode == shape["torch_profile_mode"] and not args.no_profile:
        cmd += ["--profile-steps", str(shape["torch_profile_steps"]), "--profile-top", "30"]
    log = os.path.join(model_dir, f"torch-{mode}.log")
    rc, secs = run_logged(cmd, log, cap)
    res.update(seconds=round(secs, 1), log=os.path.relpath(log, args.out))
    if rc == "timeout":
        return dict(res, status="timeout", reason=f"cut off by the {cap:.0f} s cap (compilation included)")
    if rc == 77:
        return dict(res, status="skipped", reason=f"{args.torch_python} cannot import torch")
    try:
        with open(jpath) as f:
            out = json.load(f)
    except (OSError, ValueError):
        return dict(res, status="error", reason=f"exit {rc}: " + tail(log, 3))
    run = out["runs"][0]
    res.update(status=run["status"], reason=run.get("reason", ""), report=run,
               torch_version=out.get("torch_version"), device_name=out.get("device_name"),
               json=os.path.relpath(jpath, args.out))
    return res


# ----------------------------------------------------------------------------- profile
def run_profile(args, clock, model_dir, cfg_path, best, shape):
    """Our best rung once more under `trainrt bench --profile` (its batch, its settings): the
    per-op profile read back with its roofline; a result dict."""
    res = dict(status="not reached")
    if best is None:
        return dict(res, status="skipped", reason="no rung completed")
    cap = min(shape["profile_cap"], clock.left())
    if cap < 10:
        return res
    jpath = os.path.join(model_dir, "profile.json")
    if os.path.exists(jpath):
        os.remove(jpath)
    cmd = [args.trainrt, "bench", cfg_path, "--profile", "--steps", str(shape["profile_steps"]),
           "--warmup", "1", "--json", jpath,
           "--set", f"train.batch_size={best['batch_size']}",
           "--set", f"train.grad_accum={best['grad_accum']}"]
    for k, v in best["all_sets"].items():
        cmd += ["--set", f"{k}={v}"]
    log = os.path.join(model_dir, "profile.log")
    rc, secs = run_logged(cmd, log, cap)
    res.update(rung=best["rung"], seconds=round(secs, 1), log=os.path.relpath(log, args.out))
    if rc == "timeout":
        return dict(res, status="timeout", reason=f"cut off by the {cap:.0f} s cap")
    if rc != 0:
        return dict(res, status="error", reason=f"exit {rc}: " + tail(log, 3))
    try:
        run = roofline.read_profile(jpath)
        lines, summary = roofline.report(run, run.get("peak_flops") or 0.0,
                                         run.get("peak_bytes_per_s") or 0.0, 25,
                                         "the device's datasheet")
    except (OSError, ValueError, KeyError) as exc:
        return dict(res, status="error", reason=f"profile.json: {exc}")
    summary.pop("rows")
    return dict(res, status="ok", json=os.path.relpath(jpath, args.out), table=lines,
                summary=summary, timing=run.get("timing"), choices=run.get("choices", []))


def profile_section(entry):
    """Where our step goes, and torch's kernels, for model_section."""
    lines = []
    p = entry.get("profile")
    if p is not None:
        lines.append(f"### Where our step goes: rung `{p.get('rung', '-')}` under "
                     f"`trainrt bench --profile` ({p.get('timing', '?')} timing)")
        lines.append("")
        if p["status"] == "ok":
            lines += p["table"]
            if p["choices"]:
                lines += ["", "| library choice | shape | chosen | workspace bytes |",
                          "|---|---|---|---|"]
                lines += [f"| {c['op']} | {c['shape']} | {c['choice']} | {c['workspace_bytes']} |"
                          for c in p["choices"]]
        else:
            lines.append(f"Profile: {p['status']}{': ' + p['reason'] if p.get('reason') else ''}.")
        lines.append("")
    for t in entry["torch"]:
        rep = t.get("report") or {}
        if "kernels" in rep or "kernels_error" in rep:
            lines.append(f"### torch {t['mode']}'s kernels (torch.profiler, "
                         f"{rep.get('kernel_profiled_steps', '?')} step(s) after the timed ones: "
                         f"{rep.get('kernel_what', '')})")
            lines.append("")
            if "kernels_error" in rep:
                lines.append(f"Not profiled: {rep['kernels_error']}")
            else:
                lines.append(f"{rep['kernel_kinds']} kinds, {rep['kernel_ms_per_step']:.3f} ms "
                             "per step in all; the top ones:")
                lines += ["", "| kernel | calls/step | ms/step | % |", "|---|---|---|---|"]
                for k in rep["kernels"]:
                    name = k["name"].replace("|", "/")
                    name = name if len(name) <= 120 else name[:117] + "..."
                    lines.append(f"| `{name}` | {k['calls_per_step']:.0f} | {k['ms_per_step']:.3f} "
                                 f"| {100 * k['share']:.1f} |")
            lines.append("")
    return lines


# ----------------------------------------------------------------------------- report
def fmt(v, spec, dash="-"):
    return dash if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def best_rung(entry):
    """Our fastest completed rung in the precision torch runs in (bf16 on CUDA)."""
    ok = [r for r in entry["rungs"] if r.get("status") == "ok"]
    want = "bf16" if entry["device"] == "cuda" else "fp32"
    same = [r for r in ok if r["report"].get("precision") == want]
    pool = same or ok
    return max(pool, key=lambda r: r["report"]["tokens_per_s"]) if pool else None


def ratios(entry):
    best = best_rung(entry)
    out = {}
    for t in entry["torch"]:
        if best is not None and t.get("status") == "ok" and t["report"]["tokens_per_s"] > 0:
            out[t["mode"]] = best["report"]["tokens_per_s"] / t["report"]["tokens_per_s"]
    return best, out


def model_section(name, entry):
    s = entry["shape"]
    lines = [f"## {name}: V={s['vocab_size']} L{s['n_layer']} H{s['n_head']} C{s['d_model']}, "
             f"T={s['seq_len']}, {s['batch'] * s['seq_len'] * s['grad_accum']:,} tokens per step "
             f"(B {s['batch']} x grad_accum {s['grad_accum']} x T at the start; "
             f"{s['warmup']} warm-up + {s['steps']} timed steps per run)", ""]
    lines.append("| rung | config delta | status | B x GA | steps/s | tok/s | MFU | step ms p50 / p95 "
                 "| loss (last step) | abs(loss - fp32 rung) last / max |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    peak = 0.0
    flops = None
    for r in entry["rungs"]:
        rep = r.get("report")
        delta = ", ".join(f"{k}={v}" for k, v in r["sets"].items())
        if rep:
            peak = rep["peak_flops"] if rep.get("precision") == "bf16" else peak
            flops = rep["model_flops_per_token"]
            d_last, d_max = r.get("delta_last"), r.get("delta_max")
            lines.append(
                f"| {r['rung']} | {delta} | {r['status']} | {r['batch_size']} x {r['grad_accum']} "
                f"| {rep['steps_per_s']:.2f} | {rep['tokens_per_s']:,.0f} | "
                f"{fmt(100 * rep['mfu'], '.1f') + ' %' if rep['peak_flops'] > 0 else 'n/a'} | "
                f"{rep['step_ms_p50']:.2f} / {rep['step_ms_p95']:.2f} | {rep['last_loss']:.4f} | "
                f"{fmt(d_last, '.2e')} / {fmt(d_max, '.2e')} |")
        else:
            lines.append(f"| {r['rung']} | {delta} | {r['status']}{': ' + r['reason'] if r.get('reason') else ''} "
                         f"| {r.get('batch_size', '-')} x {r.get('grad_accum', '-')} | | | | | | |")
    for t in entry["torch"]:
        rep = t.get("report")
        label = f"torch {t['mode']}"
        if t.get("status") == "ok":
            mfu = rep["tokens_per_s"] * flops / peak if peak > 0 and flops else None
            what = (f"torch {t.get('torch_version')}, {rep.get('autocast')} autocast, attention "
                    f"{rep.get('attention')}, fused AdamW {rep.get('fused_adamw')}")
            lines.append(
                f"| {label} | {what} | ok | {rep['batch_size']} x {rep['grad_accum']} | "
                f"{rep['steps_per_s']:.2f} | {rep['tokens_per_s']:,.0f} | "
                f"{fmt(None if mfu is None else 100 * mfu, '.1f', 'n/a')}{' %' if mfu else ''} | "
                f"{rep['step_ms_p50']:.2f} / {rep['step_ms_p95']:.2f} | {rep['last_loss']:.4f} | "
                f"(own init) |")
        else:
            lines.append(f"| {label} | | {t['status']}{': ' + t['reason'] if t.get('reason') else ''} "
                         f"| | | | | | | |")
    best, rat = ratios(entry)
    lines.append("")
    if best is not None:
        parts = [f"ours / torch {m} = **{v:.2f}x**" for m, v in rat.items()]
        lines.append(f"Ours = rung `{best['rung']}` ({best['report']['tokens_per_s']:,.0f} tok/s). "
                     + ("; ".join(parts) if parts else "No torch figure to compare with."))
        goals = []
        for kind, mode, target, text in GOALS.get(name, []):
            v = best["report"]["tokens_per_s"] if kind == "tokens_per_s" else rat.get(mode)
            verdict = "n/a" if v is None else ("met" if v >= target else "not met")
            goals.append(f"{text}: {verdict}" + ("" if v is None else f" ({v:,.2f})" if kind == "ratio"
                                                  else f" ({v:,.0f})"))
        if goals:
            lines.append("")
            lines.append("Goals (H100; reported, not judged): " + "; ".join(goals) + ".")
    lines.append("")
    lines += profile_section(entry)
    lines += experiments_section(entry)
    lines.append("<details><summary>what each rung really ran (the session's acceleration line)</summary>")
    lines.append("")
    for r in entry["rungs"] + entry.get("experiments", []):
        if r.get("report"):
            lines.append(f"- {r['rung']}: `{accel_line(r['report'])}`")
    lines.append("")
    lines.append("</details>")
    lines.append("")
    return lines


def experiments_section(entry):
    """One row per experiment: its tok/s against the rung it switches one thing of."""
    xs = entry.get("experiments", [])
    if not xs:
        return []
    base = next((r for r in entry["rungs"] if r["rung"] == entry.get("experiment_base")), None)
    base_rep = base.get("report") if base else None
    lines = [f"### Experiments: one switch each on top of rung `{base['rung'] if base else '-'}`"
             + ("" if base else " (not run: nothing to compare with)"),
             "", "| experiment | config delta | what | status | B x GA | tok/s | x the rung "
             "| step ms p50 / p95 | loss (last step) | abs(loss - the rung) last / max |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for x in xs:
        delta = ", ".join(f"{k}={v}" for k, v in x["sets"].items())
        rep = x.get("report")
        if not rep:
            lines.append(f"| {x['rung']} | {delta} | {x['adds']} | {x['status']}"
                         f"{': ' + x['reason'] if x.get('reason') else ''} | | | | | | |")
            continue
        speed = (rep["tokens_per_s"] / base_rep["tokens_per_s"]
                 if base_rep and base_rep["tokens_per_s"] > 0 else None)
        lines.append(
            f"| {x['rung']} | {delta} | {x['adds']} | {x['status']} | {x['batch_size']} x "
            f"{x['grad_accum']} | {rep['tokens_per_s']:,.0f} | {fmt(speed, '.3f')} | "
            f"{rep['step_ms_p50']:.2f} / {rep['step_ms_p95']:.2f} | {rep['last_loss']:.4f} | "
            f"{fmt(x.get('delta_last'), '.2e')} / {fmt(x.get('delta_max'), '.2e')} |")
    lines.append("")
    return lines


def write_outputs(args, clock, meta, models):
    md = ["# GPU benchmark ladder (bench/gpu_ladder.py)", ""]
    for k, v in meta.items():
        md.append(f"- {k}: {v}")
    md.append(f"- elapsed: {clock.elapsed():.0f} s of a {clock.budget:.0f} s budget")
    md.append("- tok/s = timed steps x tokens per step / wall time (sync included); step ms p50/p95: "
              "nearest rank; MFU = tok/s x (6N + 6LCT) / the device's dense peak in the rung's "
              "precision; the torch MFU uses the same FLOPs per token and the bf16 peak.")
    md.append("")
    for name, entry in models.items():
        md += model_section(name, entry)
    for path, text in ((os.path.join(args.out, "ladder.md"), "\n".join(md) + "\n"),
                       (os.path.join(args.out, "ladder.json"),
                        json.dumps(dict(meta=meta, elapsed_s=clock.elapsed(), models=models), indent=1))):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


def gpu_info():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "none"
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return "none"


def commit_id():
    try:
        head = open(os.path.join(REPO, ".git", "HEAD")).read().strip()
        if head.startswith("ref: "):
            return open(os.path.join(REPO, ".git", head[5:])).read().strip()[:12]
        return head[:12]
    except OSError:
        return "unknown"


# ----------------------------------------------------------------------------- main
def smoke_checks(models, profiled=True):
    """--smoke: the machinery produced what it should. Returns a list of problems."""
    problems = []
    e = models["smoke"]
    if len(e["rungs"]) != 2:
        return [f"--smoke checks need both rungs, ran {[r['rung'] for r in e['rungs']]}"]
    r0, r1 = e["rungs"]
    for r in (r0, r1):
        if r["status"] != "ok":
            problems.append(f"rung {r['rung']}: {r['status']} {r.get('reason', '')}")
    if r0["status"] == "ok" and r1["status"] == "ok":
        if r1.get("delta_max") != 0.0:
            problems.append(f"host-fed and resident rungs differ: max abs loss delta {r1.get('delta_max')}")
        for r in (r0, r1):
            rep = r["report"]
            if not (rep["tokens_per_s"] > 0 and rep["step_ms_p95"] >= rep["step_ms_p50"] > 0):
                problems.append(f"rung {r['rung']}: bad figures {rep['tokens_per_s']}, "
                                f"{rep['step_ms_p50']}, {rep['step_ms_p95']}")
            if len(rep["losses"]) != e["shape"]["steps"]:
                problems.append(f"rung {r['rung']}: {len(rep['losses'])} losses")
    for t in e["torch"]:
        if t["status"] == "ok":
            if r0["status"] == "ok" and t["report"]["parameters"] != r0["report"]["parameters"]:
                problems.append(f"torch has {t['report']['parameters']} parameters, trainrt "
                                f"{r0['report']['parameters']}: not the same model")
        elif t["status"] not in ("n/a", "skipped"):
            problems.append(f"torch {t['mode']}: {t['status']} {t.get('reason', '')}")
    if e["torch"] and e["torch"][0]["status"] == "ok" and "eager" not in e["ratios"]:
        problems.append("no ours/torch eager ratio")
    # The experiment (chunks of 64 rows where the CPU makes one): runs, and only the order of
    # the head's gradient sums differs from the resident rung's.
    for x in e.get("experiments", []):
        if x["status"] != "ok":
            problems.append(f"experiment {x['rung']}: {x['status']} {x.get('reason', '')}")
        elif x.get("delta_max") is None or x["delta_max"] > 1e-4:
            problems.append(f"experiment {x['rung']}: loss differs from the rung's by "
                            f"{x.get('delta_max')}")
        elif "head_chunk_rows=64 " not in accel_line(x["report"]):
            problems.append(f"experiment {x['rung']}: not run in chunks of 64 rows: "
                            f"{accel_line(x['report'])}")
    # The per-op profile of the best rung, read back with its roofline table; torch eager's
    # kernel (operator) table.
    p = e.get("profile", {})
    if not profiled:
        return problems
    if p.get("status") != "ok":
        problems.append(f"profile: {p.get('status')} {p.get('reason', '')}")
    elif not any(l.startswith("| **step** |") for l in p["table"]):
        problems.append("profile: no step row in its table")
    for t in e["torch"]:
        if t["mode"] == "eager" and t["status"] == "ok":
            rep = t["report"]
            if not rep.get("kernels") or not rep.get("kernel_ms_per_step", 0) > 0:
                problems.append(f"torch eager: no kernel table ({rep.get('kernels_error', '')})")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trainrt", default=os.path.join(REPO, "build", "trainrt"))
    ap.add_argument("--out", required=True, help="output folder (ladder.md, ladder.json, logs)")
    ap.add_argument("--models", default="tiny,gpt2")
    ap.add_argument("--rungs", default="", help="only these rungs (comma-separated names)")
    ap.add_argument("--torch-modes", default="", help="override the models' torch modes ('' = "
                    "defaults: tiny eager,compile,compile-ro; gpt2 eager,compile; 'none' = no torch)")
    ap.add_argument("--torch-python", default="auto")
    ap.add_argument("--budget", type=float, default=540.0, help="seconds for everything")
    ap.add_argument("--gpt2-tokens-per-step", type=int, default=65536)
    ap.add_argument("--steps", type=int, help="timed steps per run (default: per model)")
    ap.add_argument("--smoke", action="store_true", help="CPU smoke run of the machinery")
    ap.add_argument("--experiments", default="", help="only these experiments (comma-separated "
                    f"names of {sorted(EXPERIMENTS)}; '' = the model's own, 'none' = none)")
    ap.add_argument("--no-profile", action="store_true",
                    help="no per-op profile of our best rung (and no torch kernel table)")
    args = ap.parse_args()

    clock = Clock(args.budget)
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    args.trainrt = os.path.abspath(args.trainrt)
    if not os.access(args.trainrt, os.X_OK):
        sys.exit(f"gpu_ladder: no trainrt binary at {args.trainrt}")
    model_names = ["smoke"] if args.smoke else [m for m in args.models.split(",") if m]
    for m in model_names:
        if m not in MODELS:
            sys.exit(f"gpu_ladder: unknown model {m} (tiny, gpt2)")
    rungs = SMOKE_RUNGS if args.smoke else GPU_RUNGS
    keep = [r for r in args.rungs.split(",") if r] or [r[0] for r in rungs]
    unknown = set(keep) - {r[0] for r in rungs}
    if unknown:
        sys.exit(f"gpu_ladder: unknown rung(s) {sorted(unknown)}: {[r[0] for r in rungs]}")
    device = "cpu" if args.smoke else "cuda"
    asked_x = [] if args.experiments == "none" else [x for x in args.experiments.split(",") if x]
    if set(asked_x) - set(EXPERIMENTS):
        sys.exit(f"gpu_ladder: unknown experiment(s) {sorted(set(asked_x) - set(EXPERIMENTS))}: "
                 f"{sorted(EXPERIMENTS)}")
    bad_modes = set(m for m in args.torch_modes.split(",") if m) - {"none", "eager", "compile", "compile-ro"}
    if bad_modes:
        sys.exit(f"gpu_ladder: unknown torch mode(s) {sorted(bad_modes)}: eager, compile, compile-ro")

    if args.torch_modes == "none":
        args.torch_python, args.torch_missing = None, "--torch-modes none"
    else:
        args.torch_python, args.torch_missing = find_torch_python(args.torch_python)
        if args.torch_python is None:
            print(f"gpu_ladder: torch part skipped: {args.torch_missing}", file=sys.stderr)

    # Data: the bytes of tiny Shakespeare as an llm.c shard (byte ids are valid for V = 50257).
    data_dir = os.path.join(args.out, "data")
    shard = os.path.join(data_dir, "train.bin")
    if not os.path.exists(shard):
        rc, _ = run_logged([args.trainrt, "prepare", "--text",
                            os.path.join(REPO, "examples", "data", "tinyshakespeare.txt"),
                            "--out", data_dir, "--val-fraction", "0.01"],
                           os.path.join(args.out, "prepare.log"), 120)
        if rc != 0:
            sys.exit(f"gpu_ladder: trainrt prepare failed ({rc}); see {args.out}/prepare.log")

    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "gpu": gpu_info(), "commit": commit_id(), "trainrt": args.trainrt,
            "torch": args.torch_python or f"none ({args.torch_missing})",
            "mode": "smoke (CPU)" if args.smoke else "GPU"}
    models = {}
    failed = False
    for name in model_names:
        shape = dict(MODELS[name])
        if name == "gpt2":
            shape["grad_accum"] = max(1, args.gpt2_tokens_per_step // (shape["batch"] * shape["seq_len"]))
        if args.steps:
            shape["steps"] = args.steps
        model_dir = os.path.join(args.out, name)
        os.makedirs(model_dir, exist_ok=True)
        cfg_path = os.path.join(model_dir, "config.toml")
        with open(cfg_path, "w") as f:
            f.write(config_toml(shape, shard))
        entry = models[name] = dict(shape=shape, device=device, rungs=[], torch=[], ratios={})
        sets = {}
        ref = None
        for rung, what, delta in rungs:
            sets.update(delta)  # a rung runs with the deltas of every rung up to it
            if rung not in keep:
                continue
            print(f"== {name} / {rung} ({clock.left():.0f} s left)", file=sys.stderr)
            res = run_rung(args, clock, model_dir, cfg_path, rung, dict(sets), delta, shape)
            res["adds"] = what
            if ref is None and res["status"] == "ok" and res["report"].get("precision") == "fp32":
                ref = res
            res["delta_last"], res["delta_max"] = loss_deltas(res, ref)
            failed = failed or res["status"] == "error"
            entry["rungs"].append(res)
            write_outputs(args, clock, meta, models)
        # cumulative --set of the last rung, for the record
        entry["final_sets"] = sets
        modes = shape["torch_modes"]
        if args.torch_modes:
            modes = [] if args.torch_modes == "none" else [m for m in args.torch_modes.split(",") if m]
        for mode in modes:
            print(f"== {name} / torch {mode} ({clock.left():.0f} s left)", file=sys.stderr)
            # torch_gpt.py halves the batch on OOM itself, from the configured one.
            t = run_torch(args, clock, model_dir, shape, mode, shard, shape["batch"],
                          shape["grad_accum"], device)
            failed = failed or t["status"] == "error"
            entry["torch"].append(t)
            entry["ratios"] = ratios(entry)[1]
            write_outputs(args, clock, meta, models)
        if not args.no_profile:
            print(f"== {name} / profile ({clock.left():.0f} s left)", file=sys.stderr)
            entry["profile"] = run_profile(args, clock, model_dir, cfg_path, best_rung(entry),
                                           shape)
            failed = failed or entry["profile"]["status"] == "error"
        write_outputs(args, clock, meta, models)
        # Experiments: the last rung's settings and one switch; compared with that rung.
        # The base is the last rung of the list (every default on), when it ran.
        base = next((r for r in entry["rungs"] if r["rung"] == rungs[-1][0]), None)
        names = asked_x if args.experiments else list(shape.get("experiments", ()))
        entry["experiment_base"] = base["rung"] if base else None
        entry["experiments"] = []
        for x in names:
            what, delta = EXPERIMENTS[x]
            print(f"== {name} / experiment {x} ({clock.left():.0f} s left)", file=sys.stderr)
            res = run_rung(args, clock, model_dir, cfg_path, x, dict(sets, **delta), delta, shape)
            res["adds"] = what
            res["delta_last"], res["delta_max"] = loss_deltas(res, base)
            failed = failed or res["status"] == "error"
            entry["experiments"].append(res)
            write_outputs(args, clock, meta, models)

    with open(os.path.join(args.out, "ladder.md")) as f:
        print(f.read())
    if args.smoke:
        problems = smoke_checks(models, profiled=not args.no_profile)
        for p in problems:
            print("SMOKE FAIL: " + p, file=sys.stderr)
        if problems:
            return 1
        print("smoke: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
