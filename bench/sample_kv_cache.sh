#!/usr/bin/env bash
# Generation with and without the KV cache, side by side (issue 22): `sample_speed` (built with
# -DTRAINRT_BUILD_BENCH=ON) runs the same session, prompt and seed both ways and checks the
# tokens are identical. Rows: the demo model (examples/configs/shakespeare.toml: GPT-2 L4 C128,
# window 128) trained briefly, then the same shape at windows of 512 and a larger model at
# 1,024 (random weights: the speed does not depend on them). With OLD_TRAINRT=<a trainrt CLI
# built before the cache> it also times `trainrt sample` of the old CLI against the current
# one on the demo checkpoint (each: 1 token and N tokens, the difference per token).
# SAMPLE_SETS="key=value ..." adds settings to every row, e.g. on a GPU machine
# SAMPLE_SETS="runtime.device=cuda runtime.precision=fp32" (fp32: the paths' tokens identical).
#   bash bench/sample_kv_cache.sh [BUILD_DIR] [TOKENS] [THREADS]   (defaults: build 1000 1)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
BUILD=$(realpath "${1:-build}")
N=${2:-1000}
THREADS=${3:-1}
TRAINRT=$BUILD/trainrt
SPEED=$BUILD/sample_speed
[ -x "$SPEED" ] || { echo "no $SPEED: configure with -DTRAINRT_BUILD_BENCH=ON" >&2; exit 2; }
source "$src/bench/lib.sh"
bench_workdir sample-kv-cache
sed -e "s|\.\./data/shakespeare/|$work/data/|" -e "s|\.\./\.\./out/shakespeare|$work/out|" \
    "$src/examples/configs/shakespeare.toml" >demo.toml
sets=()
for kv in ${SAMPLE_SETS:-}; do sets+=(--set "$kv"); done
"$TRAINRT" train demo.toml --steps 150 "${sets[@]}" >/dev/null 2>&1

echo "# Sampling with and without the KV cache"
echo
bench_machine
echo "- command: ${SAMPLE_SETS:+SAMPLE_SETS=\"$SAMPLE_SETS\" }bash bench/sample_kv_cache.sh $* (threads $THREADS, $N tokens, temperature 0.8)"
echo
row() {  # LABEL ARGS...
    local label=$1
    shift
    echo "## $label"
    echo
    "$SPEED" demo.toml "$@" --tokens "$N" --set runtime.threads="$THREADS" "${sets[@]}"
    echo
}
row "demo model (window 128), trained 150 steps" out
row "demo shape at window 512 (random weights)" --set model.context_length=512 \
    --set train.seq_len=512 --set train.batch_size=1
row "L6 C256 at window 1024 (random weights)" --set model.context_length=1024 \
    --set train.seq_len=1024 --set train.batch_size=1 --set model.d_model=256 --set model.n_layer=6

if [ -n "${OLD_TRAINRT:-}" ]; then
    # Wall time of the whole command (start-up included) for 1 token and for 10 x N tokens,
    # the median of 5 runs each at nanosecond resolution; the difference per token is the
    # generation cost. Both CLIs at the config's runtime.threads (0: every core).
    M=$((10 * N))
    echo "## trainrt sample: the CLI before the cache vs now (demo checkpoint, runtime.threads 0)"
    echo
    echo "| CLI | 1 token (s) | $M tokens (s) | ms per token |"
    echo "|---|---|---|---|"
    for cli in "$OLD_TRAINRT" "$TRAINRT"; do
        t() {  # TOKENS -> median seconds of 5 runs
            local i t0 t1
            for i in 1 2 3 4 5; do
                t0=$(date +%s%N)
                "$cli" sample out --tokens "$1" --prompt "ROMEO:" --temperature 0.8 --seed 7 \
                    >/dev/null 2>&1
                t1=$(date +%s%N)
                echo $(((t1 - t0) / 1000))
            done | sort -n | sed -n 3p | awk '{printf "%.4f", $1 / 1e6}'
        }
        t1=$(t 1)
        tn=$(t "$M")
        echo "| $cli | $t1 | $tn | $(awk -v a="$t1" -v b="$tn" -v n="$M" 'BEGIN{printf "%.4f", (b-a)*1000/(n-1)}') |"
    done
fi
