"""Run configurations (``trainrt_config``): a TOML document, validated on every change."""
from __future__ import annotations

import math
import numbers
import os
from ctypes import byref, c_double, c_int32, c_int64, c_void_p
from typing import Any, Mapping, Optional, Tuple, Union

from ._callbacks import LogFn, make_log_trampoline, null_log
from ._capi import C, ModelInfo as _CModelInfo, MODEL_INFO_VERSION, encode_path, encode_str, \
    get_string, new_struct
from ._guard import Closeable, HandleGuard
from ._types import LogLevel, ModelInfo

__all__ = ["Config", "toml_value", "PathLike"]

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
Value = Union[bool, int, float, str, "os.PathLike[str]", list, tuple, Mapping[str, Any]]


def _toml_string(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7F:
            out.append("\\u%04X" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_key(k: str) -> str:
    if k and all(c.isascii() and (c.isalnum() or c in "_-") for c in k):
        return k
    return _toml_string(k)


def toml_value(value: Value) -> str:
    """The TOML text of a Python value, as :meth:`Config.set` passes it to the library.

    ``bool`` -> ``true``/``false``; ``int`` -> decimal; ``float`` -> its shortest round-trip
    form (``nan``, ``inf``, ``-inf`` included; always with a ``.`` or an exponent, so
    integer keys refuse it, as the library does for ``4.0``); ``str`` and ``os.PathLike`` ->
    a quoted TOML string; lists and tuples -> arrays; mappings -> inline tables.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, os.PathLike):
        return _toml_string(os.fsdecode(os.fspath(value)))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join("%s = %s" % (_toml_key(str(k)), toml_value(v))
                               for k, v in value.items()) + "}"
    raise TypeError("cannot express %s as a TOML value (bool, int, float, str, path, list, "
                    "tuple or mapping)" % type(value).__name__)


class Config(Closeable):
    """A run configuration: a TOML document (docs/CONFIG.md for every key).

    Keys are dotted TOML paths: ``"optim.lr"``, ``"train.batch_size"``. Every change is
    validated; a refused change leaves the config as it was and raises
    :class:`trainrt.ConfigError` with the library's message.

    ``Config()`` has every default; see also :meth:`from_file`, :meth:`from_string`,
    :meth:`from_checkpoint`. A config may be shared between threads (calls are serialised).
    Close it when done (or use ``with``); a :class:`Session` keeps its own copy.
    """

    def __init__(self) -> None:
        out = c_void_p()
        C.trainrt_config_create(byref(out))
        self._init(out.value)

    def _init(self, handle: Optional[int]) -> None:
        assert handle
        self._guard = HandleGuard(handle, C.trainrt_config_destroy, "Config")
        self._log_cb: Any = None  # keeps the log trampoline C holds alive

    @classmethod
    def _wrap(cls, handle: Optional[int]) -> "Config":
        self = cls.__new__(cls)
        self._init(handle)
        return self

    @classmethod
    def from_file(cls, path: PathLike) -> "Config":
        """Read a TOML file; relative paths inside it resolve against the file's folder."""
        out = c_void_p()
        C.trainrt_config_from_file(byref(out), encode_path(path))
        return cls._wrap(out.value)

    @classmethod
    def from_string(cls, toml: str, base_dir: Optional[PathLike] = None) -> "Config":
        """Parse a TOML document; ``base_dir`` (None: the current directory) anchors relative
        paths."""
        out = c_void_p()
        C.trainrt_config_from_string(byref(out), encode_str(toml, "toml"),
                                     encode_path(base_dir, "base_dir") if base_dir is not None
                                     else None)
        return cls._wrap(out.value)

    @classmethod
    def from_checkpoint(cls, path: PathLike) -> "Config":
        """The run config a checkpoint (a checkpoint folder, or a folder whose ``latest`` names
        one) was trained with."""
        out = c_void_p()
        C.trainrt_config_from_checkpoint(byref(out), encode_path(path))
        return cls._wrap(out.value)

    # -------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Free the config. Idempotent, safe from any thread (waits for a call in flight);
        afterwards every method raises :class:`trainrt.ClosedError`."""
        guard = getattr(self, "_guard", None)
        if guard is not None:
            guard.close()

    @property
    def closed(self) -> bool:
        return self._guard.handle is None or self._guard.closing


    # -------------------------------------------------------------- values
    def set(self, key: str, value: Value) -> None:
        """Set one key from a Python value (converted by :func:`toml_value`):
        ``cfg.set("train.steps", 10)``, ``cfg.set("optim.betas", (0.9, 0.95))``,
        ``cfg.set("data.train", "shards/train.bin")``. On error the config is unchanged."""
        self.set_toml(key, toml_value(value))

    def set_toml(self, key: str, toml: str) -> None:
        """Set one key from TOML text exactly as the C API takes it: ``("optim.betas",
        "[0.9, 0.95]")``, ``("data.train", '"shards/train.bin"')``, ``("train.batch_size",
        '"auto"')``."""
        k, v = encode_str(key, "key"), encode_str(toml, "toml value")
        h = self._guard.enter()
        try:
            C.trainrt_config_set(h, k, v)
        finally:
            self._guard.exit()

    def update(self, values: Optional[Mapping[str, Value]] = None, **kwargs: Value) -> None:
        """:meth:`set` every pair of ``values`` (then of ``kwargs``, where ``__`` stands for
        ``.``: ``update(train__steps=10)``), in order; stops at the first refused one."""
        for k, v in (values or {}).items():
            self.set(k, v)
        for k, v in kwargs.items():
            self.set(k.replace("__", "."), v)

    def get_int(self, key: str) -> int:
        """An integer key's resolved value (defaults applied; ``train.batch_size = "auto"``
        reads as 0). A key of another type raises :class:`trainrt.ConfigError`."""
        k = encode_str(key, "key")
        out = c_int64()
        h = self._guard.enter()
        try:
            C.trainrt_config_get_int(byref(out), h, k)
        finally:
            self._guard.exit()
        return out.value

    def get_float(self, key: str) -> float:
        """A number key's resolved value (integers are converted)."""
        k = encode_str(key, "key")
        out = c_double()
        h = self._guard.enter()
        try:
            C.trainrt_config_get_double(byref(out), h, k)
        finally:
            self._guard.exit()
        return out.value

    def get_bool(self, key: str) -> bool:
        """A boolean key's resolved value."""
        k = encode_str(key, "key")
        out = c_int32()
        h = self._guard.enter()
        try:
            C.trainrt_config_get_bool(byref(out), h, k)
        finally:
            self._guard.exit()
        return bool(out.value)

    def get_string(self, key: str) -> str:
        """A string key's value, or any other key's value as its TOML text."""
        k = encode_str(key, "key")
        h = self._guard.enter()
        try:
            raw = get_string(C.trainrt_config_get_string, h, k)
        finally:
            self._guard.exit()
        return raw.decode("utf-8", "surrogateescape")

    def dump(self) -> str:
        """The whole resolved config as TOML (every key, defaults included)."""
        h = self._guard.enter()
        try:
            raw = get_string(C.trainrt_config_dump, h, initial=8192)
        finally:
            self._guard.exit()
        return raw.decode("utf-8", "surrogateescape")

    def model_info(self) -> ModelInfo:
        """What the config's model costs, computed without allocating it (parameters, FLOPs
        per token, bytes). ``train.batch_size = "auto"`` raises :class:`trainrt.ConfigError`
        (a session resolves it on its device)."""
        m = new_struct(_CModelInfo, MODEL_INFO_VERSION)
        h = self._guard.enter()
        try:
            C.trainrt_config_model_info(byref(m), h)
        finally:
            self._guard.exit()
        return ModelInfo(m.parameters, m.flops_per_token, m.bytes_parameters, m.bytes_optimizer,
                         m.bytes_activations, m.bytes_total, m.trainable_parameters)

    def model_summary(self) -> str:
        """A readable account of the model (what ``trainrt info`` prints): family, shape,
        parameters by part. The wording is for people and may change between versions."""
        h = self._guard.enter()
        try:
            raw = get_string(C.trainrt_config_model_summary, h, initial=4096)
        finally:
            self._guard.exit()
        return raw.decode("utf-8", "replace")

    # -------------------------------------------------------------- hooks
    def set_log(self, fn: Optional[LogFn], min_level: int = LogLevel.INFO) -> None:
        """Log sink of the sessions created from this config from now on (so their first
        lines reach it): ``fn(level: LogLevel, message: str)`` gets every line at
        ``min_level`` and above. ``fn=None``: the process default (:func:`set_default_log`).

        ``fn`` runs on the thread of the library call that logs, inside that call: keep it
        quick. Exceptions in it are printed to stderr and dropped.
        """
        tramp = make_log_trampoline(fn) if fn is not None else null_log()
        h = self._guard.enter()
        try:
            C.trainrt_config_set_log(h, tramp, None, int(min_level))
            self._log_cb = tramp if fn is not None else None
        finally:
            self._guard.exit()

    def set_mpi_comm(self, comm_address: Optional[int]) -> None:
        """Train the sessions created from this config with the ranks of a communicator of
        the host's own (data parallelism, docs/DISTRIBUTED.md).

        ``comm_address`` is the *address of* an ``MPI_Comm`` (a pointer to it) of the MPI
        libtrainrt-mpi was built against (Open MPI), e.g. from mpi4py:
        ``cfg.set_mpi_comm(MPI._addressof(comm))``. It is read during :class:`Session`
        creation only (the library duplicates the communicator there), so ``comm`` must stay
        alive until then. The host initialised MPI with MPI_THREAD_SERIALIZED or more.
        ``None`` restores the default (MPI_COMM_WORLD).
        """
        if comm_address is not None and not isinstance(comm_address, int):
            raise TypeError("comm_address must be an int (the address of an MPI_Comm) or None")
        h = self._guard.enter()
        try:
            C.trainrt_config_set_mpi_comm(h, comm_address)
        finally:
            self._guard.exit()

    # -------------------------------------------------------------- for Session
    def _create_session(self) -> Tuple[int, Any, int, int]:
        """Create a C session from this config: (handle, the log trampoline it may call,
        model.vocab_size, train.seq_len)."""
        out = c_void_p()
        h = self._guard.enter()
        try:
            vocab = c_int64()
            seq = c_int64()
            C.trainrt_config_get_int(byref(vocab), h, b"model.vocab_size")
            C.trainrt_config_get_int(byref(seq), h, b"train.seq_len")
            log_cb = self._log_cb
            C.trainrt_session_create(byref(out), h)
        finally:
            self._guard.exit()
        assert out.value
        return out.value, log_cb, vocab.value, seq.value
