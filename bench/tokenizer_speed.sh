#!/usr/bin/env bash
# Tokenizer encoding throughput, side by side in one run (issue 18's speed goal: >= 10x the JS
# implementation and >= 20 MB/s per core for GPT-2): libtrainrt on one thread
# (tokenizer_encode_corpus: encode calls only), libtrainrt on all cores (`trainrt prepare
# --tokenizer` on JSON lines, as it reports itself: loading the tokenizer, reading, parsing,
# writing and fsyncing the shards included), and the oracle's JavaScript
# implementation (@lenml/tokenizers, tests/tokenizer/oracle) on the same documents.
#   bash bench/tokenizer_speed.sh [BUILD_DIR] [WORK_DIR]
# Corpora: English (tinyshakespeare, cut into ~2 KB documents, 16 copies: 18 MB) and the oracle's
# mixed stress corpus (code, many scripts, emoji, whitespace runs: 1.3 MB). Prints a markdown
# table; record it in bench/results/ with the CPU (printed first).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=${2:-/tmp/tokenizer-speed}
mkdir -p "$work"
py=python3
command -v "$py" >/dev/null || py=/usr/bin/python3
bash "$root/tests/tokenizer/oracle/setup.sh" "$work/oracle" >/dev/null
"$py" "$root/tests/tokenizer/oracle/make_corpus.py" "$work/mixed.jsonl" 2>/dev/null
"$py" - "$root/../shared/data/tinyshakespeare.txt" "$work/english.jsonl" <<'PY'
import json, sys
text = open(sys.argv[1], encoding="utf-8").read() * 16
with open(sys.argv[2], "w", encoding="utf-8") as out:
    start = 0
    while start < len(text):
        end = text.find("\n\n", start + 2000)
        end = len(text) if end < 0 else end + 2
        out.write(json.dumps(text[start:end], ensure_ascii=False) + "\n")
        start = end
PY
# prepare reads JSON lines of objects.
for c in english mixed; do
    "$py" -c 'import json,sys
for line in open(sys.argv[1], encoding="utf-8"):
    print(json.dumps({"text": json.loads(line)}, ensure_ascii=False))' \
        "$work/$c.jsonl" > "$work/$c.objects.jsonl"
done

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; flags with avx512/avx2:" \
     "$(grep -o -w 'avx2\|avx512[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "commit: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo ' (uncommitted changes)')"
echo
echo "| corpus | tokenizer | MB | libtrainrt 1 thread MB/s | libtrainrt $(nproc) threads (prepare) MB/s | JS MB/s | 1 thread / JS |"
echo "|---|---|---|---|---|---|---|"
mbps() { sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p' | head -1; }
for c in english mixed; do
    for t in gpt2 llama3 qwen2_5; do
        dir="$work/oracle/tokenizers/$t"
        # (The decoded text goes to a file: Qwen2.5's NFC makes it differ from the input.)
        line=$("$build/tests/tokenizer/tokenizer_encode_corpus" "$dir/tokenizer.json" "$work/$c.jsonl" \
               "$work/$c.$t.ours.txt" "$work/$c.$t.decoded.jsonl" 2>&1)
        ours=$(echo "$line" | mbps)
        bytes=$(echo "$line" | sed -n 's/.* \([0-9]*\) bytes,.*/\1/p')
        js=$(node "$root/tests/tokenizer/oracle/encode.mjs" "$dir" "$work/$c.jsonl" "$work/$c.$t.js.txt" 2>&1 |
             sed -n 's/.*= \([0-9.]*\) MB\/s.*/\1/p' | head -1)
        all=$("$build/trainrt" prepare --text "$work/$c.objects.jsonl" --jsonl text --out "$work/prep" \
              --tokenizer "$dir" --val-fraction 0 | mbps)
        ratio=$("$py" -c "print('%.1fx' % ($ours / $js))")
        cmp -s "$work/$c.$t.ours.txt" "$work/$c.$t.js.txt" || ratio="$ratio (ids DIFFER)"
        echo "| $c | $t | $("$py" -c "print('%.1f' % ($bytes / 1e6))") | $ours | $all | $js | $ratio |"
    done
done
