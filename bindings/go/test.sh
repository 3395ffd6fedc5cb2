#!/usr/bin/env bash
# Tests the Go binding against a built libtrainrt, offline: go vet, the package tests
# (bindings/go/trainrt/*_test.go) and the example (examples/go) on the test config.
#   test.sh WORK
# Called by tests/bindings/run_binding.sh, which sets TRAINRT_LIB_DIR, TRAINRT_INCLUDE_DIR,
# TRAINRT_TEST_CONFIG, TRAINRT_TEST_EXPECTED and TRAINRT_TEST_TMP.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${1:?usage: test.sh WORK}
: "${TRAINRT_LIB_DIR:?}" "${TRAINRT_INCLUDE_DIR:?}" "${TRAINRT_TEST_CONFIG:?}" "${TRAINRT_TEST_EXPECTED:?}"
start=$(date +%s.%N)

mkdir -p "$WORK/go"
# Everything Go writes stays under WORK; no network, no toolchain switching.
export GOCACHE=$WORK/go/cache GOPATH=$WORK/go/path GOMODCACHE=$WORK/go/path/pkg/mod
export GOFLAGS=-mod=mod GO111MODULE=on GOPROXY=off GOSUMDB=off CGO_ENABLED=1
unset GOTOOLCHAIN
export CGO_CFLAGS="-I$TRAINRT_INCLUDE_DIR"
export CGO_LDFLAGS="-L$TRAINRT_LIB_DIR -Wl,-rpath,$TRAINRT_LIB_DIR"
export TRAINRT_TEST_TMP=${TRAINRT_TEST_TMP:-$WORK/tmp}
mkdir -p "$TRAINRT_TEST_TMP"

go version
unformatted=$(gofmt -l "$HERE" "$ROOT/examples/go")
if [ -n "$unformatted" ]; then echo "gofmt: $unformatted" >&2; exit 1; fi
(cd "$HERE" && go vet ./... && go test -count=1 -v ./...)

cd "$ROOT/examples/go"
go vet .
go build -o "$WORK/go/train_example" .
"$WORK/go/train_example" "$TRAINRT_TEST_CONFIG" | tee "$WORK/go/example.txt"
# One "step N loss X" line per step of the test config, in order.
want=$(wc -l <"$TRAINRT_TEST_EXPECTED")
got=$(grep -c '^step [0-9]* loss ' "$WORK/go/example.txt" || true)
if [ "$got" != "$want" ]; then
  echo "go example: $got step lines, expected $want" >&2
  exit 1
fi
awk '/^step / { if ($2 != ++n) { print "go example: step " $2 " out of order" > "/dev/stderr"; exit 1 } }' \
  "$WORK/go/example.txt"
awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "go binding: OK (%.1f s)\n", b - a }'
