#!/usr/bin/env bash
# Chat templates rendered per second on one thread (issue 40's goal: >= 10,000 conversations/s),
# through the C API (`trainrt chat-template --bench N`: trainrt_chat_template_render, JSON in,
# text out), on the real templates of the npm tokenizer packages.
#   bash bench/chat_template_speed.sh [TRAINRT] [ORACLE_TOKENIZERS] [N]
# ORACLE_TOKENIZERS: the folders tests/tokenizer/oracle/setup.sh lays out (default: the build's,
# build/tests/tokenizer/oracle-work/oracle/tokenizers). The conversation: a system prompt and
# four user/assistant exchanges of one to three sentences (9 messages).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
TRAINRT=$(realpath "${1:-build/trainrt}")
ORACLE=$(realpath "${2:-build/tests/tokenizer/oracle-work/oracle/tokenizers}")
N=${3:-50000}
source "$src/bench/lib.sh"
work=$(mktemp -d /tmp/chat-template-speed.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$work/conv.json" <<'PY'
import json, sys
msgs = [{"role": "system", "content": "You are a helpful assistant. Answer briefly."}]
for q, a in [("What is the capital of France?", "Paris."),
             ("And its population?", "About 2.1 million in the city proper, 12 million in the metro area."),
             ("Name a famous museum there.", "The Louvre, home of the Mona Lisa."),
             ("Thanks!", "You're welcome. Anything else?")]:
    msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
json.dump({"messages": msgs}, open(sys.argv[1], "w"))
PY
echo "# Chat template rendering speed (bench/chat_template_speed.sh)"
echo
bench_machine
echo "- one thread; $N renders of a 9-message conversation each"
echo
echo "| template | conversations/s | MB/s of text |"
echo "|---|---|---|"
for t in llama3_1 qwen2_5 qwen3 gemma3 deepseek_v3; do
    [ -d "$ORACLE/$t" ] || continue
    line=$("$TRAINRT" chat-template --tokenizer "$ORACLE/$t" --bench "$N" "$work/conv.json")
    rate=$(sed -n 's/.*: \([0-9]*\) conversations\/s.*/\1/p' <<<"$line")
    mbs=$(sed -n 's/.*conversations\/s, \([0-9.]*\) MB\/s.*/\1/p' <<<"$line")
    echo "| $t | $rate | $mbs |"
done
