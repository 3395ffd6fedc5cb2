#!/usr/bin/env python3
"""Synthetic instruction-tuning conversations with Alpaca's length mix (bench/packing_vs_padding.sh).

Alpaca's 52k examples: an instruction (median ~12 words), an input in ~40% of them (~15 words
when present), a response of ~45 words median with a long tail (a few hundred). Here lengths
are drawn log-normal with those medians, words from a small seeded vocabulary, so the
conversations have Alpaca's shape without its text. Writes chat JSON lines ({"messages": ...})
and, with --text, the same words as plain text (to train a tokenizer on).

  alpaca_like.py --n 2000 --seed 1 --out chats.jsonl [--text corpus.txt]
"""
import argparse
import json
import math
import random


def words(rng, vocab, median, sigma, cap):
    n = max(1, min(cap, int(round(math.exp(rng.gauss(math.log(median), sigma))))))
    return " ".join(rng.choice(vocab) for _ in range(n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--text")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 8))) for _ in range(3000)]
    text = []
    with open(a.out, "w") as f:
        for _ in range(a.n):
            instruction = words(rng, vocab, 12, 0.5, 80) + "?"
            if rng.random() < 0.4:
                instruction += "\n\n" + words(rng, vocab, 15, 0.8, 200)
            response = words(rng, vocab, 45, 0.9, 400) + "."
            f.write(json.dumps({"messages": [{"role": "user", "content": instruction},
                                             {"role": "assistant", "content": response}]}) + "\n")
            text += [instruction, response]
    if a.text:
        with open(a.text, "w") as f:
            f.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
