#!/usr/bin/env python3
"""bench/gpu_ladder.py retries out-of-memory per rung: every rung starts from the configured
batch, halves it (doubling grad_accum) until it fits, and a later rung that needs less memory
is measured at the batch it fits, not at an earlier rung's fallback.

Runs the ladder against a stand-in `trainrt` (written here) whose memory is simulated:
batch 64 never fits, batch 32 fits only with cuDNN attention, batch 16 always fits. No GPU,
no build needed.   usage: ladder_oom_per_rung.py SOURCE_DIR SCRATCH_DIR
"""
import json
import os
import shutil
import stat
import subprocess
import sys

FAKE = r'''#!PYTHON
# Stand-in for `trainrt prepare` and `trainrt bench` (tests/cli/ladder_oom_per_rung.py).
import json, os, sys
args = sys.argv[1:]
if args[0] == "prepare":
    out = args[args.index("--out") + 1]
    os.makedirs(out, exist_ok=True)
    for f in ("train.bin", "val.bin"):
        open(os.path.join(out, f), "wb").close()
    sys.exit(0)
assert args[0] == "bench", args
sets = dict(a.split("=", 1) for a, k in zip(args[1:], args) if k == "--set")
batch = int(sets["train.batch_size"])
cudnn = sets.get("accel.attention") == "cudnn"
limit = 32 if cudnn else 16  # the largest batch that fits
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write("%s %d %s\n" % (sets.get("accel.attention"), batch, sets["train.grad_accum"]))
if batch > limit:
    print("error: out of memory", file=sys.stderr)
    sys.exit(3)
steps = int(args[args.index("--steps") + 1])
rep = dict(losses=[5.0 - 0.01 * i for i in range(steps)], first_step=1, tokens_per_s=1e5 * batch,
           steps_per_s=10.0, mfu=0.1, peak_flops=1e15, model_flops_per_token=1e6,
           step_ms_p50=10.0, step_ms_p95=11.0, last_loss=4.9,
           precision=sets.get("runtime.precision", "fp32"), log=["acceleration: fake"])
with open(args[args.index("--json") + 1], "w") as f:
    json.dump(rep, f)
'''


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    src, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    fake = os.path.join(work, "trainrt")
    with open(fake, "w") as f:
        f.write(FAKE.replace("PYTHON", sys.executable, 1))
    os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
    env = dict(os.environ, FAKE_LOG=os.path.join(work, "calls.log"))
    out = os.path.join(work, "ladder")
    cmd = [sys.executable, os.path.join(src, "bench", "gpu_ladder.py"), "--trainrt", fake,
           "--out", out, "--models", "tiny", "--torch-modes", "none", "--budget", "300",
           "--no-profile", "--experiments", "none"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        fail("gpu_ladder.py exit %d: %s" % (r.returncode, r.stderr[-2000:]))
    rungs = {x["rung"]: x for x in json.load(open(os.path.join(out, "ladder.json")))["models"]["tiny"]["rungs"]}
    want = {"fp32-host": (16, 4), "resident": (16, 4), "tf32": (16, 4), "bf16": (16, 4),
            "fused-adamw": (16, 4), "fused-kernels": (16, 4), "cudnn-attention": (32, 2),
            "cuda-graphs": (32, 2), "bf16-activations": (32, 2)}
    for name, (b, ga) in want.items():
        r = rungs.get(name)
        if r is None or r["status"] != "ok":
            fail("rung %s did not complete: %s" % (name, r))
        if (r["batch_size"], r["grad_accum"]) != (b, ga):
            fail("rung %s ran at %d x %d, expected %d x %d" % (name, r["batch_size"], r["grad_accum"], b, ga))
        retries = r.get("oom_retries", [])
        if retries != ([64, 32] if b == 16 else [64]):
            fail("rung %s: OOM retries %s" % (name, retries))
    calls = open(os.path.join(work, "calls.log")).read().split("\n")
    starts = [c for c in calls if c.split(" ")[1:2] == ["64"]]
    if len(starts) != len(want):
        fail("expected every rung to start at batch 64; calls: %s" % calls)
    print("ok: every rung starts from batch 64 and halves on OOM; cuDNN attention measured at 32 x 2")


if __name__ == "__main__":
    main()
