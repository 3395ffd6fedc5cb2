"""Tokenizers (a fixture tokenizer.json and one trained here), prepare_text, prepare_bytes."""
from __future__ import annotations

import os
import threading
import unittest

import trainrt

from _support import TestCase, scratch, write_tiny_tokenizer

TEXT = ("Hello, hello world! The quick brown fox jumps over the lazy dog.\n"
        "Ünïcödé text: naïve café, 東京, emoji ✓ and tabs\tand newlines.\n") * 40


class TinyTokenizerTest(TestCase):
    def tok(self) -> trainrt.Tokenizer:
        return self.own(trainrt.Tokenizer(write_tiny_tokenizer(scratch())))

    def test_encode_decode(self) -> None:
        tok = self.tok()
        self.assertEqual(tok.encode("hello"), [259])
        self.assertEqual(tok.encode("hell"), [258])
        self.assertEqual(tok.encode("he<|eot|>"), [256, 300])
        self.assertEqual(tok.encode(""), [])
        self.assertEqual(tok.decode([259, 300]), "hello<|eot|>")
        self.assertEqual(tok.vocab_size, 301)
        self.assertEqual(len(tok), 301)
        self.assertEqual(tok.token_id("<|eot|>"), 300)
        self.assertEqual(tok.token_id("hello"), 259)
        self.assertIsNone(tok.token_id("absent"))
        for text in ("hello world", "é ✓ 東京", "a\0b", TEXT[:300]):
            self.assertEqual(tok.decode(tok.encode(text)), text)
            self.assertEqual(tok.decode_bytes(tok.encode(text.encode())), text.encode())
        self.assertEqual(tok.encode_array("hello").tolist(), [259])
        # A cut-off character: bytes come back as they are, text with a replacement.
        ids = tok.encode("é")
        self.assertEqual(len(ids), 2)
        self.assertEqual(tok.decode_bytes(ids[:1]), "é".encode()[:1])
        self.assertEqual(tok.decode(ids[:1]), "\ufffd")
        with self.assertRaises(UnicodeDecodeError):
            tok.decode(ids[:1], errors="strict")

    def test_errors(self) -> None:
        tok = self.tok()
        with self.assertRaises(trainrt.InvalidArgumentError) as cm:
            tok.encode(b"ok \xff not utf-8")
        self.assertTrue(cm.exception.message)
        with self.assertRaises(trainrt.InvalidArgumentError):
            tok.decode([301])
        with self.assertRaises(trainrt.IoError):
            trainrt.Tokenizer(os.path.join(scratch(), "missing.json"))
        bad = os.path.join(scratch(), "tokenizer.json")
        with open(bad, "w") as f:
            f.write("{ not json")
        with self.assertRaises(trainrt.Error):
            trainrt.Tokenizer(bad)

    def test_threads_share_one_tokenizer(self) -> None:
        tok = self.tok()
        errors = []

        def worker(g: int) -> None:
            try:
                text = "hello %d ✓ " % g * 50
                for _ in range(50):
                    if tok.decode(tok.encode(text)) != text:
                        errors.append(g)
                        return
            except BaseException as e:  # pragma: no cover
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(g,)) for g in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_close(self) -> None:
        tok = trainrt.Tokenizer(write_tiny_tokenizer(scratch()))
        with tok:
            tok.encode("hello")
        tok.close()
        self.assertTrue(tok.closed)
        with self.assertRaises(trainrt.ClosedError):
            tok.encode("hello")
        with self.assertRaises(trainrt.ClosedError):
            tok.token_id("hello")


class TrainedTokenizerTest(TestCase):
    def setUp(self) -> None:
        self.dir = scratch()
        self.text = os.path.join(self.dir, "corpus.txt")
        with open(self.text, "w", encoding="utf-8") as f:
            f.write(TEXT)

    def test_train_load_round_trip(self) -> None:
        out = os.path.join(self.dir, "tokenizer.json")
        r = trainrt.tokenizer_train([self.text], out, vocab_size=300)
        self.assertIsInstance(r, trainrt.TokenizerTrainResult)
        self.assertEqual(r.bytes, len(TEXT.encode()))
        self.assertLessEqual(r.vocab_size, 300)
        self.assertGreater(r.merges, 0)
        with self.assertRaises(trainrt.IoError):  # never replaced unless overwrite
            trainrt.tokenizer_train(self.text, out, vocab_size=300)
        trainrt.tokenizer_train(self.text, out, vocab_size=280, overwrite=True,
                                special_tokens=["<|endoftext|>", "<|pad|>"], min_frequency=1)
        tok = self.own(trainrt.Tokenizer.load(out))
        self.assertEqual(tok.token_id("<|endoftext|>"), 0)
        self.assertEqual(tok.token_id("<|pad|>"), 1)
        ids = tok.encode(TEXT)
        self.assertLess(len(ids), len(TEXT.encode()))  # merges shorten it
        self.assertEqual(tok.decode(ids), TEXT)
        self.assertEqual(tok.decode(tok.encode("unseen: ß∂ƒ 🙂")), "unseen: ß∂ƒ 🙂")
        # No special token at all.
        none = os.path.join(self.dir, "none.json")
        trainrt.tokenizer_train(self.text, none, vocab_size=260, special_tokens=[])
        with trainrt.Tokenizer(none) as t2:
            self.assertIsNone(t2.token_id("<|endoftext|>"))
        with self.assertRaises(trainrt.Error):
            trainrt.tokenizer_train(self.text, os.path.join(self.dir, "x.json"), vocab_size=10)

    def test_prepare_text_with_progress(self) -> None:
        tok_path = os.path.join(self.dir, "tokenizer.json")
        trainrt.tokenizer_train(self.text, tok_path, vocab_size=300)
        calls = []
        out = os.path.join(self.dir, "shards")
        r = trainrt.prepare_text([self.text], out, tokenizer=tok_path, val_fraction=0.2,
                                 threads=1, progress=lambda d, t: calls.append((d, t)))
        self.assertIsInstance(r, trainrt.PrepareResult)
        # One file; the val part (lines from the cut on) counts as a document of its own.
        self.assertIn(r.documents, (1, 2))
        self.assertGreater(r.train_tokens, 0)
        self.assertGreater(r.val_tokens, 0)
        self.assertEqual(r.token_bytes, 2)
        self.assertEqual((r.train_shards, r.val_shards), (1, 1))
        self.assertTrue(os.path.isfile(os.path.join(out, "train.bin")))
        self.assertTrue(calls)
        self.assertTrue(all(d <= t for d, t in calls))
        # Cancelled by the callback: CANCELLED, nothing written.
        out2 = os.path.join(self.dir, "cancelled")
        with self.assertRaises(trainrt.CancelledError):
            trainrt.prepare_text(self.text, out2, tokenizer=tok_path, progress=lambda d, t: True)
        self.assertFalse(os.path.exists(os.path.join(out2, "train.bin")))

        # An exception in the callback cancels the run and is re-raised.
        class Boom(Exception):
            pass

        def boom(d: int, t: int) -> None:
            raise Boom()

        with self.assertRaises(Boom):
            trainrt.prepare_text(self.text, out2, tokenizer=tok_path, progress=boom)
        self.assertFalse(os.path.exists(os.path.join(out2, "train.bin")))
        # Numbered shards.
        r3 = trainrt.prepare_text(self.text, os.path.join(self.dir, "numbered"),
                                  tokenizer=tok_path, shard_tokens=500)
        self.assertGreater(r3.train_shards, 1)

    def test_prepare_bytes_and_train_on_it(self) -> None:
        out = os.path.join(self.dir, "bytes")
        n_train, n_val = trainrt.prepare_bytes(self.text, out, 0.25)
        self.assertEqual(n_train + n_val, len(TEXT.encode()))
        self.assertGreater(n_val, 0)
        with self.assertRaises(trainrt.IoError):
            trainrt.prepare_bytes(os.path.join(self.dir, "missing.txt"), out)


if __name__ == "__main__":
    unittest.main()
