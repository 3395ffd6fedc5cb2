"""Tokenizers (``trainrt_tokenizer``) and training a byte-level BPE tokenizer."""
from __future__ import annotations

import array
import ctypes
import threading
from ctypes import byref, c_char_p, c_int32, c_size_t, c_void_p
from typing import Any, List, Optional, Sequence, Union

from . import _buffers
from ._capi import (C, TOKENIZER_TRAIN_OPTIONS_VERSION, TOKENIZER_TRAIN_RESULT_VERSION,
                    TokenizerTrainOptions as _COptions, TokenizerTrainResult as _CResult,
                    encode_path, encode_str, new_struct, path_list)
from ._types import TokenizerTrainResult
from .config import PathLike
from .errors import ClosedError
from ._guard import Closeable

__all__ = ["Tokenizer", "tokenizer_train"]


class Tokenizer(Closeable):
    """A Hugging Face tokenizer: byte-level BPE (a tokenizer.json: GPT-2, Llama 3 and the
    like) or SentencePiece (a tokenizer.model: Llama 2 style), reproduced exactly (a file the
    library cannot reproduce is refused at load with :class:`trainrt.UnsupportedError`).

    Immutable once loaded: unlike configs and sessions, one tokenizer may be used by many
    threads at once (calls are not serialised). :meth:`close` waits for calls in flight.
    """

    def __init__(self, path: PathLike) -> None:
        """``path``: a tokenizer.json or tokenizer.model (told apart by content), or a Hugging
        Face model folder holding one."""
        out = c_void_p()
        C.trainrt_tokenizer_load(byref(out), encode_path(path))
        self._handle: Optional[int] = out.value
        self._cond = threading.Condition(threading.Lock())
        self._active = 0
        self._vocab: Optional[int] = None

    @classmethod
    def load(cls, path: PathLike) -> "Tokenizer":
        """Same as ``Tokenizer(path)``."""
        return cls(path)

    # -------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Free the tokenizer once no call is in flight. Idempotent; safe from any thread."""
        cond = getattr(self, "_cond", None)
        if cond is None:
            return
        with cond:
            h, self._handle = self._handle, None
            while self._active:
                cond.wait()
        if h is not None:
            C.trainrt_tokenizer_destroy(h)

    @property
    def closed(self) -> bool:
        return self._handle is None


    def _enter(self) -> int:
        with self._cond:
            h = self._handle
            if h is None:
                raise ClosedError("this Tokenizer is closed")
            self._active += 1
            return h

    def _exit(self) -> None:
        with self._cond:
            self._active -= 1
            if not self._active:
                self._cond.notify_all()

    # -------------------------------------------------------------- calls
    def encode(self, text: Union[str, bytes]) -> List[int]:
        """The ids of ``text`` (a str, or UTF-8 bytes: invalid UTF-8 raises
        :class:`trainrt.InvalidArgumentError` naming the byte). No special token is added;
        the text of an added token ("<|endoftext|>") becomes its id."""
        return self.encode_array(text).tolist()

    def encode_array(self, text: Union[str, bytes]) -> array.array:
        """As :meth:`encode`, as an ``array.array('i')`` (ready for :meth:`Session.sample`,
        :meth:`Session.forward` and friends without another conversion)."""
        if isinstance(text, str):
            data = text.encode("utf-8", "surrogatepass")
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:
            raise TypeError("text must be str or bytes, not %s" % type(text).__name__)
        cap = len(data) + 8
        h = self._enter()
        try:
            while True:
                ids = array.array("i", bytes(4 * cap))
                needed = c_size_t(0)
                C.trainrt_tokenizer_encode(ids.buffer_info()[0], cap, byref(needed), h, data,
                                           len(data))
                if needed.value <= cap:
                    del ids[needed.value:]
                    return ids
                cap = needed.value
        finally:
            self._exit()

    def decode_bytes(self, ids: Any) -> bytes:
        """The bytes of ``ids`` (each in ``[0, vocab_size)``): may hold NUL (byte tokens) and,
        for a cut-off sequence, end inside a UTF-8 character."""
        addr, n, keep = _buffers.int32_buffer(ids, "ids")
        cap = 8 * n + 16
        h = self._enter()
        try:
            while True:
                buf = ctypes.create_string_buffer(cap)
                needed = c_size_t(0)
                C.trainrt_tokenizer_decode(buf, cap, byref(needed), h, addr, n)
                if needed.value < cap:
                    return buf.raw[:needed.value]
                cap = needed.value + 1
        finally:
            self._exit()
            del keep

    def decode(self, ids: Any, errors: str = "replace") -> str:
        """The text of ``ids``; bytes that are not UTF-8 (a cut-off character) are handled
        per ``errors`` (as :meth:`bytes.decode`: "replace" by default, "strict" raises)."""
        return self.decode_bytes(ids).decode("utf-8", errors)

    @property
    def vocab_size(self) -> int:
        """Largest id + 1 (added tokens included): the smallest model.vocab_size that can
        train on this tokenizer's shards."""
        if self._vocab is None:
            out = c_int32()
            h = self._enter()
            try:
                C.trainrt_tokenizer_vocab_size(byref(out), h)
            finally:
                self._exit()
            self._vocab = out.value
        return self._vocab

    def token_id(self, token: str) -> Optional[int]:
        """The id of a token given by its text: an added token ("<|endoftext|>") or a
        vocabulary entry in its byte-level spelling ("Ġthe"); None when there is none."""
        t = encode_str(token, "token")
        out = c_int32()
        h = self._enter()
        try:
            C.trainrt_tokenizer_token_id(byref(out), h, t)
        finally:
            self._exit()
        return None if out.value < 0 else out.value

    def __len__(self) -> int:
        return self.vocab_size


def tokenizer_train(inputs: Union[PathLike, Sequence[PathLike]], out_path: PathLike, *,
                    vocab_size: int, min_frequency: int = 2,
                    special_tokens: Optional[Sequence[str]] = None,
                    overwrite: bool = False) -> TokenizerTrainResult:
    """Train a byte-level BPE tokenizer (GPT-2's pre-tokenizer and byte alphabet: any text
    round-trips) on text files and write it to ``out_path`` as a Hugging Face tokenizer.json.

    ``vocab_size``: at least 256 + the special tokens. ``special_tokens``: None = just
    "<|endoftext|>"; a sequence (possibly empty) = exactly those, ids 0... ``out_path`` must
    not exist unless ``overwrite`` (:class:`trainrt.IoError`). Deterministic.
    """
    arr, keep = path_list(inputs, "inputs")
    o = new_struct(_COptions, TOKENIZER_TRAIN_OPTIONS_VERSION)
    o.vocab_size = int(vocab_size)
    o.overwrite = 1 if overwrite else 0
    o.min_frequency = int(min_frequency)
    specials = None
    if special_tokens is not None:
        if isinstance(special_tokens, str):
            special_tokens = [special_tokens]
        enc = [encode_str(t, "special token") for t in special_tokens]
        specials = (c_char_p * max(1, len(enc)))(*enc)  # non-NULL even when empty: "none"
        o.special_tokens = ctypes.cast(specials, ctypes.POINTER(c_char_p))
        o.n_special_tokens = len(enc)
    r = new_struct(_CResult, TOKENIZER_TRAIN_RESULT_VERSION)
    C.trainrt_tokenizer_train(byref(r), arr, len(keep), encode_path(out_path, "out_path"),
                              byref(o))
    del specials
    return TokenizerTrainResult(r.bytes, r.pieces, r.distinct_pieces, r.vocab_size, r.merges)
