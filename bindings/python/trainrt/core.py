"""Library-wide calls: versions, build features, status texts, the default log sink."""
from __future__ import annotations

from typing import List

from ._callbacks import set_default_log
from ._capi import ABI_VERSION, C
from ._types import Feature

__all__ = ["version", "abi_version", "build_features", "status_string", "set_default_log",
           "library_path", "missing_functions", "ABI_VERSION"]


def version() -> str:
    """"MAJOR.MINOR.PATCH" of the library actually loaded."""
    return C.trainrt_version_string().decode("ascii", "replace")


def abi_version() -> int:
    """The ABI version of the library actually loaded (the binding requires
    :data:`ABI_VERSION`; loading another raises :class:`trainrt.VersionMismatchError`)."""
    return int(C.trainrt_abi_version())


def build_features() -> Feature:
    """What the loaded library was built with and found at run time (:class:`Feature`
    flags: ``Feature.CPU in trainrt.build_features()``)."""
    return Feature(int(C.trainrt_build_features()))


def status_string(status: int) -> str:
    """The library's English text for a status code ("invalid argument", ...)."""
    s = C.trainrt_status_string(int(status))
    return s.decode("utf-8", "replace") if s else ""


def library_path() -> str:
    """The path (or name) libtrainrt was loaded by."""
    return C.path


def missing_functions() -> List[str]:
    """Functions of the binding's header that the loaded library does not export (empty
    when it is as new as the binding; calling one raises
    :class:`trainrt.MissingSymbolError`)."""
    return C.missing
