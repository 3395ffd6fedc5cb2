#!/usr/bin/env bash
# The demo config (examples/configs/shakespeare.toml: GPT-2-style L4 H4 C128, byte tokens,
# 2000 steps) trained on the CPU in fp32 and in bf16 side by side (one thread each, at the
# same time), and both validation curves as a markdown table. Issue 17's bound: bf16's val
# loss at step 2000 within 0.03 of fp32's.
#   bash bench/bf16_accuracy.sh [TRAINRT] [WORKDIR]      (~10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
TRAINRT=$(realpath "${1:-build/trainrt}")
WORK=${2:-$(mktemp -d /tmp/bf16_accuracy.XXXXXX)}
mkdir -p "$WORK"
CORPUS=$(realpath ../shared/data/tinyshakespeare.txt)
"$TRAINRT" prepare --text "$CORPUS" --out "$WORK/data" >/dev/null
for p in fp32 bf16; do
    sed -e "s|../data/shakespeare/train.bin|$WORK/data/train.bin|" \
        -e "s|../data/shakespeare/val.bin|$WORK/data/val.bin|" \
        -e "s|../../out/shakespeare|$WORK/out_$p|" \
        -e 's|^device = "auto"|device = "cpu"|' \
        -e "s|^precision = \"auto\"|precision = \"$p\"|" \
        -e 's|^threads = 0|threads = 1|' \
        examples/configs/shakespeare.toml > "$WORK/$p.toml"
    grep -q "precision = \"$p\"" "$WORK/$p.toml" || { echo "config edit failed" >&2; exit 1; }
done
"$TRAINRT" train "$WORK/fp32.toml" > "$WORK/fp32.log" 2>&1 &
a=$!
"$TRAINRT" train "$WORK/bf16.toml" > "$WORK/bf16.log" 2>&1 &
b=$!
wait $a
wait $b
# "step 200/2000 | val loss 2.4612" -> "200 2.4612"
curve() { grep -E '^step [0-9]+/[0-9]+ [|] val loss' "$1" | awk '{ split($2, s, "/"); print s[1], $6 }'; }
echo "| step | val loss fp32 | val loss bf16 | bf16 - fp32 |"
echo "|---:|---:|---:|---:|"
paste -d' ' <(curve "$WORK/fp32.log") <(curve "$WORK/bf16.log") |
    awk '{ printf "| %d | %.4f | %.4f | %+.4f |\n", $1, $2, $4, $4 - $2 }'
for p in fp32 bf16; do echo "$p: $(grep -E '^step [0-9]+ [|] loss' "$WORK/$p.log" | tail -1)"; done
