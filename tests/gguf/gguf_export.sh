#!/usr/bin/env bash
# `trainrt export CHECKPOINT --gguf FILE` end to end (issue 44): tiny GPT-2, Llama and Qwen3
# models trained a few steps on text tokenized with real tokenizer folders (GPT-2, Llama 3.1,
# Qwen3: the npm oracle packages of tests/tokenizer/oracle/setup.sh), each exported as F16 and
# Q8_0 GGUF files and as a Hugging Face folder, then gguf_check.py: the file as llama.cpp
# needs it, its tensors against the HF export's, its tokenizer against the folder's, and the
# file as @huggingface/gguf (npm) reads it. Then the CLI's refusals.
#   usage: gguf_export.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR ORACLE_DIR
# Exit 77 (skipped) when the npm packages cannot be installed (no node/npm, no registry).
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3
ORACLE=$4
PY=/usr/bin/python3  # Debian's, with python3-numpy (scripts/install-deps.sh --test)

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }

rc=0
bash "$SRC/tests/tokenizer/oracle/setup.sh" "$ORACLE" >/dev/null || rc=$?
[ "$rc" != 77 ] || { echo "SKIP: the npm packages could not be installed"; exit 77; }
[ "$rc" = 0 ] || fail "tests/tokenizer/oracle/setup.sh $ORACLE exited $rc"

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

words=(hello there the sea is calm who goes where ships sail at night day and stars)
RANDOM=44
for ((i = 0; i < 400; i++)); do printf '%s ' "${words[RANDOM % ${#words[@]}]}"; done > text.txt

# name family tokenizer pre model-keys
runs=(
    "gpt2 gpt2 gpt2 gpt-2"
    "llama llama llama3_1 llama-bpe"
    "qwen3 qwen3 qwen3 qwen2"
)
for entry in "${runs[@]}"; do
    read -r name family tok pre <<< "$entry"
    step "$name ($tok tokenizer)"
    folder="$ORACLE/tokenizers/$tok"
    out=$("$TRAINRT" prepare --text text.txt --tokenizer "$folder" --out "$name/data" \
          --val-fraction 0 2>&1) || fail "prepare ($name): $out"
    vocab=$(sed -n 's/.*vocab_size >= \([0-9]*\).*/\1/p' <<< "$out")
    [ -n "$vocab" ] || fail "prepare did not say the vocabulary size: $out"
    case $family in
        gpt2) model='arch = "gpt2"
n_head = 2' ;;
        llama) model='arch = "llama"
n_head = 4
n_kv_head = 2
d_ff = 64
tie_embeddings = false' ;;
        # head_dim 24: attention 48 wide over d_model 32 (key_length; rows of 48 are not
        # whole Q8_0 blocks: attn_output falls back to F16, and the export says so).
        qwen3) model='arch = "qwen3"
n_head = 2
n_kv_head = 1
head_dim = 24
d_ff = 64' ;;
    esac
    cat > "$name/run.toml" <<TOML
[model]
$model
vocab_size = $vocab
context_length = 32
n_layer = 2
d_model = 32
[data]
train = "data/train.bin"
tokenizer = "$folder"
[train]
batch_size = 2
seq_len = 32
steps = 2
eval_every = 0
out_dir = "out"
[optim]
lr = 0.01
[runtime]
device = "cpu"
threads = 1
TOML
    log=$( (cd "$name" && "$TRAINRT" train run.toml --fresh) 2>&1) || fail "train ($name): $log"
    "$TRAINRT" export "$name/out" "$name/hf" > /dev/null 2> "$name/hf.log" ||
        fail "export ($name): $(cat "$name/hf.log")"
    for type in f16 q8_0; do
        file="$name/$name-$type.gguf"
        msg=$("$TRAINRT" export "$name/out" --gguf "$file" --gguf-type "$type" 2>&1) ||
            fail "export --gguf ($name, $type): $msg"
        grep -q "wrote $file (GGUF, $type)" <<< "$msg" || fail "export --gguf said: $msg"
        if [ "$name" = qwen3 ] && [ "$type" = q8_0 ]; then
            grep -q "not whole Q8_0 blocks of 32 written as F16: blk.0.attn_output.weight" \
                <<< "$msg" || fail "the Q8_0 fallback was not noted: $msg"
        fi
        "$PY" "$SRC/tests/gguf/gguf_check.py" --gguf "$file" --hf "$name/hf" \
            --tokenizer "$folder" --family "$family" --type "$type" --pre "$pre" \
            --node-modules "$ORACLE/node_modules" || fail "gguf_check ($name, $type)"
    done
done

# README's "Fine-tune on a small machine, run it in llama.cpp": QLoRA on the Llama run's Hugging
# Face export (a model folder with its tokenizer), then the GGUF of the merged model.
step "qlora (nf4 base from the llama folder) to GGUF"
mkdir -p qlora
cat > qlora/run.toml <<TOML
[model]
init_from = "../llama/hf"
[lora]
rank = 4
alpha = 8.0
target_modules = ["all-linear"]
base_dtype = "nf4"
[data]
train = "../llama/data/train.bin"
[train]
batch_size = 2
seq_len = 32
steps = 2
eval_every = 0
recompute = "block"
out_dir = "out"
[runtime]
device = "cpu"
threads = 1
TOML
log=$( (cd qlora && "$TRAINRT" train run.toml --fresh) 2>&1) || fail "train (qlora): $log"
"$TRAINRT" export qlora/out qlora/hf --merge > /dev/null 2> qlora/hf.log ||
    fail "export (qlora): $(cat qlora/hf.log)"
msg=$("$TRAINRT" export qlora/out --gguf qlora/qlora-f16.gguf --gguf-type f16 2>&1) ||
    fail "export --gguf (qlora): $msg"
"$PY" "$SRC/tests/gguf/gguf_check.py" --gguf qlora/qlora-f16.gguf --hf qlora/hf \
    --tokenizer "$ORACLE/tokenizers/llama3_1" --family llama --type f16 --pre llama-bpe \
    --node-modules "$ORACLE/node_modules" || fail "gguf_check (qlora)"
# Its adapters alone, as llama.cpp's adapter file (--gguf-lora), read by @huggingface/gguf:
# the keys llama.cpp checks, and A [in, r] / B [r, out] (ne) for every adapted linear.
msg=$("$TRAINRT" export qlora/out --gguf-lora qlora/adapter.gguf 2>&1) ||
    fail "export --gguf-lora (qlora): $msg"
grep -q "wrote qlora/adapter.gguf (GGUF LoRA adapter, f16)" <<< "$msg" || fail "said: $msg"
node "$SRC/tests/gguf/hf_gguf_read.mjs" "$ORACLE/node_modules" qlora/adapter.gguf > qlora/adapter.json ||
    fail "@huggingface/gguf could not read qlora/adapter.gguf"
"$PY" - qlora/adapter.json <<'PY' || fail "the adapter file"
import json, sys
f = json.load(open(sys.argv[1]))
m, t = f["metadata"], {x["name"]: x["shape"] for x in f["tensors"]}
assert m["general.type"] == "adapter" and m["adapter.type"] == "lora", m
assert m["general.architecture"] == "llama" and m["adapter.lora.alpha"] == 8.0, m
assert len(t) == 2 * 7 * 2, sorted(t)  # every linear of 2 blocks, A and B
assert t["blk.0.attn_q.weight.lora_a"] == [32, 4], t["blk.0.attn_q.weight.lora_a"]
assert t["blk.1.ffn_down.weight.lora_b"] == [4, 32], t["blk.1.ffn_down.weight.lora_b"]
assert t["blk.1.ffn_gate.weight.lora_b"] == [4, 64], t["blk.1.ffn_gate.weight.lora_b"]
PY
# model.init_from = a GGUF file (the stretch of issue 44): the same LoRA run from a model's F32
# GGUF export and from its Hugging Face export gives the same losses, bit for bit (GPT-2: its
# Conv1D weights transposed back; Llama: q/k rows put back in rotate-half order; an nf4 base
# quantised from the same values). A Q8_0 file trains too (its values are Q8_0's). The GGUF
# runs name no tokenizer (the file holds none; the shards' is not needed to train).
losses() { grep -o '"loss":[^,}]*' "$1/out/metrics.jsonl"; }
for entry in "gpt2 nf4" "llama nf4" "llama fp32"; do
    read -r name base <<< "$entry"
    step "LoRA ($base base) from $name's GGUF = from its HF folder"
    "$TRAINRT" export "$name/out" --gguf "$name/$name-f32.gguf" --gguf-type f32 --force > /dev/null 2>&1 ||
        fail "export --gguf f32 ($name)"
    sources="hf gguf q8"
    [ "$base" = fp32 ] && sources="hf gguf"  # the Q8_0 file trained under nf4 already
    for src in $sources; do
        case $src in
            hf) from="../$name/hf" ;;
            gguf) from="../$name/$name-f32.gguf" ;;
            q8) from="../$name/$name-q8_0.gguf" ;;
        esac
        dir="from-$name-$base-$src"
        mkdir -p "$dir"
        cat > "$dir/run.toml" <<TOML
[model]
init_from = "$from"
[lora]
rank = 4
alpha = 8.0
target_modules = ["all-linear"]
base_dtype = "$base"
[data]
train = "../$name/data/train.bin"
[train]
batch_size = 2
seq_len = 32
steps = 3
eval_every = 0
out_dir = "out"
[runtime]
device = "cpu"
threads = 1
log_every = 1
TOML
        log=$( (cd "$dir" && "$TRAINRT" train run.toml --fresh) 2>&1) || fail "train ($dir): $log"
    done
    [ "$(losses "from-$name-$base-gguf" | wc -l)" = 3 ] || fail "$name: no 3 losses from the GGUF run"
    [ "$(losses "from-$name-$base-hf")" = "$(losses "from-$name-$base-gguf")" ] ||
        fail "$name ($base): the GGUF run's losses differ: $(losses "from-$name-$base-hf" | tr '\n' ' ') vs $(losses "from-$name-$base-gguf" | tr '\n' ' ')"
    [ "$base" = fp32 ] || [ "$(losses "from-$name-$base-q8")" != "$(losses "from-$name-$base-gguf")" ] ||
        fail "$name ($base): the Q8_0 base trained exactly as the F32 one (its values were not Q8_0's?)"
    echo "ok: $name ($base): $(losses "from-$name-$base-gguf" | tr '\n' ' ')"
done

expect_lora_failure() { "$TRAINRT" export "$@" > lora.out 2>&1 && fail "export $* succeeded"; true; }
expect_lora_failure gpt2/out --gguf-lora x.gguf  # a run without adapters
grep -q "lora.rank = 0" lora.out || fail "--gguf-lora of a run without adapters: $(cat lora.out)"
[ ! -e x.gguf ] || fail "a refused --gguf-lora wrote x.gguf"

step "refusals"
expect_failure() {  # NAME WANT_RC WANT_TEXT COMMAND...
    local name=$1 want_rc=$2 want=$3
    shift 3
    local got=0
    "$@" > "$name.out" 2>&1 || got=$?
    [ "$got" = "$want_rc" ] || fail "$name: exit $got, expected $want_rc: $(cat "$name.out")"
    grep -qF -- "$want" "$name.out" || fail "$name: '$want' not in: $(cat "$name.out")"
}
expect_failure exists 1 "already exists" "$TRAINRT" export gpt2/out --gguf gpt2/gpt2-f16.gguf
"$TRAINRT" export gpt2/out --gguf gpt2/gpt2-f16.gguf --force > /dev/null || fail "--force"
expect_failure bad_type 1 "use f32, f16, bf16 or q8_0" \
    "$TRAINRT" export gpt2/out --gguf x.gguf --gguf-type q4
[ ! -e x.gguf ] || fail "a refused export wrote x.gguf"
expect_failure dtype 2 "--gguf-type" "$TRAINRT" export gpt2/out --gguf x.gguf --dtype bf16
expect_failure two 2 "needs CHECKPOINT only" "$TRAINRT" export gpt2/out dir --gguf x.gguf
expect_failure type_alone 2 "--gguf-type goes with --gguf" "$TRAINRT" export gpt2/out dir --gguf-type f16
expect_failure missing_dir 1 "x/y.gguf" "$TRAINRT" export gpt2/out --gguf x/y.gguf
echo "gguf_export: ok"
