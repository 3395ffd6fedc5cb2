#!/usr/bin/env bash
# Tests of the Python binding, offline: installs bindings/python into a virtual environment in
# WORK with pip (--no-index: the in-tree build backend needs nothing from PyPI), runs the
# unittest suite (bindings/python/tests) with it, then the example (examples/python/train.py)
# on the test config.
#   bindings/python/test.sh WORK   (as tests/bindings/run_binding.sh calls it, env set)
#   bindings/python/test.sh        (standalone: prepares the fixture against ./build, or
#                                   $TRAINRT_LIB_DIR, through run_binding.sh)
# The interpreter: $TRAINRT_PYTHON (CMake passes the Python 3 it found), else python3 on PATH.
# Its venv module and ensurepip are needed (Debian: the python3-venv package). With
# Debian's python3-numpy installed, the venv sees it (--system-site-packages) and the numpy
# paths are tested too; without numpy they are skipped, the rest is not.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${TRAINRT_PYTHON:-python3}

if [ -z "${TRAINRT_TEST_CONFIG:-}" ]; then
  LIBDIR=$(cd "${TRAINRT_LIB_DIR:-$ROOT/build}" && pwd)
  WORK=${1:-$LIBDIR/bindings-work/python}
  mkdir -p "$WORK-ref"
  cc -O2 -I"$ROOT/include" "$ROOT/tests/bindings/reference_losses.c" -L"$LIBDIR" -ltrainrt \
     -Wl,-rpath,"$LIBDIR" -o "$WORK-ref/reference_losses"
  exec bash "$ROOT/tests/bindings/run_binding.sh" python "$LIBDIR" "$ROOT" "$WORK" \
       "$WORK-ref/reference_losses" "$LIBDIR/trainrt"
fi

WORK=$(cd "${1:?usage: test.sh WORK}" && pwd)
: "${TRAINRT_LIB_DIR:?}" "${TRAINRT_TEST_CONFIG:?}" "${TRAINRT_TEST_EXPECTED:?}"
export TRAINRT_TEST_TMP=${TRAINRT_TEST_TMP:-$WORK/tmp}
mkdir -p "$TRAINRT_TEST_TMP"
start=$(date +%s.%N)
# Nothing is written into the source tree (no __pycache__ either).
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1 \
       PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1

"$PY" --version
if ! "$PY" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "python binding: $PY has no venv/ensurepip (Debian: apt-get install python3-venv)" >&2
  exit 1
fi
VENV=$WORK/venv
rm -rf "$VENV"
"$PY" -m venv --system-site-packages "$VENV"
VPY=$VENV/bin/python
# pip builds the wheel through pyproject.toml (build isolation, no index): the offline path.
"$VPY" -m pip install --no-index --quiet "$HERE"
"$VPY" -c 'import trainrt, sys; sys.exit(0 if "site-packages" in trainrt.__file__ else 1)' || {
  echo "python binding: trainrt was not imported from the venv" >&2; exit 1; }

# The suite runs against the installed package (from WORK, so the source folder is not on
# sys.path) and prints the per-call overhead.
cd "$WORK"
set +e
"$VPY" -m unittest discover -s "$HERE/tests" -t "$HERE/tests" -p 'test_*.py' -v 2>&1 |
  tee "$WORK/unittest.txt"
status=${PIPESTATUS[0]}
set -e
grep '^overhead:' "$WORK/unittest.txt" || true
if [ "$status" != 0 ]; then
  echo "python binding: unit tests failed" >&2
  exit 1
fi

# The example: one "step N loss X" line per step of the test config, in order.
"$VPY" "$ROOT/examples/python/train.py" "$TRAINRT_TEST_CONFIG" --save "$WORK/example_ckpt" |
  tee "$WORK/example.txt"
want=$(wc -l <"$TRAINRT_TEST_EXPECTED")
got=$(grep -c '^step [0-9]* loss ' "$WORK/example.txt" || true)
if [ "$got" != "$want" ]; then
  echo "python example: $got step lines, expected $want" >&2
  exit 1
fi
awk '/^step / { if ($2 != ++n) { print "python example: step " $2 " out of order" > "/dev/stderr"; exit 1 } }' \
  "$WORK/example.txt"
awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "python binding: OK (%.1f s)\n", b - a }'
