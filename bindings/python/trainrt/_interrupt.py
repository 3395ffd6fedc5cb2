"""Ctrl-C during :meth:`Session.train`: a stop request for the library, a KeyboardInterrupt
for the caller.

Python runs a SIGINT handler only between bytecodes of the main thread, and while train()
runs that thread is inside the library: the handler would run at the next progress callback
(maybe never, in a step of a million micro-batches) — and at the entry of the ctypes
trampoline, before its ``try``, where a KeyboardInterrupt cannot propagate through C and
ctypes drops it ("Exception ignored on calling ctypes callback function"; issue 37).

So for the duration of the call, on the main thread and only while SIGINT has Python's
default handler (anyone else's handler is theirs: left alone), :class:`SigintStop`

- installs a handler of its own that only notes the interrupt (never raises where C is
  below), except while the user's progress callback runs, where it raises KeyboardInterrupt
  as Python would (the trampoline catches it, stops training and train() re-raises it);
- sets a wakeup fd (``signal.set_wakeup_fd``): Python's C-level handler writes the signal's
  number there at once, from whatever thread the kernel picked, and a watcher thread
  reading it calls ``trainrt_session_request_stop`` — the library then abandons the step in
  flight between micro-batches and returns. A wakeup fd set before (e.g. by an event loop)
  gets every byte forwarded and is put back afterwards, as is the previous handler.

The caller raises KeyboardInterrupt once the library has returned (:attr:`interrupted`).
"""
from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Optional, TypeVar

T = TypeVar("T")

_SENTINEL = 0  # no signal has number 0: the watcher's cue to end


class SigintStop:
    """``with SigintStop(request_stop) as guard: guard.call(fn)``: see the module's text."""

    def __init__(self, request_stop: Callable[[], None]) -> None:
        self._request_stop = request_stop
        #: A SIGINT arrived while installed.
        self.interrupted = False
        #: The user's Python code runs (a progress callback): a SIGINT raises there at once.
        self.raise_now = False
        self._lock = threading.Lock()  # orders the watcher's requests with the call's end
        self._in_call = False
        self._installed = False
        self._previous: Any = None
        self._old_fd = -1
        self._fds: Optional[tuple] = None
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------------ installing
    def __enter__(self) -> "SigintStop":
        if threading.current_thread() is not threading.main_thread():
            return self  # signals are the main thread's; a KeyboardInterrupt never lands here
        try:
            if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
                return self  # SIG_IGN, SIG_DFL or the application's own handler: respected
        except (ValueError, OSError):  # pragma: no cover - no signal support here
            return self
        r, w = os.pipe()
        try:
            os.set_blocking(w, False)  # set_wakeup_fd requires it
            self._old_fd = signal.set_wakeup_fd(w)
            try:
                self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            except BaseException:
                signal.set_wakeup_fd(self._old_fd)
                raise
        except BaseException as e:
            os.close(r)
            os.close(w)
            # Not possible here (not the main interpreter): Ctrl-C stays as it was. Anything
            # else (a KeyboardInterrupt before ours was in) is the caller's.
            if isinstance(e, (ValueError, OSError)):
                return self
            raise
        self._fds = (r, w)
        self._installed = True
        self._thread = threading.Thread(target=self._watch, name="trainrt-sigint", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._installed:
            return
        self._installed = False
        assert self._fds is not None
        r, w = self._fds
        try:
            signal.set_wakeup_fd(self._old_fd)
            signal.signal(signal.SIGINT, self._previous)
        finally:
            try:
                os.write(w, bytes([_SENTINEL]))
            except OSError:  # pragma: no cover - a full pipe: the watcher is reading anyway
                pass
            if self._thread is not None:
                self._thread.join()
            os.close(r)
            os.close(w)

    # ------------------------------------------------------------------ the call
    def call(self, fn: Callable[[], T]) -> T:
        """Runs ``fn`` (the library call); the watcher's stop requests go to it only while it
        runs, so no request outlives it to stop the next one. (A request can still land in
        the instant between the library's return and this function's: that one stops the
        next train() at once.)"""
        with self._lock:
            self._in_call = True
        try:
            return fn()
        finally:
            with self._lock:
                self._in_call = False

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.interrupted = True
        if self.raise_now:
            raise KeyboardInterrupt

    def _watch(self) -> None:
        assert self._fds is not None
        r = self._fds[0]
        while True:
            try:
                data = os.read(r, 64)
            except OSError:  # pragma: no cover
                return
            if not data:  # pragma: no cover
                return
            signals = bytes(b for b in data if b != _SENTINEL)
            if signal.SIGINT in signals:
                with self._lock:
                    if self._in_call:
                        try:
                            self._request_stop()
                        except BaseException:  # pragma: no cover - closed meanwhile
                            pass
            if signals and self._old_fd >= 0:
                try:
                    os.write(self._old_fd, signals)
                except OSError:
                    pass
            if len(signals) != len(data):
                return

