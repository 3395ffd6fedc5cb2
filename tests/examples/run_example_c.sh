#!/usr/bin/env bash
# Runs examples/c/train.c end to end on a small byte-level model: train, eval, save, load
# into a second session (the next step must match bit for bit; the example checks), sample.
#   usage: run_example_c.sh EXAMPLE_BINARY TRAINRT_CLI SOURCE_DIR SCRATCH_DIR
set -euo pipefail
EXAMPLE=$1 TRAINRT=$2 SRC=$3 WORK=$4
rm -rf "$WORK"
mkdir -p "$WORK"
"$TRAINRT" prepare --text "$SRC/examples/data/tinyshakespeare.txt" --out "$WORK/data" >/dev/null
cat > "$WORK/tiny.toml" <<'TOML'
[model]
vocab_size = 256
context_length = 64
n_layer = 2
n_head = 2
d_model = 64
[data]
train = "data/train.bin"
val = "data/val.bin"
sampler = "sequential"
[train]
batch_size = 4
seq_len = 64
grad_accum = 2
steps = 50
eval_batches = 2
[optim]
lr = 1e-3
warmup_steps = 2
[runtime]
threads = 2
TOML
"$EXAMPLE" "$WORK/tiny.toml" 8 "$WORK/ckpt" > "$WORK/out.txt" 2> "$WORK/err.txt" || {
    cat "$WORK/out.txt" "$WORK/err.txt"
    exit 1
}
cat "$WORK/out.txt"
grep -q "resumed loss" "$WORK/out.txt" || { echo "FAIL: no resumed step"; exit 1; }
grep -q "^sample: ROMEO:" "$WORK/out.txt" || { echo "FAIL: no sample"; exit 1; }
grep -q "\[run info\] acceleration:" "$WORK/err.txt" || { echo "FAIL: log callback not called"; exit 1; }
test -f "$WORK/ckpt/MANIFEST.sha256" || { echo "FAIL: no checkpoint written"; exit 1; }
echo "example_c: ok"
