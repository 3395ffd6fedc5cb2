"""Ctrl-C during Session.train(), with a real SIGINT sent to a child interpreter (issue 37: it
landed before the ctypes trampoline's ``try``, ctypes printed "Exception ignored" and train()
returned normally). The child must end with KeyboardInterrupt raised by train(), with the
session usable, SIGINT's handler and the wakeup fd as they were; nothing is timed (a generous
guard kills a child that hangs, and the test then fails)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import unittest

from _support import TestCase, scratch

CHILD = r'''
import os, signal, sys, traceback
import trainrt

mode, out_dir = sys.argv[1], sys.argv[2]
cfg = trainrt.Config.from_file(os.environ["TRAINRT_TEST_CONFIG"])
cfg.update(train__steps=1000000, runtime__log_every=1, train__eval_every=0)
cfg.set("train.out_dir", out_dir)
# Steps long enough that the signal lands while the library runs one, not in Python code;
# mid_step: a step of 2^20 micro-batches, which only a stop inside it ends.
cfg.set("train.grad_accum", 200 if mode == "progress" else 1 << 20)


def log(level, message):
    if message.startswith("train: steps "):  # inside train(): its handler is in
        print("TRAINING", flush=True)


cfg.set_log(log)
s = trainrt.Session(cfg)


def progress(p):
    if p.step == 1:
        print("PROGRESS", flush=True)


try:
    if mode == "iter":  # the worker trains; the loop waits in next()
        with s.train_iter() as it:
            for p in it:
                pass
    else:
        s.train(0, progress)
except KeyboardInterrupt as e:
    names = [f.name for f in traceback.extract_tb(e.__traceback__)]
    print("KeyboardInterrupt through", ",".join(names), flush=True)
else:
    print("train() returned", flush=True)
    sys.exit(3)
assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "handler not restored"
assert signal.set_wakeup_fd(-1) == -1, "wakeup fd not restored"
step = s.metrics().step
print("STEP", step, flush=True)
if mode == "progress":
    assert s.step().step == step + 1  # usable: trains on
print("SAVED", os.path.basename(s.save()), flush=True)
s.close()
print("OK", flush=True)
'''


class KeyboardInterruptTest(TestCase):
    def run_child(self, mode: str, marker: str, raised_in: str = "train") -> str:
        folder = scratch("py-sigint-")
        script = os.path.join(folder, "child.py")
        with open(script, "w") as f:
            f.write(CHILD)
        err_path = os.path.join(folder, "stderr.txt")
        with open(err_path, "w") as err:
            proc = subprocess.Popen([sys.executable, script, mode, os.path.join(folder, "out")],
                                    stdout=subprocess.PIPE, stderr=err, text=True)
        guard = threading.Timer(240, proc.kill)  # a hang fails the test, it never waits on it
        guard.start()
        try:
            lines = []
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                if line.strip() == marker:
                    proc.send_signal(signal.SIGINT)
                    break
            rest, _ = proc.communicate()
            lines.append(rest)
        finally:
            guard.cancel()
        out = "".join(lines)
        with open(err_path) as f:
            err_text = f.read()
        report = "child stdout:\n%s\nchild stderr:\n%s" % (out, err_text)
        self.assertIn(marker, out, report)
        self.assertEqual(proc.returncode, 0, report)
        self.assertNotIn("Exception ignored", err_text, report)
        self.assertIn("KeyboardInterrupt through", out, report)
        through = out.split("KeyboardInterrupt through ", 1)[1].split("\n", 1)[0].split(",")
        self.assertIn(raised_in, through, report)
        self.assertIn("OK", out.split(), report)
        return out

    def test_sigint_after_the_first_progress_raises_from_train(self) -> None:
        out = self.run_child("progress", "PROGRESS")
        step = int(out.split("STEP ", 1)[1].split()[0])
        self.assertGreaterEqual(step, 1)
        self.assertIn("SAVED step_%08d" % (step + 1), out)

    def test_sigint_inside_a_step_of_a_million_micro_batches(self) -> None:
        # No progress callback ever runs: the stop must come from the signal itself, and the
        # step is abandoned (nothing completed; the checkpoint is of step 0).
        out = self.run_child("mid_step", "TRAINING")
        self.assertIn("STEP 0", out)
        self.assertIn("SAVED step_00000000", out)

    def test_sigint_in_a_train_iter_loop_abandons_the_step(self) -> None:
        # KeyboardInterrupt in the loop (Python's default handler: the loop waits in next());
        # leaving the with-block stops the worker's step of 2^20 micro-batches mid-way.
        out = self.run_child("iter", "TRAINING", raised_in="__next__")
        self.assertIn("STEP 0", out)
        self.assertIn("SAVED step_00000000", out)


if __name__ == "__main__":
    unittest.main()
