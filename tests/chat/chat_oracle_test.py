#!/usr/bin/env python3
"""The chat template oracle test: `trainrt chat-template --jsonl` (src/chat) against Python's
Jinja2 set up as Hugging Face transformers sets it up in apply_chat_template, on the real chat
templates of the npm tokenizer packages (tests/tokenizer/oracle/setup.sh installs them) and on
handwritten ones (tests/chat/handwritten/), >= 200 seeded conversations each, and on random
whitespace structures and expressions (fixed seeds). The texts must be
byte for byte equal, both must raise on the same conversations, and the {% generation %} spans
must be transformers' (return_assistant_tokens_mask: the characters written inside the block).
  chat_oracle_test.py TRAINRT_CLI WORK_DIR
Exit 77 (CTest: skipped, the reason printed) without jinja2 or without the npm packages.
"""
import json
import os
import random
import subprocess
import sys
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("chat oracle: SKIP: python3-jinja2 is not installed (scripts/install-deps.sh --test)")
    sys.exit(SKIP)


# ---------------------------------------------------------------- transformers' environment
# As transformers.utils.chat_template_utils._compile_jinja_template builds it.

class AssistantTracker(Extension):
    tags = {"generation"}

    def __init__(self, environment):
        super().__init__(environment)
        self._rendered_blocks = None
        self._generation_indices = None

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        rv = caller()
        if self._rendered_blocks is not None:
            start = len("".join(self._rendered_blocks))
            self._generation_indices.append((start, start + len(rv)))
        return rv


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env, env.from_string(source)


def special_tokens(config):
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        v = config.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        if isinstance(v, str):
            out[key] = v
    extra = config.get("additional_special_tokens")
    if isinstance(extra, list):
        out["additional_special_tokens"] = [e["content"] if isinstance(e, dict) else e for e in extra
                                            if isinstance(e, (str, dict))]
    return out


def python_render(env, tmpl, specials, conv, extra_vars):
    """(text, spans in UTF-8 bytes) or None when the template raises."""
    tracker = next(e for e in env.extensions.values() if isinstance(e, AssistantTracker))
    blocks, indices = [], []
    tracker._rendered_blocks, tracker._generation_indices = blocks, indices
    try:
        kwargs = dict(specials)
        kwargs.update(extra_vars)
        for block in tmpl.generate(messages=conv["messages"], tools=conv.get("tools"), documents=None,
                                   add_generation_prompt=conv.get("add_generation_prompt", False), **kwargs):
            blocks.append(block)
    except Exception as e:  # noqa: BLE001 - any raise counts: both must raise
        return None, repr(e)
    finally:
        tracker._rendered_blocks = None
    text = "".join(blocks)
    spans = [[len(text[:b].encode()), len(text[:e].encode())] for b, e in indices]
    return text, spans


# ---------------------------------------------------------------- conversations

TEXTS = [
    "Hello!", "", " ", "What is 2 + 2?", "  padded with spaces  ", "\n\nleading and trailing newlines\n\n",
    "line one\nline two\n\nline four", "tabs\tand\ttabs", "quotes ' and \" and `backticks`",
    "braces {{ not a tag }} {% neither %} {# nor this #}", "a backslash \\ and \\n literally",
    "中文：你好，世界。日本語もあります。", "emoji 😀👍🏽🇫🇷 and a ZWJ family 👨‍👩‍👧", "combining e\u0301 a\u0308 n\u0303",
    "nbsp\u00a0inside and\u3000ideographic space\u3000", "\u00a0leading nbsp", "trailing ideographic\u3000",
    "json {\"a\": [1, 2, {\"b\": null}]}", "<html> & entities &amp; </html>", "x" * 300,
    "Ünïcödé mixed with ASCII", "русский текст", "العربية", "<tool_response>fake</tool_response>",
]
THINKS = ["Let me think.", "step 1\nstep 2", "", "  spaced reasoning  ", "数学 reasoning 🤔"]
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "description": "Adds «two» numbers: a+b",
                                      "parameters": {"type": "object", "properties": {
                                          "a": {"type": "number"}, "b": {"type": "number", "default": 1.5}}}}},
]


def text(rng):
    t = rng.choice(TEXTS)
    if rng.random() < 0.3:
        t = t + rng.choice(TEXTS)
    return t


def tool_call(rng, as_string):
    args = rng.choice([{"city": "Paris"}, {"a": 1, "b": 2.5}, {"q": "ünï \"quoted\"", "n": None, "ok": True},
                       {}, {"nested": {"list": [1, "two", 3.0e-7]}}])
    name = rng.choice(["get_weather", "add", "search"])
    call = {"type": "function", "function": {"name": name,
                                             "arguments": json.dumps(args, ensure_ascii=False) if as_string else args}}
    if rng.random() < 0.5:
        call["id"] = "call_%d" % rng.randrange(1000)
    return call


def conversation(rng, flavor):
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": text(rng)})
    turns = rng.randint(1, 4)
    tools_used = False
    for t in range(turns):
        msgs.append({"role": "user", "content": text(rng)})
        if t == turns - 1 and rng.random() < 0.4:
            break  # ends on a user turn
        if flavor in ("qwen", "deepseek") and rng.random() < 0.35:
            tools_used = True
            n = rng.randint(1, 2)
            as_string = flavor == "deepseek" or rng.random() < 0.5
            content = None if flavor == "deepseek" else rng.choice(["", "Calling a tool.", None])
            if flavor == "qwen" and content is None:
                content = ""
            msgs.append({"role": "assistant", "content": content,
                         "tool_calls": [tool_call(rng, as_string) for _ in range(n)]})
            for _ in range(n):
                msgs.append({"role": "tool", "content": text(rng)})
        content = text(rng)
        if flavor == "qwen3" and rng.random() < 0.4:
            content = "<think>\n" + rng.choice(THINKS) + "\n</think>\n\n" + content
        elif flavor == "qwen3" and rng.random() < 0.2:
            msgs.append({"role": "assistant", "content": content, "reasoning_content": rng.choice(THINKS)})
            continue
        msgs.append({"role": "assistant", "content": content})
    conv = {"messages": msgs, "add_generation_prompt": rng.random() < 0.5}
    if flavor in ("qwen", "qwen3") and (tools_used or rng.random() < 0.2):
        conv["tools"] = TOOLS
    return conv


def gemma_conversation(rng):
    conv = conversation(rng, "plain")
    for m in conv["messages"]:
        if rng.random() < 0.3 and m["role"] != "system":
            m["content"] = [{"type": "text", "text": m["content"]}] + (
                [{"type": "image"}, {"type": "text", "text": text(rng)}] if rng.random() < 0.5 else [])
    if rng.random() < 0.15:  # non-alternating roles: both must raise
        conv["messages"].append({"role": rng.choice(["user", "assistant"]), "content": "again"})
        conv["messages"].append({"role": conv["messages"][-1]["role"], "content": "and again"})
    return conv


FLAVORS = {"llama3": "plain", "llama3_1": "plain", "qwen2_5": "qwen", "qwen3": "qwen3",
           "gemma3": "gemma", "deepseek_v3": "deepseek"}


def conversations(name, flavor, count):
    rng = random.Random("chat-oracle-" + name)
    out = []
    for _ in range(count):
        c = gemma_conversation(rng) if flavor == "gemma" else conversation(rng, flavor)
        out.append(c)
    if flavor == "qwen3":
        out[0]["messages"][-1:] = [{"role": "user", "content": "think less"}]
    return out


# ---------------------------------------------------------------- random snippets
# Differential fuzzing with fixed seeds: random whitespace/tag structures (trim_blocks,
# lstrip_blocks, -/+ markers, raw, comments, set/filter blocks, macros) and random expressions
# (operators, filters, tests, methods, slices over varied values), one template each.

WS_TEXT = [" ", "\n", "\t", "a", "  \n", "\n  ", "b\n", " \t \n\n", "\r\n", "x y", "\u3000", "\u00a0\n", "}", "{", "%", "#"]
WS_EXPR = ["'v'", "x", "1", "loop.index if loop is defined else 0", "'\\n'", "' s '", "none", "[1,2]"]


def random_whitespace_template(rng):
    def sp():
        return rng.choice([" ", "  ", "\n", ""])

    def tag(body):
        return "{%" + rng.choice(["", "", "-", "+"]) + sp() + body + sp() + rng.choice(["", "", "-", "+"]) + "%}"

    def var(e):
        return "{{" + rng.choice(["", "-"]) + sp() + e + sp() + rng.choice(["", "-"]) + "}}"

    def seq(d):
        out = ""
        for _ in range(rng.randint(0, 5)):
            r = rng.random()
            if r < 0.35:
                out += rng.choice(WS_TEXT)
            elif r < 0.5:
                out += var(rng.choice(WS_EXPR))
            elif r < 0.58:
                out += "{#" + rng.choice(["", "-", "+"]) + " c " + rng.choice(["", "-", "+"]) + "#}"
            elif r < 0.7 and d < 3:
                out += tag("if " + rng.choice(["true", "false", "x"])) + seq(d + 1) + (
                    tag("else") + seq(d + 1) if rng.random() < 0.4 else "") + tag("endif")
            elif r < 0.8 and d < 3:
                out += tag("for x in [1, 2]") + seq(d + 1) + tag("endfor")
            elif r < 0.86:
                out += tag("set y = 1")
            elif r < 0.9 and d < 3:
                out += tag("set z") + seq(d + 1) + tag("endset") + var("z")
            elif r < 0.94:
                out += tag("raw") + rng.choice(WS_TEXT) + "{{ raw }}" + rng.choice(WS_TEXT) + tag("endraw")
            elif r < 0.97 and d < 3:
                out += tag("filter upper") + seq(d + 1) + tag("endfilter")
            else:
                out += tag("macro m()") + seq(d + 1) + tag("endmacro") + var("m()")
        return out

    return seq(0) + rng.choice(["", "\n", "\n\n", " \n"])


EX_LIT = ["0", "1", "-3", "7", "2.5", "1e-7", "0.1", "-0.0", "'a'", "'Ab c'", "''", "' x '", "'héllo wörld'",
          "'日本'", "'a,b'", "none", "true", "false", "[]", "[1, 2, 3]", "['b', 'a', 'B']", "{'k': 1, 'j': [2]}",
          "(1, 'x')", "'\\n'", "3.0", "10", "'10'", "'3.7'", "[none, 0, '', 'z']", "[[1, 2], [3]]"]
EX_VARS = ["m", "m.role", "m.content", "ms", "ms[0]", "ms[-1].content", "ms|length", "d", "d.a", "d['b']", "n", "s",
           "u", "l", "f"]
EX_FILTERS = ["trim", "length", "list", "upper", "lower", "capitalize", "title", "first", "last", "string", "int",
              "float", "abs", "round", "reverse|list", "unique|list", "sort|list", "tojson", "items|list", "dictsort",
              "join", "join(', ')", "default('D')", "default('D', true)", "replace('a', 'X')", "indent(2)",
              "indent(2, true)", "max", "min", "sum", "select('odd')|list", "reject('none')|list",
              "map('upper')|list", "map('length')|list", "selectattr('role')|list", "map(attribute='role')|list",
              "wordcount", "e", "safe", "count", "int(5)", "float(1.5)", "round(1)", "round(1, 'floor')",
              "tojson(indent=1)"]
EX_TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable", "sequence",
            "boolean", "true", "false", "even", "odd", "divisibleby 2", "eq 1", "ne 'a'", "lt 3", "ge 1",
            "in [1, 'a']", "sameas none", "lower", "upper"]
EX_METHODS = [".strip()", ".upper()", ".lower()", ".split()", ".split(',')", ".startswith('a')",
              ".endswith(('c', 'x'))", ".replace('a', 'b')", ".title()", ".capitalize()", ".find('b')", ".count('a')",
              ".lstrip('a')", ".rstrip()", ".items()|list", ".keys()|list", ".get('a')", ".get('zz', 0)",
              ".values()|list"]
EX_OPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "and", "or"]
EX_VALUES = {"m": {"role": "user", "content": " Hi there\n"},
             "ms": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b c"}],
             "d": {"a": 1, "b": "two"}, "n": 5, "s": "Straße café", "u": None, "l": [3, 1, 2], "f": 2.5}


def random_expression(rng, d=0):
    r = rng.random()
    if d > 2 or r < 0.25:
        return rng.choice(EX_LIT + EX_VARS)
    if r < 0.45:
        return "(%s %s %s)" % (random_expression(rng, d + 1), rng.choice(EX_OPS), random_expression(rng, d + 1))
    if r < 0.6:
        return "(%s|%s)" % (random_expression(rng, d + 1), rng.choice(EX_FILTERS))
    if r < 0.7:
        return "(%s is %s%s)" % (random_expression(rng, d + 1), rng.choice(["", "not "]), rng.choice(EX_TESTS))
    if r < 0.78:
        return "(%s)%s" % (random_expression(rng, d + 1), rng.choice(EX_METHODS))
    if r < 0.85:
        return "(%s)[%s]" % (random_expression(rng, d + 1),
                             rng.choice(["0", "-1", "1:", "::-1", ":2", "'a'", "1:-1:2"]))
    if r < 0.92:
        return "(%s if %s else %s)" % (random_expression(rng, d + 1), random_expression(rng, d + 1),
                                       random_expression(rng, d + 1))
    if r < 0.96:
        return "(not %s)" % random_expression(rng, d + 1)
    return "(-%s)" % random_expression(rng, d + 1)


def compare_snippets(cli, work, name, sources, extra_vars):
    """Each source rendered by both with an empty conversation; equal text, or both raise."""
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        f.write("{}")
    conv_path = os.path.join(folder, "conv.jsonl")
    with open(conv_path, "w") as f:
        f.write(json.dumps({"messages": []}) + "\n")
    cmd = [cli, "chat-template", "--tokenizer", folder, "--jsonl", conv_path]
    for k, v in extra_vars.items():
        cmd += ["--var", "%s=%s" % (k, json.dumps(v))]
    bad = raised = 0
    for src in sources:
        with open(os.path.join(folder, "chat_template.jinja"), "w", encoding="utf-8", newline="") as f:
            f.write(src)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        got = json.loads(p.stdout.decode("utf-8")) if p.returncode == 0 else {"error": p.stderr.decode()}
        got = None if isinstance(got, dict) else got
        try:
            env, tmpl = compile_template(src)
            want, _ = python_render(env, tmpl, {}, {"messages": []}, extra_vars)
        except Exception:  # noqa: BLE001 - a template Python refuses to compile
            want = None
        if want is None and got is None:
            raised += 1
        elif want != got:
            bad += 1
            if bad <= 3:
                print("FAIL %s: %r\n  python:  %r\n  trainrt: %r" % (name, src[:300], want, got))
    print("%-12s %d templates, %d raising in both, %d mismatches" % (name, len(sources), raised, bad))
    return 1 if bad else 0


# ---------------------------------------------------------------- comparison

def compare(cli, folder, name, convs, extra_vars, want_spans, work):
    config_path = os.path.join(folder, "tokenizer_config.json")
    config = json.load(open(config_path, encoding="utf-8")) if os.path.exists(config_path) else {}
    jinja_path = os.path.join(folder, "chat_template.jinja")
    source = open(jinja_path, encoding="utf-8").read() if os.path.exists(jinja_path) else config["chat_template"]
    env, tmpl = compile_template(source)
    specials = special_tokens(config)
    jsonl = os.path.join(work, name + ".jsonl")
    with open(jsonl, "w", encoding="utf-8") as f:
        for c in convs:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    cmd = [cli, "chat-template", "--tokenizer", folder, "--jsonl", jsonl]
    for k, v in extra_vars.items():
        cmd += ["--var", "%s=%s" % (k, json.dumps(v))]
    if want_spans:
        cmd.append("--spans")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode != 0:
        print("FAIL %s: %s exited %d: %s" % (name, " ".join(cmd), p.returncode, p.stderr.decode(errors="replace")))
        return 1
    lines = p.stdout.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(convs):
        print("FAIL %s: %d output lines for %d conversations" % (name, len(lines), len(convs)))
        return 1
    bad = raised = 0
    for k, (c, line) in enumerate(zip(convs, lines)):
        want, spans = python_render(env, tmpl, specials, c, extra_vars)
        got = json.loads(line)
        got_spans = None
        if isinstance(got, dict) and "error" in got:
            got_text = None
        elif want_spans:
            got_text, got_spans = got["text"], got["spans"]
        else:
            got_text = got
        if want is None:
            raised += 1
            if got_text is not None:
                bad += 1
                if bad <= 3:
                    print("FAIL %s #%d: Python raised %s, trainrt rendered %r" % (name, k, spans, got_text[:200]))
            continue
        if got_text != want or (want_spans and got_spans != spans):
            bad += 1
            if bad <= 3:
                print("FAIL %s #%d: conversation %s" % (name, k, json.dumps(c, ensure_ascii=False)[:400]))
                if got_text is None:
                    print("  trainrt raised: %s" % got["error"])
                else:
                    i = next((j for j in range(min(len(want), len(got_text))) if want[j] != got_text[j]),
                             min(len(want), len(got_text)))
                    print("  first difference at char %d:\n  python:  %r\n  trainrt: %r" %
                          (i, want[max(0, i - 60):i + 60], got_text[max(0, i - 60):i + 60]))
                    if want_spans and got_spans != spans:
                        print("  spans python %s trainrt %s" % (spans, got_spans))
    print("%-12s %d conversations, %d raising in both, %d mismatches" % (name, len(convs), raised, bad))
    return 1 if bad else 0


def scaled(n):
    """n cases, or TRAINRT_ORACLE_FRACTION of them (scripts/sanitize.sh: the instrumented suite
    compares a tenth, the plain suite all)."""
    fraction = float(os.environ.get("TRAINRT_ORACLE_FRACTION", "1"))
    return max(1, round(n * fraction)) if 0 < fraction < 1 else n


def main():
    cli, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    status = 0
    # Handwritten templates: the constructs the real ones do not use (macros, filter blocks,
    # loop.cycle, dictsort, selectattr, indent, namespace, break/continue, generation).
    hand = os.path.join(HERE, "handwritten")
    rng = random.Random("chat-oracle-handwritten")
    for sub in sorted(os.listdir(hand)):
        folder = os.path.join(hand, sub)
        convs = []
        for k in range(scaled(200)):
            c = conversation(rng, "qwen3" if k % 2 else "qwen")
            convs.append(c)
        status |= compare(cli, folder, "hand-" + sub, convs, {"greeting": "hi", "n": 3},
                          want_spans=True, work=work)
    # Random whitespace structures and expressions (fixed seeds).
    import warnings
    warnings.simplefilter("ignore", SyntaxWarning)  # Jinja's compiled code for `(1)[::-1]`
    rng = random.Random("chat-oracle-whitespace")
    status |= compare_snippets(cli, work, "whitespace", [random_whitespace_template(rng) for _ in range(scaled(150))], {})
    rng = random.Random("chat-oracle-expressions")
    status |= compare_snippets(cli, work, "expressions",
                               ["{{ %s }}" % random_expression(rng) for _ in range(scaled(250))], EX_VALUES)
    # The real templates.
    setup = os.path.join(HERE, "..", "tokenizer", "oracle", "setup.sh")
    rc = subprocess.run(["bash", setup, os.path.join(work, "oracle")]).returncode
    if rc == SKIP:
        print("chat oracle: SKIP: the npm tokenizer packages could not be installed (handwritten "
              "templates compared: %s)" % ("ok" if status == 0 else "FAILED"))
        return status or SKIP
    if rc != 0:
        print("chat oracle: setup.sh failed (%d)" % rc)
        return 1
    for name, flavor in FLAVORS.items():
        folder = os.path.join(work, "oracle", "tokenizers", name)
        convs = conversations(name, flavor, scaled(240))
        extra = {"enable_thinking": False} if name == "qwen3" else {}
        status |= compare(cli, folder, name, convs, {}, False, work)
        if extra:
            status |= compare(cli, folder, name + "+vars", convs[:scaled(60)], extra, False, work)
    print("chat oracle: %s" % ("all equal" if status == 0 else "MISMATCHES"))
    return status


if __name__ == "__main__":
    sys.exit(main())
