#!/usr/bin/env bash
# optim.state_dtype = "int8" against fp32 moments (issue 19's stretch): the same run — GPT-2
# V256 L4 H4 C256 on byte-level tinyshakespeare, B8 T128, lr 1e-3 (cosine, warmup 20),
# STEPS steps, fp32 compute — with each state dtype, side by side: train loss along the way
# (mean of 10-step windows), the final validation loss (20 batches), the optimizer's memory
# (`trainrt plan`) and tokens/s.
#   bash bench/adamw_int8.sh [TRAINRT] [STEPS] [THREADS]  (defaults: build/trainrt 400 nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
args="$*"
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
STEPS=${2:-400}
THREADS=${3:-$(nproc)}
source "$src/bench/lib.sh"
bench_workdir adamw-int8
for state in fp32 int8; do
    cat >"$state.toml" <<TOML
[model]
vocab_size = 256
context_length = 128
n_layer = 4
n_head = 4
d_model = 256
[data]
train = "$work/data/train.bin"
val = "$work/data/val.bin"
[train]
batch_size = 8
seq_len = 128
steps = $STEPS
eval_every = $STEPS
eval_batches = 20
out_dir = "$work/out_$state"
[optim]
lr = 1e-3
warmup_steps = 20
min_lr = 1e-4
state_dtype = "$state"
[runtime]
device = "cpu"
threads = $THREADS
log_every = 1
TOML
    "$TRAINRT" train "$state.toml" --fresh >"$state.log" 2>&1
done
echo "Command: \`bash bench/adamw_int8.sh $args\`"
echo
bench_machine
echo "- GPT-2 V256 L4 H4 C256, B8 T128, $STEPS steps, fp32 compute, $THREADS threads"
echo
python3 - "$work" "$STEPS" <<'PY'
import json, statistics, sys
work, steps = sys.argv[1], int(sys.argv[2])
runs = {}
for state in ("fp32", "int8"):
    train, val, tps = {}, None, []
    for line in open(f"{work}/out_{state}/metrics.jsonl"):
        r = json.loads(line)
        if r.get("split") == "train":
            train[r["step"]] = r["loss"]
            tps.append(r["tok_per_s"])
        elif r.get("split") == "val":
            val = r["loss"]
    runs[state] = (train, val, statistics.median(tps) if tps else float("nan"))
marks = [m for m in (10, 50, 100, 200, 300, 400, 800, 1600) if m <= steps]
if steps not in marks:
    marks.append(steps)
def window(train, m):
    xs = [train[s] for s in range(max(1, m - 9), m + 1) if s in train]
    return sum(xs) / len(xs)
print("| state | " + " | ".join(f"train loss @{m}" for m in marks) + " | val loss | tok/s |")
print("|---|" + "---|" * (len(marks) + 2))
for state, (train, val, tps) in runs.items():
    print(f"| {state} | " + " | ".join(f"{window(train, m):.4f}" for m in marks) +
          f" | {val:.4f} | {tps:.0f} |")
(t32, v32, _), (t8, v8, _) = runs["fp32"], runs["int8"]
diffs = [abs(t8[s] - t32[s]) / t32[s] for s in t32 if s in t8]
print()
print(f"Per-step train loss, int8 vs fp32: mean |relative difference| {sum(diffs)/len(diffs):.2e}, "
      f"largest {max(diffs):.2e}; final val loss {v8:.4f} vs {v32:.4f} "
      f"({(v8 - v32) / v32:+.2%}).")
PY
echo
for state in fp32 int8; do
    "$TRAINRT" plan "$state.toml" 2>/dev/null | grep -E "gradients \+ AdamW" |
        sed "s/^ */- $state: /"
done
