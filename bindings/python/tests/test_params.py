"""Model parameters: the tensor table, reading and writing them (whole or by name)."""
from __future__ import annotations

import array
import math
import unittest

import trainrt

from _support import HAVE_NUMPY, TestCase, bits, numpy, session

# Two rows of seq_len + 1 = 9 ids: a fixed probe for "did the model change".
PROBE = [[(97 + (r * 7 + i) % 26) for i in range(9)] for r in range(2)]


class ParamsTest(TestCase):
    def test_table(self) -> None:
        s = self.own(session())
        n_tensors, numel = s.param_count()
        params = s.params()
        self.assertEqual(len(params), n_tensors)
        self.assertGreater(n_tensors, 4)
        # Back to back, in order, without padding.
        offset = 0
        for p in params:
            self.assertIsInstance(p, trainrt.ParamInfo)
            self.assertEqual(p.offset, offset, p.name)
            self.assertEqual(p.numel, math.prod(p.shape), p.name)
            self.assertIn(len(p.shape), (1, 2))
            self.assertIsInstance(p.role, trainrt.ParamRole)
            self.assertTrue(p.trainable)
            offset += p.numel
        self.assertEqual(offset, numel)
        with trainrt.Config.from_file(_path()) as cfg:
            self.assertEqual(numel, cfg.model_info().parameters)
        names = [p.name for p in params]
        self.assertEqual(len(set(names)), len(names))
        # GPT-2's Hugging Face names and shapes: d_model 32, 2 layers, context 32.
        self.assertEqual(s.param("wte.weight").shape, (256, 32))
        self.assertEqual(s.param("wte.weight").role, trainrt.ParamRole.TOKEN_EMBEDDING)
        self.assertEqual(s.param("wpe.weight").role, trainrt.ParamRole.POSITION_EMBEDDING)
        self.assertEqual(s.param("h.0.attn.c_attn.weight").shape, (32, 96))
        self.assertEqual(s.param("h.1.attn.c_attn.weight").layer, 1)
        self.assertEqual(s.param("wte.weight").layer, -1)
        with self.assertRaises(KeyError):
            s.param("nope")

    def test_read_whole_and_named(self) -> None:
        s = self.own(session())
        flat = s.read_params()
        self.assertIsInstance(flat, array.array)
        self.assertEqual(flat.typecode, "f")
        self.assertEqual(len(flat), s.param_count()[1])
        for p in s.params():
            t = s.read_params(p.name)
            self.assertEqual(len(t), p.numel)
            self.assertEqual(t.tobytes(), flat[p.offset:p.offset + p.numel].tobytes(), p.name)
        with self.assertRaises(trainrt.InvalidArgumentError) as cm:
            s.read_params("h.0.attn.c_atn.weight")
        self.assertTrue(cm.exception.message)
        # Training changes the weights.
        s.step()
        self.assertNotEqual(s.read_params().tobytes(), flat.tobytes())

    def test_write_named_changes_the_loss_and_back_restores_it(self) -> None:
        s = self.own(session())
        s.step()
        before = s.forward(PROBE)
        name = "h.0.mlp.c_fc.weight"
        original = s.read_params(name)
        changed = array.array("f", (v * 0.5 + 0.01 for v in original))
        s.write_params(changed, name)
        self.assertEqual(s.read_params(name).tobytes(), changed.tobytes())
        after = s.forward(PROBE)
        self.assertNotEqual(bits(after), bits(before))
        s.write_params(original, name)
        self.assertEqual(bits(s.forward(PROBE)), bits(before))
        self.assertEqual(s.sync().step, 1)  # writing does not step

    def test_write_from_other_containers(self) -> None:
        s = self.own(session())
        p = s.param("ln_f.weight")
        original = s.read_params(p.name)
        values = [1.0 + 0.001 * i for i in range(p.numel)]
        want = array.array("f", values).tobytes()
        for v in (values, tuple(values), array.array("d", values), array.array("f", values),
                  memoryview(array.array("f", values)), memoryview(array.array("d", values))):
            s.write_params(original, p.name)
            s.write_params(v, p.name)
            self.assertEqual(s.read_params(p.name).tobytes(), want, type(v).__name__)
        # Nested rows of a 2-D tensor.
        q = s.param("h.0.attn.c_proj.weight")
        rows = [[0.001 * (r + c) for c in range(q.shape[1])] for r in range(q.shape[0])]
        s.write_params(rows, q.name)
        self.assertAlmostEqual(s.read_params(q.name)[q.shape[1] + 2], 0.003, places=6)
        with self.assertRaises(TypeError):
            s.write_params("1.0", p.name)  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            s.write_params(b"\0\0\0\0", p.name)

    def test_write_whole_flat_buffer(self) -> None:
        s = self.own(session())
        before = s.forward(PROBE)
        flat = s.read_params()
        s.step()
        self.assertNotEqual(bits(s.forward(PROBE)), bits(before))
        s.write_params(flat)  # every tensor back as it was before the step
        self.assertEqual(bits(s.forward(PROBE)), bits(before))

    def test_non_finite_is_refused_and_session_unchanged(self) -> None:
        s = self.own(session())
        name = "h.1.attn.c_proj.weight"
        before_loss = s.forward(PROBE)
        before = s.read_params()
        bad = s.read_params(name)
        bad[5] = float("nan")
        with self.assertRaises(trainrt.NonFiniteError) as cm:
            s.write_params(bad, name)
        self.assertEqual(cm.exception.status, trainrt.Status.ERR_NON_FINITE)
        self.assertIn(name, cm.exception.message)
        bad[5] = float("inf")
        with self.assertRaises(trainrt.NonFiniteError):
            s.write_params(bad, name)
        self.assertEqual(s.read_params().tobytes(), before.tobytes())
        self.assertEqual(bits(s.forward(PROBE)), bits(before_loss))

    def test_size_mismatch(self) -> None:
        s = self.own(session())
        name = "ln_f.bias"
        n = s.param(name).numel
        before = s.read_params()
        for count in (n - 1, n + 1, 0):
            with self.assertRaises(trainrt.InvalidArgumentError) as cm:
                s.write_params([0.5] * count, name)
            self.assertTrue(cm.exception.message)
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.write_params([0.5] * 10)  # the flat buffer is far larger
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.write_params([0.5] * n, "no.such.tensor")
        self.assertEqual(s.read_params().tobytes(), before.tobytes())

    @unittest.skipUnless(HAVE_NUMPY, "numpy is not installed")
    def test_numpy(self) -> None:
        np = numpy
        s = self.own(session())
        flat = s.read_params(as_numpy=True)
        self.assertEqual(flat.dtype, np.float32)
        self.assertEqual(flat.shape, (s.param_count()[1],))
        w = s.read_params("h.0.attn.c_attn.weight", as_numpy=True)
        self.assertEqual(w.shape, (32, 96))
        p = s.param("h.0.attn.c_attn.weight")
        self.assertTrue(np.array_equal(w.ravel(), flat[p.offset:p.offset + p.numel]))
        before = s.forward(PROBE)
        s.write_params(w * 2, p.name)  # float32
        self.assertNotEqual(bits(s.forward(PROBE)), bits(before))
        s.write_params(w.astype(np.float64), p.name)  # converted
        self.assertEqual(bits(s.forward(PROBE)), bits(before))
        s.write_params(np.asfortranarray(w), p.name)  # made contiguous
        self.assertEqual(bits(s.forward(PROBE)), bits(before))
        with self.assertRaises(trainrt.NonFiniteError):
            s.write_params(np.full(p.numel, np.nan, dtype=np.float32), p.name)
        s.write_params(flat)
        self.assertEqual(bits(s.forward(PROBE)), bits(before))


def _path() -> str:
    from _support import config_path
    return config_path()


if __name__ == "__main__":
    unittest.main()
