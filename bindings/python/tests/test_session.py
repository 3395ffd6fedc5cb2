"""Sessions: the C API's losses bit for bit, eval, save/load, forward, sample, export, misuse."""
from __future__ import annotations

import array
import math
import os
import threading
import time
import unittest

import trainrt

from _support import (HAVE_NUMPY, TestCase, bits, config, config_path, expected_bits,
                      long_session, numpy, scratch, session)


class ReferenceTest(TestCase):
    def test_losses_match_the_c_api_bit_for_bit(self) -> None:
        want = expected_bits()
        s = self.own(trainrt.Session(config_path()))
        losses = []
        for i, w in enumerate(want):
            s.step()
            r = s.sync()  # the figures of this very step, on any backend
            self.assertEqual(r.step, i + 1)
            self.assertEqual(bits(r.loss), w, "step %d: loss %r (bits %s), C API bits %s"
                             % (r.step, r.loss, bits(r.loss), w))
            self.assertGreater(r.tokens, 0)
            self.assertEqual(r.tokens_total, (i + 1) * r.tokens)
            self.assertGreater(r.grad_norm, 0)
            self.assertGreaterEqual(r.lr, 0)
            self.assertGreaterEqual(r.ms, 0)
            losses.append(r.loss)
        self.assertLess(losses[-1], losses[0], "the loss did not fall: %r" % losses)
        m = s.metrics()
        self.assertIsInstance(m, trainrt.Metrics)
        self.assertEqual(m.step, len(want))
        self.assertEqual(bits(m.last_loss), want[-1])
        self.assertTrue(math.isnan(m.last_val_loss))  # no eval yet
        self.assertEqual(m.tokens_total, len(want) * r.tokens)
        self.assertGreater(m.model_flops_per_token, 0)
        self.assertEqual((m.peak_flops, m.mfu), (0.0, 0.0))  # the CPU: peak unknown
        self.assertEqual((m.rank, m.world_size), (0, 1))
        self.assertEqual(m.skipped_steps, 0)
        self.assertEqual(m.loss_scale, 1.0)
        self.assertGreaterEqual(m.bytes_reserved, m.bytes_in_use)
        self.assertEqual(len(m), 16)  # every field of trainrt_metrics version 4

    def test_step_returns_the_step_just_run_on_the_cpu(self) -> None:
        want = expected_bits()
        s = self.own(session())
        r = s.step()
        self.assertEqual((r.step, bits(r.loss)), (1, want[0]))
        self.assertEqual(s.sync(), r)


class SessionTest(TestCase):
    def test_before_any_step(self) -> None:
        s = self.own(session())
        self.assertEqual(s.sync().step, 0)
        self.assertTrue(math.isnan(s.metrics().last_loss))
        v = s.eval()
        self.assertTrue(math.isfinite(v) and v > 0)

    def test_eval(self) -> None:
        s = self.own(session())
        s.train(4)
        v = s.eval()
        self.assertTrue(math.isfinite(v) and v > 0, v)
        self.assertEqual(s.metrics().last_val_loss, v)
        s2 = self.own(session(data__val=""))
        with self.assertRaises(trainrt.ConfigError):
            s2.eval()

    def test_profile(self) -> None:
        s = self.own(session(runtime__profile_ops=True))
        s.train(2)
        p = s.profile()
        self.assertEqual(p["schema"], "trainrt-op-profile/1")
        self.assertEqual(p["steps"], 2)
        self.assertLessEqual(p["op_s"], p["wall_s"])
        ops = {o["op"] for o in p["ops"]}
        self.assertTrue({"matmul_forward", "attention_forward", "adamw_step"} <= ops, ops)
        s.profile_reset()
        self.assertEqual(s.profile()["ops"], [])
        with self.assertRaises(trainrt.ConfigError):
            self.own(session()).profile()

    def test_whole_evals(self) -> None:
        s = self.own(session())
        w = s.eval_whole()
        self.assertIsInstance(w, trainrt.EvalResult)
        self.assertGreater(w.tokens, 0)
        self.assertAlmostEqual(w.perplexity, math.exp(w.loss), places=9)
        self.assertEqual(s.metrics().last_val_loss, w.loss)
        ids = [1, 2, 3, 1, 2]
        t = s.eval_tokens(ids)
        self.assertEqual((t.tokens, t.windows), (4, 1))
        # Text without a tokenizer: one id per byte, the same stream.
        self.assertEqual(s.eval_text(bytes(ids)), t)
        self.assertEqual(s.eval_text("\x01\x02\x03\x01\x02"), t)
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.eval_tokens([1])
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.eval_text("ab", tokenizer="t\0k")
        with self.assertRaises(trainrt.ConfigError):
            self.own(session(data__val="")).eval_whole()

    def test_save_load_next_step_bitwise_equal(self) -> None:
        d = scratch()
        with config() as cfg:
            a = self.own(trainrt.Session(cfg))
            for _ in range(3):
                a.step()
            ckpt = os.path.join(d, "ckpt")
            written = a.save(ckpt)
            self.assertTrue(os.path.isdir(written))
            self.assertEqual(os.path.realpath(written), os.path.realpath(ckpt))
            with self.assertRaises(trainrt.IoError):
                a.save(ckpt)  # must not exist
            b = self.own(trainrt.Session(cfg))
        b.load(ckpt)
        self.assertEqual(b.sync().step, 3)
        ra, rb = a.step(), b.step()
        self.assertEqual((ra.step, rb.step), (4, 4))
        self.assertEqual(bits(ra.loss), bits(rb.loss))
        self.assertEqual(bits(a.eval()), bits(b.eval()))
        with self.assertRaises(trainrt.IoError):
            b.load(os.path.join(d, "nope"))
        self.assertEqual(b.sync().step, 4)  # a failed load leaves the session as it was
        # Without a session: its config, an export.
        with trainrt.config_from_checkpoint(ckpt) as c:
            self.assertEqual(c.get_int("train.batch_size"), 4)
        trainrt.checkpoint_export(ckpt, os.path.join(d, "hf_ckpt"), "bf16")
        self.assertTrue(os.path.isfile(os.path.join(d, "hf_ckpt", "model.safetensors")))
        with self.assertRaises(trainrt.InvalidArgumentError):
            trainrt.checkpoint_export_adapter(ckpt, os.path.join(d, "adapter"))
        notes = trainrt.checkpoint_export_gguf(ckpt, os.path.join(d, "m.gguf"), "q8_0")
        with open(os.path.join(d, "m.gguf"), "rb") as f:
            self.assertEqual(f.read(8), b"GGUF\x03\x00\x00\x00")
        self.assertTrue(any("no tokenizer" in n for n in notes), notes)
        with self.assertRaises(trainrt.InvalidArgumentError):
            trainrt.checkpoint_export_gguf(ckpt, os.path.join(d, "x.gguf"), "q4_0")
        with self.assertRaises(trainrt.InvalidArgumentError):  # a run without adapters
            trainrt.checkpoint_export_gguf_lora(ckpt, os.path.join(d, "a.gguf"))
        self.assertFalse(os.path.exists(os.path.join(d, "a.gguf")))
        self.assertIsNone(trainrt.checkpoint_latest(d))

    def test_save_into_out_dir_and_latest(self) -> None:
        d = scratch()
        s = self.own(session(train__out_dir=d))
        s.step()
        path = s.save()
        self.assertEqual(os.path.basename(path), "step_00000001")
        self.assertEqual(os.path.realpath(trainrt.checkpoint_latest(d) or ""),
                         os.path.realpath(path))
        s2 = self.own(session(train__out_dir=scratch()))
        s2.load(d)  # a folder whose `latest` names a checkpoint
        self.assertEqual(s2.sync().step, 1)
        s3 = self.own(session())
        with self.assertRaises(trainrt.ConfigError):
            s3.save()  # no out_dir

    def test_forward(self) -> None:
        s = self.own(session())
        rows = [[(97 + (r * 7 + i) % 26) for i in range(9)] for r in range(2)]
        flat = [t for row in rows for t in row]
        loss = s.forward(rows)  # 2 rows of seq_len + 1 = 9 ids
        self.assertTrue(math.isfinite(loss) and loss > 0)
        self.assertEqual(bits(s.forward(flat, rows=2)), bits(loss))
        self.assertEqual(bits(s.forward(array.array("i", flat), 2, 8)), bits(loss))
        loss2, logits = s.forward_logits(rows)
        self.assertEqual(bits(loss2), bits(loss))
        self.assertIsInstance(logits, array.array)
        self.assertEqual(len(logits), 2 * 8 * 256)
        self.assertTrue(any(v != 0 for v in logits))
        out = array.array("f", bytes(4 * 2 * 8 * 256))
        _, same = s.forward_logits(flat, 2, 8, out=out)
        self.assertIs(same, out)
        self.assertEqual(out.tobytes(), logits.tobytes())
        # Sizes are checked before the library reads a byte.
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.forward(flat, rows=2, seq_len=9)
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.forward([])
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.forward_logits(flat, 2, 8, out=array.array("f", [0.0]))
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.forward([1, 2, 300, 4])  # outside [0, vocab_size): the library names it
        with self.assertRaises(TypeError):
            s.forward(b"abcd")  # type: ignore[arg-type]
        # forward does not train.
        self.assertEqual(s.sync().step, 0)

    @unittest.skipUnless(HAVE_NUMPY, "numpy is not installed")
    def test_forward_numpy(self) -> None:
        np = numpy
        s = self.own(session())
        toks = (np.arange(18, dtype=np.int64).reshape(2, 9) * 5 + 40) % 256
        loss, logits = s.forward_logits(toks, as_numpy=True)
        self.assertEqual(logits.shape, (2, 8, 256))
        self.assertEqual(logits.dtype, np.float32)
        self.assertEqual(bits(s.forward(toks.astype(np.int32))), bits(loss))
        self.assertEqual(bits(s.forward(toks.tolist())), bits(loss))
        out = np.zeros((2, 8, 256), dtype=np.float32)
        s.forward_logits(toks, out=out)
        self.assertTrue(np.array_equal(out, logits))
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.forward(np.array([[1.5, 2.0]]))
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.forward_logits(toks, out=np.zeros((2, 8, 256), dtype=np.float64))

    def test_step_tokens(self) -> None:
        s = self.own(session())
        n = 4 * 33  # batch_size * (seq_len + 1), grad_accum 1
        toks = [(i * 13) % 256 for i in range(n)]
        r = s.step_tokens(toks)
        self.assertEqual(r.step, 1)
        self.assertTrue(math.isfinite(r.loss))
        with self.assertRaises(trainrt.InvalidArgumentError) as cm:
            s.step_tokens(toks[:-1])
        self.assertTrue(cm.exception.message)
        self.assertEqual(s.sync().step, 1)

    def test_step_masked(self) -> None:
        rows, T = 4, 32  # batch_size, seq_len (grad_accum 1)
        toks = [[(r * 33 + t) * 13 % 256 for t in range(T + 1)] for r in range(rows)]
        # A mask of all ones is step_tokens bit for bit.
        a, b = self.own(session()), self.own(session())
        ra, rb = a.step_tokens(toks), b.step_masked(toks, [[True] * T] * rows)
        self.assertEqual(bits(ra.loss), bits(rb.loss))
        self.assertEqual(bits(ra.grad_norm), bits(rb.grad_norm))
        # A masked target's id changes nothing (the last target of a row is no input).
        mask = [[t % 4 != 1 and t != T - 1 for t in range(T)] for _ in range(rows)]
        other = [row[:-1] + [(row[-1] + 7) % 256] for row in toks]
        c, d = self.own(session()), self.own(session())
        rc = c.step_masked(toks, mask, positions=[list(range(T))] * rows)
        rd = d.step_masked(other, mask)
        self.assertEqual(bits(rc.loss), bits(rd.loss))
        self.assertEqual(bits(rc.grad_norm), bits(rd.grad_norm))
        self.assertNotEqual(rc.loss, ra.loss)
        self.assertEqual(rc.tokens, rows * T)  # tokens processed, counted or not
        if HAVE_NUMPY:
            e = self.own(session())
            np = numpy
            re = e.step_masked(np.array(toks, dtype=np.int64), np.array(mask))
            self.assertEqual(bits(re.loss), bits(rc.loss))
        # Refused, nothing changed: a mask counting nothing, wrong lengths, a row not from 0.
        with self.assertRaises(trainrt.InvalidArgumentError) as cm:
            c.step_masked(toks, [[0] * T] * rows)
        self.assertIn("ignored", cm.exception.message)
        with self.assertRaises(trainrt.InvalidArgumentError):
            c.step_masked(toks, [1] * (rows * T - 1))
        with self.assertRaises(trainrt.InvalidArgumentError):
            c.step_masked(toks, None, [1] + [0] * (rows * T - 1))
        with self.assertRaises(trainrt.InvalidArgumentError):
            c.step_masked(toks, [1] * (rows * T), [0] * (rows * T + 1))
        self.assertEqual(c.sync().step, 1)

    def test_sample_and_generate(self) -> None:
        s = self.own(session())
        s.train(4)
        prompt = list(b"ROMEO:")
        a = s.sample(prompt, 16, temperature=0.8, top_k=40, seed=5)
        b = s.sample(array.array("i", prompt), 16, temperature=0.8, top_k=40, seed=5)
        self.assertEqual(len(a), 16)
        self.assertEqual(a, b)
        self.assertTrue(all(0 <= t < 256 for t in a))
        self.assertEqual(s.sample(prompt, 0), [])
        g = s.sample(prompt, 8, temperature=0)  # greedy
        self.assertEqual(g, s.sample(prompt, 8, temperature=0, seed=99))
        text = s.generate("ROMEO:", 8, temperature=0)
        self.assertEqual(text, bytes(g).decode("utf-8", "replace"))
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.sample([999], 4)
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.sample([], 4)
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.sample(prompt, -1)
        self.assertEqual(s.sync().step, 4)  # training state unchanged

    def test_export(self) -> None:
        d = scratch()
        s = self.own(session())
        s.step()
        s.export(os.path.join(d, "hf"))
        self.assertTrue(os.path.isfile(os.path.join(d, "hf", "model.safetensors")))
        self.assertTrue(os.path.isfile(os.path.join(d, "hf", "config.json")))
        s.export(os.path.join(d, "hf16"), trainrt.DType.BF16)
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.export(os.path.join(d, "x"), "f8")
        with self.assertRaises(trainrt.InvalidArgumentError):
            s.export_adapter(os.path.join(d, "adapter"))  # no LoRA adapters in this run
        self.assertIn("seq_len", s.config_dump())

    def test_lora_run(self) -> None:
        d = scratch()
        s = self.own(session(lora__rank=2))
        infos = s.params()
        roles = {p.role for p in infos}
        self.assertIn(trainrt.ParamRole.LORA_A, roles)
        self.assertIn(trainrt.ParamRole.LORA_B, roles)
        for p in infos:
            self.assertEqual(p.trainable, p.role in (trainrt.ParamRole.LORA_A,
                                                     trainrt.ParamRole.LORA_B), p)
        s.step()
        s.export_adapter(os.path.join(d, "peft"))
        self.assertTrue(os.path.isfile(os.path.join(d, "peft", "adapter_config.json")))


class MisuseTest(TestCase):
    def test_use_after_close_and_double_close(self) -> None:
        s = session()
        s.step()
        md = s.metadata
        for _ in range(3):
            s.close()
        self.assertTrue(s.closed)
        calls = {
            "step": s.step, "sync": s.sync, "eval": s.eval, "metrics": s.metrics,
            "config_dump": s.config_dump, "train": lambda: s.train(1),
            "train_iter": lambda: s.train_iter(1), "save": s.save,
            "load": lambda: s.load("x"), "export": lambda: s.export("x"),
            "export_adapter": lambda: s.export_adapter("x"),
            "sample": lambda: s.sample([65], 1), "step_tokens": lambda: s.step_tokens([1]),
            "step_masked": lambda: s.step_masked([1]),
            "forward": lambda: s.forward([1, 2]), "request_stop": s.request_stop,
            "set_log": lambda: s.set_log(None), "params": s.params,
            "read_params": s.read_params, "write_params": lambda: s.write_params([1.0]),
            "metadata_get": lambda: md["k"], "metadata_len": lambda: len(md),
        }
        for name, call in calls.items():
            with self.assertRaises(trainrt.ClosedError, msg=name) as cm:
                call()
            self.assertIsInstance(cm.exception, ValueError)
            self.assertIsInstance(cm.exception, trainrt.Error)
        with session() as s2:
            s2.step()
        self.assertTrue(s2.closed)

    def test_close_from_another_thread_during_train(self) -> None:
        s = long_session()
        started = threading.Event()
        result = {}

        def run() -> None:
            try:
                result["stopped"] = s.train(0, lambda p: started.set())
            except BaseException as e:  # pragma: no cover
                result["error"] = e

        t = threading.Thread(target=run)
        t.start()
        self.assertTrue(started.wait(60))
        closer = threading.Thread(target=s.close)
        closer.start()
        closer.join(60)
        self.assertFalse(closer.is_alive(), "close did not return")
        t.join(60)
        self.assertEqual(result, {"stopped": True})
        with self.assertRaises(trainrt.ClosedError):
            s.step()

    def test_concurrent_close_calls(self) -> None:
        s = session()
        s.step()
        threads = [threading.Thread(target=s.close) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with self.assertRaises(trainrt.ClosedError):
            s.step()

    def test_concurrent_use_is_serialised(self) -> None:
        s = self.own(session())
        errors = []

        def worker() -> None:
            try:
                for _ in range(3):
                    s.step()
                    s.metrics()
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(s.metrics().step, 12)

    def test_call_from_inside_a_callback_is_busy_not_a_deadlock(self) -> None:
        s = self.own(session())
        seen = []

        def progress(p: trainrt.Progress) -> None:
            try:
                s.metrics()
            except trainrt.BusyError as e:
                seen.append(e.message)

        s.train(2, progress)
        self.assertEqual(len(seen), 2)
        self.assertIn("in use", seen[0])
        self.assertEqual(s.metrics().step, 2)

    def test_close_from_inside_a_callback_is_deferred(self) -> None:
        s = long_session()

        def progress(p: trainrt.Progress) -> None:
            if p.step == 2:
                s.close()  # takes effect when train() returns
                with self.assertRaises(trainrt.ClosedError):
                    s.metrics()

        stopped = s.train(0, progress)
        self.assertTrue(stopped)
        self.assertTrue(s.closed)
        with self.assertRaises(trainrt.ClosedError):
            s.step()

    def test_garbage_collected_session(self) -> None:
        s = session()
        s.step()
        del s  # freed by the finalizer; nothing to assert but no crash
        import gc
        gc.collect()
        time.sleep(0)


if __name__ == "__main__":
    unittest.main()
