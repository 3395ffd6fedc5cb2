"""Library-wide calls, error types, the prototypes against the header, struct layouts, loading,
and the per-call overhead of the binding."""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

import trainrt
from trainrt import _capi

from _support import TestCase, config_path, env, scratch


class LibraryTest(TestCase):
    def test_versions_and_features(self) -> None:
        v = trainrt.version()
        self.assertRegex(v, r"^\d+\.\d+\.\d+$")
        self.assertEqual(trainrt.abi_version(), trainrt.ABI_VERSION)
        f = trainrt.build_features()
        self.assertIsInstance(f, trainrt.Feature)
        self.assertIn(trainrt.Feature.CPU, f)
        self.assertTrue(os.path.basename(trainrt.library_path()).startswith("libtrainrt"))

    def test_status_strings(self) -> None:
        for st in trainrt.Status:
            self.assertTrue(trainrt.status_string(st), st)
        self.assertTrue(trainrt.status_string(-1000))  # never NULL, even for unknown codes

    def test_every_function_of_the_header_is_bound_and_exported(self) -> None:
        with open(os.path.join(env("TRAINRT_INCLUDE_DIR"), "trainrt", "trainrt.h")) as f:
            header = f.read()
        declared = set(re.findall(r"TRAINRT_API\s+[^;]*?\b(trainrt_\w+)\s*\(", header))
        self.assertGreater(len(declared), 60)
        self.assertEqual(sorted(declared - set(_capi.PROTOTYPES)), [],
                         "functions of the header without a prototype in _capi")
        self.assertEqual(sorted(set(_capi.PROTOTYPES) - declared), [],
                         "prototypes of functions the header does not declare")
        # A library older than the header fails here (and in the tests of those functions).
        self.assertEqual(trainrt.missing_functions(), [],
                         "the loaded libtrainrt lacks functions of the header")

    def test_error_types(self) -> None:
        with self.assertRaises(trainrt.ConfigError) as cm:
            trainrt.Config.from_string("[model]\nn_layer = -1")
        e = cm.exception
        self.assertIsInstance(e, trainrt.Error)
        self.assertEqual(e.status, trainrt.Status.ERR_CONFIG)
        self.assertEqual(e.status, -2)
        self.assertEqual(e.status_name, "TRAINRT_ERR_CONFIG")
        self.assertIn("n_layer", e.message)
        self.assertIn(e.message, str(e))
        self.assertIn(trainrt.status_string(-2), str(e))
        # Each status has its class, all deriving from trainrt.Error.
        for st in trainrt.Status:
            if st < 0:
                cls = trainrt.errors.error_class(st)
                self.assertTrue(issubclass(cls, trainrt.Error))
                self.assertEqual(cls.default_status, st)
        self.assertTrue(issubclass(trainrt.InvalidArgumentError, ValueError))
        self.assertTrue(issubclass(trainrt.ClosedError, ValueError))
        self.assertTrue(issubclass(trainrt.IoError, OSError))
        # Errors pickle (multiprocessing hands them between processes).
        import pickle
        e2 = pickle.loads(pickle.dumps(e))
        self.assertEqual((type(e2), e2.status, e2.message), (type(e), e.status, e.message))

    def test_io_error(self) -> None:
        with self.assertRaises(trainrt.IoError) as cm:
            trainrt.Config.from_file(os.path.join(scratch(), "missing.toml"))
        self.assertIn("missing.toml", cm.exception.message)

    def test_struct_layouts(self) -> None:
        # The sizes C gives them (tests/header_check/header_cxx.cpp, bindings/README.md).
        want = {"trainrt_step_result": 64, "trainrt_metrics": 128, "trainrt_progress": 96,
                "trainrt_sample_options": 48, "trainrt_model_info": 64,
                "trainrt_param_info": 72, "trainrt_prepare_options": 88,
                "trainrt_prepare_result": 88}
        for name, size in want.items():
            cls, declared = _capi.STRUCT_SIZES[name]
            self.assertEqual(ctypes.sizeof(cls), size, name)
            self.assertEqual(declared, size, name)
        for name, (cls, size) in _capi.STRUCT_SIZES.items():
            self.assertEqual(ctypes.sizeof(cls), size, name)
        m = _capi.Metrics
        self.assertEqual(m.last_val_loss.offset, 64)  # version-1 fields never move
        self.assertEqual(m.loss_scale.offset, 88)
        self.assertEqual(m.model_flops_per_token.offset, 96)
        self.assertEqual(m.mfu.offset, 112)
        self.assertEqual(m.world_size.offset, 124)
        self.assertEqual(_capi.StepResult.loss.offset, 16)
        self.assertEqual(_capi.SampleOptions.seed.offset, 24)
        self.assertEqual(_capi.SampleOptions.stop_ids.offset, 32)  # version 2 appends
        self.assertEqual(_capi.PrepareOptions.chat.offset, 64)
        self.assertEqual(_capi.PrepareResult.examples.offset, 64)
        self.assertEqual(_capi.ModelInfo.bytes_total.offset, 48)
        self.assertEqual(_capi.ModelInfo.trainable_parameters.offset, 56)
        self.assertEqual(_capi.ParamInfo.numel.offset, 48)
        self.assertEqual(_capi.ParamInfo.trainable.offset, 68)

    def test_struct_layouts_match_the_c_compiler(self) -> None:
        """Every field's offset and the size of every struct, as a C compiler lays them out
        from the header (skipped without a C compiler)."""
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            self.skipTest("no C compiler")
        lines = []
        for name, (cls, _) in _capi.STRUCT_SIZES.items():
            lines.append('    printf("%s %%zu\\n", sizeof(%s));' % (name, name))
            for field, _t in cls._fields_:
                lines.append('    printf("%s.%s %%zu\\n", offsetof(%s, %s));'
                             % (name, field, name, field))
        src = ("#include <stddef.h>\n#include <stdio.h>\n#include <trainrt/trainrt.h>\n"
               "int main(void) {\n%s\n    return 0;\n}\n" % "\n".join(lines))
        d = scratch()
        with open(os.path.join(d, "layout.c"), "w") as f:
            f.write(src)
        exe = os.path.join(d, "layout")
        subprocess.run([cc, "-std=c99", "-I", env("TRAINRT_INCLUDE_DIR"),
                        os.path.join(d, "layout.c"), "-o", exe], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        c_layout = dict(line.rsplit(" ", 1) for line in out.splitlines())
        for name, (cls, _) in _capi.STRUCT_SIZES.items():
            self.assertEqual(int(c_layout[name]), ctypes.sizeof(cls), name)
            for field, _t in cls._fields_:
                self.assertEqual(int(c_layout["%s.%s" % (name, field)]),
                                 getattr(cls, field).offset, "%s.%s" % (name, field))

    def test_default_log(self) -> None:
        lines = []
        trainrt.set_default_log(lambda level, msg: lines.append((level, msg)),
                                trainrt.LogLevel.DEBUG)
        try:
            with trainrt.Config.from_file(config_path()) as cfg:
                s = self.own(trainrt.Session(cfg))  # the backend is logged at INFO
                s.step()
        finally:
            trainrt.set_default_log(None)
        self.assertTrue(lines, "no log line reached the default sink")
        self.assertIsInstance(lines[0][0], trainrt.LogLevel)
        self.assertIsInstance(lines[0][1], str)
        with self.assertRaises(trainrt.InvalidArgumentError):
            trainrt.set_default_log(None, 99)

    def test_library_missing_is_reported_on_first_use(self) -> None:
        # A child process with nowhere to find the library: importing works, the first call
        # raises LibraryNotFoundError saying what to install or set.
        code = ("import trainrt\n"
                "try:\n"
                "    trainrt.version()\n"
                "except trainrt.LibraryNotFoundError as e:\n"
                "    assert isinstance(e, trainrt.Error) and isinstance(e, OSError)\n"
                "    assert 'TRAINRT_LIB_DIR' in str(e), str(e)\n"
                "    print('missing')\n"
                "else:\n"
                "    print('found', trainrt.library_path())\n")
        child_env = dict(os.environ, TRAINRT_LIB_DIR="/nonexistent", LD_LIBRARY_PATH="")
        child_env.pop("TRAINRT_LIB", None)
        out = subprocess.run([sys.executable, "-c", code], env=child_env, check=True,
                             capture_output=True, text=True).stdout.split()
        if out[0] == "found":  # an installed libtrainrt on the system's path
            self.assertNotIn("/nonexistent", out[1])
        else:
            self.assertEqual(out, ["missing"])

    def test_works_without_numpy(self) -> None:
        # numpy is optional: with it hidden, everything but as_numpy works.
        code = ("import sys\nsys.modules['numpy'] = None\n"
                "import trainrt, array\n"
                "s = trainrt.Session(sys.argv[1])\n"
                "r = s.step()\n"
                "w = s.read_params()\n"
                "assert isinstance(w, array.array) and w.typecode == 'f'\n"
                "loss, logits = s.forward_logits([1, 2, 3, 4, 5])\n"
                "assert isinstance(logits, array.array) and len(logits) == 4 * 256\n"
                "try:\n"
                "    s.read_params(as_numpy=True)\n"
                "except ImportError:\n"
                "    print('ok')\n"
                "s.close()\n")
        out = subprocess.run([sys.executable, "-c", code, config_path()], check=True,
                             capture_output=True, text=True).stdout
        self.assertEqual(out.strip(), "ok")


class OverheadTest(TestCase):
    def test_per_call_overhead(self) -> None:
        """Per-call cost of the binding (lock, argument conversion, error check, result
        record) next to the bare ctypes call. Printed, never asserted."""
        n = 5000
        cfg = self.own(trainrt.Config.from_file(config_path()))
        s = self.own(trainrt.Session(cfg))
        C = _capi.C
        h_cfg = cfg._guard.handle
        h_s = s._guard.handle
        key = b"train.batch_size"
        out = ctypes.c_int64()
        ref = ctypes.byref(out)

        def per_call_ns(fn) -> float:  # type: ignore[no-untyped-def]
            for _ in range(n // 10):
                fn()
            t = time.perf_counter()
            for _ in range(n):
                fn()
            return (time.perf_counter() - t) / n * 1e9

        raw_get = per_call_ns(lambda: C.trainrt_config_get_int(ref, h_cfg, key))
        get = per_call_ns(lambda: cfg.get_int("train.batch_size"))
        m = _capi.new_struct(_capi.Metrics, _capi.METRICS_VERSION)
        mref = ctypes.byref(m)
        raw_metrics = per_call_ns(lambda: C.trainrt_session_metrics(mref, h_s))
        metrics = per_call_ns(s.metrics)
        r = _capi.new_struct(_capi.StepResult, _capi.STEP_RESULT_VERSION)
        rref = ctypes.byref(r)
        raw_sync = per_call_ns(lambda: C.trainrt_session_sync(rref, h_s))
        sync = per_call_ns(s.sync)
        stop = per_call_ns(s.request_stop)
        version = per_call_ns(trainrt.version)
        print("\noverhead: config.get_int raw ctypes %.0f ns, binding %.0f ns (+%.0f ns); "
              "session.sync raw ctypes %.0f ns, binding %.0f ns (+%.0f ns); "
              "session.metrics raw ctypes %.0f ns, binding %.0f ns (+%.0f ns); "
              "request_stop %.0f ns; version() %.0f ns"
              % (raw_get, get, get - raw_get, raw_sync, sync, sync - raw_sync,
                 raw_metrics, metrics, metrics - raw_metrics, stop, version))
        sys.stdout.flush()


if __name__ == "__main__":
    unittest.main()
