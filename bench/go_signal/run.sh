#!/usr/bin/env bash
# Times CPU steps of the Go binding with and without signal.Notify, and with the steps on
# another OS thread than the one that created the session (bench/go_signal/main.go), against
# one built libtrainrt; prints a markdown table (median ms/step over the rounds, ratio to
# "same"). Offline: every Go cache under WORK.
#   bench/go_signal/run.sh LIB_DIR WORK [ROUNDS] [STEPS]
# LIB_DIR holds libtrainrt.so (a build folder). Example (bench/results/2026-11-25-go-signal.md):
#   bash bench/go_signal/run.sh build-go /tmp/go-signal 5 30
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LIB_DIR=$(cd "${1:?usage: run.sh LIB_DIR WORK [ROUNDS] [STEPS]}" && pwd)
WORK=${2:?usage: run.sh LIB_DIR WORK [ROUNDS] [STEPS]}
ROUNDS=${3:-5}
STEPS=${4:-30}
mkdir -p "$WORK/go"
WORK=$(cd "$WORK" && pwd)
export GOCACHE=$WORK/go/cache GOPATH=$WORK/go/path GOMODCACHE=$WORK/go/path/pkg/mod
export GOFLAGS=-mod=mod GO111MODULE=on GOPROXY=off GOSUMDB=off CGO_ENABLED=1
unset GOTOOLCHAIN
export CGO_CFLAGS="-I$ROOT/include"
export CGO_LDFLAGS="-L$LIB_DIR -Wl,-rpath,$LIB_DIR"
(cd "$HERE" && go build -o "$WORK/go_signal" .)
modes="same notify other other-notify"
: >"$WORK/runs.txt"
for r in $(seq "$ROUNDS"); do
  for m in $modes; do
    "$WORK/go_signal" -mode "$m" -work "$WORK" -steps "$STEPS" | tee -a "$WORK/runs.txt"
  done
done
echo
echo "| mode | ms/step (median of $ROUNDS) | vs same | steps on the creating thread | OpenBLAS threads after |"
echo "|---|---|---|---|---|"
for m in $modes; do
  grep "^mode=$m " "$WORK/runs.txt" | sed 's/.*ms_per_step=\([0-9.]*\) same_thread=\([a-z]*\) blas_threads=\([-0-9]*\).*/\1 \2 \3/' |
    sort -n | awk -v m="$m" -v base="$(grep '^mode=same ' "$WORK/runs.txt" |
      sed 's/.*ms_per_step=\([0-9.]*\).*/\1/' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" '
      { ms[NR] = $1; same[$2]++; blas[$3]++ }
      END {
        med = ms[int((NR + 1) / 2)]
        s = ""; for (k in same) s = s (s ? ", " : "") k " x" same[k]
        b = ""; for (k in blas) b = b (b ? ", " : "") k " (x" blas[k] ")"
        printf "| %s | %.3f | %.2fx | %s | %s |\n", m, med, med / base, s, b
      }'
done
