"""The in-tree PEP 517 backend: a valid pure-Python wheel (METADATA, WHEEL, RECORD digests),
a reproducible build, an sdist, an editable wheel."""
from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import os
import tarfile
import unittest
import zipfile

from _support import TestCase, scratch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def backend():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "trainrt_build_under_test", os.path.join(ROOT, "_build", "trainrt_build.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BackendTest(TestCase):
    def test_wheel(self) -> None:
        be = backend()
        self.assertEqual(be.get_requires_for_build_wheel(), [])
        d = scratch()
        name = be.build_wheel(d)
        self.assertEqual(name, "trainrt-0.1.0-py3-none-any.whl")
        with zipfile.ZipFile(os.path.join(d, name)) as z:
            self.assertIsNone(z.testzip())
            names = z.namelist()
            self.assertIn("trainrt/__init__.py", names)
            self.assertIn("trainrt/py.typed", names)
            self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
            meta = z.read("trainrt-0.1.0.dist-info/METADATA").decode()
            self.assertIn("Metadata-Version: 2.1\nName: trainrt\nVersion: 0.1.0\n", meta)
            self.assertIn("Requires-Python: >=3.8", meta)
            self.assertIn('Requires-Dist: numpy; extra == "numpy"', meta)
            wheel = z.read("trainrt-0.1.0.dist-info/WHEEL").decode()
            self.assertIn("Root-Is-Purelib: true", wheel)
            self.assertIn("Tag: py3-none-any", wheel)
            record = list(csv.reader(io.StringIO(
                z.read("trainrt-0.1.0.dist-info/RECORD").decode())))
            listed = {row[0] for row in record}
            self.assertEqual(listed, set(names))
            for path, digest, size in record:
                if path.endswith("RECORD"):
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = z.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                self.assertEqual(digest, "sha256=" + want.decode(), path)
                self.assertEqual(int(size), len(data), path)
        # Reproducible.
        d2 = scratch()
        be.build_wheel(d2)
        with open(os.path.join(d, name), "rb") as a, open(os.path.join(d2, name), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_metadata_hook(self) -> None:
        d = scratch()
        info = backend().prepare_metadata_for_build_wheel(d)
        self.assertEqual(info, "trainrt-0.1.0.dist-info")
        self.assertTrue(os.path.isfile(os.path.join(d, info, "METADATA")))

    def test_mini_toml_reader_agrees_with_tomllib(self) -> None:
        be = backend()
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
            text = f.read()
        try:
            import tomllib
        except ImportError:
            self.skipTest("no tomllib (Python < 3.11)")
        self.assertEqual(be._mini_toml_project(text), tomllib.loads(text)["project"])

    def test_sdist(self) -> None:
        d = scratch()
        name = backend().build_sdist(d)
        self.assertEqual(name, "trainrt-0.1.0.tar.gz")
        with tarfile.open(os.path.join(d, name)) as t:
            names = t.getnames()
        for want in ("PKG-INFO", "pyproject.toml", "README.md", "_build/trainrt_build.py",
                     "trainrt/__init__.py", "trainrt/_capi.py", "tests/test_session.py"):
            self.assertIn("trainrt-0.1.0/" + want, names)

    def test_editable(self) -> None:
        d = scratch()
        name = backend().build_editable(d)
        with zipfile.ZipFile(os.path.join(d, name)) as z:
            pth = [n for n in z.namelist() if n.endswith(".pth")]
            self.assertEqual(len(pth), 1)
            self.assertEqual(z.read(pth[0]).decode().strip(), ROOT)


if __name__ == "__main__":
    unittest.main()
