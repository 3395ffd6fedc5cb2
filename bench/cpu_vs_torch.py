#!/usr/bin/python3
"""CPU training throughput: libtrainrt (`trainrt train`) vs PyTorch, side by side.

Both engines train the same model -- GPT-2 (`small`, `tiny`) or Llama (`small-llama`,
`tiny-llama`) -- with the same shape, batch, optimizer, clip, threads and fp32, on the same
random-token shard; each run is a fresh process. The engines run
alternately (trainrt, torch | torch, trainrt | trainrt, torch ... for --rounds rounds: the
order flips every round) so that a change in machine load hits both. Per run the first
--warmup steps are dropped; the figure is the median step time of the rest. The ratio is
trainrt tok/s / torch tok/s, per round; the headline is the median of the per-round ratios
(the all rows also give pooled medians per engine). With --baseline OLD_TRAINRT a second
trainrt binary (e.g. a build of an older commit) runs as a third engine in every round (the
order rotating: trainrt, torch, baseline | torch, baseline, trainrt | ...), for a regression
check measured close in time. See bench/README.md and
shared/design/TESTING.md ("Performance is measured, not asserted").

What one step is:
  trainrt  the `ms` of metrics.jsonl (runtime.log_every = 1): draw the batch (random
           sampler), forward, backward, global-norm clip, AdamW -- timed inside trainrt.
  torch    time.perf_counter around: draw the batch (random offsets), forward, backward,
           clip_grad_norm_, AdamW.step, zero_grad.

Usage:
    /usr/bin/python3 bench/cpu_vs_torch.py [--trainrt build/trainrt] [--baseline OLD/trainrt]
        [--model small|tiny|small-llama|tiny-llama] [--steps 12] [--warmup 2] [--threads N]
        [--rounds 3] [--out bench/results/FILE.md]

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
    # A quick smoke run of the Llama path.
    "tiny-llama": dict(arch="llama", vocab_size=256, context_length=256, n_layer=2, n_head=4,
                       n_kv_head=2, d_model=128, d_ff=320, rope_theta=10000.0, norm_eps=1e-5,
                       tie_embeddings=False),
}
BATCH, SEQ = 8, 256
OPTIM = dict(lr=3e-4, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1, grad_clip=1.0)
SHARD_TOKENS = 2_000_000
DATA_SEED, TORCH_SEED = 1234, 1337


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
    """One PyTorch run (in its own process, like trainrt): returns per-step ms and losses."""
    with open(spec_path) as f:
        spec = json.load(f)
    cfg, threads, steps = spec["model"], spec["threads"], spec["steps"]
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
    offs = torch.arange(SEQ + 1)
    ms, losses = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        starts = torch.from_numpy(rng.randint(0, n - SEQ, size=BATCH))
        rows = tokens[starts.unsqueeze(1) + offs]                       # (B, T+1)
        x, y = rows[:, :-1].contiguous(), rows[:, 1:].contiguous()
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, OPTIM["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        t1 = time.perf_counter()
        ms.append((t1 - t0) * 1000.0)
        losses.append(loss.item())
    with open(result_path, "w") as f:
        json.dump(dict(ms=ms, loss=losses, threads=torch.get_num_threads(),
                       torch=torch.__version__, parameters=sum(p.numel() for p in params)), f)


def run_torch(workdir, tag, cfg, threads, steps, shard):
    spec = os.path.join(workdir, f"{tag}.spec.json")
    result = os.path.join(workdir, f"{tag}.result.json")
    with open(spec, "w") as f:
        json.dump(dict(model=cfg, threads=threads, steps=steps, shard=shard), f)
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
    if cfg.get("arch", "gpt2") != "llama":
        return ""
    return (f'arch = "llama"\nn_kv_head = {cfg["n_kv_head"]}\nd_ff = {cfg["d_ff"]}\n'
            f'rope_theta = {cfg["rope_theta"]!r}\nnorm_eps = {cfg["norm_eps"]!r}\n'
            f'tie_embeddings = {"true" if cfg["tie_embeddings"] else "false"}\n')


def describe(cfg):
    d = (f"V{cfg['vocab_size']} L{cfg['n_layer']} H{cfg['n_head']} C{cfg['d_model']} "
         f"context {cfg['context_length']}")
    if cfg.get("arch", "gpt2") == "llama":
        return (f"Llama {d}, n_kv_head {cfg['n_kv_head']}, d_ff {cfg['d_ff']} (SwiGLU), "
                f"rope_theta {cfg['rope_theta']:g}, RMSNorm eps {cfg['norm_eps']:g}, "
                f"{'tied' if cfg['tie_embeddings'] else 'untied'} head, no biases")
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


def trainrt_toml(cfg, threads, steps, shard, out_dir):
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
batch_size = {BATCH}
seq_len = {SEQ}
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
precision = "fp32"
threads = {threads}
log_every = 1
"""


def run_trainrt(trainrt, workdir, tag, cfg, threads, steps, shard):
    out_dir = os.path.join(workdir, f"out_{tag}")
    cfg_path = os.path.join(workdir, f"{tag}.toml")
    with open(cfg_path, "w") as f:
        f.write(trainrt_toml(cfg, threads, steps, shard, out_dir))
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
    m = re.search(r"(\d+) parameters", model_log)
    return dict(ms=[float(rows[s]["ms"]) for s in range(1, steps + 1)],
                loss=[float(rows[s]["loss"]) for s in range(1, steps + 1)],
                log=first_log, model_log=model_log,
                parameters=int(m.group(1)) if m else None)


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
                    help="a second trainrt CLI (e.g. a build of an older commit) run as a third "
                         "engine, `baseline`, in every round")
    ap.add_argument("--model", choices=sorted(MODELS), default="small",
                    help="small = GPT-2 V256 L6 H6 C384 (the TESTING.md anchor); tiny = L2 H4 "
                         "C128; small-llama = small as a Llama (n_kv_head 2, d_ff 1024, untied); "
                         "tiny-llama = L2 H4 KV2 C128 F320")
    ap.add_argument("--steps", type=int, default=12,
                    help="optimizer steps per run, warm-up included (default 12)")
    ap.add_argument("--warmup", type=int, default=2,
                    help="first steps of each run left out of the median (default 2)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads for both engines (default: nproc)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds, each one run per engine, the order rotating "
                         "every round (default 3)")
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
    # trainrt, torch[, baseline]; round r runs them rotated by r - 1 (two engines: the order
    # flips every round, as before).
    engines = ["trainrt", "torch"] + (["baseline"] if args.baseline else [])
    cfg = MODELS[args.model]
    W, N = args.warmup, args.steps

    date = sh(["date", "-u"]) or datetime.datetime.utcnow().strftime("%a %b %d %H:%M:%S UTC %Y")
    cpu, ncpu = machine()
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
        write_shard(shard, rng.randint(0, cfg["vocab_size"], size=SHARD_TOKENS))
        print(f"model {args.model}: {describe(cfg)}, B{BATCH} T{SEQ}, fp32, "
              f"{args.threads} threads, {N} steps/run ({W} warm-up), {args.rounds} round(s), "
              f"engines {', '.join(engines)}; shard {SHARD_TOKENS} tokens in {workdir}",
              flush=True)

        runs = []  # (round, engine, result dict, load before, load after, seconds)
        for r in range(1, args.rounds + 1):
            k = (r - 1) % len(engines)
            order = engines[k:] + engines[:k]
            for engine in order:
                la0, t0 = loadavg(), time.time()
                print(f"round {r}: {engine} ... (load avg {la0})", end=" ", flush=True)
                if engine == "torch":
                    res = run_torch(workdir, f"r{r}", cfg, args.threads, N, shard)
                else:
                    res = run_trainrt(binaries[engine], workdir, f"r{r}{engine}", cfg,
                                      args.threads, N, shard)
                secs, la1 = time.time() - t0, loadavg()
                med = statistics.median(res["ms"][W:])
                print(f"median {med:.1f} ms/step, {secs:.1f} s wall", flush=True)
                runs.append((r, engine, res, la0, la1, secs))
    finally:
        if args.keep:
            print(f"scratch folder kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    tokens = BATCH * SEQ

    def row(label, engine, ms_list, ratio):
        med = statistics.median(ms_list)
        tps = tokens / (med / 1000.0)
        rtxt = f"{ratio:.2f}" if ratio is not None else "—"
        return med, tps, (f"| {label} | {engine} | {args.threads} | {med:.1f} | {tps:.0f} | "
                          f"{rtxt} |")

    params = {}
    for _, engine, res, *_ in runs:
        if res.get("parameters") is not None:
            params.setdefault(engine, res["parameters"])
    ptxt = ", ".join(f"{e} {n:,}" for e, n in params.items())
    same = len(set(params.values())) <= 1
    lines = [
        f"### trainrt vs PyTorch, CPU, model `{args.model}`",
        "",
        f"- date: {date}",
        f"- machine: {cpu}, nproc {ncpu}; load average (1/5/15 min) at start "
        f"{runs[0][3]}, at end {runs[-1][4]}",
        f"- commit: {rev}; trainrt: {binfo['trainrt']}",
    ]
    if args.baseline:
        lines.append(f"- baseline (a second trainrt): {binfo['baseline']}")
    lines += [
        f"- torch {torch.__version__} (python {platform.python_version()}), numpy "
        f"{np.__version__}",
        f"- model: {describe(cfg)}; parameters: {ptxt or '?'}"
        + ("" if same else " (**they differ**)") + f"; B{BATCH} T{SEQ} ({tokens} tokens/step); "
        f"fp32; AdamW lr {OPTIM['lr']:g} betas ({OPTIM['beta1']}, {OPTIM['beta2']}) wd "
        f"{OPTIM['weight_decay']:g} (>= 2-D tensors), constant lr; grad clip "
        f"{OPTIM['grad_clip']:g}; random batches from a {SHARD_TOKENS}-token random shard",
        f"- per run {N} steps, first {W} dropped, median of the other {N - W}; "
        f"{args.rounds} round(s), engines {', '.join(engines)}, the order rotated by one "
        f"every round (round 1 starts with trainrt); each run a fresh process",
        f"- command: `/usr/bin/python3 bench/cpu_vs_torch.py --model {args.model} "
        f"--steps {N} --warmup {W} --threads {args.threads} --rounds {args.rounds}"
        + (f" --baseline {args.baseline}" if args.baseline else "")
        + (f" --out {args.out}" if args.out else "") + "`",
        "",
        "| round | engine | threads | median ms/step | tok/s | tok/s ratio vs torch |",
        "|---|---|---|---|---|---|",
    ]
    by_round = {}
    for r, engine, res, *_ in runs:
        by_round.setdefault(r, {})[engine] = res["ms"][W:]
    others = [e for e in engines if e != "torch"]
    ratios = {e: [] for e in others}          # per round: torch ms / engine ms
    vs_base = []                              # per round: baseline ms / trainrt ms
    for r in sorted(by_round):
        t_med = statistics.median(by_round[r]["torch"])
        for e in others:
            ratios[e].append(t_med / statistics.median(by_round[r][e]))
            lines.append(row(str(r), e, by_round[r][e], ratios[e][-1])[2])
        lines.append(row(str(r), "torch", by_round[r]["torch"], None)[2])
        if args.baseline:
            vs_base.append(statistics.median(by_round[r]["baseline"]) /
                           statistics.median(by_round[r]["trainrt"]))
    # Summary: the median of the per-round ratios (each measured side by side, close in time)
    # is the headline; the pooled medians give the typical absolute figures. Under changing
    # load the two can differ, since a pooled median mixes quiet and busy rounds.
    pooled = {e: [m for r in sorted(by_round) for m in by_round[r][e]] for e in engines}
    tps, pooled_ratio = {}, {}
    for e in others:
        pooled_ratio[e] = statistics.median(pooled["torch"]) / statistics.median(pooled[e])
        _, tps[e], line = row("**all**", e, pooled[e], pooled_ratio[e])
        lines.append(line)
    _, tps["torch"], line = row("**all**", "torch", pooled["torch"], None)
    lines.append(line)
    ratio = statistics.median(ratios["trainrt"])
    lines += [
        "",
        f"Ratio > 1 means trainrt is faster. **Median of the per-round ratios: {ratio:.2f}** "
        f"(rounds: {', '.join(f'{x:.2f}' for x in ratios['trainrt'])}). The **all** rows pool "
        f"the timed steps of every round: trainrt {tps['trainrt']:.0f} tok/s, torch "
        f"{tps['torch']:.0f} tok/s (ratio of pooled medians {pooled_ratio['trainrt']:.2f}).",
    ]
    if args.baseline:
        lines += [
            "",
            f"Baseline: median of its per-round ratios vs torch "
            f"{statistics.median(ratios['baseline']):.2f} (rounds: "
            f"{', '.join(f'{x:.2f}' for x in ratios['baseline'])}); pooled {tps['baseline']:.0f} "
            f"tok/s. **trainrt / baseline tok/s, median of the per-round ratios: "
            f"{statistics.median(vs_base):.3f}** (rounds: "
            f"{', '.join(f'{x:.3f}' for x in vs_base)}; pooled "
            f"{tps['trainrt'] / tps['baseline']:.3f}; > 1: trainrt is faster).",
        ]
    lines += [
        "",
        "<details><summary>per-step ms (all steps, warm-up first), loss, load average</summary>",
        "",
    ]
    for r, engine, res, la0, la1, secs in runs:
        lines.append(f"- round {r} {engine}: " + ", ".join(f"{m:.1f}" for m in res["ms"]) +
                     f"; loss {res['loss'][0]:.4f} -> {res['loss'][-1]:.4f}; load "
                     f"{la0} -> {la1}; {secs:.1f} s wall")
    for e in others:
        res = next((res for _, en, res, *_ in runs if en == e and res.get("log")), None)
        if res:
            lines += ["", f"{e}'s first log line: `{res['log'].strip()}`"]
            if res.get("model_log"):
                lines.append(f"{e}'s model line: `{res['model_log'].strip()}`")
    lines += ["", "</details>", ""]
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
