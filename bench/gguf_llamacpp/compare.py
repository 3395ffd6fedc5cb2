#!/usr/bin/env python3
"""Our logits against llama.cpp's for the same tokens: a checkpoint through libtrainrt (the
Python binding's forward_logits) and its `trainrt export --gguf` file through llama.cpp
(logits.cpp). Per position: max |ours - llama.cpp| / max |ours|; the file's worst position is
reported, and judged against --tolerance (F16 1e-2, the issue's bound).

usage: compare.py --library LIBTRAINRT --checkpoint DIR --gguf FILE --logits-bin PROGRAM
                  --tokens-from SHARD [--positions N] [--tolerance T] [--text FILE]
With --text, also the file's tokenizer: llama.cpp's ids for the text (special tokens parsed)
against the run's data.tokenizer's, which must be equal.
Run from the folder the checkpoint's run config names its data relative to.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np


def shard_tokens(path, n):
    """The first n token ids of an llm.c shard (header 256 int32: magic, version, count)."""
    with open(path, "rb") as f:
        header = struct.unpack("<256i", f.read(1024))
        width = 2 if header[0] == 20240520 else 4
        data = np.frombuffer(f.read(n * width), "<u2" if width == 2 else "<u4")
    return [int(x) for x in data[:n]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--logits-bin", required=True)
    ap.add_argument("--tokens-from", required=True)
    ap.add_argument("--positions", type=int, default=24)
    ap.add_argument("--tolerance", type=float, default=1e-2)
    ap.add_argument("--text", help="a UTF-8 file both tokenizers encode (no BOS/EOS added)")
    args = ap.parse_args()
    os.environ["TRAINRT_LIB"] = os.path.abspath(args.library)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "bindings", "python"))
    import trainrt

    tokens = shard_tokens(args.tokens_from, args.positions + 1)
    with trainrt.Config.from_checkpoint(args.checkpoint) as cfg:
        cfg.set("train.out_dir", "\"\"")
        with trainrt.Session(cfg) as s:
            s.load(args.checkpoint)
            _, ours = s.forward_logits(tokens, as_numpy=True)
    ours = ours.reshape(args.positions, -1).astype(np.float64)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "logits.f32")
        r = subprocess.run([args.logits_bin, args.gguf, out] + [str(t) for t in tokens[:-1]],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{args.gguf}: llama.cpp failed ({r.returncode}): {r.stderr[-2000:]}")
            return 1
        theirs = np.fromfile(out, "<f4").astype(np.float64).reshape(args.positions, -1)
    # The tokenizer inside the file: llama.cpp's ids for a text against ours.
    tok_line = ""
    if args.text:
        folder = None
        with trainrt.Config.from_checkpoint(args.checkpoint) as cfg:
            folder = cfg.get_string("data.tokenizer")
        if folder:
            text = open(args.text, encoding="utf-8").read()
            with trainrt.Tokenizer(folder) as t:
                mine = t.encode(text)
            r = subprocess.run([args.logits_bin, "--tokenize", args.gguf, args.text],
                               capture_output=True, text=True)
            theirs_ids = [int(x) for x in r.stdout.split()] if r.returncode == 0 else None
            same = theirs_ids == mine
            tok_line = (f"; tokenizer: {len(mine)} ids of {len(text)} characters, llama.cpp's "
                        f"{'the same' if same else 'DIFFERENT'}")
            if not same:
                first = next((i for i, (a, b) in enumerate(zip(mine, theirs_ids or [])) if a != b),
                             min(len(mine), len(theirs_ids or [])))
                tok_line += f" (from id {first}: ours {mine[first:first + 5]}, llama.cpp " \
                            f"{(theirs_ids or [])[first:first + 5]})"
    if theirs.shape != ours.shape:
        print(f"{args.gguf}: llama.cpp has {theirs.shape[1]} logits a position, we {ours.shape[1]}")
        return 1
    rel = np.abs(ours - theirs).max(axis=1) / np.abs(ours).max(axis=1)
    same_argmax = int((ours.argmax(axis=1) == theirs.argmax(axis=1)).sum())
    worst = float(rel.max())
    ok = worst <= args.tolerance
    print(f"{os.path.basename(args.gguf)}: {args.positions} positions x {ours.shape[1]} logits; "
          f"max |ours - llama.cpp| / max |ours| = {worst:.3e} (position {int(rel.argmax())}), "
          f"median {float(np.median(rel)):.3e}; argmax equal at {same_argmax}/{args.positions}; "
          f"{'ok' if ok else 'OVER'} (tolerance {args.tolerance:g}){tok_line}")
    return 0 if ok and "DIFFERENT" not in tok_line else 1


if __name__ == "__main__":
    sys.exit(main())
