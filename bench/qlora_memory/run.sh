#!/usr/bin/env bash
# QLoRA memory (issue 44): what a Llama-3.2-1B-shaped QLoRA run at T 2048 holds on the CPU,
# measured (peak resident memory of `trainrt train` over one step, /usr/bin/time -v; the
# session's bytes_in_use), beside the estimate of each lora.base_dtype, and the plan of a
# Llama-3.1-8B-shaped QLoRA run on a GPU (trainrt info, CUDA sizing; measured at a loan).
#   bash bench/qlora_memory/run.sh [TRAINRT] [THREADS]   (defaults: build/trainrt, nproc)
# The 1B model is random bf16 weights in the published shapes (make_model.py: 2.3 GiB on
# disk, written once to /tmp/qlora_memory_llama32_1b); one step takes ~2 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
THREADS=${2:-$(nproc)}
source "$src/bench/lib.sh"
source "$src/bench/qlora_memory/qlora_run.sh"
qlora_run 2048 1 'out_dir = "out"'
estimate() { "$TRAINRT" info "$@" 2>/dev/null | sed -n 's/^memory estimate: //p'; }
/usr/bin/time -v "$TRAINRT" train run.toml >train.log 2>time.log
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' time.log)
in_use=$(cat train.log time.log | sed -n 's/.*memory: \([0-9]*\) bytes in use.*/\1/p' | head -1)
loss=$(cat train.log time.log | sed -n 's/^step 1 | loss \([0-9.]*\).*/\1/p' | head -1)
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' time.log)
echo "Command: \`bash bench/qlora_memory/run.sh $*\`"
echo
bench_machine
echo "- Llama-3.2-1B shape (1.24 B parameters, tied, V 128256), random bf16 weights; LoRA r16"
echo "  all-linear; B1 T2048, train.recompute = \"block\", runtime.precision = \"bf16\", $THREADS threads"
echo
echo "| lora.base_dtype | estimate (trainrt info) | measured |"
echo "|---|---|---|"
for dt in fp32 bf16 int8 nf4; do
    m="-"
    [ "$dt" = nf4 ] && m="peak RSS $(python3 -c "print(f'{$rss_kb*1024/1e9:.2f} GB ({$rss_kb/2**20:.2f} GiB)')"); session bytes_in_use $(python3 -c "print(f'{${in_use:-0}/1e9:.2f} GB')"); one step: loss $loss, wall $wall (load + step)"
    echo "| $dt | $(estimate run.toml --set lora.base_dtype=$dt) | $m |"
done
echo "| nf4, lora.double_quant = false | $(estimate run.toml --set lora.double_quant=false) | - |"
echo
echo "Llama-3.1-8B shape (examples/configs/llama-3.1-8b.toml) on a GPU, planned (CUDA sizing: bf16,"
echo "lowp activations, cuDNN attention), QLoRA nf4 r16 all-linear, B1, recompute block:"
echo
echo "| settings | estimate |"
echo "|---|---|"
cfg="$src/examples/configs/llama-3.1-8b.toml"
q=(--set runtime.device=cuda --set runtime.precision=bf16 --set lora.rank=16
   --set 'lora.target_modules=["all-linear"]' --set lora.base_dtype=nf4 --set train.recompute=block)
echo "| LoRA on an fp32 base (lora.base_dtype = fp32), T 2048 | $(estimate "$cfg" "${q[@]}" --set lora.base_dtype=fp32) |"
echo "| nf4, T 2048 | $(estimate "$cfg" "${q[@]}") |"
echo "| nf4, T 2048, accel.head_chunk_rows = 512, optim.state_dtype = int8 | $(estimate "$cfg" "${q[@]}" --set accel.head_chunk_rows=512 --set optim.state_dtype=int8) |"
echo "| nf4, T 1024 | $(estimate "$cfg" "${q[@]}" --set train.seq_len=1024) |"
