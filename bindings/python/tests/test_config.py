"""Configs: files, strings, set of Python values, getters, dump, model info, errors, threads."""
from __future__ import annotations

import math
import os
import pathlib
import threading
import unittest

import trainrt

from _support import TestCase, config_path, scratch


class ConfigTest(TestCase):
    def cfg(self) -> trainrt.Config:
        return self.own(trainrt.Config.from_file(config_path()))

    def test_getters(self) -> None:
        cfg = self.cfg()
        self.assertEqual(cfg.get_int("train.batch_size"), 4)
        self.assertEqual(cfg.get_float("optim.lr"), 0.003)
        self.assertEqual(cfg.get_float("train.batch_size"), 4.0)  # integers read as numbers
        self.assertEqual(cfg.get_string("data.sampler"), "random")
        self.assertEqual(cfg.get_string("train.batch_size"), "4")  # any key as TOML text
        with self.assertRaises(trainrt.ConfigError):
            cfg.get_bool("train.batch_size")
        with self.assertRaises(trainrt.ConfigError) as cm:
            cfg.get_int("train.no_such_key")
        self.assertIn("no_such_key", cm.exception.message)

    def test_set_python_values(self) -> None:
        cfg = self.cfg()
        cfg.set("train.steps", 10)
        self.assertEqual(cfg.get_int("train.steps"), 10)
        cfg.set("optim.lr", 1e-3)
        self.assertEqual(cfg.get_float("optim.lr"), 1e-3)
        cfg.set("optim.lr", 1)  # an int for a float key
        self.assertEqual(cfg.get_float("optim.lr"), 1.0)
        cfg.set("optim.betas", (0.9, 0.95))
        self.assertIn("0.95", cfg.get_string("optim.betas"))
        cfg.set("data.sampler", "sequential")
        self.assertEqual(cfg.get_string("data.sampler"), "sequential")
        d = scratch()
        cfg.set("train.out_dir", pathlib.Path(d) / 'odd "name" \\ é')
        self.assertEqual(cfg.get_string("train.out_dir"), os.path.join(d, 'odd "name" \\ é'))
        cfg.update({"train.steps": 12}, train__eval_batches=3)
        self.assertEqual((cfg.get_int("train.steps"), cfg.get_int("train.eval_batches")), (12, 3))
        cfg.set_toml("train.batch_size", '"auto"')
        self.assertEqual(cfg.get_int("train.batch_size"), 0)  # "auto" reads as 0
        # Booleans: find one in the dump and flip it.
        bool_key = None
        section = ""
        for line in cfg.dump().splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]")
            elif line.endswith("= false") or line.endswith("= true"):
                bool_key = "%s.%s" % (section, line.split("=")[0].strip())
                break
        self.assertIsNotNone(bool_key, "no boolean key in the dump")
        assert bool_key is not None
        before = cfg.get_bool(bool_key)
        try:
            cfg.set(bool_key, not before)
        except trainrt.ConfigError:
            pass  # a cross-key rule may refuse it; the value still went through as TOML
        else:
            self.assertEqual(cfg.get_bool(bool_key), not before)

    def test_set_refused_leaves_config_unchanged(self) -> None:
        cfg = self.cfg()
        with self.assertRaises(trainrt.ConfigError) as cm:
            cfg.set("train.batch_size", "four")
        self.assertEqual(cm.exception.status_name, "TRAINRT_ERR_CONFIG")
        self.assertIn("batch_size", cm.exception.message)
        with self.assertRaises(trainrt.ConfigError) as cm:
            cfg.set("train.batch_size", 4.0)  # integers are written without '.0'
        self.assertEqual(cfg.get_int("train.batch_size"), 4)
        with self.assertRaises(trainrt.ConfigError) as cm:
            cfg.set("optim.no_such_key", 1)
        self.assertIn("no_such_key", str(cm.exception))
        with self.assertRaises(trainrt.ConfigError):
            cfg.set("model.n_layer", -1)
        self.assertEqual(cfg.get_int("model.n_layer"), 2)
        with self.assertRaises(TypeError):
            cfg.set("train.steps", None)  # type: ignore[arg-type]
        with self.assertRaises(trainrt.InvalidArgumentError):
            cfg.set("train.steps\0x", 1)

    def test_bad_config_is_a_config_error_with_the_librarys_message(self) -> None:
        with self.assertRaises(trainrt.ConfigError) as cm:
            trainrt.Config.from_string("[model]\nn_layer = -1")
        e = cm.exception
        self.assertEqual(e.status, trainrt.Status.ERR_CONFIG)
        self.assertIn("n_layer", e.message)
        self.assertIn("-1", e.message)
        with self.assertRaises(trainrt.ConfigError):
            trainrt.Config.from_string("[model\nvocab_size = ")

    def test_toml_value(self) -> None:
        tv = trainrt.toml_value
        self.assertEqual(tv(True), "true")
        self.assertEqual(tv(3), "3")
        self.assertEqual(tv(0.1), "0.1")
        self.assertEqual(tv(1e-20), "1e-20")
        self.assertEqual(tv(float("inf")), "inf")
        self.assertEqual(tv(-math.inf), "-inf")
        self.assertEqual(tv(float("nan")), "nan")
        self.assertEqual(tv('a"b\\c\n\x01'), '"a\\"b\\\\c\\n\\u0001"')
        self.assertEqual(tv([1, "x"]), '[1, "x"]')
        self.assertEqual(tv({"a": 1, "b c": True}), '{a = 1, "b c" = true}')

    def test_dump_round_trip_and_model_info(self) -> None:
        cfg = self.cfg()
        cfg.set("optim.lr", 0.001)
        dump = cfg.dump()
        self.assertIn("batch_size", dump)
        self.assertGreater(len(dump), 200)
        c2 = self.own(trainrt.Config.from_string(dump, os.path.dirname(config_path())))
        self.assertEqual(c2.get_float("optim.lr"), 0.001)
        info = cfg.model_info()
        self.assertGreater(info.parameters, 0)
        self.assertEqual(info.trainable_parameters, info.parameters)
        self.assertGreaterEqual(info.bytes_total, info.bytes_parameters)
        self.assertGreater(info.flops_per_token, 6 * info.parameters - 1)
        summary = cfg.model_summary()
        self.assertTrue(summary.endswith("\n"))
        self.assertGreater(len(summary.splitlines()), 2)
        cfg.set_toml("train.batch_size", '"auto"')
        with self.assertRaises(trainrt.ConfigError):
            cfg.model_info()
        d = trainrt.Config()  # every default
        self.assertGreater(d.get_int("model.n_layer"), 0)
        d.close()

    def test_config_log_reaches_sessions_created_from_it(self) -> None:
        cfg = self.cfg()
        lines = []
        cfg.set_log(lambda level, msg: lines.append(msg), trainrt.LogLevel.DEBUG)
        s = self.own(trainrt.Session(cfg))
        self.assertTrue(lines, "no line at session creation (the backend is logged at INFO)")
        cfg.close()  # the session keeps its own reference to the sink
        n = len(lines)
        s.train(2)
        self.assertGreater(len(lines), n)
        cfg2 = self.cfg()
        with self.assertRaises(TypeError):
            cfg2.set_log(42, trainrt.LogLevel.INFO)  # type: ignore[arg-type]
        with self.assertRaises(trainrt.InvalidArgumentError):
            cfg2.set_log(print, 17)
        cfg2.set_log(None)

    def test_set_mpi_comm(self) -> None:
        cfg = self.cfg()
        cfg.set_mpi_comm(None)  # back to the default: always accepted
        with self.assertRaises(TypeError):
            cfg.set_mpi_comm("comm")  # type: ignore[arg-type]

    def test_close(self) -> None:
        cfg = trainrt.Config.from_file(config_path())
        cfg.close()
        cfg.close()
        self.assertTrue(cfg.closed)
        for call in (lambda: cfg.get_int("train.steps"), lambda: cfg.set("train.steps", 1),
                     cfg.dump, cfg.model_info, lambda: trainrt.Session(cfg)):
            with self.assertRaises(trainrt.ClosedError):
                call()
        with self.assertRaises(ValueError):
            cfg.dump()
        with trainrt.Config() as c:
            pass
        self.assertTrue(c.closed)

    def test_error_messages_are_per_thread(self) -> None:
        # The message is read on the failing call's thread: each thread sees its own key.
        errors = []

        def worker(g: int) -> None:
            try:
                with trainrt.Config() as c:
                    key = "train.bogus_%d" % g
                    for _ in range(100):
                        try:
                            c.set(key, 1)
                        except trainrt.ConfigError as e:
                            if key not in e.message:
                                errors.append("thread %d got %r" % (g, e.message))
                                return
                        else:
                            errors.append("thread %d: set succeeded" % g)
                            return
            except BaseException as e:  # pragma: no cover
                errors.append(repr(e))

        threads = [threading.Thread(target=worker, args=(g,)) for g in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_shared_config_between_threads(self) -> None:
        # Calls are serialised by the binding: no BUSY from concurrent getters.
        cfg = self.cfg()
        errors = []

        def worker() -> None:
            try:
                for _ in range(300):
                    cfg.get_int("train.batch_size")
                    cfg.dump()
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main()
