#!/usr/bin/env bash
# The check of libtrainrt's CUDA backend on a GPU machine, in two calls of one loan
# (docs/GPU_CHECK.md: the loan plan, the minutes per stage, how to read the summary).
#
#   bash scripts/gpu-check.sh [--plan check|ladder|cpu] [--dry-run] OUTDIR [BUILD_DIR]
#   bash scripts/gpu-check.sh --prepare-deps      (dev machine) copy what a bare GPU machine
#                                                 lacks into ./.deps: toml++, OpenBLAS,
#                                                 oneDNN, googletest sources, cuDNN 9 headers
#   bash scripts/gpu-check.sh --record OUT1 [OUT2] write bench/results/<date>-gpu-check-<gpu>.md
#                                                 from the summaries the two calls brought back
#   bash scripts/gpu-check.sh --digest            the sources' digest a summary names
#
# Plans (each ends inside one 10-minute command; GPU_CHECK_BUDGET, default 540 s):
#   check   call 1: device, build (library, CLI, CUDA module, GPU tests), gpu-tests,
#           train (CUDA vs CPU), memcheck (compute-sanitizer on a subset of the GPU tests)
#   ladder  call 2: device, build (reuses BUILD_DIR, else the binaries call 1 brought back in
#           GPU_CHECK_PREBUILT, else builds the CLI and module only), ladder (bench/gpu_ladder.py,
#           GPT-2 124M with torch.compile beside it)
#   cpu     call 3: device, build (as the ladder's), cpu (bench/cpu_scaling.sh: the host's
#           CPU against its PyTorch at 16 threads and below, with per-op profiles, within 2
#           minutes; issue 42)
# The three fit a 15-minute loan with a machine start and one repair round (docs/GPU_CHECK.md).
# Every stage runs under its own cap; the caps sum to less than the budget. OUTDIR receives
# at most 8 small files: summary.md (rewritten after every stage), logs.tar.gz (every log,
# repacked after every stage), and per plan trainrt-bin.tar.gz (check), ladder.md +
# ladder.json (ladder) or cpu_scaling.md (cpu). The build and the work files live in BUILD_DIR (default
# ./build-gpu), never in OUTDIR.
#
# --dry-run (or GPU_CHECK_DRY_RUN=1): on a machine without a GPU, everything that can run
# does (library probes, the build, the GPU tests' registration and skips, the CPU side of the
# training comparison, the packing), and what needs a device is reported "skipped: no GPU".
#
# Exit status: 0 when every stage that ran passed (skipped ones aside), 1 otherwise, 2 on bad
# usage.
#
# Environment: JOBS (default nproc), CUDA_ARCHS (default 90-real), GPU_CHECK_BUDGET (s),
# GPU_CHECK_STAGES (override the plan's stages), GPU_CHECK_CAPS ("stage=seconds ..."),
# GPU_CHECK_PREBUILT (call 1's trainrt-bin.tar.gz, for the ladder plan), GPU_CHECK_CUDNN
# (required | optional; default required: a build without cuDNN attention fails),
# TRAIN_STEPS (CUDA runs, default 200), TRAIN_CPU_STEPS (the CPU reference, default 30),
# GPU_TEST_JOBS (default 4), GPU_TEST_REGEX (ctest -R, for a repair loop), MEMCHECK_RUNS ("binary=gtest-filter ..."),
# LADDER_MODELS (default gpt2; tiny,gpt2 adds the tiny model's ladder),
# LADDER_ARGS (more gpu_ladder.py options), CPU_SCALING_* (bench/cpu_scaling.sh's),
# GPU_CHECK_USE_DEPS=1 (ignore the system's
# toml++/OpenBLAS/GTest/cuDNN headers and use ./.deps), TOMLPP_INCLUDE_DIR,
# OPENBLAS_INCLUDE_DIR + OPENBLAS_LIBRARY, GTest_DIR, TRAINRT_CUDNN_INCLUDE_DIR,
# GPU_CHECK_CMAKE_ARGS (more configure options, e.g. -DTRAINRT_WITH_CUDNN=OFF).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEPS=$ROOT/.deps
FENCE='```'  # markdown code fence in the summary

usage() {
    sed -n '2,/^set -uo pipefail/{/^set/d;p}' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# The device tool copies the working tree, but its copy of .git can be older than the tree
# (seen on the first H100 loan: the fixes ran, the summary named the commit before them). So
# the sources are named by content too: sha256 over every file the build reads, in path
# order. `bash scripts/gpu-check.sh --digest` prints it here to find the matching commit.
source_digest() {
    (cd "$ROOT" && find CMakeLists.txt cmake include src tests bench scripts examples \
        \( -path bench/results -o -path examples/data -o -name __pycache__ \) -prune -o -type f -print0 2>/dev/null |
        LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)
}

# ------------------------------------------------------------------ --prepare-deps
# Copies, from this machine's Debian packages, what the GPU machine (no Debian packages, no
# network) needs to build: toml++ headers (header-only), OpenBLAS (OpenMP build: headers,
# libopenblas.so.0 and the Fortran runtime it needs), oneDNN (headers, libdnnl.so.2), the
# googletest sources (built there by this script) and the cuDNN 9 headers (libcudnn itself is
# on the GPU machine). About 20 MB (the two large libraries xz-compressed); .deps/ travels
# with the working tree (carry it).
# A library into .deps/lib: xz-compressed where xz is here (NAME.xz), else as it is.
pack_lib() {
    local name
    name=$(basename "$1")
    if command -v xz >/dev/null 2>&1; then xz -T2 -6 -c "$1" > "$DEPS/lib/$name.xz"
    else cp -L "$1" "$DEPS/lib/$name"; fi
}

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
    local cudnn_inc="" d
    for d in ${TRAINRT_CUDNN_INCLUDE_DIR:-} /usr/local/cuda/include /usr/include /usr/include/"$arch"; do
        [ -f "$d/cudnn_graph.h" ] && { cudnn_inc=$d; break; }
    done
    if [ -z "$cudnn_inc" ]; then
        echo "missing the cuDNN 9 headers (cudnn_graph.h in /usr/local/cuda/include; set TRAINRT_CUDNN_INCLUDE_DIR): without them the GPU build would get the cuDNN stub, and gpu-check fails its build stage" >&2
        missing=1
    fi
    [ "$missing" = 0 ] || return 1
    rm -rf "$DEPS"
    mkdir -p "$DEPS/include/openblas-openmp" "$DEPS/lib" "$DEPS/src" "$DEPS/cudnn/include"
    cp -r /usr/include/toml++ "$DEPS/include/"
    cp "$ob_inc"/*.h "$DEPS/include/openblas-openmp/"
    # The two large libraries travel xz-compressed (OpenBLAS 35 MB -> 4 MB, oneDNN 40 -> 7):
    # tree and .deps must fit the 64 MiB a call carries. The build stage unpacks them into
    # BUILD_DIR/deps-lib (deps_lib), never into .deps, so .deps stays small.
    pack_lib "$ob_lib/libopenblas.so.0"
    local lib path
    for lib in libgfortran.so.5 libquadmath.so.0; do
        path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
        [ -n "$path" ] && cp -L "$path" "$DEPS/lib/$lib"
    done
    cp -r /usr/src/googletest "$DEPS/src/googletest"
    cp "$cudnn_inc"/cudnn*.h "$DEPS/cudnn/include/"
    # oneDNN (optional: without it the host's CPU matmuls run on OpenBLAS, no AMX): the headers,
    # libdnnl.so.2 and the OpenCL loader it links.
    local dnnl_lib=/usr/lib/$arch/libdnnl.so.2 note="no oneDNN (apt-get install libdnnl-dev)"
    if [ -f /usr/include/oneapi/dnnl/dnnl.hpp ] && [ -e "$dnnl_lib" ]; then
        cp -r /usr/include/oneapi "$DEPS/include/"
        pack_lib "$dnnl_lib"
        path=$(ldconfig -p | awk '$1 == "libOpenCL.so.1" && /x86-64/ {print $NF; exit}')
        [ -n "$path" ] && cp -L "$path" "$DEPS/lib/libOpenCL.so.1"
        note="oneDNN $(dpkg-query -W -f '${Version}' libdnnl2 2>/dev/null)"
    fi
    echo "prepared $DEPS ($(du -sh "$DEPS" | cut -f1)): toml++, OpenBLAS (openmp), googletest sources, cuDNN headers from $cudnn_inc, $note"
    echo "carry it to the GPU machine with the working tree (keep it out of commits: /.deps/ in .gitignore)"
}

# ------------------------------------------------------------------ --record
# bench/results/<date>-gpu-check-<gpu>.md from the folders the calls brought back.
record_results() {
    local first=$1 gpu date out f
    [ -f "$first/summary.md" ] || { echo "gpu-check --record: no $first/summary.md" >&2; return 2; }
    gpu=$(sed -n 's/^- gpu: \([^,;]*\).*/\1/p' "$first/summary.md" | head -1)
    gpu=$(printf '%s' "${gpu:-unknown}" | tr 'A-Z' 'a-z' | sed 's/nvidia //; s/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
    date=$(date -u +%Y-%m-%d)
    out=$ROOT/bench/results/$date-gpu-check-$gpu.md
    {
        echo "# GPU check, $date ($gpu)"
        echo
        echo "Made by \`scripts/gpu-check.sh --record\` from the summaries of the loan's calls"
        echo "(docs/GPU_CHECK.md); their logs stay in the calls' logs.tar.gz."
        for f in "$@"; do
            [ -f "$f/summary.md" ] || continue
            echo
            sed 's/^# libtrainrt GPU check/## GPU check/' "$f/summary.md"
            if [ -f "$f/ladder.md" ]; then
                echo
                sed 's/^# /### /; s/^## /### /' "$f/ladder.md"
            fi
        done
    } > "$out"
    echo "wrote $out"
}

PLAN=check
DRY_RUN=${GPU_CHECK_DRY_RUN:-0}
while [ $# -gt 0 ]; do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --prepare-deps) prepare_deps; exit $? ;;
        --digest) source_digest; exit $? ;;
        --record) shift; [ $# -ge 1 ] || { usage >&2; exit 2; }; record_results "$@"; exit $? ;;
        --plan) PLAN=${2:-}; shift 2 || { usage >&2; exit 2; } ;;
        --plan=*) PLAN=${1#--plan=}; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        -*) usage >&2; exit 2 ;;
        *) break ;;
    esac
done
case $PLAN in check | ladder | cpu) ;; *) echo "gpu-check: --plan is check, ladder or cpu, not '$PLAN'" >&2; exit 2 ;; esac
[ $# -ge 1 ] && [ $# -le 2 ] || { usage >&2; exit 2; }

mkdir -p "$1" || { echo "gpu-check: cannot create $1" >&2; exit 2; }
OUT=$(cd "$1" && pwd)
BUILD=${2:-$ROOT/build-gpu}
mkdir -p "$BUILD" || { echo "gpu-check: cannot create $BUILD" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
case "$BUILD/" in "$OUT"/*) echo "gpu-check: BUILD_DIR $BUILD is inside OUTDIR $OUT; the files that come back must stay small" >&2; exit 2 ;; esac
case "$OUT/" in "$BUILD"/*) echo "gpu-check: OUTDIR $OUT is inside BUILD_DIR $BUILD" >&2; exit 2 ;; esac
WORK=$BUILD/gpu-check-$PLAN      # logs, training runs, ladder runs (packed into logs.tar.gz)
SOURCES=$(source_digest)
[ -n "$SOURCES" ] || SOURCES=unknown
rm -rf "$WORK"
mkdir -p "$WORK"
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
BUDGET=${GPU_CHECK_BUDGET:-540}
CUDA_ARCHS=${CUDA_ARCHS:-90-real}
TRAIN_STEPS=${TRAIN_STEPS:-200}
TRAIN_CPU_STEPS=${TRAIN_CPU_STEPS:-30}
GPU_TEST_JOBS=${GPU_TEST_JOBS:-4}
LADDER_MODELS=${LADDER_MODELS:-gpt2}
CUDNN_POLICY=${GPU_CHECK_CUDNN:-required}
# The memcheck subset, "binary=gtest-filter" runs (compute-sanitizer slows kernels 10-100x):
# every op of the op-case table in fp32 and bf16 (bf16 takes the cast and working-copy paths
# fp16 shares), memory and the working copy per precision, the step ops, the samplers, the
# cuDNN attention, the internal elementwise kernels at odd alignments, and the length-bucket
# casts and bucketed attention.
MEMCHECK_RUNS=${MEMCHECK_RUNS:-'test_gpu_ops=Op/CudaOpCases.*_fp32:Op/CudaOpCases.*_bf16:Op/CudaOpCases.*_bf16_acts:Precision/CudaOps.*:Precision/CudaStep.*:Precision/CudaSampler.*:Precision/CudaDrawToken.*:LowPrecision/CudnnAttention.ForwardBackwardMatchTheCpu/* test_gpu_elementwise=CudaElementwise.* test_gpu_cudnn_buckets=LowPrecision/PaddedCast.*:LowPrecision/CudnnBuckets.BucketedForwardBackwardMatchTheCpu/*:LowPrecision/CudnnBuckets.LowPrecisionActivationsInPlaceAndPaddedMatchTheCpu/*'}
T0=$(date +%s)
HAVE_PY=0
if command -v python3 >/dev/null 2>&1; then HAVE_PY=1; fi
# Where the CLI, library and module that the later stages run live: BUILD, or the folder call
# 1's binaries were unpacked into (use_prebuilt).
RUN_DIR=$BUILD
export TRAINRT_CUDA_MODULE=$RUN_DIR/libtrainrt-cuda.so

# ------------------------------------------------------------------ plan, stages, caps
STAGES=(device build gpu-tests train memcheck ladder cpu)
declare -A CAP
if [ "$PLAN" = check ]; then
    DEFAULT_STAGES="device build gpu-tests train memcheck"
    CAP=([device]=20 [build]=180 [gpu-tests]=150 [train]=90 [memcheck]=90 [ladder]=0 [cpu]=0)
elif [ "$PLAN" = ladder ]; then
    DEFAULT_STAGES="device build ladder"
    CAP=([device]=20 [build]=100 [gpu-tests]=150 [train]=90 [memcheck]=90 [ladder]=330 [cpu]=0)
else
    DEFAULT_STAGES="device build cpu"
    # cpu: issue 42's "at most 2 minutes of device time" for the benchmark itself.
    CAP=([device]=20 [build]=100 [gpu-tests]=150 [train]=90 [memcheck]=90 [ladder]=0 [cpu]=140)
fi
# The plan's own promise: its caps sum to less than the default budget (docs/GPU_CHECK.md).
PLAN_SUM=0
for s in $DEFAULT_STAGES; do PLAN_SUM=$(( PLAN_SUM + CAP[$s] )); done
if [ "$PLAN_SUM" -ge 540 ]; then
    echo "gpu-check: internal: the $PLAN plan's caps sum to $PLAN_SUM s, not less than 540 s" >&2
    exit 2
fi
for kv in ${GPU_CHECK_CAPS:-}; do
    k=${kv%%=*} v=${kv#*=}
    case " ${STAGES[*]} " in *" $k "*) ;; *) echo "gpu-check: unknown stage '$k' in GPU_CHECK_CAPS" >&2; exit 2 ;; esac
    case $v in '' | *[!0-9]*) echo "gpu-check: GPU_CHECK_CAPS wants stage=seconds, not '$kv'" >&2; exit 2 ;; esac
    CAP[$k]=$v
done
SELECTED=" ${GPU_CHECK_STAGES:-$DEFAULT_STAGES} "
for s in $SELECTED; do
    case " ${STAGES[*]} " in *" $s "*) ;; *) echo "gpu-check: unknown stage '$s' in GPU_CHECK_STAGES (${STAGES[*]})" >&2; exit 2 ;; esac
done
selected() { [[ $SELECTED == *" $1 "* ]]; }
CAP_SUM=0
for s in $SELECTED; do CAP_SUM=$(( CAP_SUM + CAP[$s] )); done

declare -A STATUS TIME NOTES DETAILS
for s in "${STAGES[@]}"; do STATUS[$s]="not reached"; TIME[$s]=""; NOTES[$s]=""; DETAILS[$s]=""; done

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
# Facts the results file needs, filled by the device stage.
GPU_LINE="not probed"; LIBS_LINE="not probed"

write_summary() {
    local tmp=$OUT/summary.md.tmp s
    {
        echo "# libtrainrt GPU check"
        echo
        echo "- plan: $PLAN$([ "$DRY_RUN" = 1 ] && echo ' (dry run)'); stages:$SELECTED; caps sum to $CAP_SUM s of a $BUDGET s budget"
        echo "- started: $(date -u -d "@$T0" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u), elapsed $(( $(date +%s) - T0 )) s"
        echo "- machine: $(hostname 2>/dev/null || echo '?'), $(nproc 2>/dev/null || echo '?') cores; commit $COMMIT; sources $SOURCES"
        echo "- gpu: $GPU_LINE"
        echo "- libraries: $LIBS_LINE"
        echo "- build: $BUILD; logs: logs.tar.gz (from $WORK)"
        echo
        echo "| stage | status | time | cap | key numbers |"
        echo "|---|---|---|---|---|"
        for s in "${STAGES[@]}"; do
            selected "$s" || [ "${STATUS[$s]}" != "not reached" ] || continue
            echo "| $s | ${STATUS[$s]} | ${TIME[$s]:+${TIME[$s]} s} | ${CAP[$s]} s | ${NOTES[$s]} |"
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

# Logs (no data shards, checkpoints or binaries) into OUTDIR/logs.tar.gz; after every stage,
# so a call cut off by its time limit still brings them back.
pack_logs() {
    local tmp=$OUT/logs.tar.gz.tmp
    (cd "$WORK" && find . -type f \( -name '*.log' -o -name '*.md' -o -name '*.json' \
        -o -name '*.jsonl' -o -name '*.xml' -o -name '*.toml' -o -name '*.txt' \) -size -8M -print0 |
        tar --null -czf "$tmp" -T - 2>/dev/null) && mv "$tmp" "$OUT/logs.tar.gz"
    rm -f "$tmp"
}

# Seconds a stage may use: its own cap, within what is left of the budget. Sets STAGE_SECS
# and STAGE_CUT_WHY (what a TIMEOUT will say).
stage_allowance() {
    local want=$1 left
    left=$(( T0 + BUDGET - $(date +%s) ))
    if [ "$left" -lt "$want" ]; then
        STAGE_SECS=$left
        STAGE_CUT_WHY="the budget: only $left s of $BUDGET s were left (its cap is $want s)"
    else
        STAGE_SECS=$want
        STAGE_CUT_WHY="its $want s cap"
    fi
}

# run_capped SECONDS LOG CMD... : CMD under timeout, output appended to LOG; returns its
# status (124 = cut off).
run_capped() {
    local secs=$1 log=$2
    shift 2
    if [ "$secs" -lt 5 ]; then
        echo "gpu-check: no time left for: $*" >> "$log"
        return 124
    fi
    echo "\$ $* (cap ${secs}s)" >> "$log"
    timeout -k 10 "$secs" "$@" >> "$log" 2>&1
}

# A stage's own deadline: run_capped's seconds for the rest of the stage.
STAGE_END=0
stage_left() {
    local left=$(( STAGE_END - $(date +%s) ))
    [ "$left" -gt 0 ] && echo "$left" || echo 0
}

begin() {
    STAGE=$1
    STAGE_T0=$(date +%s)
    stage_allowance "${CAP[$STAGE]}"
    STAGE_END=$(( STAGE_T0 + STAGE_SECS ))
    STATUS[$STAGE]="running"
    write_summary
    echo "== gpu-check: $STAGE (up to $STAGE_SECS s)" >&2
}
finish() {  # STATUS NOTES
    STATUS[$STAGE]=$1
    NOTES[$STAGE]=$2
    if [ "$1" = TIMEOUT ]; then NOTES[$STAGE]="$2 -- cut off by $STAGE_CUT_WHY"; fi
    TIME[$STAGE]=$(( $(date +%s) - STAGE_T0 ))
    write_summary
    pack_logs
}
NO_GPU_STATUS="skipped: no GPU"

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

# ------------------------------------------------------------------ libraries
# The CUDA libraries the module and cuDNN load by name at run time. On the GPU machine cuDNN
# and NCCL come as Python wheels (no system copy): a wheel folder is put on LD_LIBRARY_PATH
# only for a library the dynamic linker cannot already find, so nothing else is shadowed.
CUDA_LIB_DIRS=()
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && CUDA_LIB_DIRS+=("$d")
done
resolvable() {  # SONAME: found on LD_LIBRARY_PATH, in the linker cache or the toolkit
    local so=$1 d
    local IFS=:
    for d in ${LD_LIBRARY_PATH:-}; do [ -n "$d" ] && [ -e "$d/$so" ] && return 0; done
    unset IFS
    ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$so " && return 0
    for d in "${CUDA_LIB_DIRS[@]}"; do [ -e "$d/$so" ] && return 0; done
    return 1
}
wheel_lib_dirs() {
    [ "$HAVE_PY" = 1 ] || return 0
    python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
except Exception:
    raise SystemExit(0)
for base in list(nvidia.__path__):
    for d in sorted(glob.glob(os.path.join(base, "*", "lib")) + glob.glob(os.path.join(base, "*", "*", "lib"))):
        print(d)
PY
}
LIB_SOURCES=""
setup_library_path() {
    local so d found wheels
    wheels=$(wheel_lib_dirs)
    for so in libcudnn.so.9 libnvrtc.so.13 libcublasLt.so.13 libnccl.so.2; do
        resolvable "$so" && continue
        found=""
        for d in $wheels; do
            if [ -e "$d/$so" ]; then found=$d; break; fi
        done
        if [ -n "$found" ]; then
            export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$found"
            LIB_SOURCES="$LIB_SOURCES$so from the wheel folder $found; "
        fi
    done
    # The toolkit's folder last: the module's own runpath, for the probes' sake.
    for d in "${CUDA_LIB_DIRS[@]}"; do
        case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d" ;; esac
    done
}

# Loads each library as the module and cuDNN will, prints "name version path" lines, and
# compiles a kernel with NVRTC for sm_90 (what cuDNN's runtime-compiled engines do; it needs
# libnvrtc-builtins too). Exit 1 when one is missing.
probe_libraries_py() {
    python3 - "$CUDA_ARCHS" <<'PY'
import ctypes, sys

def path_of(name):
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                if "/" in p and p.rsplit("/", 1)[-1].startswith(name):
                    return p
    except OSError:
        pass
    return "?"

ok = True
def load(label, sonames):
    global ok
    for so in sonames:
        try:
            return ctypes.CDLL(so), so
        except OSError as e:
            err = str(e)
    print(f"MISSING {label}: none of {', '.join(sonames)} loads ({err})")
    ok = False
    return None, None

lib, so = load("cuDNN", ["libcudnn.so.9"])
if lib:
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    v = lib.cudnnGetVersion()
    print(f"cuDNN {v // 10000}.{v % 10000 // 100}.{v % 100} {path_of('libcudnn.so')}")
    # The parts libcudnn opens on demand: the graph API and both engine libraries.
    for sub in ("libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
                "libcudnn_engines_runtime_compiled.so.9"):
        try:
            ctypes.CDLL(sub)
            print(f"  {sub} {path_of(sub.split('.so')[0] + '.so')}")
        except OSError as e:
            print(f"MISSING {sub}: {e}")
            ok = False
lib, so = load("cuBLASLt", ["libcublasLt.so.13"])
if lib:
    lib.cublasLtGetVersion.restype = ctypes.c_size_t
    v = lib.cublasLtGetVersion()
    print(f"cuBLASLt {v // 10000}.{v % 10000 // 100}.{v % 100} {path_of('libcublasLt.so')}")
nvrtc, so = load("NVRTC", ["libnvrtc.so.13"])
if nvrtc:
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    print(f"NVRTC {major.value}.{minor.value} {path_of('libnvrtc.so')}")
    arch = sys.argv[1].split(";")[0].split("-")[0] or "90"
    prog = ctypes.c_void_p()
    src = b'extern "C" __global__ void k(float* x) { x[threadIdx.x] = __expf(x[threadIdx.x]); }'
    rc = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, b"probe.cu", 0, None, None)
    opts = (ctypes.c_char_p * 1)(f"--gpu-architecture=compute_{arch}".encode())
    rc = rc or nvrtc.nvrtcCompileProgram(prog, 1, opts)
    if rc == 0:
        print(f"  NVRTC compiles for compute_{arch} (builtins {path_of('libnvrtc-builtins')})")
    else:
        nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p
        print(f"MISSING NVRTC compile for compute_{arch}: {nvrtc.nvrtcGetErrorString(rc).decode()}")
        ok = False
lib, so = load("NCCL", ["libnccl.so.2"])
if lib:
    v = ctypes.c_int()
    lib.ncclGetVersion(ctypes.byref(v))
    n = v.value  # 2.9 and later: major*10000 + minor*100 + patch
    print(f"NCCL {n // 10000}.{n % 10000 // 100}.{n % 100} {path_of('libnccl.so')} (informative: not used yet)")
sys.exit(0 if ok else 1)
PY
}
# Without python3: where each file is, no versions.
probe_libraries_sh() {
    local so d ok=0 where
    for so in libcudnn.so.9 libcublasLt.so.13 libnvrtc.so.13; do
        where=""
        local IFS=:
        for d in ${LD_LIBRARY_PATH:-}; do [ -n "$d" ] && [ -e "$d/$so" ] && { where=$d/$so; break; }; done
        unset IFS
        [ -n "$where" ] || where=$(ldconfig -p 2>/dev/null | awk -v l="$so" '$1 == l {print $NF; exit}')
        if [ -n "$where" ]; then echo "$so $(readlink -f "$where")"; else echo "MISSING $so"; ok=1; fi
    done
    return $ok
}

# ------------------------------------------------------------------ 1. device
HAVE_GPU=0
stage_device() {
    begin device
    local log=$WORK/device.log gpu="" cudav nvccv count=0 libs rc
    : > "$log"
    if command -v nvidia-smi >/dev/null 2>&1; then
        run_capped "$(stage_left)" "$log" nvidia-smi -L
        run_capped "$(stage_left)" "$log" nvidia-smi
        count=$(grep -c '^GPU [0-9]' "$log")
        gpu=$(timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
              --format=csv,noheader 2>/dev/null | head -1)
        cudav=$(sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' "$log" | head -1)
    else
        echo "nvidia-smi: not found" >> "$log"
    fi
    local nvcc_bin=/usr/local/cuda/bin/nvcc
    if command -v nvcc >/dev/null 2>&1; then nvcc_bin=$(command -v nvcc); fi
    nvccv=$("$nvcc_bin" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -1)
    echo "nvcc: ${nvccv:-not found}" >> "$log"
    [ "$count" -ge 1 ] && HAVE_GPU=1
    GPU_LINE="${gpu:-none}${cudav:+; driver CUDA $cudav}; nvcc ${nvccv:-not found}"

    # The libraries, by the names they are loaded with.
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >> "$log"
    [ -n "$LIB_SOURCES" ] && echo "from wheels: $LIB_SOURCES" >> "$log"
    if [ "$HAVE_PY" = 1 ]; then libs=$(probe_libraries_py 2>&1); rc=$?
    else libs=$(probe_libraries_sh); rc=$?; fi
    printf '%s\n' "$libs" >> "$log"
    LIBS_LINE=$(printf '%s\n' "$libs" | grep -v '^  ' | paste -sd ';' | sed 's/;/; /g')
    DETAILS[device]=$(printf 'Libraries as the module and cuDNN load them (LD_LIBRARY_PATH additions: %s):\n\n%s\n%s\n%s\n' \
        "${LIB_SOURCES:-none}" "$FENCE" "$libs" "$FENCE")
    local notes="$count GPU(s): ${gpu:-none}; driver CUDA ${cudav:-?}; nvcc ${nvccv:-not found}"
    if [ $rc -ne 0 ]; then
        finish FAIL "$notes; a CUDA library is missing: $(printf '%s\n' "$libs" | grep '^MISSING' | cut -c9- | paste -sd ';')"
    elif [ "$HAVE_GPU" = 1 ]; then
        finish PASS "$notes; libraries resolve"
    elif [ "$DRY_RUN" = 1 ]; then
        finish "$NO_GPU_STATUS" "libraries resolve; no GPU listed (dry run)"
    else
        finish FAIL "no GPU listed by nvidia-smi ($notes); use --dry-run on a machine without one"
    fi
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

# The runtime files the ladder needs, from a build folder or call 1's archive.
RUNTIME_FILES="trainrt libtrainrt.so* libtrainrt-cuda.so"
have_runtime() { [ -x "$1/trainrt" ] && [ -f "$1/libtrainrt-cuda.so" ] && ls "$1"/libtrainrt.so* >/dev/null 2>&1; }
module_is_stub() { grep -aq 'built without the cuDNN 9 headers' "$1/libtrainrt-cuda.so"; }

# .deps/lib's libraries, usable: BUILD_DIR/deps-lib (DEPS_LIB) holds each, a NAME.xz unpacked
# (xz, else Python's lzma) and the rest linked, plus the unversioned names the linker wants.
# Once per build folder; .deps itself is never written (it is what a call carries).
DEPS_LIB=""
deps_lib() {
    [ -d "$DEPS/lib" ] || return 1
    local dir=$BUILD/deps-lib f name
    mkdir -p "$dir"
    for f in "$DEPS"/lib/*; do
        [ -e "$f" ] || continue
        name=$(basename "$f")
        case $name in
            *.xz)
                name=${name%.xz}
                [ -e "$dir/$name" ] && continue
                if command -v xz >/dev/null 2>&1; then xz -dc "$f" > "$dir/$name.tmp"
                else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$f" "$dir/$name.tmp"
                fi >> "$1" 2>&1 && mv "$dir/$name.tmp" "$dir/$name" || { rm -f "$dir/$name.tmp"; return 1; } ;;
            *) [ -e "$dir/$name" ] || ln -s "$f" "$dir/$name" ;;
        esac
    done
    [ -e "$dir/libopenblas.so.0" ] && ln -sf libopenblas.so.0 "$dir/libopenblas.so"
    [ -e "$dir/libdnnl.so.2" ] && ln -sf libdnnl.so.2 "$dir/libdnnl.so"
    DEPS_LIB=$dir
}

# Configure arguments for the dependencies; sets DEP_ARGS, DEP_NOTE; 1 when one is missing.
resolve_deps() {
    local log=$1 found=() missing=0 d
    DEP_ARGS=()
    deps_lib "$log" || DEPS_LIB=$DEPS/lib
    local use_deps=${GPU_CHECK_USE_DEPS:-0}
    # toml++ (header-only): $TOMLPP_INCLUDE_DIR, the system, ./.deps/include.
    local toml=""
    if [ -n "${TOMLPP_INCLUDE_DIR:-}" ] && [ -f "$TOMLPP_INCLUDE_DIR/toml++/toml.h" ]; then
        toml=$TOMLPP_INCLUDE_DIR; found+=("toml++ from \$TOMLPP_INCLUDE_DIR")
    else
        local dirs=(/usr/include /usr/local/include "$DEPS/include")
        [ "$use_deps" = 1 ] && dirs=("$DEPS/include")
        for d in "${dirs[@]}"; do
            if [ -f "$d/toml++/toml.h" ]; then toml=$d; found+=("toml++ in $d"); break; fi
        done
    fi
    if [ -n "$toml" ]; then DEP_ARGS+=("-DTOMLPP_INCLUDE_DIR=$toml")
    else found+=("toml++ NOT FOUND"); missing=1; fi
    # OpenBLAS, OpenMP build (CMakeLists looks only in Debian's openblas-openmp folders).
    local arch_dir
    arch_dir=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
    if [ -n "${OPENBLAS_INCLUDE_DIR:-}" ] && [ -n "${OPENBLAS_LIBRARY:-}" ]; then
        DEP_ARGS+=("-DOPENBLAS_INCLUDE_DIR=$OPENBLAS_INCLUDE_DIR" "-DOPENBLAS_LIBRARY=$OPENBLAS_LIBRARY")
        found+=("OpenBLAS from \$OPENBLAS_LIBRARY")
    elif [ "$use_deps" != 1 ] && [ -f "/usr/include/$arch_dir/openblas-openmp/cblas.h" ]; then
        found+=("OpenBLAS (openmp) from the system")
    elif [ -f "$DEPS/include/openblas-openmp/cblas.h" ] && [ -e "$DEPS_LIB/libopenblas.so.0" ]; then
        DEP_ARGS+=("-DOPENBLAS_INCLUDE_DIR=$DEPS/include/openblas-openmp" "-DOPENBLAS_LIBRARY=$DEPS_LIB/libopenblas.so")
        found+=("OpenBLAS from .deps")
    else
        found+=("OpenBLAS NOT FOUND"); missing=1
    fi
    # GoogleTest (only when tests are built): $GTest_DIR, the system, else built from .deps.
    if [ "$BUILD_TESTS" = ON ]; then
        if [ -n "${GTest_DIR:-}" ]; then
            DEP_ARGS+=("-DGTest_DIR=$GTest_DIR"); found+=("GTest from \$GTest_DIR")
        elif [ "$use_deps" != 1 ] && system_gtest; then
            found+=("GTest from the system")
        elif [ -f "$DEPS/src/googletest/CMakeLists.txt" ]; then
            local gt=$BUILD/googletest
            if [ ! -f "$gt/install/include/gtest/gtest.h" ]; then
                run_capped "$(stage_left)" "$log" cmake -S "$DEPS/src/googletest" -B "$gt/build" \
                    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$gt/install" \
                    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_GMOCK=ON &&
                run_capped "$(stage_left)" "$log" cmake --build "$gt/build" -j "$JOBS" &&
                run_capped "$(stage_left)" "$log" cmake --install "$gt/build"
            fi
            DEP_ARGS+=("-DCMAKE_PREFIX_PATH=$gt/install")
            found+=("GTest built from .deps/src/googletest")
        else
            found+=("GTest NOT FOUND"); missing=1
        fi
    fi
    # cuDNN 9 headers (the library is dlopened at run time).
    local cudnn=""
    if [ -n "${TRAINRT_CUDNN_INCLUDE_DIR:-}" ] && [ -f "$TRAINRT_CUDNN_INCLUDE_DIR/cudnn_graph.h" ]; then
        cudnn=$TRAINRT_CUDNN_INCLUDE_DIR; found+=("cuDNN headers from \$TRAINRT_CUDNN_INCLUDE_DIR")
    else
        local dirs=(/usr/local/cuda/include /usr/include "$DEPS/cudnn/include")
        [ "$use_deps" = 1 ] && dirs=("$DEPS/cudnn/include")
        for d in "${dirs[@]}"; do
            if [ -f "$d/cudnn_graph.h" ]; then cudnn=$d; found+=("cuDNN headers in $d"); break; fi
        done
    fi
    if [ -n "$cudnn" ]; then
        DEP_ARGS+=("-DTRAINRT_CUDNN_INCLUDE_DIR=$cudnn")
    elif [ "$CUDNN_POLICY" = required ]; then
        found+=("cuDNN headers NOT FOUND"); missing=1
    else
        found+=("no cuDNN headers (GPU_CHECK_CUDNN=optional: the stub is built)")
    fi
    # oneDNN (optional): the system's, else .deps' (unpacked here once).
    if [ "$use_deps" != 1 ] && [ -f /usr/include/oneapi/dnnl/dnnl.hpp ]; then
        found+=("oneDNN from the system")
    elif [ -f "$DEPS/include/oneapi/dnnl/dnnl.hpp" ] && [ -e "$DEPS_LIB/libdnnl.so.2" ]; then
        DEP_ARGS+=("-DTRAINRT_ONEDNN_INCLUDE_DIR=$DEPS/include" "-DTRAINRT_ONEDNN_PATH=$DEPS_LIB/libdnnl.so")
        found+=("oneDNN from .deps")
    else
        found+=("no oneDNN (the CPU matmuls run on OpenBLAS)")
    fi
    [[ " ${DEP_ARGS[*]} " == *"$DEPS/include/openblas-openmp"* ||
        " ${DEP_ARGS[*]} " == *"$DEPS_LIB/libdnnl.so"* ]] &&
        export LD_LIBRARY_PATH="$DEPS_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    DEP_NOTE=$(IFS=';'; echo "${found[*]}")
    DEP_NOTE=${DEP_NOTE//;/; }
    return $missing
}

# Unpacks call 1's runtime files (GPU_CHECK_PREBUILT) into BUILD/prebuilt and runs from there;
# 0 when they are usable (built from this tree's commit, and they start).
use_prebuilt() {
    local log=$1 arc=${GPU_CHECK_PREBUILT:-} info
    [ -n "$arc" ] && [ -f "$arc" ] || return 1
    mkdir -p "$BUILD/prebuilt"
    if ! tar -xzf "$arc" -C "$BUILD/prebuilt" >> "$log" 2>&1; then
        echo "gpu-check: cannot unpack $arc" >> "$log"; return 1
    fi
    info=$(cat "$BUILD/prebuilt/BUILD_INFO" 2>/dev/null)
    echo "prebuilt: $info" >> "$log"
    if [[ $info != *"sources $SOURCES"* ]]; then
        echo "gpu-check: $arc was built from other sources ($info; this tree is $SOURCES): building instead" >> "$log"
        return 1
    fi
    have_runtime "$BUILD/prebuilt" || { echo "gpu-check: $arc lacks the runtime files" >> "$log"; return 1; }
    # The runpaths name call 1's build folder; OpenBLAS may come from .deps.
    local saved_path=${LD_LIBRARY_PATH:-}
    export LD_LIBRARY_PATH="$BUILD/prebuilt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if { ! resolvable libopenblas.so.0 || ! resolvable libdnnl.so.2; } && deps_lib "$log"; then
        export LD_LIBRARY_PATH="$DEPS_LIB:$LD_LIBRARY_PATH"
    fi
    if ! "$BUILD/prebuilt/trainrt" info >> "$log" 2>&1; then
        echo "gpu-check: the prebuilt trainrt does not run here" >> "$log"
        export LD_LIBRARY_PATH="$saved_path"
        return 1
    fi
    RUN_DIR=$BUILD/prebuilt
    export TRAINRT_CUDA_MODULE=$RUN_DIR/libtrainrt-cuda.so
    PREBUILT_NOTE="runtime files from $(basename "$arc") ($info)"
    return 0
}

stage_build() {
    begin build
    local log=$WORK/build.log rc targets
    : > "$log"
    PREBUILT_NOTE=""
    if [ "$PLAN" = check ]; then BUILD_TESTS=ON; targets=(gpu_check_targets)
    else BUILD_TESTS=OFF; targets=(trainrt_cli trainrt_cuda_module); fi
    # The ladder and cpu plans run call 1's binaries when they match the tree: no build at
    # all, warm machine or cold (whether a warm build folder is up to date depends on the
    # timestamps the re-sent tree gets; the binaries do not).
    if [ "$PLAN" != check ] && use_prebuilt "$log"; then
        BUILD_OK=1
        module_is_stub "$RUN_DIR" && [ "$CUDNN_POLICY" = required ] && {
            BUILD_OK=0; finish FAIL "$PREBUILT_NOTE: the module is the cuDNN stub"; return; }
        finish PASS "$PREBUILT_NOTE"
        return
    fi
    if ! resolve_deps "$log"; then
        DETAILS[build]="A dependency is missing: $DEP_NOTE. On the dev machine run \`bash scripts/gpu-check.sh --prepare-deps\` and carry \`.deps\` (the device tool's carry list)."
        finish FAIL "dependency missing before configure: $DEP_NOTE"
        return
    fi
    local gen=()
    if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
    if [ -f "$BUILD/CMakeCache.txt" ]; then gen=(); fi  # an existing build dir keeps its generator
    local nvcc=""
    if [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc
    elif command -v nvcc >/dev/null 2>&1; then nvcc=$(command -v nvcc); fi
    [ -n "$nvcc" ] && DEP_ARGS+=("-DCMAKE_CUDA_COMPILER=$nvcc")
    local t_conf=$SECONDS
    # The ladder and cpu plans on a warm machine keep call 1's configuration (tests included).
    [ "$PLAN" != check ] && [ -f "$BUILD/CMakeCache.txt" ] || DEP_ARGS+=("-DTRAINRT_BUILD_TESTS=$BUILD_TESTS")
    run_capped "$(stage_left)" "$log" cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DTRAINRT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS" \
        -DTRAINRT_BUILD_CLI=ON -DTRAINRT_BINDING_TESTS=OFF "${DEP_ARGS[@]}" ${GPU_CHECK_CMAKE_ARGS:-}
    rc=$?
    local conf_s=$(( SECONDS - t_conf ))
    if [ $rc -ne 0 ]; then
        DETAILS[build]=$(printf 'configure failed (status %s); last lines of build.log:\n\n%s\n%s\n%s' \
            "$rc" "$FENCE" "$(grep -v '^--' "$log" | tail -25)" "$FENCE")
        finish "$( [ $rc = 124 ] && echo TIMEOUT || echo FAIL )" "configure failed; $DEP_NOTE"
        return
    fi
    local t_build=$SECONDS
    run_capped "$(stage_left)" "$log" cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
    rc=$?
    local build_s=$(( SECONDS - t_build ))
    if [ $rc -ne 0 ]; then
        DETAILS[build]=$(printf 'build failed (status %s); first errors:\n\n%s\n%s\n%s' \
            "$rc" "$FENCE" "$(grep -E -m 25 'error|Error|FAILED' "$log")" "$FENCE")
        finish "$( [ $rc = 124 ] && echo TIMEOUT || echo FAIL )" "build failed after ${build_s} s (configure ${conf_s} s); $DEP_NOTE"
        return
    fi
    if [ ! -f "$BUILD/libtrainrt-cuda.so" ]; then
        finish FAIL "built, but no libtrainrt-cuda.so (nvcc: ${nvcc:-none}); $DEP_NOTE"
        return
    fi
    local mod
    mod="libtrainrt-cuda.so $(( $(stat -c %s "$BUILD/libtrainrt-cuda.so") / 1024 )) KiB"
    if module_is_stub "$BUILD"; then
        if [ "$CUDNN_POLICY" = required ]; then
            DETAILS[build]="The module was built with the cuDNN stub (src/backend/cuda/cudnn_unavailable.cpp): CMake found no cudnn_graph.h. Carry \`.deps\` made by \`--prepare-deps\` (it holds .deps/cudnn/include) or set TRAINRT_CUDNN_INCLUDE_DIR; GPU_CHECK_CUDNN=optional accepts the stub."
            finish FAIL "the module has no cuDNN attention (stub built); $DEP_NOTE"
            return
        fi
        mod="$mod (cuDNN stub)"
    fi
    BUILD_OK=1
    finish PASS "Release, CUDA archs $CUDA_ARCHS, targets ${targets[*]}: configure ${conf_s} s + build ${build_s} s on $JOBS jobs; $mod; $DEP_NOTE"
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
    local log=$WORK/gpu-tests.log xml=$WORK/gpu-tests.xml rc counts require=1
    : > "$log"
    rm -f "$xml"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed"; return; fi
    # Without a GPU (dry run) the tests must skip with the loader's reason, not fail.
    [ "$HAVE_GPU" = 1 ] || require=0
    # Verbose, so every measured error ([  relerr  ] lines) lands in the log.
    run_capped "$(stage_left)" "$log" env TRAINRT_REQUIRE_CUDA=$require \
        ctest --test-dir "$BUILD" -L '^gpu$' ${GPU_TEST_REGEX:+-R "$GPU_TEST_REGEX"} -j "$GPU_TEST_JOBS" \
        --timeout 240 -V --output-junit "$xml"
    rc=$?
    if [ -s "$xml" ]; then counts=$(junit_counts "$xml"); else counts=$(log_counts "$log"); fi
    read -r passed failed skipped total <<< "$counts"
    local notes="$passed passed, $failed failed, $skipped skipped (of $total)"
    local det="" names worst
    if [ -s "$xml" ] && [ "$failed" -gt 0 ]; then
        names=$(junit_failed_names "$xml" | head -40)
        det=$(printf 'Failed (first 40; output in gpu-tests.log):\n\n%s\n%s\n%s\n' "$FENCE" "$names" "$FENCE")
    fi
    worst=$(worst_errors "$log")
    if [ -n "$worst" ]; then
        det=$(printf '%s\nLargest measured relative errors, 4 per precision (CUDA vs CPU unless named):\n\n%s\n%s\n%s\n' \
            "$det" "$FENCE" "$worst" "$FENCE")
    fi
    DETAILS[gpu-tests]=$det
    if [ $rc = 124 ]; then finish TIMEOUT "$notes"
    elif [ "$total" = 0 ]; then finish FAIL "no gpu tests registered (CUDA module not configured?)"
    elif [ "$HAVE_GPU" != 1 ]; then
        local why
        why=$(grep -m1 -o 'Skipped.*' "$log" | cut -c1-160)
        if [ "$failed" = 0 ] && [ "$passed" = 0 ]; then finish "$NO_GPU_STATUS" "$total registered, all skipped (${why:-no reason printed})"
        else finish FAIL "$notes: without a GPU every gpu test must skip"; fi
    elif [ "$failed" = 0 ] && [ "$skipped" = 0 ] && [ $rc = 0 ]; then finish PASS "$notes"
    else finish FAIL "$notes"; fi
}

# ------------------------------------------------------------------ 4. train CUDA vs CPU
# Compares the metrics.jsonl of the runs: prints a markdown section, then one line of key
# numbers; exit 1 when a CUDA run misses its tolerance over the steps the CPU reference ran.
compare_runs_py() {
    python3 - "$TRAIN_CPU_STEPS" "$@" <<'PY'
import json, math, statistics, sys
tol = {"fp32": 1e-4, "tf32": 2e-3, "bf16": 3e-2, "fp16": 3e-2}
ref_steps = int(sys.argv[1])
runs = {}
for arg in sys.argv[2:]:
    name, path = arg.split("=", 1)
    train, val = {}, {}
    try:
        for line in open(path):
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            if d.get("split") in ("train", "val"):  # not the run header (FORMATS.md §5)
                (train if d["split"] == "train" else val)[d["step"]] = d  # later line wins
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
if not cpu or len(cpu) < ref_steps or not all(math.isfinite(v["loss"]) for v in cpu.values()):
    ok = False
    keys.append("CPU reference: %d of %d steps" % (len(cpu), ref_steps))
out.append("")
out.append("| cuda run vs cpu-fp32 | common steps | max rel diff (steps 1-%d) | tolerance | verdict |" % ref_steps)
out.append("|---|---|---|---|---|")
for name, (train, _) in runs.items():
    if not name.startswith("cuda-"):
        continue
    prec = name.split("-")[1]
    common = sorted(s for s in set(train) & set(cpu) if s <= ref_steps)
    rel = [abs(train[s]["loss"] - cpu[s]["loss"]) / abs(cpu[s]["loss"]) for s in common]
    finite = len(train) > 0 and all(math.isfinite(train[s]["loss"]) for s in train)
    m = max(rel, default=float("nan"))
    good = finite and len(common) >= ref_steps and m <= tol[prec]
    ok = ok and good
    out.append("| %s | %d | %.2e | %.0e | %s |" % (name, len(common), m, tol[prec],
               "ok" if good else "FAIL"))
    keys.append("%s max rel %.1e over %d steps" % (name, m, len(common))
                if common else "%s: no steps to compare" % name)
print("\n".join(out))
print("KEYS " + "; ".join(keys))
sys.exit(0 if ok else 1)
PY
}

stage_train() {
    begin train
    local log=$WORK/train.log dir=$WORK/train rc
    : > "$log"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed"; return; fi
    if [ "$HAVE_PY" != 1 ]; then finish FAIL "python3 not found (the comparison needs it)"; return; fi
    local cli=$RUN_DIR/trainrt config=$ROOT/examples/configs/shakespeare.toml
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! run_capped "$(stage_left)" "$log" "$cli" prepare --text "$ROOT/examples/data/tinyshakespeare.txt" \
            --out "$dir/data" --val-fraction 0.1; then
        finish FAIL "trainrt prepare failed (train.log)"
        return
    fi
    # name device precision steps extra --set...; the CPU reference runs only the steps the
    # comparison uses. cuda-fp32/tf32/bf16 run plain (every fast path off: matmul attention,
    # no epilogues, no graphs, fp32 activations); cuda-bf16-all turns every fast path on with
    # fp32 activations; cuda-bf16-acts the same with bf16 activations (accel.lowp_activations),
    # so a failure of the one and not the other points at the activation storage; cuda-bf16-default
    # is bf16 with the library's defaults (what a user gets without accel settings).
    local plain='accel.attention="matmul" accel.matmul_epilogues=false accel.cuda_graphs=false accel.lowp_activations=false'
    local fast='accel.attention="cudnn" accel.matmul_epilogues=true accel.fused_classifier=true accel.fused_adamw=true accel.cuda_graphs=true data.placement="device"'
    local runs=("cpu-fp32 cpu fp32 $TRAIN_CPU_STEPS" "cuda-fp32 cuda fp32 $TRAIN_STEPS $plain"
                "cuda-tf32 cuda tf32 $TRAIN_STEPS $plain" "cuda-bf16 cuda bf16 $TRAIN_STEPS $plain"
                "cuda-bf16-all cuda bf16 $TRAIN_STEPS $fast accel.lowp_activations=false"
                "cuda-bf16-acts cuda bf16 $TRAIN_STEPS $fast accel.lowp_activations=true"
                "cuda-bf16-default cuda bf16 $TRAIN_STEPS")
    local specs=() statuses="" r name device prec steps extra sets kv
    for r in "${runs[@]}"; do
        read -r name device prec steps extra <<< "$r"
        if [ "$device" = cuda ] && [ "$HAVE_GPU" != 1 ]; then
            statuses="$statuses$name skipped (no GPU); "
            continue
        fi
        sets=()
        for kv in $extra; do sets+=(--set "$kv"); done
        run_capped "$(stage_left)" "$dir/$name.log" "$cli" train "$config" --fresh \
            --set "runtime.device=\"$device\"" --set "runtime.precision=\"$prec\"" \
            --set "train.steps=$steps" --set "runtime.log_every=1" \
            --set "train.eval_every=$steps" --set "train.checkpoint_every=0" \
            --set "train.out_dir=\"$dir/$name\"" \
            --set "data.train=\"$dir/data/train.bin\"" --set "data.val=\"$dir/data/val.bin\"" \
            "${sets[@]}"
        rc=$?
        case $rc in
            0) statuses="$statuses$name ok; " ;;
            124 | 143) statuses="$statuses$name cut off ($STAGE_CUT_WHY); " ;;
            *) statuses="$statuses$name FAILED (status $rc, train/$name.log); " ;;
        esac
        grep -m2 'acceleration:' "$dir/$name.log" >> "$log"
        specs+=("$name=$dir/$name/metrics.jsonl")
    done
    local table keys
    table=$(compare_runs_py "${specs[@]}"); rc=$?
    keys=$(printf '%s\n' "$table" | sed -n 's/^KEYS //p')
    table=$(printf '%s\n' "$table" | grep -v '^KEYS ')
    DETAILS[train]=$(printf 'Demo config (examples/configs/shakespeare.toml), log_every 1: CUDA runs %s steps, the CPU reference %s; per-step train losses compared over the CPU'"'"'s steps. cuda-fp32/tf32/bf16 = every fast path off; cuda-bf16-all = bf16 with cuDNN attention, epilogues, fused classifier, fused AdamW, resident data and CUDA graphs, fp32 activations; cuda-bf16-acts = the same with bf16 activations (accel.lowp_activations); cuda-bf16-default = bf16 at the library defaults.\nRuns: %s\n\n%s\n' \
        "$TRAIN_STEPS" "$TRAIN_CPU_STEPS" "$statuses" "$table")
    if grep -q 'cut off' <<< "$statuses"; then finish TIMEOUT "$keys"
    elif [ "$HAVE_GPU" != 1 ]; then
        if [ $rc = 0 ] && ! grep -q FAILED <<< "$statuses"; then finish "$NO_GPU_STATUS" "CPU reference ok ($keys); CUDA runs skipped"
        else finish FAIL "the CPU reference failed: $statuses"; fi
    elif [ $rc = 0 ] && ! grep -q FAILED <<< "$statuses"; then finish PASS "$keys"
    else finish FAIL "$keys"; fi
}

# ------------------------------------------------------------------ 5. memcheck
# MEMCHECK_RUNS: "binary=gtest-filter ..." under tests/gpu, one compute-sanitizer run each.
stage_memcheck() {
    begin memcheck
    local log=$WORK/memcheck.log rc san="" c run bin filter errors total=0 ran="" missing=""
    : > "$log"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed"; return; fi
    for c in compute-sanitizer /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        if command -v "$c" >/dev/null 2>&1; then san=$(command -v "$c"); break; fi
    done
    local todo=""
    for run in $MEMCHECK_RUNS; do
        if [ -x "$BUILD/tests/gpu/${run%%=*}" ]; then todo="$todo $run"
        else missing="$missing ${run%%=*}"; fi
    done
    # Without cuDNN (GPU_CHECK_CUDNN=optional) its test binary is not built: not an error then.
    if [ -n "$missing" ] && [ "$CUDNN_POLICY" = required ]; then finish FAIL "not built:$missing"; return; fi
    if [ "$HAVE_GPU" != 1 ]; then
        finish "$NO_GPU_STATUS" "compute-sanitizer: ${san:-not installed here}; test binaries built"
        return
    fi
    if [ -z "$san" ]; then finish FAIL "compute-sanitizer not found"; return; fi
    local status=PASS
    for run in $todo; do
        bin=${run%%=*} filter=${run#*=}
        : > "$WORK/memcheck-$bin.log"
        # API errors are left out: cuBLASLt and cuDNN probe features and clear the errors
        # they expect; a memory error in any kernel is what this stage is for.
        run_capped "$(stage_left)" "$WORK/memcheck-$bin.log" env TRAINRT_REQUIRE_CUDA=1 "$san" \
            --tool memcheck --report-api-errors no --leak-check no --print-limit 30 \
            --error-exitcode 86 "$BUILD/tests/gpu/$bin" --gtest_filter="$filter" --gtest_brief=1
        rc=$?
        cat "$WORK/memcheck-$bin.log" >> "$log"
        errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$WORK/memcheck-$bin.log" | tail -1)
        total=$(( total + ${errors:-0} ))
        ran="$ran$bin: $(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$WORK/memcheck-$bin.log" | tail -1 | cut -d' ' -f1) tests, ${errors:-?} errors (exit $rc); "
        if [ "$rc" = 86 ] || [ "${errors:-0}" != 0 ]; then status=FAIL
        elif [ "$rc" = 124 ]; then [ "$status" = PASS ] && status=TIMEOUT
        elif [ "$rc" != 0 ]; then status=FAIL; fi
        [ "$rc" = 124 ] && break
    done
    if [ "$total" -gt 0 ]; then
        DETAILS[memcheck]=$(printf 'First reports (memcheck.log):\n\n%s\n%s\n%s\n' "$FENCE" \
            "$(grep -m 20 -E '^=+ (Invalid|Error|  at|Address)' "$log")" "$FENCE")
    fi
    case $status in
        TIMEOUT) finish TIMEOUT "$ran (narrow MEMCHECK_RUNS)" ;;
        *) finish "$status" "$ran$total memcheck errors" ;;
    esac
}

# ------------------------------------------------------------------ 6. ladder
# bench/gpu_ladder.py with what is left of the stage: its table and JSON come back as
# OUTDIR/ladder.md and ladder.json, each run's log inside logs.tar.gz.
stage_ladder() {
    begin ladder
    local log=$WORK/ladder.log dir=$WORK/ladder rc left
    : > "$log"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed"; return; fi
    if [ "$HAVE_GPU" != 1 ]; then finish "$NO_GPU_STATUS" "bench/gpu_ladder.py not started"; return; fi
    if [ "$HAVE_PY" != 1 ]; then finish FAIL "python3 not found (bench/gpu_ladder.py needs it)"; return; fi
    left=$(stage_left)
    # The ladder stops starting runs when its own budget is spent; the cap is the backstop.
    # shellcheck disable=SC2086  # LADDER_ARGS is a list of options
    run_capped "$left" "$log" python3 "$ROOT/bench/gpu_ladder.py" --trainrt "$RUN_DIR/trainrt" \
        --out "$dir" --models "$LADDER_MODELS" --budget $(( left - 15 )) ${LADDER_ARGS:-}
    rc=$?
    local f
    for f in ladder.md ladder.json; do [ -f "$dir/$f" ] && cp "$dir/$f" "$OUT/$f"; done
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
    DETAILS[ladder]="Table: ladder.md (JSON: ladder.json; each run's log in logs.tar.gz under ladder/<model>/)."
    if [ -f "$dir/ladder.md" ]; then
        DETAILS[ladder]=$(printf '%s\n\n%s\n' "${DETAILS[ladder]}" "$(grep -E '^(## |Ours = |Goals )' "$dir/ladder.md")")
    fi
    if [ "$rc" = 124 ]; then finish TIMEOUT "${keys:-no results}"
    elif [ "$rc" = 0 ]; then finish PASS "${keys:-no results}"
    else finish FAIL "${keys:-no results} (gpu_ladder.py exit $rc; ladder.log)"; fi
}

# The host's CPU at scale (issue 42): bench/cpu_scaling.sh, no GPU needed.
stage_cpu() {
    begin cpu
    local log=$WORK/cpu.log md=$WORK/cpu_scaling.md rc left
    : > "$log"
    rm -f "$md"
    if [ "$BUILD_OK" != 1 ]; then finish "not run" "the build failed"; return; fi
    if [ "$HAVE_PY" != 1 ]; then finish FAIL "python3 not found (bench/cpu_vs_torch.py needs it)"; return; fi
    left=$(stage_left)
    run_capped "$left" "$log" bash "$ROOT/bench/cpu_scaling.sh" "$RUN_DIR/trainrt" "$md" $(( left - 15 ))
    rc=$?
    [ -f "$md" ] && cp "$md" "$OUT/cpu_scaling.md"
    local keys
    keys=$(grep -c '^### trainrt vs PyTorch' "$md" 2>/dev/null)
    keys="${keys:-0} comparison(s); $(grep -m1 '^Headline: ' "$md" 2>/dev/null | sed 's/^Headline: //')"
    DETAILS[cpu]="Tables: cpu_scaling.md (each run's log in logs.tar.gz, cpu.log)."
    if [ "$rc" = 124 ]; then finish TIMEOUT "$keys"
    elif [ "$rc" = 0 ]; then finish PASS "$keys"
    else finish FAIL "$keys (cpu_scaling.sh exit $rc; cpu.log)"; fi
}

# ------------------------------------------------------------------ packing
# The check plan hands the ladder plan its binaries: call 2 on a machine that went cold
# unpacks them (GPU_CHECK_PREBUILT) instead of building.
pack_runtime() {
    [ "$PLAN" = check ] && [ "$BUILD_OK" = 1 ] && have_runtime "$BUILD" || return 0
    printf 'commit %s, sources %s, CUDA archs %s, built %s on %s\n' "$COMMIT" "$SOURCES" "$CUDA_ARCHS" \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(hostname 2>/dev/null)" > "$BUILD/BUILD_INFO"
    (cd "$BUILD" && tar -czf "$OUT/trainrt-bin.tar.gz.tmp" BUILD_INFO $RUNTIME_FILES) &&
        mv "$OUT/trainrt-bin.tar.gz.tmp" "$OUT/trainrt-bin.tar.gz"
}

# What comes back from a device call: at most 8 files of at most 16 MiB each.
check_outdir() {
    local n big
    n=$(find "$OUT" -type f | wc -l)
    big=$(find "$OUT" -type f -size +16M -printf '%f ')
    if [ "$n" -gt 8 ] || [ -n "$big" ]; then
        DETAILS[device]=$(printf '%s\n\nOUTDIR holds %s files%s: more than a device call brings back (8 files, 16 MiB each).\n' \
            "${DETAILS[device]}" "$n" "${big:+; too large: $big}")
        OUT_OK=0
    fi
}

# ------------------------------------------------------------------ main
setup_library_path
write_summary
if [ "$CAP_SUM" -ge "$BUDGET" ]; then
    echo "gpu-check: the selected stages' caps sum to $CAP_SUM s, not less than the $BUDGET s budget: later stages will be cut" >&2
fi
for s in "${STAGES[@]}"; do
    if selected "$s"; then
        case $s in
            device) stage_device ;;
            build) stage_build ;;
            gpu-tests) stage_gpu_tests ;;
            train) stage_train ;;
            memcheck) stage_memcheck ;;
            ladder) stage_ladder ;;
            cpu) stage_cpu ;;
        esac
    elif [ "$s" = build ] && have_runtime "$BUILD"; then
        # Later stages may use a BUILD_DIR built by an earlier call.
        BUILD_OK=1; STATUS[$s]="skipped"; NOTES[$s]="not in GPU_CHECK_STAGES; using the existing build in $BUILD"
    fi
    # Without the device stage nothing said whether there is a GPU: ask nvidia-smi.
    if [ "$s" = device ] && ! selected device && command -v nvidia-smi >/dev/null 2>&1 &&
        nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'; then HAVE_GPU=1; fi
done
pack_runtime
pack_logs
OUT_OK=1
check_outdir
write_summary

echo
cat "$OUT/summary.md"
[ "$OUT_OK" = 1 ] || exit 1
for s in "${STAGES[@]}"; do
    selected "$s" || continue
    case ${STATUS[$s]} in PASS | "$NO_GPU_STATUS") ;; *) exit 1 ;; esac
done
exit 0
