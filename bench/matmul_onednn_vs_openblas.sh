#!/usr/bin/env bash
# oneDNN fp32 matmul vs OpenBLAS cblas_sgemm at libtrainrt's linear-layer shapes, and oneDNN's
# bf16 matmul on this CPU (issue 17). Compiles bench/matmul_onednn_vs_openblas.cpp into a temp
# dir (g++ -O2, -ldnnl -lopenblas -fopenmp), prints the machine header, runs it (markdown on
# stdout), then one short DNNL_VERBOSE=1 pass that lists the implementation oneDNN ran per shape.
#   bash bench/matmul_onednn_vs_openblas.sh [PROGRAM OPTIONS]
#   options (defaults): --threads 1,2 --sets a,b --layers qkv,attn_proj,fc,fc_proj,head
#                       --rounds 3 --reps 5 --warmup 1 --big-reps 1
#                       --big-warmup 1 --no-bf16
# Needs libdnnl-dev (oneDNN, OpenMP runtime) and libopenblas-openmp-dev. Record the output in
# bench/results/YYYY-MM-DD-onednn-vs-openblas.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/matmul-onednn.XXXXXX)
trap 'rm -rf "$work"' EXIT

g++ -O2 -std=c++17 -Wall -Wextra -fopenmp "$here/matmul_onednn_vs_openblas.cpp" \
    -o "$work/matmul_onednn_vs_openblas" -ldnnl -lopenblas

flags=$(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16\|amx_tile\|avx512_vnni\|avx_vnni' \
    /proc/cpuinfo | sort -u | tr '\n' ' ')
echo "Command: \`bash bench/matmul_onednn_vs_openblas.sh $*\`"
echo
echo "- date: $(date -u '+%F %T UTC')"
model=$(lscpu | sed -n 's/^Model name: *//p')
pkgs=$(dpkg-query -W -f '${Package} ${Version}, ' libdnnl-dev libopenblas0-openmp 2>/dev/null |
    sed 's/, $//')
echo "- CPU: $model, $(nproc) cores; flags of interest present: ${flags:-none}"
echo "- packages: $pkgs"
echo "- compiler: $(g++ --version | head -1)"
echo "- commit: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "- load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

"$work/matmul_onednn_vs_openblas" "$@"

echo "oneDNN's own report (DNNL_VERBOSE=1, one call per product of set (a), 1 thread):"
echo "primitive: implementation, memory descriptors, attributes, problem"
echo
echo '```'
DNNL_VERBOSE=1 "$work/matmul_onednn_vs_openblas" --threads 1 --sets a --rounds 1 --reps 1 \
    --warmup 0 --no-bf16 | grep -E '^(onednn|dnnl)_verbose,(info,cpu|exec)' |
    awk -F, '$2 == "info" { print; next }
             { k = $5 " " $7 " " $8 " " $(NF-1)
               if (!seen[k]++) print $4 ": " $5 "  " $7 "  " $8 "  " $(NF-1) }'
echo '```'
echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
