#!/usr/bin/env python3
"""Runs the README's commands exactly as written.

Every command of README.md — each line of its indented and ```sh/```bash blocks, and each
inline `code span` of prose that is a command line (a known program and two more words) — is
either listed in RUN and run, verbatim, by bash in a scratch folder (exit status 0 required),
or listed in SKIP with the reason it is not run here. A command in neither list fails the test
(a new README command must be classified: nothing unknown is run), and so does an entry of
either list that the README no longer holds. Blocks that hold no commands (TOML, the CLI's
synopsis, the source layout) are named in NOT_COMMANDS by their first line; other fenced
languages (```c) are code, not commands.

The scratch folder stands in for a checkout in which the README's steps were taken:
  build/       a symlink to the build ctest runs (README's `build/`); a bare `trainrt` is that
               build's CLI too (build/ first on PATH), standing in for the installed package
  examples/    copies of examples/configs and examples/data/tinyshakespeare.txt
  my.txt, my.toml   "your own data" that section 3 presumes (a slice of tiny Shakespeare, and
               a small model on the shards and tokenizer its commands write)
and the demo's state, which `bash scripts/demo.sh` (skipped: it installs packages, builds and
trains for 2,000 steps) would leave: the shards it prepares, and a checkpoint in
out/shakespeare, here after 2 steps of the demo config. Block commands run first, in README
order; then the inline ones (some of them use what section 3's block writes).

  usage: readme_commands.py SOURCE_DIR BUILD_DIR SCRATCH_DIR
"""
import fcntl
import os
import re
import shutil
import subprocess
import sys
import time

# Commands run as written (the exact text as the README writes it).
RUN = {
    "build/trainrt --version",
    'build/trainrt sample out/shakespeare --prompt "ROMEO:" --tokens 300 --temperature 0.8',
    "build/trainrt export out/shakespeare /tmp/shakespeare-hf",
    "build/trainrt eval examples/configs/shakespeare.toml",
    "build/trainrt prepare --text my.txt --out data/my --val-fraction 0.05       # bytes",
    "build/trainrt tokenizer train --vocab-size 8192 --text my.txt --out tok.json  # your own BPE",
    "build/trainrt prepare --text my.txt --out data/my --tokenizer tok.json       # or a model's",
    "build/trainrt train my.toml                 # resumes from train.out_dir/latest if present",
    "build/trainrt train my.toml --steps 100     # 100 more steps; --fresh starts over",
    "trainrt train my.toml",
    "trainrt info my.toml",
    "trainrt plan my.toml --max-batch",
    "build/trainrt info examples/configs/smollm-135m.toml",
    "trainrt report out/shakespeare",
}

# Commands not run, each with the reason. Keys are the exact text as the README writes it.
SKIP = {
    # 1. Install
    "bash scripts/install-deps.sh             # the Debian packages it needs (--mpi: + Open MPI)":
        "installs Debian packages (apt, as root)",
    "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j \"$(nproc)\"":
        "builds the project: this test runs against the build ctest runs in",
    "(cd build && cpack -G DEB)":
        "packaging: tests/packaging/install_test.sh builds, lints and installs the packages",
    "cd build/packages && sudo apt install ./libtrainrt0_*.deb ./libtrainrt-dev_*.deb "
    "./trainrt_*.deb ./libtrainrt-mpi0_*.deb":
        "installs packages system-wide (root): tests/packaging/install_test.sh does",
    "cmake --install build": "installs under /usr/local",
    "cpack -G RPM": "packaging: tests/packaging/install_test.sh",
    "pkg-config --cflags --libs trainrt": "needs the installed libtrainrt-dev package",
    # 2. First run
    "bash scripts/demo.sh":
        "installs packages, builds, then trains the demo for 2,000 steps (long): the scratch "
        "folder holds what it prepares and a 2-step checkpoint of the same config instead",
    "bash scripts/install-deps.sh --test && bash scripts/test.sh":
        "installs packages and runs the whole suite, this test included",
    "ctest --test-dir build -R reference --output-on-failure":
        "the reference tests are ctest tests of their own (they need PyTorch)",
    # 4. Fine-tune on a small machine (QLoRA, GGUF)
    "trainrt plan qlora.toml                    # memory by component, and a real session's":
        "placeholder model folder: SessionQlora.* and cli_gguf_export run QLoRA from a folder",
    "trainrt prepare --chat chats.jsonl --tokenizer /models/Llama-3.2-1B-Instruct --out "
    "data/chat --val-fraction 0.05":
        "placeholder model folder and data: chat_e2e prepares chat data with a Llama 3.1 "
        "tokenizer",
    "trainrt train qlora.toml":
        "placeholder model folder: cli_gguf_export trains QLoRA (nf4) on a Llama folder",
    "trainrt export out/qlora --gguf tuned.gguf --gguf-type q8_0":
        "needs the run above: cli_gguf_export exports its QLoRA run to GGUF and checks the file",
    "llama-cli -m tuned.gguf -cnv               # llama.cpp; Ollama: \"FROM ./tuned.gguf\" in a "
    "Modelfile":
        "llama.cpp is not installed here: bench/gguf_llamacpp/run.sh loads exports with it",
    "trainrt export out/qlora --gguf-lora adapter.gguf":
        "needs the QLoRA run above: cli_gguf_export writes a QLoRA run's adapter file and reads "
        "it back",
    # 4. Fine-tune
    "build/trainrt train examples/configs/llama-shakespeare.toml":
        "long: trains the Llama demo for its train.steps",
    "trainrt prepare --chat chats.jsonl --tokenizer /models/Qwen3-0.6B --out data/chat "
    "--val-fraction 0.05":
        "placeholder model folder and data: chat_e2e prepares chat data with a Llama 3.1 and "
        "a Qwen3 tokenizer folder",
    "trainrt train chat.toml            # model.init_from = the folder, data.train = "
    "\"data/chat/train.bin\"":
        "placeholder config: chat_e2e trains on prepared chat data",
    "trainrt export out/chat /tmp/chat-hf --dtype bf16":
        "placeholder run: chat_e2e exports a chat fine-tune and checks the template travels",
    "trainrt export out/chat --gguf /tmp/chat.gguf --gguf-type q8_0   # for llama.cpp / Ollama":
        "placeholder run: cli_gguf_export exports Llama 3.1- and Qwen3-tokenized runs as GGUF",
    "trainrt chat out/chat              # each stdin line a user turn; replies stop at the "
    "end-of-turn token":
        "placeholder run: chat_e2e runs `trainrt chat` and `sample --chat`",
    # 6. Embed it
    "pip install bindings/python":
        "installs into the Python environment: binding_python installs it into a venv",
    "build/example_train_cpp CONFIG [STEPS]":
        "placeholder CONFIG: examples_demo_config runs it on examples/configs/shakespeare.toml",
    "cd examples/rust && TRAINRT_LIB_DIR=$PWD/../../build cargo run --offline -- CONFIG":
        "placeholder CONFIG: bindings/rust/test.sh (binding_rust) runs `cargo run --offline "
        "-- CONFIG` in examples/rust",
    # 7. GPU, 8. Many GPUs
    "trainrt bench CONFIG": "placeholder CONFIG: cli_bench runs `trainrt bench`",
    "trainrt bench CONFIG --profile": "placeholder CONFIG: cli_bench runs `trainrt bench --profile`",
    "scripts/gpu-check.sh --plan check OUTDIR":
        "needs a GPU machine: gpu_check_dry_run rehearses it",
    "mpirun -np 2 build/trainrt train examples/configs/shakespeare.toml --set train.batch_size=8":
        "long: trains the demo config on to train.steps = 2,000 on 2 ranks; dist_mpirun runs "
        "mpirun, this resume at 2 ranks x B/2 included (no 'config differs' warning)",
    "trainrt eval --text wiki.txt --tokenizer gpt2/":
        "placeholder files (a text and a GPT-2 folder): cli_eval runs `eval --text FILE "
        "--tokenizer HF_DIR` on an exported folder",
    # Reference: the CLI, build options
    "trainrt <command> --help": "placeholder <command>: cli_e2e runs each command's --help",
    # Reference: build options
    "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release":
        "configures a build: this test runs against the build ctest runs in",
    "cmake --build build -j \"$(nproc)\"": "builds the project: this test runs against that build",
}

# Indented blocks that hold no commands, by their first line.
NOT_COMMANDS = {
    "[model]": "TOML: a config excerpt",
    "trainrt prepare --text FILE --out DIR [--val-fraction F]   # bytes -> llm.c shards":
        "the CLI's synopsis (FILE, DIR, ... are placeholders)",
    "include/trainrt/trainrt.h   the public C API (C99)": "the source layout",
}

SHELL_FENCES = {"sh", "bash", "shell", "console"}
PROGRAMS = {"trainrt", "bash", "cmake", "cd", "pip", "pip3", "mpirun", "cpack", "sudo",
            "pkg-config", "go", "cargo", "mono", "ctest", "python3", "apt", "make"}
# Files a command writes outside the scratch folder: removed after it (under a lock).
OUTSIDE = {
    "build/trainrt export out/shakespeare /tmp/shakespeare-hf": "/tmp/shakespeare-hf",
}
EXPORT_FILES = {"model.safetensors", "config.json", "tokenizer.json", "tokenizer.model",
                "tokenizer_config.json", "special_tokens_map.json"}

MY_TOML = """\
# "Your own data" (README section 3): the shards and tokenizer its commands write.
[model]
vocab_size = 8192
context_length = 64
n_layer = 2
n_head = 2
d_model = 32
[data]
train = "data/my/train.bin"
val = "data/my/val.bin"
tokenizer = "tok.json"
[train]
batch_size = 4
seq_len = 64
steps = 5
eval_batches = 2
out_dir = "out/my"
[runtime]
threads = 2
"""


def blocks(readme):
    """(kind, info, lines) of every code block: kind 'indented' or 'fenced' (info: language)."""
    out, lines, i = [], readme.split("\n"), 0
    prev_blank = True
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(```+|~~~+)\s*(\S*)", line)
        if fence:
            lang, body = fence.group(2).lower(), []
            i += 1
            while i < len(lines) and not lines[i].startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            out.append(("fenced", lang, body))
            i += 1
            prev_blank = False
            continue
        if line.startswith("    ") and prev_blank and line.strip():
            body = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            out.append(("indented", "", body))
            prev_blank = True
            continue
        prev_blank = not line.strip()
        i += 1
    return out


def prose(readme):
    """The README without its code blocks, as paragraphs with their line breaks undone."""
    kept, lines, i, prev_blank = [], readme.split("\n"), 0, True
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(```+|~~~+)", line)
        if fence:
            i += 1
            while i < len(lines) and not lines[i].startswith(fence.group(1)):
                i += 1
            i += 1
            kept.append("")
            continue
        if line.startswith("    ") and prev_blank and line.strip():
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                i += 1
            kept.append("")
            continue
        prev_blank = not line.strip()
        kept.append(line)
        i += 1
    return [re.sub(r"\s*\n\s*", " ", p) for p in re.split(r"\n\s*\n", "\n".join(kept))]


def block_commands(body):
    """A block's command lines: continuation lines joined, comments and blank lines left out."""
    cmds, pending = [], ""
    for line in body:
        line = line.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        cmds.append((pending + line).strip())
        pending = ""
    return cmds


def inline_commands(paragraphs):
    """Code spans of prose that are command lines: a known program and at least two more words."""
    out = []
    for p in paragraphs:
        for m in re.finditer(r"`([^`]+)`", p):
            span = m.group(1).strip()
            words = span.split()
            first = words[0] if words else ""
            if len(words) >= 3 and (first in PROGRAMS or first.startswith(("build/", "scripts/"))):
                out.append(span)
    return out


def sh(cmd, cwd, env, log, timeout=180):
    """Runs cmd with bash in cwd; its output goes to log. The exit status."""
    with open(log, "w") as f:
        try:
            return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdout=f,
                                  stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            f.write("\n(readme_commands: timed out after %d s)\n" % timeout)
            return 124


def main():
    src, build, work = (os.path.abspath(a) for a in sys.argv[1:4])
    readme = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "examples", "data"))
    os.makedirs(os.path.join(work, "logs"))
    os.symlink(build, os.path.join(work, "build"))
    shutil.copytree(os.path.join(src, "examples", "configs"),
                    os.path.join(work, "examples", "configs"))
    text = os.path.join(src, "examples", "data", "tinyshakespeare.txt")
    shutil.copy(text, os.path.join(work, "examples", "data"))
    with open(text, "rb") as f, open(os.path.join(work, "my.txt"), "wb") as g:
        g.write(f.read(200000))
    with open(os.path.join(work, "my.toml"), "w") as f:
        f.write(MY_TOML)
    env = dict(os.environ, PATH=os.path.join(work, "build") + os.pathsep + os.environ["PATH"])

    def fixture(cmd):
        log = os.path.join(work, "logs", "fixture.log")
        if sh(cmd, work, env, log) != 0:
            sys.stdout.write(open(log).read())
            sys.exit("FAIL: fixture `%s` failed" % cmd)

    # What scripts/demo.sh leaves (its prepare line as it runs it; 2 of its 2,000 steps).
    fixture("build/trainrt prepare --text examples/data/tinyshakespeare.txt "
            "--out examples/data/shakespeare --val-fraction 0.1")
    fixture("build/trainrt train examples/configs/shakespeare.toml --steps 2")

    commands = []  # (command, where)
    seen_blocks = set()
    for kind, lang, body in blocks(readme):
        if kind == "fenced" and lang not in SHELL_FENCES:
            continue  # code in another language (```c): not commands
        first = body[0].strip() if body else ""
        if kind == "indented" and first in NOT_COMMANDS:
            seen_blocks.add(first)
            print("not commands: block `%s`: %s" % (first[:60], NOT_COMMANDS[first]))
            continue
        commands += [(c, "block") for c in block_commands(body)]
    commands += [(c, "inline") for c in inline_commands(prose(readme))]

    texts = {c for c, _ in commands}
    unclassified = sorted(texts - RUN - set(SKIP))
    stale = sorted((RUN | set(SKIP)) - texts) + sorted(set(NOT_COMMANDS) - seen_blocks)
    if unclassified or stale:
        for c in unclassified:
            print("unclassified README command: %s" % c)
        for c in stale:
            print("listed here but not in the README (any more): %s" % c)
        sys.exit("FAIL: classify every README command in tests/cli/readme_commands.py (RUN, "
                 "or SKIP with the reason), and drop the entries the README no longer holds")

    ran = skipped = 0
    failures = []
    t0 = time.time()
    for n, (cmd, where) in enumerate(commands):
        if cmd in SKIP:
            print("skip (%s): %s\n      because: %s" % (where, cmd, SKIP[cmd]))
            skipped += 1
            continue
        outside = OUTSIDE.get(cmd)
        lock = None
        if outside:
            # Another run of this test may be at the same command: one at a time.
            lock = open("/tmp/trainrt-readme-commands.lock", "w")
            fcntl.flock(lock, fcntl.LOCK_EX)
            if os.path.isdir(outside):
                if not set(os.listdir(outside)) <= EXPORT_FILES:
                    sys.exit("FAIL: %s exists and holds more than an export; `%s` would refuse "
                             "it: remove it" % (outside, cmd))
                shutil.rmtree(outside)  # an earlier export by this very command
        log = os.path.join(work, "logs", "%02d.log" % n)
        start = time.time()
        rc = sh(cmd, work, env, log)
        if outside:
            made = os.path.isdir(outside)
            shutil.rmtree(outside, ignore_errors=True)
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
            if rc == 0 and not made:
                rc = 1
                with open(log, "a") as f:
                    f.write("(readme_commands: %s was not written)\n" % outside)
        ran += 1
        print("%s (%s, %.1f s): %s" % ("ok  " if rc == 0 else "FAIL", where, time.time() - start, cmd))
        if rc != 0:
            out = open(log, errors="replace").read()
            print("      exit %d; its output (last 2,000 characters):\n%s" % (rc, out[-2000:]))
            failures.append(cmd)
    print("\n%d README commands run, %d skipped (%.1f s)" % (ran, skipped, time.time() - t0))
    if failures:
        sys.exit("FAIL: %d README command(s) failed as written:\n  %s"
                 % (len(failures), "\n  ".join(failures)))
    print("readme_commands: every README command ran as written or is skipped for its reason")


if __name__ == "__main__":
    main()
