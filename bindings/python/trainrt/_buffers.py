"""Turning Python data into the int32 / float32 buffers the C API reads, and back.

numpy is optional: numpy arrays are passed without a copy when they already are contiguous
arrays of the right type; ``array.array`` ('i' with 4-byte items, 'f') likewise. Anything
else (lists, tuples, nested lists, memoryviews, arrays of other types) is converted.
"""
from __future__ import annotations

import array
import itertools
from typing import Any, Iterable, Optional, Tuple

from .errors import InvalidArgumentError

_numpy: Any = None
_numpy_checked = False

INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def numpy() -> Any:
    """The numpy module, or None when it is not installed (imported on first need)."""
    global _numpy, _numpy_checked
    if not _numpy_checked:
        try:
            import numpy as np
            _numpy = np
        except ImportError:
            _numpy = None
        _numpy_checked = True
    return _numpy


def require_numpy() -> Any:
    np = numpy()
    if np is None:
        raise ModuleNotFoundError("numpy is not installed: as_numpy=True needs it (without it "
                                  "the binding returns array.array('f'))", name="numpy")
    return np


def _is_ndarray(x: Any) -> bool:
    np = _numpy if _numpy_checked else (numpy() if type(x).__module__ == "numpy" else None)
    return np is not None and isinstance(x, np.ndarray)


def _reject_text(x: Any, what: str) -> None:
    if isinstance(x, (str, bytes, bytearray)):
        raise TypeError("%s must be numbers (a sequence, array.array, numpy array or "
                        "memoryview), not %s" % (what, type(x).__name__))


def _flatten(x: Iterable[Any]) -> Iterable[Any]:
    """Nested sequences (rows of ids, a 2-D list of weights) as one flat stream."""
    it = iter(x)
    try:
        first = next(it)
    except StopIteration:
        return iter(())
    if isinstance(first, (list, tuple)) or (hasattr(first, "__len__") and
                                            hasattr(first, "__iter__") and
                                            not isinstance(first, (str, bytes))):
        return itertools.chain.from_iterable(_flatten(row) for row in itertools.chain([first], it))
    return itertools.chain([first], it)


def int32_buffer(tokens: Any, what: str = "tokens") -> Tuple[int, int, Any]:
    """(address, count, owner) of int32 ids; ``owner`` must stay referenced during the call."""
    _reject_text(tokens, what)
    if _is_ndarray(tokens):
        np = _numpy
        arr = tokens
        if arr.dtype != np.int32:
            if arr.dtype.kind not in "iub":
                raise InvalidArgumentError("%s: integer ids expected, got a numpy array of %s"
                                           % (what, arr.dtype))
            if arr.size and (int(arr.min()) < INT32_MIN or int(arr.max()) > INT32_MAX):
                raise InvalidArgumentError("%s: ids outside the int32 range" % what)
            arr = arr.astype(np.int32)
        arr = np.ascontiguousarray(arr)
        return arr.ctypes.data, int(arr.size), arr
    if isinstance(tokens, array.array) and tokens.typecode in "il" and tokens.itemsize == 4:
        addr, n = tokens.buffer_info()
        return addr, n, tokens
    if isinstance(tokens, memoryview):
        tokens = tokens.tolist()
    try:
        arr = array.array("i", _flatten(tokens))
    except OverflowError:
        raise InvalidArgumentError("%s: ids outside the int32 range" % what) from None
    except TypeError as e:
        raise TypeError("%s must be integer ids: %s" % (what, e)) from None
    if arr.itemsize != 4:  # pragma: no cover - no such platform in sight
        raise RuntimeError("array('i') is not 32-bit here")
    addr, n = arr.buffer_info()
    return addr, n, arr


def mask_buffer(mask: Any, what: str = "loss_mask") -> Tuple[int, int, Any]:
    """(address, count, owner) of one byte per value, 1 where ``mask`` is true / non-zero
    (bools, 0/1 ints, a numpy array of any numeric or bool type, bytes)."""
    if isinstance(mask, str):
        raise TypeError("%s must be booleans or 0/1 numbers, not str" % what)
    if _is_ndarray(mask):
        np = _numpy
        arr = np.ascontiguousarray(mask != 0, dtype=np.uint8)
        return arr.ctypes.data, int(arr.size), arr
    if isinstance(mask, (bytes, bytearray)):
        values: Iterable[Any] = mask
    else:
        if isinstance(mask, memoryview):
            mask = mask.tolist()
        values = _flatten(mask)
    try:
        arr = array.array("B", (1 if v else 0 for v in values))
    except TypeError as e:
        raise TypeError("%s must be booleans or 0/1 numbers: %s" % (what, e)) from None
    addr, n = arr.buffer_info()
    return addr, n, arr


def float32_buffer(values: Any, what: str = "values") -> Tuple[int, int, Any]:
    """(address, count, owner) of float32 values (converted when they are not float32)."""
    _reject_text(values, what)
    if _is_ndarray(values):
        np = _numpy
        arr = np.ascontiguousarray(values, dtype=np.float32)
        return arr.ctypes.data, int(arr.size), arr
    if isinstance(values, array.array) and values.typecode == "f":
        addr, n = values.buffer_info()
        return addr, n, values
    if isinstance(values, memoryview) or _has_buffer(values):
        mv = memoryview(values)
        if mv.format in ("f", "<f", "=f") and mv.itemsize == 4 and mv.c_contiguous:
            arr = array.array("f")
            arr.frombytes(mv.cast("B"))
        else:
            arr = array.array("f", _flatten(mv.tolist()))
    else:
        try:
            arr = array.array("f", _flatten(values))
        except TypeError as e:
            raise TypeError("%s must be numbers: %s" % (what, e)) from None
    addr, n = arr.buffer_info()
    if n == 0:
        addr = 0
    return addr, n, arr


def _has_buffer(x: Any) -> bool:
    try:
        memoryview(x)
    except TypeError:
        return False
    return True


def new_float_array(n: int) -> array.array:
    """n zeroed float32 in an ``array.array('f')``."""
    return array.array("f", bytes(4 * n))


def out_float_buffer(out: Any, what: str = "out") -> Tuple[int, int]:
    """(address, capacity in floats) of a caller's writable float32 buffer: a C-contiguous
    writable numpy float32 array or an ``array.array('f')``."""
    if _is_ndarray(out):
        np = _numpy
        if out.dtype != np.float32 or not out.flags.c_contiguous or not out.flags.writeable:
            raise InvalidArgumentError("%s must be a writable C-contiguous float32 array" % what)
        return out.ctypes.data, int(out.size)
    if isinstance(out, array.array) and out.typecode == "f":
        return out.buffer_info()
    raise TypeError("%s must be a numpy float32 array or array.array('f'), not %s"
                    % (what, type(out).__name__))


def optional_name(name: Optional[str]) -> Optional[bytes]:
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError("name must be a str or None, not %s" % type(name).__name__)
    b = name.encode("utf-8")
    if b"\0" in b:
        raise InvalidArgumentError("name contains a NUL character")
    return b
