#!/usr/bin/env bash
# `trainrt eval` as a perplexity tool: perplexity beside the loss; --whole scores every val
# token but the first exactly once (N - 1 targets, any split size); --text FILE scores a text
# tokenized in memory, the same figures as `prepare --val-fraction 1` + `eval --whole`
# (byte-level and with a BPE tokenizer); an evaluation-only folder (--val-fraction 1) evaluates
# but does not train; the weights are labelled (checkpoint, Hugging Face folder, initial model).
#   usage: cli_eval.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }
# The number after WORD in a line of eval output ("loss", "ppl", "tokens,").
field() { sed -nE "s/.* $2 ([0-9.]+).*/\1/p; s/^[a-z]+ $2 ([0-9.]+).*/\1/p" "$1" | head -n 1; }
tokens_of() { sed -nE 's/.* \| ([0-9]+) tokens, .*/\1/p' "$1"; }
expect_failure() {  # NAME PATTERN COMMAND...
    local name=$1 pattern=$2
    shift 2
    local rc=0
    "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ "$rc" -ne 0 ] || fail "$name: exit status 0 (expected an error): $*"
    grep -q -- "$pattern" "$name.err" || { cat "$name.err" >&2; fail "$name: stderr lacks '$pattern'"; }
    echo "ok: $name (exit $rc): $(head -n 1 "$name.err")"
}

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
head -c 3001 "$SRC/examples/data/tinyshakespeare.txt" >small.txt

step "prepare --val-fraction 1: an evaluation-only folder"
"$TRAINRT" prepare --text small.txt --out evalonly --val-fraction 1 >p1.out
cat p1.out
grep -q 'train.bin (0 tokens) and .*val.bin (3001 tokens)' p1.out || fail "val-fraction 1: $(cat p1.out)"
"$TRAINRT" prepare --text small.txt --out data --val-fraction 0.2 >/dev/null

cat >run.toml <<'TOML'
[model]
vocab_size = 256
context_length = 32
n_layer = 1
n_head = 2
d_model = 16
[data]
train = "data/train.bin"
val = "data/val.bin"
[train]
batch_size = 4
seq_len = 32
steps = 3
eval_every = 3
eval_batches = 2
out_dir = "out"
[runtime]
device = "cpu"
threads = 1
TOML

step "eval: sampled, with perplexity"
"$TRAINRT" eval run.toml >s.out
cat s.out
grep -Eq '^val loss [0-9.]+ \| ppl [0-9.]+ \| 256 tokens sampled \(train.eval_batches 2 x 4 x 32\) \| weights: initial model \(random, model.seed 1337\)$' s.out ||
    fail "sampled eval line"

step "eval --whole: N - 1 targets, any val size"
"$TRAINRT" eval run.toml --whole >w.out
cat w.out
# prepare's cut: floor(0.2 * 3001) = 600 tokens to val.
[ "$(tokens_of w.out)" = "$(( 600 - 1 ))" ] || fail "--whole scored $(tokens_of w.out), not 599"
grep -q '(19 windows of <= 32)' w.out || fail "--whole: 599 targets are 19 windows of 32 (the last of 23)"
awk '{ d = exp($3) - $6; exit !(d < 1e-3 * $6 && d > -1e-3 * $6) }' w.out || fail "ppl != exp(loss)"
# A val split smaller than one sampled batch (4 x 32 + 1): refused sampled, fine whole.
head -c 50 small.txt >tiny.txt
"$TRAINRT" prepare --text tiny.txt --out tinyval --val-fraction 1 >/dev/null
expect_failure small_sampled 'train.eval_mode = "whole"' "$TRAINRT" eval run.toml --set data.val=tinyval/val.bin
"$TRAINRT" eval run.toml --whole --set data.val=tinyval/val.bin >tw.out
[ "$(tokens_of tw.out)" = 49 ] || fail "--whole on 50 tokens: $(cat tw.out)"
"$TRAINRT" eval run.toml --set data.val=tinyval/val.bin --set train.eval_mode=whole >tk.out
[ "$(tokens_of tk.out)" = 49 ] || fail "train.eval_mode = whole: $(cat tk.out)"

step "eval --text == prepare --val-fraction 1 + eval --whole (bytes)"
"$TRAINRT" eval run.toml --whole --set data.val=evalonly/val.bin >ew.out
"$TRAINRT" eval run.toml --text small.txt >et.out
cat ew.out et.out
[ "$(tokens_of et.out)" = 3000 ] || fail "--text scored $(tokens_of et.out) of 3001 bytes, not 3000"
[ "$(field et.out loss)" = "$(field ew.out loss)" ] || fail "--text and --whole on the same text differ"

step "the evaluation-only folder does not train"
expect_failure train_empty 'holds no tokens' "$TRAINRT" train run.toml --set data.train=evalonly/train.bin \
    --set train.out_dir=never
[ ! -e never/metrics.jsonl ] || fail "a refused train wrote metrics.jsonl"
# ... but a config naming both of its splits evaluates.
"$TRAINRT" eval run.toml --whole --set data.train=evalonly/train.bin --set data.val=evalonly/val.bin >eo.out
[ "$(field eo.out loss)" = "$(field ew.out loss)" ] || fail "eval with the empty train split: $(cat eo.out)"

step "labels: checkpoint, Hugging Face folder"
"$TRAINRT" train run.toml >train.out 2>train.err || { cat train.err >&2; fail "train"; }
grep -Eq 'val loss [0-9.]+ \| ppl [0-9.]+' train.err || fail "train's eval line has no ppl: $(cat train.err)"
"$TRAINRT" eval run.toml --whole >cw.out
grep -q 'weights: .*out/step_00000003 (checkpoint)$' cw.out || fail "checkpoint label: $(cat cw.out)"
"$TRAINRT" export out hf >/dev/null
"$TRAINRT" eval run.toml --whole --set 'train.out_dir=""' --set model.init_from=hf >hw.out
cat hw.out
grep -q "weights: $WORK/hf (Hugging Face folder)$" hw.out || fail "init_from label: $(cat hw.out)"
! grep -q 'initial model' hw.out || fail "an HF folder labelled as the initial model"
[ "$(field hw.out loss)" = "$(field cw.out loss)" ] || fail "the export evaluates otherwise than its checkpoint"
"$TRAINRT" eval hf --whole --set data.val=data/val.bin --set train.seq_len=32 >hd.out
grep -q 'weights: hf (Hugging Face folder)$' hd.out || fail "HF_DIR label: $(cat hd.out)"
[ "$(field hd.out loss)" = "$(field cw.out loss)" ] || fail "eval HF_DIR differs from its checkpoint"
"$TRAINRT" eval out --text small.txt >ot.out
grep -q 'weights: out (checkpoint)$' ot.out || fail "eval CHECKPOINT --text: $(cat ot.out)"

step "eval --text with a tokenizer == prepare --tokenizer --val-fraction 1 + eval --whole"
"$TRAINRT" tokenizer train --vocab-size 300 --text small.txt --out tok.json >/dev/null
"$TRAINRT" prepare --text small.txt --out tokval --tokenizer tok.json --val-fraction 1 --threads 1 >tp.out
n_tok=$(sed -nE 's/.*val\.bin \(([0-9]+) tokens\).*/\1/p' tp.out)
[ -n "$n_tok" ] || fail "prepare --tokenizer: $(cat tp.out)"
set_tok=(--set model.vocab_size=300 --set 'train.out_dir=""' --set data.tokenizer=tok.json)
# (data.train too: the byte-level train split would disagree with tok.json, data.tokenizer_check)
"$TRAINRT" eval run.toml --whole --set data.train=tokval/train.bin --set data.val=tokval/val.bin \
    "${set_tok[@]}" >kw.out
"$TRAINRT" eval run.toml --text small.txt --tokenizer tok.json "${set_tok[@]}" >kt.out
"$TRAINRT" eval run.toml --text small.txt "${set_tok[@]}" >kd.out  # data.tokenizer by default
cat kw.out kt.out
[ "$(tokens_of kt.out)" = $((n_tok - 1)) ] || fail "--text --tokenizer scored $(tokens_of kt.out), not $((n_tok - 1))"
[ "$(field kt.out loss)" = "$(field kw.out loss)" ] || fail "--text --tokenizer and --whole differ"
[ "$(field kd.out loss)" = "$(field kw.out loss)" ] || fail "--text with data.tokenizer differs"

# A Hugging Face folder with its tokenizer (an export of a run with data.tokenizer) is both.
"$TRAINRT" prepare --text small.txt --out tokdata --tokenizer tok.json --val-fraction 0.2 --threads 1 >/dev/null
"$TRAINRT" train run.toml --set data.train=tokdata/train.bin --set data.val=tokdata/val.bin \
    --set model.vocab_size=300 --set data.tokenizer=tok.json --set train.out_dir=outk \
    --set train.steps=1 >/dev/null 2>&1 || fail "train with the tokenizer"
"$TRAINRT" export outk hfk >/dev/null
[ -f hfk/tokenizer.json ] || fail "the export holds no tokenizer.json"
"$TRAINRT" eval --text small.txt --tokenizer hfk --set train.seq_len=32 >ht.out
"$TRAINRT" eval outk --text small.txt >hc.out
cat ht.out
grep -q 'weights: hfk (Hugging Face folder)$' ht.out || fail "--tokenizer HF_DIR label: $(cat ht.out)"
[ "$(field ht.out loss)" = "$(field hc.out loss)" ] || fail "--tokenizer HF_DIR differs from its checkpoint"

step "usage"
"$TRAINRT" eval --help >help.out
grep -q -- '--whole' help.out && grep -q -- '--text FILE' help.out || fail "eval --help"
expect_failure tok_without_text '--tokenizer goes with --text' "$TRAINRT" eval run.toml --tokenizer tok.json
expect_failure text_and_whole 'exclude each other' "$TRAINRT" eval run.toml --text small.txt --whole
expect_failure text_no_model '--text needs a model' "$TRAINRT" eval --text small.txt
expect_failure text_bytes_model 'not bytes' "$TRAINRT" eval run.toml --text small.txt --set model.vocab_size=300
expect_failure text_missing 'cannot read' "$TRAINRT" eval run.toml --text absent.txt
echo "cli_eval: all checks passed"
