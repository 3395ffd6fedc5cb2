#!/usr/bin/env bash
# model.dropout on the CPU (issue 19): tokens/s and memory of the same run without dropout
# and with model.dropout = 0.1 (embeddings, attention probabilities, residual branches), in
# fp32 and bf16, side by side. GPT-2 V256 L6 H6 C384 (cpu_vs_torch's `small` model), B8 T256,
# byte-level tinyshakespeare.
#   bash bench/dropout_cost.sh [TRAINRT] [ROUNDS] [THREADS]  (defaults: build/trainrt 3 nproc)
# tok/s: the median over ROUNDS `trainrt bench --steps 10 --warmup 3` runs, the variants
# alternated round by round; memory: the session's bytes_in_use after the timed steps.
set -euo pipefail
cd "$(dirname "$0")/.."
args="$*"
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
ROUNDS=${2:-3}
THREADS=${3:-$(nproc)}
source "$src/bench/lib.sh"
bench_workdir dropout-cost
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
variants=("fp32 0.0" "fp32 0.1" "bf16 0.0" "bf16 0.1")
declare -A toks
for r in $(seq 1 "$ROUNDS"); do
    for k in 0 1 2 3; do
        v=${variants[$(((k + r) % 4))]}
        set -- $v
        name="$1-$2"
        "$TRAINRT" bench run.toml --steps 10 --warmup 3 --set "runtime.precision=\"$1\"" \
            --set "model.dropout=$2" --json "$name.$r.json" >/dev/null 2>&1
        toks[$name]+="$(python3 -c "import json;print(json.load(open('$name.$r.json'))['tokens_per_s'])") "
    done
done
echo "Command: \`bash bench/dropout_cost.sh $args\`"
echo
bench_machine
echo "- GPT-2 V256 L6 H6 C384, B8 T256, $THREADS threads"
echo
echo "| precision | model.dropout | memory in use | tok/s (median of $ROUNDS) | vs no dropout |"
echo "|---|---|---|---|---|"
for v in "${variants[@]}"; do
    set -- $v
    name="$1-$2"
    mem=$(python3 -c "import json;print(round(json.load(open('$name.1.json'))['bytes_in_use']/2**20,1))")
    tps=$(python3 -c "import statistics;print(round(statistics.median([float(x) for x in '${toks[$name]}'.split()])))")
    base=$(python3 -c "import statistics;print(round(statistics.median([float(x) for x in '${toks[$1-0.0]}'.split()])))")
    rel=$(python3 -c "print('%.2f' % ($tps / $base))")
    echo "| $1 | $2 | $mem MiB | $tps | ${rel}x |"
done
