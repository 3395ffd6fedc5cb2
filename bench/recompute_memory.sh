#!/usr/bin/env bash
# train.recompute on the CPU (issue 19): memory in use and tokens/s of the same run with
# recompute "none", "mlp" and "block", side by side, and the first steps' losses, which must
# be bit-identical across the three. GPT-2 V256 L6 H6 C384 (cpu_vs_torch's `small` model),
# B8 T256, fp32, byte-level tinyshakespeare.
#   bash bench/recompute_memory.sh [TRAINRT] [ROUNDS] [THREADS]  (defaults: build/trainrt 3 nproc)
# tok/s: the median over ROUNDS `trainrt bench --steps 10 --warmup 3` runs, the modes
# alternated round by round; memory: the session's bytes_in_use and the activations
# estimate `trainrt info` prints for the mode.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
ROUNDS=${2:-3}
THREADS=${3:-$(nproc)}
source "$src/bench/lib.sh"
bench_workdir recompute-memory
cat >run.toml <<TOML
[model]
vocab_size = 256
context_length = 256
n_layer = 6
n_head = 6
d_model = 384
[data]
train = "$work/data/train.bin"
[train]
batch_size = 8
seq_len = 256
steps = 100
eval_every = 0
[runtime]
device = "cpu"
threads = $THREADS
TOML
modes=(none mlp block)
declare -A toks
for r in $(seq 1 "$ROUNDS"); do
    for k in 0 1 2; do
        m=${modes[$(((k + r) % 3))]}
        "$TRAINRT" bench run.toml --steps 10 --warmup 3 --set "train.recompute=$m" \
            --json "$m.$r.json" >/dev/null 2>&1
        toks[$m]+="$(python3 -c "import json;print(json.load(open('$m.$r.json'))['tokens_per_s'])") "
    done
done
echo "Command: \`bash bench/recompute_memory.sh $*\`"
echo
bench_machine
echo "- GPT-2 V256 L6 H6 C384, B8 T256, fp32, $THREADS threads"
echo
echo "| train.recompute | memory in use | activations (estimate) | tok/s (median of $ROUNDS) | losses of timed steps |"
echo "|---|---|---|---|---|"
for m in "${modes[@]}"; do
    mem=$(python3 -c "import json;print(round(json.load(open('$m.1.json'))['bytes_in_use']/2**20,1))")
    act=$("$TRAINRT" info run.toml --set "train.recompute=$m" 2>/dev/null |
          sed -nE 's/.*activations ([0-9.]+ [KMG]i?B).*/\1/p' | head -1)
    tps=$(python3 -c "import statistics;print(round(statistics.median([float(x) for x in '${toks[$m]}'.split()])))")
    losses=$(python3 -c "import json,hashlib;l=json.load(open('$m.1.json'))['losses'];print(hashlib.sha256(repr(l).encode()).hexdigest()[:12], '(%d steps)'%len(l))")
    echo "| $m | $mem MiB | ${act:-?} | $tps | sha256 $losses |"
done
