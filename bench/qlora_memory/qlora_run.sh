# Sourced by bench/qlora_memory/run.sh and bench/qlora_speed/run.sh (after src, THREADS are
# set): the random Llama-3.2-1B folder (make_model.py, written once), a scratch folder $work
# (entered, removed on exit) with 40,000 random token ids as train.bin, and run.toml — QLoRA
# nf4 r16 on every linear, B1, recompute block, bf16, on the CPU — for qlora_run SEQ STEPS
# [EXTRA TOML LINES].
model=/tmp/qlora_memory_llama32_1b
[ -f "$model/model.safetensors" ] || /usr/bin/python3 "$src/bench/qlora_memory/make_model.py" "$model" >/dev/null
qlora_run() {
    local seq=$1 steps=$2 extra=${3:-}
    work=$(mktemp -d /tmp/qlora-bench.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    cd "$work"
    /usr/bin/python3 - <<'PY'
import numpy as np
ids = np.random.default_rng(1).integers(0, 128256, 40000).astype("<u4")
hdr = np.zeros(256, "<i4"); hdr[:3] = [20240801, 7, ids.size]
open("train.bin", "wb").write(hdr.tobytes() + ids.tobytes())
PY
    cat >run.toml <<TOML
[model]
init_from = "$model"
[lora]
rank = 16
alpha = 32.0
target_modules = ["all-linear"]
base_dtype = "nf4"
[data]
train = "$work/train.bin"
[train]
batch_size = 1
seq_len = $seq
steps = $steps
eval_every = 0
recompute = "block"
$extra
[runtime]
device = "cpu"
precision = "bf16"
threads = $THREADS
TOML
}
