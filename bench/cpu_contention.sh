#!/usr/bin/env bash
# Threads beside other work (issue 38 item 2): tokens/s of the same CPU run with 1 and 2
# threads (runtime.threads), on a quiet machine and with a competing busy process pinned to
# one core (`taskset -c 1` spinning shell: the host's own work beside an embedded trainer).
# GPT-2 V256 L6 H6 C384, B8 T256 (cpu_vs_torch's `small` model), byte-level tinyshakespeare,
# fp32, the default accel.cpu_matmul.
#   bash bench/cpu_contention.sh [TRAINRT] [ROUNDS] [BUSY] [BASELINE]
#   (defaults: build/trainrt 5 1, no baseline)
# BUSY: how many spinning processes share core 1 (1: "one of two cores busy"; 2 or 3: a heavier
# load). BASELINE: another build's trainrt, measured in the same rounds (side by side: a
# change's before and after). tok/s: the median over ROUNDS `trainrt bench --steps 8
# --warmup 2` runs, the variants alternated round by round. Run it alone on the machine (no
# builds, no tests).
set -euo pipefail
cd "$(dirname "$0")/.."
args="$*"
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
ROUNDS=${2:-5}
BUSY=${3:-1}
BASELINE=${4:+$(realpath "$4")}
command -v taskset >/dev/null || { echo "cpu_contention.sh: needs taskset (util-linux)" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "cpu_contention.sh: needs 2 cores or more" >&2; exit 2; }
source "$src/bench/lib.sh"
bench_workdir cpu-contention
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
TOML
busy_pids=()
start_busy() {
    for _ in $(seq 1 "$BUSY"); do
        taskset -c 1 sh -c 'while :; do :; done' &
        busy_pids+=($!)
    done
}
stop_busy() {
    [ ${#busy_pids[@]} -eq 0 ] || kill "${busy_pids[@]}" 2>/dev/null || true
    wait "${busy_pids[@]}" 2>/dev/null || true
    busy_pids=()
}
trap 'stop_busy; rm -rf "$work"' EXIT
builds=(new)
[ -n "$BASELINE" ] && builds+=(base)
variants=()
for b in "${builds[@]}"; do
    variants+=("$b quiet 1" "$b quiet 2" "$b busy 1" "$b busy 2")
done
nv=${#variants[@]}
declare -A toks
for r in $(seq 1 "$ROUNDS"); do
    for k in $(seq 0 $((nv - 1))); do
        v=${variants[$(((k + r) % nv))]}
        set -- $v
        name="$1-$2-$3"
        bin=$TRAINRT
        [ "$1" = base ] && bin=$BASELINE
        [ "$2" = busy ] && start_busy
        "$bin" bench run.toml --steps 8 --warmup 2 --set "runtime.threads=$3" \
            --json "$name.$r.json" >/dev/null 2>&1
        stop_busy
        toks[$name]+="$(python3 -c "import json;print(round(json.load(open('$name.$r.json'))['tokens_per_s']))") "
    done
done
median() { python3 -c "import statistics,sys;print(round(statistics.median([float(x) for x in sys.argv[1].split()])))" "$1"; }
echo "Command: \`bash bench/cpu_contention.sh $args\`"
echo
bench_machine
echo "- GPT-2 V256 L6 H6 C384, B8 T256, fp32; busy: $BUSY spinning process(es) pinned to core 1"
echo
label() { [ "$1" = base ] && echo "baseline ($BASELINE)" || echo "this build"; }
echo "| build | machine | threads | tok/s (median of $ROUNDS) | all rounds | 2 threads / 1 thread |"
echo "|---|---|---|---|---|---|"
for b in "${builds[@]}"; do
    for load in quiet busy; do
        one=$(median "${toks[$b-$load-1]}")
        for t in 1 2; do
            tps=$(median "${toks[$b-$load-$t]}")
            rel=$([ "$t" = 2 ] && python3 -c "print('%.2f' % ($tps / $one))" || echo "")
            echo "| $(label "$b") | $load | $t | $tps | ${toks[$b-$load-$t]}| $rel |"
        done
    done
done
