"""Training sessions (``trainrt_session``): model, optimizer, data, sampler, backend, metrics."""
from __future__ import annotations

import array
import collections
import json
import ctypes
import os
import threading
from ctypes import byref, c_double, c_int32, c_int64, c_size_t
from typing import (TYPE_CHECKING, Any, Callable, Deque, Dict, Iterator, List, MutableMapping,
                    Optional, Tuple, Union)

from . import _buffers
from ._interrupt import SigintStop
from ._callbacks import LogFn, live_sessions, live_train_iters, make_log_trampoline, null_log
from ._capi import (C, EVAL_RESULT_VERSION, METRICS_VERSION, PARAM_INFO_VERSION, PROGRESS_FN,
                    SAMPLE_OPTIONS_VERSION, STEP_RESULT_VERSION, STOPPED,
                    EvalResult as _CEvalResult, Metrics as _CMetrics, ParamInfo as _CParamInfo,
                    SampleOptions as _CSampleOptions, StepResult as _CStepResult, encode_path,
                    encode_str, get_string, new_struct)
from ._guard import Closeable, HandleGuard
from ._types import (DType, EvalResult, LogLevel, Metrics, ParamInfo, ParamRole, Progress,
                     ProgressKind, StepResult)
from .config import Config, PathLike
from .errors import BusyError, InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from .tokenizer import Tokenizer

__all__ = ["Session", "SessionMetadata", "TrainIterator", "ProgressFn"]

#: A progress callback: gets each :class:`Progress`; a true return value stops training.
ProgressFn = Callable[[Progress], Any]

_INT64_MAX = 2 ** 63 - 1
_STEP_RESULT_SIZE = ctypes.sizeof(_CStepResult)
_METRICS_SIZE = ctypes.sizeof(_CMetrics)
_get_ident = threading.get_ident


def _dtype(dtype: Union[DType, int, str]) -> int:
    if isinstance(dtype, str):
        names = {"f32": DType.F32, "float32": DType.F32, "fp32": DType.F32,
                 "bf16": DType.BF16, "bfloat16": DType.BF16}
        try:
            return int(names[dtype.lower()])
        except KeyError:
            raise InvalidArgumentError("dtype %r: expected 'f32' or 'bf16'" % dtype) from None
    return int(dtype)


def _step_result(r: _CStepResult) -> StepResult:
    return StepResult(r.step, r.loss, r.lr, r.grad_norm, r.tokens, r.tokens_total, r.ms)


def _progress(p: Any) -> Progress:
    try:
        kind: Any = ProgressKind(p.kind)
    except ValueError:
        kind = p.kind
    return Progress(kind, p.step, p.steps_total, p.loss, p.lr, p.grad_norm, p.tokens_total, p.ms,
                    p.tokens_per_s, p.elapsed_s, p.eta_s)


def _clamp_steps(n_steps: Optional[int]) -> int:
    if n_steps is None:
        return 0
    n = int(n_steps)
    return max(-_INT64_MAX - 1, min(n, _INT64_MAX))


class Session(Closeable):
    """One training run: model, optimizer state, data, sampler, backend and metrics.

    ``Session(config)`` builds it from a copy of a :class:`Config` (or from a TOML file when
    given a path). Use it as a context manager, or call :meth:`close`.

    Threads: a session may be used from any thread; calls are serialised (another thread
    waits its turn instead of getting BUSY). :meth:`request_stop` and :meth:`close` may be
    called from any thread while :meth:`train` runs: a stop ends it after the step in
    flight; close stops it, waits for it to return, then frees the session. A callback of a
    call on this session (log line, progress report) that calls back into the session gets
    :class:`trainrt.BusyError` from the library (never a dead-lock); ``close()`` from such a
    callback takes effect when that call returns.
    """

    def __init__(self, config: Union[Config, PathLike], *,
                 log: Optional[LogFn] = None, log_level: int = LogLevel.INFO) -> None:
        """``config``: a :class:`Config`, or the path of a TOML file. ``log`` (optional): this
        session's own log sink, as :meth:`set_log` (installed after creation: the creation
        lines go to the config's sink, see :meth:`Config.set_log`)."""
        if isinstance(config, Config):
            handle, cfg_log, vocab, seq_len = config._create_session()
        else:
            with Config.from_file(config) as cfg:
                handle, cfg_log, vocab, seq_len = cfg._create_session()
        stop_lock = threading.Lock()

        def destroy(h: int) -> None:  # no reference to self: no cycle, prompt __del__
            with stop_lock:  # never while request_stop uses the handle
                C.trainrt_session_destroy(h)

        self._stop_lock = stop_lock
        self._guard = HandleGuard(handle, destroy, "Session")
        self._log_cbs: List[Any] = [cfg_log] if cfg_log is not None else []
        self._vocab_size = vocab
        self._seq_len = seq_len
        self._iter: Optional[_TrainIterState] = None
        self._params: Optional[List[ParamInfo]] = None
        self._param_index: Optional[Dict[str, ParamInfo]] = None
        self._numel: Optional[int] = None
        live_sessions.add(self)
        if log is not None:
            self.set_log(log, log_level)

    @classmethod
    def from_file(cls, path: PathLike) -> "Session":
        """A session from a TOML config file."""
        return cls(path)

    # -------------------------------------------------------------- lifetime
    def _request_stop_quiet(self) -> None:
        with self._stop_lock:
            h = self._guard.handle
            if h is not None:
                C.trainrt_session_request_stop(h)

    def close(self) -> None:
        """Stop a running :meth:`train` (or ``train_iter``), wait for it to return, and free
        the session. Idempotent and safe from any thread; afterwards every method raises
        :class:`trainrt.ClosedError` (a ``ValueError``)."""
        guard = getattr(self, "_guard", None)
        if guard is None or guard.closing or guard.handle is None:
            return
        state = self._iter

        def stop_first() -> None:
            if state is not None:
                state.stop()
            self._request_stop_quiet()
            if state is not None:
                state.join()

        guard.close(stop_first)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._guard.handle is None or self._guard.closing


    def _enter(self) -> int:
        state = self._iter
        if state is not None and state.consumer == _get_ident() and not state.finished:
            raise BusyError(
                "this Session is training inside a train_iter() loop on this thread: its "
                "body may call request_stop() only; break out of the loop (or close the "
                "iterator) first")
        return self._guard.enter()

    def _exit(self) -> None:
        self._guard.exit()

    # -------------------------------------------------------------- logging
    def set_log(self, fn: Optional[LogFn], min_level: int = LogLevel.INFO) -> None:
        """This session's log sink (overrides the config's and the process default):
        ``fn(level: LogLevel, message: str)`` for each line at ``min_level`` and above;
        ``fn=None``: back to the process default. ``fn`` runs on the thread of the call that
        logs, inside it; exceptions in it are printed to stderr and dropped."""
        tramp = make_log_trampoline(fn) if fn is not None else null_log()
        h = self._enter()
        try:
            C.trainrt_session_set_log(h, tramp, None, int(min_level))
            if fn is not None:
                self._log_cbs.append(tramp)
        finally:
            self._exit()

    # -------------------------------------------------------------- training
    def step(self) -> StepResult:
        """Run one optimizer step on batches drawn by the session's sampler. Returns the
        figures of the most recent *completed* step: on the CPU, this one; on an asynchronous
        backend (CUDA) it may lag (use :meth:`sync`)."""
        r = _CStepResult()
        r.struct_size = _STEP_RESULT_SIZE
        r.version = STEP_RESULT_VERSION
        h = self._enter()
        try:
            C.trainrt_session_step(byref(r), h)
        finally:
            self._exit()
        return StepResult(r.step, r.loss, r.lr, r.grad_norm, r.tokens, r.tokens_total, r.ms)

    def step_tokens(self, tokens: Any) -> StepResult:
        """One optimizer step on host tokens: ``grad_accum * batch_size * (seq_len + 1)`` int32
        ids, micro-batch by micro-batch, row by row (flat, or rows as nested lists / a 2-D
        array); each row's first ``seq_len`` ids are inputs, its last ``seq_len`` targets.
        Every id in ``[0, vocab_size)``; the count must match exactly. The sampler does not
        advance."""
        addr, n, keep = _buffers.int32_buffer(tokens)
        r = new_struct(_CStepResult, STEP_RESULT_VERSION)
        h = self._enter()
        try:
            C.trainrt_session_step_tokens(byref(r), h, addr, n)
        finally:
            self._exit()
        del keep
        return _step_result(r)

    def step_masked(self, tokens: Any, loss_mask: Any = None,
                    positions: Any = None) -> StepResult:
        """:meth:`step_tokens` training on some targets only (instruction tuning: the
        completions, not the prompts). ``loss_mask``: ``grad_accum * batch_size * seq_len``
        booleans (flat or nested like the rows' targets), true where the target
        ``tokens[k][b][t + 1]`` counts; None: all count. ``positions``: as many int32 values
        (each row 0, 1, ...; None: 0 .. seq_len - 1). The loss and its gradient are the mean
        over the step's counted targets (every micro-batch, every rank), so grad_accum does
        not change the result; ``loss`` is that mean, ``tokens`` the tokens processed. A step
        that counts nothing is :class:`trainrt.InvalidArgumentError` and changes nothing."""
        addr, n, keep = _buffers.int32_buffer(tokens)
        m_addr, m_n, m_keep = (None, 0, None) if loss_mask is None else _buffers.mask_buffer(
            loss_mask)
        p_addr, p_n, p_keep = (None, 0, None) if positions is None else _buffers.int32_buffer(
            positions, "positions")
        if loss_mask is not None and positions is not None and m_n != p_n:
            raise InvalidArgumentError("step_masked: loss_mask holds %d values but positions %d;"
                                       " both hold grad_accum * batch_size * seq_len"
                                       % (m_n, p_n))
        r = new_struct(_CStepResult, STEP_RESULT_VERSION)
        h = self._enter()
        try:
            C.trainrt_session_step_masked(byref(r), h, addr, n, m_addr, p_addr,
                                          m_n if loss_mask is not None else p_n)
        finally:
            self._exit()
        del keep, m_keep, p_keep
        return _step_result(r)

    def sync(self) -> StepResult:
        """Wait for all queued work; the last step's figures (step 0 before any)."""
        r = new_struct(_CStepResult, STEP_RESULT_VERSION)
        h = self._enter()
        try:
            C.trainrt_session_sync(byref(r), h)
        finally:
            self._exit()
        return _step_result(r)

    def eval(self) -> float:
        """Mean loss (nats/token) over ``train.eval_batches`` windows from the start of
        data.val. :class:`trainrt.ConfigError` without val data;
        :class:`trainrt.CancelledError` when :meth:`request_stop` interrupted it."""
        out = c_double()
        h = self._enter()
        try:
            C.trainrt_session_eval(byref(out), h)
        finally:
            self._exit()
        return out.value

    def eval_whole(self) -> EvalResult:
        """Every token of data.val but the first scored exactly once, in disjoint windows of
        train.seq_len targets (its shards read as one stream; the last window shorter; never
        wrapping): mean loss, perplexity, targets scored, windows. :class:`trainrt.ConfigError`
        without val data."""
        r = new_struct(_CEvalResult, EVAL_RESULT_VERSION)
        h = self._enter()
        try:
            C.trainrt_session_eval_whole(byref(r), h)
        finally:
            self._exit()
        return EvalResult(r.loss, r.perplexity, r.tokens, r.windows)

    def eval_tokens(self, tokens: Any) -> EvalResult:
        """As :meth:`eval_whole` over host ids (at least 2, each in [0, vocab_size)) taken as
        one stream: a list, ``array.array`` or 1-D numpy array."""
        addr, n, keep = _buffers.int32_buffer(tokens)
        r = new_struct(_CEvalResult, EVAL_RESULT_VERSION)
        h = self._enter()
        try:
            C.trainrt_session_eval_tokens(byref(r), h, addr, n)
        finally:
            self._exit()
        del keep
        return EvalResult(r.loss, r.perplexity, r.tokens, r.windows)

    def eval_text(self, text: Union[str, bytes], tokenizer: Optional[PathLike] = None
                  ) -> EvalResult:
        """As :meth:`eval_whole` over raw text, tokenized in memory as
        :func:`trainrt.prepare_text` lays out one text file: with ``tokenizer`` (a
        tokenizer.json/.model or a model folder) its end-of-text token, then the text's ids;
        without, one id per UTF-8 byte (a byte-level model)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        tok = None if tokenizer is None else encode_path(tokenizer, "tokenizer")
        r = new_struct(_CEvalResult, EVAL_RESULT_VERSION)
        h = self._enter()
        try:
            C.trainrt_session_eval_text(byref(r), h, data, len(data), tok)
        finally:
            self._exit()
        return EvalResult(r.loss, r.perplexity, r.tokens, r.windows)

    def _forward_shape(self, tokens: Any, rows: Optional[int],
                       seq_len: Optional[int]) -> Tuple[int, int, int, Any]:
        np = _buffers.numpy() if type(tokens).__module__ == "numpy" else None
        if np is not None and isinstance(tokens, np.ndarray) and tokens.ndim == 2:
            rows = tokens.shape[0] if rows is None else rows
            seq_len = tokens.shape[1] - 1 if seq_len is None else seq_len
        elif isinstance(tokens, (list, tuple)) and tokens and isinstance(tokens[0], (list, tuple)):
            rows = len(tokens) if rows is None else rows
            seq_len = len(tokens[0]) - 1 if seq_len is None else seq_len
        addr, n, keep = _buffers.int32_buffer(tokens)
        if rows is None:
            rows = 1 if seq_len is None else n // (seq_len + 1)
        if seq_len is None:
            seq_len = (n // rows - 1) if rows > 0 else 0
        rows, seq_len = int(rows), int(seq_len)
        if rows < 1 or seq_len < 1 or n != rows * (seq_len + 1):
            raise InvalidArgumentError(
                "forward: %d tokens given for rows = %d of seq_len + 1 = %d ids each (expected "
                "exactly rows * (seq_len + 1), rows >= 1, seq_len >= 1)" % (n, rows, seq_len + 1))
        return addr, rows, seq_len, keep

    def forward(self, tokens: Any, rows: Optional[int] = None,
                seq_len: Optional[int] = None) -> float:
        """Mean loss (nats/token) of the current model on host tokens, no update.

        ``tokens``: ``rows`` rows of ``seq_len + 1`` ids (flat, nested lists, or a 2-D array
        whose shape gives rows and seq_len); ``1 <= rows <= train.batch_size``,
        ``1 <= seq_len <= train.seq_len``. A flat sequence without ``rows`` is one row.
        """
        addr, rows, seq_len, keep = self._forward_shape(tokens, rows, seq_len)
        out = c_double()
        h = self._enter()
        try:
            C.trainrt_session_forward(byref(out), None, 0, h, addr, rows, seq_len)
        finally:
            self._exit()
        del keep
        return out.value

    def forward_logits(self, tokens: Any, rows: Optional[int] = None,
                       seq_len: Optional[int] = None, *, as_numpy: bool = False,
                       out: Any = None) -> Tuple[float, Any]:
        """As :meth:`forward`, plus the logits: ``(loss, logits)`` with ``rows * seq_len *
        vocab_size`` floats, row-major ``[rows, seq_len, vocab_size]``. ``logits`` is an
        ``array.array('f')`` (flat), a numpy float32 array of that shape with
        ``as_numpy=True``, or ``out`` itself when given (a writable float32 numpy array or
        ``array.array('f')`` of at least that many elements)."""
        addr, rows, seq_len, keep = self._forward_shape(tokens, rows, seq_len)
        count = rows * seq_len * self._vocab_size
        if out is not None:
            laddr, cap = _buffers.out_float_buffer(out)
            if cap < count:
                raise InvalidArgumentError("forward_logits: out holds %d floats, %d needed "
                                           "(rows * seq_len * vocab_size)" % (cap, count))
            logits = out
        elif as_numpy:
            np = _buffers.require_numpy()
            logits = np.empty((rows, seq_len, self._vocab_size), dtype=np.float32)
            laddr, cap = logits.ctypes.data, count
        else:
            logits = _buffers.new_float_array(count)
            laddr, cap = logits.buffer_info()
        loss = c_double()
        h = self._enter()
        try:
            C.trainrt_session_forward(byref(loss), laddr, cap, h, addr, rows, seq_len)
        finally:
            self._exit()
        del keep
        return loss.value, logits

    def _train(self, n_steps: Optional[int], tramp: Any) -> int:
        h = self._enter()
        try:
            return C.trainrt_session_train(h, _clamp_steps(n_steps), tramp, None)
        finally:
            self._exit()

    def train(self, n_steps: Optional[int] = 0,
              progress: Optional[ProgressFn] = None) -> bool:
        """Run the training loop: ``n_steps`` more steps (``0`` or ``None``: until
        train.steps; huge values: until stopped), with the config's log and eval cadence,
        appending to <train.out_dir>/metrics.jsonl when out_dir is set.

        ``progress(p: Progress)`` is called at each logged step (every runtime.log_every) and
        each eval, on this thread; a true return value stops training after the step in
        flight. An exception raised by ``progress`` (KeyboardInterrupt included) stops
        training too and is re-raised here once the library has returned; the session stays
        usable.

        Ctrl-C (SIGINT): on the main thread, while SIGINT has Python's default handler, the
        binding installs its own for the call (the previous one is put back afterwards, also
        on error). Ctrl-C then asks the library to stop at once: it abandons the step in
        flight between micro-batches (weights, optimizer state, step count and sampler stay
        as after the previous step; a step replayed as a CUDA graph, or one of several ranks,
        runs to its end first), returns, and ``KeyboardInterrupt`` is raised here — the
        session stays usable (``save()`` then writes the last completed step). Ctrl-C while
        ``progress`` runs raises KeyboardInterrupt in it, as usual, with the same outcome.
        Further Ctrl-Cs while the library winds down fold into that one KeyboardInterrupt:
        the library call itself cannot be interrupted (to end the process at once, send
        SIGTERM or SIGKILL). An application that installed its own SIGINT handler (or
        SIG_IGN) keeps it: its handler runs when Python code next runs on this thread (a
        progress callback, or once train() returns), so stop training from it with
        :meth:`request_stop`. On other threads signals never arrive (Python delivers them to
        the main thread); use :meth:`request_stop` from there.

        Returns True when training ended early (request_stop, the callback, or close), False
        when it ran to the end. Raises KeyboardInterrupt after Ctrl-C (see above), or the
        library's error if training failed.
        """
        caught: List[BaseException] = []
        sigint = SigintStop(self._request_stop_quiet)

        # A callback is installed even without ``progress``: after Ctrl-C it tells the
        # library to stop at the next logged step too (where its own check has not yet).
        def trampoline(p: Any, payload: Any) -> int:
            try:
                if caught or sigint.interrupted:
                    return 1
                if progress is None:
                    return 0
                sigint.raise_now = True  # Ctrl-C interrupts the user's code, as usual
                try:
                    return 1 if progress(_progress(p[0])) else 0
                finally:
                    sigint.raise_now = False
            except BaseException as e:  # never unwinds into C
                caught.append(e)
                return 1

        tramp = PROGRESS_FN(trampoline)
        with sigint:
            status = sigint.call(lambda: self._train(n_steps, tramp))
        if caught:
            exc = caught[0]
            caught.clear()
            raise exc
        if sigint.interrupted:
            raise KeyboardInterrupt
        return status == STOPPED

    def train_iter(self, n_steps: Optional[int] = 0) -> "TrainIterator":
        """Iterate over the progress of a :meth:`train` run: yields each :class:`Progress`
        (each logged step and each eval).

        Training runs on a worker thread in lock step with the loop: while the loop body
        runs, training is paused inside its progress callback, so leaving the loop
        (``break``, an exception, or :meth:`TrainIterator.close`) stops training right at the
        step last seen, exactly as a progress callback returning True would, and the session
        is usable again at once. The loop body must not call this session (except
        :meth:`request_stop`): it raises :class:`trainrt.BusyError`. Prefer
        ``with session.train_iter(n) as it: for p in it: ...`` when the iterator may outlive
        the loop. After the loop, ``it.stopped`` says whether training ended early; an error
        of the run is raised by the loop.

        Ctrl-C raises KeyboardInterrupt in the loop (on the main thread, at once: the worker
        trains, the loop waits) as Python's default handler does; leaving the loop that way
        stops training like ``break`` — a step in flight is abandoned between micro-batches
        (as with :meth:`request_stop`) — and the session is usable.
        """
        if self._guard.owned_by_me():
            raise BusyError("train_iter() from inside a call on this Session (a callback)")
        if self.closed:
            raise self._guard.closed_error()
        return TrainIterator(self, n_steps)

    def request_stop(self) -> None:
        """Ask a running :meth:`train` to stop after its current step (it then returns
        True). Safe from any thread, and from inside a progress callback or a ``train_iter``
        loop. A request made while no train runs stops the next one at once; it also
        interrupts a running :meth:`eval` (:class:`trainrt.CancelledError`)."""
        with self._stop_lock:
            h = self._guard.handle
            if h is None:
                raise self._guard.closed_error()
            C.trainrt_session_request_stop(h)

    def metrics(self) -> Metrics:
        """The session's running figures (every field of trainrt_metrics version 4)."""
        m = _CMetrics()
        m.struct_size = _METRICS_SIZE
        m.version = METRICS_VERSION
        m.world_size = 1
        h = self._enter()
        try:
            C.trainrt_session_metrics(byref(m), h)
        finally:
            self._exit()
        return Metrics(m.step, m.tokens_total, m.tokens_per_s, m.step_ms_p50, m.step_ms_p95,
                       m.bytes_in_use, m.last_loss, m.last_val_loss, m.bytes_reserved,
                       m.skipped_steps, m.loss_scale, m.model_flops_per_token, m.peak_flops,
                       m.mfu, m.rank, m.world_size)

    def config_dump(self) -> str:
        """The session's resolved config as TOML (what it actually runs with, e.g. the
        batch size "auto" resolved to)."""
        h = self._enter()
        try:
            raw = get_string(C.trainrt_session_config_dump, h, initial=8192)
        finally:
            self._exit()
        return raw.decode("utf-8", "surrogateescape")

    def profile(self) -> dict:
        """The per-op profile of the train steps since the session began or profile_reset()
        (docs/C_API.md, "Per-op profile"), parsed from its JSON. Needs a session created with
        runtime.profile_ops = true (ConfigError otherwise)."""
        h = self._enter()
        try:
            raw = get_string(C.trainrt_session_profile, h, initial=65536)
        finally:
            self._exit()
        return json.loads(raw.decode("utf-8"))

    def profile_reset(self) -> None:
        """Forget the profile so far (e.g. after warm-up steps)."""
        h = self._enter()
        try:
            C.trainrt_session_profile_reset(h)
        finally:
            self._exit()

    # -------------------------------------------------------------- checkpoints, export
    def save(self, dir: Optional[PathLike] = None) -> str:
        """Write a checkpoint of the current state; returns the directory written.

        ``dir=None``: into train.out_dir as ``step_<8 digits>/`` (``latest`` updated, only the
        newest train.keep_last kept; :class:`trainrt.ConfigError` without out_dir). Else
        exactly ``dir``, which must not exist (:class:`trainrt.IoError`)."""
        d = encode_path(dir, "dir") if dir is not None else None
        cap = 1 << 16  # one call only (a second would write a second checkpoint)
        buf = ctypes.create_string_buffer(cap)
        needed = c_size_t(0)
        h = self._enter()
        try:
            C.trainrt_session_save(buf, cap, byref(needed), h, d)
        finally:
            self._exit()
        return os.fsdecode(buf.raw[:min(needed.value, cap - 1)])

    def load(self, path: PathLike) -> None:
        """Restore weights, AdamW state, step, tokens, sampler cursor and metadata from a
        checkpoint folder, or a folder whose ``latest`` names one (e.g. train.out_dir).
        Refused with the session unchanged: a corrupt or missing file
        (:class:`trainrt.FormatError`), another model shape (:class:`trainrt.ConfigError`),
        a newer format (:class:`trainrt.VersionMismatchError`)."""
        p = encode_path(path)
        h = self._enter()
        try:
            C.trainrt_session_load(h, p)
        finally:
            self._exit()

    def export(self, out_dir: PathLike, dtype: Union[DType, int, str] = DType.F32) -> None:
        """Hugging Face export into ``out_dir`` (created): model.safetensors (F32 or BF16) and
        config.json, plus the run's tokenizer files when it has a data.tokenizer. A LoRA run
        exports the base with the adapters merged in."""
        o = encode_path(out_dir, "out_dir")
        h = self._enter()
        try:
            C.trainrt_session_export(h, o, _dtype(dtype))
        finally:
            self._exit()

    def export_adapter(self, out_dir: PathLike,
                       dtype: Union[DType, int, str] = DType.F32) -> None:
        """LoRA runs only: the adapters as a PEFT folder (adapter_model.safetensors +
        adapter_config.json). A run without adapters: :class:`trainrt.InvalidArgumentError`."""
        o = encode_path(out_dir, "out_dir")
        h = self._enter()
        try:
            C.trainrt_session_export_adapter(h, o, _dtype(dtype))
        finally:
            self._exit()

    # -------------------------------------------------------------- sampling
    @staticmethod
    def _sample_options(what: str, temperature: float, top_k: int, seed: int,
                        stop_ids: Any = None) -> Tuple[Any, Any]:
        """The C options (and the array that keeps stop_ids alive)."""
        if seed < 0 or seed >= 2 ** 64:
            raise InvalidArgumentError("%s: seed must be in [0, 2**64)" % what)
        o = new_struct(_CSampleOptions, SAMPLE_OPTIONS_VERSION)
        o.temperature = float(temperature)
        o.top_k = int(top_k)
        o.seed = int(seed)
        stops = None
        if stop_ids is not None:
            stops = array.array("i", [int(i) for i in stop_ids])
            if len(stops):
                o.stop_ids = ctypes.cast(stops.buffer_info()[0], ctypes.POINTER(c_int32))
                o.n_stop_ids = len(stops)
        return o, stops

    def sample(self, prompt: Any, n_new: int, *, temperature: float = 1.0, top_k: int = 0,
               seed: int = 1337) -> List[int]:
        """Generate ``n_new`` token ids continuing ``prompt`` (at least one id, each in
        ``[0, vocab_size)``). ``temperature`` > 0 scales the logits, 0 = greedy; ``top_k``
        samples among the k most likely (0 = all); the same seed, model and prompt give the
        same ids. The model reads the last train.seq_len tokens. Training state is
        unchanged."""
        addr, n_prompt, keep = _buffers.int32_buffer(prompt, "prompt")
        n_new = int(n_new)
        if n_new < 0:
            raise InvalidArgumentError("sample: n_new must be >= 0, got %d" % n_new)
        o, _ = self._sample_options("sample", temperature, top_k, seed)
        out = array.array("i", bytes(4 * max(1, n_new)))
        oaddr = out.buffer_info()[0]
        h = self._enter()
        try:
            C.trainrt_session_sample(oaddr, n_new, h, addr, n_prompt, n_new, byref(o))
        finally:
            self._exit()
        del keep
        return out.tolist()[:n_new]

    def generate_ids(self, prompt: Any, max_new: int, *, stop_ids: Any = None,
                     temperature: float = 1.0, top_k: int = 0, seed: int = 1337) -> List[int]:
        """As :meth:`sample`, but generation ends after an id of ``stop_ids`` (it is the
        last id returned: a chat model's end-of-turn, :meth:`ChatTemplate.stop_ids`) or
        after ``max_new`` ids (trainrt_session_generate)."""
        addr, n_prompt, keep = _buffers.int32_buffer(prompt, "prompt")
        max_new = int(max_new)
        if max_new < 0:
            raise InvalidArgumentError("generate: max_new must be >= 0, got %d" % max_new)
        o, stops = self._sample_options("generate", temperature, top_k, seed, stop_ids)
        out = array.array("i", bytes(4 * max(1, max_new)))
        n = c_size_t(0)
        h = self._enter()
        try:
            C.trainrt_session_generate(byref(n), out.buffer_info()[0], max_new, h, addr,
                                       n_prompt, max_new, byref(o))
        finally:
            self._exit()
        del keep, stops
        return out.tolist()[:n.value]

    def generate(self, prompt: str, n_new: int, tokenizer: Optional["Tokenizer"] = None, *,
                 temperature: float = 1.0, top_k: int = 0, seed: int = 1337,
                 stop_ids: Any = None) -> str:
        """:meth:`generate_ids` on text: ``prompt`` encoded by ``tokenizer`` (None:
        byte-level, the UTF-8 bytes are the ids, for vocab_size 256 models), up to ``n_new``
        tokens generated (fewer when one of ``stop_ids`` ends the reply; it is decoded too),
        and the continuation decoded (invalid UTF-8 replaced)."""
        if tokenizer is not None:
            ids: Any = tokenizer.encode(prompt)
        else:
            ids = list(prompt.encode("utf-8"))
        out = self.generate_ids(ids, n_new, stop_ids=stop_ids, temperature=temperature,
                                top_k=top_k, seed=seed)
        if tokenizer is not None:
            return tokenizer.decode(out)
        if any(i > 255 for i in out):
            raise InvalidArgumentError("generate: ids above 255 without a tokenizer (pass the "
                                       "run's Tokenizer)")
        return bytes(out).decode("utf-8", "replace")

    # -------------------------------------------------------------- parameters
    def _load_params(self) -> List[ParamInfo]:
        if self._params is not None:
            return self._params
        h = self._enter()
        try:
            n_tensors, numel = c_int64(), c_int64()
            C.trainrt_session_param_count(byref(n_tensors), byref(numel), h)
            params: List[ParamInfo] = []
            info = new_struct(_CParamInfo, PARAM_INFO_VERSION)
            for i in range(n_tensors.value):
                def call(buf: Any, cap: int, needed: Any, i: int = i) -> int:
                    return C.trainrt_session_param_info(byref(info), buf, cap, needed, h, i)
                name = get_string(call, initial=128).decode("utf-8", "replace")
                ndim = max(0, min(4, info.ndim))
                try:
                    role: Any = ParamRole(info.role)
                except ValueError:
                    role = info.role
                params.append(ParamInfo(name, tuple(info.shape[k] for k in range(ndim)), role,
                                        info.layer, bool(info.trainable), info.numel,
                                        info.offset))
            self._params = params
            self._param_index = {p.name: p for p in params}
            self._numel = numel.value
        finally:
            self._exit()
        return params

    def param_count(self) -> Tuple[int, int]:
        """``(tensors, floats)``: how many tensors the model has and how many floats the flat
        buffer of all of them holds."""
        params = self._load_params()
        assert self._numel is not None
        return len(params), self._numel

    def params(self) -> List[ParamInfo]:
        """Every model tensor in the model's table order (embeddings, each block, final
        norm and head; a LoRA run's adapters after the linear they adapt), with Hugging Face
        names and shapes. ``offset`` locates each in the flat buffer of :meth:`read_params`."""
        return list(self._load_params())

    def param(self, name: str) -> ParamInfo:
        """The :class:`ParamInfo` of the tensor called ``name`` (KeyError if none)."""
        self._load_params()
        assert self._param_index is not None
        return self._param_index[name]

    def read_params(self, name: Optional[str] = None, *, as_numpy: bool = False) -> Any:
        """A copy of the fp32 master weights: the tensor called ``name``, or (``None``) every
        tensor back to back (the flat buffer, :meth:`params` giving each one's offset).

        Returns an ``array.array('f')`` (flat), or with ``as_numpy=True`` a numpy float32
        array (shaped as the tensor when ``name`` is given, flat otherwise). An unknown name
        raises :class:`trainrt.InvalidArgumentError` with the library's closest name."""
        self._load_params()
        assert self._param_index is not None and self._numel is not None
        nm = _buffers.optional_name(name)
        info = self._param_index.get(name) if name is not None else None
        if name is not None and info is None:
            count = 0  # let the library name the closest tensor
        else:
            count = info.numel if info is not None else self._numel
        if as_numpy:
            np = _buffers.require_numpy()
            out: Any = np.empty(max(1, count), dtype=np.float32)[:count]
            addr = out.ctypes.data
        else:
            out = _buffers.new_float_array(max(1, count))
            addr = out.buffer_info()[0]
            if count == 0:
                out = _buffers.new_float_array(0)
        h = self._enter()
        try:
            C.trainrt_session_read_params(addr, count, h, nm)
        finally:
            self._exit()
        if name is not None and info is None:  # the library accepted it after all
            raise InvalidArgumentError("read_params: no tensor called %r" % name)
        if as_numpy and info is not None:
            out = out.reshape(info.shape)
        return out

    def write_params(self, values: Any, name: Optional[str] = None) -> None:
        """Replace the tensor called ``name`` (``None``: every tensor, from a flat buffer) with
        ``values``: any float sequence (flat or nested), ``array.array``, memoryview or numpy
        array (converted to float32; its element count must be the tensor's numel). Frozen
        tensors may be written too; the next step, eval and forward see the new values; the
        optimizer's moments and schedule are kept. Refused with the session unchanged: a
        size mismatch (:class:`trainrt.InvalidArgumentError`), a NaN or infinity
        (:class:`trainrt.NonFiniteError`, naming the tensor and element)."""
        nm = _buffers.optional_name(name)
        addr, n, keep = _buffers.float32_buffer(values)
        h = self._enter()
        try:
            C.trainrt_session_write_params(h, nm, addr, n)
        finally:
            self._exit()
        del keep

    @property
    def metadata(self) -> "SessionMetadata":
        """The session's user metadata: a mutable mapping of str to str, saved in its
        checkpoints and restored by :meth:`load` (replacing the session's). Keys: 1-128
        bytes of ``[A-Za-z0-9_.-]``; values: UTF-8 text up to 64 KiB; up to 256 keys."""
        return SessionMetadata(self)


class SessionMetadata(MutableMapping[str, str]):
    """``session.metadata``: the session's string key/value pairs, over the C calls (nothing
    is cached). Iteration takes a snapshot of the keys, sorted bytewise."""

    __slots__ = ("_session",)

    def __init__(self, session: Session) -> None:
        self._session = session

    def _get(self, h: int, key: bytes) -> Tuple[bool, str]:
        found = c_int32()

        def call(buf: Any, cap: int, needed: Any) -> int:
            return C.trainrt_session_get_metadata(buf, cap, needed, byref(found), h, key)
        raw = get_string(call)
        return bool(found.value), raw.decode("utf-8", "replace")

    def __getitem__(self, key: str) -> str:
        k = encode_str(key, "key")
        s = self._session
        h = s._enter()
        try:
            found, value = self._get(h, k)
        finally:
            s._exit()
        if not found:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        k = encode_str(key, "key")
        s = self._session
        h = s._enter()
        try:
            return self._get(h, k)[0]
        finally:
            s._exit()

    def __setitem__(self, key: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("metadata values are str, not %s" % type(value).__name__)
        k, v = encode_str(key, "key"), encode_str(value, "value")
        s = self._session
        h = s._enter()
        try:
            C.trainrt_session_set_metadata(h, k, v)
        finally:
            s._exit()

    def __delitem__(self, key: str) -> None:
        k = encode_str(key, "key")
        s = self._session
        h = s._enter()
        try:
            if not self._get(h, k)[0]:
                raise KeyError(key)
            C.trainrt_session_set_metadata(h, k, None)
        finally:
            s._exit()

    def _keys(self) -> List[str]:
        s = self._session
        h = s._enter()
        try:
            n = c_int64()
            C.trainrt_session_metadata_count(byref(n), h)
            keys = []
            for i in range(n.value):
                def call(buf: Any, cap: int, needed: Any, i: int = i) -> int:
                    return C.trainrt_session_metadata_key(buf, cap, needed, h, i)
                keys.append(get_string(call, initial=160).decode("utf-8", "replace"))
        finally:
            s._exit()
        return keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        s = self._session
        h = s._enter()
        try:
            n = c_int64()
            C.trainrt_session_metadata_count(byref(n), h)
        finally:
            s._exit()
        return n.value

    def to_dict(self) -> Dict[str, str]:
        """A snapshot of every pair, taken in one go (no other thread's change in between)."""
        s = self._session
        s._enter()  # re-entrant: the calls below nest inside this one
        try:
            return {k: self[k] for k in self._keys()}
        finally:
            s._exit()

    def __repr__(self) -> str:
        try:
            return "SessionMetadata(%r)" % self.to_dict()
        except Exception:
            return "SessionMetadata(<unavailable>)"


# ------------------------------------------------------------------ train_iter
class _Done:
    __slots__ = ("stopped", "error")

    def __init__(self, stopped: bool, error: Optional[BaseException]) -> None:
        self.stopped = stopped
        self.error = error


class _TrainIterState:
    """What the worker thread and the consumer share (the worker never holds the public
    iterator, so dropping the iterator closes it)."""

    def __init__(self, session: Session, n_steps: Optional[int]) -> None:
        self.session = session
        self.n_steps = n_steps
        self.cond = threading.Condition(threading.Lock())
        self.items: Deque[Any] = collections.deque()
        self.go = False  # the consumer lets the paused worker continue
        self.stopping = False  # the consumer (or close) wants training to end
        self.paused = False  # the worker waits inside its callback for `go`
        self.finished = False  # the worker has returned from train()
        self.in_library = False  # the worker is inside the library's train()
        self.consumer: Optional[int] = None
        self.thread: Optional[threading.Thread] = None

    def callback(self, p: Any, payload: Any) -> int:
        try:
            prog = _progress(p[0])
            with self.cond:
                if self.stopping:
                    return 1
                self.items.append(prog)
                self.paused = True
                self.cond.notify_all()
                while not self.go and not self.stopping:
                    self.cond.wait()
                self.go = False
                self.paused = False
                return 1 if self.stopping else 0
        except BaseException:  # never unwinds into C
            return 1

    def run(self) -> None:
        stopped, error = False, None
        with self.cond:
            self.in_library = True
        try:
            stopped = self.session._train(self.n_steps, PROGRESS_FN(self.callback)) == STOPPED
        except BaseException as e:
            error = e
        with self.cond:
            self.in_library = False
            self.finished = True
            if self.session._iter is self:
                self.session._iter = None
            self.items.append(_Done(stopped, error))
            self.cond.notify_all()

    def start(self) -> None:
        s = self.session
        if s._iter is not None and not s._iter.finished:
            raise BusyError("this Session already runs a train_iter() (close it first)")
        s._iter = self
        self.thread = threading.Thread(target=self.run, name="trainrt-train_iter", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
            # Mid-step (not paused in the callback): the library abandons the step between
            # micro-batches rather than finish it (a Ctrl-C that ended the loop need not wait
            # for a long step). Only while its train() runs: no request is left for a later one.
            if self.in_library and not self.paused:
                self.session._request_stop_quiet()

    def join(self) -> None:
        t = self.thread
        if t is not None and t is not threading.current_thread():
            t.join()


class TrainIterator(Iterator[Progress]):
    """Iterator of :meth:`Session.train_iter`; also a context manager.

    Attributes (after the loop ended): ``stopped`` (True when training ended early),
    ``done``."""

    def __init__(self, session: Session, n_steps: Optional[int]) -> None:
        self._state = _TrainIterState(session, n_steps)
        self.stopped: Optional[bool] = None
        self.done = False
        live_train_iters.add(self)

    def __iter__(self) -> "TrainIterator":
        return self

    def __next__(self) -> Progress:
        st = self._state
        if self.done:
            raise StopIteration
        with st.cond:
            st.consumer = _get_ident()
            if st.thread is None:
                if st.stopping:
                    self.done, self.stopped = True, True
                    raise StopIteration
                st.start()
            elif st.paused:
                st.go = True
                st.cond.notify_all()
            while not st.items:
                st.cond.wait()
            item = st.items.popleft()
        if not isinstance(item, _Done):
            return item
        st.join()
        self.done = True
        self.stopped = item.stopped
        if item.error is not None:
            raise item.error
        raise StopIteration

    def close(self) -> None:
        """Stop training at the step last yielded (if it is still running) and wait for the
        worker; the session is usable afterwards. Idempotent."""
        st = self._state
        st.stop()
        st.join()
        if self.done:
            return
        self.done = True
        with st.cond:
            done = [i for i in st.items if isinstance(i, _Done)]
            st.items.clear()
        # The outcome of the run (an error of a run the caller abandoned is dropped with it);
        # None when it never started.
        self.stopped = done[0].stopped if done else None

    def __enter__(self) -> "TrainIterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
