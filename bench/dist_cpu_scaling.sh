#!/usr/bin/env bash
# Data parallelism on the CPU (docs/DISTRIBUTED.md): the same global batch — GPT-2 V256 L4 H4
# C256, 16 rows x T128 per step, fp32 — trained by one process with 1 and with all threads,
# and by mpirun -np RANKS ranks of 1 thread each (16/RANKS rows each, gradients summed over
# MPI), side by side: tokens/s, step time, the all-reduced bytes per step, and the losses
# (the ranks' run must match one process's within float rounding).
#   bash bench/dist_cpu_scaling.sh [TRAINRT] [STEPS] [RANKS]  (defaults: build/trainrt 30 nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
args="$*"
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
STEPS=${2:-30}
RANKS=${3:-$(nproc)}
GLOBAL_B=16
source "$src/bench/lib.sh"
bench_workdir dist-cpu-scaling
cat >run.toml <<TOML
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
seq_len = 128
[runtime]
device = "cpu"
TOML
root=()
[ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
bench() {  # NAME THREADS B [launcher...]
    local name=$1 threads=$2 b=$3
    shift 3
    "$@" "$TRAINRT" bench run.toml --steps "$STEPS" --warmup 3 --set runtime.threads="$threads" \
        --set train.batch_size="$b" --json "$name.json" >"$name.log" 2>&1 ||
        { cat "$name.log"; exit 1; }
}
bench one_1t 1 $GLOBAL_B
bench one_all "$(nproc)" $GLOBAL_B
bench ranks 1 $((GLOBAL_B / RANKS)) mpirun "${root[@]}" --oversubscribe -np "$RANKS"
echo "Command: \`bash bench/dist_cpu_scaling.sh $args\`"
echo
bench_machine
echo "- GPT-2 V256 L4 H4 C256 ($(python3 -c 'import json;print(json.load(open("one_1t.json"))["parameters"])') parameters), $GLOBAL_B x 128 tokens per step, fp32, $STEPS timed steps after 3 warm-up"
echo "- $(mpirun --version | head -1)"
echo
python3 - "$RANKS" <<'PY'
import json, sys
ranks = int(sys.argv[1])
runs = [("1 process, 1 thread", "one_1t"), ("1 process, all threads", "one_all"),
        (f"{ranks} MPI ranks x 1 thread", "ranks")]
base = json.load(open("one_1t.json"))
print("| run | world | rows/rank | tokens/s | step ms p50 | vs 1 thread | final loss | max rel. loss diff vs 1 process |")
print("|---|---|---|---|---|---|---|---|")
for name, f in runs:
    r = json.load(open(f + ".json"))
    diff = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], base["losses"]))
    print(f"| {name} | {r.get('world_size', 1)} | {r['batch_size']} | {r['tokens_per_s']:.0f} | "
          f"{r['step_ms_p50']:.1f} | {r['tokens_per_s'] / base['tokens_per_s']:.2f}x | "
          f"{r['last_loss']:.4f} | {diff:.1e} |")
print()
print(f"All-reduced per step: {base['parameters'] * 4 / 1e6:.1f} MB of fp32 gradients (+ the loss).")
PY
