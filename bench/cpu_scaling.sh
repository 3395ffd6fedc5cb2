#!/usr/bin/env bash
# The CPU at scale (issue 42), in one command that fits a GPU loan (scripts/gpu-check.sh
# --plan cpu runs it on the GPU host's cores; docs/GPU_CHECK.md): trainrt against the PyTorch
# of the machine, fp32 and bf16, at several thread counts, with per-op profiles.
#   bash bench/cpu_scaling.sh TRAINRT OUT.md [BUDGET_S]
# In order, while BUDGET_S (default 240) lasts — a run is started only while time is left:
#   1. bench/cpu_vs_torch.py --model small at the largest thread count, with --profile (each
#      op's time at 1 thread and at that count: its parallel fraction, Amdahl's projection);
#   2. the same for llama-100m (a ~100M-parameter Llama: issue 42's second goal model), at
#      the largest thread count only (its step takes seconds on one thread; its 1-thread time
#      comes from the profile's 1-thread session);
#   3. small at the other thread counts, largest first (the scaling curve, both engines).
# Every run appends its markdown section to OUT.md; a headline line on top names the
# ratios of each comparison.
# Environment: CPU_SCALING_THREADS (default "1 2 4 8 16", counts above nproc dropped, nproc
# added when larger than all), CPU_SCALING_MODELS (default "small llama-100m"; the first runs
# at every count), CPU_SCALING_STEPS (default 4, one warm-up), CPU_SCALING_PROFILE_STEPS
# (default 2), PYTHON (default: the first of python3, /usr/bin/python3 with torch and numpy).
set -euo pipefail

TRAINRT=${1:?usage: cpu_scaling.sh TRAINRT OUT.md [BUDGET_S]}
OUT=${2:?usage: cpu_scaling.sh TRAINRT OUT.md [BUDGET_S]}
BUDGET=${3:-240}
HERE=$(cd "$(dirname "$0")" && pwd)
# A Python with torch and numpy: $PYTHON, else python3, else Debian's /usr/bin/python3.
PY=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import torch, numpy' >/dev/null 2>&1; then
        PY=$cand
        break
    fi
done
[ -n "$PY" ] || { echo "cpu_scaling: no Python with torch and numpy (set PYTHON)" >&2; exit 1; }
STEPS=${CPU_SCALING_STEPS:-4}
PSTEPS=${CPU_SCALING_PROFILE_STEPS:-2}
read -r -a MODELS <<< "${CPU_SCALING_MODELS:-small llama-100m}"
[ "${#MODELS[@]}" -gt 0 ] || { echo "cpu_scaling: CPU_SCALING_MODELS names no model" >&2; exit 2; }
NPROC=$(nproc)

# The thread counts, largest first, none above nproc (nproc itself when larger than all).
counts=()
for t in ${CPU_SCALING_THREADS:-1 2 4 8 16}; do [ "$t" -le "$NPROC" ] && counts+=("$t"); done
max=0
for t in "${counts[@]}"; do [ "$t" -gt "$max" ] && max=$t; done
[ "$NPROC" -gt "$max" ] && [ -z "${CPU_SCALING_THREADS:-}" ] && counts+=("$NPROC") && max=$NPROC
[ "${#counts[@]}" -gt 0 ] || { echo "cpu_scaling: no thread count of '${CPU_SCALING_THREADS:-}' is <= nproc ($NPROC)" >&2; exit 2; }
mapfile -t counts < <(printf '%s\n' "${counts[@]}" | sort -rn | uniq)

T0=$SECONDS
left() { echo $(( BUDGET - (SECONDS - T0) )); }
body=$(mktemp)
trap 'rm -f "$body"' EXIT
ran=()  # "model@threads" of each comparison that finished

# OUT.md: the headline (each comparison's two ratios, trainrt / torch tok/s at the same
# precision) over every section written so far.
write_out() {
    local headline
    headline=$(awk '
        /^### trainrt vs PyTorch, CPU, model `/ { split($0, a, "`"); model = a[2] }
        /^\| \*\*all\*\* \| trainrt fp32 \|/ { split($0, c, "|"); threads = c[4]; gsub(/ /, "", threads) }
        /^fp32: \*\*trainrt fp32/ { match($0, /ratios: [0-9.]+/); f = substr($0, RSTART + 8, RLENGTH - 8) }
        /^bf16 \(the goal/ { match($0, /ratios: [0-9.]+/); b = substr($0, RSTART + 8, RLENGTH - 8);
                             printf "%s%s@%s fp32 %sx bf16 %sx", sep, model, threads, f, b; sep = "; " }
    ' "$body")
    {
        echo "# CPU scaling: trainrt vs PyTorch on $(lscpu | sed -n 's/^Model name: *//p'), $NPROC cores"
        echo
        echo "Made by \`bash bench/cpu_scaling.sh\` (issue 42) in $(( SECONDS - T0 )) s of a $BUDGET s budget;"
        echo "thread counts ${counts[*]}; models ${MODELS[*]}; $STEPS steps per run (1 warm-up)."
        echo "CPU flags of interest: $(grep -o -w 'avx2\|avx512f\|avx512_bf16\|amx_bf16\|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
        echo
        echo "Headline: ${headline:-no comparison finished} (trainrt / PyTorch tok/s, same precision; bf16 = PyTorch's autocast)"
        echo
        cat "$body"
    } > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
}

# compare MODEL THREADS [PROFILE_STEPS]: one cpu_vs_torch.py run appended to the body.
compare() {
    local model=$1 threads=$2 profile=${3:-0} args=()
    [ "$profile" -gt 0 ] && args=(--profile "$profile")
    echo "== cpu_scaling: $model at $threads thread(s)${3:+, profiled} ($(left) s left)" >&2
    # Each run within what is left of the budget; OUT.md is rewritten after every run, so a
    # stage cut short still brings back the runs that finished.
    local rc=0 budget_left
    budget_left=$(left)
    if [ "$budget_left" -le 5 ]; then  # (timeout 0 would mean no limit at all)
        echo "cpu_scaling: no budget left for $model at $threads thread(s)" >&2
        return
    fi
    timeout "$budget_left" "$PY" "$HERE/cpu_vs_torch.py" --trainrt "$TRAINRT" --model "$model" \
        --precision both --steps "$STEPS" --warmup 1 --threads "$threads" --rounds 1 \
        "${args[@]}" --out "$body" >&2 || rc=$?
    if [ "$rc" = 0 ]; then
        ran+=("$model@$threads")
    else
        local why="cpu_vs_torch.py failed (exit $rc)"
        [ "$rc" = 124 ] && why="cut off by the budget"
        echo "cpu_scaling: $model at $threads thread(s): $why" >&2
        printf '\n**%s at %s thread(s): %s** (see the log)\n' "$model" "$threads" "$why" >> "$body"
    fi
    write_out
}

# The first model at the largest count with profiles, then the others there, then the curve.
compare "${MODELS[0]}" "$max" "$PSTEPS"
for m in "${MODELS[@]:1}"; do
    [ "$(left)" -gt 60 ] || break
    compare "$m" "$max" 1
done
for t in "${counts[@]}"; do
    [ "$t" = "$max" ] && continue
    [ "$(left)" -gt 20 ] || { echo "cpu_scaling: budget spent before $t thread(s)" >&2; break; }
    compare "${MODELS[0]}" "$t"
done

echo "wrote $OUT: ${#ran[@]} comparison(s) (${ran[*]:-none})" >&2
[ "${#ran[@]}" -gt 0 ]
