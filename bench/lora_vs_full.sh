#!/usr/bin/env bash
# Fine-tuning a Hugging Face folder on the CPU: full fine-tuning against LoRA and frozen
# layers (issue 19), side by side — trainable parameters, memory in use, tokens/s, and the
# size of one checkpoint. The base is GPT-2 V256 L6 H6 C384 (cpu_vs_torch's `small` model)
# randomly initialised and exported as a folder; data: byte-level tinyshakespeare; B8 T256.
#   bash bench/lora_vs_full.sh [TRAINRT] [ROUNDS] [THREADS]   (defaults: build/trainrt 3 nproc)
# Each row's tok/s is the median over ROUNDS `trainrt bench --steps 10 --warmup 3` runs, the
# rows alternated round by round so machine drift hits all of them; memory is the session's
# bytes_in_use (parameters, gradients, AdamW state, activations); the checkpoint is written
# by `trainrt train --steps 2` and measured with du.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
ROUNDS=${2:-3}
THREADS=${3:-$(nproc)}
source "$src/bench/lib.sh"
bench_workdir lora-vs-full

# config NAME MODEL_LINES TRAIN_LINES EXTRA_SECTIONS
config() {
    cat >"$1.toml" <<TOML
[model]
$2
[data]
train = "$work/data/train.bin"
[train]
batch_size = 8
seq_len = 256
steps = 100
eval_every = 0
$3
[optim]
lr = 1e-4
[runtime]
device = "cpu"
threads = $THREADS
log_every = 1
$4
TOML
}
config base $'vocab_size = 256\ncontext_length = 256\nn_layer = 6\nn_head = 6\nd_model = 384' "" ""
"$TRAINRT" train base.toml --steps 1 --set 'train.out_dir="base_out"' >/dev/null 2>&1
"$TRAINRT" export base_out base >/dev/null
init="init_from = \"$work/base\""
config full "$init" "" ""
config lora_c_attn_r8 "$init" "" $'[lora]\nrank = 8\nalpha = 16.0\ntarget_modules = ["c_attn"]'
config lora_all_linear_r8 "$init" "" $'[lora]\nrank = 8\nalpha = 16.0\ntarget_modules = ["all-linear"]'
config frozen_but_top_block "$init" 'trainable = ["h.5.*", "ln_f.*"]' ""
names=(full lora_c_attn_r8 lora_all_linear_r8 frozen_but_top_block)

declare -A toks
for r in $(seq 1 "$ROUNDS"); do
    for k in $(seq 0 $((${#names[@]} - 1))); do
        n=${names[$(((k + r) % ${#names[@]}))]}
        "$TRAINRT" bench "$n.toml" --steps 10 --warmup 3 --json "$n.$r.json" >/dev/null 2>&1
        toks[$n]+="$(python3 -c "import json;print(json.load(open('$n.$r.json'))['tokens_per_s'])") "
    done
done

echo "Command: \`bash bench/lora_vs_full.sh $*\`"
echo
bench_machine
echo "- base: GPT-2 V256 L6 H6 C384 from a Hugging Face folder, B8 T256, fp32, $THREADS threads"
echo
echo "| run | trainable parameters | memory in use | tok/s (median of $ROUNDS) | checkpoint | of which model.safetensors |"
echo "|---|---|---|---|---|---|"
for n in "${names[@]}"; do
    "$TRAINRT" train "$n.toml" --steps 2 --set "train.out_dir=\"$n.out\"" >"$n.log" 2>&1
    trainable=$(sed -nE 's/.*trainable: ([0-9]+) of [0-9]+ parameters \(([0-9.]+%).*/\1 (\2)/p' "$n.log")
    [ -n "$trainable" ] ||
        trainable="$(sed -nE 's/.*, ([0-9]+) parameters, init.*/\1/p' "$n.log") (100%)"
    mem=$(python3 -c "import json;print(round(json.load(open('$n.1.json'))['bytes_in_use']/2**20,1))")
    tps=$(python3 -c "import statistics;print(round(statistics.median([float(x) for x in '${toks[$n]}'.split()])))")
    ck="$n.out/$(cat "$n.out/latest")"
    echo "| $n | $trainable | $mem MiB | $tps | $(du -sk "$ck" | cut -f1) KiB | $(du -k "$ck/model.safetensors" | cut -f1) KiB |"
done
