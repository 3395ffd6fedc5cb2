"""Status codes and the exceptions of the binding.

Every failed libtrainrt call raises a subclass of :class:`Error` carrying the status code and
the library's own message (``trainrt_last_error_message()``, read on the failing call's OS
thread right after the call returns: it is thread-local in the library).
"""
from __future__ import annotations

import enum
from typing import Dict, Optional, Type

__all__ = [
    "Status",
    "Error",
    "InvalidArgumentError",
    "ClosedError",
    "ConfigError",
    "IoError",
    "FormatError",
    "OutOfMemoryError",
    "DeviceError",
    "UnsupportedError",
    "MissingSymbolError",
    "LibraryNotFoundError",
    "BusyError",
    "CancelledError",
    "VersionMismatchError",
    "InternalError",
    "DeviceLostError",
    "NonFiniteError",
    "error_class",
]


class Status(enum.IntEnum):
    """``trainrt_status`` codes: 0 OK, negative = error, small positive = a non-error outcome.

    Codes are never renumbered; a library newer than this binding may return others (they
    still raise :class:`Error`, with ``status`` the plain int).
    """

    OK = 0
    STOPPED = 1  #: train() ended early on request (not an error)
    ERR_INVALID_ARGUMENT = -1
    ERR_CONFIG = -2
    ERR_IO = -3
    ERR_FORMAT = -4
    ERR_OUT_OF_MEMORY = -5
    ERR_DEVICE = -6
    ERR_UNSUPPORTED = -7
    ERR_BUSY = -8
    ERR_CANCELLED = -9
    ERR_VERSION_MISMATCH = -10
    ERR_INTERNAL = -11
    ERR_DEVICE_LOST = -12
    ERR_NON_FINITE = -13


# The library's own texts (trainrt_status_string) are used when it is loaded; these are for
# errors raised before it is (a missing library).
_FALLBACK_TEXT = {
    0: "ok",
    1: "stopped",
    -1: "invalid argument",
    -2: "config error",
    -3: "I/O error",
    -4: "format error",
    -5: "out of memory",
    -6: "device error",
    -7: "unsupported",
    -8: "busy",
    -9: "cancelled",
    -10: "version mismatch",
    -11: "internal error",
    -12: "device lost",
    -13: "non-finite value",
}


def status_name(status: int) -> str:
    """``"TRAINRT_ERR_CONFIG"`` for -2, ...; ``"TRAINRT_STATUS_<n>"`` for a code unknown here."""
    try:
        return "TRAINRT_" + Status(status).name
    except ValueError:
        return "TRAINRT_STATUS_%d" % status


class Error(Exception):
    """A failed libtrainrt call.

    Attributes:
        status: the ``trainrt_status`` code (an int; a :class:`Status` when known).
        status_name: its C name, e.g. ``"TRAINRT_ERR_CONFIG"``.
        message: the library's message for the failure (what, where, what to do); ``""`` if
            it gave none.
    """

    #: The status a subclass stands for (used when it is raised by the binding itself).
    default_status: int = Status.ERR_INTERNAL

    def __init__(self, message: str = "", status: Optional[int] = None,
                 status_text: Optional[str] = None) -> None:
        if status is None:
            status = self.default_status
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status: int = status
        self.status_name: str = status_name(status)
        self.message: str = message
        if status_text is None:
            status_text = _FALLBACK_TEXT.get(int(status), "status %d" % status)
        self.status_text: str = status_text
        super().__init__("%s: %s" % (status_text, message) if message else status_text)

    def __reduce__(self):  # picklable across processes
        return (type(self), (self.message, int(self.status), self.status_text))


class InvalidArgumentError(Error, ValueError):
    """TRAINRT_ERR_INVALID_ARGUMENT: a bad argument, size or use of the API."""

    default_status = Status.ERR_INVALID_ARGUMENT


class ClosedError(InvalidArgumentError):
    """A method of a Config, Session or Tokenizer that was closed (raised by the binding; the
    C handle is gone, so nothing reaches the library)."""


class ConfigError(Error):
    """TRAINRT_ERR_CONFIG: bad TOML, an unknown key, a wrong type or value."""

    default_status = Status.ERR_CONFIG


class IoError(Error, OSError):
    """TRAINRT_ERR_IO: a file could not be opened, read or written."""

    default_status = Status.ERR_IO


class FormatError(Error):
    """TRAINRT_ERR_FORMAT: a file is malformed, truncated or corrupt."""

    default_status = Status.ERR_FORMAT


class OutOfMemoryError(Error):
    """TRAINRT_ERR_OUT_OF_MEMORY."""

    default_status = Status.ERR_OUT_OF_MEMORY


class DeviceError(Error):
    """TRAINRT_ERR_DEVICE: the device failed."""

    default_status = Status.ERR_DEVICE


class DeviceLostError(DeviceError):
    """TRAINRT_ERR_DEVICE_LOST: sticky; every later call on the session fails."""

    default_status = Status.ERR_DEVICE_LOST


class UnsupportedError(Error):
    """TRAINRT_ERR_UNSUPPORTED: a valid request this build or machine cannot honour."""

    default_status = Status.ERR_UNSUPPORTED


class MissingSymbolError(UnsupportedError):
    """The loaded libtrainrt lacks a function this binding knows (it is older than the
    binding's header); raised by the binding when that function is called."""


class LibraryNotFoundError(Error, OSError):
    """libtrainrt could not be loaded (raised on first use; the message lists what was
    tried and what to install or set)."""

    default_status = Status.ERR_UNSUPPORTED


class BusyError(Error):
    """TRAINRT_ERR_BUSY: the handle is in use by another call (e.g. from inside one of its
    own callbacks, or inside a ``train_iter`` loop), or train.out_dir by another run."""

    default_status = Status.ERR_BUSY


class CancelledError(Error):
    """TRAINRT_ERR_CANCELLED: stopped on request (an eval interrupted by request_stop, a
    prepare_text whose progress callback asked to stop)."""

    default_status = Status.ERR_CANCELLED


class VersionMismatchError(Error):
    """TRAINRT_ERR_VERSION_MISMATCH: a newer file format, or a library of another ABI."""

    default_status = Status.ERR_VERSION_MISMATCH


class InternalError(Error):
    """TRAINRT_ERR_INTERNAL: a bug in libtrainrt; please report it."""

    default_status = Status.ERR_INTERNAL


class NonFiniteError(Error):
    """TRAINRT_ERR_NON_FINITE: NaN or infinity in weights read, written or saved, or a run
    that skipped train.max_skipped_steps in a row."""

    default_status = Status.ERR_NON_FINITE


_BY_STATUS: Dict[int, Type[Error]] = {
    Status.ERR_INVALID_ARGUMENT: InvalidArgumentError,
    Status.ERR_CONFIG: ConfigError,
    Status.ERR_IO: IoError,
    Status.ERR_FORMAT: FormatError,
    Status.ERR_OUT_OF_MEMORY: OutOfMemoryError,
    Status.ERR_DEVICE: DeviceError,
    Status.ERR_UNSUPPORTED: UnsupportedError,
    Status.ERR_BUSY: BusyError,
    Status.ERR_CANCELLED: CancelledError,
    Status.ERR_VERSION_MISMATCH: VersionMismatchError,
    Status.ERR_INTERNAL: InternalError,
    Status.ERR_DEVICE_LOST: DeviceLostError,
    Status.ERR_NON_FINITE: NonFiniteError,
}


def error_class(status: int) -> Type[Error]:
    """The exception class raised for a status (:class:`Error` for codes unknown here)."""
    return _BY_STATUS.get(status, Error)
