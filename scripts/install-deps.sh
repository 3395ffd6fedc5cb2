#!/usr/bin/env bash
# Installs libtrainrt's build and test dependencies from Debian 12 (run as root, or with sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
packages=(
  build-essential cmake pkg-config
  libtomlplusplus-dev          # config parsing (header-only use, one translation unit)
  libopenblas-openmp-dev       # CPU matmuls; the OpenMP build shares our OpenMP runtime
  libdnnl-dev                  # oneDNN: bf16 matmuls on CPUs with AVX-512 BF16 / AMX
  libsentencepiece-dev         # SentencePiece tokenizer.model files (src/tokenizer)
  sentencepiece                # spm_train/spm_encode: the SentencePiece oracle test
  libgtest-dev                 # unit tests
  python3-torch python3-numpy  # tests/reference: the independent PyTorch GPT-2
  python3-venv                 # bindings/python: its test installs it into a venv (pip, offline)
  golang-go                    # bindings/go (cgo); Rust comes from the preinstalled ~/.cargo
  mono-mcs mono-runtime        # bindings/csharp (C# 7, Debian's Mono)
  rpm lintian rpmlint          # packaging: building and linting the .deb/.rpm packages
  abigail-tools                # scripts/abi-check.sh (abidw/abidiff against the baseline)
  clang libclang-rt-14-dev     # scripts/fuzz.sh: libFuzzer + ASan/UBSan (tests/fuzz)
  libomp-dev                   # ... and the OpenMP that configuring with clang looks for
  libopenmpi-dev openmpi-bin   # data parallelism: libtrainrt-mpi (src/dist/mpi) and mpirun
  chromium                     # tests/cli/report_chromium.sh: `trainrt report`'s page, headless
)
# The tokenizer oracle test (tests/tokenizer) runs a JavaScript tokenizer from the npm registry:
# Debian's node and npm where the machine has no node of its own (never both: a NodeSource
# nodejs bundles npm and conflicts with Debian's).
if ! command -v node >/dev/null 2>&1; then
  packages+=(nodejs npm)
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
echo "dependencies: ok"
