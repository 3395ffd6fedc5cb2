//! Closures behind the C callbacks, and the `extern "C"` trampolines that call them.
use crate::error::{check, Result};
use std::any::Any;
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use trainrt_sys as sys;

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    Debug = 0,
    Info = 1,
    Warn = 2,
    Error = 3,
}

impl LogLevel {
    fn from_raw(level: i32) -> LogLevel {
        match level {
            i32::MIN..=0 => LogLevel::Debug,
            1 => LogLevel::Info,
            2 => LogLevel::Warn,
            _ => LogLevel::Error,
        }
    }
}

type LogFn = dyn FnMut(LogLevel, &str) + Send;

/// A log sink: called with each line's level and text (one line, no newline).
pub type LogCallback = Box<dyn FnMut(LogLevel, &str) + Send + 'static>;

/// A log closure with a stable address (the C payload). The Mutex makes it callable from
/// whichever thread the library logs on; it is shared (Arc) by a config and every session
/// created from it, since those sessions inherit the config's sink.
pub(crate) struct LogSink {
    f: Mutex<Box<LogFn>>,
}

impl LogSink {
    pub(crate) fn new(f: impl FnMut(LogLevel, &str) + Send + 'static) -> Arc<LogSink> {
        Arc::new(LogSink {
            f: Mutex::new(Box::new(f)),
        })
    }

    pub(crate) fn payload(self: &Arc<Self>) -> *mut c_void {
        Arc::as_ptr(self) as *mut c_void
    }
}

/// C log callback; payload is a `*const LogSink` kept alive by its owner. A panic in the
/// closure is caught and dropped here (a log call has no way to report it).
pub(crate) unsafe extern "C" fn log_trampoline(
    level: i32,
    message: *const c_char,
    payload: *mut c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if payload.is_null() || message.is_null() {
            return;
        }
        // SAFETY: payload is the address of a LogSink its owner keeps alive while C may
        // call it; message is a NUL-terminated line valid during this call.
        let sink = unsafe { &*(payload as *const LogSink) };
        let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
        let mut f = sink.f.lock().unwrap_or_else(|e| e.into_inner());
        f(LogLevel::from_raw(level), &text);
    }));
}

/// Sets the process-wide default log sink (used by sessions without their own): lines at
/// `min_level` and above go to `f`; `None` restores the built-in stderr sink.
///
/// The closure is leaked on purpose: a session on another thread may be calling the previous
/// sink right now, so it is never freed. Call this a handful of times per process, not per step.
pub fn set_default_log(f: Option<LogCallback>, min_level: LogLevel) -> Result<()> {
    let (cb, payload): (sys::trainrt_log_fn, *mut c_void) = match f {
        Some(f) => {
            let sink: &'static LogSink = Box::leak(Box::new(LogSink { f: Mutex::new(f) }));
            (Some(log_trampoline), sink as *const LogSink as *mut c_void)
        }
        None => (None, std::ptr::null_mut()),
    };
    // SAFETY: the payload lives for the rest of the process.
    check(unsafe { sys::trainrt_log_set_default(cb, payload, min_level as i32) }).map(|_| ())
}

/// What the progress trampoline needs: the closure, and the panic it caught, if any.
pub(crate) struct ProgressState<'a> {
    pub(crate) f: &'a mut dyn FnMut(&crate::Progress) -> bool,
    pub(crate) panic: Option<Box<dyn Any + Send + 'static>>,
}

/// C progress callback; payload is a `*mut ProgressState` on the caller's stack. A panic
/// stops the run (returns non-zero) and is re-raised by `Session::train_with` once C returns.
pub(crate) unsafe extern "C" fn progress_trampoline(
    progress: *const sys::trainrt_progress,
    payload: *mut c_void,
) -> i32 {
    if payload.is_null() || progress.is_null() {
        return 0;
    }
    // SAFETY: payload is the ProgressState train_with passed, alive for the whole call;
    // progress points at a filled struct valid during this call.
    let state = unsafe { &mut *(payload as *mut ProgressState<'_>) };
    if state.panic.is_some() {
        return 1;
    }
    let p = crate::Progress::from_raw(unsafe { &*progress });
    match catch_unwind(AssertUnwindSafe(|| (state.f)(&p))) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(panic) => {
            state.panic = Some(panic);
            1
        }
    }
}

/// What the prepare-progress trampoline needs: the closure, and the panic it caught, if any.
pub(crate) struct PrepareProgressState<'a> {
    pub(crate) f: &'a mut dyn FnMut(i64, i64) -> bool,
    pub(crate) panic: Option<Box<dyn Any + Send + 'static>>,
}

/// C progress callback of `trainrt_prepare_text`; payload is a `*mut PrepareProgressState`
/// on the caller's stack. The closure returns `true` to go on, `false` to stop (non-zero).
/// A panic stops the work too and is re-raised by `prepare_text_with` once C has returned.
pub(crate) unsafe extern "C" fn prepare_progress_trampoline(
    done: i64,
    total: i64,
    payload: *mut c_void,
) -> i32 {
    if payload.is_null() {
        return 0;
    }
    // SAFETY: payload is the PrepareProgressState prepare_text_with passed, alive for the
    // whole call; C calls back on the calling thread only.
    let state = unsafe { &mut *(payload as *mut PrepareProgressState<'_>) };
    if state.panic.is_some() {
        return 1;
    }
    match catch_unwind(AssertUnwindSafe(|| (state.f)(done, total))) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(panic) => {
            state.panic = Some(panic);
            1
        }
    }
}
