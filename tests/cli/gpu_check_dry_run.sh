#!/usr/bin/env bash
# scripts/gpu-check.sh end to end on a machine without a GPU, the way a bare GPU machine
# would run it: a copy of the tree with only .deps (made by --prepare-deps) for toml++,
# OpenBLAS, oneDNN, googletest and the cuDNN headers, the system's copies hidden in a private
# mount namespace where this process may make one (root in CI); the three calls of the loan
# plan in --dry-run, the later ones on cold build folders from the first call's binaries. Checks what
# comes back (at most 8 small files, no build tree), every stage's status, and that the build
# stage fails early without cuDNN headers and after building the cuDNN stub.
#   usage: gpu_check_dry_run.sh SOURCE_DIR SCRATCH_DIR
# Takes a full build of the library, CLI, CUDA module and GPU tests (about 9 minutes on 2 cores).
set -euo pipefail

SRC=$(cd "$1" && pwd)
WORK=$2

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }
# summary_row FILE STAGE -> "| stage | status | ..." row
summary_row() { grep -m1 "^| $2 |" "$1" || true; }
expect_row() {  # FILE STAGE PATTERN
    local row
    row=$(summary_row "$1" "$2")
    grep -q -- "$3" <<< "$row" || { cat "$1" >&2; fail "$1: stage $2 row lacks '$3': $row"; }
    echo "ok: $(basename "$(dirname "$1")") $2: $3"
}

rm -rf "$WORK"
mkdir -p "$WORK"
TREE=$WORK/tree

step "a bare copy of the tree (tracked and untracked-not-ignored files, as the device tool sends)"
mkdir -p "$TREE"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 -I{} sh -c 'test -e "{}" && echo "{}"' | tar -cf - -T -) | tar -xf - -C "$TREE"
    # gpu-check reads the commit from .git/HEAD (no git needed there).
    mkdir -p "$TREE/.git"
    git -C "$SRC" rev-parse HEAD > "$TREE/.git/HEAD"
else
    (cd "$SRC" && tar --exclude='./build*' --exclude=./.deps -cf - .) | tar -xf - -C "$TREE"
fi
[ -f "$TREE/scripts/gpu-check.sh" ] || fail "the copy has no scripts/gpu-check.sh"
[ ! -e "$TREE/.deps" ] || fail "the copy carries .deps already"

step "--prepare-deps"
bash "$TREE/scripts/gpu-check.sh" --prepare-deps
for f in include/toml++/toml.h include/openblas-openmp/cblas.h lib/libopenblas.so.0.xz \
         src/googletest/CMakeLists.txt cudnn/include/cudnn_graph.h \
         include/oneapi/dnnl/dnnl.hpp lib/libdnnl.so.2.xz; do
    [ -e "$TREE/.deps/$f" ] || fail ".deps lacks $f"
done
# A call carries the tree and .deps: 64 MiB in all.
carry=$(( $(du -sb "$TREE" | cut -f1) / 1048576 ))
[ "$carry" -lt 48 ] || fail "tree + .deps is $carry MiB: too close to the 64 MiB a call carries"
echo "ok: tree + .deps = $carry MiB"

# The system's copies of what .deps holds, hidden (a tmpfs over each folder) when a private
# mount namespace can be made; else the run still uses only .deps (GPU_CHECK_USE_DEPS=1
# passes each path to CMake explicitly) and says the system copies were visible.
arch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
HIDE=(/usr/include/toml++ "/usr/include/$arch/openblas-openmp" "/usr/lib/$arch/openblas-openmp"
      /usr/include/gtest /usr/include/gmock "/usr/lib/$arch/cmake/GTest" /usr/src/googletest
      /usr/include/oneapi)
hidden_run() {  # CMD...: runs CMD with the system copies hidden (or not, see above)
    if [ "$CAN_HIDE" = 1 ]; then
        unshare -m --propagation private bash -c '
            for d in "${@:2:$1}"; do [ -d "$d" ] && mount -t tmpfs none "$d"; done
            shift $(( $1 + 1 ))
            exec "$@"' hide "${#HIDE[@]}" "${HIDE[@]}" "$@"
    else
        "$@"
    fi
}
CAN_HIDE=0
if [ "$(id -u)" = 0 ] && unshare -m --propagation private sh -c 'mount -t tmpfs none /mnt' 2>/dev/null; then
    CAN_HIDE=1
fi
if [ "$CAN_HIDE" = 1 ]; then
    hidden_run sh -c '[ ! -e /usr/include/toml++/toml.h ]' || fail "hiding the system toml++ did not work"
    echo "ok: system toml++, OpenBLAS, googletest hidden in a private mount namespace"
else
    echo "note: no private mount namespace here (not root?): the system copies stay visible; .deps is still the only source passed to CMake"
fi

# Call 1's build folder where a loan has it (gpu-check's default, build-gpu in the tree): a
# compiler cache (CI's ccache, paths relative to the clone) then finds the objects of the test
# build, which sits at the same depth in the clone, for every target whose flags match.
BUILD1=$TREE/build-gpu
export GPU_CHECK_USE_DEPS=1 GPU_CHECK_DRY_RUN=1
# The plan's caps are for 16 cores; this machine may have 2, and runs other tests beside.
export GPU_CHECK_BUDGET=3000 GPU_CHECK_CAPS="build=2000 gpu-tests=500 train=300 cpu=400"
# The bare GPU machine has no toml++/OpenBLAS/GTest; gpu-check must not pick up the ones
# from this environment either.
unset TOMLPP_INCLUDE_DIR OPENBLAS_INCLUDE_DIR OPENBLAS_LIBRARY GTest_DIR TRAINRT_CUDNN_INCLUDE_DIR

step "call 1: --plan check --dry-run"
OUT1=$WORK/out1
rc=0
hidden_run bash "$TREE/scripts/gpu-check.sh" --plan check --dry-run "$OUT1" "$BUILD1" || rc=$?
S1=$OUT1/summary.md
[ -f "$S1" ] || fail "call 1 wrote no summary.md"
[ "$rc" = 0 ] || { cat "$S1" >&2; fail "call 1 exited $rc"; }
expect_row "$S1" device "skipped: no GPU"
expect_row "$S1" device "libraries resolve"
expect_row "$S1" build "| PASS |"
expect_row "$S1" build "toml++ in $TREE/.deps/include"
expect_row "$S1" build "OpenBLAS from .deps"
expect_row "$S1" build "GTest built from .deps/src/googletest"
expect_row "$S1" build "cuDNN headers in $TREE/.deps/cudnn/include"
expect_row "$S1" build "oneDNN from .deps"
expect_row "$S1" gpu-tests "skipped: no GPU"
expect_row "$S1" gpu-tests "all skipped"
expect_row "$S1" train "skipped: no GPU"
expect_row "$S1" train "CPU reference ok"
expect_row "$S1" memcheck "skipped: no GPU"
grep -q '^| ladder |' "$S1" && fail "call 1 lists the ladder stage"
grep -q 'cuDNN [0-9]' "$S1" || fail "the summary names no cuDNN version"
grep -q 'NVRTC compiles' "$OUT1/summary.md" || fail "the summary does not show the NVRTC compile probe"
for f in summary.md logs.tar.gz trainrt-bin.tar.gz; do
    [ -f "$OUT1/$f" ] || fail "call 1 did not bring back $f"
done
n=$(find "$OUT1" -type f | wc -l)
[ "$n" -le 8 ] || fail "call 1 left $n files in OUTDIR (at most 8 come back)"
[ -z "$(find "$OUT1" -mindepth 1 -type d)" ] || fail "call 1 left folders in OUTDIR: $(find "$OUT1" -mindepth 1 -type d | head -3)"
[ -z "$(find "$OUT1" -type f -size +16M)" ] || fail "call 1 left a file over 16 MiB"
tar -tzf "$OUT1/logs.tar.gz" > "$WORK/logs.list"
tar -tzf "$OUT1/trainrt-bin.tar.gz" > "$WORK/bin.list"
grep -q 'build.log' "$WORK/logs.list" || fail "logs.tar.gz lacks build.log"
grep -q 'train/cpu-fp32/metrics.jsonl' "$WORK/logs.list" || fail "logs.tar.gz lacks the CPU run's metrics"
grep -q '\.bin$' "$WORK/logs.list" && fail "logs.tar.gz carries data shards"
grep -qx 'libtrainrt-cuda.so' "$WORK/bin.list" || fail "trainrt-bin.tar.gz lacks the module"
echo "ok: call 1 brought back $n files ($(du -ch "$OUT1"/* | tail -1 | cut -f1))"

step "a stage cut by its cap says so (and the run fails)"
rc=0
GPU_CHECK_STAGES="train" GPU_CHECK_CAPS="train=6" TRAIN_CPU_STEPS=400 \
    hidden_run bash "$TREE/scripts/gpu-check.sh" --plan check --dry-run "$WORK/out-cut" "$BUILD1" \
    > "$WORK/out-cut.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$WORK/out-cut/summary.md" >&2; fail "a cut stage: exit $rc, expected 1"; }
expect_row "$WORK/out-cut/summary.md" train "TIMEOUT"
expect_row "$WORK/out-cut/summary.md" train "cut off by its 6 s cap"

step "call 2 on a cold machine: --plan ladder --dry-run from call 1's binaries"
OUT2=$WORK/out2
rc=0
GPU_CHECK_PREBUILT=$OUT1/trainrt-bin.tar.gz \
    hidden_run bash "$TREE/scripts/gpu-check.sh" --plan ladder --dry-run "$OUT2" "$WORK/build2" || rc=$?
S2=$OUT2/summary.md
[ -f "$S2" ] || fail "call 2 wrote no summary.md"
[ "$rc" = 0 ] || { cat "$S2" >&2; fail "call 2 exited $rc"; }
expect_row "$S2" build "| PASS |"
expect_row "$S2" build "runtime files from trainrt-bin.tar.gz"
expect_row "$S2" ladder "skipped: no GPU"
grep -q '^| gpu-tests |' "$S2" && fail "call 2 lists the gpu-tests stage"
[ -f "$WORK/build2/CMakeCache.txt" ] && fail "call 2 configured a build although the binaries were given"

step "call 2 on a warm machine (call 1's build folder still there) runs the same binaries"
rc=0
GPU_CHECK_PREBUILT=$OUT1/trainrt-bin.tar.gz \
    hidden_run bash "$TREE/scripts/gpu-check.sh" --plan ladder --dry-run "$WORK/out2w" "$BUILD1" \
    > "$WORK/out2w.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$WORK/out2w/summary.md" >&2; fail "warm call 2 exited $rc"; }
expect_row "$WORK/out2w/summary.md" build "runtime files from trainrt-bin.tar.gz"

# Not hidden: Debian's numpy (PyTorch's comparison) links the system OpenBLAS the namespace
# hides; the GPU host's Python brings its own. The binaries are call 1's, built from .deps.
step "call 3: --plan cpu --dry-run from call 1's binaries (the tiny models, 1 and 2 threads)"
OUT3=$WORK/out-cpu
rc=0
GPU_CHECK_PREBUILT=$OUT1/trainrt-bin.tar.gz CPU_SCALING_MODELS="tiny tiny-llama" \
    CPU_SCALING_THREADS="1 2" CPU_SCALING_PROFILE_STEPS=1 \
    bash "$TREE/scripts/gpu-check.sh" --plan cpu --dry-run "$OUT3" "$WORK/build-cpu" \
    > "$WORK/out-cpu.log" 2>&1 || rc=$?
S3=$OUT3/summary.md
[ -f "$S3" ] || { cat "$WORK/out-cpu.log" >&2; fail "call 3 wrote no summary.md"; }
[ "$rc" = 0 ] || { cat "$S3" >&2; fail "call 3 exited $rc"; }
expect_row "$S3" build "runtime files from trainrt-bin.tar.gz"
expect_row "$S3" cpu "| PASS |"
expect_row "$S3" cpu "comparison(s); tiny@"
grep -q '^| ladder |' "$S3" && fail "call 3 lists the ladder stage"
[ -f "$OUT3/cpu_scaling.md" ] || fail "call 3 did not bring back cpu_scaling.md"
grep -q '^#### Per-op profile: trainrt bf16' "$OUT3/cpu_scaling.md" || fail "cpu_scaling.md has no bf16 profile"
echo "ok: call 3: $(grep -m1 '^Headline' "$OUT3/cpu_scaling.md")"

step "--record writes the results file from both summaries"
mkdir -p "$TREE/bench/results"
bash "$TREE/scripts/gpu-check.sh" --record "$OUT1" "$OUT2" > "$WORK/record.out"
rec=$(sed -n 's/^wrote //p' "$WORK/record.out")
[ -f "$rec" ] || fail "--record wrote nothing ($(cat "$WORK/record.out"))"
case $(basename "$rec") in *-gpu-check-none.md) ;; *) fail "unexpected results name $rec" ;; esac
[ "$(grep -c '^## GPU check' "$rec")" = 2 ] || fail "$rec does not hold both summaries"
echo "ok: $(basename "$rec")"

step "the build stage fails early without cuDNN headers"
mv "$TREE/.deps/cudnn" "$WORK/cudnn-aside"
rc=0
GPU_CHECK_STAGES="build" hidden_run bash "$TREE/scripts/gpu-check.sh" --plan check --dry-run \
    "$WORK/out3" "$WORK/build3" > "$WORK/out3.log" 2>&1 || rc=$?
mv "$WORK/cudnn-aside" "$TREE/.deps/cudnn"
[ "$rc" = 1 ] || fail "no cuDNN headers: exit $rc, expected 1"
expect_row "$WORK/out3/summary.md" build "FAIL"
expect_row "$WORK/out3/summary.md" build "cuDNN headers NOT FOUND"
[ -f "$WORK/build3/CMakeCache.txt" ] && fail "it configured before failing"

step "the build stage fails when the module got the cuDNN stub"
rc=0
GPU_CHECK_STAGES="build" GPU_CHECK_CMAKE_ARGS="-DTRAINRT_WITH_CUDNN=OFF" \
    hidden_run bash "$TREE/scripts/gpu-check.sh" --plan check --dry-run "$WORK/out4" "$BUILD1" \
    > "$WORK/out4.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$WORK/out4/summary.md" >&2; fail "stub module: exit $rc, expected 1"; }
expect_row "$WORK/out4/summary.md" build "stub built"

step "bad usage"
rc=0; bash "$TREE/scripts/gpu-check.sh" --plan nope "$WORK/x" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--plan nope: exit $rc, expected 2"
rc=0; bash "$TREE/scripts/gpu-check.sh" "$WORK/o5" "$WORK/o5/build" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "BUILD_DIR inside OUTDIR: exit $rc, expected 2"
rc=0; GPU_CHECK_STAGES="device bogus" bash "$TREE/scripts/gpu-check.sh" "$WORK/o6" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "unknown stage: exit $rc, expected 2"
echo "ok: bad usage exits 2"

echo "gpu_check_dry_run: all checks passed"
