#!/usr/bin/env bash
# trainrt's CPU step under each accel.cpu_matmul mode (openblas, onednn) in fp32 and bf16, side
# by side: `trainrt bench` on the cpu_vs_torch `small` model (GPT-2 V256 L6 H6 C384, B8 T256)
# with a byte-level shard of tinyshakespeare, the four runs alternated for ROUNDS rounds (the
# order rotated by one each round) so that a change in machine load hits all of them.
#   bash bench/cpu_matmul_modes.sh [TRAINRT] [ROUNDS] [THREADS]   (defaults: build/trainrt 3 nproc)
# Prints the machine header and a markdown table (median step ms of each run, then the median
# over rounds, and the speed-up against openblas fp32). A mode this build or CPU lacks runs
# its fallback, which the `cpu_matmul=` column shows.
set -euo pipefail
cd "$(dirname "$0")/.."
TRAINRT=$(realpath "${1:-build/trainrt}")
ROUNDS=${2:-3}
THREADS=${3:-$(nproc)}
work=$(mktemp -d /tmp/cpu-matmul-modes.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$TRAINRT" prepare --text ../shared/data/tinyshakespeare.txt --out "$work/data" >/dev/null
cat > "$work/run.toml" <<EOF
[model]
vocab_size = 256
context_length = 256
n_layer = 6
n_head = 6
d_model = 384
[data]
train = "$work/data/train.bin"
[train]
batch_size = 8
seq_len = 256
[runtime]
device = "cpu"
threads = $THREADS
EOF
flags=$(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "Command: \`bash bench/cpu_matmul_modes.sh $*\`"
echo
echo "- date: $(date -u '+%F %T UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
echo "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; flags: ${flags:-none}"
echo "- $("$TRAINRT" info 2>/dev/null | head -2 | tr "\n" " ")"
echo "- each run: \`trainrt bench run.toml --steps 10 --warmup 3\`, $THREADS threads; ms = the p50 step"
echo
runs=("fp32 openblas" "fp32 onednn" "bf16 openblas" "bf16 onednn")
declare -A ms resolved
for ((r = 0; r < ROUNDS; r++)); do
    for ((i = 0; i < ${#runs[@]}; i++)); do
        run=${runs[$(((i + r) % ${#runs[@]}))]}
        set -- $run
        out=$("$TRAINRT" bench "$work/run.toml" --steps 10 --warmup 3 \
            --set "runtime.precision=\"$1\"" --set "accel.cpu_matmul=\"$2\"" 2>&1)
        p50=$(sed -n 's/.*step ms | mean [0-9.]*, p50 \([0-9.]*\),.*/\1/p' <<<"$out")
        ms["$run,$r"]=$p50
        resolved["$run"]=$(grep -o 'cpu_matmul=[a-z]* \[[^]]*\]' <<<"$out" | head -1)
    done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
header="| run | cpu_matmul resolved |"
sep="|---|---|"
for ((r = 0; r < ROUNDS; r++)); do header+=" round $((r + 1)) ms |"; sep+="---|"; done
echo "$header median ms | tok/s | vs openblas fp32 |"
echo "$sep---|---|---|"
base=""
for run in "${runs[@]}"; do
    vals=()
    for ((r = 0; r < ROUNDS; r++)); do vals+=("${ms[$run,$r]}"); done
    med=$(median "${vals[@]}")
    [ -z "$base" ] && base=$med
    row="| $run | \`${resolved[$run]}\` |"
    for v in "${vals[@]}"; do row+=" $v |"; done
    echo "$row $med | $(awk -v m="$med" 'BEGIN {printf "%.0f", 2048000 / m}') | $(awk -v b="$base" -v m="$med" 'BEGIN {printf "%.2f", b / m}') |"
done
