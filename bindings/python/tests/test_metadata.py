"""Session metadata: a mutable mapping over the C calls, saved and restored by checkpoints."""
from __future__ import annotations

import collections.abc
import os
import unittest

import trainrt

from _support import TestCase, config, scratch, session


class MetadataTest(TestCase):
    def test_mapping(self) -> None:
        s = self.own(session())
        md = s.metadata
        self.assertIsInstance(md, collections.abc.MutableMapping)
        self.assertEqual(len(md), 0)
        self.assertEqual(list(md), [])
        md["run.name"] = "tiny"
        md["b-key_2"] = "ünïcode ✓ value"
        md["a"] = ""
        self.assertEqual(len(md), 3)
        self.assertEqual(list(md), ["a", "b-key_2", "run.name"])  # sorted bytewise
        self.assertEqual(md["run.name"], "tiny")
        self.assertEqual(md["b-key_2"], "ünïcode ✓ value")
        self.assertEqual(md["a"], "")
        self.assertIn("a", md)
        self.assertNotIn("zzz", md)
        self.assertNotIn(5, md)
        self.assertEqual(md.get("zzz", "dflt"), "dflt")
        with self.assertRaises(KeyError):
            md["zzz"]
        md["run.name"] = "renamed"
        self.assertEqual(md["run.name"], "renamed")
        del md["a"]
        self.assertNotIn("a", md)
        with self.assertRaises(KeyError):
            del md["a"]
        self.assertEqual(dict(md), {"b-key_2": "ünïcode ✓ value", "run.name": "renamed"})
        self.assertEqual(md.to_dict(), dict(md.items()))
        md.update({"x": "1", "y": "2"})
        self.assertEqual(md.pop("x"), "1")
        self.assertEqual(sorted(md.keys()), ["b-key_2", "run.name", "y"])
        long_value = "v" * 60000
        md["long"] = long_value
        self.assertEqual(md["long"], long_value)
        md.clear()
        self.assertEqual(len(md), 0)
        self.assertIn("SessionMetadata", repr(md))

    def test_refused_keys_and_values(self) -> None:
        s = self.own(session())
        md = s.metadata
        for bad in ("", "has space", "slash/no", "k" * 129):
            with self.assertRaises(trainrt.Error, msg=repr(bad)) as cm:
                md[bad] = "v"
            self.assertTrue(cm.exception.message)
        with self.assertRaises(trainrt.Error):
            md["big"] = "v" * (64 * 1024 + 1)
        with self.assertRaises(TypeError):
            md["k"] = 5  # type: ignore[assignment]
        self.assertEqual(len(md), 0)  # nothing was stored

    def test_saved_and_restored_by_checkpoints(self) -> None:
        d = scratch()
        with config() as cfg:
            a = self.own(trainrt.Session(cfg))
            b = self.own(trainrt.Session(cfg))
        a.metadata.update({"run.name": "tiny", "round": "3", "note": "é ✓"})
        a.step()
        ckpt = os.path.join(d, "ckpt")
        a.save(ckpt)
        b.metadata["stale"] = "replaced by load"
        b.load(ckpt)
        self.assertEqual(dict(b.metadata), {"run.name": "tiny", "round": "3", "note": "é ✓"})
        # Later changes of one session do not touch the other or the checkpoint.
        a.metadata["round"] = "4"
        self.assertEqual(b.metadata["round"], "3")
        c = self.own(session())
        c.load(ckpt)
        self.assertEqual(c.metadata["round"], "3")


if __name__ == "__main__":
    unittest.main()
