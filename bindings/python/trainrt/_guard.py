"""Serialises the calls on one C handle and makes close() safe from any thread.

libtrainrt refuses concurrent use of a config or session handle (TRAINRT_ERR_BUSY); the
binding instead makes other Python threads wait their turn. The lock is re-entrant per thread
so that a callback running inside a call (a log line, a progress report) that calls back into
the same handle reaches the library and gets its BUSY error instead of dead-locking. A close()
issued from such a callback is deferred: the handle is destroyed when the outermost call on it
returns, never under the library's feet.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from .errors import ClosedError

_get_ident = threading.get_ident


class HandleGuard:
    __slots__ = ("_lock", "_owner", "_depth", "handle", "closing", "_deferred", "_destroy",
                 "_what")

    def __init__(self, handle: int, destroy: Callable[[int], None], what: str) -> None:
        self._lock = threading.Lock()
        self._owner: Optional[int] = None
        self._depth = 0
        self.handle: Optional[int] = handle
        self.closing = False
        self._deferred = False
        self._destroy = destroy
        self._what = what

    def closed_error(self) -> ClosedError:
        return ClosedError("this %s is closed" % self._what)

    def owned_by_me(self) -> bool:
        return self._owner == _get_ident()

    def enter(self) -> int:
        """Take the handle for one call; returns it. Pair with exit()."""
        me = _get_ident()
        if self._owner == me:
            if self.closing or self.handle is None:
                raise self.closed_error()
            self._depth += 1
            return self.handle
        if self.closing:
            raise self.closed_error()
        self._lock.acquire()
        if self.handle is None or self.closing:
            self._lock.release()
            raise self.closed_error()
        self._owner = me
        self._depth = 1
        return self.handle

    def exit(self) -> None:
        self._depth -= 1
        if self._depth:
            return
        self._owner = None
        try:
            if self._deferred:
                self._deferred = False
                self._destroy_now()
        finally:
            self._lock.release()

    def _destroy_now(self) -> None:
        h, self.handle = self.handle, None
        if h is not None:
            self._destroy(h)

    def close(self, before_wait: Optional[Callable[[], Any]] = None) -> None:
        """Mark closing (new calls fail), run ``before_wait`` (e.g. request a stop), then wait
        for the call in flight and destroy the handle. From inside a call on this handle (a
        callback on the same thread), the destroy is deferred until that call returns."""
        if self.closing or self.handle is None:
            return
        self.closing = True
        if before_wait is not None:
            before_wait()
        if self._owner == _get_ident():
            self._deferred = True
            return
        with self._lock:
            self._destroy_now()


class Closeable:
    """The lifecycle every handle class shares: a context manager that closes on exit, a
    finalizer that closes a forgotten handle, and a repr saying whether it is closed. The
    class provides ``close()`` and the ``closed`` property."""

    closed: bool

    def close(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __enter__(self: Any) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return "<trainrt.%s%s>" % (type(self).__name__, " closed" if self.closed else "")
