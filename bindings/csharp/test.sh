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

# Without libtrainrt on the loader's path: a TrainrtException that says what to set, not
# Mono's bare DllNotFoundException (unless a libtrainrt is installed system-wide).
if ldconfig -p 2>/dev/null | grep -q 'libtrainrt\.so\.0 '; then
  echo "test.sh: libtrainrt.so.0 is installed system-wide; the missing-library check is skipped"
else
  mkdir -p "$WORK/no-lib"
  rc=0
  LD_LIBRARY_PATH=$WORK/no-lib mono "$OUT/TrainrtExample.exe" "$TRAINRT_TEST_CONFIG" 1 \
    >"$WORK/no-lib.out" 2>"$WORK/no-lib.err" || rc=$?
  if [ "$rc" != 1 ] || ! grep -q '^error: libtrainrt could not be loaded' "$WORK/no-lib.err" ||
     ! grep -q 'set LD_LIBRARY_PATH to the folder holding libtrainrt.so.0' "$WORK/no-lib.err" ||
     grep -q 'Unhandled Exception' "$WORK/no-lib.err"; then
    cat "$WORK/no-lib.err" >&2
    echo "test.sh: without the library: exit $rc and not the TrainrtException expected" >&2
    exit 1
  fi
  head -c 600 "$WORK/no-lib.err"; echo
fi
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "csharp binding: all tests passed in %.1f s\n", e - s }'
