#!/usr/bin/env bash
# The shipped shapes of today's open models (examples/configs/, random init): `trainrt info`
# counts exactly the parameters each model card publishes, and `trainrt plan` gives the
# memory of a full bf16 fine-tune and of a LoRA fine-tune at T 2048. The configs are copied
# into a scratch folder first, so no session is attempted on this machine (their data paths
# do not exist there): plan prints the estimate only.
#   real_configs.sh TRAINRT_CLI SOURCE_DIR WORK_DIR
set -euo pipefail
cli=$1
src=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "real_configs: FAIL: $*"; exit 1; }
# name -> parameters as published (config.json's shapes; Hugging Face's model pages).
declare -A published=(
    [llama-3.2-1b]=1235814400
    [llama-3.1-8b]=8030261248
    [qwen2.5-0.5b]=494032768
    [qwen2.5-7b]=7615616512
    [mistral-7b]=7248023552
    [qwen3-0.6b]=596049920
    [smollm2-360m]=361821120
    [smollm-135m]=134515008
)
for name in "${!published[@]}"; do
    cp "$src/examples/configs/$name.toml" "$work/"
    cfg="$work/$name.toml"
    info=$("$cli" info "$cfg") || fail "$name: trainrt info failed"
    got=$(printf '%s\n' "$info" | sed -n 's/^model: \([0-9]*\) parameters.*/\1/p')
    [ "$got" = "${published[$name]}" ] ||
        fail "$name: trainrt info counts '$got' parameters, published ${published[$name]}"
    for mode in full lora; do
        extra=()
        [ $mode = lora ] && extra=(--set lora.rank=16 --set lora.alpha=32 --set lora.target_modules='["all-linear"]')
        out=$("$cli" plan "$cfg" --set runtime.precision=bf16 --set train.seq_len=2048 \
            --set train.batch_size=1 "${extra[@]}") || fail "$name: trainrt plan ($mode) failed"
        total=$(printf '%s\n' "$out" | sed -n 's/^  total (estimate) *//p')
        [ -n "$total" ] || fail "$name: trainrt plan ($mode) printed no total:\n$out"
        echo "real_configs: $name: ${published[$name]} parameters; $mode bf16 fine-tune at T 2048: $total"
    done
done
echo "real_configs: PASS (${#published[@]} configs)"
