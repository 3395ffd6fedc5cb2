#!/usr/bin/env bash
# The end of both tokenizer oracle tests (oracle_test.sh, sentencepiece_oracle_test.sh):
# trains a tiny model for 2 steps on WORK/prepared/train.bin with the tokenizer recorded as
# data.tokenizer, samples from it without naming the tokenizer (the prompt must come back
# first, then decoded text), and exports it: the folder must carry the tokenizer file, as
# EXPORTED_NAME, byte-identical to SOURCE_FILE. Prints a line per check, prefixed by LABEL.
#   train_sample_export.sh CLI WORK VOCAB_SIZE TOKENIZER SOURCE_FILE EXPORTED_NAME LABEL
# TOKENIZER is relative to WORK (a file or a model folder). Exit 1 when a check fails.
set -uo pipefail
cli=$1 work=$2 vocab=$3 tokenizer=$4 source=$5 exported=$6 label=$7
status=0
cat > "$work/tiny.toml" <<TOML
[model]
vocab_size = $vocab
context_length = 16
n_layer = 1
n_head = 2
d_model = 16
[data]
train = "prepared/train.bin"
val = "prepared/train.bin"
tokenizer = "$tokenizer"
[train]
batch_size = 2
seq_len = 16
steps = 2
eval_every = 0
out_dir = "run"
[runtime]
threads = 1
TOML
(cd "$work" && rm -rf run && "$cli" train tiny.toml --fresh >/dev/null 2>"$work/train.log") ||
    { echo "$label: train on the prepared shards failed:"; cat "$work/train.log"; status=1; }
sample=$("$cli" sample "$work/run" --prompt "ROMEO: hello" --tokens 6 --temperature 0 2>&1) ||
    true
case "$sample" in
    "ROMEO: hello"?*) echo "$label: sample through the run's tokenizer: ok" ;;
    *) echo "$label: sample through the run's tokenizer failed: $sample"; status=1 ;;
esac
rm -rf "$work/exported"
if "$cli" export "$work/run" "$work/exported" >/dev/null 2>"$work/export.log" &&
    cmp -s "$work/exported/$exported" "$source"; then
    echo "$label: export writes the run's tokenizer as $exported: ok"
else
    echo "$label: export did not write the run's tokenizer as $exported:"
    cat "$work/export.log"; ls "$work/exported" 2>/dev/null; status=1
fi
exit $status
