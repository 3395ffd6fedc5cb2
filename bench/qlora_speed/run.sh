#!/usr/bin/env bash
# QLoRA's bf16 step on the CPU, the quantised matmuls two ways side by side in one run:
# accel.cpu_matmul = "openblas" (each tile dequantised to fp32, rounded to bf16, widened sgemm)
# and "onednn" (the weight dequantised into bf16 panels for oneDNN's bf16 kernels: AVX-512 BF16
# or AMX where the CPU has them). Llama-3.2-1B shape with random weights (the folder
# bench/qlora_memory/make_model.py writes), nf4 + double quantisation, LoRA r16 on every
# linear, B1, recompute block; the step times of steps 2..STEPS from the log.
#   bash bench/qlora_speed/run.sh [TRAINRT] [THREADS] [SEQ_LEN] [STEPS]
#   (defaults: build/trainrt, nproc, 512, 3)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
TRAINRT=$(readlink -f "${1:-$src/build/trainrt}")
THREADS=${2:-$(nproc)}
SEQ=${3:-512}
STEPS=${4:-3}
source "$src/bench/qlora_memory/qlora_run.sh"
qlora_run "$SEQ" "$STEPS"
source "$src/bench/lib.sh"
echo "# QLoRA bf16 step on the CPU: the quantised matmuls on widened sgemm vs oneDNN bf16 panels"
echo
echo "Command: \`bash bench/qlora_speed/run.sh $*\`"
bench_machine
echo "- Llama-3.2-1B shape, nf4 + double quantisation, r16 all-linear, B1 T$SEQ, recompute block, $THREADS threads"
echo
echo "| accel.cpu_matmul | acceleration | step ms (steps 2..$STEPS) | loss at step $STEPS |"
echo "|---|---|---|---|"
for mm in openblas onednn; do
    "$TRAINRT" train run.toml --set runtime.log_every=1 --set accel.cpu_matmul="\"$mm\"" >"$mm.log" 2>&1 || { cat "$mm.log" >&2; exit 1; }
    acc=$(grep -m1 -o 'cpu_matmul=[^ ]*\( \[[^]]*\]\)\?' "$mm.log" || echo "?")
    ms=$(sed -n 's/^step \([0-9]*\)\/[0-9]* |.*| \([0-9.]*\) ms |.*/\1 \2/p' "$mm.log" |
         awk '$1 > 1 {printf "%s%s", sep, $2; sep=", "}')
    loss=$(sed -n "s/^step $STEPS\/$STEPS | loss \([0-9.]*\).*/\1/p" "$mm.log")
    echo "| $mm | $acc | $ms | $loss |"
done
