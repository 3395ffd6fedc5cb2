"""Finding and loading the shared library libtrainrt.

Nothing is loaded at import time: ``import trainrt`` always works, and the first call that
needs the C library loads it (or raises :class:`trainrt.LibraryNotFoundError` saying what was
tried and what to install or set).

Search order:

1. ``$TRAINRT_LIB``: the path of the library file itself;
2. ``$TRAINRT_LIB_DIR``: a folder holding ``libtrainrt.so.0`` (or ``libtrainrt.so``);
3. the dynamic linker's own search (``LD_LIBRARY_PATH``, the ldconfig cache, the system
   folders) for ``libtrainrt.so.0``, the SONAME of ABI version 0;
4. :func:`ctypes.util.find_library` ``("trainrt")``.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import List, Optional, Tuple

#: The ABI version this binding speaks (TRAINRT_ABI_VERSION; the SONAME number).
ABI_VERSION = 0

_lock = threading.Lock()
_loaded: Optional[Tuple[ctypes.CDLL, str]] = None


def _file_names() -> List[str]:
    if sys.platform == "darwin":
        return ["libtrainrt.%d.dylib" % ABI_VERSION, "libtrainrt.dylib"]
    if sys.platform == "win32":
        return ["trainrt.dll", "libtrainrt.dll"]
    return ["libtrainrt.so.%d" % ABI_VERSION, "libtrainrt.so"]


def _candidates() -> List[str]:
    """Every path or name to try, in order."""
    out: List[str] = []
    lib = os.environ.get("TRAINRT_LIB")
    if lib:
        out.append(lib)
    lib_dir = os.environ.get("TRAINRT_LIB_DIR")
    if lib_dir:
        out.extend(os.path.join(lib_dir, name) for name in _file_names())
    out.append(_file_names()[0])  # the dynamic linker's search
    found = ctypes.util.find_library("trainrt")
    if found:
        out.append(found)
    return out


def load() -> Tuple[ctypes.CDLL, str]:
    """The loaded library and the path or name it was loaded by (loads it once)."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        tried: List[str] = []
        for cand in _candidates():
            if os.sep in cand and not os.path.exists(cand):
                tried.append("%s (no such file)" % cand)
                continue
            try:
                lib = ctypes.CDLL(cand)
            except OSError as e:
                tried.append("%s (%s)" % (cand, e))
                continue
            _loaded = (lib, cand)
            return _loaded
        from .errors import LibraryNotFoundError

        raise LibraryNotFoundError(
            "libtrainrt (the C library this package binds) was not found; tried: "
            + "; ".join(tried)
            + ". Install libtrainrt (e.g. the libtrainrt0 package, or `cmake --install` of a "
            "build), or set TRAINRT_LIB_DIR to the folder holding libtrainrt.so "
            "(TRAINRT_LIB to the file itself)."
        )


def loaded_path() -> Optional[str]:
    """The path or name the library was loaded by, or None when it is not loaded yet."""
    return _loaded[1] if _loaded is not None else None
