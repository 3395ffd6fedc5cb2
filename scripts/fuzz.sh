#!/usr/bin/env bash
# The libFuzzer targets of tests/fuzz (docs/FUZZING.md): configures and builds build-fuzz/
# with clang (only the fuzzers and the instrumented modules they need; -O1 -g, ASan + UBSan +
# libFuzzer), then
#   bash scripts/fuzz.sh --ci                      the ctest label `fuzz`: every committed
#                                                  input replayed, then each target fuzzed
#                                                  for FUZZ_SECONDS (default 30) — .ci/run
#   bash scripts/fuzz.sh --long SECONDS [TARGET…]  each target (default: all) fuzzed for
#                                                  SECONDS, one after another, from a working
#                                                  corpus in build-fuzz/long/TARGET/ that
#                                                  persists between runs; prints execs/s,
#                                                  coverage, corpus size and crashes
#   bash scripts/fuzz.sh --build                   configure and build only
# Environment: BUILD_DIR (build-fuzz), JOBS (build jobs, nproc), CTEST_JOBS (targets fuzzed at
# once in --ci, nproc), FUZZ_SECONDS (--ci, per target, 30), FUZZ_KEEP_GOING=1 (--long: go on
# after a crash, keeping every crash input; docs/FUZZING.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=$(realpath -m "${BUILD_DIR:-build-fuzz}")
JOBS=${JOBS:-$(nproc)}
CTEST_JOBS=${CTEST_JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
TARGETS=(fuzz_config fuzz_safetensors fuzz_llmc fuzz_token_shard fuzz_checkpoint fuzz_peft_adapter
         fuzz_report_metrics)

mode=${1:-}
case "$mode" in
  --ci|--build) ;;
  --long)
    seconds=${2:?usage: fuzz.sh --long SECONDS [TARGET...]}
    shift 2
    [ $# -gt 0 ] && TARGETS=("$@")
    ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac

for tool in clang clang++; do
  command -v "$tool" >/dev/null ||
    { echo "fuzz.sh: $tool not found (Debian 12: apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
done
# RelWithDebInfo for the project's own flags; the fuzz targets add -O1 -g and the sanitizers.
# CUDA, CLI and unit tests are off: this tree holds the fuzzers only.
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DTRAINRT_FUZZ=ON -DTRAINRT_FUZZ_SECONDS="$FUZZ_SECONDS" \
  -DTRAINRT_BUILD_TESTS=OFF -DTRAINRT_BUILD_CLI=OFF -DTRAINRT_CUDA=OFF -DTRAINRT_MPI=OFF >/dev/null
cmake --build "$BUILD_DIR" --target fuzzers -j "$JOBS"
[ "$mode" = --build ] && exit 0

if [ "$mode" = --ci ]; then
  rc=0
  ctest --test-dir "$BUILD_DIR" -L fuzz --output-on-failure -j "$CTEST_JOBS" || rc=$?
  # One line per target (execs, exec/s, coverage, crashes), passed ones included.
  grep -hE '^fuzz_[a-z_]+: [0-9]+s, ' "$BUILD_DIR/Testing/Temporary/LastTest.log" || true
  exit $rc
fi

status=0
for t in "${TARGETS[@]}"; do
  [ -x "$BUILD_DIR/tests/fuzz/$t" ] || { echo "fuzz.sh: no target $t (${TARGETS[*]})" >&2; exit 2; }
  FUZZ_SRC=$PWD/tests/fuzz FUZZ_MAX_LEN=$(sed -n "s/^trainrt_fuzz_target($t MAX_LEN \([0-9]*\).*/\1/p" tests/fuzz/CMakeLists.txt) \
    bash tests/fuzz/run_fuzz.sh long "$BUILD_DIR/tests/fuzz/$t" "$t" "$seconds" "$BUILD_DIR/long/$t" ||
    status=1
done
exit $status
