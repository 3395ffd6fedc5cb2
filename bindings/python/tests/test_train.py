"""train() with progress callbacks, request_stop from another thread, train_iter, logs."""
from __future__ import annotations

import threading
import time
import unittest

import trainrt

from _support import TestCase, bits, expected_bits, long_session, scratch, session


class Boom(Exception):
    pass


class TrainTest(TestCase):
    def test_progress_reproduces_the_losses(self) -> None:
        want = expected_bits()
        s = self.own(session())
        seen = []
        stopped = s.train(0, lambda p: seen.append(p))
        self.assertFalse(stopped)
        steps = [p for p in seen if p.kind == trainrt.ProgressKind.STEP]
        self.assertEqual([p.step for p in steps], list(range(1, len(want) + 1)))
        self.assertEqual([bits(p.loss) for p in steps], want)
        self.assertEqual(steps[-1].steps_total, len(want))
        self.assertIsInstance(steps[0], trainrt.Progress)
        self.assertGreater(steps[-1].tokens_total, 0)
        self.assertGreaterEqual(steps[-1].elapsed_s, 0)

    def test_callback_stops_training(self) -> None:
        s = self.own(long_session())
        self.assertTrue(s.train(0, lambda p: p.step >= 3))
        self.assertEqual(s.sync().step, 3)
        # A finished stop does not linger: the next train runs.
        self.assertFalse(s.train(2))
        self.assertEqual(s.sync().step, 5)

    def test_callback_exception_is_reraised_and_session_usable(self) -> None:
        s = self.own(long_session())

        def progress(p: trainrt.Progress) -> None:
            if p.step == 2:
                raise Boom("from the callback")

        try:
            s.train(0, progress)
        except Boom as e:
            self.assertEqual(str(e), "from the callback")
            # The traceback reaches into the callback that raised it.
            tb = e.__traceback__
            frames = []
            while tb is not None:
                frames.append(tb.tb_frame.f_code.co_name)
                tb = tb.tb_next
            self.assertIn("progress", frames)
        else:
            self.fail("train() did not re-raise the callback's exception")
        self.assertEqual(s.sync().step, 2)  # stopped right there
        r = s.step()
        self.assertEqual(r.step, 3)
        self.assertFalse(s.train(2, lambda p: None))
        self.assertEqual(s.sync().step, 5)

    def test_keyboard_interrupt_in_callback_stops_training(self) -> None:
        s = self.own(long_session())

        def progress(p: trainrt.Progress) -> None:
            raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            s.train(0, progress)
        self.assertEqual(s.sync().step, 1)

    def test_request_stop_from_another_thread(self) -> None:
        s = self.own(long_session())
        started = threading.Event()

        def stopper() -> None:
            started.wait(60)
            s.request_stop()

        t = threading.Thread(target=stopper)
        t.start()
        t0 = time.monotonic()
        stopped = s.train(0, lambda p: started.set())
        t.join()
        self.assertTrue(stopped)
        self.assertLess(time.monotonic() - t0, 60)
        self.assertGreaterEqual(s.sync().step, 1)
        s.step()  # usable afterwards

    def test_request_stop_before_train_stops_it_at_once(self) -> None:
        s = self.own(long_session())
        s.request_stop()
        self.assertTrue(s.train(0))
        self.assertEqual(s.sync().step, 0)

    def test_request_stop_interrupts_eval_from_another_thread(self) -> None:
        s = self.own(session(train__eval_batches=400))
        timer = threading.Timer(0.2, s.request_stop)
        timer.start()
        try:
            s.eval()
        except trainrt.CancelledError:
            pass  # interrupted between batches
        finally:
            timer.join()


class TrainIterTest(TestCase):
    def test_full_run(self) -> None:
        want = expected_bits()
        s = self.own(session())
        it = s.train_iter()
        got = [bits(p.loss) for p in it if p.kind == trainrt.ProgressKind.STEP]
        self.assertEqual(got, want)
        self.assertFalse(it.stopped)
        self.assertTrue(it.done)
        self.assertEqual(s.sync().step, len(want))

    def test_break_stops_at_the_step_last_seen(self) -> None:
        s = self.own(long_session())
        for p in s.train_iter():
            if p.step == 3:
                break
        # The iterator was dropped: training stopped right there, the session is usable.
        self.assertEqual(s.sync().step, 3)
        self.assertEqual(s.step().step, 4)
        # A later train is not stopped by anything left over.
        self.assertFalse(s.train(2))
        self.assertEqual(s.sync().step, 6)

    def test_with_block_and_close(self) -> None:
        s = self.own(long_session())
        with s.train_iter() as it:
            first = next(it)
            self.assertEqual(first.step, 1)
            # The loop body may not call the session (training is paused inside its
            # callback): BUSY, not a dead-lock.
            with self.assertRaises(trainrt.BusyError):
                s.metrics()
            second = next(it)
            self.assertEqual(second.step, 2)
        self.assertTrue(it.stopped)
        self.assertEqual(s.sync().step, 2)
        # A closed iterator yields nothing more.
        self.assertEqual(list(it), [])

    def test_request_stop_inside_the_loop(self) -> None:
        s = self.own(long_session())
        it = s.train_iter()
        steps = []
        for p in it:
            steps.append(p.step)
            if p.step == 2:
                s.request_stop()  # training ends after the step in flight
        self.assertTrue(it.stopped)
        # Stopped after the step in flight: right after step 2, or after step 3 when the
        # library had begun it.
        self.assertIn(steps, ([1, 2], [1, 2, 3]))
        self.assertEqual(s.sync().step, steps[-1])

    def test_exception_in_the_loop_body(self) -> None:
        s = self.own(long_session())
        with self.assertRaises(Boom):
            for p in s.train_iter():
                if p.step == 2:
                    raise Boom()
        self.assertEqual(s.sync().step, 2)
        s.step()

    def test_error_of_the_run_is_raised_by_the_loop(self) -> None:
        s = self.own(session(data__train=""))
        with self.assertRaises(trainrt.ConfigError):
            for _ in s.train_iter():
                pass
        s2 = self.own(session())
        s2.forward([1, 2, 3])  # other sessions are unaffected

    def test_other_threads_wait_their_turn(self) -> None:
        s = self.own(session())
        result = {}

        def reader() -> None:
            result["step"] = s.metrics().step  # waits until the loop ends

        with s.train_iter(4) as it:
            next(it)
            t = threading.Thread(target=reader)
            t.start()
            for _ in it:
                pass
        t.join(60)
        self.assertEqual(result, {"step": 4})

    def test_close_session_inside_the_loop(self) -> None:
        s = long_session()
        n = 0
        for p in s.train_iter():
            n += 1
            if p.step == 2:
                s.close()
        self.assertEqual(n, 2)
        self.assertTrue(s.closed)

    def test_close_session_from_another_thread_while_iterating(self) -> None:
        s = long_session()
        it = s.train_iter()
        next(it)
        t = threading.Thread(target=s.close)
        t.start()
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertEqual(list(it), [])
        self.assertTrue(s.closed)

    def test_eval_progress(self) -> None:
        s = self.own(session(train__eval_every=2, train__steps=4))
        kinds = [(p.kind, p.step) for p in s.train_iter()]
        evals = [k for k in kinds if k[0] == trainrt.ProgressKind.EVAL]
        self.assertIn((trainrt.ProgressKind.EVAL, 2), evals)
        self.assertIn((trainrt.ProgressKind.EVAL, 4), evals)


class LogTest(TestCase):
    def test_session_log_and_exceptions_in_sinks(self) -> None:
        s = self.own(session())
        own = []
        s.set_log(lambda level, msg: own.append((level, msg)), trainrt.LogLevel.DEBUG)
        s.train(2)
        self.assertTrue(own, "no log lines from train with log_every = 1")
        self.assertIsInstance(own[0][0], trainrt.LogLevel)

        def bad(level: int, msg: str) -> None:
            raise Boom("from a log sink")

        # An exception in a sink is reported on stderr and dropped: training goes on.
        import io
        import contextlib
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            s.set_log(bad, trainrt.LogLevel.DEBUG)
            s.train(1)
        self.assertIn("Boom", err.getvalue())
        s.set_log(None)
        self.assertEqual(s.sync().step, 3)

    def test_log_given_at_creation(self) -> None:
        lines = []
        with trainrt.Session(_cfg_path(), log=lambda lv, m: lines.append(m),
                             log_level=trainrt.LogLevel.DEBUG) as s:
            s.train(1)  # a line per logged step (log_every = 1)
        self.assertTrue(lines)

    def test_metrics_jsonl_in_out_dir(self) -> None:
        d = scratch()
        s = self.own(session(train__out_dir=d))
        s.train(3)
        import os
        self.assertTrue(os.path.isfile(os.path.join(d, "metrics.jsonl")))


def _cfg_path() -> str:
    from _support import config_path
    return config_path()


if __name__ == "__main__":
    unittest.main()
