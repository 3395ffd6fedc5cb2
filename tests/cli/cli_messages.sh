#!/usr/bin/env bash
# What the trainrt CLI says (issue 38, "small things seen"): paths lexically normal, each
# checkpoint said once, the summary's val loss with its step, the report's train-loss column
# named honestly, the hint for data beyond a model.init_from model's vocabulary, the hint for
# a LoRA config resuming from a full run, export naming the tokenizer files it wrote (and a
# tokenizer_config.json for the project's own BPE), "did you mean" for commands and options.
#   usage: cli_messages.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3
TEXT="$SRC/examples/data/tinyshakespeare.txt"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }

# Runs a command that must fail with exit status RC and PATTERN on stderr.
#   expect_failure NAME RC PATTERN COMMAND...
expect_failure() {
    local name=$1 want=$2 pattern=$3
    shift 3
    local rc=0
    "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ "$rc" -eq "$want" ] || { cat "$name.err" >&2; fail "$name: exit $rc, expected $want: $*"; }
    grep -q -- "$pattern" "$name.err" || {
        cat "$name.err" >&2
        fail "$name: stderr does not mention '$pattern'"
    }
    echo "ok: $name: $(head -n 1 "$name.err")"
}

[ -x "$TRAINRT" ] || fail "no trainrt binary at $TRAINRT"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
head -c 60000 "$TEXT" >text.txt
"$TRAINRT" prepare --text text.txt --out data >/dev/null

mkdir -p cfg/sub
cat >cfg/sub/run.toml <<'TOML'
[model]
vocab_size = 256
context_length = 32
n_layer = 1
n_head = 2
d_model = 32
[data]
train = "../../data/train.bin"
val = "../../data/val.bin"
[train]
batch_size = 2
seq_len = 32
steps = 4
eval_every = 3
eval_batches = 1
checkpoint_every = 2
out_dir = "../../out/run"
[runtime]
threads = 1
log_every = 1
TOML

# ------------------------------------------------------------------ paths, checkpoints
step "paths lexically normal; each checkpoint said once; the val loss with its step"
"$TRAINRT" config cfg/sub/run.toml >config.out
grep -qx "out_dir = \"$PWD/out/run\"" config.out || { grep out_dir config.out; fail "config: out_dir not normal"; }
grep -qx "train = \"$PWD/data/train.bin\"" config.out || fail "config: data.train not normal"
"$TRAINRT" train cfg/sub/run.toml >train.out 2>train.err || { cat train.err >&2; fail "train: exit"; }
cat train.out
grep -E 'out/run|data/' train.err | grep -F '/../' && fail "train: a path printed with '..'"
for s in 2 4; do
    n=$(grep -c "checkpoint: .*step_0000000$s" train.err || true)
    [ "$n" -eq 1 ] || { cat train.err >&2; fail "train: the checkpoint of step $s said $n times"; }
done
grep -qx "\[trainrt\] checkpoint: $PWD/out/run/step_00000004" train.err ||
    fail "train: the checkpoint line does not name $PWD/out/run/step_00000004"
grep -Eq '^step 4 \| loss [0-9.]+ \| val loss [0-9.]+ @ step 4 \| ' train.out ||
    fail "train: the summary's val loss does not say its step"
# No eval in this run (eval_every = 0): the summary shows none (not the checkpoint's).
"$TRAINRT" train cfg/sub/run.toml --steps 1 --set train.eval_every=0 >noeval.out 2>noeval.err ||
    { cat noeval.err >&2; fail "train without eval: exit"; }
grep -q 'val loss' noeval.out && fail "train without eval: the summary shows a val loss"
echo "ok: paths, checkpoint lines, summary"

# ------------------------------------------------------------------ report
step "report: 'EMA' heads the train loss only when it was smoothed"
"$TRAINRT" report out/run >report.out 2>&1 || { cat report.out >&2; fail "report: exit"; }
grep -q '<th>train loss last</th>' out/run/report.html || fail "report: no plain train-loss column"
grep -q 'train loss (EMA) last' out/run/report.html && fail "report: 'EMA' over unsmoothed losses"
grep -q 'Train loss not smoothed (too few logged steps)' out/run/report.html ||
    fail "report: the note does not say the loss is not smoothed"
mkdir -p long
awk 'BEGIN { for (s = 1; s <= 200; s++) printf "{\"step\": %d, \"split\": \"train\", \"loss\": %.3f, \"lr\": 0.001, \"grad_norm\": 1, \"tokens\": 32, \"tokens_total\": %d, \"ms\": 1, \"tok_per_s\": 1000}\n", s, 5 - s / 100, s * 32 }' \
    >long/metrics.jsonl
"$TRAINRT" report long out/run --html both.html >both.out 2>&1 || { cat both.out >&2; fail "report both: exit"; }
grep -q '<th>train loss (EMA) last</th>' both.html || fail "report both: no EMA column"
grep -Eq '<td>[0-9.]+ \(raw\)</td>' both.html || fail "report both: the unsmoothed run is not marked (raw)"
echo "ok: report"

# ------------------------------------------------------------------ a fixed vocabulary
step "ids beyond a model.init_from model's vocabulary blame the data, not vocab_size"
"$TRAINRT" tokenizer train --vocab-size 300 --text text.txt --out tok.json >/dev/null
"$TRAINRT" prepare --text text.txt --out bpe --tokenizer tok.json --threads 1 >/dev/null
cat >ft.toml <<'TOML'
[model]
init_from = "out/run/step_00000004"
[data]
train = "bpe/train.bin"
[train]
batch_size = 2
seq_len = 32
out_dir = ""
checkpoint_every = 0
eval_every = 0
[runtime]
threads = 1
TOML
expect_failure fixed_vocab 1 "exceed the vocabulary of the model in model.init_from" \
    "$TRAINRT" train ft.toml --steps 1
grep -q 'another tokenizer' fixed_vocab.err || fail "fixed_vocab: the tokenizer is not blamed"
grep -q 'the model is byte-level: trainrt prepare without --tokenizer' fixed_vocab.err ||
    fail "fixed_vocab: does not say how to prepare data for a byte-level model"
grep -q 'set model.vocab_size' fixed_vocab.err && fail "fixed_vocab: still says to change vocab_size"

# ------------------------------------------------------------------ LoRA onto a full run
step "a LoRA config resuming from a full run's out_dir is told so"
expect_failure lora_onto_full 1 "it is a full-model run (no LoRA adapters) and the config adds LoRA (lora.rank = 2)" \
    "$TRAINRT" train cfg/sub/run.toml --set lora.rank=2 --steps 1
grep -q 'set model.vocab_size' lora_onto_full.err && fail "lora_onto_full: blames the model shape"
grep -q 'run with --fresh' lora_onto_full.err || fail "lora_onto_full: no --fresh"

# ------------------------------------------------------------------ export
step "export names the tokenizer files; the project's own BPE gets a tokenizer_config.json"
cat >bpe.toml <<'TOML'
[model]
vocab_size = 320
context_length = 32
n_layer = 1
n_head = 2
d_model = 32
[data]
train = "bpe/train.bin"
tokenizer = "tok.json"
[train]
batch_size = 2
seq_len = 32
steps = 1
eval_every = 0
out_dir = "bpe_out"
[runtime]
threads = 1
TOML
"$TRAINRT" train bpe.toml >bpe_train.out 2>bpe_train.err || { cat bpe_train.err >&2; fail "bpe train"; }
"$TRAINRT" export bpe_out hf >export.out 2>export.err || { cat export.err >&2; fail "export: exit"; }
cat export.out
grep -q '; the tokenizer: hf/tokenizer.json, hf/tokenizer_config.json$' export.out ||
    fail "export: does not name the tokenizer files it wrote"
grep -q '"tokenizer_class": "PreTrainedTokenizerFast"' hf/tokenizer_config.json || fail "export: tokenizer_class"
grep -q '"eos_token": "<|endoftext|>"' hf/tokenizer_config.json || fail "export: eos_token"
grep -q '"bos_token": "<|endoftext|>"' hf/tokenizer_config.json || fail "export: bos_token"
grep -q '"model_max_length": 32,' hf/tokenizer_config.json || fail "export: model_max_length"
cmp -s tok.json hf/tokenizer.json || fail "export: tokenizer.json is not the run's"
[ ! -e tokenizer_config.json ] || fail "export: wrote beside the source tokenizer"
"$TRAINRT" export bpe_out hf --force >again.out 2>&1 || { cat again.out >&2; fail "export --force"; }
grep -q 'the tokenizer: hf/tokenizer.json, hf/tokenizer_config.json$' again.out ||
    fail "export --force: does not name the files it rewrote"
"$TRAINRT" export out/run plain >plain.out 2>&1 || { cat plain.out >&2; fail "export byte-level"; }
grep -q 'tokenizer' plain.out && fail "export byte-level: names tokenizer files it did not write"
echo "ok: export"

# ------------------------------------------------------------------ did you mean
step "unknown commands and options: did you mean"
expect_failure cmd_typo 2 "unknown command 'trian'; did you mean 'train'?" "$TRAINRT" trian x.toml
expect_failure cmd_far 2 "unknown command 'zzzzzz' (the commands are prepare, train," "$TRAINRT" zzzzzz
grep -q 'did you mean' cmd_far.err && fail "cmd_far: a suggestion for a word near nothing"
expect_failure train_opt 2 "unknown option '--stpes'; did you mean '--steps'?" "$TRAINRT" train cfg/sub/run.toml --stpes 3
expect_failure train_eq 2 "unknown option '--steps=3'; did you mean '--steps 3'?" "$TRAINRT" train cfg/sub/run.toml --steps=3
expect_failure eval_opt 2 "did you mean '--checkpoint'?" "$TRAINRT" eval cfg/sub/run.toml --checkpiont x
expect_failure eval_own_opt 2 "did you mean '--whole'?" "$TRAINRT" eval cfg/sub/run.toml --wholee
expect_failure bench_opt 2 "did you mean '--warmup'?" "$TRAINRT" bench cfg/sub/run.toml --warmpu 2
expect_failure plan_opt 2 "did you mean '--max-batch'?" "$TRAINRT" plan cfg/sub/run.toml --max-bach
expect_failure prepare_opt 2 "did you mean '--text'?" "$TRAINRT" prepare --txet text.txt --out d
expect_failure sample_opt 2 "did you mean '--temperature'?" "$TRAINRT" sample out/run --temprature 1
expect_failure export_opt 2 "did you mean '--merge'?" "$TRAINRT" export out/run e --mrege
expect_failure report_opt 2 "did you mean '--html'?" "$TRAINRT" report out/run --htlm x
expect_failure tok_sub 2 "did you mean 'train'?" "$TRAINRT" tokenizer trian
expect_failure tok_opt 2 "did you mean '--vocab-size'?" "$TRAINRT" tokenizer train --vocab-sise 3
expect_failure help_opt 2 "did you mean '--help'?" "$TRAINRT" train cfg/sub/run.toml --hlep

echo "PASS"
