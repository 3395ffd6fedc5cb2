#!/usr/bin/env bash
# The CPU bf16 output head, whole rows vs blocks of columns (cpu_lowp.cpp, column_block):
# two builds of bench/cpu_op_profile run alternately on a GPT-2-vocabulary model in bf16, each
# round in a fresh process; prints the step, the head's forward and backward times and the
# peak resident memory per run, as a markdown table.
#
#   bash bench/cpu_bf16_head_blocks.sh OLD_CPU_OP_PROFILE NEW_CPU_OP_PROFILE [ROUNDS]
#
# Build each with -DTRAINRT_BUILD_BENCH=ON -DTRAINRT_CUDA=OFF (target cpu_op_profile), the old
# one from a worktree of the commit before the change. Not a test: it asserts nothing.
set -euo pipefail
old=$1 new=$2 rounds=${3:-3}
args=(--threads "$(nproc)" --steps 3 --warmup 1 --B 4 --T 256 --L 2 --NH 6 --C 384 --V 50257
      --bf16 1)
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) threads; cpu_op_profile ${args[*]}"
echo
echo "| round | build | step ms (median) | head fwd ms | head bwd ms | peak RSS MB |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
    order=(old new)
    [ $((r % 2)) -eq 0 ] && order=(new old)
    for which in "${order[@]}"; do
        bin=$old
        [ "$which" = new ] && bin=$new
        out=$(/usr/bin/time -v "$bin" "${args[@]}" 2>&1)
        step=$(sed -n 's/^step: median \([0-9.]*\) ms.*/\1/p' <<< "$out")
        fwd=$(awk -F'|' '/matmul fwd \(head/ {gsub(/ /, "", $4); print $4}' <<< "$out")
        bwd=$(awk -F'|' '/matmul bwd \(head/ {gsub(/ /, "", $4); print $4}' <<< "$out")
        rss=$(awk '/Maximum resident set size/ {printf "%.0f", $6 / 1024}' <<< "$out")
        echo "| $r | $which | $step | $fwd | $bwd | $rss |"
    done
done
