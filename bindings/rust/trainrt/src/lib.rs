//! Safe Rust API for libtrainrt, a training runtime for transformer language models.
//!
//! ```no_run
//! # fn main() -> Result<(), trainrt::Error> {
//! let mut config = trainrt::Config::from_file("run.toml")?;
//! config.set("optim.lr", "1e-3")?;
//! let mut session = trainrt::Session::new(&config)?;
//! for _ in 0..10 {
//!     let r = session.step()?;
//!     println!("step {} loss {:.4}", r.step, r.loss);
//! }
//! # Ok(()) }
//! ```
//!
//! Threading: [`Config`] and [`Session`] are `Send` but not `Sync`. libtrainrt lets a handle
//! move between threads but refuses two threads using it at once (`TRAINRT_ERR_BUSY`), so the
//! binding makes every call that uses a handle take it by `&mut` or hold it un-shared, and the
//! compiler rules concurrent use out. The one call C allows from any thread at any time,
//! `trainrt_session_request_stop`, is reachable through [`StopHandle`] (`Send + Sync + Clone`).
//!
//! ```compile_fail
//! fn needs_sync<T: Sync>() {}
//! needs_sync::<trainrt::Session>();
//! ```
//!
//! [`Tokenizer`] and [`ChatTemplate`] are the exception: a loaded tokenizer is immutable and the C API lets several
//! threads use one at once, so they are `Send + Sync` and every method takes `&self`.
//!
//! Callbacks (log sinks, the progress callbacks of [`Session::train_with`] and
//! [`prepare_text_with`]) are Rust closures; they run inside `extern "C"` trampolines that
//! catch panics, so no unwinding crosses into C.

mod callbacks;
mod chat;
mod config;
mod error;
mod params;
mod session;
mod tokenizer;
mod util;

pub use callbacks::{set_default_log, LogCallback, LogLevel};
pub use chat::ChatTemplate;
pub use config::{Config, ModelInfo};
pub use error::{Error, Result, Status};
pub use params::{ParamInfo, ParamRole};
pub use session::{
    checkpoint_export, checkpoint_export_adapter, checkpoint_latest, prepare_bytes, Dtype,
    EvalResult, Metrics, Progress, ProgressKind, SampleOptions, Session, StepResult, StopHandle,
    TrainOutcome,
};
pub use tokenizer::{
    prepare_text, prepare_text_with, LossMask, PrepareOptions, PrepareResult, Tokenizer,
};

/// Raw declarations, for what this crate does not wrap.
pub use trainrt_sys as sys;

use std::ffi::CStr;

/// "MAJOR.MINOR.PATCH" of the library actually loaded.
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated ASCII string owned by the library.
    unsafe { CStr::from_ptr(sys::trainrt_version_string()) }
        .to_str()
        .unwrap_or("?")
}

/// ABI version of the library actually loaded (compare with [`sys::TRAINRT_ABI_VERSION`]).
pub fn abi_version() -> u32 {
    // SAFETY: no arguments, no state.
    unsafe { sys::trainrt_abi_version() }
}

/// Bits `sys::TRAINRT_FEATURE_*` of the library actually loaded.
pub fn build_features() -> u64 {
    // SAFETY: no arguments, no state.
    unsafe { sys::trainrt_build_features() }
}
