#!/usr/bin/env bash
# Data parallelism through mpirun and libtrainrt-mpi (docs/DISTRIBUTED.md), on the CPU:
#   2 ranks x B=4 train as 1 rank x B=8 (train and val losses within 1e-6, relative), on token
#   data and on prepare --chat data (loss masks; data.packing true and false);
#   2 ranks repeat bit for bit; a 2-rank checkpoint resumes at 2 ranks (bit for bit) and at
#   1 rank (within 1e-6), and a 1-rank checkpoint at 2 ranks, without a config warning at the same
#   global batch; ZeRO-1 (dist.zero = 1) trains as dist.zero = 0 within 1e-6 and its
#   checkpoint resumes in one process; a killed rank, a hung rank (dist.timeout) and a rank with another
#   config end the job within 30 s; dist.backend = "mpi" without the module is a clear error;
#   a host program that runs MPI itself passes its own communicator (trainrt_config_set_mpi_comm).
#   usage: dist_mpirun.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR MPIRUN [LIBTRAINRT]
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3
MPIRUN=$4
LIBTRAINRT=${5:-}
TEXT="$SRC/examples/data/tinyshakespeare.txt"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }

# Two ranks on any machine (2 cores or 1), as root too (CI).
mpirun2() {
    local root=()
    [ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
    "$MPIRUN" "${root[@]}" --oversubscribe -np 2 "$@"
}

# losses FILE SPLIT: "step loss" lines of metrics.jsonl's train or val rows.
losses() {
    grep "\"split\": \"$2\"" "$1" |
        sed -n 's/.*"step": *\([0-9]*\).*"loss": *\([-0-9.eE+na]*\).*/\1 \2/p'
}

# same_within FILE_A FILE_B SPLIT TOL: equal steps, losses within TOL relative.
same_within() {
    local a b
    a=$(losses "$1" "$3")
    b=$(losses "$2" "$3")
    [ -n "$a" ] || fail "$1: no $3 rows"
    [ "$(cut -d' ' -f1 <<< "$a")" = "$(cut -d' ' -f1 <<< "$b")" ] ||
        fail "$1 and $2 log other steps for $3"
    paste -d' ' <(echo "$a") <(echo "$b") | awk -v tol="$4" -v what="$3" '
        { d = $2 - $4; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2;
          if (d > tol * m) { printf "step %s %s: %s vs %s\n", $1, what, $2, $4; bad = 1 }
          if (d / m > worst) worst = d / m }
        END { printf "  %s: %d steps, worst relative difference %.2e\n", what, NR, worst;
              exit bad }' || fail "$1 vs $2: $3 differs by more than $4"
}

# wait_gone SECONDS PID: the job PID (mpirun) ends within SECONDS.
wait_gone() {
    local limit=$1 pid=$2 t0
    t0=$(date +%s)
    while kill -0 "$pid" 2>/dev/null; do
        [ $(($(date +%s) - t0)) -le "$limit" ] || {
            pkill -9 -f "$WORK/.*trainrt|trainrt train" 2>/dev/null || true
            fail "the job was still running after $limit s"
        }
        sleep 0.2
    done
    echo "  ended after $(($(date +%s) - t0)) s"
}

# rank_pid RANK: the PID of that rank's trainrt (Open MPI puts the rank in its environment).
rank_pid() {
    local p
    for p in $(pgrep -f "trainrt train" || true); do
        if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

[ -x "$TRAINRT" ] || fail "no trainrt binary at $TRAINRT"
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
"$TRAINRT" prepare --text "$TEXT" --out data > /dev/null
cat > run.toml <<'EOF'
[model]
n_layer = 2
n_head = 4
d_model = 64
context_length = 64
[data]
train = "data/train.bin"
val = "data/val.bin"
[train]
batch_size = 4
seq_len = 64
steps = 10
eval_every = 5
eval_batches = 2
[optim]
warmup_steps = 2
[runtime]
threads = 1
log_every = 1
EOF

step "1 rank x B=8 against 2 ranks x B=4 (random sampler, and sequential with grad_accum 2)"
"$TRAINRT" train run.toml --set train.batch_size=8 --set train.out_dir=one 2> one.log
mpirun2 "$TRAINRT" train run.toml --set train.out_dir=two > two.log 2>&1 || {
    cat two.log
    fail "2 ranks: mpirun failed"
}
grep -q "\[rank 0/2\]" two.log || fail "2 ranks: no [rank 0/2] in the log (did they run alone?)"
[ "$(grep -c '^step 10/10 | loss' two.log)" = 1 ] || fail "2 ranks: progress printed by other than rank 0"
same_within one/metrics.jsonl two/metrics.jsonl train 1e-6
same_within one/metrics.jsonl two/metrics.jsonl val 1e-6
seq=(--set data.sampler=sequential --set train.grad_accum=2)
"$TRAINRT" train run.toml "${seq[@]}" --set train.batch_size=8 --set train.out_dir=one_seq 2> one_seq.log
mpirun2 "$TRAINRT" train run.toml "${seq[@]}" --set train.out_dir=two_seq > two_seq.log 2>&1 ||
    { cat two_seq.log; fail "2 ranks, sequential: mpirun failed"; }
same_within one_seq/metrics.jsonl two_seq/metrics.jsonl train 1e-6

step "instruction-tuning data (prepare --chat), packed and padded: 1 rank x B=8 against 2 ranks x B=4"
mkdir chat_model
"$TRAINRT" tokenizer train --vocab-size 320 --text "$TEXT" --special "<|eot|>" \
    --out chat_model/tokenizer.json > /dev/null
cat > chat_model/tokenizer_config.json <<'EOF'
{"eos_token": "<|eot|>", "chat_template": "{% for m in messages %}<{{ m['role'][0] }}>{{ m['content'] }}<|eot|>{% endfor %}{% if add_generation_prompt %}<a>{% endif %}"}
EOF
# 80 short conversations (the first 12 bytes of the play's lines: one asked, the next
# answered; every fourth goes on with a second exchange), so a packed row holds several.
tr -d '"\\' < "$TEXT" | awk '
    function msg(role, text) { return "{\"role\": \"" role "\", \"content\": \"" text "\"}" }
    $0 == "" { next }
    { n++; i = (n - 1) % 5; $0 = substr($0, 1, 12) }
    n > 400 { next }
    i == 0 { q = $0 }
    i == 1 { line = msg("user", q) ", " msg("assistant", $0) }
    i == 2 { q = $0 }
    i == 3 && n % 20 == 4 { line = line ", " msg("user", q) ", " msg("assistant", $0) }
    i == 4 { print "{\"messages\": [" line "]}" }' > chat.jsonl
"$TRAINRT" prepare --chat chat.jsonl --tokenizer chat_model --out chat_data --val-fraction 0.2 \
    > chat_prepare.log || { cat chat_prepare.log; fail "prepare --chat failed"; }
for packing in true false; do
    chat=(--set data.train=chat_data/train.bin --set data.val=chat_data/val.bin
          --set data.packing=$packing --set model.vocab_size=320 --set train.grad_accum=2)
    "$TRAINRT" train run.toml "${chat[@]}" --set train.batch_size=8 \
        --set train.out_dir=one_chat_$packing 2> one_chat_$packing.log ||
        { cat one_chat_$packing.log; fail "1 rank on prepare --chat data failed"; }
    grep -q "loss masks in [0-9]* rows" one_chat_$packing.log ||
        fail "1 rank did not read the examples: $(cat one_chat_$packing.log)"
    mpirun2 "$TRAINRT" train run.toml "${chat[@]}" --set train.out_dir=two_chat_$packing \
        > two_chat_$packing.log 2>&1 ||
        { cat two_chat_$packing.log; fail "2 ranks on prepare --chat data: mpirun failed"; }
    grep -q "\[rank 0/2\]" two_chat_$packing.log || fail "2 ranks on prepare --chat data ran alone"
    echo "  data.packing = $packing: $(grep -o 'data.train: [0-9]* examples[^;]*' one_chat_$packing.log)"
    same_within one_chat_$packing/metrics.jsonl two_chat_$packing/metrics.jsonl train 1e-6
    same_within one_chat_$packing/metrics.jsonl two_chat_$packing/metrics.jsonl val 1e-6
done

step "2 ranks again: the same bits"
mpirun2 "$TRAINRT" train run.toml --set train.out_dir=two_again > two_again.log 2>&1 ||
    { cat two_again.log; fail "2 ranks again: mpirun failed"; }
same_within two/metrics.jsonl two_again/metrics.jsonl train 0
cmp two/step_00000010/model.safetensors two_again/step_00000010/model.safetensors ||
    fail "2 ranks twice: the checkpoints' weights differ"
echo "  model.safetensors identical"

step "a 2-rank checkpoint at step 5 resumes at 2 ranks (bit for bit) and at 1 rank x B=8"
mpirun2 "$TRAINRT" train run.toml --set train.out_dir=half --steps 5 > half.log 2>&1 ||
    { cat half.log; fail "2 ranks, 5 steps: mpirun failed"; }
[ -d half/step_00000005 ] || fail "no checkpoint half/step_00000005"
cp -r half half1
mpirun2 "$TRAINRT" train run.toml --set train.out_dir=half > resume2.log 2>&1 ||
    { cat resume2.log; fail "resume at 2 ranks failed"; }
grep -q "resumed from" resume2.log || fail "2 ranks did not resume"
same_within two/metrics.jsonl half/metrics.jsonl train 0
"$TRAINRT" train run.toml --set train.batch_size=8 --set train.out_dir=half1 2> resume1.log ||
    { cat resume1.log; fail "resume at 1 rank failed"; }
same_within two/metrics.jsonl half1/metrics.jsonl train 1e-6
# 1 x 8 is the global batch of 2 x 4: not a config that differs.
! grep -q "differs from the one it was trained with" resume1.log ||
    { cat resume1.log; fail "resume at 1 rank x B=8 warned that the config differs"; }

step "a 1-rank B=8 checkpoint goes on at 2 ranks x B=4 without a config warning (README's mpirun)"
"$TRAINRT" train run.toml --set train.batch_size=8 --set train.out_dir=grow --steps 5 2> grow1.log ||
    { cat grow1.log; fail "1 rank, 5 steps failed"; }
mpirun2 "$TRAINRT" train run.toml --set train.out_dir=grow > grow2.log 2>&1 ||
    { cat grow2.log; fail "resume at 2 ranks x B=4 failed"; }
grep -q "resumed from" grow2.log || fail "2 ranks did not resume the 1-rank checkpoint"
! grep -q "differs from the one it was trained with" grow2.log ||
    { cat grow2.log; fail "2 ranks x B=4 from 1 x 8 warned that the config differs"; }
mpirun2 "$TRAINRT" train run.toml --set train.out_dir=grow --set train.steps=12 \
    --set train.batch_size=2 > shrink2.log 2>&1 || { cat shrink2.log; fail "2 ranks x B=2 failed"; }
grep -q "the global batch (train.batch_size x ranks) = 2 x 2 (checkpoint: 4 x 2)" shrink2.log ||
    { cat shrink2.log; fail "a global batch that differs was not named"; }

step "ZeRO-1: as dist.zero = 0 (within 1e-6), and its step-5 checkpoint resumes at 1 rank"
mpirun2 "$TRAINRT" train run.toml --set dist.zero=1 --set train.out_dir=zero > zero.log 2>&1 ||
    { cat zero.log; fail "ZeRO-1: mpirun failed"; }
same_within two/metrics.jsonl zero/metrics.jsonl train 1e-6
same_within two/metrics.jsonl zero/metrics.jsonl val 1e-6
mpirun2 "$TRAINRT" train run.toml --set dist.zero=1 --set train.out_dir=zero_half --steps 5 \
    > zero_half.log 2>&1 || { cat zero_half.log; fail "ZeRO-1, 5 steps: mpirun failed"; }
"$TRAINRT" train run.toml --set train.batch_size=8 --set train.out_dir=zero_half 2> zero_resume1.log ||
    { cat zero_resume1.log; fail "ZeRO-1 checkpoint: resume at 1 rank failed"; }
grep -q "resumed from" zero_resume1.log || fail "ZeRO-1 checkpoint: 1 rank did not resume"
same_within zero/metrics.jsonl zero_half/metrics.jsonl train 1e-6

step "a rank killed mid-run: the job ends within 30 s"
mpirun2 "$TRAINRT" train run.toml --set train.steps=1000000 --set train.eval_every=0 \
    > killed.log 2>&1 &
job=$!
for _ in $(seq 100); do grep -q "^step 3/" killed.log && break; sleep 0.1; done
victim=$(rank_pid 1) || fail "no rank 1 process found"
kill -9 "$victim"
wait_gone 30 "$job"
rc=0
wait "$job" || rc=$?
[ "$rc" -ne 0 ] || fail "killed rank: mpirun exited 0"

step "a rank that hangs (stopped): the other ends the job after dist.timeout = 3"
mpirun2 "$TRAINRT" train run.toml --set train.steps=1000000 --set train.eval_every=0 \
    --set dist.timeout=3 > hung.log 2>&1 &
job=$!
for _ in $(seq 100); do grep -q "^step 3/" hung.log && break; sleep 0.1; done
victim=$(rank_pid 1) || fail "no rank 1 process found"
kill -STOP "$victim"
wait_gone 30 "$job"
grep -q "dist.timeout" hung.log || { cat hung.log; fail "hung rank: no dist.timeout message"; }

step "ranks with different configs are refused"
rc=0
mpirun2 bash -c 'lr=0.0003; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && lr=0.001
    exec "$0" train run.toml --set optim.lr=$lr' "$TRAINRT" > differ.log 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "different configs: mpirun exited 0"
grep -q "runs another config than rank 0" differ.log || { cat differ.log; fail "different configs: no message"; }

step "dist.backend = \"mpi\" without the module: a clear error"
rc=0
TRAINRT_MPI_MODULE=/nonexistent/libtrainrt-mpi.so "$TRAINRT" train run.toml \
    --set dist.backend=mpi > nomodule.log 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "no module: exit 0"
grep -q "needs the module libtrainrt-mpi.so" nomodule.log || { cat nomodule.log; fail "no module: no message"; }

step "a host's own communicator (trainrt_config_set_mpi_comm): every rank, or each alone"
if [ -n "$LIBTRAINRT" ] && command -v mpicc >/dev/null; then
    libdir=$(dirname "$LIBTRAINRT")
    mpicc -std=c11 -Wall -Werror -o host_comm "$SRC/tests/cli/dist_host_comm.c" -I"$SRC/include" \
        -L"$libdir" -ltrainrt -Wl,-rpath,"$libdir"
    mpirun2 ./host_comm run.toml same > same.out 2> same.err || { cat same.err; fail "host comm (same) failed"; }
    [ "$(grep -c 'world 2' same.out)" = 2 ] || { cat same.out same.err; fail "host comm (same): not a world of 2"; }
    mpirun2 ./host_comm run.toml split > split.out 2> split.err || { cat split.err; fail "host comm (split) failed"; }
    [ "$(grep -c 'world 1' split.out)" = 2 ] || { cat split.out split.err; fail "host comm (split): not 2 worlds of 1"; }
    # Each rank alone trains as one process with B = 4 does.
    alone=$("$TRAINRT" train run.toml --steps 3 --set train.out_dir=alone 2>&1 | sed -n 's/^step 3\/.*loss \([0-9.]*\).*/\1/p' | head -1)
    [ -n "$alone" ] || fail "host comm: no step 3 loss from the process alone"
    for l in $(awk '{print $6}' split.out); do
        [ "$(printf '%.4f' "$l")" = "$alone" ] || fail "host comm (split): loss $l, alone $alone"
    done
    echo "  same: $(tr '\n' ' ' < same.out)"
    echo "  split: $(tr '\n' ' ' < split.out) (one process alone: step 3 loss $alone)"
else
    echo "  skipped: no mpicc or no library path given"
fi

echo "dist_mpirun: all checks passed"
