#!/usr/bin/env bash
# What a user's build and set-up get by default (README "Install"): a fresh configure with no
# options builds neither the test suite nor — on a machine without an NVIDIA driver — the CUDA
# module, which -DTRAINRT_CUDA=ON still builds where nvcc is; scripts/install-deps.sh installs
# the build dependencies alone unless asked for the test tools (--test) or MPI (--mpi).
#   usage: build_defaults.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
SRC=$(cd "$1" && pwd)
WORK=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK"

echo "--- install-deps.sh: the default set is the build's, --test adds the test tools"
deps=$SRC/scripts/install-deps.sh
default_set=$(bash "$deps" --list)
test_set=$(bash "$deps" --test --list)
mpi_set=$(bash "$deps" --mpi --list)
for p in cmake libtomlplusplus-dev libopenblas-openmp-dev; do
    grep -qx "$p" <<< "$default_set" || fail "the default set lacks $p"
done
for p in libgtest-dev python3-torch chromium golang-go mono-mcs clang lintian libopenmpi-dev; do
    if grep -qx "$p" <<< "$default_set"; then fail "the default set pulls the test/MPI package $p"; fi
    grep -qx "$p" <<< "$test_set" || fail "--test lacks $p"
done
grep -qx libopenmpi-dev <<< "$mpi_set" || fail "--mpi lacks libopenmpi-dev"
if grep -qx libgtest-dev <<< "$mpi_set"; then fail "--mpi pulls the test tools"; fi
set +e
out=$(bash "$deps" --tests 2>&1); rc=$?
set -e
[ "$rc" = 2 ] || fail "an unknown option exited $rc, not 2"
grep -q -- "unknown option '--tests'" <<< "$out" || fail "an unknown option's message: $out"
bash "$deps" --help | grep -q -- '--test' || fail "--help does not list --test"

echo "--- a default configure: no test suite"
cmake -S "$SRC" -B "$WORK/default" -DCMAKE_BUILD_TYPE=Release > "$WORK/default.log" 2>&1 \
    || { cat "$WORK/default.log"; fail "default configure"; }
grep -q '^TRAINRT_BUILD_TESTS:BOOL=OFF$' "$WORK/default/CMakeCache.txt" || fail "tests are on by default"
targets=$(cmake --build "$WORK/default" --target help)
grep -q 'trainrt_cli' <<< "$targets" || fail "the default build has no CLI"
if grep -q 'test_core\|test_capi' <<< "$targets"; then fail "the default build compiles the unit tests"; fi

nvcc_found=0
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then nvcc_found=1; fi
if [ "$nvcc_found" = 1 ] && [ ! -e /proc/driver/nvidia/version ]; then
    echo "--- nvcc without an NVIDIA driver: AUTO leaves the CUDA module out, ON builds it"
    if grep -q 'trainrt_cuda_module' <<< "$targets"; then fail "AUTO builds the CUDA module without a driver"; fi
    grep -q 'no NVIDIA driver is loaded here' "$WORK/default.log" || fail "AUTO did not say why it left the module out"
    cmake -S "$SRC" -B "$WORK/cuda_on" -DCMAKE_BUILD_TYPE=Release -DTRAINRT_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90-real > "$WORK/cuda_on.log" 2>&1 \
        || { cat "$WORK/cuda_on.log"; fail "configure with TRAINRT_CUDA=ON"; }
    cuda_targets=$(cmake --build "$WORK/cuda_on" --target help)
    grep -q 'trainrt_cuda_module' <<< "$cuda_targets" || fail "TRAINRT_CUDA=ON did not configure the CUDA module"
elif [ "$nvcc_found" = 1 ]; then
    echo "--- nvcc and an NVIDIA driver: AUTO builds the CUDA module"
    grep -q 'trainrt_cuda_module' <<< "$targets" || fail "AUTO left the CUDA module out on a GPU machine"
else
    echo "--- no nvcc here: the CUDA module's defaults are not checked"
fi
echo "build defaults: ok"
