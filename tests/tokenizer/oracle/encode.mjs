#!/usr/bin/env node
// usage: node encode.mjs <tokenizer_dir> <corpus.jsonl> <out.txt> [decoded.jsonl]
//
// With decoded.jsonl, also writes decode(encode(doc)) there, a JSON string a line (for a
// tokenizer whose round trip is not the identity: the C++ decode must then give the same).
// Reference ids from @lenml/tokenizers (a dependency-free port of
// transformers.js's tokenizers), independent of our C++ code. Writes one
// line per corpus document: ids separated by single spaces, empty line for an
// empty document. Never adds BOS/EOS.
//
// How the JS library treats added/special tokens (checked in v3.7.2 source,
// PreTrainedTokenizer._encode_text): before normalizing or pre-tokenizing it
// cuts the raw text on EVERY entry of tokenizer.json "added_tokens" (special
// or not) with a trie, leftmost-longest, and each match becomes its single
// id; lstrip/rstrip flags are honoured. This is HF tokenizers' default
// (split_special_tokens=False). All added tokens in the shipped files have
// normalized=false, so matching on raw text is also what HF does. So
// "<|endoftext|>" is 50256 for GPT-2 and 151643 for Qwen2.5, but plain text for
// Llama 3, whose own specials are "<|begin_of_text|>" (128000) etc.
//
// Known gaps versus HF tokenizers (Rust/Oniguruma), kept out of the corpus:
// JS regex \s excludes U+0085 and includes U+FEFF; Oniguruma's Unicode \s
// (per its docs) does the opposite. Very new Unicode letters may be classified differently.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [tokDir, corpusPath, outPath, decodedPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node encode.mjs <tokenizer_dir> <corpus.jsonl> <out.txt>");
  process.exit(2);
}

// setup.sh puts node_modules in DEST and tokenizers in DEST/tokenizers/<name>,
// so this script can run from the source tree without its own install.
const home = process.env.TOKENIZER_ORACLE_HOME || path.resolve(tokDir, "..", "..");
let require = createRequire(path.join(home, "package.json"));
for (const base of [null, import.meta.url]) {
  if (base) require = createRequire(base);
  try {
    require.resolve("@lenml/tokenizers");
    break;
  } catch {
    if (base) {
      console.error(`encode.mjs: @lenml/tokenizers not found; run setup.sh DEST or set TOKENIZER_ORACLE_HOME`);
      process.exit(77); // same skip code as setup.sh
    }
  }
}
const lib = require("@lenml/tokenizers");
// package.json is not in the package's "exports"; read it next to dist/.
const libVersion = JSON.parse(fs.readFileSync(
  path.join(path.dirname(require.resolve("@lenml/tokenizers")), "..", "package.json"), "utf8")).version;

const readJson = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const tokJson = readJson(path.join(tokDir, "tokenizer.json"));
const cfgPath = path.join(tokDir, "tokenizer_config.json");
const cfg = fs.existsSync(cfgPath) ? readJson(cfgPath) : {};

// Our runtime reads tokenizer.json only (like tokenizers.Tokenizer.from_file),
// so use the base class, not the transformers wrapper named by
// tokenizer_class (LlamaTokenizer, for one, rewrites the input), and switch
// off the config keys that change text before the tokenizer.json pipeline.
// The library insists on a config object; the rest of it (bos/eos names,
// chat template) does not affect encode without special tokens.
const tok = new lib.tokenizers.PreTrainedTokenizer(tokJson, {
  ...cfg,
  remove_space: false,
  do_lowercase_and_remove_accent: false,
  clean_up_tokenization_spaces: false,
});

const lines = fs.readFileSync(corpusPath, "utf8").split("\n");
if (lines.at(-1) === "") lines.pop(); // trailing newline, not a document
const docs = lines.map((l, i) => {
  const d = JSON.parse(l);
  if (typeof d !== "string") throw new Error(`${corpusPath}:${i + 1}: not a JSON string`);
  return d;
});

const t0 = process.hrtime.bigint();
const encoded = docs.map((d) => tok.encode(d, { add_special_tokens: false }));
const secs = Number(process.hrtime.bigint() - t0) / 1e9;

let nTokens = 0;
for (const [i, ids] of encoded.entries()) {
  // An unknown piece would give undefined; a silent "undefined" in the file
  // would look like a C++ bug later, so stop here instead.
  if (!ids.every(Number.isInteger)) throw new Error(`document ${i + 1}: non-integer id`);
  nTokens += ids.length;
}
fs.writeFileSync(outPath, encoded.map((ids) => ids.join(" ")).join("\n") + (docs.length ? "\n" : ""));

// Round trip: only reported. A normalizer (Qwen2.5: NFC) legitimately
// changes text, so failures that vanish under NFC are counted apart.
// decode([]) throws in this library, hence the guard.
let fails = 0, nfcOnly = 0;
const decoded = [];
for (const [i, ids] of encoded.entries()) {
  const back = ids.length ? tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }) : "";
  decoded.push(JSON.stringify(back));
  if (back === docs[i]) continue;
  fails++;
  if (back.normalize("NFC") === docs[i].normalize("NFC")) nfcOnly++;
  else if (fails - nfcOnly <= 3) console.error(`  round-trip mismatch, document ${i + 1}: ${JSON.stringify(back.slice(0, 80))}`);
}

if (decodedPath) fs.writeFileSync(decodedPath, decoded.join("\n") + (docs.length ? "\n" : ""));

const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d, "utf8"), 0);
const name = path.basename(path.resolve(tokDir));
console.error(
  `encode.mjs [${name}, @lenml/tokenizers ${libVersion}]: ${docs.length} documents, ${nTokens} tokens, ` +
    `${(bytes / 1e6).toFixed(3)} MB in ${secs.toFixed(2)} s = ${(bytes / 1e6 / secs).toFixed(2)} MB/s; ` +
    `decode round-trip failures: ${fails} (${nfcOnly} differ only by NFC)`,
);
