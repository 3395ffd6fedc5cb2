#!/usr/bin/env bash
# A run whose shards, data.tokenizer and model folder name different tokenizers is refused,
# naming them (docs/CONFIG.md, data.tokenizer_check): byte-level shards with a BPE
# data.tokenizer; the override trains with a warning; matching ones train; a Hugging Face
# folder exported with the BPE (its tokenizer a copy: the same digest) agrees with the BPE's
# shards and is refused with the byte-level ones.
#   usage: tokenizer_check.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# expect_failure NAME COMMAND...: non-zero exit; stderr in NAME.err.
expect_failure() {
    local name=$1
    shift
    local rc=0
    "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ "$rc" -ne 0 ] || fail "$name: exit status 0 (expected an error): $*"
    echo "ok: $name (exit $rc)"
}

# expect_in FILE TEXT...: each TEXT is in FILE.
expect_in() {
    local file=$1
    shift
    for text in "$@"; do
        grep -qF -- "$text" "$file" || { cat "$file" >&2; fail "'$text' not in $file"; }
    done
}

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
head -c 60000 "$SRC/examples/data/tinyshakespeare.txt" >text.txt

"$TRAINRT" tokenizer train --vocab-size 300 --text text.txt --out bpe.json >/dev/null
"$TRAINRT" prepare --text text.txt --out bytes --val-fraction 0.1 >/dev/null
"$TRAINRT" prepare --text text.txt --out bpe --tokenizer bpe.json --val-fraction 0.1 >/dev/null
expect_in bytes/prepare.json '"tokenizer": {"kind": "bytes"' '"vocab_size": 256'
expect_in bpe/prepare.json '"tokenizer": {"kind": "hf-bpe"' '"vocab_size": 300' \
    '"source": "bpe.json"'

cat >run.toml <<'TOML'
[model]
vocab_size = 320
context_length = 32
n_layer = 1
n_head = 2
d_model = 32
[data]
train = "bytes/train.bin"
val = "bytes/val.bin"
tokenizer = "bpe.json"
[train]
batch_size = 2
seq_len = 32
steps = 2
eval_every = 0
[runtime]
device = "cpu"
TOML

# Byte-level shards, a BPE data.tokenizer: refused, naming both and the way out.
expect_failure bytes_vs_bpe "$TRAINRT" train run.toml --fresh
expect_in bytes_vs_bpe.err "the data and the tokenizers disagree" "$WORK/bytes" \
    "bytes (vocab 256, sha256:" "data.tokenizer is hf-bpe '$WORK/bpe.json' (vocab 300, sha256:" \
    "model.init_from is not set" "trainrt prepare --tokenizer" "data.tokenizer_check = false"

# The override: a warning naming the disagreement, and the run trains.
"$TRAINRT" train run.toml --fresh --set data.tokenizer_check=false >override.out 2>override.err ||
    { cat override.err >&2; fail "override: non-zero exit"; }
expect_in override.err "data.tokenizer_check = false: going on although the data and the tokenizers disagree"
expect_in override.out "step 2 |"
echo "ok: override trains with a warning"

# The shards of the BPE: they agree, and the run keeps a checkpoint to export.
"$TRAINRT" train run.toml --fresh --set 'data.train="bpe/train.bin"' --set 'data.val="bpe/val.bin"' \
    --set 'train.out_dir="out"' >match.out 2>match.err || { cat match.err >&2; fail "match: non-zero exit"; }
if grep -q "disagree" match.err; then cat match.err >&2; fail "match: a disagreement reported"; fi
echo "ok: matching tokenizer trains"

# A Hugging Face folder with the run's tokenizer (export copies it): model.init_from.
"$TRAINRT" export out hf >/dev/null 2>&1 || fail "export"
[ -f hf/tokenizer.json ] || fail "export wrote no hf/tokenizer.json"
cat >hf.toml <<'TOML'
[model]
init_from = "hf"
[data]
train = "bpe/train.bin"
[train]
batch_size = 2
seq_len = 32
steps = 1
eval_every = 0
[runtime]
device = "cpu"
TOML
"$TRAINRT" train hf.toml --fresh >hf_match.out 2>hf_match.err ||
    { cat hf_match.err >&2; fail "hf folder with its own data: non-zero exit"; }
echo "ok: a model folder with the data's tokenizer (a copy) trains"
expect_failure hf_vs_bytes "$TRAINRT" train hf.toml --fresh --set 'data.train="bytes/train.bin"'
expect_in hf_vs_bytes.err "the data and the tokenizers disagree" "bytes (vocab 256, sha256:" \
    "model.init_from holds hf-bpe '$WORK/hf' (vocab 300, sha256:"
echo "PASS"
