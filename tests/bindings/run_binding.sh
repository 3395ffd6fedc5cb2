#!/usr/bin/env bash
# Runs one language binding's tests and example against the freshly built libtrainrt.
#   run_binding.sh LANG LIBDIR SOURCE_DIR WORK REFERENCE_EXE TRAINRT_CLI [EXAMPLE_EXE]
# LANG: rust | go | csharp | python, or cpp (runs EXAMPLE_EXE, the C++ example, on the config; the
# wrapper's own tests are GoogleTest cases in tests/unit/cpp). Prepares a small byte-level dataset and config (shared by every
# binding), writes the C API's own per-step losses for that config (the bindings must
# reproduce them bit for bit), then runs the binding's test suite and its example.
# The test suites read (environment):
#   TRAINRT_LIB_DIR      folder holding libtrainrt.so
#   TRAINRT_INCLUDE_DIR  folder holding trainrt/trainrt.h
#   TRAINRT_TEST_CONFIG  path of tiny.toml (train + val data, 1 thread, 8 steps)
#   TRAINRT_TEST_EXPECTED  lines "STEP LOSS_BITS" (16 hex digits: the double's IEEE bits)
#   TRAINRT_TEST_TMP     a scratch folder of the binding's own
#   TRAINRT_CLI          the trainrt command-line tool of the same build
set -euo pipefail
LANG_NAME=$1 LIBDIR=$2 SRC=$3 WORK=$4 REFERENCE=$5 CLI=$6 EXAMPLE=${7:-}
rm -rf "$WORK"
mkdir -p "$WORK/tmp"
"$CLI" prepare --text "$SRC/examples/data/tinyshakespeare.txt" --out "$WORK/data" >/dev/null
cat >"$WORK/tiny.toml" <<TOML
# Written by tests/bindings/run_binding.sh: a tiny byte-level GPT for the binding tests.
[model]
vocab_size = 256
context_length = 32
n_layer = 2
n_head = 2
d_model = 32
seed = 7

[data]
train = "data/train.bin"
val = "data/val.bin"
sampler = "random"
seed = 3

[train]
batch_size = 4
seq_len = 32
steps = 8
eval_every = 0
eval_batches = 2

[optim]
lr = 0.003
warmup_steps = 2

[runtime]
threads = 1
log_every = 1
TOML
"$REFERENCE" "$WORK/tiny.toml" 8 >"$WORK/expected_losses.txt"
export TRAINRT_LIB_DIR=$LIBDIR
export TRAINRT_INCLUDE_DIR=$SRC/include
export TRAINRT_TEST_CONFIG=$WORK/tiny.toml
export TRAINRT_TEST_EXPECTED=$WORK/expected_losses.txt
export TRAINRT_TEST_TMP=$WORK/tmp
export TRAINRT_CLI=$CLI
export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
case "$LANG_NAME" in
  rust) exec bash "$SRC/bindings/rust/test.sh" "$WORK" ;;
  go) exec bash "$SRC/bindings/go/test.sh" "$WORK" ;;
  csharp) exec bash "$SRC/bindings/csharp/test.sh" "$WORK" ;;
  python) exec bash "$SRC/bindings/python/test.sh" "$WORK" ;;
  cpp) exec "$EXAMPLE" "$TRAINRT_TEST_CONFIG" 3 ;;
  *) echo "run_binding.sh: unknown language '$LANG_NAME'" >&2; exit 2 ;;
esac
