use crate::callbacks::{
    log_trampoline, progress_trampoline, LogCallback, LogLevel, LogSink, ProgressState,
};
use crate::config::Config;
use crate::error::{check, Error, Result, Status};
use crate::util::{cpath, read_string};
use std::cell::Cell;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Arc, Mutex};
use trainrt_sys as sys;

/// Figures of one completed optimizer step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepResult {
    /// 1-based number of the step; 0 = none completed yet.
    pub step: i64,
    /// Mean train loss over the step's micro-batches (nats/token).
    pub loss: f64,
    pub lr: f64,
    /// Global L2 norm of the gradient before clipping.
    pub grad_norm: f64,
    pub tokens: i64,
    pub tokens_total: i64,
    /// Wall time of the step in milliseconds.
    pub ms: f64,
}

impl StepResult {
    fn from_raw(r: &sys::trainrt_step_result) -> StepResult {
        StepResult {
            step: r.step,
            loss: r.loss,
            lr: r.lr,
            grad_norm: r.grad_norm,
            tokens: r.tokens,
            tokens_total: r.tokens_total,
            ms: r.ms,
        }
    }
}

/// Running figures of a session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    pub step: i64,
    pub tokens_total: i64,
    pub tokens_per_s: f64,
    pub step_ms_p50: f64,
    pub step_ms_p95: f64,
    pub bytes_in_use: i64,
    /// NaN before the first step.
    pub last_loss: f64,
    /// NaN before the first eval.
    pub last_val_loss: f64,
    pub bytes_reserved: i64,
    pub skipped_steps: i64,
    pub loss_scale: f64,
    /// Training FLOPs per token, 6N + 6·L·C·T.
    pub model_flops_per_token: f64,
    /// The device's dense peak FLOP/s in the run's precision; 0 = unknown (the CPU).
    pub peak_flops: f64,
    /// Model FLOPs utilisation, normally in [0, 1]; 0 when the peak is unknown.
    pub mfu: f64,
    /// Data parallel: this process's rank and the ranks training together (0 and 1 alone).
    pub rank: i32,
    pub world_size: i32,
}

/// What a progress report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressKind {
    /// A logged train step (every runtime.log_every); `loss` is that step's train loss.
    Step,
    /// A finished eval; `loss` is the val loss.
    Eval,
}

/// What [`Session::train_with`] reports to its closure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    pub kind: ProgressKind,
    pub step: i64,
    pub steps_total: i64,
    pub loss: f64,
    pub lr: f64,
    pub grad_norm: f64,
    pub tokens_total: i64,
    pub ms: f64,
    pub tokens_per_s: f64,
    pub elapsed_s: f64,
    pub eta_s: f64,
}

impl Progress {
    pub(crate) fn from_raw(p: &sys::trainrt_progress) -> Progress {
        Progress {
            kind: if p.kind == sys::TRAINRT_PROGRESS_EVAL {
                ProgressKind::Eval
            } else {
                ProgressKind::Step
            },
            step: p.step,
            steps_total: p.steps_total,
            loss: p.loss,
            lr: p.lr,
            grad_norm: p.grad_norm,
            tokens_total: p.tokens_total,
            ms: p.ms,
            tokens_per_s: p.tokens_per_s,
            elapsed_s: p.elapsed_s,
            eta_s: p.eta_s,
        }
    }
}

/// How [`Session::train`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainOutcome {
    /// Ran every step asked for.
    Completed,
    /// Ended early: a [`StopHandle`] or the progress closure asked it to.
    Stopped,
}

/// Weight type of a Hugging Face export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    F32 = 0,
    Bf16 = 1,
}

/// Options of [`Session::sample`]; `Default` is the C defaults (temperature 1, all tokens,
/// seed 1337).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleOptions {
    /// > 0 scales the logits; 0 = greedy.
    pub temperature: f64,
    /// Sample among the k most likely tokens; 0 = all.
    pub top_k: i32,
    pub seed: u64,
}

impl Default for SampleOptions {
    fn default() -> Self {
        let d = sys::trainrt_sample_options::default();
        SampleOptions {
            temperature: d.temperature,
            top_k: d.top_k,
            seed: d.seed,
        }
    }
}

/// Owns the C session and everything C may call back into while it lives.
struct Inner {
    raw: *mut sys::trainrt_session,
    /// Sink inherited from the config the session was created from.
    _config_log: Option<Arc<LogSink>>,
    /// Sink set by Session::set_log (dropped after the session is destroyed).
    log: Mutex<Option<Arc<LogSink>>>,
}

// SAFETY: the handle may move between threads. Through a shared `&Inner` (StopHandle) only
// trainrt_session_request_stop is ever called, which C makes safe from any thread at any
// time; every other call goes through the unique, !Sync `Session`. Destroy runs in Drop, when
// no Session or StopHandle (hence no call) remains. The log sinks are Send + Sync.
unsafe impl Send for Inner {}
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: last owner; nothing else can be using the handle.
        unsafe { sys::trainrt_session_destroy(self.raw) }
    }
}

/// One training run: model, optimizer state, data, sampler, backend, metrics.
///
/// `Send` but not `Sync`: libtrainrt lets a session move between threads but answers a
/// second thread's concurrent call with `TRAINRT_ERR_BUSY`, so every method takes `&mut self`
/// and sharing `&Session` across threads is ruled out at compile time. To stop a `train()`
/// from another thread use [`Session::stop_handle`].
pub struct Session {
    inner: Arc<Inner>,
    vocab_size: i64,
    _not_sync: PhantomData<Cell<()>>,
}

/// Asks a running [`Session::train`] to stop after its current step, from any thread.
/// It keeps the session's C handle alive (not the Rust `Session`): dropping the `Session`
/// while handles remain frees the handle when the last one goes.
#[derive(Clone)]
pub struct StopHandle {
    inner: Arc<Inner>,
}

impl StopHandle {
    /// Stop the current train() after its step in flight; if none runs, the next one stops
    /// at once.
    pub fn request_stop(&self) -> Result<()> {
        // SAFETY: request_stop is safe from any thread, concurrently with any session call.
        check(unsafe { sys::trainrt_session_request_stop(self.inner.raw) }).map(|_| ())
    }
}

impl std::fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopHandle")
            .field("raw", &self.inner.raw)
            .finish()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("raw", &self.inner.raw)
            .finish()
    }
}

/// A whole evaluation (`trainrt_eval_result`): every target of a token stream scored once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EvalResult {
    /// Mean loss over the scored targets (nats/token).
    pub loss: f64,
    /// exp(loss).
    pub perplexity: f64,
    /// Targets scored: the stream's tokens - 1.
    pub tokens: i64,
    /// Windows of train.seq_len targets run (the last may be shorter).
    pub windows: i64,
}

fn eval_out<F: FnOnce(*mut sys::trainrt_eval_result) -> i32>(call: F) -> Result<EvalResult> {
    let mut r = sys::trainrt_eval_result::default();
    check(call(&mut r))?;
    Ok(EvalResult { loss: r.loss, perplexity: r.perplexity, tokens: r.tokens, windows: r.windows })
}

fn step_out<F: FnOnce(*mut sys::trainrt_step_result) -> i32>(call: F) -> Result<StepResult> {
    let mut r = sys::trainrt_step_result::default();
    check(call(&mut r))?;
    Ok(StepResult::from_raw(&r))
}

impl Session {
    /// Builds model, optimizer, data and backend from a copy of `config`.
    pub fn new(config: &Config) -> Result<Session> {
        let vocab_size = config.get_int("model.vocab_size")?;
        let mut raw = ptr::null_mut();
        // SAFETY: live config handle; out pointer to a local.
        check(unsafe { sys::trainrt_session_create(&mut raw, config.as_raw()) })?;
        Ok(Session {
            inner: Arc::new(Inner {
                raw,
                _config_log: config.log.clone(),
                log: Mutex::new(None),
            }),
            vocab_size,
            _not_sync: PhantomData,
        })
    }

    /// `Config::from_file(path)` then `Session::new`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Session> {
        Session::new(&Config::from_file(path)?)
    }

    fn raw(&mut self) -> *mut sys::trainrt_session {
        self.inner.raw
    }

    /// Log sink for this session (overrides the config's and the process default);
    /// `None`: back to the process default.
    pub fn set_log(&mut self, f: Option<LogCallback>, min_level: LogLevel) -> Result<()> {
        let sink = f.map(LogSink::new);
        let (cb, payload): (sys::trainrt_log_fn, *mut c_void) = match &sink {
            Some(s) => (Some(log_trampoline), s.payload()),
            None => (None, ptr::null_mut()),
        };
        let raw = self.raw();
        // SAFETY: the sink is stored in Inner, which outlives the C session.
        check(unsafe { sys::trainrt_session_set_log(raw, cb, payload, min_level as i32) })?;
        // C no longer points at the previous sink: it may be freed now.
        *self.inner.log.lock().unwrap_or_else(|e| e.into_inner()) = sink;
        Ok(())
    }

    /// One optimizer step on batches from the session's sampler.
    pub fn step(&mut self) -> Result<StepResult> {
        let raw = self.raw();
        // SAFETY: live handle, unique use (&mut self).
        step_out(|out| unsafe { sys::trainrt_session_step(out, raw) })
    }

    /// One optimizer step on host tokens: grad_accum * batch_size * (seq_len + 1) ids.
    pub fn step_tokens(&mut self, tokens: &[i32]) -> Result<StepResult> {
        let raw = self.raw();
        // SAFETY: tokens is valid for tokens.len() reads during the call.
        step_out(|out| unsafe {
            sys::trainrt_session_step_tokens(out, raw, tokens.as_ptr(), tokens.len())
        })
    }

    /// step_tokens training on some targets only (instruction tuning): loss_mask holds
    /// grad_accum * batch_size * seq_len values, non-zero where the target tokens[k][b][t + 1]
    /// counts (None: all count); positions as many (None: 0 .. seq_len - 1 in every row). The
    /// loss is the mean over the step's counted targets. The two must have the same length.
    pub fn step_masked(
        &mut self,
        tokens: &[i32],
        loss_mask: Option<&[u8]>,
        positions: Option<&[i32]>,
    ) -> Result<StepResult> {
        let n_mask = match (loss_mask, positions) {
            (Some(m), Some(p)) if m.len() != p.len() => {
                return Err(Error::new(
                    Status::InvalidArgument,
                    format!(
                        "step_masked: loss_mask holds {} values but positions {}; both hold \
                         grad_accum * batch_size * seq_len",
                        m.len(),
                        p.len()
                    ),
                ))
            }
            (Some(m), _) => m.len(),
            (None, Some(p)) => p.len(),
            (None, None) => 0,
        };
        let mask_ptr = loss_mask.map_or(std::ptr::null(), |m| m.as_ptr());
        let pos_ptr = positions.map_or(std::ptr::null(), |p| p.as_ptr());
        let raw = self.raw();
        // SAFETY: tokens, and loss_mask / positions when given, are valid for their lengths
        // (n_mask each) during the call; a null pointer is "none".
        step_out(|out| unsafe {
            sys::trainrt_session_step_masked(
                out,
                raw,
                tokens.as_ptr(),
                tokens.len(),
                mask_ptr,
                pos_ptr,
                n_mask,
            )
        })
    }

    /// Waits for queued work; returns the last step's figures.
    pub fn sync(&mut self) -> Result<StepResult> {
        let raw = self.raw();
        // SAFETY: as step.
        step_out(|out| unsafe { sys::trainrt_session_sync(out, raw) })
    }

    /// Mean val loss over train.eval_batches windows from the start of data.val.
    pub fn eval(&mut self) -> Result<f64> {
        let mut loss = 0f64;
        let raw = self.raw();
        // SAFETY: as step.
        check(unsafe { sys::trainrt_session_eval(&mut loss, raw) })?;
        Ok(loss)
    }

    /// Every token of data.val but the first scored exactly once, in disjoint windows of
    /// train.seq_len targets (the shards read as one stream; the last window shorter; no wrap).
    pub fn eval_whole(&mut self) -> Result<EvalResult> {
        let raw = self.raw();
        // SAFETY: as step.
        eval_out(|out| unsafe { sys::trainrt_session_eval_whole(out, raw) })
    }

    /// [`Session::eval_whole`] over host ids (at least 2) taken as one stream.
    pub fn eval_tokens(&mut self, tokens: &[i32]) -> Result<EvalResult> {
        let raw = self.raw();
        // SAFETY: tokens is valid for tokens.len() reads during the call.
        eval_out(|out| unsafe {
            sys::trainrt_session_eval_tokens(out, raw, tokens.as_ptr(), tokens.len())
        })
    }

    /// [`Session::eval_whole`] over raw text, tokenized in memory as `prepare_text` lays out
    /// one text file: with `tokenizer` (a tokenizer.json/.model or a model folder) its
    /// end-of-text token, then the text's ids; `None`: one id per byte.
    pub fn eval_text(&mut self, text: &str, tokenizer: Option<&Path>) -> Result<EvalResult> {
        let tok = tokenizer.map(cpath).transpose()?;
        let raw = self.raw();
        // SAFETY: text is valid for text.len() reads, tok (or NULL) a C string, both live
        // during the call.
        eval_out(|out| unsafe {
            sys::trainrt_session_eval_text(
                out,
                raw,
                text.as_ptr() as *const c_char,
                text.len(),
                tok.as_ref().map_or(ptr::null(), |t| t.as_ptr()),
            )
        })
    }

    fn forward_into(
        &mut self,
        tokens: &[i32],
        rows: i64,
        seq_len: i64,
        logits: &mut [f32],
    ) -> Result<f64> {
        let want = usize::try_from(rows.max(0) * (seq_len.max(0) + 1)).unwrap_or(usize::MAX);
        if tokens.len() != want {
            return Err(Error::new(
                Status::InvalidArgument,
                format!(
                    "forward: {} tokens given, rows * (seq_len + 1) = {want}",
                    tokens.len()
                ),
            ));
        }
        let mut loss = 0f64;
        let raw = self.raw();
        let lp = if logits.is_empty() {
            ptr::null_mut()
        } else {
            logits.as_mut_ptr()
        };
        // SAFETY: tokens holds rows*(seq_len+1) ids (checked); logits has logits.len() floats.
        check(unsafe {
            sys::trainrt_session_forward(
                &mut loss,
                lp,
                logits.len(),
                raw,
                tokens.as_ptr(),
                rows,
                seq_len,
            )
        })?;
        Ok(loss)
    }

    /// Mean loss of the current model on `rows` rows of `seq_len + 1` ids (no update).
    pub fn forward(&mut self, tokens: &[i32], rows: i64, seq_len: i64) -> Result<f64> {
        self.forward_into(tokens, rows, seq_len, &mut [])
    }

    /// Like [`forward`](Self::forward), also returning rows * seq_len * vocab_size logits.
    pub fn forward_logits(
        &mut self,
        tokens: &[i32],
        rows: i64,
        seq_len: i64,
    ) -> Result<(f64, Vec<f32>)> {
        let n = usize::try_from(rows.max(0) * seq_len.max(0) * self.vocab_size).unwrap_or(0);
        let mut logits = vec![0f32; n];
        let loss = self.forward_into(tokens, rows, seq_len, &mut logits)?;
        Ok((loss, logits))
    }

    /// The training loop: `n_steps` more steps (<= 0: until train.steps), with the config's
    /// log / eval / checkpoint cadence.
    pub fn train(&mut self, n_steps: i64) -> Result<TrainOutcome> {
        let raw = self.raw();
        // SAFETY: as step; no callback.
        let code =
            check(unsafe { sys::trainrt_session_train(raw, n_steps, None, ptr::null_mut()) })?;
        Ok(if code == sys::TRAINRT_STOPPED {
            TrainOutcome::Stopped
        } else {
            TrainOutcome::Completed
        })
    }

    /// [`train`](Self::train) calling `f` at each logged step and eval; `f` returns `true`
    /// to continue, `false` to stop. A panic in `f` stops the run and is re-raised here
    /// once the library has returned (it never unwinds through C).
    pub fn train_with(
        &mut self,
        n_steps: i64,
        mut f: impl FnMut(&Progress) -> bool,
    ) -> Result<TrainOutcome> {
        let mut state = ProgressState {
            f: &mut f,
            panic: None,
        };
        let raw = self.raw();
        // SAFETY: state lives on this stack frame for the whole call; C calls the trampoline
        // only during it.
        let code = unsafe {
            sys::trainrt_session_train(
                raw,
                n_steps,
                Some(progress_trampoline),
                &mut state as *mut ProgressState<'_> as *mut c_void,
            )
        };
        if let Some(panic) = state.panic.take() {
            std::panic::resume_unwind(panic);
        }
        let code = check(code)?;
        Ok(if code == sys::TRAINRT_STOPPED {
            TrainOutcome::Stopped
        } else {
            TrainOutcome::Completed
        })
    }

    /// A handle that can stop this session's `train()` from any thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Same as `self.stop_handle().request_stop()`.
    pub fn request_stop(&mut self) -> Result<()> {
        self.stop_handle().request_stop()
    }

    pub fn metrics(&mut self) -> Result<Metrics> {
        let mut m = sys::trainrt_metrics::default();
        let raw = self.raw();
        // SAFETY: struct initialised with its size and version.
        check(unsafe { sys::trainrt_session_metrics(&mut m, raw) })?;
        Ok(Metrics {
            step: m.step,
            tokens_total: m.tokens_total,
            tokens_per_s: m.tokens_per_s,
            step_ms_p50: m.step_ms_p50,
            step_ms_p95: m.step_ms_p95,
            bytes_in_use: m.bytes_in_use,
            last_loss: m.last_loss,
            last_val_loss: m.last_val_loss,
            bytes_reserved: m.bytes_reserved,
            skipped_steps: m.skipped_steps,
            loss_scale: m.loss_scale,
            model_flops_per_token: m.model_flops_per_token,
            peak_flops: m.peak_flops,
            mfu: m.mfu,
            rank: m.rank,
            world_size: m.world_size,
        })
    }

    /// The resolved config the session runs with, as TOML.
    pub fn config_dump(&mut self) -> Result<String> {
        let raw = self.raw();
        // SAFETY: as step; buffer from read_string.
        read_string(|buf, cap, needed| unsafe {
            sys::trainrt_session_config_dump(buf, cap, needed, raw)
        })
    }

    /// Writes a checkpoint: into `dir` (must not exist), or with `None` into train.out_dir
    /// as step_NNNNNNNN/ (updating `latest`). Returns the directory written.
    pub fn save(&mut self, dir: Option<&Path>) -> Result<PathBuf> {
        let dir = dir.map(cpath).transpose()?;
        let dp = dir.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        let raw = self.raw();
        // SAFETY: as step; dir is a valid C string or NULL.
        read_string(|buf, cap, needed| unsafe {
            sys::trainrt_session_save(buf, cap, needed, raw, dp)
        })
        .map(PathBuf::from)
    }

    /// Restores weights, optimizer state, step and sampler cursor from a checkpoint (or a
    /// folder whose `latest` names one). On error the session is unchanged.
    pub fn load(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let p = cpath(path.as_ref())?;
        let raw = self.raw();
        // SAFETY: as step.
        check(unsafe { sys::trainrt_session_load(raw, p.as_ptr()) }).map(|_| ())
    }

    /// Hugging Face GPT-2 export into `out_dir` (created).
    pub fn export(&mut self, out_dir: impl AsRef<Path>, dtype: Dtype) -> Result<()> {
        let p = cpath(out_dir.as_ref())?;
        let raw = self.raw();
        // SAFETY: as step.
        check(unsafe { sys::trainrt_session_export(raw, p.as_ptr(), dtype as i32) }).map(|_| ())
    }

    /// A LoRA run's adapters as a Hugging Face PEFT folder (`adapter_model.safetensors` +
    /// `adapter_config.json`); `export` of such a run writes the merged model. A run without
    /// adapters is `InvalidArgument`.
    pub fn export_adapter(&mut self, out_dir: impl AsRef<Path>, dtype: Dtype) -> Result<()> {
        let p = cpath(out_dir.as_ref())?;
        let raw = self.raw();
        // SAFETY: as step.
        check(unsafe { sys::trainrt_session_export_adapter(raw, p.as_ptr(), dtype as i32) })
            .map(|_| ())
    }

    /// `n_new` tokens continuing `prompt` (training state unchanged).
    pub fn sample(
        &mut self,
        prompt: &[i32],
        n_new: usize,
        options: &SampleOptions,
    ) -> Result<Vec<i32>> {
        let o = sys::trainrt_sample_options {
            temperature: options.temperature,
            top_k: options.top_k,
            seed: options.seed,
            ..Default::default()
        };
        let mut out = vec![0i32; n_new];
        let raw = self.raw();
        // SAFETY: out has n_new slots; prompt valid for its length.
        check(unsafe {
            sys::trainrt_session_sample(
                out.as_mut_ptr(),
                out.len(),
                raw,
                prompt.as_ptr(),
                prompt.len(),
                n_new,
                &o,
            )
        })?;
        Ok(out)
    }

    /// Up to `max_new` tokens continuing `prompt`, ending after one of `stop_ids` (the last
    /// id returned; a chat model's end-of-turn: [`crate::ChatTemplate::stop_ids`]) when one
    /// comes (training state unchanged).
    pub fn generate(
        &mut self,
        prompt: &[i32],
        max_new: usize,
        options: &SampleOptions,
        stop_ids: &[i32],
    ) -> Result<Vec<i32>> {
        let o = sys::trainrt_sample_options {
            temperature: options.temperature,
            top_k: options.top_k,
            seed: options.seed,
            stop_ids: if stop_ids.is_empty() {
                std::ptr::null()
            } else {
                stop_ids.as_ptr()
            },
            n_stop_ids: stop_ids.len(),
            ..Default::default()
        };
        let mut out = vec![0i32; max_new];
        let mut n = 0usize;
        let raw = self.raw();
        // SAFETY: out has max_new slots; prompt and stop_ids valid for their lengths.
        check(unsafe {
            sys::trainrt_session_generate(
                &mut n,
                out.as_mut_ptr(),
                out.len(),
                raw,
                prompt.as_ptr(),
                prompt.len(),
                max_new,
                &o,
            )
        })?;
        out.truncate(n);
        Ok(out)
    }

    /// The raw handle (still owned by this Session).
    pub fn as_raw(&mut self) -> *mut sys::trainrt_session {
        self.raw()
    }
}

/// The checkpoint `out_dir/latest` names; `None` when there is none yet.
pub fn checkpoint_latest(out_dir: impl AsRef<Path>) -> Result<Option<PathBuf>> {
    let p = cpath(out_dir.as_ref())?;
    // SAFETY: valid C string; buffer from read_string.
    let s = read_string(|buf, cap, needed| unsafe {
        sys::trainrt_checkpoint_latest(buf, cap, needed, p.as_ptr())
    })?;
    Ok(if s.is_empty() {
        None
    } else {
        Some(PathBuf::from(s))
    })
}

/// Hugging Face export from a checkpoint, without a session.
pub fn checkpoint_export(
    path: impl AsRef<Path>,
    out_dir: impl AsRef<Path>,
    dtype: Dtype,
) -> Result<()> {
    let (p, o) = (cpath(path.as_ref())?, cpath(out_dir.as_ref())?);
    // SAFETY: valid C strings.
    check(unsafe { sys::trainrt_checkpoint_export(p.as_ptr(), o.as_ptr(), dtype as i32) })
        .map(|_| ())
}

/// A LoRA checkpoint's adapters as a PEFT folder, without a session.
pub fn checkpoint_export_adapter(
    path: impl AsRef<Path>,
    out_dir: impl AsRef<Path>,
    dtype: Dtype,
) -> Result<()> {
    let (p, o) = (cpath(path.as_ref())?, cpath(out_dir.as_ref())?);
    // SAFETY: valid C strings.
    check(unsafe { sys::trainrt_checkpoint_export_adapter(p.as_ptr(), o.as_ptr(), dtype as i32) })
        .map(|_| ())
}

/// Byte-level tokenization of a text file into llm.c shards (out_dir/train.bin, val.bin).
/// Returns (train tokens, val tokens).
pub fn prepare_bytes(
    text: impl AsRef<Path>,
    out_dir: impl AsRef<Path>,
    val_fraction: f64,
) -> Result<(i64, i64)> {
    let (t, o) = (cpath(text.as_ref())?, cpath(out_dir.as_ref())?);
    let (mut a, mut b) = (0i64, 0i64);
    // SAFETY: valid C strings and out pointers.
    check(unsafe {
        sys::trainrt_prepare_bytes(&mut a, &mut b, t.as_ptr(), o.as_ptr(), val_fraction)
    })?;
    Ok((a, b))
}
