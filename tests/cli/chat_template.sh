#!/usr/bin/env bash
# `trainrt chat-template` (docs/CHAT_TEMPLATES.md): stdout is the rendered text exactly (no
# newline added), --add-generation-prompt, --var, --template, a bare list of messages,
# --jsonl with per-line add_generation_prompt and per-line errors, --spans; usage errors exit 2,
# a refused or failing template exits 1 naming the file and line.
#   usage: chat_template.sh TRAINRT_BINARY SOURCE_DIR SCRATCH_DIR
set -euo pipefail

TRAINRT=$1
SRC=$2
WORK=$3
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
# expect_status WANT NAME COMMAND...: exit status WANT; stdout in NAME.out, stderr in NAME.err.
expect_status() {
    local want=$1 name=$2
    shift 2
    local rc=0
    "$@" >"$name.out" 2>"$name.err" || rc=$?
    [ "$rc" -eq "$want" ] || fail "$name: exit status $rc, want $want: $* ($(cat "$name.err"))"
    echo "ok: $name (exit $rc)"
}
expect_in() {
    local file=$1
    shift
    for text in "$@"; do
        grep -qF -- "$text" "$file" || fail "$file lacks '$text': $(cat "$file")"
    done
}
# same FILE TEXT: FILE holds exactly TEXT (printf-style escapes).
same() {
    printf "$2" >want.txt
    cmp -s "$1" want.txt || fail "$1: got $(od -c "$1" | head -5), want $(od -c want.txt | head -5)"
}

mkdir tpl
cat >tpl/tokenizer_config.json <<'JSON'
{"bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>",
 "chat_template": [{"name": "default", "template": "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{{ eos_token }}\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}{{ suffix | default('') }}"},
                   {"name": "tools", "template": "{{ tools | map(attribute='name') | join(',') }}|{{ messages | length }}"}]}
JSON
cat >conv.json <<'JSON'
{"messages": [{"role": "user", "content": " Hé \"you\" 😀 "}, {"role": "assistant", "content": "ok\n"}],
 "tools": [{"name": "f"}, {"name": "g"}]}
JSON
echo '[{"role": "user", "content": "bare"}]' >bare.json

expect_status 0 plain "$TRAINRT" chat-template --tokenizer tpl conv.json
same plain.out '<s><user>Hé "you" 😀</s>\n<assistant>ok</s>\n'
expect_status 0 agp "$TRAINRT" chat-template --tokenizer tpl --add-generation-prompt --var 'suffix="!"' bare.json
same agp.out '<s><user>bare</s>\n<assistant>!'
expect_status 0 named "$TRAINRT" chat-template --tokenizer tpl --template tools conv.json
same named.out 'f,g|2'

printf '%s\n' '{"messages": [{"role": "user", "content": "a"}], "add_generation_prompt": true}' \
    '{"messages": "not a list"}' '[{"role": "user", "content": "b"}]' >batch.jsonl
expect_status 0 jsonl "$TRAINRT" chat-template --tokenizer tpl --jsonl batch.jsonl
[ "$(wc -l <jsonl.out)" -eq 3 ] || fail "jsonl: want 3 lines: $(cat jsonl.out)"
same jsonl.out '"<s><user>a</s>\\n<assistant>"\n{"error": "batch.jsonl:2: \\"messages\\" must be a list of messages"}\n"<s><user>b</s>\\n"\n'

mkdir gen
printf '%s' '{% for m in messages %}{% if m.role == "assistant" %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}' \
    >gen/chat_template.jinja
printf '%s\n' '[{"role": "user", "content": "é"}, {"role": "assistant", "content": "ab"}]' >gen.jsonl
expect_status 0 spans "$TRAINRT" chat-template --tokenizer gen --spans --jsonl gen.jsonl
same spans.out '{"text": "éab", "spans": [[2, 4]]}\n'

# Usage errors: 2.
expect_status 2 no_folder "$TRAINRT" chat-template conv.json
expect_in no_folder.err "needs --tokenizer FOLDER"
expect_status 2 both "$TRAINRT" chat-template --tokenizer tpl --jsonl batch.jsonl conv.json
expect_status 2 typo "$TRAINRT" chat-template --tokenizer tpl --add-generation-promt conv.json
expect_in typo.err "did you mean '--add-generation-prompt'"
expect_status 2 bad_var "$TRAINRT" chat-template --tokenizer tpl --var nojson conv.json
expect_status 0 help "$TRAINRT" chat-template --help
expect_in help.out "usage: trainrt chat-template"

# Refusals and failures: 1, naming the file and line.
mkdir refused
printf 'ok\n{%% include "x" %%}\n' >refused/chat_template.jinja
expect_status 1 refused "$TRAINRT" chat-template --tokenizer refused conv.json
expect_in refused.err "refused/chat_template.jinja:2: the '{% include %}' statement is not supported"
[ ! -s refused.out ] || fail "refused: stdout not empty"
mkdir raising
printf 'a\n{{ raise_exception("roles must alternate") }}' >raising/chat_template.jinja
expect_status 1 raising "$TRAINRT" chat-template --tokenizer raising conv.json
expect_in raising.err "raising/chat_template.jinja:2: roles must alternate"
expect_status 1 missing "$TRAINRT" chat-template --tokenizer nowhere conv.json
expect_in missing.err "nowhere: no chat template"
expect_status 1 unnamed "$TRAINRT" chat-template --tokenizer tpl --template nope conv.json
expect_in unnamed.err "no chat template named 'nope' (it has: default, tools)"
echo "chat_template.sh: all ok"
