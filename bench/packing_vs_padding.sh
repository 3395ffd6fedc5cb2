#!/usr/bin/env bash
# Instruction tuning on the CPU: packed rows (data.packing = true) against one example a row
# padded to the longest (false), side by side (issue 40). Useful tokens/s = the slots that hold
# an example's tokens per second (padding is computed and thrown away).
#   bash bench/packing_vs_padding.sh [TRAINRT] [ROUNDS] [THREADS]   (defaults: build/trainrt 3 nproc)
# Data: 2,000 synthetic conversations with Alpaca's shape (bench/alpaca_like.py: an
# instruction, sometimes an input, a response; lengths log-normal, the long tail cut at
# seq_len), a BPE of 4,096 trained on their text by `trainrt tokenizer train`, ChatML as the
# chat template; model: Llama-family L4 H4 KV2 C256 F688, B8 T512, fp32. Each row's tok/s is
# the median of ROUNDS `trainrt bench --steps 8 --warmup 2` runs, alternated round by round.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
ROUNDS=${2:-3}
THREADS=${3:-$(nproc)}
source "$src/bench/lib.sh"
bench_workdir packing

python3 "$src/bench/alpaca_like.py" --n 2000 --seed 1 --out chats.jsonl --text corpus.txt
mkdir -p tok
"$TRAINRT" tokenizer train --vocab-size 4096 --text corpus.txt --out tok/tokenizer.json >/dev/null
python3 - <<'PY'
import json
chatml = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
cfg = {"eos_token": "<|im_end|>", "chat_template": chatml}
json.dump(cfg, open("tok/tokenizer_config.json", "w"))
PY
"$TRAINRT" prepare --chat chats.jsonl --tokenizer tok --out chat --val-fraction 0 >prepare.log
vocab=$(sed -n 's/.*model.vocab_size >= \([0-9]*\).*/\1/p' prepare.log)

config() {  # NAME PACKING
    cat >"$1.toml" <<TOML
[model]
arch = "llama"
vocab_size = $vocab
context_length = 512
n_layer = 4
n_head = 4
n_kv_head = 2
d_model = 256
d_ff = 688
[data]
train = "$work/chat/train.bin"
packing = $2
[train]
batch_size = 8
seq_len = 512
steps = 100
eval_every = 0
[runtime]
device = "cpu"
precision = "fp32"
threads = $THREADS
log_every = 1
TOML
}
config packed true
config padded false
names=(packed padded)
declare -A toks fill
for n in "${names[@]}"; do
    # The share of slots that hold tokens: the session's log line at start.
    fill[$n]=$("$TRAINRT" train "$n.toml" --steps 1 --set 'train.out_dir=""' 2>&1 |
        sed -n 's/.*(\(packed\|padded\): \([0-9]*\)% of the slots.*/\2/p' | head -1)
done
for r in $(seq 1 "$ROUNDS"); do
    for k in 0 1; do
        n=${names[$(((k + r) % 2))]}
        "$TRAINRT" bench "$n.toml" --steps 8 --warmup 2 --json "$n.$r.json" >/dev/null 2>&1
        toks[$n]+="$(python3 -c "import json;print(json.load(open('$n.$r.json'))['tokens_per_s'])") "
    done
done

median() { python3 -c "import sys,statistics;print(statistics.median(map(float,sys.argv[1:])))" "$@"; }
echo "# Packing vs padding, CPU (bench/packing_vs_padding.sh)"
echo
bench_machine
echo "- data: $(head -1 prepare.log | cut -c1-120)"
echo "- $(sed -n 2p prepare.log)"
echo
echo "| rows | slots holding tokens | slot tok/s (median of $ROUNDS) | useful tok/s | vs padded |"
echo "|---|---|---|---|---|"
pad_useful=$(python3 -c "print($(median ${toks[padded]}) * ${fill[padded]} / 100)")
for n in "${names[@]}"; do
    t=$(median ${toks[$n]})
    u=$(python3 -c "print($t * ${fill[$n]} / 100)")
    printf '| %s | %s%% | %.0f | %.0f | %.2fx |\n' "$n" "${fill[$n]}" "$t" "$u" \
        "$(python3 -c "print($u / $pad_useful)")"
done
