#!/usr/bin/env bash
# Tests of the Rust binding: builds warning-free, runs trainrt/tests/*.rs (the C API's
# reference losses bit for bit, config, session, callbacks, threads, tokenizer, overhead) and
# the example.
#   bindings/rust/test.sh WORK   (as tests/bindings/run_binding.sh calls it, env set)
#   bindings/rust/test.sh        (standalone: prepares the fixture against ./build, or
#                                 $TRAINRT_LIB_DIR, through run_binding.sh)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export PATH=$HOME/.cargo/bin:$PATH

if [ -z "${TRAINRT_TEST_CONFIG:-}" ]; then
  LIBDIR=$(cd "${TRAINRT_LIB_DIR:-$ROOT/build}" && pwd)
  WORK=${1:-$LIBDIR/bindings-work/rust}
  mkdir -p "$WORK-ref"
  cc -O2 -I"$ROOT/include" "$ROOT/tests/bindings/reference_losses.c" -L"$LIBDIR" -ltrainrt \
     -Wl,-rpath,"$LIBDIR" -o "$WORK-ref/reference_losses"
  exec bash "$ROOT/tests/bindings/run_binding.sh" rust "$LIBDIR" "$ROOT" "$WORK" \
       "$WORK-ref/reference_losses" "$LIBDIR/trainrt"
fi

WORK=$(cd "${1:?usage: test.sh WORK}" && pwd)
export CARGO_TARGET_DIR=$WORK/target
export RUSTFLAGS="-D warnings"
export RUSTDOCFLAGS="-D warnings"
: "${TRAINRT_LIB_DIR:?}"

# The #[repr(C)] structs have the C compiler's sizes.
cat >"$WORK/sizes.c" <<'C'
#include <stddef.h>
#include <stdio.h>
#include <trainrt/trainrt.h>
int main(void) {
    printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu\n", sizeof(trainrt_step_result),
           sizeof(trainrt_metrics), sizeof(trainrt_progress), sizeof(trainrt_sample_options),
           sizeof(trainrt_model_info), sizeof(trainrt_prepare_options),
           sizeof(trainrt_prepare_result), sizeof(trainrt_param_info),
           offsetof(trainrt_param_info, shape), offsetof(trainrt_param_info, offset),
           offsetof(trainrt_param_info, trainable), sizeof(trainrt_eval_result));
    return 0;
}
C
cc -I"$ROOT/include" "$WORK/sizes.c" -o "$WORK/sizes"
sizes=$("$WORK/sizes")
[ "$sizes" = "64 128 96 48 64 88 88 72 16 56 68 40" ] || { echo "struct sizes differ from trainrt-sys: $sizes" >&2; exit 1; }

cd "$HERE"
cargo build --offline --release --all-targets
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --offline --release --all-targets -- -D warnings
fi
cargo test --offline --release
cargo test --offline --release -q --test overhead -- --nocapture 2>&1 | grep '^overhead:'

# The example: one line per step, for every step of the config. It is a crate of its own
# depending on the binding (README "Your own crate"): run without LD_LIBRARY_PATH, it finds
# libtrainrt through the rpath its build.rs sets, as a user's program must.
cd "$ROOT/examples/rust"
cargo build --offline --release
out=$(env -u LD_LIBRARY_PATH "$CARGO_TARGET_DIR/release/train_rust" "$TRAINRT_TEST_CONFIG")
echo "$out"
# As the README runs it: a plain `cargo run` (the crate has two binaries: default-run).
env -u LD_LIBRARY_PATH cargo run --offline --release -q -- "$TRAINRT_TEST_CONFIG" 2 >"$WORK/cargo-run.txt" ||
  { cat "$WORK/cargo-run.txt"; echo "example: cargo run -- CONFIG failed" >&2; exit 1; }
grep -q '^step ' "$WORK/cargo-run.txt" || { echo "example: cargo run printed no step line" >&2; exit 1; }
steps=$(wc -l <"$TRAINRT_TEST_EXPECTED")
[ "$(grep -c '^step ' <<<"$out")" -eq "$steps" ] || { echo "example: expected $steps step lines" >&2; exit 1; }
# The LoRA example: fine-tune adapters on an exported base, export them (PEFT) and the merged
# model, and check both reload to the fine-tuned model.
"$CARGO_TARGET_DIR/release/lora_rust" "$TRAINRT_TEST_CONFIG" "$WORK/lora"

echo "rust binding: all tests passed"
