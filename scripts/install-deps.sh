#!/usr/bin/env bash
# Installs libtrainrt's dependencies from Debian 12 (run as root, or with sudo).
#   bash scripts/install-deps.sh          # to build the library and the CLI
#   bash scripts/install-deps.sh --mpi    # ... and the data-parallel module (Open MPI, mpirun)
#   bash scripts/install-deps.sh --test   # + what the tests and CI use (> 0.5 GB; implies --mpi)
#   --list prints the packages of the chosen set instead of installing them.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
want_mpi=0 want_test=0 list_only=0
for arg in "$@"; do
  case "$arg" in
    --mpi) want_mpi=1 ;;
    --test) want_test=1 want_mpi=1 ;;
    --list) list_only=1 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (options: --mpi, --test, --list)" >&2; exit 2 ;;
  esac
done
# The library and the CLI.
packages=(
  build-essential cmake pkg-config
  libtomlplusplus-dev          # config parsing (header-only use, one translation unit)
  libopenblas-openmp-dev       # CPU matmuls; the OpenMP build shares our OpenMP runtime
  libdnnl-dev                  # oneDNN: bf16 matmuls on CPUs with AVX-512 BF16 / AMX
  libsentencepiece-dev         # SentencePiece tokenizer.model files (src/tokenizer)
)
if [ "$want_mpi" = 1 ]; then
  packages+=(libopenmpi-dev openmpi-bin)  # data parallelism: libtrainrt-mpi (src/dist/mpi), mpirun
fi
if [ "$want_test" = 1 ]; then
  packages+=(
    libgtest-dev                 # unit tests
    sentencepiece                # spm_train/spm_encode: the SentencePiece oracle test
    python3-torch python3-numpy  # tests/reference: the independent PyTorch GPT-2
    python3-venv                 # bindings/python: its test installs it into a venv (pip, offline)
    python3-jinja2               # tests/chat: the chat template oracle (transformers' Jinja2 setup)
    golang-go                    # bindings/go (cgo); Rust comes from the preinstalled ~/.cargo
    mono-mcs mono-runtime        # bindings/csharp (C# 7, Debian's Mono)
    rpm lintian rpmlint          # packaging: building and linting the .deb/.rpm packages
    abigail-tools                # scripts/abi-check.sh (abidw/abidiff against the baseline)
    ccache                       # .ci/run: the package, test and GPU-check builds share objects
    clang libclang-rt-14-dev     # scripts/fuzz.sh: libFuzzer + ASan/UBSan (tests/fuzz)
    libomp-dev                   # ... and the OpenMP that configuring with clang looks for
    chromium                     # tests/cli/report_chromium.sh: `trainrt report`'s page, headless
  )
  # The tokenizer oracle test (tests/tokenizer) runs a JavaScript tokenizer from the npm
  # registry: Debian's node and npm where the machine has no node of its own (never both: a
  # NodeSource nodejs bundles npm and conflicts with Debian's).
  if ! command -v node >/dev/null 2>&1; then
    packages+=(nodejs npm)
  fi
fi
if [ "$list_only" = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
what="the library and the CLI"
[ "$want_mpi" = 1 ] && what="$what, the MPI module"
[ "$want_test" = 1 ] && what="$what, the test suite"
echo "dependencies: ok ($what)"
