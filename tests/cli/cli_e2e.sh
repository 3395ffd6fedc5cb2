#!/usr/bin/env bash
# End-to-end test of the trainrt CLI.
#   usage: cli_e2e.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR
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

# Runs a command that must fail: non-zero exit, a message on stderr matching PATTERN.
#   expect_failure NAME PATTERN COMMAND...
expect_failure() {
    local name=$1 pattern=$2
    shift 2
    local rc=0
    "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ "$rc" -ne 0 ] || fail "$name: exit status 0 (expected an error): $*"
    [ -s "$name.err" ] || fail "$name: nothing on stderr"
    grep -q -- "$pattern" "$name.err" || {
        cat "$name.err" >&2
        fail "$name: stderr does not mention '$pattern'"
    }
    echo "ok: $name (exit $rc): $(head -n 1 "$name.err")"
}

[ -x "$TRAINRT" ] || fail "no trainrt binary at $TRAINRT"
[ -f "$TEXT" ] || fail "no text at $TEXT"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# ------------------------------------------------------------------ info
step "trainrt info"
"$TRAINRT" info >info.out 2>info.err
cat info.out
grep -Eq '^libtrainrt [0-9]+\.[0-9]+\.[0-9]+ ' info.out || fail "info: no version line"
grep -Eq '^features:.* cpu' info.out || fail "info: cpu feature missing"

# ------------------------------------------------------------------ prepare
step "trainrt prepare"
"$TRAINRT" prepare --text "$TEXT" --out data --val-fraction 0.1 >prepare.out
cat prepare.out
[ -f data/train.bin ] || fail "prepare: data/train.bin missing"
[ -f data/val.bin ] || fail "prepare: data/val.bin missing"
n_train=$(sed -nE 's/.*train\.bin \(([0-9]+) tokens\).*/\1/p' prepare.out)
n_val=$(sed -nE 's/.*val\.bin \(([0-9]+) tokens\).*/\1/p' prepare.out)
[ -n "$n_train" ] && [ -n "$n_val" ] || fail "prepare: token counts not printed"
n_bytes=$(stat -c %s "$TEXT")
[ $((n_train + n_val)) -eq "$n_bytes" ] ||
    fail "prepare: $n_train + $n_val tokens != $n_bytes bytes of text"
# val = floor(0.1 * bytes), allowing for rounding of 0.1 in binary.
[ $((n_val - n_bytes / 10)) -ge -1 ] && [ $((n_val - n_bytes / 10)) -le 1 ] ||
    fail "prepare: $n_val val tokens for $n_bytes bytes at fraction 0.1"
[ "$(stat -c %s data/train.bin)" -eq $((1024 + 2 * n_train)) ] ||
    fail "prepare: train.bin is $(stat -c %s data/train.bin) bytes, expected $((1024 + 2 * n_train))"
[ "$(stat -c %s data/val.bin)" -eq $((1024 + 2 * n_val)) ] ||
    fail "prepare: val.bin is $(stat -c %s data/val.bin) bytes, expected $((1024 + 2 * n_val))"
# Header: magic 20240520, version 1, ntok.
read -r magic version ntok < <(od -An -t d4 -N 12 data/train.bin)
[ "$magic" -eq 20240520 ] && [ "$version" -eq 1 ] && [ "$ntok" -eq "$n_train" ] ||
    fail "prepare: train.bin header is [$magic, $version, $ntok]"
# The first token is the first byte of the text.
first_byte=$(od -An -t u1 -N 1 "$TEXT" | tr -d ' ')
first_token=$(od -An -t u2 -j 1024 -N 2 data/train.bin | tr -d ' ')
[ "$first_byte" -eq "$first_token" ] || fail "prepare: first token $first_token != byte $first_byte"

# The folder's manifest comes last, complete, and the lock file goes; a prepare into a folder
# that another run holds is refused at once, naming it.
grep -q '"complete": true' data/prepare.json || fail "prepare: data/prepare.json is not complete"
[ ! -e data/trainrt.lock ] || fail "prepare: left its lock file"
mkdir -p prep_busy
expect_failure prepare_busy "prepare out_dir 'prep_busy' is in use by another run" \
    flock prep_busy/trainrt.lock "$TRAINRT" prepare --text "$TEXT" --out prep_busy
[ ! -e prep_busy/train.bin ] || fail "a refused prepare wrote train.bin"

# ------------------------------------------------------------------ config file
cat >run.toml <<'TOML'
[model]
vocab_size = 256
context_length = 32
n_layer = 1
n_head = 2
d_model = 32

[data]
train = "data/train.bin"
val = "data/val.bin"

[train]
batch_size = 2
seq_len = 16
steps = 20
eval_every = 3
eval_batches = 2
out_dir = "out"

[optim]
lr = 0.001

[runtime]
threads = 1
log_every = 1
TOML

# ------------------------------------------------------------------ train
step "trainrt train run.toml --set train.steps=6"
"$TRAINRT" train run.toml --set train.steps=6 >train.out 2>train.err || {
    cat train.err >&2
    fail "train: exit status $?"
}
cat train.out
grep -q 'acceleration:' train.err || fail "train: the session's INFO lines are not on stderr"
grep -Eq '^step 6 \| loss [0-9.]+ \| val loss [0-9.]+' train.out ||
    fail "train: no final summary for step 6 on stdout"
[ -f out/metrics.jsonl ] || fail "train: out/metrics.jsonl missing"
n_train_lines=$(grep -Ec '"split": ?"train"' out/metrics.jsonl || true)
n_val_lines=$(grep -Ec '"split": ?"val"' out/metrics.jsonl || true)
[ "$n_train_lines" -eq 6 ] || fail "metrics.jsonl: $n_train_lines train lines, expected 6"
[ "$n_val_lines" -ge 1 ] || fail "metrics.jsonl: no val line"
for key in step loss lr grad_norm tokens tokens_total ms tok_per_s; do
    n=$(grep -E '"split": ?"train"' out/metrics.jsonl | grep -Ec "\"$key\": ?[-0-9]" || true)
    [ "$n" -eq 6 ] || fail "metrics.jsonl: key '$key' with a number in $n of 6 train lines"
done
for s in 1 2 3 4 5 6; do
    grep -E '"split": ?"train"' out/metrics.jsonl | grep -Eq "\"step\": ?$s[,}]" ||
        fail "metrics.jsonl: no train line for step $s"
done
grep -E '"split": ?"val"' out/metrics.jsonl | grep -Eq '"step": ?6[,}]' ||
    fail "metrics.jsonl: no val line at the final step 6"
grep -E '"split": ?"train"' out/metrics.jsonl | grep -Eq '"tokens": ?32[,}]' ||
    fail "metrics.jsonl: tokens per step should be 1 x 2 x 16 = 32"

# ------------------------------------------------------------------ eval
step "trainrt eval run.toml"
"$TRAINRT" eval run.toml >eval.out 2>eval.err || {
    cat eval.err >&2
    fail "eval: non-zero exit"
}
cat eval.out
grep -Eq '^val loss [0-9]+\.[0-9]+ \| ppl [0-9.]+ \| .* \| weights: .*out/step_00000006 \(checkpoint\)$' eval.out ||
    fail "eval: no 'val loss X | ppl P | ... | weights: out/step_00000006 (checkpoint)' line: eval reads the latest checkpoint"
# 6 steps at lr 1e-3 barely move a random model: val loss near ln 256 = 5.55.
awk '/^val loss/ { exit !($3 > 4.5 && $3 < 6.5) }' eval.out ||
    fail "eval: val loss $(cat eval.out) is not near ln(256)"
"$TRAINRT" eval run.toml --set 'train.out_dir=""' >eval0.out 2>/dev/null ||
    fail "eval without out_dir failed"
grep -Eq '^val loss [0-9.]+ \| .* \| weights: initial model \(random, model.seed [0-9]+\)$' eval0.out ||
    fail "eval: initial model line"
# Perplexity is exp(loss), to the printed digits.
awk '/^val loss/ { d = exp($3) - $6; exit !(d < 1e-3 * $6 && d > -1e-3 * $6) }' eval.out ||
    fail "eval: ppl is not exp(val loss): $(cat eval.out)"

# An eval under another thread count reads the checkpoint without the resume warning (it is
# not a continued run) or the start-up account of a training run.
"$TRAINRT" eval run.toml --set runtime.threads=2 >eval2.out 2>eval2.err ||
    { cat eval2.err >&2; fail "eval --set runtime.threads=2: non-zero exit"; }
! grep -q 'differs from the one it was trained with' eval2.err ||
    fail "eval warns about resuming with another config: $(cat eval2.err)"
! grep -q 'init random' eval2.err || fail "eval logs the random init of its session"
grep -Eq '^val loss [0-9.]+ ' eval2.out || fail "eval --set runtime.threads=2: no val loss"

# ------------------------------------------------------------------ checkpoints and resume
step "checkpoint at the end of train, resume from latest"
[ -f out/latest ] || fail "train: no out/latest"
[ "$(cat out/latest)" = "step_00000006" ] || fail "train: out/latest is '$(cat out/latest)'"
for f in model.safetensors config.json optimizer.safetensors state.json MANIFEST.sha256; do
    [ -f "out/step_00000006/$f" ] || fail "checkpoint: $f missing"
done
( cd out/step_00000006 && sha256sum --quiet -c MANIFEST.sha256 ) ||
    fail "checkpoint: MANIFEST.sha256 does not verify with sha256sum"
# An uninterrupted 9-step run vs 6 steps + resume for 3: same losses, bit for bit.
"$TRAINRT" train run.toml --set train.steps=9 --set train.out_dir=full >full.out 2>full.err ||
    fail "train (uninterrupted): non-zero exit"
"$TRAINRT" train run.toml --set train.steps=9 --set train.out_dir=part --steps 5 \
    >part.out 2>part.err || fail "train (first 5 steps): non-zero exit"
"$TRAINRT" train run.toml --set train.steps=9 --set train.out_dir=part >resume.out 2>resume.err || {
    cat resume.err >&2
    fail "train (resume): non-zero exit"
}
grep -q 'resumed from .*step_00000005 at step 5' resume.err || fail "train did not resume from latest"
grep -q 'differs from the one it was trained with' resume.err &&
    fail "resume with the same config warned about a config difference"
for s in 6 7 8 9; do
    a=$(grep -E '"split": ?"train"' full/metrics.jsonl | grep -E "\"step\": ?$s[,}]" | grep -oE '"loss": ?[-0-9.e+]+')
    b=$(grep -E '"split": ?"train"' part/metrics.jsonl | grep -E "\"step\": ?$s[,}]" | tail -n 1 | grep -oE '"loss": ?[-0-9.e+]+')
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "resume: step $s loss '$b' != uninterrupted '$a'"
done
[ "$(cat part/latest)" = "step_00000009" ] || fail "resume: part/latest is '$(cat part/latest)'"
# --checkpoint resumes from a chosen checkpoint (here the uninterrupted run's step 9 -> out2).
"$TRAINRT" train run.toml --set train.steps=10 --set train.out_dir=out2 \
    --checkpoint full/step_00000009 >from.out 2>from.err || fail "train --checkpoint: exit"
grep -q 'resumed from .*full/step_00000009 at step 9' from.err || fail "train --checkpoint did not load it"
[ "$(cat out2/latest)" = "step_00000010" ] || fail "train --checkpoint: out2/latest"
expect_failure fresh_and_checkpoint "exclude" "$TRAINRT" train run.toml --fresh --checkpoint full
"$TRAINRT" train run.toml --set train.steps=9 --set train.out_dir=part >again.out 2>again.err ||
    fail "train at the end: exit"
grep -q 'nothing to do' again.err || fail "train at train.steps: expected 'nothing to do'"
"$TRAINRT" train run.toml --set train.steps=2 --set train.out_dir=part --fresh >fresh.out 2>fresh.err || fail "train --fresh"
grep -q 'resumed' fresh.err && fail "train --fresh resumed"
grep -Eq '^step 2 ' fresh.out || fail "train --fresh: did not start over"

step "SIGINT stops the run, writes a checkpoint, exits 130"
cat >slow.toml <<'TOML'
[model]
vocab_size = 256
context_length = 128
n_layer = 4
n_head = 4
d_model = 128
[data]
train = "data/train.bin"
val = "data/val.bin"
[train]
batch_size = 8
seq_len = 128
steps = 100000
eval_every = 0
out_dir = "slow"
[runtime]
threads = 1
log_every = 1
TOML
"$TRAINRT" train slow.toml >sigint.out 2>sigint.err &
pid=$!
# Wait for the first step line (the handler is installed by then); slow builds (sanitizers)
# get up to 2 minutes.
for _ in $(seq 1 600); do
    grep -q '^step [0-9]' sigint.err 2>/dev/null && break
    sleep 0.2
done
grep -q '^step [0-9]' sigint.err || fail "SIGINT: training did not start"
# One run per folder: a second train on the same out_dir fails at once, naming the holder,
# and writes nothing there (issue 15: two runs used to interleave checkpoints and metrics).
lines_before=$(wc -l <slow/metrics.jsonl)
expect_failure second_run "train.out_dir '.*slow' is in use by another run (pid $pid on " \
    "$TRAINRT" train slow.toml --fresh --steps 2
grep -q "trainrt.lock" second_run.err || fail "second run: the lock file is not named"
ls -d slow/step_* 2>/dev/null && fail "second run: a checkpoint appeared in the held folder"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || { cat sigint.err >&2; fail "SIGINT: exit $rc, expected 130"; }
grep -q '^\[trainrt\] checkpoint: .*slow/step_' sigint.err || fail "SIGINT: no checkpoint written"
ls -d slow/step_*.tmp 2>/dev/null && fail "SIGINT: a temporary checkpoint was left behind"
[ -f "slow/$(cat slow/latest)/MANIFEST.sha256" ] || fail "SIGINT: latest is not a complete checkpoint"
[ "$(wc -l <slow/metrics.jsonl)" -ge "$lines_before" ] || fail "metrics.jsonl shrank"
grep -v '"step"' slow/metrics.jsonl && fail "metrics.jsonl holds a line that is not a record"
# The kernel dropped the lock with the process: the folder is free again.
"$TRAINRT" train slow.toml --steps 1 >after.out 2>after.err ||
    { cat after.err >&2; fail "the out_dir lock outlived its run"; }

# Starts `trainrt train slow.toml ARGS...` in the background (pid in $pid, stderr in
# NAME.err), waits until it trains (its signal handlers are installed by then), and arms a
# hang guard that kills it after 4 minutes: no timing is asserted, a hang fails instead.
start_long_run() {
    local name=$1
    shift
    "$TRAINRT" train slow.toml "$@" >"$name.out" 2>"$name.err" &
    pid=$!
    # (Its sleep is killed with it, and it holds no output open: ctest waits for both.)
    (
        sleep 240 &
        s=$!
        trap 'kill $s 2>/dev/null; exit 0' TERM
        wait $s
        kill -KILL "$pid" 2>/dev/null && echo "HANG GUARD: killed $pid" >>"$name.err"
    ) </dev/null >/dev/null 2>&1 &
    guard=$!
    for _ in $(seq 1 600); do
        grep -q 'train: steps ' "$name.err" 2>/dev/null && break
        sleep 0.2
    done
    grep -q 'train: steps ' "$name.err" || fail "$name: training did not start"
}
# Waits for it; its exit status in $rc.
finish_long_run() {
    rc=0
    wait "$pid" || rc=$?
    kill "$guard" 2>/dev/null || true
    wait "$guard" 2>/dev/null || true
    grep -q 'HANG GUARD' "$1.err" && { cat "$1.err" >&2; fail "$1: the run did not end"; }
    return 0
}

step "a stop is seen between micro-batches: SIGINT ends a step of 10^6 micro-batches"
# Issue 37: with train.grad_accum = 10^6 the first step would run for hours, and the stop
# was only seen after it.
start_long_run accum --fresh --set train.grad_accum=1000000 --set 'train.out_dir="accum"'
kill -INT "$pid"
finish_long_run accum
[ "$rc" -eq 130 ] || { cat accum.err >&2; fail "accum: exit $rc, expected 130"; }
grep -q 'stopped on request during step 1 (before micro-batch [0-9]* of train.grad_accum = 1000000); that step was abandoned' accum.err ||
    { cat accum.err >&2; fail "accum: the step was not abandoned between micro-batches"; }
grep -q '^\[trainrt\] checkpoint: .*accum/step_00000000' accum.err || fail "accum: no checkpoint written"
[ -f "accum/$(cat accum/latest)/MANIFEST.sha256" ] || fail "accum: latest is not a complete checkpoint"

step "a second signal exits at once, saying what was not saved"
# The first signal asks for the stop and the second ends the process from the handler: it
# must not wait for the stop, nor write a checkpoint. Both arrive while the process is
# stopped (SIGSTOP), so the second is handled before the stop can make progress (whichever
# of the two the kernel hands over first is the first).
"$TRAINRT" train slow.toml --fresh --steps 1 --set 'train.out_dir="twice"' >twice1.out 2>twice1.err ||
    { cat twice1.err >&2; fail "twice: the first step"; }
[ "$(cat twice/latest)" = step_00000001 ] || fail "twice: no checkpoint at step 1"
start_long_run twice --set train.grad_accum=1000000 --set 'train.out_dir="twice"'
kill -STOP "$pid"
kill -INT "$pid"
kill -TERM "$pid"
kill -CONT "$pid"
finish_long_run twice
second=$(sed -nE 's/^trainrt: second signal \((SIG[A-Z]+)\): exiting now; .*/\1/p' twice.err)
[ -n "$second" ] || { cat twice.err >&2; fail "twice: no 'second signal' message (exit $rc)"; }
want=130
[ "$second" = SIGTERM ] && want=143
[ "$rc" -eq "$want" ] || { cat twice.err >&2; fail "twice: exit $rc after a second $second"; }
grep -q "second signal ($second): exiting now; nothing after the last checkpoint (.*twice/step_00000001) was saved" twice.err ||
    { cat twice.err >&2; fail "twice: the message does not name the last checkpoint"; }
grep -q '^\[trainrt\] checkpoint: ' twice.err && fail "twice: a checkpoint was written after the second signal"
[ "$(cat twice/latest)" = step_00000001 ] || fail "twice: latest changed"
[ -f twice/step_00000001/MANIFEST.sha256 ] || fail "twice: the last checkpoint is not complete"
echo "ok: second $second -> exit $rc"

# ------------------------------------------------------------------ the non-finite policy
step "a diverging run stops after train.max_skipped_steps and saves nothing non-finite"
# lr 1e38: step 1's update overflows the weights; every later gradient is NaN. It used to
# skip steps forever and checkpoint the non-finite weights, exiting 0.
expect_failure diverged "3 steps in a row had a non-finite gradient" \
    "$TRAINRT" train run.toml --fresh --steps 40 --set optim.lr=1e38 --set optim.warmup_steps=0 \
    --set train.max_skipped_steps=3 --set train.checkpoint_every=1 --set train.eval_every=0 \
    --set 'train.out_dir="diverged"'
grep -q "non-finite values" diverged.err || fail "diverged: the status is not named"
grep -q "checkpoint at step 1 failed: save: the parameters: tensor '" diverged.err ||
    fail "diverged: the refused periodic checkpoint is not reported"
ls -d diverged/step_* 2>/dev/null && fail "diverged: a checkpoint of non-finite weights was written"
[ -e diverged/latest ] && fail "diverged: latest was written"

# ------------------------------------------------------------------ sample and export
step "trainrt sample / export"
"$TRAINRT" sample out --prompt "ROMEO:" --tokens 40 --seed 7 >sample1.out 2>sample.err ||
    { cat sample.err >&2; fail "sample: non-zero exit"; }
"$TRAINRT" sample out --prompt "ROMEO:" --tokens 40 --seed 7 >sample2.out 2>/dev/null
cmp -s sample1.out sample2.out || fail "sample: same seed, different text"
head -c 6 sample1.out | grep -q '^ROMEO:' || fail "sample: output does not start with the prompt"
[ "$(wc -c <sample1.out)" -ge 46 ] || fail "sample: fewer than 40 generated bytes"
"$TRAINRT" export part/step_00000009 hf >export.out 2>export.err || fail "export: non-zero exit"
[ -f hf/model.safetensors ] && [ -f hf/config.json ] || fail "export: files missing"
grep -q '"GPT2LMHeadModel"' hf/config.json || fail "export: config.json architectures"
"$TRAINRT" export out hf16 --dtype bf16 >/dev/null 2>&1 || fail "export --dtype bf16"
grep -q '"BF16"' hf16/model.safetensors || fail "export bf16: no BF16 tensors"

# ------------------------------------------------------------------ LoRA fine-tuning
# The exported model (hf) as the base, adapters on every linear layer: the export of a LoRA
# checkpoint is its PEFT adapter, --merge the merged model; lora.init_from loads the adapter.
step "trainrt train with [lora] / export (adapter, --merge)"
cat >lora.toml <<'TOML'
[model]
init_from = "hf"

[lora]
rank = 4
alpha = 8.0
target_modules = ["all-linear"]

[data]
train = "data/train.bin"
val = "data/val.bin"

[train]
batch_size = 2
seq_len = 16
steps = 4
eval_every = 0
out_dir = "lora_out"

[runtime]
threads = 1
log_every = 1
TOML
"$TRAINRT" train lora.toml >lora.out 2>&1 || { cat lora.out; fail "lora: train failed"; }
grep -q 'LoRA r4 alpha 8 on 4 linear layers' lora.out || { cat lora.out; fail "lora: model line"; }
grep -q 'trainable: .*the LoRA adapters' lora.out || { cat lora.out; fail "lora: trainable line"; }
"$TRAINRT" export lora_out adapter >lora_export.out 2>&1 || { cat lora_export.out; fail "lora: export"; }
[ -f adapter/adapter_model.safetensors ] && [ -f adapter/adapter_config.json ] ||
    fail "lora: export did not write a PEFT folder"
grep -q 'base_model.model.transformer.h.0.attn.c_attn.lora_A.weight' adapter/adapter_model.safetensors ||
    fail "lora: adapter tensor names are not PEFT's"
"$TRAINRT" export lora_out merged --merge >/dev/null 2>&1 || fail "lora: export --merge"
[ -f merged/model.safetensors ] && grep -q '"GPT2LMHeadModel"' merged/config.json ||
    fail "lora: --merge did not write a model"
grep -q 'lora_' merged/model.safetensors && fail "lora: the merged model holds adapter tensors"
"$TRAINRT" train lora.toml --fresh --set 'lora.init_from="adapter"' \
    --set train.out_dir=lora_out2 --set train.steps=1 >lora2.out 2>&1 ||
    { cat lora2.out; fail "lora: training from the exported adapter"; }
grep -q '"format_version": 3' "lora_out/$(cat lora_out/latest)/state.json" ||
    fail "lora: the checkpoint holds the base (expected format 3: adapters only)"
"$TRAINRT" sample lora_out --prompt "ROMEO:" --tokens 8 >lora_sample.out 2>&1 ||
    { cat lora_sample.out; fail "lora: sample from an adapters-only checkpoint"; }
expect_failure lora_merge_plain "no LoRA adapters" "$TRAINRT" export out hfm --merge
expect_failure lora_bad_module "names no linear layer" "$TRAINRT" train lora.toml --fresh \
    --set 'lora.target_modules=["q_proj"]' --set train.out_dir=lora_bad

# ------------------------------------------------------------------ plan
step "trainrt plan run.toml [--max-batch --memory]"
"$TRAINRT" plan run.toml >plan.out 2>&1 || { cat plan.out; fail "plan: non-zero exit"; }
grep -q 'gradients + AdamW m,v' plan.out && grep -q 'a session holds' plan.out ||
    { cat plan.out; fail "plan: components or the measured session missing"; }
"$TRAINRT" plan run.toml --max-batch --memory 20000000 >plan2.out 2>&1 ||
    { cat plan2.out; fail "plan --max-batch: non-zero exit"; }
grep -Eq '^max micro-batch: [0-9]+ x 16 within' plan2.out || { cat plan2.out; fail "plan: no max batch"; }
grep -q 'train.grad_accum = ' plan2.out || { cat plan2.out; fail "plan: no grad_accum advice"; }
expect_failure plan_nothing_fits "none fits" "$TRAINRT" plan run.toml --max-batch --memory 1000
# train.batch_size = "auto": plan says what it becomes here, and a run logs and uses it.
"$TRAINRT" plan run.toml --set 'train.batch_size="auto"' --set runtime.memory_limit=20000000 \
    >plan3.out 2>&1 || { cat plan3.out; fail "plan with batch_size auto: non-zero exit"; }
grep -Eq '^plan: train.batch_size = "auto" is [0-9]+ here' plan3.out ||
    { cat plan3.out; fail "plan: auto batch size not resolved"; }
expect_failure plan_bad_memory "memory" "$TRAINRT" plan run.toml --max-batch --memory lots

# ------------------------------------------------------------------ info, help
step "trainrt info run.toml, --help"
"$TRAINRT" info run.toml >info2.out 2>/dev/null || fail "info CONFIG: non-zero exit"
grep -Eq '^model: [0-9]+ parameters' info2.out || fail "info CONFIG: no parameter count"
grep -q 'FLOPs per token' info2.out || fail "info CONFIG: no FLOPs per token"
grep -q 'memory estimate' info2.out || fail "info CONFIG: no memory estimate"
grep -qx '\[optim\]' info2.out || fail "info CONFIG: no resolved config"
for c in prepare train eval sample export config info plan; do
    "$TRAINRT" "$c" --help >help.out 2>&1 || fail "$c --help: non-zero exit"
    grep -q "usage: trainrt $c" help.out || fail "$c --help: no usage line"
done

# ------------------------------------------------------------------ config
step "trainrt config run.toml --set optim.lr=0.002"
"$TRAINRT" config run.toml --set optim.lr=0.002 >config.out 2>config.err || {
    cat config.err >&2
    fail "config: non-zero exit"
}
grep -qx 'lr = 0.002' config.out || fail "config: no 'lr = 0.002' line in the dump"
grep -qx 'vocab_size = 256' config.out || fail "config: the file's values are missing"
grep -qx '\[optim\]' config.out || fail "config: no [optim] section"

# ------------------------------------------------------------------ errors
step "error cases"
expect_failure missing_config "missing.toml" "$TRAINRT" train missing.toml
expect_failure bad_set_key "optim.nope" "$TRAINRT" config run.toml --set optim.nope=1
expect_failure bad_set_value "train.steps" "$TRAINRT" train run.toml --set train.steps=0
expect_failure unknown_command "frobnicate" "$TRAINRT" frobnicate
expect_failure no_command "usage" "$TRAINRT"
# --version; a usage error is its message, the command's usage lines and a pointer to --help.
"$TRAINRT" --version >version.out || fail "--version: non-zero exit"
grep -Eq '^trainrt [0-9]+\.[0-9]+\.[0-9]+ \(libtrainrt [0-9.]+, ABI [0-9]+\)$' version.out ||
    fail "--version: $(cat version.out)"
expect_failure usage_short "run 'trainrt train --help'" "$TRAINRT" train
grep -q '^trainrt train: missing CONFIG' usage_short.err || fail "usage: the message is not first"
[ "$(wc -l <usage_short.err)" -le 4 ] || fail "usage error: $(wc -l <usage_short.err) lines"
expect_failure unknown_option_short "unknown option '--nope'" "$TRAINRT" eval run.toml --nope
[ "$(wc -l <unknown_option_short.err)" -le 4 ] || fail "usage error buries its message"
# export keeps an existing folder unless --force.
expect_failure export_existing "already exists" "$TRAINRT" export out hf
"$TRAINRT" export out hf --force >/dev/null 2>&1 || fail "export --force into hf"
# A file of the wrong kind says what it is and what to do.
expect_failure text_as_shard "trainrt prepare --text" \
    "$TRAINRT" train run.toml --fresh --set "data.train=\"$TEXT\"" --set train.out_dir=text_out
expect_failure config_json_as_weights "JSON text" \
    "$TRAINRT" train run.toml --fresh --set model.init_from=hf/config.json --set train.out_dir=cj_out
mkdir -p pt_folder && cp hf/config.json pt_folder/ && printf 'PK\003\004' >pt_folder/pytorch_model.bin
expect_failure pytorch_folder "safe_serialization=True" \
    "$TRAINRT" train run.toml --fresh --set model.init_from=pt_folder --set train.out_dir=pt_out
# A finished run says how to go on; --steps past train.steps says what the lr does there.
"$TRAINRT" train run.toml --fresh --set train.steps=2 --set train.out_dir=done_out >/dev/null 2>&1 ||
    fail "train 2 steps into done_out"
"$TRAINRT" train run.toml --set train.steps=2 --set train.out_dir=done_out >done.out 2>done.err ||
    fail "train of a finished run: non-zero exit"
grep -q 'nothing to do (to go on: raise train.steps' done.err || fail "finished run: $(cat done.err)"
"$TRAINRT" train run.toml --set train.steps=2 --set train.out_dir=done_out --steps 2 \
    >past.out 2>past.err || fail "train --steps past train.steps: non-zero exit"
grep -q '^step 4/4 ' past.err || fail "train --steps past the schedule: $(grep '^step' past.err)"
! grep -q '^step [0-9]*/2 ' past.err || fail "a step numbered past its total"
grep -q 'go past train.steps = 2' past.err || fail "no warning for steps past the schedule"
# A folder whose prepare did not finish (prepare.json as a kill leaves it) is refused by name,
# and the next prepare into it mends it.
"$TRAINRT" prepare --text "$TEXT" --out halfway >/dev/null || fail "prepare into halfway"
sed -i 's/"complete": true/"complete": false/' halfway/prepare.json
expect_failure unfinished_prepare "halfway' holds an unfinished prepare" \
    "$TRAINRT" train run.toml --fresh --set 'data.train="halfway/train*.bin"' --set train.out_dir=half_out
"$TRAINRT" prepare --text "$TEXT" --out halfway >/dev/null || fail "prepare into halfway again"
"$TRAINRT" train run.toml --fresh --set 'data.train="halfway/train*.bin"' --set train.out_dir=half_out \
    --set train.steps=1 >/dev/null 2>&1 || fail "train on the mended halfway folder"
expect_failure prepare_missing_text "no_such.txt" \
    "$TRAINRT" prepare --text no_such.txt --out prep_missing
[ ! -e prep_missing/train.bin ] || fail "prepare with a missing text wrote train.bin"
expect_failure eval_missing_config "absent.toml" "$TRAINRT" eval absent.toml
expect_failure sample_no_checkpoint "nowhere" "$TRAINRT" sample nowhere
expect_failure export_bad_dtype "dtype" "$TRAINRT" export out hfx --dtype f16
expect_failure resume_other_shape "n_layer" "$TRAINRT" train run.toml --set model.n_layer=2
printf 'x' >>"part/$(cat part/latest)/state.json"
expect_failure resume_corrupt "corrupt checkpoint" "$TRAINRT" train run.toml --set train.out_dir=part --set train.steps=12

# The CUDA module loader: a missing file, a file that is not a library, and a library without
# the entry point are each UNSUPPORTED with the reason for device = cuda ...
printf 'not an ELF file' >not_a_module.so
expect_failure cuda_module_missing "no_such_module.so" \
    env TRAINRT_CUDA_MODULE="$PWD/no_such_module.so" "$TRAINRT" train run.toml --fresh \
    --set runtime.device=cuda --set train.out_dir=cuda_out
expect_failure cuda_module_not_elf "not_a_module.so" \
    env TRAINRT_CUDA_MODULE="$PWD/not_a_module.so" "$TRAINRT" train run.toml --fresh \
    --set runtime.device=cuda --set train.out_dir=cuda_out
# (awk reads all of its input: an early exit would SIGPIPE ldconfig, fatal under pipefail)
libm=$(ldconfig -p | awk '/libm\.so\.6 .*x86-64/ && !p {p = $NF} END {print p}')
if [ -n "$libm" ]; then
    expect_failure cuda_module_no_entry "trainrt_cuda_module_v1" \
        env TRAINRT_CUDA_MODULE="$libm" "$TRAINRT" train run.toml --fresh \
        --set runtime.device=cuda --set train.out_dir=cuda_out
fi
[ ! -e cuda_out/metrics.jsonl ] || fail "a session that failed to start wrote metrics"
# ... and device = auto falls back to the CPU with one line saying why.
env TRAINRT_CUDA_MODULE="$PWD/no_such_module.so" "$TRAINRT" train run.toml --fresh --steps 1 \
    --set runtime.device=auto --set train.out_dir=auto_out >auto.out 2>&1 ||
    { cat auto.out; fail "device = auto with no CUDA module did not train on the CPU"; }
grep -q 'running on the CPU' auto.out || { cat auto.out; fail "auto: no fallback line"; }
grep -q 'device=cpu (auto)' auto.out || { cat auto.out; fail "auto: not resolved to cpu"; }

echo "cli_e2e: all checks passed"
