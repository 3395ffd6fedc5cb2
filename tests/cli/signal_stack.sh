#!/usr/bin/env bash
# `trainrt train`'s SIGINT handler runs on its own alternate stack, not on the interrupted
# one: signal_stack_shim.c, preloaded, sends SIGINT from inside trainrt_session_train() with
# rsp pointing into a buffer (what oneDNN's JIT f32 GEMM does with a heap buffer, oneDNN issue
# 4845) and says whether the buffer was written. The run must then stop as after any SIGINT
# (before its first step; without the shim it would train its 20 steps and exit 0).
#   usage: signal_stack.sh TRAINRT_BINARY SHIM SOURCE_DIR SCRATCH_DIR
set -euo pipefail

TRAINRT=$(realpath "$1")
SHIM=$(realpath "$2")
SRC=$3
WORK=$4

fail() {
    cat train.err >&2 2>/dev/null || true
    echo "FAIL: $*" >&2
    exit 1
}

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
head -c 20000 "$SRC/examples/data/tinyshakespeare.txt" >small.txt
"$TRAINRT" prepare --text small.txt --out data --val-fraction 0.1 >/dev/null
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
seq_len = 32
steps = 20
eval_every = 0
out_dir = "run"
[runtime]
threads = 1
TOML

# An ASan build checks that its runtime is the first library loaded; the shim comes first
# here (it is built without sanitizers and needs none).
rc=0
LD_PRELOAD=$SHIM ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$TRAINRT" train run.toml --fresh >train.out 2>train.err || rc=$?
grep -q '^signal_stack_shim: ' train.err || fail "the shim was not loaded (or did not run)"
grep -q 'signal_stack_shim: the handler left the interrupted stack alone' train.err ||
    fail "the SIGINT handler wrote into the memory the interrupted rsp pointed at"
grep -q '^trainrt: SIGINT: stopping' train.err || fail "the handler did not run"
[ "$rc" -eq 130 ] || fail "exit $rc, expected 130 after SIGINT"
grep -q '^\[trainrt\] checkpoint: .*run/step_00000000' train.err || fail "no checkpoint after the stop"
echo "ok: the handler ran off the interrupted stack; exit $rc"
