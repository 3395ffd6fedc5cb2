#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/).
# .ci/run runs it before the plain suite.
set -euo pipefail
cd "$(dirname "$0")/.."
flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
# The CUDA module is left out here: CUDA's runtime and ASan do not mix, and test.sh builds it.
# Binding suites too: cargo/go/mono processes cannot load an ASan-built library. And the MPI
# module: Open MPI keeps its allocations to the end of the process (LeakSanitizer reports them).
# -O1 -g1 (line tables: ASan's stack traces name file and line) and the test executables at
# -O0: instrumented -O2 -g took ~17 minutes to compile on 2 cores, this about 6 (tests ~4).
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINRT_CUDA=OFF -DTRAINRT_MPI=OFF \
  -DTRAINRT_BUILD_TESTS=ON -DTRAINRT_BINDING_TESTS=OFF -DTRAINRT_TEST_CXX_FLAGS=-O0 \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags"
cmake --build build-asan -j "$(nproc)"
# Left to the plain suite (the code they reach runs instrumented in other tests):
# - chat.masks: a reference comparison of prepare --chat's output (~2 minutes instrumented); the
#   same code runs instrumented in chat_e2e, test_data and fuzz_chat_jsonl.
# - cli_report_chromium: Chromium rendering the report (not our code; cli_report runs ours).
# - cli_gguf_export: Python and npm readers checking the CLI's GGUF files (~75 s instrumented);
#   the writer, the reader and the import run instrumented in GgufWriter/GgufExport/GgufModel/
#   GgufReader/GgufImport and fuzz_gguf.
# - TokenSampling.DrawsTheTokenOfTheDirectDefinition: millions of draws compared with the
#   definition (~25 s at -O0); the other TokenSampling tests run the sampler instrumented.
# TRAINRT_ORACLE_FRACTION: the tokenizer and chat-template oracles compare a tenth of their
# documents and conversations here (every code path and the edge documents, a tenth of the rest);
# the plain suite compares them all.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TRAINRT_ORACLE_FRACTION=0.1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" \
  -E '^(chat\.masks|cli_report_chromium|cli_gguf_export|TokenSampling\.DrawsTheTokenOfTheDirectDefinition)$'
