"""Chat templates (``trainrt_chat_template``): a model folder's template rendered as Hugging
Face transformers' ``apply_chat_template`` renders it, and the ids a reply ends with."""
from __future__ import annotations

import array
import json
import threading
from ctypes import byref, c_size_t, c_void_p
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from ._capi import C, encode_path, encode_str, get_string
from ._guard import Closeable
from .config import PathLike
from .errors import ClosedError
from .tokenizer import Tokenizer

__all__ = ["ChatTemplate"]

#: A conversation: a list of messages ({"role", "content", ...}), a dict with "messages" (and
#: "tools"), or its JSON text.
Conversation = Union[str, bytes, Sequence[Mapping[str, Any]], Mapping[str, Any]]


def _json_arg(value: Any, what: str) -> bytes:
    if isinstance(value, (str, bytes)):
        return encode_str(value, what)
    return encode_str(json.dumps(value, ensure_ascii=False), what)


class ChatTemplate(Closeable):
    """A model folder's chat template (its chat_template.jinja, else tokenizer_config.json's
    "chat_template"); a construct the engine does not support is refused at load
    (:class:`trainrt.UnsupportedError` naming it and its line).

    Immutable once loaded: one template may render on many threads at once. :meth:`close`
    waits for calls in flight.
    """

    def __init__(self, folder: PathLike, name: Optional[str] = None) -> None:
        """``name``: one of the folder's named templates; None = "default" (or the only
        one)."""
        out = c_void_p()
        C.trainrt_chat_template_load(byref(out), encode_path(folder, "folder"),
                                     encode_str(name, "name") if name is not None else None)
        self._handle: Optional[int] = out.value
        self._cond = threading.Condition(threading.Lock())
        self._active = 0

    @classmethod
    def load(cls, folder: PathLike, name: Optional[str] = None) -> "ChatTemplate":
        """Same as ``ChatTemplate(folder, name)``."""
        return cls(folder, name)

    # -------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Free the template once no call is in flight. Idempotent; safe from any thread."""
        cond = getattr(self, "_cond", None)
        if cond is None:
            return
        with cond:
            h, self._handle = self._handle, None
            while self._active:
                cond.wait()
        if h is not None:
            C.trainrt_chat_template_destroy(h)

    @property
    def closed(self) -> bool:
        return self._handle is None

    def _enter(self) -> int:
        with self._cond:
            h = self._handle
            if h is None:
                raise ClosedError("this ChatTemplate is closed")
            self._active += 1
            return h

    def _exit(self) -> None:
        with self._cond:
            self._active -= 1
            if not self._active:
                self._cond.notify_all()

    # -------------------------------------------------------------- calls
    def render(self, conversation: Conversation, add_generation_prompt: bool = False,
               variables: Union[None, str, Mapping[str, Any]] = None) -> str:
        """The text of ``conversation``. ``add_generation_prompt`` appends what opens the
        assistant's reply; ``variables`` (a dict or a JSON object's text) adds template
        variables ("enable_thinking": False, ...). The folder's special tokens (bos_token,
        eos_token, ...) are variables too. A template that raises gives
        :class:`trainrt.InvalidArgumentError` with its message."""
        conv = _json_arg(conversation, "conversation")
        vars_json = _json_arg(variables, "variables") if variables is not None else None
        h = self._enter()
        try:
            text = get_string(lambda buf, cap, needed: C.trainrt_chat_template_render(
                buf, cap, needed, h, conv, 1 if add_generation_prompt else 0, vars_json),
                initial=max(256, 2 * len(conv)))
        finally:
            self._exit()
        return text.decode("utf-8", "replace")

    def generation_spans(self, conversation: Conversation, add_generation_prompt: bool = False,
                         variables: Union[None, str, Mapping[str, Any]] = None
                         ) -> List[Tuple[int, int]]:
        """The (begin, end) byte ranges of :meth:`render`'s text written inside the template's
        ``{% generation %}`` blocks (what transformers' return_assistant_tokens_mask marks);
        ``[]`` for a template without them. Arguments as :meth:`render`."""
        conv = _json_arg(conversation, "conversation")
        vars_json = _json_arg(variables, "variables") if variables is not None else None
        agp = 1 if add_generation_prompt else 0
        h = self._enter()
        try:
            needed = c_size_t(0)
            C.trainrt_chat_template_generation_spans(None, 0, byref(needed), h, conv, agp,
                                                     vars_json)
            while True:
                cap = needed.value
                ranges = (c_size_t * max(1, cap))()
                C.trainrt_chat_template_generation_spans(ranges, cap, byref(needed), h, conv,
                                                         agp, vars_json)
                if needed.value <= cap:
                    return [(ranges[i], ranges[i + 1]) for i in range(0, needed.value, 2)]
        finally:
            self._exit()

    def stop_ids(self, tokenizer: Tokenizer) -> List[int]:
        """The ids a reply ends with (generation_config.json's eos_token_id, else
        tokenizer_config.json's eos_token), for :meth:`Session.generate_ids`'s ``stop_ids``.
        ``tokenizer``: the folder's."""
        h = self._enter()
        try:
            th = tokenizer._enter()
            try:
                needed = c_size_t(0)
                C.trainrt_chat_template_stop_ids(None, 0, byref(needed), h, th)
                while True:
                    cap = needed.value
                    ids = array.array("i", bytes(4 * max(1, cap)))
                    C.trainrt_chat_template_stop_ids(ids.buffer_info()[0], cap, byref(needed),
                                                     h, th)
                    if needed.value <= cap:
                        return ids.tolist()[:needed.value]
            finally:
                tokenizer._exit()
        finally:
            self._exit()
