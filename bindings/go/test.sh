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

# Built without the flags: the compile error says what to set (unless the compiler finds an
# installed trainrt.h by itself); with -tags trainrt_pkgconfig the flags come from a
# trainrt.pc (here one for this build tree) and the example runs through its rpath.
if echo '#include <trainrt/trainrt.h>' | cc -E -x c - >/dev/null 2>&1; then
  echo "go: trainrt.h is installed system-wide; the missing-header check is skipped"
else
  rc=0
  (cd "$HERE" && env -u CGO_CFLAGS -u CGO_LDFLAGS go build ./...) >"$WORK/go/no-flags.txt" 2>&1 || rc=$?
  if [ "$rc" = 0 ] || ! grep -q 'trainrt.h not found.*set CGO_CFLAGS=' "$WORK/go/no-flags.txt"; then
    cat "$WORK/go/no-flags.txt" >&2
    echo "go: a build without CGO_CFLAGS did not say what to set" >&2
    exit 1
  fi
fi
if command -v pkg-config >/dev/null; then
  mkdir -p "$WORK/go/pc"
  printf 'Name: trainrt\nDescription: this build tree\nVersion: 0.1.0\nCflags: -I%s\nLibs: -L%s -Wl,-rpath,%s -ltrainrt\n' \
    "$TRAINRT_INCLUDE_DIR" "$TRAINRT_LIB_DIR" "$TRAINRT_LIB_DIR" >"$WORK/go/pc/trainrt.pc"
  PKG_CONFIG_PATH=$WORK/go/pc env -u CGO_CFLAGS -u CGO_LDFLAGS \
    go build -tags trainrt_pkgconfig -o "$WORK/go/train_example_pc" .
  env -u LD_LIBRARY_PATH "$WORK/go/train_example_pc" "$TRAINRT_TEST_CONFIG" 1 | grep -q '^step 1 loss ' ||
    { echo "go: the example built with -tags trainrt_pkgconfig did not train" >&2; exit 1; }
else
  echo "go: no pkg-config; the trainrt_pkgconfig build is skipped"
fi
awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "go binding: OK (%.1f s)\n", b - a }'
