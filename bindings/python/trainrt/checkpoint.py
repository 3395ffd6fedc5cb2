"""Checkpoints without a session: find the latest, read its config, export it."""
from __future__ import annotations

import ctypes
import os
from typing import List, Optional, Union

from ._capi import C, encode_path, get_string
from ._types import DType
from .config import Config, PathLike
from .session import _dtype

__all__ = ["checkpoint_latest", "config_from_checkpoint", "checkpoint_export",
           "checkpoint_export_adapter", "checkpoint_export_gguf", "checkpoint_export_gguf_lora"]


def checkpoint_latest(out_dir: PathLike) -> Optional[str]:
    """The checkpoint folder ``out_dir/latest`` names, or None when ``out_dir`` has no
    checkpoint yet."""
    raw = get_string(C.trainrt_checkpoint_latest, encode_path(out_dir, "out_dir"), initial=1024)
    return os.fsdecode(raw) if raw else None


def config_from_checkpoint(path: PathLike) -> Config:
    """The run config a checkpoint (a checkpoint folder, or a folder whose ``latest`` names
    one) was trained with. Same as :meth:`Config.from_checkpoint`."""
    return Config.from_checkpoint(path)


def checkpoint_export(path: PathLike, out_dir: PathLike,
                      dtype: Union[DType, int, str] = DType.F32) -> None:
    """Hugging Face export (model.safetensors + config.json) of a checkpoint, without a
    session. A LoRA run's export is the base with the adapters merged in."""
    C.trainrt_checkpoint_export(encode_path(path), encode_path(out_dir, "out_dir"), _dtype(dtype))


def checkpoint_export_adapter(path: PathLike, out_dir: PathLike,
                              dtype: Union[DType, int, str] = DType.F32) -> None:
    """A LoRA checkpoint's adapters as a PEFT folder (a run without adapters:
    :class:`trainrt.InvalidArgumentError`)."""
    C.trainrt_checkpoint_export_adapter(encode_path(path), encode_path(out_dir, "out_dir"),
                                        _dtype(dtype))


def checkpoint_export_gguf(path: PathLike, gguf_path: PathLike, type: str = "f16") -> List[str]:
    """One GGUF file (llama.cpp, Ollama) of a checkpoint's model, a LoRA run's adapters merged,
    with the run's tokenizer and chat template inside; ``type`` is ``"f32"``, ``"f16"``,
    ``"bf16"`` or ``"q8_0"``. Returns the notes: what the file keeps otherwise than the run
    had it, one line each (docs/FORMATS.md section 6)."""
    # One call (a second would write the file again): a buffer no list of notes fills.
    buf = ctypes.create_string_buffer(1 << 16)
    needed = ctypes.c_size_t(0)
    C.trainrt_checkpoint_export_gguf(buf, len(buf), ctypes.byref(needed), encode_path(path),
                                     encode_path(gguf_path, "gguf_path"), type.encode())
    return [line for line in buf.value.decode("utf-8", "replace").split("\n") if line]


def checkpoint_export_gguf_lora(path: PathLike, gguf_path: PathLike,
                                type: str = "f16") -> List[str]:
    """A LoRA run's adapters as llama.cpp's adapter GGUF (``llama-cli -m BASE.gguf --lora
    FILE``, BASE the model the run trained on); ``type`` as :func:`checkpoint_export_gguf`.
    Returns the notes. A run without adapters raises :class:`trainrt.InvalidArgumentError`."""
    buf = ctypes.create_string_buffer(1 << 16)
    needed = ctypes.c_size_t(0)
    C.trainrt_checkpoint_export_gguf_lora(buf, len(buf), ctypes.byref(needed), encode_path(path),
                                          encode_path(gguf_path, "gguf_path"), type.encode())
    return [line for line in buf.value.decode("utf-8", "replace").split("\n") if line]
