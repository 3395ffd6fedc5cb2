#!/usr/bin/env bash
# Builds the C# binding with Mono's mcs, runs its self-checking tests and the example.
#   bindings/csharp/test.sh WORK
# Run by tests/bindings/run_binding.sh, which sets LD_LIBRARY_PATH, TRAINRT_TEST_CONFIG,
# TRAINRT_TEST_EXPECTED and TRAINRT_TEST_TMP.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${1:?usage: test.sh WORK}
OUT=$WORK/csharp-build
mkdir -p "$OUT"
start=$(date +%s.%N)

mcs -nologo -warnaserror -target:library -out:"$OUT/Trainrt.dll" "$HERE"/src/*.cs
cp "$HERE/Trainrt.dll.config" "$OUT/"
mcs -nologo -warnaserror -out:"$OUT/TrainrtTests.exe" -r:"$OUT/Trainrt.dll" "$HERE"/tests/*.cs
cp "$HERE/Trainrt.dll.config" "$OUT/TrainrtTests.exe.config"
mcs -nologo -warnaserror -out:"$OUT/TrainrtExample.exe" -r:"$OUT/Trainrt.dll" "$ROOT"/examples/csharp/*.cs
cp "$HERE/Trainrt.dll.config" "$OUT/TrainrtExample.exe.config"

mono --debug "$OUT/TrainrtTests.exe"

# The example: 3 steps of the test config, one loss line per step.
example_log=$WORK/csharp-example.txt
mono --debug "$OUT/TrainrtExample.exe" "$TRAINRT_TEST_CONFIG" 3 >"$example_log"
cat "$example_log"
lines=$(grep -c '^step ' "$example_log" || true)
if [ "$lines" != 3 ]; then
  echo "test.sh: the example printed $lines step lines, expected 3" >&2
  exit 1
fi
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "csharp binding: all tests passed in %.1f s\n", e - s }'
