"""The C API through ctypes: the structs shared with C and a prototype (argtypes, restype) for
every entry point of include/trainrt/trainrt.h.

``C`` loads the library on first attribute access. Every function returning a
``trainrt_status`` raises the matching :class:`trainrt.Error` when the status is negative
(its ``errcheck`` reads ``trainrt_last_error_message()`` on the same OS thread, right after
the call), and otherwise returns the status (0, or ``TRAINRT_STOPPED``). A function the loaded
library does not export is replaced by a stub raising :class:`trainrt.MissingSymbolError`.
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int32, c_int64,
                    c_size_t, c_uint32, c_uint64, c_void_p)
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _lib
from .errors import MissingSymbolError, VersionMismatchError, error_class

_load_lock = threading.Lock()

# ------------------------------------------------------------------ constants (the header's)
VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH = 0, 1, 0
ABI_VERSION = _lib.ABI_VERSION

STEP_RESULT_VERSION = 1
METRICS_VERSION = 4
PROGRESS_VERSION = 1
SAMPLE_OPTIONS_VERSION = 2
MODEL_INFO_VERSION = 2
PREPARE_OPTIONS_VERSION = 3
PREPARE_RESULT_VERSION = 3
TOKENIZER_TRAIN_OPTIONS_VERSION = 1
TOKENIZER_TRAIN_RESULT_VERSION = 1
PARAM_INFO_VERSION = 1
EVAL_RESULT_VERSION = 1

OK = 0
STOPPED = 1

LOSS_MASK_DEFAULT = 0
LOSS_MASK_ASSISTANT = 1
LOSS_MASK_COMPLETION = 2
LOSS_MASK_ALL = 3


# ------------------------------------------------------------------ structs
class StepResult(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("step", c_int64),
        ("loss", c_double),
        ("lr", c_double),
        ("grad_norm", c_double),
        ("tokens", c_int64),
        ("tokens_total", c_int64),
        ("ms", c_double),
    ]


class EvalResult(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("loss", c_double),
        ("perplexity", c_double),
        ("tokens", c_int64),
        ("windows", c_int64),
    ]


class Metrics(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("step", c_int64),
        ("tokens_total", c_int64),
        ("tokens_per_s", c_double),
        ("step_ms_p50", c_double),
        ("step_ms_p95", c_double),
        ("bytes_in_use", c_int64),
        ("last_loss", c_double),
        ("last_val_loss", c_double),
        # version 2
        ("bytes_reserved", c_int64),
        ("skipped_steps", c_int64),
        ("loss_scale", c_double),
        # version 3
        ("model_flops_per_token", c_double),
        ("peak_flops", c_double),
        ("mfu", c_double),
        # version 4
        ("rank", c_int32),
        ("world_size", c_int32),
    ]


class Progress(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("kind", c_int32),
        ("reserved", c_int32),
        ("step", c_int64),
        ("steps_total", c_int64),
        ("loss", c_double),
        ("lr", c_double),
        ("grad_norm", c_double),
        ("tokens_total", c_int64),
        ("ms", c_double),
        ("tokens_per_s", c_double),
        ("elapsed_s", c_double),
        ("eta_s", c_double),
    ]


class SampleOptions(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("temperature", c_double),
        ("top_k", c_int32),
        ("reserved", c_int32),
        ("seed", c_uint64),
        # version 2
        ("stop_ids", POINTER(c_int32)),
        ("n_stop_ids", c_size_t),
    ]


class ModelInfo(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("parameters", c_int64),
        ("flops_per_token", c_double),
        ("bytes_parameters", c_int64),
        ("bytes_optimizer", c_int64),
        ("bytes_activations", c_int64),
        ("bytes_total", c_int64),
        # version 2
        ("trainable_parameters", c_int64),
    ]


LOG_FN = CFUNCTYPE(None, c_int32, c_char_p, c_void_p)
PROGRESS_FN = CFUNCTYPE(c_int32, POINTER(Progress), c_void_p)
PREPARE_PROGRESS_FN = CFUNCTYPE(c_int32, c_int64, c_int64, c_void_p)


class PrepareOptions(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("tokenizer", c_char_p),
        ("jsonl_field", c_char_p),
        ("val_fraction", c_double),
        ("threads", c_int32),
        ("reserved", c_int32),
        ("progress", PREPARE_PROGRESS_FN),
        ("progress_payload", c_void_p),
        # version 2
        ("shard_tokens", c_int64),
        # version 3
        ("chat", c_int32),
        ("loss_mask", c_int32),
        ("chat_template", c_char_p),
        ("template_vars", c_char_p),
    ]


class PrepareResult(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("documents", c_int64),
        ("train_tokens", c_int64),
        ("val_tokens", c_int64),
        ("bytes", c_int64),
        ("token_bytes", c_int32),
        ("vocab_size", c_int32),
        ("eos_id", c_int32),
        ("reserved", c_int32),
        # version 2
        ("train_shards", c_int32),
        ("val_shards", c_int32),
        # version 3
        ("examples", c_int64),
        ("target_tokens", c_int64),
        ("per_turn", c_int64),
    ]


class TokenizerTrainOptions(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("vocab_size", c_int32),
        ("overwrite", c_int32),
        ("min_frequency", c_int64),
        ("special_tokens", POINTER(c_char_p)),
        ("n_special_tokens", c_size_t),
    ]


class TokenizerTrainResult(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("bytes", c_int64),
        ("pieces", c_int64),
        ("distinct_pieces", c_int64),
        ("vocab_size", c_int32),
        ("merges", c_int32),
    ]


class ParamInfo(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("version", c_uint32),
        ("role", c_int32),
        ("ndim", c_int32),
        ("shape", c_int64 * 4),
        ("numel", c_int64),
        ("offset", c_int64),
        ("layer", c_int32),
        ("trainable", c_int32),
    ]


#: The sizes C gives these structs (tests/header_check/header_cxx.cpp and the header).
STRUCT_SIZES: Dict[str, Tuple[type, int]] = {
    "trainrt_step_result": (StepResult, 64),
    "trainrt_metrics": (Metrics, 128),
    "trainrt_progress": (Progress, 96),
    "trainrt_sample_options": (SampleOptions, 48),
    "trainrt_model_info": (ModelInfo, 64),
    "trainrt_prepare_options": (PrepareOptions, 88),
    "trainrt_prepare_result": (PrepareResult, 88),
    "trainrt_tokenizer_train_options": (TokenizerTrainOptions, 40),
    "trainrt_tokenizer_train_result": (TokenizerTrainResult, 40),
    "trainrt_param_info": (ParamInfo, 72),
}


def new_struct(cls: type, version: int) -> Any:
    """A zeroed output/input struct with struct_size and version set (the _INIT macros)."""
    s = cls()
    s.struct_size = ctypes.sizeof(cls)
    s.version = version
    return s


# ------------------------------------------------------------------ prototypes
_status = c_int32
_P = c_void_p  # handles and buffers
_Pp = POINTER(c_void_p)  # out handles
_Psize = POINTER(c_size_t)
_s = c_char_p  # input strings (NUL-terminated)

#: name -> (restype, argtypes); "status" marks a trainrt_status result.
PROTOTYPES: Dict[str, Tuple[Any, List[Any]]] = {
    # versions and status
    "trainrt_version_string": (c_char_p, []),
    "trainrt_abi_version": (c_uint32, []),
    "trainrt_build_features": (c_uint64, []),
    "trainrt_status_string": (c_char_p, [c_int32]),
    "trainrt_last_error_message": (c_char_p, []),
    # logging
    "trainrt_log_set_default": ("status", [LOG_FN, _P, c_int32]),
    # config
    "trainrt_config_create": ("status", [_Pp]),
    "trainrt_config_from_file": ("status", [_Pp, _s]),
    "trainrt_config_from_string": ("status", [_Pp, _s, _s]),
    "trainrt_config_destroy": (None, [_P]),
    "trainrt_config_set": ("status", [_P, _s, _s]),
    "trainrt_config_get_int": ("status", [POINTER(c_int64), _P, _s]),
    "trainrt_config_get_double": ("status", [POINTER(c_double), _P, _s]),
    "trainrt_config_get_bool": ("status", [POINTER(c_int32), _P, _s]),
    "trainrt_config_get_string": ("status", [_P, c_size_t, _Psize, _P, _s]),
    "trainrt_config_dump": ("status", [_P, c_size_t, _Psize, _P]),
    "trainrt_config_set_log": ("status", [_P, LOG_FN, _P, c_int32]),
    "trainrt_config_set_mpi_comm": ("status", [_P, _P]),
    # session
    "trainrt_step_result_init": (None, [POINTER(StepResult)]),
    "trainrt_metrics_init": (None, [POINTER(Metrics)]),
    "trainrt_session_create": ("status", [_Pp, _P]),
    "trainrt_session_destroy": (None, [_P]),
    "trainrt_session_set_log": ("status", [_P, LOG_FN, _P, c_int32]),
    "trainrt_session_step": ("status", [POINTER(StepResult), _P]),
    "trainrt_session_step_tokens": ("status", [POINTER(StepResult), _P, _P, c_size_t]),
    "trainrt_session_step_masked": ("status", [POINTER(StepResult), _P, _P, c_size_t, _P, _P,
                                               c_size_t]),
    "trainrt_session_sync": ("status", [POINTER(StepResult), _P]),
    "trainrt_session_eval": ("status", [POINTER(c_double), _P]),
    "trainrt_eval_result_init": (None, [POINTER(EvalResult)]),
    "trainrt_session_eval_whole": ("status", [POINTER(EvalResult), _P]),
    "trainrt_session_eval_tokens": ("status", [POINTER(EvalResult), _P, _P, c_size_t]),
    "trainrt_session_eval_text": ("status", [POINTER(EvalResult), _P, _P, c_size_t, _s]),
    "trainrt_session_forward": ("status", [POINTER(c_double), _P, c_size_t, _P, _P, c_int64,
                                           c_int64]),
    "trainrt_session_train": ("status", [_P, c_int64, PROGRESS_FN, _P]),
    "trainrt_session_request_stop": ("status", [_P]),
    "trainrt_session_metrics": ("status", [POINTER(Metrics), _P]),
    "trainrt_session_config_dump": ("status", [_P, c_size_t, _Psize, _P]),
    "trainrt_session_profile": ("status", [_P, c_size_t, _Psize, _P]),
    "trainrt_session_profile_reset": ("status", [_P]),
    # checkpoints and export
    "trainrt_session_save": ("status", [_P, c_size_t, _Psize, _P, _s]),
    "trainrt_session_load": ("status", [_P, _s]),
    "trainrt_checkpoint_latest": ("status", [_P, c_size_t, _Psize, _s]),
    "trainrt_config_from_checkpoint": ("status", [_Pp, _s]),
    "trainrt_session_export": ("status", [_P, _s, c_int32]),
    "trainrt_checkpoint_export": ("status", [_s, _s, c_int32]),
    "trainrt_session_export_adapter": ("status", [_P, _s, c_int32]),
    "trainrt_checkpoint_export_adapter": ("status", [_s, _s, c_int32]),
    "trainrt_checkpoint_export_gguf": ("status", [_P, c_size_t, _Psize, _s, _s, _s]),
    "trainrt_checkpoint_export_gguf_lora": ("status", [_P, c_size_t, _Psize, _s, _s, _s]),
    # sampling
    "trainrt_sample_options_init": (None, [POINTER(SampleOptions)]),
    "trainrt_session_sample": ("status", [_P, c_size_t, _P, _P, c_size_t, c_size_t,
                                          POINTER(SampleOptions)]),
    "trainrt_session_generate": ("status", [_Psize, _P, c_size_t, _P, _P, c_size_t, c_size_t,
                                            POINTER(SampleOptions)]),
    # parameters
    "trainrt_param_info_init": (None, [POINTER(ParamInfo)]),
    "trainrt_session_param_count": ("status", [POINTER(c_int64), POINTER(c_int64), _P]),
    "trainrt_session_param_info": ("status", [POINTER(ParamInfo), _P, c_size_t, _Psize, _P,
                                              c_int64]),
    "trainrt_session_read_params": ("status", [_P, c_size_t, _P, _s]),
    "trainrt_session_write_params": ("status", [_P, _s, _P, c_size_t]),
    # metadata
    "trainrt_session_set_metadata": ("status", [_P, _s, _s]),
    "trainrt_session_get_metadata": ("status", [_P, c_size_t, _Psize, POINTER(c_int32), _P,
                                                _s]),
    "trainrt_session_metadata_count": ("status", [POINTER(c_int64), _P]),
    "trainrt_session_metadata_key": ("status", [_P, c_size_t, _Psize, _P, c_int64]),
    # sizing
    "trainrt_config_model_info": ("status", [POINTER(ModelInfo), _P]),
    "trainrt_config_model_summary": ("status", [_P, c_size_t, _Psize, _P]),
    # data
    "trainrt_prepare_bytes": ("status", [POINTER(c_int64), POINTER(c_int64), _s, _s, c_double]),
    "trainrt_prepare_options_init": (None, [POINTER(PrepareOptions)]),
    "trainrt_prepare_result_init": (None, [POINTER(PrepareResult)]),
    "trainrt_prepare_text": ("status", [POINTER(PrepareResult), POINTER(c_char_p), c_size_t, _s,
                                        POINTER(PrepareOptions)]),
    # tokenizers
    "trainrt_tokenizer_load": ("status", [_Pp, _s]),
    "trainrt_tokenizer_destroy": (None, [_P]),
    "trainrt_tokenizer_encode": ("status", [_P, c_size_t, _Psize, _P, _P, c_size_t]),
    "trainrt_tokenizer_decode": ("status", [_P, c_size_t, _Psize, _P, _P, c_size_t]),
    "trainrt_tokenizer_vocab_size": ("status", [POINTER(c_int32), _P]),
    "trainrt_tokenizer_token_id": ("status", [POINTER(c_int32), _P, _s]),
    # chat templates
    "trainrt_chat_template_load": ("status", [_Pp, _s, _s]),
    "trainrt_chat_template_destroy": (None, [_P]),
    "trainrt_chat_template_render": ("status", [_P, c_size_t, _Psize, _P, _s, c_int32, _s]),
    "trainrt_chat_template_stop_ids": ("status", [_P, c_size_t, _Psize, _P, _P]),
    "trainrt_chat_template_generation_spans": ("status", [_Psize, c_size_t, _Psize, _P, _s,
                                                           c_int32, _s]),
    "trainrt_tokenizer_train_options_init": (None, [POINTER(TokenizerTrainOptions)]),
    "trainrt_tokenizer_train_result_init": (None, [POINTER(TokenizerTrainResult)]),
    "trainrt_tokenizer_train": ("status", [POINTER(TokenizerTrainResult), POINTER(c_char_p),
                                           c_size_t, _s, POINTER(TokenizerTrainOptions)]),
}


class _API:
    """Attribute access loads the library once; then each prototype is a plain attribute."""

    def __init__(self) -> None:
        self._loaded = False
        self._missing: List[str] = []
        self._path: Optional[str] = None
        self._version: Optional[str] = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("trainrt_") and not self._loaded:
            self._load()
            return object.__getattribute__(self, name)
        raise AttributeError(name)

    def _load(self) -> None:
        with _load_lock:
            if self._loaded:
                return
            lib, path = _lib.load()
            last_error = lib.trainrt_last_error_message
            last_error.restype, last_error.argtypes = c_char_p, []
            status_string = lib.trainrt_status_string
            status_string.restype, status_string.argtypes = c_char_p, [c_int32]
            lib.trainrt_version_string.restype = c_char_p
            lib.trainrt_version_string.argtypes = []
            lib.trainrt_abi_version.restype = c_uint32
            lib.trainrt_abi_version.argtypes = []
            version = lib.trainrt_version_string().decode("utf-8", "replace")
            abi = lib.trainrt_abi_version()
            if abi != ABI_VERSION:
                raise VersionMismatchError(
                    "%s is libtrainrt %s of ABI version %d; this binding speaks ABI version %d: "
                    "install a matching libtrainrt or binding" % (path, version, abi, ABI_VERSION))

            def errcheck(result: int, func: Any, args: Tuple[Any, ...]) -> int:
                if result < 0:
                    # Same OS thread, nothing called in between: the message is this call's.
                    raw = last_error()
                    text = status_string(result)
                    raise error_class(result)(
                        raw.decode("utf-8", "replace") if raw else "", result,
                        text.decode("utf-8", "replace") if text else None)
                return result

            table: Dict[str, Any] = {}
            missing: List[str] = []
            for name, (restype, argtypes) in PROTOTYPES.items():
                try:
                    fn = getattr(lib, name)
                except AttributeError:
                    missing.append(name)
                    table[name] = _missing_stub(name, path, version)
                    continue
                if restype == "status":
                    fn.restype = _status
                    fn.errcheck = errcheck
                else:
                    fn.restype = restype
                fn.argtypes = argtypes
                table[name] = fn
            self._missing = missing
            self._path = path
            self._version = version
            self.__dict__.update(table)
            self._loaded = True

    @property
    def missing(self) -> List[str]:
        """The functions of the header the loaded library does not export."""
        self._load()
        return list(self._missing)

    @property
    def path(self) -> str:
        """The path or name the library was loaded by."""
        self._load()
        assert self._path is not None
        return self._path


def _missing_stub(name: str, path: str, version: str) -> Callable[..., int]:
    def stub(*args: Any) -> int:
        raise MissingSymbolError(
            "the loaded libtrainrt (%s, version %s) does not export %s(); this binding needs "
            "a newer libtrainrt (or point TRAINRT_LIB_DIR at one)" % (path, version, name))
    stub.__name__ = name
    return stub


C = _API()


# ------------------------------------------------------------------ helpers
def get_string(call: Callable[..., int], *args: Any, initial: int = 256) -> bytes:
    """Drive a ``(buf, cap, &needed, ...)`` call: one call into a buffer of ``initial``
    bytes, a second with the exact size when it did not fit. ``args`` follow ``needed``."""
    cap = initial
    while True:
        buf = ctypes.create_string_buffer(cap)
        needed = c_size_t(0)
        call(buf, cap, ctypes.byref(needed), *args)
        if needed.value < cap:
            return buf.raw[:needed.value]
        cap = needed.value + 1


def encode_str(s: str, what: str) -> bytes:
    """UTF-8 bytes of a key / TOML text; NUL inside is refused (C strings end at NUL)."""
    if isinstance(s, bytes):
        b = s
    elif isinstance(s, str):
        b = s.encode("utf-8")
    else:
        raise TypeError("%s must be a str, not %s" % (what, type(s).__name__))
    if b"\0" in b:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError("%s contains a NUL character" % what)
    return b


def encode_path(p: Any, what: str = "path") -> bytes:
    """File-system bytes of a str, bytes or os.PathLike path."""
    import os
    try:
        b = os.fsencode(p)
    except TypeError:
        raise TypeError("%s must be a str, bytes or os.PathLike, not %s"
                        % (what, type(p).__name__)) from None
    if b"\0" in b:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError("%s contains a NUL character" % what)
    return b


def path_list(paths: Sequence[Any], what: str) -> Tuple[Any, List[bytes]]:
    """A ``const char* const*`` array of paths (and the bytes that keep it alive)."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    encoded = [encode_path(p, what) for p in paths]
    arr = (c_char_p * max(1, len(encoded)))(*encoded)
    return arr, encoded


def status_text(status: int) -> str:
    s = C.trainrt_status_string(status)
    return s.decode("utf-8", "replace") if s else ""

