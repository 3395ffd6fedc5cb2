#!/usr/bin/env python3
"""The loss-mask reference test: `trainrt prepare --chat` (src/data/chat_examples.cpp) against a
reference written here, token for token, on the real chat templates of the npm tokenizer
packages (tests/tokenizer/oracle/setup.sh installs them), >= 200 seeded lines each, for each
loss mask (assistant, completion, all).

The reference shares nothing with trainrt but the documented rule (docs/FORMATS.md, "Loss
masks"): prefixes are rendered with Python's Jinja2 set up as transformers sets it up
(chat_oracle_test.py) and tokenized with the JS oracle tokenizer (@lenml/tokenizers through
node, tests/tokenizer/oracle/encode.mjs, one process per tokenizer), not trainrt's. An assistant
turn i is the tokens from len(tokens(render(messages[:i], add_generation_prompt=True))) to
len(tokens(render(messages[:i+1]) with its trailing whitespace removed)), each of those token
lists a prefix of the tokens of the whole rendering (else the line must be refused: the
tokenizer joins bytes across the edge); where a rendered prefix is not a prefix of the whole
text, the line is one example per assistant turn (the per-turn form). The ids, the mask values
(1 = target, 2 = begins an example) and the example boundaries must be equal; lines the
reference refuses are checked to be refused (a sample of each reason, each alone), the others
are written in one file per template and mask and must all be accepted.
Also: the base Llama 3 template is refused with the documented message for the assistant mask
(and compared under the all mask), and lines of a bad shape are refused naming file:line with
nothing written.
  mask_reference_test.py TRAINRT_CLI WORK_DIR
Exit 77 (CTest: skipped, the reason printed) without jinja2, node or the npm packages.
"""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
sys.path.insert(0, HERE)
import chat_oracle_test as oracle  # noqa: E402 - exits 77 itself without jinja2

MODES = ("assistant", "completion", "all")
TEMPLATES = ("llama3_1", "qwen2_5", "qwen3", "gemma3", "deepseek_v3")
REFUSALS_CHECKED = 2  # per template, mask and reason: each costs a trainrt run


# ---------------------------------------------------------------- lines

def text(rng):
    t = rng.choice(oracle.TEXTS)
    if rng.random() < 0.25:
        t = t + rng.choice(oracle.TEXTS)
    return t


def think(rng):
    return "<think>\n" + rng.choice(oracle.THINKS) + "\n</think>\n\n"


def messages_line(rng, name):
    """A conversation with at least one assistant turn, in the shapes the template accepts."""
    tools = name in ("qwen2_5", "qwen3", "deepseek_v3")
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": text(rng)})
    turns = rng.randint(1, 4)
    tools_used = False
    for t in range(turns):
        msgs.append({"role": "user", "content": text(rng)})
        if t > 0 and t == turns - 1 and rng.random() < 0.2:
            break  # ends on a user turn, after an assistant one
        if tools and rng.random() < 0.3:
            tools_used = True
            n = rng.randint(1, 2)
            deepseek = name == "deepseek_v3"
            content = None if deepseek else rng.choice(["", "Calling a tool."])
            msgs.append({"role": "assistant", "content": content,
                         "tool_calls": [oracle.tool_call(rng, deepseek or rng.random() < 0.5) for _ in range(n)]})
            for _ in range(n):
                msgs.append({"role": "tool", "content": text(rng)})
        content = text(rng)
        if name == "qwen3" and rng.random() < 0.5:
            content = think(rng) + content
        elif name == "qwen3" and rng.random() < 0.2:
            msgs.append({"role": "assistant", "content": content, "reasoning_content": rng.choice(oracle.THINKS)})
            continue
        msgs.append({"role": "assistant", "content": content})
    if name == "gemma3":
        for m in msgs:
            if rng.random() < 0.25:
                m["content"] = [{"type": "text", "text": m["content"]}] + (
                    [{"type": "image"}, {"type": "text", "text": text(rng)}] if m["role"] == "user" and rng.random() < 0.5 else [])
    line = {"messages": msgs}
    if tools and (tools_used or rng.random() < 0.2) and name != "deepseek_v3":
        line["tools"] = oracle.TOOLS
    return line


def prompt_completion_line(rng, name):
    if rng.random() < 0.5:
        return {"prompt": text(rng), "completion": text(rng)}
    prompt = ([{"role": "system", "content": text(rng)}] if rng.random() < 0.4 else []) + \
        [{"role": "user", "content": text(rng)}]
    content = text(rng)
    if name == "qwen3" and rng.random() < 0.5:
        content = think(rng) + content
    return {"prompt": prompt, "completion": [{"role": "assistant", "content": content}]}


def lines_for(name, count):
    rng = random.Random("mask-reference-" + name)
    out = [messages_line(rng, name) for _ in range(count)]
    out += [prompt_completion_line(rng, name) for _ in range(count // 5)]
    if name == "qwen3":  # reasoning in several turns, the per-turn form for certain
        out.append({"messages": [
            {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": think(rng) + "4"},
            {"role": "user", "content": "and 3+3?"}, {"role": "assistant", "content": think(rng) + "6"},
            {"role": "user", "content": "and 中文?"}, {"role": "assistant", "content": think(rng) + "六"}]})
    return out


# ---------------------------------------------------------------- the reference

class Refused(Exception):
    pass


class Reference:
    """The documented rule on Jinja2 renderings: each line -> its examples, each a text and the
    (head, end) strings whose token counts bound its targets."""

    def __init__(self, folder):
        config_path = os.path.join(folder, "tokenizer_config.json")
        config = json.load(open(config_path, encoding="utf-8"))
        jinja_path = os.path.join(folder, "chat_template.jinja")
        source = open(jinja_path, encoding="utf-8").read() if os.path.exists(jinja_path) else config["chat_template"]
        if re.search(r"\{%-?\s*generation\b", source):
            raise SystemExit("mask reference: %s has {%% generation %%} blocks: not what this reference "
                             "compares" % folder)
        self.env, self.tmpl = oracle.compile_template(source)
        self.specials = oracle.special_tokens(config)

    def render(self, messages, tools, agp):
        text, _ = oracle.python_render(self.env, self.tmpl, self.specials,
                                       {"messages": messages, "tools": tools, "add_generation_prompt": agp}, {})
        return text

    @staticmethod
    def trim(s, head):
        t = s.rstrip(" \n\t\r")
        return t if len(t) >= len(head) else head

    def examples(self, line, mode):
        """[(text, [(head, end), ...], per_turn)] or raises Refused(reason)."""
        if not isinstance(line, dict):
            raise Refused("shape")
        tools = line.get("tools")
        if "messages" not in line:
            p, c = line["prompt"], line["completion"]
            if mode == "assistant":
                raise Refused("prompt-completion under the assistant mask")
            if isinstance(p, str):
                whole = p + c + self.specials.get("eos_token", "")
                head = p
            else:
                head = self.render(p, tools, True)
                whole = self.render(p + c, tools, False)
                if head is None or whole is None:
                    raise Refused("template raised")
                if mode == "completion" and self.render(p + c, tools, True) == whole:
                    raise Refused("base template")
                if not whole.startswith(head):
                    raise Refused("prompt not a prefix")
            span = ("", whole) if mode == "all" else (head, self.trim(whole, head))
            return [(whole, [span], False)]
        msgs = line["messages"]
        whole = self.render(msgs, tools, False)
        if whole is None:
            raise Refused("template raised")
        if mode == "all":
            return [(whole, [("", whole)], False)]
        turns = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
        if not turns:
            raise Refused("no assistant turn")
        if self.render(msgs, tools, True) == whole:
            raise Refused("base template")
        spans = []
        for i in turns:
            head = "" if i == 0 else self.render(msgs[:i], tools, True)
            through = self.render(msgs[:i + 1], tools, False)
            if head is None or through is None or not whole.startswith(through) or not through.startswith(head):
                break
            spans.append((head, self.trim(through, head)))
        else:
            return [(whole, spans[-1:] if mode == "completion" else spans, False)]
        out = []
        for i in turns[-1:] if mode == "completion" else turns:
            head = "" if i == 0 else self.render(msgs[:i], tools, True)
            through = self.render(msgs[:i + 1], tools, False)
            if head is None or through is None:
                raise Refused("template raised")
            if not through.startswith(head):
                raise Refused("head not a prefix in the per-turn form")
            out.append((through, [(head, self.trim(through, head))], True))
        return out


def encode_all(strings, folder, work, name):
    """{string: ids} through the JS oracle tokenizer, one node process."""
    strings = sorted(set(strings))
    corpus = os.path.join(work, name + ".strings.jsonl")
    out = os.path.join(work, name + ".js-ids.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for s in strings:
            f.write(json.dumps(s) + "\n")
    p = subprocess.run(["node", os.path.join(HERE, "..", "tokenizer", "oracle", "encode.mjs"), folder, corpus, out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if p.returncode != 0:
        raise SystemExit("mask reference: encode.mjs failed (%d): %s" % (p.returncode, p.stderr.decode(errors="replace")))
    rows = open(out, encoding="utf-8").read().split("\n")
    return {s: [int(x) for x in row.split()] for s, row in zip(strings, rows)}


def token_examples(plan, ids_of):
    """[(ids, mask)] for a line's examples, or raises Refused when a span edge is not a token
    edge: the tokens of each head and end must begin the tokens of the example's text."""
    out = []
    for whole, spans, _ in plan:
        ids = ids_of[whole]
        mask = [0] * len(ids)
        for head, end in spans:
            a, b = ids_of[head] if head else [], ids_of[end] if end else []
            if ids[:len(a)] != a or ids[:len(b)] != b:
                raise Refused("tokens merge across a span edge")
            for k in range(len(a), len(b)):
                mask[k] = 1
        if ids:
            mask[0] = 2
            out.append((ids, mask))
    return out


# ---------------------------------------------------------------- trainrt

def read_shard(path):
    data = open(path, "rb").read()
    magic, _, count = struct.unpack("<3i", data[:12])
    width = {20240520: "H", 20240801: "I"}[magic]
    return list(struct.unpack("<%d%s" % (count, width), data[1024:]))


def prepare(cli, jsonl, folder, mode, out):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [cli, "prepare", "--chat", jsonl, "--tokenizer", folder, "--out", out, "--val-fraction", "0",
           "--loss-mask", mode]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


def split_examples(ids, mask):
    starts = [k for k, m in enumerate(mask) if m & 2] + [len(ids)]
    return [(ids[a:b], mask[a:b]) for a, b in zip(starts, starts[1:])]


def compare(cli, name, folder, lines, mode, ref, ids_of, work):
    accepted, refused, want, per_turn = [], {}, [], 0
    owner = []  # the line of each reference example
    for k, line in enumerate(lines):
        try:
            plan = ref.examples(line, mode)
            exs = token_examples(plan, ids_of)
        except Refused as e:
            refused.setdefault(str(e), []).append(line)
            continue
        accepted.append(line)
        per_turn += any(p for _, _, p in plan)
        want += exs
        owner += [len(accepted)] * len(exs)
    label = "%s/%s" % (name, mode)
    jsonl = os.path.join(work, "%s.%s.jsonl" % (name, mode))
    write_lines(jsonl, accepted)
    out = os.path.join(work, "%s.%s.out" % (name, mode))
    rc, stdout, stderr = prepare(cli, jsonl, folder, mode, out)
    bad = 0
    if rc != 0:
        print("FAIL %s: trainrt refused what the reference accepts: %s" % (label, stderr.strip()[:600]))
        return 1
    got = split_examples(read_shard(os.path.join(out, "train.bin")), read_shard(os.path.join(out, "mask_train.bin")))
    if len(got) != len(want):
        print("FAIL %s: %d examples, the reference %d" % (label, len(got), len(want)))
        bad += 1
    for e, (g, w) in enumerate(zip(got, want)):
        if g == w:
            continue
        bad += 1
        if bad <= 3:
            line = accepted[owner[e] - 1]
            print("FAIL %s: example %d (line %d: %s)" % (label, e, owner[e], json.dumps(line, ensure_ascii=False)[:400]))
            k = next((j for j in range(min(len(g[0]), len(w[0])))
                      if g[0][j] != w[0][j] or g[1][j] != w[1][j]), min(len(g[0]), len(w[0])))
            print("  first difference at token %d of %d (reference %d)" % (k, len(g[0]), len(w[0])))
            print("  trainrt   ids %s\n            mask %s" % (g[0][max(0, k - 8):k + 8], g[1][max(0, k - 8):k + 8]))
            print("  reference ids %s\n            mask %s" % (w[0][max(0, k - 8):k + 8], w[1][max(0, k - 8):k + 8]))
    if "(%d in the per-turn form)" % per_turn not in stdout:
        print("FAIL %s: the reference has %d lines in the per-turn form; trainrt says: %s" % (label, per_turn, stdout.strip()))
        bad += 1
    # Refusals: a sample of each reason, each line alone, must be refused naming file:1.
    checked = 0
    for reason, rlines in sorted(refused.items()):
        for k, line in enumerate(rlines[:REFUSALS_CHECKED]):
            one = os.path.join(work, "%s.%s.refused.jsonl" % (name, mode))
            write_lines(one, [line])
            rc, _, err = prepare(cli, one, folder, mode, out + ".refused")
            checked += 1
            if rc == 0 or one + ":1:" not in err:
                bad += 1
                print("FAIL %s: the reference refuses (%s) but trainrt %s: %s" % (
                    label, reason, "accepted it" if rc == 0 else "did not name %s:1: %s" % (one, err.strip()[:300]),
                    json.dumps(line, ensure_ascii=False)[:300]))
    targets = sum(m.count(1) for _, m in want)
    print("%-22s %d lines: %d accepted -> %d examples (%d lines per turn), %d target tokens; refused %s "
          "(%d checked); %d mismatches" % (label, len(lines), len(accepted), len(want), per_turn, targets,
                                           {r: len(v) for r, v in refused.items()} or "none", checked, bad))
    return 1 if bad else 0


def expect_refusal(cli, label, path, folder, mode, needles):
    out = path + ".out"
    rc, _, err = prepare(cli, path, folder, mode, out)
    written = os.path.exists(out) and any(f.endswith(".bin") for f in os.listdir(out))
    missing = [n for n in needles if n not in err]
    if rc == 0 or missing or written:
        print("FAIL %s: exit %d, %s, stderr %r" % (label, rc, "shards written" if written else "nothing written",
                                                   err.strip()[:400]))
        if missing:
            print("  missing from the message: %s" % missing)
        return 1
    print("%-22s refused as documented: %s" % (label, err.strip()[:160]))
    return 0


def main():
    cli, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    # ORACLE_DIR (optional): where setup.sh installs the packages, shared with chat.oracle.
    oracle_dir = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else os.path.join(work, "oracle")
    os.makedirs(work, exist_ok=True)
    setup = os.path.join(HERE, "..", "tokenizer", "oracle", "setup.sh")
    rc = subprocess.run(["bash", setup, oracle_dir], stdout=subprocess.DEVNULL).returncode
    if rc == SKIP:
        print("mask reference: SKIP: node/npm or the npm tokenizer packages are missing")
        return SKIP
    if rc != 0:
        print("mask reference: setup.sh failed (%d)" % rc)
        return 1
    tokenizers = os.path.join(oracle_dir, "tokenizers")
    status = 0
    for name in TEMPLATES + ("llama3",):
        folder = os.path.join(tokenizers, name)
        ref = Reference(folder)
        lines = lines_for(name, 200)
        modes = MODES if name != "llama3" else ("all",)  # base: only the all mask applies
        strings = []
        for mode in modes:
            for line in lines:
                try:
                    for whole, spans, _ in ref.examples(line, mode):
                        strings.append(whole)
                        strings += [s for span in spans for s in span if s]
                except Refused:
                    pass
        ids_of = encode_all(strings, folder, work, name)
        for mode in modes:
            status |= compare(cli, name, folder, lines, mode, ref, ids_of, work)

    # The base Llama 3 template: refused for the masks that need the end of a turn.
    base_lines = [("assistant", {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}),
                  ("completion", {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}),
                  ("completion", {"prompt": [{"role": "user", "content": "Hi"}],
                                  "completion": [{"role": "assistant", "content": "Hello"}]})]
    for k, (mode, line) in enumerate(base_lines):
        path = os.path.join(work, "base%d.jsonl" % k)
        write_lines(path, [line])
        status |= expect_refusal(cli, "llama3/%s %d" % (mode, k), path, os.path.join(tokenizers, "llama3"), mode,
                                 [path + ":1:", "renders the same text with and without add_generation_prompt",
                                  "the all loss mask"])
    # Lines of a bad shape, after good ones: refused naming the file and line, nothing written.
    good = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}
    bad_lines = [([1, 2], "expected a JSON object"), ({"messages": "hi"}, "non-empty list"),
                 ({"prompt": "a", "completion": [good["messages"][1]]}, "both be strings or both be lists"),
                 ({"messages": [{"content": "no role"}]}, "needs a string \"role\""),
                 ({"prompt": "a"}, "\"prompt\" and \"completion\"")]
    qwen = os.path.join(tokenizers, "qwen2_5")
    for k, (line, needle) in enumerate(bad_lines):
        path = os.path.join(work, "bad%d.jsonl" % k)
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(good) + "\n\n" + json.dumps(line) + "\n" + json.dumps(good) + "\n")
        status |= expect_refusal(cli, "bad shape %d" % k, path, qwen, "completion", [path + ":3:", needle])
    print("mask reference: %s" % ("all equal" if status == 0 else "MISMATCHES"))
    return status


if __name__ == "__main__":
    sys.exit(main())
