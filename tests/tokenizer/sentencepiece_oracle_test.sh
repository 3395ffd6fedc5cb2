#!/usr/bin/env bash
# The SentencePiece oracle test: SentencePiece models (tokenizer.model) read by this library
# (src/tokenizer/sentencepiece_tokenizer.cpp) against Debian's `spm_encode` / `spm_decode`.
# The models are trained here, at test time, by Debian's `spm_train`: a Llama 2-style BPE
# (byte fallback, no normalization), a unigram model with SentencePiece's defaults (NFKC,
# whitespace folding) and a BPE without byte fallback (unknown pieces). Over the oracle's
# >= 1 MB mixed corpus (oracle/make_corpus.py; a tenth of it when TRAINRT_ORACLE_FRACTION=0.1,
# as scripts/sanitize.sh sets), cut into lines as spm_encode reads them, zero
# mismatching lines are allowed, in ids and in decoded text; the Llama 2-style model must
# also give decode(encode(x)) == x.
# Then end to end with the Llama 2-style model: `trainrt prepare --jsonl` on all threads must
# give, document by document, the end-of-text id and spm_encode's ids; a text file is encoded
# whole; a tiny model trains on the shards, samples through the model (data.tokenizer), and
# exports it as tokenizer.model; a model folder is read; a truncated model is refused by name.
#   sentencepiece_oracle_test.sh ENCODE_CORPUS_BINARY TRAINRT_CLI WORK_DIR
# Exit 77 (CTest: skipped, with the reason printed) when spm_* are missing or this build has
# no SentencePiece support; scripts/test.sh (CI) builds with it and installs them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
encode=$1
cli=$2
work=$3
skip() { echo "sentencepiece oracle: SKIP: $*"; exit 77; }
for tool in spm_train spm_encode spm_decode; do
    command -v "$tool" >/dev/null ||
        skip "$tool not found (apt-get install sentencepiece, or scripts/install-deps.sh --test)"
done
rm -rf "$work"
mkdir -p "$work"
py=python3
command -v "$py" >/dev/null || py=/usr/bin/python3
"$py" "$here/oracle/make_corpus.py" "$work/corpus.jsonl"
shakespeare="$here/../../../shared/data/tinyshakespeare.txt"
[ -f "$shakespeare" ] || shakespeare="$here/../../examples/data/tinyshakespeare.txt"
# spm_encode reads lines: the corpus's documents cut into lines, as text and as JSON strings;
# docs.jsonl holds the lines prepare keeps (not blank) as {"text": line} documents.
"$py" - "$work" <<'PY'
import json, sys
w = sys.argv[1]
lines = []
for doc in open(w + "/corpus.jsonl", encoding="utf-8"):
    lines.extend(json.loads(doc).split("\n"))
with open(w + "/lines.txt", "w", encoding="utf-8", newline="") as t, \
     open(w + "/lines.jsonl", "w", encoding="utf-8") as j, \
     open(w + "/docs.txt", "w", encoding="utf-8", newline="") as dt, \
     open(w + "/docs.jsonl", "w", encoding="utf-8") as dj:
    for line in lines:
        t.write(line + "\n")
        j.write(json.dumps(line, ensure_ascii=False) + "\n")
        if line.strip(" \t\r"):
            dt.write(line + "\n")
            dj.write(json.dumps({"text": line}, ensure_ascii=False) + "\n")
PY
cat "$shakespeare" "$work/lines.txt" > "$work/train.txt"

common="--input=$work/train.txt --vocab_size=4000 --minloglevel=2"
# name | spm_train options | whether decode(encode(x)) == x must hold
models=(
  "llama2|--model_type=bpe --byte_fallback=true --split_digits=true --normalization_rule_name=identity --remove_extra_whitespaces=false --allow_whitespace_only_pieces=true --character_coverage=0.9995 --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1|yes"
  "unigram||no"
  "bpe_unk|--model_type=bpe --character_coverage=0.98|no"
)
status=0
compared=0
lines=$(wc -l < "$work/lines.txt")
for entry in "${models[@]}"; do
    IFS='|' read -r name options round_trip <<<"$entry"
    # shellcheck disable=SC2086  # the options are words
    spm_train $common --model_prefix="$work/$name" $options >"$work/$name.train.log" 2>&1 ||
        { echo "sentencepiece oracle: spm_train $name failed:"; tail -5 "$work/$name.train.log"; status=1; continue; }
    spm_encode --model="$work/$name.model" --output_format=id < "$work/lines.txt" > "$work/$name.spm.txt"
    spm_decode --model="$work/$name.model" --input_format=id < "$work/$name.spm.txt" > "$work/$name.spm.decoded.txt"
    set +e
    "$encode" "$work/$name.model" "$work/lines.jsonl" "$work/$name.ours.txt" "$work/$name.ours.decoded.txt"
    rc=$?
    set -e
    if [ $rc -eq 3 ]; then skip "this build reads no SentencePiece models (TRAINRT_SENTENCEPIECE)"; fi
    if [ $rc -ne 0 ]; then
        echo "sentencepiece oracle: $name: our encoder failed (exit $rc)"
        status=1
        continue
    fi
    compared=$((compared + 1))
    mismatches=$(paste -d '\n' "$work/$name.spm.txt" "$work/$name.ours.txt" |
                 awk 'NR % 2 == 1 { s = $0; next } { if ($0 != s) n++ } END { print n + 0 }')
    # spm_decode writes a line of text per line; encode_corpus a JSON string. Where the model
    # must round-trip, decode(encode(x)) == x too, except on text holding "▁" (U+2581), which
    # SentencePiece reads as its whitespace symbol and gives back as a space.
    if decoded=$("$py" - "$work/$name.spm.decoded.txt" "$work/$name.ours.decoded.txt" \
                 "$work/lines.jsonl" "$round_trip" <<'PY'
import json, sys
spm = open(sys.argv[1], "rb").read().decode("utf-8").split("\n")[:-1]
ours = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
lines = [json.loads(line) for line in open(sys.argv[3], encoding="utf-8")]
same = spm == ours
msg = "decoded text %s spm_decode's" % ("identical to" if same else "DIFFERENT from")
ok = same
if sys.argv[4] == "yes":
    kept = [(x, y) for x, y in zip(lines, ours) if "\u2581" not in x]
    bad = sum(1 for x, y in kept if x != y)
    msg += "; decode(encode(x)) == x on %d of %d lines (%d hold U+2581)" % (
        len(kept) - bad, len(kept), len(lines) - len(kept))
    ok = ok and bad == 0
print(msg)
sys.exit(0 if ok else 1)
PY
    ); then :; else status=1; fi
    echo "sentencepiece oracle: $name: $lines lines, $mismatches mismatching; $decoded"
    if [ "$mismatches" != 0 ]; then
        status=1
        first=$(paste -d '\t' "$work/$name.spm.txt" "$work/$name.ours.txt" |
                awk -F '\t' '$1 != $2 { print NR; exit }')
        echo "  first at line $first:"
        sed -n "${first}p" "$work/lines.jsonl" | cut -c1-300
        echo "  spm:  $(sed -n "${first}p" "$work/$name.spm.txt" | cut -c1-300)"
        echo "  ours: $(sed -n "${first}p" "$work/$name.ours.txt" | cut -c1-300)"
    fi
done
if [ $compared -lt 3 ]; then
    echo "sentencepiece oracle: only $compared models compared; 3 are required"
    exit 1
fi
model="$work/llama2.model"

# prepare --jsonl on 2 threads: every document is </s> (id 2) and then spm_encode's ids.
spm_encode --model="$model" --output_format=id < "$work/docs.txt" > "$work/docs.spm.txt"
"$cli" prepare --jsonl text --text "$work/docs.jsonl" --out "$work/prepared" \
    --tokenizer "$model" --val-fraction 0 --threads 2
"$py" - "$work/prepared/train.bin" "$work/docs.spm.txt" <<'PY' || status=1
import struct, sys
data = open(sys.argv[1], "rb").read()
magic, version, count = struct.unpack("<3i", data[:12])
ids = list(struct.unpack("<%dH" % count, data[1024:1024 + 2 * count]))
want = []
for line in open(sys.argv[2]):
    want.append(2)
    want.extend(int(x) for x in line.split())
ok = magic == 20240520 and ids == want
print("sentencepiece oracle: prepare --jsonl: %d tokens, %s" %
      (count, "spm_encode's ids after each </s>" if ok else "DIFFERENT from spm_encode's"))
sys.exit(0 if ok else 1)
PY

# A text file is one document, encoded whole (not cut into pieces, which the dummy prefix
# would change): </s>, then what the whole file encodes to.
"$py" -c 'import json, sys; print(json.dumps(open(sys.argv[1], encoding="utf-8").read(), ensure_ascii=False))' \
    "$shakespeare" > "$work/whole.jsonl"
"$encode" "$model" "$work/whole.jsonl" "$work/whole.ours.txt"
"$cli" prepare --text "$shakespeare" --out "$work/prepared-text" --tokenizer "$model" \
    --val-fraction 0 --threads 2 >/dev/null
"$py" - "$work/prepared-text/train.bin" "$work/whole.ours.txt" <<'PY' || status=1
import struct, sys
data = open(sys.argv[1], "rb").read()
count = struct.unpack("<3i", data[:12])[2]
ids = list(struct.unpack("<%dH" % count, data[1024:1024 + 2 * count]))
want = [2] + [int(x) for x in open(sys.argv[2]).read().split()]
print("sentencepiece oracle: prepare --text: %d tokens, %s" %
      (count, "the whole file's ids" if ids == want else "DIFFERENT from the whole file's ids"))
sys.exit(0 if ids == want else 1)
PY

# Train 2 steps on the shards with the model as data.tokenizer, sample through it, export.
bash "$here/oracle/train_sample_export.sh" "$cli" "$work" 4000 llama2.model "$model" \
    tokenizer.model "sentencepiece oracle" || status=1
[ ! -e "$work/exported/tokenizer.json" ] ||
    { echo "sentencepiece oracle: the export also wrote a tokenizer.json"; status=1; }
# The exported folder is a tokenizer too (its tokenizer.model).
if "$cli" prepare --text "$shakespeare" --out "$work/prepared-folder" --tokenizer "$work/exported" \
    --val-fraction 0 >/dev/null 2>&1 && cmp -s "$work/prepared-folder/train.bin" "$work/prepared-text/train.bin"; then
    echo "sentencepiece oracle: a model folder's tokenizer.model: ok"
else
    echo "sentencepiece oracle: prepare with the exported folder failed or differs"; status=1
fi
# A truncated model is refused, naming the file.
head -c 1000 "$model" > "$work/truncated.model"
if out=$("$cli" prepare --text "$shakespeare" --out "$work/prepared-bad" \
        --tokenizer "$work/truncated.model" 2>&1); then
    echo "sentencepiece oracle: a truncated model was accepted"; status=1
elif [[ "$out" == *"$work/truncated.model"* ]]; then
    echo "sentencepiece oracle: a truncated model is refused by name: ok"
else
    echo "sentencepiece oracle: a truncated model's error does not name it: $out"; status=1
fi
exit $status
