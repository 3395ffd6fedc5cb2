"""ctypes trampolines for the library's callbacks, and the process-exit clean-up.

Rules (docs/C_API.md, "The caller's contract"): a callback must never unwind through the
library, and it must stay valid while C holds it. So every trampoline catches every exception
(log sinks: reported on stderr and dropped; progress callbacks: stored, training stopped, and
re-raised by the Python call once C has returned), and the ctypes function objects are kept
referenced by the Python object that installed them (a Config, a Session, this module for the
process default) for as long as C may call them.
"""
from __future__ import annotations

import atexit
import sys
import threading
import traceback
import weakref
from typing import Any, Callable, List, Optional

from ._capi import LOG_FN, C
from ._types import LogLevel

LogFn = Callable[[LogLevel, str], Any]


def report_exception(where: str) -> None:
    """Print the exception being handled to stderr (it cannot propagate through C)."""
    try:
        err = sys.stderr
        if err is None:
            return
        err.write("trainrt: exception in %s (ignored: it cannot propagate through C):\n" % where)
        traceback.print_exc(file=err)
    except Exception:  # pragma: no cover - stderr itself is broken
        pass


def _level(level: int) -> Any:
    try:
        return LogLevel(level)
    except ValueError:
        return level


def make_log_trampoline(fn: LogFn) -> Any:
    """A ``trainrt_log_fn`` calling ``fn(level, message)``.

    An exception in ``fn`` is printed to stderr and dropped; a KeyboardInterrupt is handed back
    to the main thread (as if Ctrl-C arrived again once the library call returns).
    """
    if not callable(fn):
        raise TypeError("a log callback must be callable, not %s" % type(fn).__name__)

    def trampoline(level: int, message: Optional[bytes], payload: Any) -> None:
        try:
            fn(_level(level), message.decode("utf-8", "replace") if message else "")
        except KeyboardInterrupt:
            import _thread
            _thread.interrupt_main()
        except BaseException:
            report_exception("a trainrt log callback")

    return LOG_FN(trampoline)


def null_log() -> Any:
    """A NULL ``trainrt_log_fn`` (the library's default sink)."""
    return LOG_FN()


# ------------------------------------------------------------------ process-wide state
_default_lock = threading.Lock()
# Every default sink ever installed stays referenced: another thread may be inside the
# previous one at the moment it is replaced.
_default_sinks: List[Any] = []
_python_default_installed = False


def set_default_log(fn: Optional[LogFn], min_level: int = LogLevel.WARN) -> None:
    """Set the process-wide log sink used by sessions that have none of their own: lines at
    ``min_level`` and above go to ``fn(level, message)``. ``fn=None`` restores the built-in
    sink, which writes those lines to stderr (initially at WARN and above)."""
    global _python_default_installed
    with _default_lock:
        tramp = make_log_trampoline(fn) if fn is not None else null_log()
        C.trainrt_log_set_default(tramp, None, int(min_level))
        if fn is not None:
            _default_sinks.append(tramp)
        _python_default_installed = fn is not None


# Objects the exit handler must close while the interpreter still runs (a C callback into a
# finalized interpreter would crash): live sessions, running train_iter workers.
live_sessions: "weakref.WeakSet[Any]" = weakref.WeakSet()
live_train_iters: "weakref.WeakSet[Any]" = weakref.WeakSet()


@atexit.register
def _at_exit() -> None:
    for it in list(live_train_iters):
        try:
            it.close()
        except BaseException:
            pass
    for s in list(live_sessions):
        try:
            s.close()
        except BaseException:
            pass
    if _python_default_installed:
        try:
            C.trainrt_log_set_default(null_log(), None, int(LogLevel.WARN))
        except BaseException:
            pass
