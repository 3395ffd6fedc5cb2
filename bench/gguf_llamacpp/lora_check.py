#!/usr/bin/env python3
"""llama.cpp applies our LoRA adapter file (`trainrt export --gguf-lora`) as our merge does:
its logits for the base model's GGUF with the adapter applied (`llama-cli -m BASE --lora
ADAPTER`) against its logits for the merged model's GGUF (`trainrt export --gguf`), on the
same tokens. Per position max |adapted - merged| / max |merged|; judged against a tolerance
(both are F16 files of the same weights, one merged by us in fp32, one applied by llama.cpp).

    lora_check.py --logits-bin LOGITS --base BASE.gguf --adapter ADAPTER.gguf
                  --merged MERGED.gguf --tokens-from SHARD [--positions N] [--tolerance T]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import shard_tokens  # noqa: E402


def logits(binary, model, ids, lora=None):
    with tempfile.NamedTemporaryFile(suffix=".f32") as f:
        cmd = [binary, model, f.name] + (["--lora", lora] if lora else []) + [str(i) for i in ids]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return np.fromfile(f.name, dtype=np.float32).reshape(len(ids), -1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for a in ("--logits-bin", "--base", "--adapter", "--merged", "--tokens-from"):
        ap.add_argument(a, required=True)
    ap.add_argument("--positions", type=int, default=24)
    ap.add_argument("--tolerance", type=float, default=1e-2)
    args = ap.parse_args()
    ids = shard_tokens(args.tokens_from, args.positions)
    adapted = logits(args.logits_bin, args.base, ids, args.adapter)
    merged = logits(args.logits_bin, args.merged, ids)
    plain = logits(args.logits_bin, args.base, ids)
    rel = np.abs(adapted - merged).max(axis=1) / np.abs(merged).max(axis=1)
    moved = np.abs(plain - merged).max(axis=1) / np.abs(merged).max(axis=1)
    same_argmax = int((adapted.argmax(1) == merged.argmax(1)).sum())
    ok = rel.max() <= args.tolerance
    print(f"{os.path.basename(args.adapter)} on {os.path.basename(args.base)} vs "
          f"{os.path.basename(args.merged)}: max relative {rel.max():.2e} over {len(ids)} positions "
          f"(the base alone is {moved.max():.2e} away: the adapter's effect), argmax equal at "
          f"{same_argmax}/{len(ids)} — {'ok' if ok else 'OVER ' + str(args.tolerance)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
