#!/usr/bin/env bash
# exported_symbols_test.sh LIB [HEADER]
#
# Checks what libtrainrt.so exports (docs/ABI.md):
#   - every defined dynamic symbol is trainrt_* (or the version node TRAINRT_0);
#   - the SONAME is libtrainrt.so.0;
#   - the exported symbols are exactly the TRAINRT_API functions of include/trainrt/trainrt.h;
#   - libtrainrt-cuda.so, when built next to LIB, exports exactly trainrt_cuda_module_v1.
set -euo pipefail

lib=${1:?usage: exported_symbols_test.sh LIB [HEADER]}
here=$(cd "$(dirname "$0")" && pwd)
header=${2:-$here/../../include/trainrt/trainrt.h}
expected_soname=libtrainrt.so.0
fail=0
err() { echo "FAIL: $*" >&2; fail=1; }

[[ -f $lib ]] || { echo "FAIL: no such library: $lib" >&2; exit 1; }
[[ -f $header ]] || { echo "FAIL: no such header: $header" >&2; exit 1; }
for tool in nm readelf; do
  command -v "$tool" >/dev/null || { echo "FAIL: '$tool' not found (binutils)" >&2; exit 1; }
done

# Defined dynamic symbols, without the @VERSION suffix nm may add.
defined_symbols() { nm -D --defined-only "$1" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort -u; }

# ---------------------------------------------------------------- libtrainrt.so
exported=$(defined_symbols "$lib")
[[ -n $exported ]] || err "$lib exports no symbols"
offenders=$(grep -Ev '^(trainrt_|TRAINRT_0$)' <<<"$exported" || true)
if [[ -n $offenders ]]; then
  err "$lib exports symbols outside trainrt_* (packaging/libtrainrt.map):"
  sed 's/^/  /' <<<"$offenders" >&2
fi

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == "$expected_soname" ]] || err "SONAME is '${soname:-<none>}', expected $expected_soname"

# TRAINRT_API declarations: the identifier right before the first '(' of each declaration
# (which may span lines; the macro's own #define lines are skipped).
declared=$(sed -e 's://.*$::' "$header" | grep -v '^[[:space:]]*#' |
  tr '\n' ' ' | grep -o 'TRAINRT_API[^;{(]*(' |
  sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/' | sort -u)
[[ -n $declared ]] || err "found no TRAINRT_API declarations in $header"

exported_funcs=$(grep -v '^TRAINRT_0$' <<<"$exported" || true)
missing=$(comm -23 <(echo "$declared") <(echo "$exported_funcs") | sed '/^$/d')
extra=$(comm -13 <(echo "$declared") <(echo "$exported_funcs") | sed '/^$/d')
if [[ -n $missing ]]; then
  err "declared TRAINRT_API in $(basename "$header") but not exported by $lib:"
  sed 's/^/  /' <<<"$missing" >&2
fi
if [[ -n $extra ]]; then
  err "exported by $lib but not declared TRAINRT_API in $(basename "$header"):"
  sed 's/^/  /' <<<"$extra" >&2
fi

# ---------------------------------------------------------------- libtrainrt-cuda.so
cuda=$(dirname "$lib")/libtrainrt-cuda.so
if [[ -f $cuda ]]; then
  cuda_exported=$(defined_symbols "$cuda" | grep -Ev '^[A-Z][A-Z0-9_]*_[0-9]+$' || true)
  if [[ $cuda_exported != trainrt_cuda_module_v1 ]]; then
    err "$cuda must export exactly trainrt_cuda_module_v1 (packaging/libtrainrt-cuda.map), exports:"
    sed 's/^/  /' <<<"$cuda_exported" >&2
  fi
  cuda_checked=", libtrainrt-cuda.so exports trainrt_cuda_module_v1"
fi

if (( fail )); then
  exit 1
fi
echo "OK: $(basename "$lib") (SONAME $soname) exports exactly the $(wc -l <<<"$declared")" \
     "TRAINRT_API functions of $(basename "$header")${cuda_checked:-}"
