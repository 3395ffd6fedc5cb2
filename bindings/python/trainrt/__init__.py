"""Python binding of libtrainrt, a training runtime for transformer language models.

    import trainrt

    with trainrt.Session("run.toml") as s:
        for _ in range(10):
            r = s.step()
            print(r.step, r.loss)
        print("val", s.eval())
        s.save("ckpt")

The binding uses ctypes and the standard library only (numpy is optional: ``as_numpy=True``
results, and numpy arrays are taken without a copy where they fit). The C library is loaded
on first use (``$TRAINRT_LIB_DIR``, ``$TRAINRT_LIB``, then the system's library path); see
``trainrt._lib``.

Every failed call raises a :class:`trainrt.Error` (``.status``, ``.status_name``,
``.message``: the library's own message), of the subclass for its status
(:class:`ConfigError`, :class:`IoError`, ...).
"""
from __future__ import annotations

from ._types import (DType, EvalResult, Feature, LogLevel, LossMask, Metrics, ModelInfo,
                     ParamInfo, ParamRole, PrepareResult, Progress, ProgressKind, StepResult,
                     TokenizerTrainResult)
from .chat import ChatTemplate
from .checkpoint import (checkpoint_export, checkpoint_export_adapter, checkpoint_export_gguf,
                         checkpoint_export_gguf_lora,
                         checkpoint_latest, config_from_checkpoint)
from .config import Config, toml_value
from .core import (ABI_VERSION, abi_version, build_features, library_path, missing_functions,
                   set_default_log, status_string, version)
from .data import prepare_bytes, prepare_text
from .errors import (BusyError, CancelledError, ClosedError, ConfigError, DeviceError,
                     DeviceLostError, Error, FormatError, InternalError, InvalidArgumentError,
                     IoError, LibraryNotFoundError, MissingSymbolError, NonFiniteError,
                     OutOfMemoryError, Status, UnsupportedError, VersionMismatchError)
from .session import Session, SessionMetadata, TrainIterator
from .tokenizer import Tokenizer, tokenizer_train

__version__ = "0.1.0"

__all__ = [
    # library
    "version", "abi_version", "build_features", "status_string", "set_default_log",
    "library_path", "missing_functions", "ABI_VERSION", "__version__",
    # objects
    "Config", "Session", "SessionMetadata", "TrainIterator", "Tokenizer", "ChatTemplate",
    "toml_value",
    # functions
    "checkpoint_latest", "config_from_checkpoint", "checkpoint_export",
    "checkpoint_export_adapter", "checkpoint_export_gguf", "checkpoint_export_gguf_lora", "prepare_bytes", "prepare_text", "tokenizer_train",
    # values
    "DType", "EvalResult", "Feature", "LogLevel", "LossMask", "Metrics", "ModelInfo",
    "ParamInfo", "ParamRole", "PrepareResult", "Progress", "ProgressKind", "StepResult",
    "TokenizerTrainResult",
    # errors
    "Status", "Error", "InvalidArgumentError", "ClosedError", "ConfigError", "IoError",
    "FormatError", "OutOfMemoryError", "DeviceError", "DeviceLostError", "UnsupportedError",
    "MissingSymbolError", "LibraryNotFoundError", "BusyError", "CancelledError",
    "VersionMismatchError", "InternalError", "NonFiniteError",
]
