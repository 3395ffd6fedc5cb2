#!/usr/bin/env bash
# Runs one libFuzzer target of tests/fuzz (docs/FUZZING.md). Used by the ctest label `fuzz`
# and by scripts/fuzz.sh.
#   run_fuzz.sh replay BINARY TARGET
#       every input of regressions/TARGET/ and corpus/TARGET/ once, no fuzzing.
#   run_fuzz.sh fuzz BINARY TARGET SECONDS WORKDIR
#       fuzzes for SECONDS from a fresh copy of corpus/TARGET/ in WORKDIR/corpus (plus the
#       regressions, read only); new inputs go to the copy, never to the source tree.
#   run_fuzz.sh long BINARY TARGET SECONDS WORKDIR
#       the same, but keeps WORKDIR/corpus from earlier runs (the corpus grows run to run).
# Environment: FUZZ_SRC (tests/fuzz), FUZZ_MAX_LEN, FUZZ_RSS_MB (default 2048),
# FUZZ_TIMEOUT (seconds per input before it counts as a hang, default 10),
# FUZZ_SEED and FUZZ_RUNS (fuzz: libFuzzer's -seed and -runs; with both set a run is nearly the
# same sequence of inputs on every machine, ended by SECONDS only on a slow one — so CI's verdict
# depends on the commit, not on the machine's speed or luck; seed 0 = random),
# FUZZ_KEEP_GOING=1 (fuzz/long: libFuzzer's fork mode, which records a crash and goes on
# fuzzing, so a known open bug does not end a long run; every crash input is kept).
# Exit status 0 = no crash, leak, sanitizer report, hang or out-of-memory.
set -uo pipefail
mode=$1 bin=$2 target=$3
src=${FUZZ_SRC:-$(cd "$(dirname "$0")" && pwd)}
rss=${FUZZ_RSS_MB:-2048}
per_input=${FUZZ_TIMEOUT:-10}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# The targets' scratch files (fuzz_util.h) go to a folder of this run, removed on exit even
# when a crash leaves them behind.
shm=/dev/shm; [ -w "$shm" ] || shm=${TMPDIR:-/tmp}
export TRAINRT_FUZZ_TMP
TRAINRT_FUZZ_TMP=$(mktemp -d "$shm/trainrt-fuzz.XXXXXX")
trap 'rm -rf "$TRAINRT_FUZZ_TMP"' EXIT
common=(-rss_limit_mb="$rss" -timeout="$per_input")
[ -n "${FUZZ_MAX_LEN:-}" ] && common+=(-max_len="$FUZZ_MAX_LEN")

inputs() {  # committed inputs of a folder (docs and .gitkeep are not inputs)
  [ -d "$1" ] && find "$1" -maxdepth 1 -type f ! -name 'README*' ! -name '.*' | sort
}

case "$mode" in
  replay)
    mapfile -t files < <(inputs "$src/regressions/$target"; inputs "$src/corpus/$target")
    if [ ${#files[@]} -eq 0 ]; then echo "$target: no inputs to replay"; exit 0; fi
    echo "$target: replaying ${#files[@]} inputs (regressions/$target, corpus/$target)"
    out=$("$bin" "${common[@]}" "${files[@]}" 2>&1); rc=$?
    if [ $rc -ne 0 ]; then
      echo "$out" | tail -n 60
      echo "$target: FAILED replaying a committed input (rc $rc); the input is named above"
      exit 1
    fi
    echo "$target: ${#files[@]} inputs ok"
    ;;
  fuzz|long)
    seconds=$4 work=$5
    [ "$mode" = fuzz ] && rm -rf "$work"
    mkdir -p "$work/corpus" "$work/artifacts"
    for f in $(inputs "$src/corpus/$target"); do cp -n "$f" "$work/corpus/" 2>/dev/null || true; done
    dirs=("$work/corpus")
    [ -d "$src/regressions/$target" ] && dirs+=("$src/regressions/$target")
    dict=()
    [ -f "$src/$target.dict" ] && dict=(-dict="$src/$target.dict")
    keep=()
    [ "${FUZZ_KEEP_GOING:-0}" = 1 ] && keep=(-fork=1 -ignore_crashes=1)
    fixed=()
    if [ "$mode" = fuzz ]; then
      [ -n "${FUZZ_SEED:-}" ] && fixed+=(-seed="$FUZZ_SEED")
      [ -n "${FUZZ_RUNS:-}" ] && fixed+=(-runs="$FUZZ_RUNS")
    fi
    start=$(date +%s)
    touch "$work/.start"
    "$bin" "${common[@]}" "${dict[@]}" "${keep[@]}" "${fixed[@]}" -max_total_time="$seconds" \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dirs[@]}" >"$work/fuzz.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    last=$(grep -E '^#[0-9]+' "$work/fuzz.log" | tail -n 1)
    if [ ${#keep[@]} -gt 0 ]; then  # fork mode: "#N: cov: C ft: F corp: K exec/s: R ..."
      execs=$(echo "$last" | sed -n 's/^#\([0-9]*\):.*/\1/p')
      rate=$(( ${execs:-0} / (took > 0 ? took : 1) ))
    else
      execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
      rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log")
    fi
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    corpus=$(find "$work/corpus" -type f | wc -l)
    crashes=$(find "$work/artifacts" -type f -newer "$work/.start" | wc -l)  # this run's
    echo "$target: ${took}s, ${execs:-?} execs, ${rate:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}, corpus $corpus, crashes $crashes"
    if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
      grep -E 'ERROR: |runtime error|SUMMARY|fuzz target check failed|Test unit written|deadly signal|timeout|out-of-memory' \
        "$work/fuzz.log" | head -n 20
      tail -n 40 "$work/fuzz.log"
      echo "$target: FAILED (rc $rc); inputs in $work/artifacts/ (full log $work/fuzz.log)."
      echo "  reproduce: $bin <input>; once fixed, commit the input to tests/fuzz/regressions/$target/"
      exit 1
    fi
    ;;
  *) echo "usage: $0 replay|fuzz|long BINARY TARGET [SECONDS WORKDIR]" >&2; exit 2 ;;
esac
