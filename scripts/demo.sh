#!/usr/bin/env bash
# From a fresh clone: install dependencies, build, tokenize tiny Shakespeare and train the
# demo model on the CPU, then print a sample of its text. Extra arguments go to `trainrt
# train` (e.g. --steps 200). Ctrl-C stops (mid-step) and writes a checkpoint;
# running the script again continues from out/shakespeare/latest (--fresh starts over).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The CLI in build/ (the folder README's commands use). A build/ configured already keeps its
# options (tests on or off, as its owner chose): only the CLI target is built.
if [ -f build/CMakeCache.txt ]; then
  echo "demo: building the CLI in build/ (configured already; its options are kept)"
else
  echo "demo: configuring build/ (Release, library + CLI) and building the CLI"
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build build -j "$(nproc)" --target trainrt_cli
if [ ! -f examples/data/shakespeare/train.bin ]; then
  ./build/trainrt prepare --text examples/data/tinyshakespeare.txt \
    --out examples/data/shakespeare --val-fraction 0.1
fi
./build/trainrt train examples/configs/shakespeare.toml "$@"
echo "--- sample (trainrt sample out/shakespeare --prompt ROMEO: --temperature 0.8 --top-k 40)"
./build/trainrt sample out/shakespeare --prompt "ROMEO:" --tokens 400 --temperature 0.8 --top-k 40
