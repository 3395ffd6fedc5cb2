#!/usr/bin/env bash
# The one-command check of libtrainrt's CUDA backend on a GPU machine (docs/GPU_CHECK.md).
#
#   bash scripts/gpu-check.sh OUTDIR [BUILD_DIR]     run every stage; logs + summary in OUTDIR
#   bash scripts/gpu-check.sh --prepare-deps         (on a Debian dev machine) copy the build
#                                                    dependencies a bare GPU machine lacks
#                                                    into ./.deps (toml++, OpenBLAS, googletest)
#
# Stages, each under its own time cap and all under one overall budget (GPU_CHECK_BUDGET,
# default 570 s, so a run fits a 10-minute slot); OUTDIR/summary.md is rewritten after every
# stage, so a run that is cut off still reports what it did:
#   1 device     nvidia-smi -L, driver, CUDA version, nvcc
#   2 build      configure + build (Release, CMAKE_CUDA_ARCHITECTURES=90-real) into BUILD_DIR
#                (default OUTDIR/build)
#   3 gpu-tests  ctest -L gpu (every CUDA op vs the CPU backend, determinism, end to end);
#                TRAINRT_REQUIRE_CUDA=1, so a test that cannot reach the GPU fails, not skips
#   4 train      the demo config (examples/configs/shakespeare.toml) for 200 steps on CUDA
#                (fp32, tf32, bf16) and on the CPU side by side (the CPU run is capped by
#                time): per-step loss differences and median step times from metrics.jsonl
#   5 cpu-tests  ctest -L cpu, all cores, as a sanity check of the same build
#   6 ladder     the GPU benchmark ladder (bench/gpu_ladder.py: trainrt bench rung by rung +
#                PyTorch on the same GPU) with what is left of the budget; skipped when less
#                than LADDER_MIN_S is left -- run it alone: GPU_CHECK_STAGES="device build ladder"
# Exit status: 0 when every stage that ran passed (skipped ones aside), 1 otherwise, 2 on bad
# usage.
#
# Environment: JOBS (build/test parallelism, default nproc), CUDA_ARCHS (default 90-real),
# GPU_CHECK_BUDGET (s), GPU_CHECK_STAGES (the stages to run, default all six),
# LADDER_MODELS (default tiny,gpt2), LADDER_MIN_S (default 90), LADDER_ARGS (more
# gpu_ladder.py options), TRAIN_STEPS (default 200), GPU_TEST_JOBS (default 4),
# TOMLPP_INCLUDE_DIR, OPENBLAS_INCLUDE_DIR + OPENBLAS_LIBRARY, GTest_DIR: where those are;
# GPU_CHECK_USE_DEPS=1: ignore the system's toml++/OpenBLAS/GTest and use ./.deps (to try the
# bare-machine path on a dev machine).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEPS=$ROOT/.deps

usage() {
    sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# ------------------------------------------------------------------ --prepare-deps
# Copies, from this machine's Debian packages, what the GPU machine (no Debian packages, no
# network) needs to build: toml++ headers (header-only), OpenBLAS (OpenMP build: headers,
# libopenblas.so.0 and the Fortran runtime it needs) and the googletest sources (built there
# by this script). About 40 MB; .deps/ travels with the working tree (carry it).
prepare_deps() {
    local arch
    arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
    local ob_inc=/usr/include/$arch/openblas-openmp ob_lib=/usr/lib/$arch/openblas-openmp
    local missing=0
    [ -f /usr/include/toml++/toml.h ] || { echo "missing /usr/include/toml++ (apt-get install libtomlplusplus-dev)" >&2; missing=1; }
    if [ ! -f "$ob_inc/cblas.h" ] || [ ! -e "$ob_lib/libopenblas.so.0" ]; then
        echo "missing OpenBLAS in $ob_lib (apt-get install libopenblas-openmp-dev)" >&2
        missing=1
    fi
    [ -f /usr/src/googletest/CMakeLists.txt ] || { echo "missing /usr/src/googletest (apt-get install googletest)" >&2; missing=1; }
    [ "$missing" = 0 ] || return 1
    rm -rf "$DEPS"
    mkdir -p "$DEPS/include/openblas-openmp" "$DEPS/lib" "$DEPS/src"
    cp -r /usr/include/toml++ "$DEPS/include/"
    cp "$ob_inc"/*.h "$DEPS/include/openblas-openmp/"
    cp -L "$ob_lib/libopenblas.so.0" "$DEPS/lib/libopenblas.so.0"
    ln -s libopenblas.so.0 "$DEPS/lib/libopenblas.so"
    local lib path
    for lib in libgfortran.so.5 libquadmath.so.0; do
        path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
        [ -n "$path" ] && cp -L "$path" "$DEPS/lib/$lib"
    done
    cp -r /usr/src/googletest "$DEPS/src/googletest"
    # cuDNN 9 headers for the module's cuDNN attention (the library itself is dlopened on the
    # GPU machine; without headers the module builds a stub and attention stays on matmul).
    local cudnn_inc=""
    for d in /usr/local/cuda/include /usr/include /usr/include/"$arch"; do
        [ -f "$d/cudnn_graph.h" ] && { cudnn_inc=$d; break; }
    done
    if [ -n "$cudnn_inc" ]; then
        mkdir -p "$DEPS/cudnn/include"
        cp "$cudnn_inc"/cudnn*.h "$DEPS/cudnn/include/"
    else
        echo "note: no cuDNN 9 headers found; the GPU build will use the cuDNN stub" >&2
    fi
    echo "prepared $DEPS ($(du -sh "$DEPS" | cut -f1)): toml++, OpenBLAS (openmp), googletest sources${cudnn_inc:+, cuDNN headers}"
    echo "carry it to the GPU machine with the working tree (keep it out of commits: /.deps/ in .gitignore)"
}

case "${1:-}" in
    -h | --help) usage; exit 0 ;;
    --prepare-deps) prepare_deps; exit $? ;;
    "" | -*) usage >&2; exit 2 ;;
esac

mkdir -p "$1" || { echo "gpu-check: cannot create $1" >&2; exit 2; }
OUT=$(cd "$1" && pwd)
BUILD=${2:-$OUT/build}
mkdir -p "$BUILD" || { echo "gpu-check: cannot create $BUILD" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
BUDGET=${GPU_CHECK_BUDGET:-570}
CUDA_ARCHS=${CUDA_ARCHS:-90-real}
TRAIN_STEPS=${TRAIN_STEPS:-200}
GPU_TEST_JOBS=${GPU_TEST_JOBS:-4}
LADDER_MODELS=${LADDER_MODELS:-tiny,gpt2}
LADDER_MIN_S=${LADDER_MIN_S:-90}
T0=$(date +%s)
FENCE='```'  # markdown code fence in the summary
HAVE_PY=0
if command -v python3 >/dev/null 2>&1; then HAVE_PY=1; fi
export TRAINRT_CUDA_MODULE=$BUILD/libtrainrt-cuda.so

# ------------------------------------------------------------------ summary
STAGES=(device build gpu-tests train cpu-tests ladder)
SELECTED=" ${GPU_CHECK_STAGES:-${STAGES[*]}} "
declare -A STATUS TIME NOTES DETAILS
for s in "${STAGES[@]}"; do STATUS[$s]="not reached"; TIME[$s]=""; NOTES[$s]=""; DETAILS[$s]=""; done
for s in $SELECTED; do
    case " ${STAGES[*]} " in *" $s "*) ;; *) echo "gpu-check: unknown stage '$s' in GPU_CHECK_STAGES (${STAGES[*]})" >&2; exit 2 ;; esac
done
selected() { [[ $SELECTED == *" $1 "* ]]; }

# The commit, read from .git without running git (the tree may have no .git at all).
commit_id() {
    local head ref
    head=$(cat "$ROOT/.git/HEAD" 2>/dev/null) || { echo unknown; return; }
    case $head in
        ref:*)
            ref=${head#ref: }
            if [ -f "$ROOT/.git/$ref" ]; then cut -c1-12 "$ROOT/.git/$ref"
            else awk -v r="$ref" '$2 == r {print substr($1, 1, 12)}' "$ROOT/.git/packed-refs" 2>/dev/null; fi ;;
        *) echo "${head:0:12}" ;;
    esac
}
COMMIT=$(commit_id)
[ -n "$COMMIT" ] || COMMIT=unknown

write_summary() {
    local tmp=$OUT/summary.md.tmp s
    {
        echo "# libtrainrt GPU check"
        echo
        echo "- started: $(date -u -d "@$T0" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u), elapsed $(( $(date +%s) - T0 )) s of a $BUDGET s budget"
        echo "- machine: $(hostname 2>/dev/null || echo '?'), $(nproc 2>/dev/null || echo '?') cores; commit $COMMIT"
        echo "- build: $BUILD; logs: $OUT/*.log"
        echo
        echo "| stage | status | time | key numbers |"
        echo "|---|---|---|---|"
        for s in "${STAGES[@]}"; do
            echo "| $s | ${STATUS[$s]} | ${TIME[$s]:+${TIME[$s]} s} | ${NOTES[$s]} |"
        done
        for s in "${STAGES[@]}"; do
            if [ -n "${DETAILS[$s]}" ]; then
                echo
                echo "## $s"
                echo
                printf '%s\n' "${DETAILS[$s]}"
            fi
        done
    } > "$tmp" && mv "$tmp" "$OUT/summary.md"
}

# Seconds a stage may use: its own cap, within what is left of the budget.
cap() {
    local want=$1 left
    left=$(( T0 + BUDGET - $(date +%s) ))
    if [ "$left" -lt "$want" ]; then echo "$left"; else echo "$want"; fi
}

# run_capped SECONDS LOG CMD... : CMD under timeout, output appended to LOG; returns its status
# (124 = cut off by the cap).
run_capped() {
    local secs=$1 log=$2
    shift 2
    if [ "$secs" -lt 5 ]; then
        echo "gpu-check: no time left for: $*" >> "$log"
        return 124
    fi
    echo "\$ $* (cap ${secs}s)" >> "$log"
    timeout -k 15 "$secs" "$@" >> "$log" 2>&1
}

begin() { STAGE=$1; STAGE_T0=$(date +%s); STATUS[$STAGE]="running"; write_summary; echo "== gpu-check: $STAGE" >&2; }
finish() {  # STATUS NOTES
    STATUS[$STAGE]=$1
    NOTES[$STAGE]=$2
    TIME[$STAGE]=$(( $(date +%s) - STAGE_T0 ))
    write_summary
}

# tests/failures/skipped/disabled of a CTest JUnit file -> "passed failed skipped total"
junit_counts() {
    local f=$1 tests failures skipped disabled
    tests=$(grep -m1 -o 'tests="[0-9]*"' "$f" | grep -o '[0-9]\+')
    failures=$(grep -m1 -o 'failures="[0-9]*"' "$f" | grep -o '[0-9]\+')
    skipped=$(grep -m1 -o 'skipped="[0-9]*"' "$f" | grep -o '[0-9]\+')
    disabled=$(grep -m1 -o 'disabled="[0-9]*"' "$f" | grep -o '[0-9]\+')
    tests=${tests:-0}; failures=${failures:-0}; skipped=${skipped:-0}; disabled=${disabled:-0}
    echo "$(( tests - failures - skipped - disabled )) $failures $(( skipped + disabled )) $tests"
}
junit_failed_names() {
    grep 'status="fail"' "$1" | sed -n 's/.*<testcase name="\([^"]*\)".*/\1/p' | sed 's/  *#.*//'
}
# From a ctest console log when there is no JUnit file (the run was cut off).
log_counts() {
    local f=$1 p fl sk
    p=$(grep -cE 'Test +#[0-9]+: .* Passed' "$f")
    fl=$(grep -cE 'Test +#[0-9]+: .*\*\*\*(Failed|Exception|Timeout)' "$f")
    sk=$(grep -cE 'Test +#[0-9]+: .*Skipped' "$f")
    echo "$p $fl $sk $(( p + fl + sk ))"
}

# ------------------------------------------------------------------ 1. device
stage_device() {
    begin device
    local log=$OUT/device.log gpu="" cudav nvccv count
    : > "$log"
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        finish FAIL "nvidia-smi not found: no NVIDIA driver on this machine"
        return
    fi
    run_capped "$(cap 30)" "$log" nvidia-smi -L
    run_capped "$(cap 30)" "$log" nvidia-smi
    count=$(grep -c '^GPU [0-9]' "$log")
    gpu=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
          --format=csv,noheader 2>/dev/null | head -1)
    [ -n "$gpu" ] || gpu=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total \
          --format=csv,noheader 2>/dev/null | head -1)
    cudav=$(sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' "$log" | head -1)
    local nvcc_bin=/usr/local/cuda/bin/nvcc
    if command -v nvcc >/dev/null 2>&1; then nvcc_bin=$(command -v nvcc); fi
    nvccv=$("$nvcc_bin" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -1)
    echo "nvcc: ${nvccv:-not found}" >> "$log"
    local notes="$count GPU(s): ${gpu:-?}; driver CUDA ${cudav:-?}; nvcc ${nvccv:-not found}"
    if [ "$count" -ge 1 ]; then finish PASS "$notes"; else finish FAIL "$notes"; fi
}

# ------------------------------------------------------------------ 2. build
BUILD_OK=0
system_gtest() {
    local f
    for f in /usr/lib/*/cmake/GTest/GTestConfig.cmake /usr/lib*/cmake/GTest/GTestConfig.cmake \
             /usr/local/lib*/cmake/GTest/GTestConfig.cmake; do
        [ -f "$f" ] && return 0
    done
    [ -f /usr/include/gtest/gtest.h ] || return 1
    for f in /usr/lib/*/libgtest.* /usr/lib*/libgtest.*; do
        [ -f "$f" ] && return 0
    done
    return 1
}
stage_build() {
    begin build
    local log=$OUT/build.log args=() found=()
    : > "$log"
    # toml++ (header-only): $TOMLPP_INCLUDE_DIR, the system, ./.deps/include.
    local toml=""
    if [ -n "${TOMLPP_INCLUDE_DIR:-}" ] && [ -f "$TOMLPP_INCLUDE_DIR/toml++/toml.h" ]; then
        toml=$TOMLPP_INCLUDE_DIR; found+=("toml++ from \$TOMLPP_INCLUDE_DIR")
    else
        local dirs=(/usr/include /usr/local/include "$DEPS/include")
        [ "${GPU_CHECK_USE_DEPS:-0}" = 1 ] && dirs=("$DEPS/include")
        for d in "${dirs[@]}"; do
            if [ -f "$d/toml++/toml.h" ]; then toml=$d; found+=("toml++ in $d"); break; fi
        done
    fi
    if [ -z "$toml" ]; then
        DETAILS[build]="toml++ not found in \$TOMLPP_INCLUDE_DIR, /usr/include, /usr/local/include or $DEPS/include. On the dev machine: \`mkdir -p .deps/include && cp -r /usr/include/toml++ .deps/include/\` (or \`bash scripts/gpu-check.sh --prepare-deps\`) and carry .deps."
        finish FAIL "toml++ headers not found (see below)"
        return
    fi
    args+=("-DTOMLPP_INCLUDE_DIR=$toml")
    # OpenBLAS, OpenMP build (CMakeLists looks only in Debian's openblas-openmp folders).
    local arch_dir
    arch_dir=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
    if [ -n "${OPENBLAS_INCLUDE_DIR:-}" ] && [ -n "${OPENBLAS_LIBRARY:-}" ]; then
        args+=("-DOPENBLAS_INCLUDE_DIR=$OPENBLAS_INCLUDE_DIR" "-DOPENBLAS_LIBRARY=$OPENBLAS_LIBRARY")
        found+=("OpenBLAS from \$OPENBLAS_LIBRARY")
    elif [ "${GPU_CHECK_USE_DEPS:-0}" != 1 ] && [ -f "/usr/include/$arch_dir/openblas-openmp/cblas.h" ]; then
        found+=("OpenBLAS (openmp) from the system")
    elif [ -f "$DEPS/include/openblas-openmp/cblas.h" ] && [ -e "$DEPS/lib/libopenblas.so.0" ]; then
        args+=("-DOPENBLAS_INCLUDE_DIR=$DEPS/include/openblas-openmp" "-DOPENBLAS_LIBRARY=$DEPS/lib/libopenblas.so")
        export LD_LIBRARY_PATH="$DEPS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        found+=("OpenBLAS from .deps")
    else
        found+=("OpenBLAS NOT FOUND (prepare .deps)")
    fi
    # GoogleTest: $GTest_DIR, the system, else built here from ./.deps/src/googletest.
    if [ -n "${GTest_DIR:-}" ]; then
        args+=("-DGTest_DIR=$GTest_DIR"); found+=("GTest from \$GTest_DIR")
    elif [ "${GPU_CHECK_USE_DEPS:-0}" != 1 ] && system_gtest; then
        found+=("GTest from the system")
    elif [ -f "$DEPS/src/googletest/CMakeLists.txt" ]; then
        local gt=$OUT/googletest
        if [ ! -f "$gt/install/include/gtest/gtest.h" ]; then
            run_capped "$(cap 120)" "$log" cmake -S "$DEPS/src/googletest" -B "$gt/build" \
                -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$gt/install" \
                -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_GMOCK=ON &&
            run_capped "$(cap 120)" "$log" cmake --build "$gt/build" -j "$JOBS" &&
            run_capped "$(cap 60)" "$log" cmake --install "$gt/build"
        fi
        args+=("-DCMAKE_PREFIX_PATH=$gt/install")
        found+=("GTest built from .deps/src/googletest")
    else
        found+=("GTest NOT FOUND (prepare .deps)")
    fi
    local gen=()
    if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
    if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "CMAKE_GENERATOR:INTERNAL=${gen[1]:-Unix Makefiles}" "$BUILD/CMakeCache.txt"; then
        gen=()  # an existing build dir keeps its generator
    fi
    local nvcc=""
    if [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc
    elif command -v nvcc >/dev/null 2>&1; then nvcc=$(command -v nvcc); fi
    [ -n "$nvcc" ] && args+=("-DCMAKE_CUDA_COMPILER=$nvcc")
    local t_conf=$SECONDS rc
    run_capped "$(cap 120)" "$log" cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DTRAINRT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS" \
        -DTRAINRT_BUILD_TESTS=ON -DTRAINRT_BUILD_CLI=ON "${args[@]}"
    rc=$?
    local deps_note
    deps_note=$(IFS=';'; echo "${found[*]}")
    deps_note=${deps_note//;/; }
    if [ $rc -ne 0 ]; then
        DETAILS[build]=$(printf 'configure failed (status %s); last lines of build.log:\n\n%s\n%s\n%s' \
            "$rc" "$FENCE" "$(grep -v '^--' "$log" | tail -25)" "$FENCE")
        finish "$( [ $rc = 124 ] && echo TIMEOUT || echo FAIL )" "configure failed; $deps_note"
        return
    fi
    local conf_s=$(( SECONDS - t_conf ))
    run_capped "$(cap 330)" "$log" cmake --build "$BUILD" -j "$JOBS"
    rc=$?
    if [ $rc -ne 0 ]; then
        DETAILS[build]=$(printf 'build failed (status %s); first errors:\n\n%s\n%s\n%s' \
            "$rc" "$FENCE" "$(grep -E -m 25 'error|Error|FAILED' "$log")" "$FENCE")
        finish "$( [ $rc = 124 ] && echo TIMEOUT || echo FAIL )" "build failed (configure ${conf_s} s); $deps_note"
        return
    fi
    local mod="module missing"
    [ -f "$BUILD/libtrainrt-cuda.so" ] && mod="libtrainrt-cuda.so $(( $(stat -c %s "$BUILD/libtrainrt-cuda.so") / 1024 )) KiB"
    if [ ! -f "$BUILD/libtrainrt-cuda.so" ]; then
        finish FAIL "built, but no libtrainrt-cuda.so (nvcc: ${nvcc:-none}); $deps_note"
        return
    fi
    BUILD_OK=1
    finish PASS "Release, CUDA archs $CUDA_ARCHS, configure ${conf_s} s; $mod; $deps_note"
}

# ------------------------------------------------------------------ 3. gpu tests
# "[  relerr  ] what [bf16] 1.234e-03" lines of a test log -> the 4 largest per precision.
worst_errors() {
    grep -o '\[  relerr  \].*' "$1" | awk '
        { line = $0; sub(/^\[  relerr  \] */, "", line)
          if (!match(line, /[0-9]\.[0-9]+e[-+][0-9]+/)) next
          v = substr(line, RSTART, RLENGTH); tag = "other"
          if (match(line, /\[(fp32|tf32|bf16|fp16)\]/)) tag = substr(line, RSTART + 1, RLENGTH - 2)
          else if (match(line, /(fp32|tf32|bf16|fp16)/)) tag = substr(line, RSTART, RLENGTH) " e2e"
          print tag "\t" v "\t" line }' |
        sort -t "$(printf '\t')" -k1,1 -k2,2gr | awk -F '\t' '++n[$1] <= 4 {print $3}'
}

stage_gpu_tests() {
    begin gpu-tests
    local log=$OUT/gpu-tests.log xml=$OUT/gpu-tests.xml rc counts
    : > "$log"
    rm -f "$xml"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed"; return; fi
    # Verbose, so every measured error ([  relerr  ] lines) lands in the log.
    run_capped "$(cap 200)" "$log" env TRAINRT_REQUIRE_CUDA=1 \
        ctest --test-dir "$BUILD" -L gpu -j "$GPU_TEST_JOBS" --timeout 240 -V --output-junit "$xml"
    rc=$?
    if [ -s "$xml" ]; then counts=$(junit_counts "$xml"); else counts=$(log_counts "$log"); fi
    read -r passed failed skipped total <<< "$counts"
    local notes="$passed passed, $failed failed, $skipped skipped (of $total)"
    local det="" names worst
    if [ -s "$xml" ] && [ "$failed" -gt 0 ]; then
        names=$(junit_failed_names "$xml" | head -40)
        det=$(printf 'Failed (first 40; output in gpu-tests.log):\n\n%s\n%s\n%s\n' "$FENCE" "$names" "$FENCE")
    fi
    # The largest measured relative errors per precision, whatever their tolerance.
    worst=$(worst_errors "$log")
    if [ -n "$worst" ]; then
        det=$(printf '%s\nLargest measured relative errors, 4 per precision (CUDA vs CPU unless named):\n\n%s\n%s\n%s\n' \
            "$det" "$FENCE" "$worst" "$FENCE")
    fi
    DETAILS[gpu-tests]=$det
    if [ $rc = 124 ]; then finish TIMEOUT "$notes (cut off by the cap)"
    elif [ "$total" = 0 ]; then finish FAIL "no gpu tests registered (CUDA module not configured?)"
    elif [ "$failed" = 0 ] && [ "$skipped" = 0 ] && [ $rc = 0 ]; then finish PASS "$notes"
    else finish FAIL "$notes"; fi
}

# ------------------------------------------------------------------ 4. train CUDA vs CPU
# Compares the metrics.jsonl of the runs: prints a markdown section, then one line of key
# numbers; exit 1 when a CUDA run misses its tolerance over the first 30 steps.
compare_runs_py() {
    python3 - "$@" <<'PY'
import json, math, statistics, sys
tol = {"fp32": 1e-4, "tf32": 2e-3, "bf16": 3e-2, "fp16": 3e-2}
runs = {}
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    train, val = {}, {}
    try:
        for line in open(path):
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            (train if d.get("split") == "train" else val)[d["step"]] = d  # later line wins
    except OSError:
        pass
    runs[name] = (train, val)
def med(xs):
    return statistics.median(xs) if xs else float("nan")
out, keys, ok = [], [], True
out.append("| run | steps | first loss | last loss | val loss | median step ms | median tok/s |")
out.append("|---|---|---|---|---|---|---|")
for name, (train, val) in runs.items():
    steps = sorted(train)
    ms = [train[s]["ms"] for s in steps[1:]]  # step 1 carries the warm-up
    tps = [train[s].get("tok_per_s", float("nan")) for s in steps[1:]]
    vl = val[max(val)]["loss"] if val else float("nan")
    out.append("| %s | %d | %s | %s | %.4f | %.2f | %.0f |" % (
        name, len(steps), "%.4f" % train[steps[0]]["loss"] if steps else "-",
        "%.4f" % train[steps[-1]]["loss"] if steps else "-", vl, med(ms), med(tps)))
    keys.append("%s %.1f ms" % (name, med(ms)) if ms else "%s no steps" % name)
cpu = runs.get("cpu-fp32", ({}, {}))[0]
out.append("")
out.append("| cuda run vs cpu-fp32 | common steps | max rel diff (steps 1-30) | max rel diff (all common) | tolerance (1-30) | verdict |")
out.append("|---|---|---|---|---|---|")
for name, (train, _) in runs.items():
    if not name.startswith("cuda-"):
        continue
    prec = name.split("-", 1)[1]
    common = sorted(set(train) & set(cpu))
    rel = {s: abs(train[s]["loss"] - cpu[s]["loss"]) / abs(cpu[s]["loss"]) for s in common}
    finite = all(math.isfinite(train[s]["loss"]) for s in train) and len(train) > 0
    m30 = max([rel[s] for s in common if s <= 30], default=float("nan"))
    mall = max(rel.values(), default=float("nan"))
    good = finite and len([s for s in common if s <= 30]) >= 30 and m30 <= tol[prec]
    ok = ok and good
    out.append("| %s | %d | %.2e | %.2e | %.0e | %s |" % (name, len(common), m30, mall, tol[prec],
               "ok" if good else "FAIL"))
    keys.append("%s max rel %.1e (1-30) %.1e (%d steps)" % (prec, m30, mall, len(common))
                if common else "%s: no steps to compare" % prec)
print("\n".join(out))
print("KEYS " + "; ".join(keys))
sys.exit(0 if ok else 1)
PY
}

# Without python3: the same figures with sed/awk (the train lines' fixed key order).
compare_runs_awk() {
    local ok=0 keys="" name path
    extract() { sed -n 's/^{"step": \([0-9]*\), "split": "train", "loss": \([^,]*\),.*"ms": \([^,]*\),.*/\1 \2 \3/p' "$1" 2>/dev/null; }
    median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
    echo "| run | steps | median step ms |"
    echo "|---|---|---|"
    for arg in "$@"; do
        name=${arg%%=*}; path=${arg#*=}
        extract "$path" > "$OUT/.steps-$name"
        echo "| $name | $(wc -l < "$OUT/.steps-$name") | $(tail -n +2 "$OUT/.steps-$name" | awk '{print $3}' | median) |"
        keys="$keys$name $(tail -n +2 "$OUT/.steps-$name" | awk '{print $3}' | median) ms; "
    done
    echo
    echo "| cuda run vs cpu-fp32 | common steps | max rel diff (1-30) | max rel diff (all) | verdict |"
    echo "|---|---|---|---|---|"
    for arg in "$@"; do
        name=${arg%%=*}
        case $name in cuda-*) ;; *) continue ;; esac
        local prec=${name#cuda-} tol=3e-2
        [ "$prec" = fp32 ] && tol=1e-4
        [ "$prec" = tf32 ] && tol=2e-3
        local line
        line=$(awk -v tol="$tol" 'NR == FNR {c[$1] = $2; next}
            ($1 in c) { d = $2 - c[$1]; if (d < 0) d = -d; r = d / (c[$1] < 0 ? -c[$1] : c[$1]);
                        if ($2 != $2 + 0) r = 1e9; n++; if (r > m) m = r; if ($1 <= 30) { n30++; if (r > m30) m30 = r } }
            END { v = (n30 >= 30 && m30 <= tol) ? "ok" : "FAIL"; printf "%d %.2e %.2e %s\n", n, m30, m, v }' \
            "$OUT/.steps-cpu-fp32" "$OUT/.steps-$name")
        read -r n m30 m v <<< "$line"
        echo "| $name | $n | $m30 | $m | $v |"
        [ "$v" = ok ] || ok=1
        keys="$keys$prec max rel $m30 (1-30) $m ($n steps); "
    done
    echo "KEYS $keys"
    return $ok
}

stage_train() {
    begin train
    local log=$OUT/train.log dir=$OUT/train rc
    : > "$log"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed"; return; fi
    local cli=$BUILD/trainrt config=$ROOT/examples/configs/shakespeare.toml
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! run_capped "$(cap 60)" "$log" "$cli" prepare --text "$ROOT/examples/data/tinyshakespeare.txt" \
            --out "$dir/data" --val-fraction 0.1; then
        finish FAIL "trainrt prepare failed (train.log)"
        return
    fi
    # name device precision cap
    local runs=("cuda-fp32 cuda fp32 60" "cuda-tf32 cuda tf32 60" "cuda-bf16 cuda bf16 60" "cpu-fp32 cpu fp32 150")
    local specs=() statuses="" r name device prec secs left
    for r in "${runs[@]}"; do
        read -r name device prec secs <<< "$r"
        if [ "$device" = cpu ]; then
            # Leave the CPU test stage a minute; the CPU run stops (SIGTERM: it finishes the
            # step and writes its checkpoint) when its cap ends, and is compared on the steps
            # it reached.
            left=$(( $(cap 100000) - 60 ))
            [ "$left" -lt "$secs" ] && secs=$left
        fi
        secs=$(cap "$secs")
        run_capped "$secs" "$dir/$name.log" "$cli" train "$config" --fresh \
            --set "runtime.device=\"$device\"" --set "runtime.precision=\"$prec\"" \
            --set "train.steps=$TRAIN_STEPS" --set "runtime.log_every=1" \
            --set "train.eval_every=$TRAIN_STEPS" --set "train.checkpoint_every=0" \
            --set "train.out_dir=\"$dir/$name\"" \
            --set "data.train=\"$dir/data/train.bin\"" --set "data.val=\"$dir/data/val.bin\""
        rc=$?
        case $rc in
            0) statuses="$statuses$name ok; " ;;
            124 | 143) statuses="$statuses$name stopped at the ${secs}s cap; " ;;
            *) statuses="$statuses$name FAILED (status $rc, $name.log); " ;;
        esac
        cat "$dir/$name.log" >> "$log"
        specs+=("$name=$dir/$name/metrics.jsonl")
    done
    local table keys
    if [ "$HAVE_PY" = 1 ]; then table=$(compare_runs_py "${specs[@]}"); rc=$?
    else table=$(compare_runs_awk "${specs[@]}"); rc=$?; fi
    keys=$(printf '%s\n' "$table" | sed -n 's/^KEYS //p')
    table=$(printf '%s\n' "$table" | grep -v '^KEYS ')
    DETAILS[train]=$(printf 'Demo config, %s steps, log_every 1; per-step train losses from each run'"'"'s metrics.jsonl (%s).\nRuns: %s\n\n%s\n' \
        "$TRAIN_STEPS" "$dir" "$statuses" "$table")
    if [ $rc = 0 ] && ! grep -q FAILED <<< "$statuses"; then finish PASS "$keys"
    else finish FAIL "$keys"; fi
}

# ------------------------------------------------------------------ 5. cpu tests
stage_cpu_tests() {
    begin cpu-tests
    local log=$OUT/cpu-tests.log xml=$OUT/cpu-tests.xml rc counts
    : > "$log"
    rm -f "$xml"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed"; return; fi
    run_capped "$(cap 150)" "$log" ctest --test-dir "$BUILD" -L cpu -j "$JOBS" --timeout 120 \
        --output-on-failure --output-junit "$xml"
    rc=$?
    if [ -s "$xml" ]; then counts=$(junit_counts "$xml"); else counts=$(log_counts "$log"); fi
    read -r passed failed skipped total <<< "$counts"
    local notes="$passed passed, $failed failed, $skipped skipped (of $total)"
    if [ -s "$xml" ] && [ "$failed" -gt 0 ]; then
        DETAILS[cpu-tests]=$(printf 'Failed:\n\n%s\n%s\n%s\n' "$FENCE" \
            "$(junit_failed_names "$xml" | head -40)" "$FENCE")
    fi
    if [ $rc = 124 ]; then finish TIMEOUT "$notes (cut off by the cap)"
    elif [ "$failed" = 0 ] && [ "$total" -gt 0 ] && [ $rc = 0 ]; then finish PASS "$notes"
    else finish FAIL "$notes"; fi
}

# ------------------------------------------------------------------ 6. ladder
# bench/gpu_ladder.py with what is left of the budget: its table goes to OUTDIR/ladder/ladder.md
# (linked below the summary table), each run's log and JSON beside it.
stage_ladder() {
    begin ladder
    local log=$OUT/ladder.log dir=$OUT/ladder rc left
    : > "$log"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed (or was not selected)"; return; fi
    if [ "$HAVE_PY" != 1 ]; then finish FAIL "python3 not found (bench/gpu_ladder.py needs it)"; return; fi
    left=$(cap 100000)
    if [ "$left" -lt "$LADDER_MIN_S" ]; then
        finish "skipped" "only ${left} s of the budget left (< LADDER_MIN_S = $LADDER_MIN_S); run it alone: GPU_CHECK_STAGES=\"device build ladder\""
        return
    fi
    # The ladder stops starting runs when its own budget is spent; the cap is the backstop.
    # shellcheck disable=SC2086  # LADDER_ARGS is a list of options
    run_capped "$left" "$log" python3 "$ROOT/bench/gpu_ladder.py" --trainrt "$BUILD/trainrt" \
        --out "$dir" --models "$LADDER_MODELS" --budget $(( left - 15 )) ${LADDER_ARGS:-}
    rc=$?
    local keys
    keys=$(python3 - "$dir/ladder.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
out = []
for name, e in d["models"].items():
    ok = [r for r in e["rungs"] if r.get("status") == "ok"]
    best = max(ok, key=lambda r: r["report"]["tokens_per_s"]) if ok else None
    part = "%s: %d/%d rungs ok" % (name, len(ok), len(e["rungs"]))
    if best:
        part += ", best %s %.0f tok/s" % (best["rung"], best["report"]["tokens_per_s"])
    part += "".join(", x%.2f vs torch %s" % (v, m) for m, v in e.get("ratios", {}).items())
    out.append(part)
print("; ".join(out))
PY
)
    DETAILS[ladder]=$(printf 'Table: [ladder/ladder.md](ladder/ladder.md) (JSON: ladder/ladder.json; per-run logs in ladder/<model>/).\n')
    if [ -f "$dir/ladder.md" ]; then
        DETAILS[ladder]=$(printf '%s\n\n%s\n' "${DETAILS[ladder]}" "$(grep -E '^(## |Ours = |Goals )' "$dir/ladder.md")")
    fi
    if [ "$rc" = 124 ]; then finish TIMEOUT "${keys:-no results} (cut off by the cap)"
    elif [ "$rc" = 0 ]; then finish PASS "${keys:-no results}"
    else finish FAIL "${keys:-no results} (gpu_ladder.py exit $rc; ladder.log)"; fi
}

# ------------------------------------------------------------------ main
# cuDNN / NCCL come as Python wheels on the GPU machine: let the module find them by name.
if [ "$HAVE_PY" = 1 ]; then
    for pkg in cudnn nccl; do
        d=$(python3 -c "import nvidia.$pkg as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null)
        if [ -n "$d" ] && [ -d "$d" ]; then export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"; fi
    done
fi

write_summary
for s in "${STAGES[@]}"; do
    if selected "$s"; then
        case $s in
            device) stage_device ;;
            build) stage_build ;;
            gpu-tests) stage_gpu_tests ;;
            train) stage_train ;;
            cpu-tests) stage_cpu_tests ;;
            ladder) stage_ladder ;;
        esac
    else
        STATUS[$s]="skipped"; NOTES[$s]="not in GPU_CHECK_STAGES"
        # Later stages may use a BUILD_DIR built by an earlier run.
        if [ "$s" = build ] && [ -x "$BUILD/trainrt" ] && [ -f "$BUILD/libtrainrt-cuda.so" ]; then
            BUILD_OK=1; NOTES[$s]="not in GPU_CHECK_STAGES; using the existing build in $BUILD"
        fi
        write_summary
    fi
done

echo
cat "$OUT/summary.md"
for s in "${STAGES[@]}"; do
    [ "${STATUS[$s]}" = PASS ] || [ "${STATUS[$s]}" = skipped ] || exit 1
done
exit 0
