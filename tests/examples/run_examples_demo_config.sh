#!/usr/bin/env bash
# The C and C++ examples on the project's own demo config (examples/configs/shakespeare.toml),
# as the README and their usage lines show them: they clear train.out_dir (they write nothing
# into the demo's run folder), so they must clear train.checkpoint_every too, which the library
# refuses without an out_dir. A few steps each; nothing may appear in the config's out_dir.
#   usage: run_examples_demo_config.sh EXAMPLE_C EXAMPLE_CPP TRAINRT_CLI SOURCE_DIR SCRATCH_DIR
set -euo pipefail
EXAMPLE_C=$1 EXAMPLE_CPP=$2 TRAINRT=$3 SRC=$4 WORK=$5
rm -rf "$WORK"
mkdir -p "$WORK/examples/configs" "$WORK/examples/data"
# The config's paths are relative to its folder: the same layout as the source tree.
cp "$SRC/examples/configs/shakespeare.toml" "$WORK/examples/configs/"
"$TRAINRT" prepare --text "$SRC/examples/data/tinyshakespeare.txt" \
    --out "$WORK/examples/data/shakespeare" --val-fraction 0.1 >/dev/null
cd "$WORK"
run() {
    local name=$1
    shift
    "$@" >"$name.out" 2>"$name.err" || {
        cat "$name.out" "$name.err"
        echo "FAIL: $name exited non-zero on examples/configs/shakespeare.toml"
        exit 1
    }
    grep -q "^step 5: loss" "$name.out" || { cat "$name.out"; echo "FAIL: $name: no step 5"; exit 1; }
}
run example_c "$EXAMPLE_C" examples/configs/shakespeare.toml 5 ckpt
grep -q "resumed loss" example_c.out || { echo "FAIL: example_c: no resumed step"; exit 1; }
run example_cpp "$EXAMPLE_CPP" examples/configs/shakespeare.toml 5
[ ! -e out ] || { echo "FAIL: the examples wrote into the config's out_dir"; ls -R out; exit 1; }
echo "examples on the demo config: ok"
