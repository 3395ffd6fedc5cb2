#!/usr/bin/env bash
# dist.wire_dtype = "bf16" against "fp32" (issue 20: bf16 gradients on the wire, kept only if
# measured safe): the same 2-rank run — GPT-2 V256 L4 H4 C256 on byte-level tinyshakespeare,
# 2 ranks x B4 x T128, lr 1e-3 (cosine, warmup 20), STEPS steps, fp32 compute, 1 thread per
# rank, mpirun — with the gradients summed in fp32 and in bf16 (every partial sum rounded to
# bf16, as NCCL's bf16 all-reduce does), side by side: train loss along the way (10-step
# windows), the final validation loss (20 batches) and tokens/s.
#   bash bench/dist_bf16_wire.sh [TRAINRT] [STEPS]  (defaults: build/trainrt 300)
set -euo pipefail
cd "$(dirname "$0")/.."
args="$*"
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
STEPS=${2:-300}
source "$src/bench/lib.sh"
bench_workdir dist-bf16-wire
root=()
[ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
for wire in fp32 bf16; do
    cat >"$wire.toml" <<TOML
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
batch_size = 4
seq_len = 128
steps = $STEPS
eval_every = $STEPS
eval_batches = 20
out_dir = "$work/out_$wire"
[optim]
lr = 1e-3
warmup_steps = 20
min_lr = 1e-4
[runtime]
device = "cpu"
threads = 1
log_every = 1
[dist]
backend = "mpi"
wire_dtype = "$wire"
TOML
    mpirun "${root[@]}" --oversubscribe -np 2 "$TRAINRT" train "$wire.toml" --fresh >"$wire.log" 2>&1 ||
        { cat "$wire.log"; exit 1; }
done
echo "Command: \`bash bench/dist_bf16_wire.sh $args\`"
echo
bench_machine
echo "- GPT-2 V256 L4 H4 C256, 2 MPI ranks x B4 x T128, $STEPS steps, fp32 compute, 1 thread per rank"
echo
python3 - "$work" "$STEPS" <<'PY'
import json, statistics, sys
work, steps = sys.argv[1], int(sys.argv[2])
runs = {}
for wire in ("fp32", "bf16"):
    train, val, tps = {}, None, []
    for line in open(f"{work}/out_{wire}/metrics.jsonl"):
        r = json.loads(line)
        if r.get("split") == "train":
            train[r["step"]] = r["loss"]
            tps.append(r["tok_per_s"])
        elif r.get("split") == "val":
            val = r["loss"]
    runs[wire] = (train, val, statistics.median(tps) if tps else float("nan"))
marks = [m for m in (10, 50, 100, 200, 300, 400, 800) if m <= steps]
if steps not in marks:
    marks.append(steps)
def window(train, m):
    xs = [train[s] for s in range(max(1, m - 9), m + 1) if s in train]
    return sum(xs) / len(xs)
print("| wire | " + " | ".join(f"train loss @{m}" for m in marks) + " | val loss | tok/s |")
print("|---|" + "---|" * (len(marks) + 2))
for wire, (train, val, tps) in runs.items():
    print(f"| {wire} | " + " | ".join(f"{window(train, m):.4f}" for m in marks) +
          f" | {val:.4f} | {tps:.0f} |")
(t32, v32, _), (t16, v16, _) = runs["fp32"], runs["bf16"]
diffs = [abs(t16[s] - t32[s]) / t32[s] for s in t32 if s in t16]
print()
print(f"Per-step train loss, bf16 vs fp32 wire: mean |relative difference| "
      f"{sum(diffs)/len(diffs):.2e}, largest {max(diffs):.2e}; final val loss {v16:.4f} vs "
      f"{v32:.4f} ({(v16 - v32) / v32:+.2%}).")
PY
