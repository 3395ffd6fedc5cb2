"""Preparing training data: text into llm.c token shards (train.bin / val.bin)."""
from __future__ import annotations

import json
from ctypes import byref, c_int64
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

from ._capi import (C, PREPARE_OPTIONS_VERSION, PREPARE_PROGRESS_FN, PREPARE_RESULT_VERSION,
                    PrepareOptions as _COptions, PrepareResult as _CResult, encode_path,
                    encode_str, new_struct, path_list)
from ._types import LossMask, PrepareResult
from .config import PathLike

__all__ = ["prepare_bytes", "prepare_text", "PrepareProgressFn"]

#: ``progress(done, total)`` in input bytes; a true return value cancels the run.
PrepareProgressFn = Callable[[int, int], Any]


def prepare_bytes(text_path: PathLike, out_dir: PathLike,
                  val_fraction: float = 0.1) -> Tuple[int, int]:
    """Byte-level tokenization (token = byte, vocab_size 256) of a text file into
    ``out_dir/train.bin`` (the first ``1 - val_fraction`` of the bytes) and
    ``out_dir/val.bin`` (the rest). ``out_dir`` is created; files appear only when complete.
    Returns ``(train_tokens, val_tokens)``."""
    nt, nv = c_int64(), c_int64()
    C.trainrt_prepare_bytes(byref(nt), byref(nv), encode_path(text_path, "text_path"),
                            encode_path(out_dir, "out_dir"), float(val_fraction))
    return nt.value, nv.value


def prepare_text(inputs: Union[PathLike, Sequence[PathLike]], out_dir: PathLike, *,
                 tokenizer: PathLike, val_fraction: float = 0.1,
                 jsonl_field: Optional[str] = None, threads: int = 0, shard_tokens: int = 0,
                 progress: Optional[PrepareProgressFn] = None, chat: bool = False,
                 loss_mask: Union[LossMask, int] = LossMask.DEFAULT,
                 chat_template: Optional[str] = None,
                 template_vars: Union[None, str, Mapping[str, Any]] = None) -> PrepareResult:
    """Tokenize text files with a Hugging Face tokenizer into llm.c shards in ``out_dir``.

    ``inputs``: paths read in order; each text file is a document, or with ``jsonl_field``
    each JSON line's string field is one. Every document begins with the tokenizer's
    end-of-text token. ``val_fraction`` in [0, 1): the last part of the input bytes goes to
    val. ``threads``: 0 = all cores. ``shard_tokens``: 0 = one train.bin and one val.bin;
    N > 0 = numbered shards of at most N tokens. ``progress(done, total)`` (input bytes) is
    called now and then on this thread; a true return value (or an exception, re-raised
    here) cancels the run: no shard is written (:class:`trainrt.CancelledError`).

    ``chat``: instruction-tuning data. ``tokenizer`` is then a model folder with a chat
    template; each input line is a conversation (``{"messages": [...]}`` or
    ``{"prompt", "completion"}``) rendered with it, and ``mask_train.bin`` /
    ``mask_val.bin`` hold each token's loss mask (``loss_mask``: a :class:`LossMask`).
    ``chat_template`` picks one of the folder's named templates; ``template_vars`` (a dict
    or a JSON object's text) adds template variables. ``jsonl_field`` and ``shard_tokens``
    must be unset; ``threads`` is not used.
    """
    arr, keep = path_list(inputs, "inputs")
    o = new_struct(_COptions, PREPARE_OPTIONS_VERSION)
    tok = encode_path(tokenizer, "tokenizer")
    field = encode_str(jsonl_field, "jsonl_field") if jsonl_field is not None else None
    o.tokenizer = tok
    o.jsonl_field = field
    o.val_fraction = float(val_fraction)
    o.threads = int(threads)
    o.shard_tokens = int(shard_tokens)
    o.chat = 1 if chat else 0
    o.loss_mask = int(loss_mask)
    name = encode_str(chat_template, "chat_template") if chat_template is not None else None
    if template_vars is not None and not isinstance(template_vars, (str, bytes)):
        template_vars = json.dumps(dict(template_vars))
    tvars = encode_str(template_vars, "template_vars") if template_vars is not None else None
    o.chat_template = name
    o.template_vars = tvars
    caught: List[BaseException] = []
    tramp = None
    if progress is not None:
        def trampoline(done: int, total: int, payload: Any) -> int:
            try:
                if caught:
                    return 1
                return 1 if progress(done, total) else 0
            except BaseException as e:  # never unwinds into C
                caught.append(e)
                return 1
        tramp = PREPARE_PROGRESS_FN(trampoline)
        o.progress = tramp
    r = new_struct(_CResult, PREPARE_RESULT_VERSION)
    try:
        C.trainrt_prepare_text(byref(r), arr, len(keep), encode_path(out_dir, "out_dir"),
                               byref(o))
    except BaseException:
        if caught:
            raise caught[0] from None
        raise
    finally:
        del tramp, tok, field, name, tvars
    if caught:  # pragma: no cover - the library reports CANCELLED first
        raise caught[0]
    return PrepareResult(r.documents, r.train_tokens, r.val_tokens, r.bytes, r.token_bytes,
                         r.vocab_size, r.eos_id, r.train_shards, r.val_shards, r.examples,
                         r.target_tokens, r.per_turn)

