#!/usr/bin/env bash
# ABI guard for libtrainrt.so (docs/ABI.md).
#
#   bash scripts/abi-check.sh            compare the built library with packaging/abi/ (CI)
#   bash scripts/abi-check.sh --bless    write the current ABI as the new baseline, then commit
#                                        packaging/abi/
#
# Builds only the `trainrt` target, RelWithDebInfo (abidw needs DWARF), in its own build dir
# (ABI_BUILD_DIR, default build-abi; reused when it exists), dumps its ABI with abidw restricted
# to the public headers (include/trainrt) and compares it with the committed baseline with
# abidiff. Additions are reported and pass; removals and changes to existing functions, variables
# or public types fail.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

bless=0
for arg in "$@"; do
  case "$arg" in
    --bless) bless=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "abi-check: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

for tool in cmake abidw abidiff readelf; do
  command -v "$tool" >/dev/null || {
    echo "abi-check: '$tool' not found (Debian: apt-get install abigail-tools cmake binutils)" >&2
    exit 2
  }
done

build=${ABI_BUILD_DIR:-build-abi}
headers=$root/include/trainrt
baseline_dir=$root/packaging/abi

# ---------------------------------------------------------------- build the library only
if [[ ! -f $build/CMakeCache.txt ]]; then
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINRT_CUDA=OFF \
    -DTRAINRT_BUILD_TESTS=OFF -DTRAINRT_BUILD_CLI=OFF -DTRAINRT_BUILD_BENCH=OFF \
    -DTRAINRT_BINDING_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target trainrt -j "$(nproc)"

lib=$(readlink -f "$build/libtrainrt.so")
[[ -f $lib ]] || { echo "abi-check: $build/libtrainrt.so not built" >&2; exit 1; }
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ -n $soname ]] || { echo "abi-check: $lib has no SONAME" >&2; exit 1; }
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
  echo "abi-check: $lib has no DWARF (.debug_info); abidw needs a -g build" >&2
  exit 1
fi

# ---------------------------------------------------------------- dump
# Stable across checkouts, line numbers and type numbering: only the exported interfaces and
# the types the public headers define, no locations, hashed type ids, and source paths made
# relative to the repository root.
current=$build/current.abi
abidw --headers-dir "$headers" --drop-private-types --exported-interfaces-only \
  --drop-undefined-syms --no-corpus-path --no-comp-dir-path --no-show-locs --no-elf-needed \
  --type-id-style hash --out-file "$current.tmp" "$lib"
# A compiler launcher such as ccache with CCACHE_BASEDIR rewrites the source paths relative to
# the build dir (../src/...): those are made relative to the repository root too.
rel=$(realpath -m --relative-to="$build" "$root")
sed -e "s#path='$root/#path='#g" -e "s#path='$rel/#path='#g" "$current.tmp" >"$current"
rm -f "$current.tmp"

baseline=$baseline_dir/$soname.abi
if (( bless )); then
  mkdir -p "$baseline_dir"
  cp "$current" "$baseline"
  echo "abi-check: blessed $soname -> ${baseline#$root/} ($(wc -c <"$baseline") bytes); commit packaging/abi/"
  exit 0
fi

if [[ ! -f $baseline ]]; then
  others=$(ls "$baseline_dir"/*.abi 2>/dev/null || true)
  echo "abi-check: no baseline for $soname (${baseline#$root/})." >&2
  [[ -n $others ]] && echo "abi-check: baselines present: $others -- the SONAME changed; see docs/ABI.md" >&2
  echo "abi-check: for a new SOVERSION, run: bash scripts/abi-check.sh --bless" >&2
  exit 1
fi

# ---------------------------------------------------------------- compare
report=$build/abidiff.txt
set +e
abidiff --no-show-locs "$baseline" "$current" >"$report" 2>&1
status=$?
set -e

# abidiff's exit status is a bit field: 1 error, 2 usage error, 4 ABI change,
# 8 incompatible ABI change.
if (( status & 3 )); then
  cat "$report" >&2
  echo "abi-check: abidiff failed (exit status $status)" >&2
  exit 1
fi
if (( status == 0 )); then
  echo "abi-check: OK, $soname ABI matches ${baseline#$root/}"
  exit 0
fi

cat "$report"
# libabigail sets bit 8 only for removals; a changed signature or public struct of an existing
# function/variable (bit 4 with a "Changed" count) breaks callers too, so it fails as well.
changed=$({ grep 'changes summary' "$report" || true; } | { grep -Eo '[0-9]+ Changed' || true; } | awk '{s += $1} END {print s + 0}')
removed=$({ grep 'changes summary' "$report" || true; } | { grep -Eo '[0-9]+ Removed' || true; } | awk '{s += $1} END {print s + 0}')
if (( status & 8 )) || (( changed > 0 )) || (( removed > 0 )); then
  echo "abi-check: FAIL: incompatible ABI change in $soname (abidiff exit status $status:" \
       "$removed removed, $changed changed)." >&2
  echo "abi-check: restore the ABI, or make a deliberate break: bump SOVERSION and" \
       "TRAINRT_ABI_VERSION, then bless the new baseline (docs/ABI.md)." >&2
  exit 1
fi
echo "abi-check: OK, additive ABI change only (abidiff exit status $status); to record it:" \
     "bash scripts/abi-check.sh --bless, then commit packaging/abi/"
exit 0
