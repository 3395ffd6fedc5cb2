#!/usr/bin/python3
"""CPU training throughput: libtrainrt (`trainrt train`) vs PyTorch, side by side, fp32 and bf16.

Both engines train the same model -- GPT-2 (`small`, `tiny`) or Llama (`small-llama`,
`tiny-llama`) -- with the same shape, batch, optimizer, clip and threads, on the same
random-token shard; each run is a fresh process. --precision picks the pairs (default both):
  fp32   trainrt `runtime.precision = "fp32"`  vs  PyTorch fp32
  bf16   trainrt `runtime.precision = "bf16"` (bf16 activations, fp32 math)  vs  PyTorch with
         `torch.autocast("cpu", dtype=torch.bfloat16)` around forward + loss (backward outside
         the autocast context, as PyTorch recommends; fp32 master weights, AdamW unchanged)
so one run of `both` measures four engines: trainrt fp32, torch fp32, torch autocast bf16,
trainrt bf16. The engines run alternately, the order rotated by one every round (trainrt,
torch | torch, trainrt | ... with fp32 alone; trainrt, torch, torch-bf16, trainrt-bf16 | torch,
torch-bf16, trainrt-bf16, trainrt | ... with both) so that a change in machine load hits all.
Per run the first --warmup steps are dropped; the figure is the median step time of the rest.
The ratio is trainrt tok/s / torch tok/s at the same precision, per round; the headline is the
median of the per-round ratios (the all rows also give pooled medians per engine). The bf16
one, trainrt bf16 / PyTorch autocast bf16, is the ratio the goal is stated in (>= 1.5x on a CPU
with native bf16); the header records the CPU model and whether its flags include avx512f,
avx512_bf16 and amx_bf16, since bf16 speed depends on them. With --baseline OLD_TRAINRT a
second trainrt binary (e.g. a build of an older commit) runs as one more engine per precision
in every round, after the pair of its precision (the order rotating: trainrt, torch, baseline
| torch, baseline, trainrt | ... with fp32 alone), for a regression check measured close in
time. See bench/README.md and shared/design/TESTING.md ("Performance is measured, not
asserted").

What one step is:
  trainrt  the `ms` of metrics.jsonl (runtime.log_every = 1): draw the batch (random
           sampler), forward, backward, global-norm clip, AdamW -- timed inside trainrt.
  torch    time.perf_counter around: draw the batch (random offsets), forward (in the
           autocast context for bf16), backward, clip_grad_norm_, AdamW.step, zero_grad.

Usage:
    /usr/bin/python3 bench/cpu_vs_torch.py [--trainrt build/trainrt] [--baseline OLD/trainrt]
        [--model small|tiny|small-llama|small-llama-t1024|tiny-llama|qwen2.5-0.5b-2l|llama-100m] [--precision fp32|bf16|both]
        [--steps 12] [--warmup 2] [--threads N] [--rounds 3] [--profile STEPS]
        [--out bench/results/FILE.md]

Each trainrt binary runs with its own folder first on LD_LIBRARY_PATH, so a copied binary
(or an old build) uses the libtrainrt.so next to it, not the one its RUNPATH names.

Only the standard library, torch and numpy are used (torch 1.13: Debian's python3-torch,
run with /usr/bin/python3).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
except Exception as exc:  # noqa: BLE001
    print(f"cpu_vs_torch: PyTorch/numpy not importable with {sys.executable}: {exc}\n"
          "  run with /usr/bin/python3 (Debian's python3-torch)", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

MODELS = {
    # The TESTING.md CPU anchor: V=256, L6 H6 C384, B8 T256.
    "small": dict(vocab_size=256, context_length=256, n_layer=6, n_head=6, d_model=384),
    # A quick smoke run of the harness.
    "tiny": dict(vocab_size=256, context_length=256, n_layer=2, n_head=4, d_model=128),
    # `small` as a Llama (issue 16): RMSNorm, RoPE, SwiGLU d_ff 1024, grouped-query attention
    # with 2 kv heads, no biases, untied head.
    "small-llama": dict(arch="llama", vocab_size=256, context_length=256, n_layer=6, n_head=6,
                        n_kv_head=2, d_model=384, d_ff=1024, rope_theta=10000.0, norm_eps=1e-5,
                        tie_embeddings=False),
    # Qwen2.5-0.5B's shape (issue 39) at 2 of its 24 layers: V 151936 (its output head is most
    # of a step), 14 heads over 2 key/value heads, q/k/v biases, tied head. The shard's ids
    # stay below 65536 (uint16 shards); the head still spans the whole vocabulary.
    "qwen2.5-0.5b-2l": dict(arch="qwen2", vocab_size=151936, context_length=256, n_layer=2,
                            n_head=14, n_kv_head=2, d_model=896, d_ff=4864, rope_theta=1000000.0,
                            norm_eps=1e-6, tie_embeddings=True, batch=2),
    # `small-llama` at T 1024 (B 2, the same tokens per step as B 8 T 256): attention's T²
    # share of a step grows fourfold; the tiled CPU attention (issue 39) is measured here.
    "small-llama-t1024": dict(arch="llama", vocab_size=256, context_length=1024, n_layer=6,
                              n_head=6, n_kv_head=2, d_model=384, d_ff=1024,
                              rope_theta=10000.0, norm_eps=1e-5, tie_embeddings=False,
                              batch=2, seq=1024),
    # A Llama of ~100M parameters (issue 42's goal: "a Llama/Qwen-shaped model of >= 100M
    # parameters" on 16 cores): L16 H12 over 4 key/value heads, C768, SwiGLU d_ff 2048,
    # untied; byte vocabulary (the head is not what is measured here). ~1.2 TFLOP a step:
    # seconds per step on one thread, so on a loan it runs at the host's thread count only
    # (its 1-thread figure comes from --profile's 1-thread session).
    "llama-100m": dict(arch="llama", vocab_size=256, context_length=256, n_layer=16, n_head=12,
                       n_kv_head=4, d_model=768, d_ff=2048, rope_theta=10000.0, norm_eps=1e-5,
                       tie_embeddings=False),
    # A quick smoke run of the Llama path.
    "tiny-llama": dict(arch="llama", vocab_size=256, context_length=256, n_layer=2, n_head=4,
                       n_kv_head=2, d_model=128, d_ff=320, rope_theta=10000.0, norm_eps=1e-5,
                       tie_embeddings=False),
}
BATCH, SEQ = 8, 256
# A model's "batch" key (when its step is too long at B 8 on a small machine) overrides BATCH
# for both engines, its "seq" key SEQ (at most its context_length).
# for both engines.
OPTIM = dict(lr=3e-4, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0)
SHARD_TOKENS = 2_000_000
DATA_SEED, TORCH_SEED = 1234, 1337
# Engines are "<kind>" (fp32) or "<kind>-bf16", kind trainrt | torch | baseline. Per precision
# the order of a round is trainrt, torch[, baseline]; for bf16 torch comes first, so that with
# --precision both round 1 runs trainrt, torch, torch-bf16, trainrt-bf16 (mirrored pairs).
PRECISIONS = {"fp32": ["fp32"], "bf16": ["bf16"], "both": ["fp32", "bf16"]}
LABELS = {"trainrt": "trainrt fp32", "torch": "torch fp32", "baseline": "baseline fp32",
          "trainrt-bf16": "trainrt bf16", "torch-bf16": "torch autocast bf16",
          "baseline-bf16": "baseline bf16"}
# The CPU flags bf16 speed depends on (/proc/cpuinfo): native bf16 = avx512_bf16 or amx_bf16.
BF16_FLAGS = ("avx512f", "avx512_bf16", "amx_bf16")
GOAL_BF16 = 1.5     # trainrt bf16 tok/s >= 1.5x PyTorch autocast bf16, on a CPU with native bf16


def kind(engine):
    return engine.split("-")[0]


def precision(engine):
    return "bf16" if engine.endswith("-bf16") else "fp32"


def torch_of(engine):
    """The torch engine of `engine`'s precision (what its ratio is taken against)."""
    return "torch" + ("-bf16" if precision(engine) == "bf16" else "")


# ----------------------------------------------------------------------------- data
# The llm.c shard reader/writer of the PyTorch reference test (one copy in the tree).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "reference"))
from reference_common import read_shard, write_shard  # noqa: E402


# ----------------------------------------------------------------------------- torch side
# The PyTorch twins of bench/torch_gpt.py (GPT-2, also the GPU ladder's; Llama): one
# definition of each in the tree. On torch 1.13 they take the explicit masked-softmax
# attention (no SDPA there).
sys.path.insert(0, HERE)
from torch_gpt import make_model  # noqa: E402


def torch_worker(spec_path, result_path):
    """One PyTorch run (in its own process, like trainrt): returns per-step ms and losses.
    precision "bf16": torch.autocast("cpu", dtype=torch.bfloat16) around forward + loss, the
    backward outside it (PyTorch's recipe); parameters, gradients and AdamW stay fp32."""
    with open(spec_path) as f:
        spec = json.load(f)
    cfg, threads, steps = spec["model"], spec["threads"], spec["steps"]
    bf16 = spec.get("precision", "fp32") == "bf16"
    torch.set_num_threads(threads)
    torch.manual_seed(TORCH_SEED)
    tokens = torch.from_numpy(read_shard(spec["shard"]))
    model = make_model(cfg)
    model.train()
    params = list(model.parameters())                                  # a tied head counts once
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": OPTIM["weight_decay"]},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=OPTIM["lr"], betas=(OPTIM["beta1"], OPTIM["beta2"]), eps=OPTIM["eps"])
    rng = np.random.RandomState(DATA_SEED)
    n = len(tokens)
    offs = torch.arange(cfg.get("seq", SEQ) + 1)
    # A check that autocast does what it says: the output dtype of the first nn.Linear, step 1.
    seen = {}

    def note_dtype(mod, inp, out):  # returns None: a hook's non-None return replaces `out`
        seen.setdefault("linear_out", str(out.dtype))

    first_linear = next((m for m in model.modules() if isinstance(m, torch.nn.Linear)), None)
    hook = first_linear.register_forward_hook(note_dtype) if first_linear is not None else None
    ms, losses = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        starts = torch.from_numpy(rng.randint(0, n - cfg.get("seq", SEQ), size=cfg.get("batch", BATCH)))
        rows = tokens[starts.unsqueeze(1) + offs]                       # (B, T+1)
        x, y = rows[:, :-1].contiguous(), rows[:, 1:].contiguous()
        if bf16:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(x, y)
        else:
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, OPTIM["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        t1 = time.perf_counter()
        ms.append((t1 - t0) * 1000.0)
        losses.append(loss.item())
        if hook is not None:
            hook.remove()
            hook = None
    with open(result_path, "w") as f:
        json.dump(dict(ms=ms, loss=losses, threads=torch.get_num_threads(),
                       torch=torch.__version__, parameters=sum(p.numel() for p in params),
                       precision="bf16 (autocast)" if bf16 else "fp32",
                       linear_out=seen.get("linear_out", "?"),
                       param_dtype=str(params[0].dtype), loss_dtype=str(loss.dtype)), f)


def run_torch(workdir, tag, cfg, threads, steps, shard, prec):
    spec = os.path.join(workdir, f"{tag}.spec.json")
    result = os.path.join(workdir, f"{tag}.result.json")
    with open(spec, "w") as f:
        json.dump(dict(model=cfg, threads=threads, steps=steps, shard=shard, precision=prec), f)
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", spec, result]
    proc = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise RuntimeError(f"torch worker exited with status {proc.returncode}")
    with open(result) as f:
        return json.load(f)


# ----------------------------------------------------------------------------- trainrt side
def model_keys(cfg):
    """The [model] keys of the family (docs/CONFIG.md); arch first."""
    if cfg.get("arch", "gpt2") not in ("llama", "qwen2"):
        return ""
    return (f'arch = "{cfg["arch"]}"\nn_kv_head = {cfg["n_kv_head"]}\nd_ff = {cfg["d_ff"]}\n'
            f'rope_theta = {cfg["rope_theta"]!r}\nnorm_eps = {cfg["norm_eps"]!r}\n'
            f'tie_embeddings = {"true" if cfg["tie_embeddings"] else "false"}\n')


def describe(cfg):
    d = (f"V{cfg['vocab_size']} L{cfg['n_layer']} H{cfg['n_head']} C{cfg['d_model']} "
         f"context {cfg['context_length']}")
    if cfg.get("arch", "gpt2") in ("llama", "qwen2"):
        return (f"{'Qwen2' if cfg['arch'] == 'qwen2' else 'Llama'} {d}, n_kv_head {cfg['n_kv_head']}, d_ff {cfg['d_ff']} (SwiGLU), "
                f"rope_theta {cfg['rope_theta']:g}, RMSNorm eps {cfg['norm_eps']:g}, "
                f"{'tied' if cfg['tie_embeddings'] else 'untied'} head, "
                f"{'q/k/v biases' if cfg['arch'] == 'qwen2' else 'no biases'}")
    return f"GPT-2 {d} (tied head)"


def lib_env(binary):
    """The environment for one trainrt binary: its own folder first on LD_LIBRARY_PATH."""
    env = dict(os.environ)
    here = os.path.dirname(binary)
    env["LD_LIBRARY_PATH"] = here + (":" + env["LD_LIBRARY_PATH"]
                                     if env.get("LD_LIBRARY_PATH") else "")
    return env


def resolved_lib(binary):
    """The libtrainrt.so that `binary` loads (ldd under lib_env), or "?"."""
    try:
        out = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=lib_env(binary)).stdout
    except OSError:
        return "?"
    for line in out.splitlines():
        if "libtrainrt" in line and "=>" in line:
            return line.split("=>", 1)[1].split("(")[0].strip()
    return "?"


def trainrt_toml(cfg, threads, steps, shard, out_dir, prec):
    return f"""# written by bench/cpu_vs_torch.py
[model]
{model_keys(cfg)}vocab_size = {cfg['vocab_size']}
context_length = {cfg['context_length']}
n_layer = {cfg['n_layer']}
n_head = {cfg['n_head']}
d_model = {cfg['d_model']}
seed = {TORCH_SEED}

[data]
train = {json.dumps(shard)}
sampler = "random"
seed = 1

[train]
batch_size = {cfg.get("batch", BATCH)}
seq_len = {cfg.get("seq", SEQ)}
grad_accum = 1
steps = {steps}
eval_every = 0
checkpoint_every = 0
out_dir = {json.dumps(out_dir)}

[optim]
lr = {OPTIM['lr']!r}
betas = [{OPTIM['beta1']!r}, {OPTIM['beta2']!r}]
eps = {OPTIM['eps']!r}
weight_decay = {OPTIM['weight_decay']!r}
grad_clip = {OPTIM['grad_clip']!r}
schedule = "constant"
warmup_steps = 0
min_lr = 0.0

[runtime]
device = "cpu"
precision = "{prec}"
threads = {threads}
log_every = 1
"""


def run_trainrt(trainrt, workdir, tag, cfg, threads, steps, shard, prec):
    out_dir = os.path.join(workdir, f"out_{tag}")
    cfg_path = os.path.join(workdir, f"{tag}.toml")
    with open(cfg_path, "w") as f:
        f.write(trainrt_toml(cfg, threads, steps, shard, out_dir, prec))
    cmd = [trainrt, "train", cfg_path]
    proc = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=lib_env(trainrt))
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise RuntimeError(f"`{' '.join(cmd)}` exited with status {proc.returncode}")
    rows = {}
    with open(os.path.join(out_dir, "metrics.jsonl")) as f:
        for line in f:
            line = line.strip()
            if line:
                rec = json.loads(line)
                if rec.get("split") == "train":
                    rows[rec["step"]] = rec
    missing = [s for s in range(1, steps + 1) if s not in rows or "ms" not in rows[s]]
    if missing:
        raise RuntimeError(f"{out_dir}/metrics.jsonl: no train line with ms for steps {missing}")
    first_log = next((ln for ln in proc.stdout.splitlines() if ln.strip()), "")
    model_log = next((ln for ln in proc.stdout.splitlines() if "] model:" in ln), "")
    accel_log = next((ln for ln in proc.stdout.splitlines() if "acceleration:" in ln), "")
    m = re.search(r"(\d+) parameters", model_log)
    # What the session ran, e.g. "bf16 [...]": the precision field of the acceleration line.
    p = re.search(r" precision=(.*?)(?: threads=|$)", accel_log)
    return dict(ms=[float(rows[s]["ms"]) for s in range(1, steps + 1)],
                loss=[float(rows[s]["loss"]) for s in range(1, steps + 1)],
                log=first_log, model_log=model_log, accel_log=accel_log,
                precision=p.group(1).strip() if p else "?",
                parameters=int(m.group(1)) if m else None)


def run_profile(trainrt, workdir, cfg, threads, steps, shard, prec):
    """`trainrt bench --profile` on the config run_trainrt writes; its markdown (the tables)."""
    tag = f"profile-{prec}"
    cfg_path = os.path.join(workdir, f"{tag}.toml")
    with open(cfg_path, "w") as f:
        f.write(trainrt_toml(cfg, threads, steps + 1, shard, os.path.join(workdir, tag), prec))
    cmd = [trainrt, "bench", cfg_path, "--profile", "--steps", str(steps), "--warmup", "1"]
    proc = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=lib_env(trainrt))
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise RuntimeError(f"`{' '.join(cmd)}` exited with status {proc.returncode}")
    # The tables and their notes; the first lines repeat the command and the device.
    return "\n".join(ln for ln in proc.stdout.splitlines()
                     if not ln.startswith("trainrt bench --profile:")).strip()


# ----------------------------------------------------------------------------- reporting
def sh(cmd):
    try:
        return subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True).stdout.strip()
    except OSError:
        return ""


def machine():
    model = ""
    for line in sh(["lscpu"]).splitlines():
        if line.lower().startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return model or platform.processor() or "unknown CPU", os.cpu_count()


def cpu_flags():
    """The CPU's feature flags (/proc/cpuinfo, else lscpu), or None when neither says."""
    text = ""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        pass
    for source in (text, sh(["lscpu"])):
        for line in source.splitlines():
            if line.lower().startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return None


def bf16_support(flags):
    """(markdown text, native bf16: True / False / None for unknown) for the header."""
    if flags is None:
        return "flags unknown (no /proc/cpuinfo, no lscpu)", None
    native = "avx512_bf16" in flags or "amx_bf16" in flags
    have = ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in BF16_FLAGS)
    return (f"{have} ({'native bf16' if native else 'no native bf16 instructions'})",
            native)


def torch_cpu_capability():
    """ATen's CPU kernel level (torch.__config__.show(): "CPU capability usage: AVX2")."""
    try:
        for line in torch.__config__.show().splitlines():
            if "CPU capability usage" in line:
                return line.split(":", 1)[1].strip()
    except Exception:  # noqa: BLE001
        pass
    return "?"


def commit():
    c = sh(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = sh(["git", "status", "--porcelain", "--untracked-files=no"])
    return c + (" (+ uncommitted changes)" if dirty else "")


def loadavg():
    return "%.2f %.2f %.2f" % os.getloadavg()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trainrt", default=os.path.join(REPO, "build", "trainrt"),
                    help="path to the trainrt CLI (default: build/trainrt)")
    ap.add_argument("--baseline", metavar="TRAINRT",
                    help="a second trainrt CLI (e.g. a build of an older commit) run as one more "
                         "engine per precision, `baseline`, in every round")
    ap.add_argument("--model", choices=sorted(MODELS), default="small",
                    help="small = GPT-2 V256 L6 H6 C384 (the TESTING.md anchor); tiny = L2 H4 "
                         "C128; small-llama = small as a Llama (n_kv_head 2, d_ff 1024, untied); "
                         "tiny-llama = L2 H4 KV2 C128 F320")
    ap.add_argument("--precision", choices=sorted(PRECISIONS), default="both",
                    help="fp32: trainrt fp32 vs torch fp32; bf16: trainrt runtime.precision = "
                         "\"bf16\" vs torch autocast bf16; both (default): the four engines")
    ap.add_argument("--steps", type=int, default=12,
                    help="optimizer steps per run, warm-up included (default 12)")
    ap.add_argument("--warmup", type=int, default=2,
                    help="first steps of each run left out of the median (default 2)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for all engines (default: nproc)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds, each one run per engine, the order rotating "
                         "every round (default 3)")
    ap.add_argument("--profile", type=int, default=0, metavar="STEPS",
                    help="also run `trainrt bench --profile` on the same model, data and threads "
                         "for each trainrt precision (STEPS profiled steps after one warm-up; "
                         "with --threads > 1 a 1-thread session beside it) and append its "
                         "tables: where the step's time goes and each op's parallel fraction")
    ap.add_argument("--out", help="append the markdown result to this file")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--torch-worker", nargs=2, metavar=("SPEC", "RESULT"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        torch_worker(*args.torch_worker)
        return 0
    if args.steps - args.warmup < 3:
        ap.error("--steps must exceed --warmup by at least 3 (for a median)")
    if args.threads < 1 or args.rounds < 1:
        ap.error("--threads and --rounds must be >= 1")
    binaries = {"trainrt": os.path.abspath(args.trainrt)}
    if args.baseline:
        binaries["baseline"] = os.path.abspath(args.baseline)
    for path in binaries.values():
        if not os.access(path, os.X_OK):
            print(f"cpu_vs_torch: trainrt CLI not found or not executable: {path}",
                  file=sys.stderr)
            return 1
    # Per precision trainrt, torch[, baseline] (bf16: torch first); round r runs the list
    # rotated by r - 1 (fp32 alone, two engines: the order flips every round, as before).
    precs = PRECISIONS[args.precision]
    engines = []
    for p in precs:
        sfx = "-bf16" if p == "bf16" else ""
        pair = ["trainrt", "torch"] if p == "fp32" else ["torch", "trainrt"]
        engines += [k + sfx for k in pair + (["baseline"] if args.baseline else [])]
    cfg = MODELS[args.model]
    W, N = args.warmup, args.steps

    date = sh(["date", "-u"]) or datetime.datetime.utcnow().strftime("%a %b %d %H:%M:%S UTC %Y")
    cpu, ncpu = machine()
    flags_txt, native_bf16 = bf16_support(cpu_flags())
    rev = commit()
    binfo = {}
    for name, path in binaries.items():
        info = subprocess.run([path, "info"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, env=lib_env(path)).stdout.strip().replace("\n", "; ")
        mtime = datetime.datetime.utcfromtimestamp(os.path.getmtime(path)).strftime(
            "%Y-%m-%d %H:%M UTC")
        binfo[name] = f"`{path}` (built {mtime}; libtrainrt `{resolved_lib(path)}`; {info})"

    workdir = tempfile.mkdtemp(prefix="trainrt-bench-")
    t_start = time.time()
    try:
        rng = np.random.RandomState(DATA_SEED)
        shard = os.path.join(workdir, "train.bin")
        write_shard(shard, rng.randint(0, min(cfg["vocab_size"], 65536), size=SHARD_TOKENS))
        print(f"model {args.model}: {describe(cfg)}, B{cfg.get('batch', BATCH)} T{cfg.get('seq', SEQ)}, {' + '.join(precs)}, "
              f"{args.threads} threads, {N} steps/run ({W} warm-up), {args.rounds} round(s), "
              f"engines {', '.join(engines)}; CPU {cpu}: {flags_txt}; shard {SHARD_TOKENS} "
              f"tokens in {workdir}", flush=True)

        runs = []  # (round, engine, result dict, load before, load after, seconds)
        for r in range(1, args.rounds + 1):
            k = (r - 1) % len(engines)
            order = engines[k:] + engines[:k]
            for engine in order:
                la0, t0 = loadavg(), time.time()
                print(f"round {r}: {engine} ... (load avg {la0})", end=" ", flush=True)
                if kind(engine) == "torch":
                    res = run_torch(workdir, f"r{r}{engine}", cfg, args.threads, N, shard,
                                    precision(engine))
                else:
                    res = run_trainrt(binaries[kind(engine)], workdir, f"r{r}{engine}", cfg,
                                      args.threads, N, shard, precision(engine))
                secs, la1 = time.time() - t0, loadavg()
                med = statistics.median(res["ms"][W:])
                print(f"median {med:.1f} ms/step, {secs:.1f} s wall", flush=True)
                runs.append((r, engine, res, la0, la1, secs))
        profiles = []  # (precision, markdown)
        if args.profile > 0:
            for p in precs:
                print(f"profile: trainrt {p} ...", end=" ", flush=True)
                t0 = time.time()
                profiles.append((p, run_profile(binaries["trainrt"], workdir, cfg, args.threads,
                                                args.profile, shard, p)))
                print(f"{time.time() - t0:.1f} s wall", flush=True)
    finally:
        if args.keep:
            print(f"scratch folder kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    tokens = cfg.get("batch", BATCH) * cfg.get("seq", SEQ)

    def row(label, engine, ms_list, ratio):
        med = statistics.median(ms_list)
        tps = tokens / (med / 1000.0)
        rtxt = f"{ratio:.2f}" if ratio is not None else "—"
        return med, tps, (f"| {label} | {LABELS[engine]} | {args.threads} | {med:.1f} | "
                          f"{tps:.0f} | {rtxt} |")

    def rounds_txt(xs, digits=2):
        return ", ".join(f"{x:.{digits}f}" for x in xs)

    params = {}
    for _, engine, res, *_ in runs:
        if res.get("parameters") is not None:
            params.setdefault(kind(engine), res["parameters"])
    ptxt = ", ".join(f"{e} {n:,}" for e, n in params.items())
    same = len(set(params.values())) <= 1
    first = {}                                # engine -> its first run's result
    for _, engine, res, *_ in runs:
        first.setdefault(engine, res)
    ptexts = []
    if "fp32" in precs:
        ptexts.append("fp32 (both engines)")
    if "bf16" in precs:
        t = first["torch-bf16"]
        ptexts.append(
            "bf16: trainrt `runtime.precision = \"bf16\"` (bf16 activations, fp32 math; it ran "
            f"`precision={first['trainrt-bf16']['precision']}`), torch "
            "`torch.autocast(\"cpu\", dtype=torch.bfloat16)` around forward + loss, backward "
            f"outside (first nn.Linear's output {t['linear_out']}, loss {t['loss_dtype']}, "
            f"parameters {t['param_dtype']}: fp32 master weights and AdamW)")
    lines = [
        f"### trainrt vs PyTorch, CPU, model `{args.model}`, {' + '.join(precs)}",
        "",
        f"- date: {date}",
        f"- machine: {cpu}, nproc {ncpu}; CPU flags: {flags_txt}; torch's CPU capability "
        f"{torch_cpu_capability()}; load average (1/5/15 min) at start {runs[0][3]}, at end "
        f"{runs[-1][4]}",
        f"- commit: {rev}; trainrt: {binfo['trainrt']}",
    ]
    if args.baseline:
        lines.append(f"- baseline (a second trainrt): {binfo['baseline']}")
    lines += [
        f"- torch {torch.__version__} (python {platform.python_version()}), numpy "
        f"{np.__version__}",
        f"- model: {describe(cfg)}; parameters: {ptxt or '?'}"
        + ("" if same else " (**they differ**)") + f"; B{cfg.get('batch', BATCH)} T{cfg.get('seq', SEQ)} ({tokens} tokens/step); "
        f"AdamW lr {OPTIM['lr']:g} betas ({OPTIM['beta1']}, {OPTIM['beta2']}) wd "
        f"{OPTIM['weight_decay']:g} (>= 2-D tensors), constant lr; grad clip "
        f"{OPTIM['grad_clip']:g}; random batches from a {SHARD_TOKENS}-token random shard",
        f"- precision: {'; '.join(ptexts)}",
        f"- per run {N} steps, first {W} dropped, median of the other {N - W}; "
        f"{args.rounds} round(s), engines {', '.join(engines)}, the order rotated by one "
        f"every round (round 1 starts with {engines[0]}); each run a fresh process",
        f"- command: `/usr/bin/python3 bench/cpu_vs_torch.py --model {args.model} "
        f"--precision {args.precision} --steps {N} --warmup {W} --threads {args.threads} "
        f"--rounds {args.rounds}"
        + (f" --baseline {args.baseline}" if args.baseline else "")
        + (f" --profile {args.profile}" if args.profile else "")
        + (f" --out {args.out}" if args.out else "") + "`",
        "",
        "| round | engine | threads | median ms/step | tok/s | tok/s ratio vs torch (same "
        "precision) |",
        "|---|---|---|---|---|---|",
    ]
    by_round = {}
    for r, engine, res, *_ in runs:
        by_round.setdefault(r, {})[engine] = res["ms"][W:]
    # The table's engine order: per precision trainrt[, baseline], torch (as before).
    shown = [k + ("-bf16" if p == "bf16" else "") for p in precs
             for k in ["trainrt"] + (["baseline"] if args.baseline else []) + ["torch"]]
    others = [e for e in shown if kind(e) != "torch"]
    ratios = {e: [] for e in others}          # per round: torch ms / engine ms, same precision
    vs_base = {p: [] for p in precs}          # per round: baseline ms / trainrt ms
    for r in sorted(by_round):
        for e in shown:
            ratio = None
            if e in ratios:
                ratio = (statistics.median(by_round[r][torch_of(e)]) /
                         statistics.median(by_round[r][e]))
                ratios[e].append(ratio)
            lines.append(row(str(r), e, by_round[r][e], ratio)[2])
        if args.baseline:
            for p in precs:
                sfx = "-bf16" if p == "bf16" else ""
                vs_base[p].append(statistics.median(by_round[r]["baseline" + sfx]) /
                                  statistics.median(by_round[r]["trainrt" + sfx]))
    # Summary: the median of the per-round ratios (each measured side by side, close in time)
    # is the headline; the pooled medians give the typical absolute figures. Under changing
    # load the two can differ, since a pooled median mixes quiet and busy rounds.
    pooled = {e: [m for r in sorted(by_round) for m in by_round[r][e]] for e in engines}
    tps, pooled_ratio = {}, {}
    for e in shown:
        if e in ratios:
            pooled_ratio[e] = (statistics.median(pooled[torch_of(e)]) /
                               statistics.median(pooled[e]))
        _, tps[e], line = row("**all**", e, pooled[e], pooled_ratio.get(e))
        lines.append(line)
    lines += ["", "Ratio > 1 means trainrt is faster."]
    if "fp32" in precs:
        ratio = statistics.median(ratios["trainrt"])
        lines += [
            "",
            f"fp32: **trainrt fp32 / torch fp32 tok/s, median of the per-round ratios: "
            f"{ratio:.2f}** (rounds: {rounds_txt(ratios['trainrt'])}). The **all** rows pool the "
            f"timed steps of every round: trainrt {tps['trainrt']:.0f} tok/s, torch "
            f"{tps['torch']:.0f} tok/s (ratio of pooled medians {pooled_ratio['trainrt']:.2f}).",
        ]
    if "bf16" in precs:
        ratio = statistics.median(ratios["trainrt-bf16"])
        if native_bf16:
            verdict = ("**met**" if ratio >= GOAL_BF16 else "**not met**") + \
                " (this CPU has native bf16)"
        elif native_bf16 is None:
            verdict = "not judged (the CPU flags are unknown)"
        else:
            verdict = ("not judged: this CPU has no native bf16 (no avx512_bf16 / amx_bf16), "
                       "the goal is stated for one that has")
        lines += [
            "",
            f"bf16 (the goal's ratio): **trainrt bf16 / PyTorch autocast bf16 tok/s, median of "
            f"the per-round ratios: {ratio:.2f}** (rounds: {rounds_txt(ratios['trainrt-bf16'])}; "
            f"pooled: trainrt {tps['trainrt-bf16']:.0f} tok/s, torch autocast "
            f"{tps['torch-bf16']:.0f} tok/s, ratio {pooled_ratio['trainrt-bf16']:.2f}). Goal "
            f">= {GOAL_BF16:g}x on a CPU with native bf16: {verdict}.",
        ]
    if len(precs) == 2:
        lines += [
            "",
            f"bf16 / fp32 tok/s of the same engine (pooled medians): trainrt "
            f"{tps['trainrt-bf16'] / tps['trainrt']:.2f}, torch "
            f"{tps['torch-bf16'] / tps['torch']:.2f}.",
        ]
    if args.baseline:
        for p in precs:
            sfx = "-bf16" if p == "bf16" else ""
            lines += [
                "",
                f"Baseline {p}: median of its per-round ratios vs torch {p} "
                f"{statistics.median(ratios['baseline' + sfx]):.2f} (rounds: "
                f"{rounds_txt(ratios['baseline' + sfx])}); pooled {tps['baseline' + sfx]:.0f} "
                f"tok/s. **trainrt / baseline tok/s ({p}), median of the per-round ratios: "
                f"{statistics.median(vs_base[p]):.3f}** (rounds: {rounds_txt(vs_base[p], 3)}; "
                f"pooled {tps['trainrt' + sfx] / tps['baseline' + sfx]:.3f}; > 1: trainrt is "
                f"faster).",
            ]
    lines += [
        "",
        "<details><summary>per-step ms (all steps, warm-up first), loss, load average</summary>",
        "",
    ]
    for r, engine, res, la0, la1, secs in runs:
        lines.append(f"- round {r} {LABELS[engine]}: " + ", ".join(f"{m:.1f}" for m in res["ms"])
                     + f"; loss {res['loss'][0]:.4f} -> {res['loss'][-1]:.4f}; load "
                     f"{la0} -> {la1}; {secs:.1f} s wall")
    for e in others:
        res = next((res for _, en, res, *_ in runs if en == e and res.get("log")), None)
        if res:
            lines += ["", f"{LABELS[e]}'s first log line: `{res['log'].strip()}`"]
            if res.get("model_log"):
                lines.append(f"{LABELS[e]}'s model line: `{res['model_log'].strip()}`")
            if res.get("accel_log") and res["accel_log"] != res["log"]:
                lines.append(f"{LABELS[e]}'s acceleration line: `{res['accel_log'].strip()}`")
    lines += ["", "</details>", ""]
    for p, table in profiles:
        lines += [f"#### Per-op profile: trainrt {p}, `trainrt bench --profile` at "
                  f"{args.threads} thread(s), {args.profile} profiled step(s) after 1 warm-up", "",
                  table, ""]
    text = "\n".join(lines)
    print()
    print(text)
    print(f"(bench wall time {time.time() - t_start:.0f} s)")
    if args.out:
        with open(args.out, "a") as f:
            f.write(text + "\n")
        print(f"appended to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
