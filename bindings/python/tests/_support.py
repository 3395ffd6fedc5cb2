"""Shared helpers of the binding's tests: the environment tests/bindings/run_binding.sh sets
(through bindings/python/test.sh), scratch folders, fixtures."""
from __future__ import annotations

import os
import struct
import tempfile
import unittest
from typing import List

import trainrt

try:
    import numpy
    HAVE_NUMPY = True
except ImportError:  # the numpy paths are then skipped; everything else runs
    numpy = None
    HAVE_NUMPY = False


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise AssertionError("%s is not set: run bindings/python/test.sh (or "
                             "tests/bindings/run_binding.sh python ...)" % name)
    return value


def config_path() -> str:
    return env("TRAINRT_TEST_CONFIG")


def expected_bits() -> List[str]:
    """The C API's own per-step losses: 16 hex digits (the double's IEEE bits) per step."""
    out: List[str] = []
    with open(env("TRAINRT_TEST_EXPECTED")) as f:
        for line in f:
            fields = line.split()
            if len(fields) != 2:
                continue
            step, bits = int(fields[0]), fields[1].lower()
            if step != len(out) + 1 or len(bits) != 16:
                raise AssertionError("bad expected line %r" % line)
            out.append(bits)
    if not out:
        raise AssertionError("no expected losses")
    return out


def bits(x: float) -> str:
    """The IEEE-754 bits of a double as 16 hex digits."""
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def scratch(prefix: str = "py-") -> str:
    base = os.environ.get("TRAINRT_TEST_TMP") or None
    if base:
        os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def config(**sets: object) -> trainrt.Config:
    """The test config, with ``train__steps=5``-style overrides."""
    cfg = trainrt.Config.from_file(config_path())
    cfg.update(**sets)
    return cfg


def session(**sets: object) -> trainrt.Session:
    with config(**sets) as cfg:
        return trainrt.Session(cfg)


def long_session() -> trainrt.Session:
    """A session whose train() would run for a very long time (a million steps)."""
    return session(train__steps=1000000)


def byte_char(b: int) -> str:
    """GPT-2's byte alphabet: byte b stands for itself when printable, else U+0100 on."""
    def keep(k: int) -> bool:
        return ord("!") <= k <= ord("~") or 0xA1 <= k <= 0xAC or k >= 0xAE
    if keep(b):
        return chr(b)
    return chr(0x100 + sum(1 for k in range(b) if not keep(k)))


def write_tiny_tokenizer(folder: str) -> str:
    """folder/tokenizer.json: a byte-level BPE whose bytes are ids 0..255, "he" 256, "ll" 257,
    "hell" 258, "hello" 259, and the added token "<|eot|>" 300 (as the C API tests' own)."""
    import json
    vocab = {byte_char(b): b for b in range(256)}
    vocab.update({"he": 256, "ll": 257, "hell": 258, "hello": 259})
    doc = {
        "added_tokens": [{"id": 300, "content": "<|eot|>", "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": vocab, "merges": ["h e", "l l", "he ll", "hell o"]},
    }
    path = os.path.join(folder, "tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
    return path


class TestCase(unittest.TestCase):
    """unittest.TestCase closing what a test opened, even when it fails."""

    def own(self, obj):  # type: ignore[no-untyped-def]
        self.addCleanup(obj.close)
        return obj

    def assertStatus(self, cm: "unittest.case._AssertRaisesContext", status: int) -> None:
        err = cm.exception
        self.assertIsInstance(err, trainrt.Error)
        self.assertEqual(err.status, status, "status %s: %s" % (err.status_name, err.message))
