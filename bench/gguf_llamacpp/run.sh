#!/usr/bin/env bash
# llama.cpp loads our GGUF exports and computes the logits we do (issue 44's check; not run by
# CI, which does not build llama.cpp). Builds llama.cpp's library (CPU) from a source tree,
# logits.cpp against it, then for each model the `cli_gguf_export` CTest left behind (GPT-2,
# Llama with Llama 3.1's tokenizer, Qwen3; trained checkpoints and their F16 and Q8_0 GGUF
# files) compares our logits with llama.cpp's on the first tokens of its training data.
#   usage: run.sh LLAMA_CPP_SOURCE [BUILD_DIR=build] [EXPORTS=BUILD_DIR/tests/cli/tmp/gguf_export]
# Prints one line per file (compare.py) and the llama.cpp commit; exit 1 when one is over.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$1" && pwd)
build=$(cd "${2:-build}" && pwd)
exports=${3:-$build/tests/cli/tmp/gguf_export}
[ -d "$exports/llama" ] || { echo "run.sh: no exports in $exports (run ctest -R cli_gguf_export)" >&2; exit 2; }
lbuild=${LLAMA_BUILD:-/tmp/llama-build}
cmake -S "$src" -B "$lbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
    -DGGML_NATIVE=ON > /dev/null
cmake --build "$lbuild" --target llama -j "$(nproc)" > "$lbuild.log" 2>&1 ||
    { tail -30 "$lbuild.log"; exit 2; }
lib=$(dirname "$(find "$lbuild" -name 'libllama.so' | head -1)")
ggml=$(dirname "$(find "$lbuild" -name 'libggml.so' | head -1)")
g++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" "$here/logits.cpp" -o "$lbuild/logits" \
    -L"$lib" -L"$ggml" -lllama -lggml -lggml-base -Wl,-rpath,"$lib" -Wl,-rpath,"$ggml"
echo "llama.cpp: $(cat "$src/.commit" 2>/dev/null || echo "source $src")"
status=0
for name in gpt2 llama qwen3; do
    for type in f16 q8_0; do
        tol=1e-2
        [ "$type" = f16 ] || tol=1e-1  # Q8_0: reported, judged loosely
        (cd "$exports/$name" && /usr/bin/python3 "$here/compare.py" --library "$build/libtrainrt.so" \
            --checkpoint out --gguf "$name-$type.gguf" --logits-bin "$lbuild/logits" \
            --tokens-from data/train.bin --tolerance "$tol" --text "$here/sample.txt") || status=1
    done
done
# The LoRA adapter file (--gguf-lora) applied by llama.cpp to the base's GGUF against the merged
# model's GGUF: a QLoRA run on the Llama export trained hard enough (lr 0.03, 20 steps) that
# the adapter moves the logits far (the base alone is reported beside).
q=$exports/qlora_strong
mkdir -p "$q"
sed -e 's/steps = 2/steps = 20/' -e 's|out_dir = "out"|out_dir = "out"\n[optim]\nlr = 0.03\nwarmup_steps = 0|' \
    "$exports/qlora/run.toml" > "$q/run.toml"
(cd "$q" && "$build/trainrt" train run.toml --fresh > train.log 2>&1)
"$build/trainrt" export "$q/out" --gguf "$q/merged-f16.gguf" --force > /dev/null
"$build/trainrt" export "$q/out" --gguf-lora "$q/adapter-f16.gguf" --force > /dev/null
/usr/bin/python3 "$here/lora_check.py" --logits-bin "$lbuild/logits" --base "$exports/llama/llama-f16.gguf" \
    --adapter "$q/adapter-f16.gguf" --merged "$q/merged-f16.gguf" \
    --tokens-from "$exports/llama/data/train.bin" || status=1
exit $status
